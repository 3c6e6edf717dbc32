"""An ipywidgets explorer: type a text, pick a layer and a head, see the map.

Attention is computed once per text (kept in a small cache); changing the
layer, head or view type only redraws. Works in JupyterLab, Colab and VS Code;
in a headless notebook run the widgets are built and the first figure drawn
without error (nothing waits for input).
"""

from __future__ import annotations

from typing import Any

from attnlab.data.examples import example_for
from attnlab.core.extract import attention


def explorer_figure(att: Any, layer: int, head: int, view: str = "heatmap"):
    """The figure the explorer shows: one head of text 0 of ``att``.

    Args:
        att: an :class:`attnlab.core.extract.Attention` (its first text is drawn).
        layer, head: 0-based indices.
        view: ``"heatmap"`` (rows = queries) or ``"lines"`` (the line view).
    """
    import matplotlib.pyplot as plt

    from attnlab.viz.offline_views import plot_line_view
    from attnlab.viz.plot import head_label, plot_head

    if view not in ("heatmap", "lines"):
        raise ValueError(f"view must be 'heatmap' or 'lines', got {view!r}")
    weights = att.head(0, layer, head)  # (n, n); validates the indices
    tokens = att.tokens[0]
    if view == "lines":
        return plot_line_view(att[0], tokens, layer, [head])
    n = len(tokens)
    fig, ax = plt.subplots(figsize=(max(3.5, 0.42 * n + 2.2), max(3.0, 0.42 * n + 1.2)))
    plot_head(weights, tokens, ax=ax, title=head_label(layer, head), vmax=1.0, annotate=n <= 10)
    fig.tight_layout()
    return fig


def explorer(m: Any, text: str | None = None, *, layer: int = 0, head: int = 0, view: str = "heatmap"):
    """An interactive explorer of one text's attention.

    Args:
        m: a loaded model.
        text: the first text shown (default: the course's example query).
        layer, head: 0-based start indices (the drop-downs show 1-based numbers).
        view: ``"heatmap"`` or ``"lines"``.

    Returns:
        The ipywidgets ``VBox`` (display it, or leave it as the cell's last
        line). ``box.attention_cache`` maps each text to its
        :class:`~attnlab.core.extract.Attention`.
    """
    import ipywidgets as W
    import matplotlib.pyplot as plt
    from IPython.display import display

    m.check_layer(layer)
    m.check_head(head)
    if view not in ("heatmap", "lines"):
        raise ValueError(f"view must be 'heatmap' or 'lines', got {view!r}")
    cache: dict[str, Any] = {}

    text_box = W.Text(value=text or example_for(m), description="text", continuous_update=False,
                      layout=W.Layout(width="480px"))
    layer_dd = W.Dropdown(options=[(str(l + 1), l) for l in range(m.n_layers)], value=layer,
                          description="layer", layout=W.Layout(width="150px"))
    head_dd = W.Dropdown(options=[(str(h + 1), h) for h in range(m.n_heads)], value=head,
                         description="head", layout=W.Layout(width="150px"))
    kind = W.ToggleButtons(options=["heatmap", "lines"], value=view)
    out = W.Output()

    def attention_of(t: str):
        if t not in cache:
            cache[t] = attention(m, [t])
        return cache[t]

    def redraw(_: Any = None) -> None:
        with out:
            out.clear_output(wait=True)
            try:
                att = attention_of(text_box.value.strip())
            except (ValueError, TypeError) as err:
                print(f"Cannot show this text: {err}")
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
