"""Offline, self-contained attention views (HTML) and their static twins (matplotlib).

:class:`HeadView` is in the spirit of bertviz's head view: the tokens in two
columns, lines weighted by attention, a layer picker, coloured head toggles,
and hovering a token keeps only its lines. :class:`ModelView` shows every
layer x head as a small line-view thumbnail. Both embed their own JavaScript
and CSS (``attnlab/viz/assets/views.js``, ``views.css``, hand-written) and the data
as JSON: nothing is loaded from the network, so they work behind a firewall,
in CI and in a saved ``.html`` file.

In a notebook, the object displays itself (``_repr_html_``); every view gets a
unique element id, so several views in one notebook never clash (JupyterLab,
Colab and VS Code run the embedded script when the output is trusted, which
it is for cells you ran yourself). ``view.save("view.html")`` writes a full
page.

For slides and papers, :func:`plot_line_view` draws the same line view with
matplotlib (PNG/SVG via ``fig.savefig``).
"""

from __future__ import annotations

import html as html_lib
import json
import uuid
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba

from attnlab.core.atomic import write_text_atomic
from attnlab.core.checks import check_index
from attnlab.core.language import N_, _
from attnlab.viz.fonts import cjk_font_for
from attnlab.viz.plot import head_label

#: One colour per head (cycled beyond 16); shared by the HTML and matplotlib views.
HEAD_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#8c6d31", "#843c39", "#7b4173",
)

_ASSETS = Path(__file__).with_name("assets")

#: every text the views' script shows, keyed as ``views.js`` looks it up; translated when a view is
#: built (the script fills in ``{layer}`` and ``{head}``, numbered from 1)
VIEW_TEXTS = {
    "layer": N_("Layer"),
    "heads": N_("Heads"),
    "head_toggle": N_("head {head} (click: toggle, double-click: only this head)"),
    "head_hint": N_("Left: query tokens, right: the tokens they attend to. Line opacity = attention weight. "
                    "Hover a token to isolate its lines."),
    "model_hint": N_("Every layer (rows) and head (columns) as a small line view. Click one to open it below."),
    "thumb": N_("layer {layer}, head {head}"),
    "detail": N_("Layer {layer}, head {head}"),
}


def view_texts() -> dict[str, str]:
    """:data:`VIEW_TEXTS` in the reader's language."""
    return {key: _(text) for key, text in VIEW_TEXTS.items()}


def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _as_maps(maps, tokens: Sequence[str]) -> np.ndarray:
    """Validate ``[layers, heads, n, n]`` maps against ``n`` tokens; return float numpy."""
    if isinstance(maps, torch.Tensor):
        maps = maps.detach().cpu().float().numpy()
    a = np.asarray(maps, dtype=float)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"maps must be [layers, heads, n, n] for one text (e.g. att[i]), got shape {a.shape}"
        )
    if a.shape[-1] != len(tokens):
        raise ValueError(f"maps cover {a.shape[-1]} tokens but {len(tokens)} tokens were given")
    if len(tokens) == 0:
        raise ValueError("no tokens: a view needs at least one token")
    return a


