"""An ipywidgets explorer: type a text, pick a layer and a head, see the map.

Attention is computed once per text and kept for the last few texts
(:class:`AttentionCache`, least recently used first out), so changing the
layer, head or view type only redraws and typing many texts does not fill the
memory. Works in JupyterLab, Colab and VS Code; in a headless notebook run the
widgets are built and the first figure drawn without error (nothing waits for
input).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import matplotlib.pyplot as plt

from attnlab.core.checks import check_positive_int
from attnlab.core.extract import Attention, attention
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.data.examples import example_for
from attnlab.viz.offline_views import plot_line_view
from attnlab.viz.plot import head_label, plot_head

VIEWS = ("heatmap", "lines")
VIEW_LABELS = {"heatmap": N_("heatmap"), "lines": N_("lines")}  # what the toggle buttons show

#: Texts whose attention the explorer keeps (each holds layers x heads x n x n weights).
CACHE_TEXTS = 8


class AttentionCache:
    """The attention of the last ``size`` texts asked for, least recently used dropped first.

    Args:
        compute: ``text -> Attention`` (run only for a text not in the cache).
        size: how many texts to keep (at least 1).
    """

    def __init__(self, compute: Callable[[str], Attention], size: int = CACHE_TEXTS):
        self.compute = compute
        self.size = check_positive_int(size, "size")
        self._items: OrderedDict[str, Attention] = OrderedDict()

    def get(self, text: str) -> Attention:
        """The attention of ``text``: from the cache (it becomes the most recent) or computed."""
        if text in self._items:
            self._items.move_to_end(text)
            return self._items[text]
        att = self.compute(text)
        self._items[text] = att
        if len(self._items) > self.size:
            self._items.popitem(last=False)  # the least recently used text
        return att

    def __contains__(self, text: object) -> bool:
        return text in self._items

    def __len__(self) -> int:
        return len(self._items)

    def texts(self) -> list[str]:
        """The cached texts, least recently used first."""
        return list(self._items)


def _check_view(view: str) -> str:
    if view not in VIEWS:
        raise ValueError(f"view must be 'heatmap' or 'lines', got {view!r}")
    return view


def explorer_figure(att: Attention, layer: int, head: int, view: str = "heatmap"):
    """The figure the explorer shows: one head of text 0 of ``att``.

    Args:
        att: an :class:`attnlab.core.extract.Attention` (its first text is drawn).
        layer, head: 0-based indices.
        view: ``"heatmap"`` (rows = queries) or ``"lines"`` (the line view).
    """
    _check_view(view)
    weights = att.head(0, layer, head)  # (n, n); validates the indices
    tokens = att.tokens[0]
    if view == "lines":
        return plot_line_view(att[0], tokens, layer, [head])
    n = len(tokens)
    fig, ax = plt.subplots(figsize=(max(3.5, 0.42 * n + 2.2), max(3.0, 0.42 * n + 1.2)))
    plot_head(weights, tokens, ax=ax, title=head_label(layer, head), vmax=1.0, annotate=n <= 10)
    fig.tight_layout()
    return fig


def explorer(m: LoadedModel, text: str | None = None, *, layer: int = 0, head: int = 0, view: str = "heatmap",
             cache_texts: int = CACHE_TEXTS):
    """An interactive explorer of one text's attention.

    Args:
        m: a loaded model.
        text: the first text shown (default: the course's example query).
        layer, head: 0-based start indices (the drop-downs show 1-based numbers).
        view: ``"heatmap"`` or ``"lines"``.
        cache_texts: how many texts' attention to keep.

    Returns:
        The ipywidgets ``VBox`` (display it, or leave it as the cell's last
        line). ``box.attention_cache`` is its :class:`AttentionCache`.
    """
    # optional front-end packages (the course extra): imported only when an explorer is built
    import ipywidgets as W
    from IPython.display import display

    layer, head = m.check_layer(layer), m.check_head(head)
    _check_view(view)
    cache = AttentionCache(lambda t: attention(m, [t]), cache_texts)

    text_box = W.Text(value=text or example_for(m), description=_("text"), continuous_update=False,
                      layout=W.Layout(width="480px"))
    layer_dd = W.Dropdown(options=[(str(l + 1), l) for l in range(m.n_layers)], value=layer,
                          description=_("layer"), layout=W.Layout(width="150px"))
    head_dd = W.Dropdown(options=[(str(h + 1), h) for h in range(m.n_heads)], value=head,
                         description=_("head"), layout=W.Layout(width="150px"))
    kind = W.ToggleButtons(options=[(_(VIEW_LABELS[v]), v) for v in VIEWS], value=view)
    out = W.Output()

    def redraw(_change: Any = None) -> None:
        with out:
            out.clear_output(wait=True)
            try:
                att = cache.get(text_box.value.strip())
            except (ValueError, TypeError) as err:
                print(_("Cannot show this text: {err}").format(err=err))
                return
            fig = explorer_figure(att, layer_dd.value, head_dd.value, kind.value)
            display(fig)
            plt.close(fig)

    for widget in (text_box, layer_dd, head_dd, kind):
        widget.observe(redraw, names="value")
    redraw()
    box = W.VBox([text_box, W.HBox([layer_dd, head_dd, kind]), out])
    box.attention_cache = cache
    return box