def _script_json(obj) -> str:
    """JSON safe to put inside a ``<script>`` element (no ``</script>`` breakout)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


class _View:
    """Shared parts: data payload, unique root id, fragment, full page, saving."""

    kind = ""  # "headView" or "modelView"

    def __init__(self, maps, tokens: Sequence[str], *, title: str = "", digits: int = 3):
        self.tokens = [str(t) for t in tokens]
        self.maps = _as_maps(maps, self.tokens)  # (L, H, n, n)
        self.title = title
        self.digits = digits

    @property
    def n_layers(self) -> int:
        return self.maps.shape[0]

    @property
    def n_heads(self) -> int:
        return self.maps.shape[1]

    def _data(self) -> dict:
        return {
            "tokens": self.tokens,
            "attn": np.round(self.maps, self.digits).tolist(),
            "colors": list(HEAD_COLORS),
            "text": view_texts(),
        }

    def fragment(self) -> str:
        """HTML for embedding: one root ``<div>`` with a unique id, its style and script."""
        root = f"attnlab-{self.kind.lower()}-{uuid.uuid4().hex[:12]}"
        css = _asset("views.css").replace("__ROOT__", f"#{root}")
        title = f'<div class="al-title">{html_lib.escape(self.title)}</div>' if self.title else ""
        return (
            f"<style>{css}</style>\n"
            f'<div id="{root}" class="attnlab-view">{title}'
            f"<noscript>{html_lib.escape(_('This attention view needs JavaScript.'))}</noscript></div>\n"
            f"<script>\n{_asset('views.js')}\n"
            f"window.attnlabViews.{self.kind}(document.getElementById({json.dumps(root)}), "
            f"{_script_json(self._data())});\n</script>"
        )

    def html(self) -> str:
        """A complete, self-contained HTML page."""
        title = html_lib.escape(self.title or f"attnlab {self.kind}")
        return (
            "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{title}</title>\n</head>\n<body>\n{self.fragment()}\n</body>\n</html>\n"
        )

    def save(self, path: str | Path) -> Path:
        """Write the page to ``path`` (UTF-8); return the path."""
        return write_text_atomic(Path(path), self.html())

    def _repr_html_(self) -> str:
        return self.fragment()


class HeadView(_View):
    """Line view of one text's attention, one layer at a time.

    Args:
        maps: ``[layers, heads, n, n]`` (e.g. ``att[i]``), rows are queries.
        tokens: the ``n`` token strings.
        layer: layer shown first (0-based).
        heads: heads shown first (0-based; all by default).
        title: a line above the view.
    """

    kind = "headView"

    def __init__(self, maps, tokens: Sequence[str], *, layer: int = 0, heads: Sequence[int] | None = None,
                 title: str = "", digits: int = 3):
        super().__init__(maps, tokens, title=title, digits=digits)
        self.layer = check_index(layer, self.n_layers, "layer")
        self.heads = [check_index(h, self.n_heads, "head") for h in
                      (range(self.n_heads) if heads is None else heads)]

    def _data(self) -> dict:
        return {**super()._data(), "layer": self.layer, "heads": self.heads}

    def __repr__(self) -> str:
        return f"HeadView({len(self.tokens)} tokens, {self.n_layers} layers x {self.n_heads} heads)"


class ModelView(_View):
    """Thumbnails of every layer x head; click one to open its line view.

    Args:
        maps: ``[layers, heads, n, n]``; tokens: the ``n`` tokens.
    """

    kind = "modelView"

    def __repr__(self) -> str:
        return f"ModelView({len(self.tokens)} tokens, {self.n_layers} layers x {self.n_heads} heads)"


# --------------------------------------------------------------------------- static export


def plot_line_view(
    maps,
    tokens: Sequence[str],
    layer: int,
    heads: Sequence[int] | int | None = None,
    *,
    ax=None,
    title: str | None = None,
    min_weight: float = 0.01,
):
    """The head view as a matplotlib figure (for PNG/SVG export).

    Query tokens on the left, keys on the right; a line from query ``i`` to
    key ``j`` in the head's colour with opacity equal to the weight.

    Args:
        maps: ``[layers, heads, n, n]`` for one text, or ``[n, n]`` for one head
            (then ``layer`` and ``heads`` only label it).
        tokens: the ``n`` tokens.
        layer: 0-based layer.
        heads: 0-based head or heads (all by default).
        min_weight: lines below this weight are not drawn.

    Returns:
        The figure.
    """
    tokens = [str(t) for t in tokens]
    a = maps.detach().cpu().float().numpy() if isinstance(maps, torch.Tensor) else np.asarray(maps, dtype=float)
    if a.ndim == 2:
        head = 0 if heads is None else (heads if isinstance(heads, (int, np.integer)) else list(heads)[0])
        full = np.zeros((layer + 1, head + 1, *a.shape))
        full[layer, head] = a
        a = full
        heads = [head]
    a = _as_maps(a, tokens)
    layer = check_index(layer, a.shape[0], "layer")
    if heads is None:
        heads = list(range(a.shape[1]))
    elif isinstance(heads, (int, np.integer)):
        heads = [int(heads)]
    heads = [check_index(h, a.shape[1], "head") for h in heads]
    cjk_font_for(tokens)
    n = len(tokens)
    if ax is None:
        _fig, ax = plt.subplots(figsize=(3.6, 0.32 * n + 0.9))
    y = -np.arange(n, dtype=float)  # token i at height -i
    for h in heads:
        w = a[layer, h]  # (n, n)
        qi, kj = np.nonzero(w >= min_weight)
        segments = [[(0.0, y[i]), (1.0, y[j])] for i, j in zip(qi, kj)]
        base = to_rgba(HEAD_COLORS[h % len(HEAD_COLORS)])
        colors = [(*base[:3], float(min(1.0, w[i, j]))) for i, j in zip(qi, kj)]
        ax.add_collection(LineCollection(segments, colors=colors, linewidths=2))
    for i, t in enumerate(tokens):
        ax.text(-0.04, y[i], t, ha="right", va="center", fontsize=10)
        ax.text(1.04, y[i], t, ha="left", va="center", fontsize=10)
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(y[-1] - 0.7, 0.7)
    ax.axis("off")
    if title is None:
        names = ", ".join(str(h + 1) for h in heads) if len(heads) <= 4 else _("{n} heads").format(n=len(heads))
        title = _("layer {layer}, heads {names}").format(layer=layer + 1, names=names) if len(heads) > 1 \
            else head_label(layer, heads[0])
    ax.set_title(title, fontsize=10)
    return ax.figure
