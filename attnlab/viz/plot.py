"""Matplotlib figures of attention maps.

Code indices are 0-based; titles use the source article's 1-based "layer 1,
head 7" (see :func:`head_label`). Every function takes an optional ``ax`` and
returns the matplotlib objects it drew, so lessons can compose figures.

``matplotlib.pyplot`` is imported inside the functions: this module is part of
``import attnlab``, which should stay quick for code that never draws.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from attnlab.core.language import _
from attnlab.viz.fonts import cjk_font_for

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def tick_rotation(labels: Sequence[str]) -> int:
    """Degrees to turn the x tick labels: 90 for Latin tokens (they are long), 0 when any holds Chinese
    characters (read upright, and short: bert-base-chinese has one character per token)."""
    return 0 if any(_CJK.search(str(t)) for t in labels) else 90


def ends_shown(ends: tuple[str, str] | None) -> str:
    """The special tokens at the two ends of a text as a figure names them: ``"<s>/</s>"`` from
    ``LoadedModel.end_tokens``, or, when the model's are not known, words true of every model."""
    return f"{ends[0]}/{ends[1]}" if ends else _("the special tokens at both ends")


def quoted(text: str) -> str:
    """``text`` in the reader's quotation marks ('…' in English, “…” in Chinese), for a title."""
    return _("'{text}'").format(text=text)


def head_label(layer: int, head: int) -> str:
    """1-based label for a 0-based (layer, head): ``head_label(0, 6) == "L1 H7"``."""
    return f"L{layer + 1} H{head + 1}"


def _as_numpy(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().float().numpy()
    return np.asarray(a, dtype=float)


def plot_head(
    weights,
    tokens: Sequence[str],
    *,
    ax=None,
    title: str | None = None,
    vmin: float | None = 0.0,
    vmax: float | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    annotate: bool = False,
    key_tokens: Sequence[str] | None = None,
):
    """Heatmap of one head: rows are query tokens, columns the tokens they attend to.

    Args:
        weights: ``[n, n]`` attention (rows sum to 1), tensor or array.
        tokens: ``n`` labels for the rows (and the columns, unless ``key_tokens``).
        ax: axes to draw into (a new figure when None).
        vmin, vmax: colour scale; ``vmax=None`` uses the map's maximum. Pass
            ``vmax=1`` to compare maps on one scale.
        annotate: write each weight in its cell (small maps only).

    Returns:
        The ``AxesImage``.
    """
    import matplotlib.pyplot as plt

    w = _as_numpy(weights)
    if w.ndim != 2 or w.shape[0] != len(tokens):
        raise ValueError(f"weights must be [n, n] with n = len(tokens) = {len(tokens)}, got {w.shape}")
    cols = list(key_tokens) if key_tokens is not None else list(tokens)
    cjk_font_for(list(tokens) + cols)
    if ax is None:
        size = max(3.0, 0.45 * len(tokens) + 1.5)
        _fig, ax = plt.subplots(figsize=(size + (1.0 if colorbar else 0.0), size))
    im = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=tick_rotation(cols), fontsize=9)
    ax.set_yticks(range(len(tokens)))
    ax.set_yticklabels(tokens, fontsize=9)
    ax.set_xlabel(_("attended-to token (key)"))
    ax.set_ylabel(_("query token"))
    if title:
        ax.set_title(title)
    if annotate:
        hi = w.max() if w.size else 1.0
        for r in range(w.shape[0]):
            for c in range(w.shape[1]):
                ax.text(c, r, f"{w[r, c]:.2f}", ha="center", va="center", fontsize=7,
                        color="black" if w[r, c] > 0.6 * hi else "white")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


#: the space between two maps of :func:`plot_heads_grid`, as a share of a map's width
GRID_GAP = 0.12


def grid_cell_origin(row: int, column: int) -> tuple[float, float]:
    """The top-left corner ``(x, y)`` of the map in ``row``, ``column`` of :func:`plot_heads_grid`'s one
    axes, where a map is 1 unit wide and high and ``y`` grows downwards."""
    return column * (1 + GRID_GAP), row * (1 + GRID_GAP)


def plot_heads_grid(
    maps,
    tokens: Sequence[str],
    *,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    cell: float = 1.6,
    vmax: float | None = None,
    show_labels: bool | None = None,
    suptitle: str | None = None,
    cmap: str = "viridis",
):
    """Grid of heatmaps: one row per layer, one column per head.

    All maps are drawn as images in one axes (``fig.axes[0]``; ``images[k]`` is the k-th map, row by
    row), each in its own framed square (:func:`grid_cell_origin`): 144 separate axes would take
    matplotlib seconds to build and lay out, where one takes a fraction of one.

    Args:
        maps: ``[layers, heads, n, n]`` for one text (e.g. ``att[i]``).
        tokens: the ``n`` token labels.
        layers, heads: 0-based subsets to draw (all by default).
        vmax: shared colour maximum; None gives each map its own scale (0 to its largest weight).
        show_labels: token labels on the outer edges (default: when n <= 14).

    Returns:
        The figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    a = _as_numpy(maps)
    if a.ndim != 4:
        raise ValueError(f"maps must be [layers, heads, n, n], got shape {a.shape}")
    layers = list(range(a.shape[0])) if layers is None else list(layers)
    heads = list(range(a.shape[1])) if heads is None else list(heads)
    for l in layers:
        if not 0 <= l < a.shape[0]:
            raise ValueError(f"layer {l} out of range 0..{a.shape[0] - 1}")
    for h in heads:
        if not 0 <= h < a.shape[1]:
            raise ValueError(f"head {h} out of range 0..{a.shape[1] - 1}")
    if show_labels is None:
        show_labels = len(tokens) <= 14
    if show_labels:
        cjk_font_for(tokens)
    fig, ax = plt.subplots(figsize=(cell * len(heads) + 0.6, cell * len(layers) + 0.6))
    frames = []
    for r, l in enumerate(layers):
        for c, h in enumerate(heads):
            x, y = grid_cell_origin(r, c)
            ax.imshow(a[l, h], cmap=cmap, vmin=0, vmax=vmax, extent=(x, x + 1, y + 1, y),
                      interpolation="nearest", aspect="auto")
            frames.append(Rectangle((x, y), 1, 1))
    ax.add_collection(PatchCollection(frames, facecolor="none", edgecolor="black", linewidth=0.8))
    right, bottom = grid_cell_origin(len(layers) - 1, len(heads) - 1)
    ax.set_xlim(-0.02, right + 1.02)
    ax.set_ylim(bottom + 1.02, -0.02)  # the first layer on top
    ax.spines[:].set_visible(False)  # each map has its own frame
    n = a.shape[-1]
    centres = [(j + 0.5) / n for j in range(n)]
    if show_labels:  # token labels under the last row and left of the first column
        ax.set_xticks([grid_cell_origin(0, c)[0] + x for c in range(len(heads)) for x in centres],
                      [str(t) for _c in heads for t in tokens], rotation=tick_rotation(tokens), fontsize=6)
        ax.set_yticks([grid_cell_origin(r, 0)[1] + y for r in range(len(layers)) for y in centres],
                      [str(t) for _r in layers for t in tokens], fontsize=6)
        ax.tick_params(length=2, pad=1)
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    for c, h in enumerate(heads):
        ax.annotate(_("head {number}").format(number=h + 1), (grid_cell_origin(0, c)[0] + 0.5, 0),
                    xytext=(0, 4), textcoords="offset points", ha="center", va="bottom", fontsize=9)
    labels_width = _y_tick_labels_points(fig, ax) if show_labels else 0.0
    for r, l in enumerate(layers):
        ax.annotate(_("layer {number}").format(number=l + 1), (0, grid_cell_origin(r, 0)[1] + 0.5),
                    xytext=(-4 - labels_width, 0), textcoords="offset points", ha="right", va="center",
                    rotation=90, fontsize=9)
    if suptitle:
        fig.suptitle(suptitle)
        height = fig.get_figheight()
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / height))  # keep 0.35 inch above the head titles
    else:
        fig.tight_layout()
    return fig


def _y_tick_labels_points(fig, ax) -> float:
    """How wide, in points, the y tick labels of ``ax`` are with their pads (so a label set left of them
    clears them)."""
    get_renderer = getattr(fig.canvas, "get_renderer", None)  # Agg-based canvases (inline, ipympl, files)
    renderer = get_renderer() if get_renderer is not None else fig._get_renderer()  # as tight_layout finds one
    box = ax.yaxis.get_tightbbox(renderer)
    left = ax.get_window_extent(renderer).x0
    return 0.0 if box is None else max(0.0, (left - box.x0) * 72 / fig.dpi)


def save_figure(fig, path: str | Path, formats: Sequence[str] = ("png", "svg"), dpi: int = 130) -> list[Path]:
    """Save ``fig`` as ``path`` with each suffix in ``formats``; return the paths."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        out = path.with_suffix("." + fmt)
        fig.savefig(out, dpi=dpi, bbox_inches="tight")
        written.append(out)
    return written


def texts_of(fig) -> list[str]:
    """Every non-empty text artist of a matplotlib figure ``fig``: titles, suptitle, axis labels,
    tick labels, legend entries and titles, annotations, colour-bar labels, ``fig.text`` calls."""
    from matplotlib.text import Text

    fig.canvas.draw()  # tick labels get their text when the figure is drawn
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


# --------------------------------------------------------------------------- lessons 01-04


def _check_square(a: np.ndarray, n: int, what: str) -> None:
    if a.ndim != 2 or a.shape != (n, n):
        raise ValueError(f"{what} must be [n, n] with n = len(tokens) = {n}, got shape {a.shape}")


def plot_matrices(
    matrices: Sequence[tuple[str, object]],
    row_labels: Sequence[str],
    *,
    col_labels: Sequence[Sequence[str] | None] | None = None,
    decimals: int = 2,
    cmap: str = "Blues",
    cell: float = 0.55,
):
    """Small annotated matrices side by side (lesson 01's Q, K, V, scores, weights).

    Args:
        matrices: ``(title, [rows, cols])`` pairs; every matrix has one row per
            entry of ``row_labels``.
        row_labels: labels of the rows (the tokens).
        col_labels: per matrix, labels of its columns (None: the column number,
            or the tokens for a square ``[n, n]`` matrix).
        decimals: digits written in each cell.

    Returns:
        The figure (one axes per matrix, in order).
    """
    import matplotlib.pyplot as plt

    if not matrices:
        raise ValueError("matrices is empty: pass (title, matrix) pairs")
    arrays = [(title, _as_numpy(mat)) for title, mat in matrices]
    n = len(row_labels)
    for title, a in arrays:
        if a.ndim != 2 or a.shape[0] != n:
            raise ValueError(f"matrix {title!r} must be [{n}, cols] (one row per label), got shape {a.shape}")
    if col_labels is not None and len(col_labels) != len(arrays):
        raise ValueError(f"col_labels needs one entry per matrix ({len(arrays)}), got {len(col_labels)}")
    cjk_font_for(row_labels)
    widths = [max(a.shape[1], 1) for _title, a in arrays]
    fig, axes = plt.subplots(1, len(arrays), figsize=(cell * sum(widths) + 1.2 * len(arrays), cell * n + 1.2),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    for k, (ax, (title, a)) in enumerate(zip(axes[0], arrays)):
        ax.imshow(a, cmap=cmap, aspect="auto")
        labels = col_labels[k] if col_labels is not None else None
        if labels is None:
            labels = list(row_labels) if a.shape[1] == n and a.shape[0] == a.shape[1] else [str(j) for j in range(a.shape[1])]
        ax.set_xticks(range(a.shape[1]))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_yticks(range(n))
        ax.set_yticklabels(row_labels if k == 0 else [""] * n, fontsize=8)
        ax.set_title(title, fontsize=9)
        span = float(a.max() - a.min()) or 1.0
        for r in range(a.shape[0]):
            for c in range(a.shape[1]):
                dark = (a[r, c] - a.min()) / span > 0.6
                ax.text(c, r, f"{a[r, c]:.{decimals}f}", ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
    fig.tight_layout()
    return fig


def plot_pair(
    a,
    b,
    tokens: Sequence[str],
    *,
    titles: tuple[str, str] = ("", ""),
    shared_scale: bool = True,
    annotate: bool = False,
    cmap: str = "viridis",
):
    """Two ``[n, n]`` maps of the same tokens side by side.

    With ``shared_scale`` both use one colour scale (0 to the larger maximum),
    so equal colours mean equal weights.

    Returns:
        The figure (two axes).
    """
    import matplotlib.pyplot as plt

    x, y = _as_numpy(a), _as_numpy(b)
    _check_square(x, len(tokens), "a")
    _check_square(y, len(tokens), "b")
    vmax = float(max(x.max(), y.max())) if shared_scale else None
    size = max(3.0, 0.42 * len(tokens) + 1.6)
    fig, axes = plt.subplots(1, 2, figsize=(2 * size + 1.5, size))
    for ax, w, title in zip(axes, (x, y), titles):
        plot_head(w, tokens, ax=ax, title=title or None, vmax=vmax, cmap=cmap, annotate=annotate)
    fig.tight_layout()
    return fig


def plot_layer_heads(
    maps,
    tokens: Sequence[str],
    *,
    layer: int | None = None,
    ncols: int = 4,
    cell: float = 2.0,
    vmax: float | None = None,
    title: str | None = None,
    cmap: str = "viridis",
    fig=None,
):
    """Every head of one layer, with token labels (the source article's figures).

    Args:
        maps: ``[heads, n, n]``, one layer of one text (e.g. ``att[0][layer]``).
        tokens: the ``n`` tokens.
        layer: 0-based layer, only for the ``"L1 H7"`` panel titles.
        ncols: panels per row.
        vmax: shared colour maximum (None: each panel its own scale).
        fig: draw into this figure or subfigure (a new figure when None).

    Returns:
        The figure (or subfigure); ``.axes`` holds one axes per head, in order.
    """
    import matplotlib.pyplot as plt

    a = _as_numpy(maps)
    if a.ndim != 3 or a.shape[1:] != (len(tokens), len(tokens)):
        raise ValueError(f"maps must be [heads, n, n] with n = len(tokens) = {len(tokens)}, got shape {a.shape}")
    if ncols < 1:
        raise ValueError(f"ncols must be >= 1, got {ncols}")
    cjk_font_for(tokens)
    n_heads = a.shape[0]
    nrows = -(-n_heads // ncols)
    if fig is None:
        fig = plt.figure(figsize=(cell * ncols + 0.8, cell * nrows + 0.8), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    show = len(tokens) <= 16
    for h in range(nrows * ncols):
        ax = axes[h // ncols, h % ncols]
        if h >= n_heads:
            ax.remove()
            continue
        ax.imshow(a[h], cmap=cmap, vmin=0, vmax=vmax, aspect="auto")
        ax.set_title(head_label(layer, h) if layer is not None else _("head {number}").format(number=h + 1),
                     fontsize=9)
        ax.set_xticks(range(len(tokens)) if show else [])
        ax.set_yticks(range(len(tokens)) if show else [])
        if show:
            ax.set_xticklabels(tokens, rotation=tick_rotation(tokens), fontsize=6)
            ax.set_yticklabels(tokens if h % ncols == 0 else [""] * len(tokens), fontsize=6)
    if title:
        fig.suptitle(title)
    return fig


def plot_layers_side_by_side(
    maps,
    tokens: Sequence[str],
    layers: tuple[int, int],
    *,
    ncols: int = 4,
    cell: float = 1.7,
    shared_scale: bool = True,
    cmap: str = "viridis",
):
    """Two layers' heads next to each other (e.g. the first and the last layer).

    Args:
        maps: ``[layers, heads, n, n]`` of one text.
        layers: two 0-based layer indices.
        shared_scale: one colour scale (0..1) for both panels.

    Returns:
        The figure; ``fig.subfigs`` holds the two panels.
    """
    import matplotlib.pyplot as plt

    a = _as_numpy(maps)
    if a.ndim != 4:
        raise ValueError(f"maps must be [layers, heads, n, n], got shape {a.shape}")
    if len(layers) != 2:
        raise ValueError(f"layers must be two indices, got {layers!r}")
    for l in layers:
        if not 0 <= l < a.shape[0]:
            raise ValueError(f"layer {l} out of range 0..{a.shape[0] - 1} (0-based)")
    nrows = -(-a.shape[1] // ncols)
    fig = plt.figure(figsize=(2 * (cell * ncols + 0.6), cell * nrows + 1.0), layout="constrained")
    subs = fig.subfigures(1, 2, wspace=0.05)
    for sub, l in zip(subs, layers):
        plot_layer_heads(a[l], tokens, layer=l, ncols=ncols, vmax=1.0 if shared_scale else None,
                         title=_("layer {number}").format(number=l + 1), cmap=cmap, fig=sub)
    return fig


def plot_curves(
    x: Sequence[float],
    series: dict[str, Sequence[float]],
    *,
    xlabel: str = "",
    ylabel: str = "",
    title: str | None = None,
    logx: bool = False,
    logy: bool = False,
    ax=None,
    markers: bool = True,
):
    """Line plot of several measured series against one x axis.

    Args:
        x: the shared x values.
        series: label -> y values (each as long as ``x``).

    Returns:
        The axes.
    """
    import matplotlib.pyplot as plt

    if not series:
        raise ValueError("series is empty: pass {label: values}")
    for label, ys in series.items():
        if len(ys) != len(x):
            raise ValueError(f"series {label!r} has {len(ys)} values for {len(x)} x values")
    if ax is None:
        _fig, ax = plt.subplots(figsize=(5.0, 3.6))
    for label, ys in series.items():
        ax.plot(list(x), list(ys), marker="o" if markers else None, label=label)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_elmo_vs_attention(tokens: Sequence[str], weights_row, position: int):
    """ELMo-style bidirectional concatenation next to one self-attention row.

    Left: a forward chain and a backward chain of recurrent steps; the token at
    ``position`` is represented by the two hidden states concatenated, and
    information from a far token arrives through many steps. Right: the same
    token reads every token directly, with line widths equal to its attention
    weights (``weights_row``, length ``n``, sums to 1).

    Returns:
        The figure (two axes).
    """
    import matplotlib.pyplot as plt

    w = _as_numpy(weights_row)
    n = len(tokens)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"weights_row must be a vector of length len(tokens) = {n}, got shape {w.shape}")
    if not 0 <= position < n:
        raise ValueError(f"position {position} out of range 0..{n - 1} (0-based)")
    cjk_font_for(tokens)
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(8.0, 1.5 * n + 2), 3.8))
    xs = np.arange(n)
    # left: forward (y=1) and backward (y=2) chains above the tokens (y=0)
    for ax in (left, right):
        for i, t in enumerate(tokens):
            ax.text(i, 0, t, ha="center", va="center", fontsize=9,
                    bbox=dict(boxstyle="round", fc="#ffe9b3" if i == position else "#eeeeee"))
    for y, colour, label in ((1.2, "tab:blue", _("forward LSTM")), (2.2, "tab:orange", _("backward LSTM"))):
        left.scatter(xs, np.full(n, y), s=260, color=colour, zorder=3)
        left.text(-0.9, y, label, ha="right", va="center", fontsize=8, color=colour)
        for i in range(n):
            left.annotate("", xy=(i, y - 0.2), xytext=(i, 0.25), arrowprops=dict(arrowstyle="->", color="grey"))
        steps = range(n - 1) if y < 2 else range(n - 1, 0, -1)
        for i in steps:
            j = i + 1 if y < 2 else i - 1
            left.annotate("", xy=(j, y), xytext=(i, y), arrowprops=dict(arrowstyle="->", color=colour, lw=1.5))
    left.text(position, 3.1, _("[ forward ; backward ]"), ha="center", fontsize=8,
              bbox=dict(boxstyle="round", fc="#ffe9b3"))
    for y in (1.2, 2.2):
        left.annotate("", xy=(position, 2.9), xytext=(position, y + 0.15),
                      arrowprops=dict(arrowstyle="->", color="black", lw=1))
    left.set_title(_("ELMo: two recurrent chains, concatenated"), fontsize=10)
    # right: one attention row, a direct line from the query to every token
    top = 2.2
    right.scatter([position], [top], s=300, color="tab:green", zorder=3)
    right.text(position, top + 0.45, _("query: {token}").format(token=tokens[position]), ha="center", fontsize=8)
    scale = 8.0 / max(float(w.max()), 1e-9)
    for j in range(n):
        right.plot([position, j], [top, 0.25], color="tab:green", lw=0.3 + scale * w[j], alpha=0.8)
        right.text(j, -0.45, f"{w[j]:.2f}", ha="center", fontsize=7)
    right.set_title(_("self-attention: one step to every token (width = weight)"), fontsize=10)
    for ax in (left, right):
        ax.set_xlim(-1.6 if ax is left else -0.8, n - 0.2)
        ax.set_ylim(-0.8, 3.5)
        ax.axis("off")
    fig.tight_layout()
    return fig


def plot_layer_head_map(
    values,
    *,
    ax=None,
    title: str = "",
    cmap: str = "magma",
    vmin: float | None = None,
    vmax: float | None = None,
    label: str = "",
    marks=None,
    fontsize: int = 7,
    colorbar: bool = True,
):
    """One number per head as a ``layers x heads`` heatmap, numbered 1-based like the article.

    The one per-head map of the course (importance, sensitivity, change without
    positions, ...), with a colour bar.

    Args:
        values: ``[L, H]`` array (importance, sensitivity, fixedness ...).
        ax: axes to draw into (a new figure when None).
        title: axes title.
        vmin, vmax: colour scale (None: the data's range).
        label: colour-bar label.
        marks: optional ``[L, H]`` strings written in the cells (e.g. "P"/"C").
        colorbar: draw the colour bar (off when several panels share one;
            ``ax.images[0]`` is the image to give it).

    Returns:
        Always the axes it drew into (``ax.figure`` is the figure).
    """
    import matplotlib.pyplot as plt

    v = _as_numpy(values)
    if v.ndim != 2:
        raise ValueError(f"values must be [layers, heads], got shape {v.shape}")
    if marks is not None and np.shape(np.asarray(marks, dtype=object)) != v.shape:
        raise ValueError(f"marks must be [layers, heads] like values {v.shape}, "
                         f"got shape {np.shape(np.asarray(marks, dtype=object))}")
    if ax is None:
        _fig, ax = plt.subplots(figsize=(0.45 * v.shape[1] + 2, 0.45 * v.shape[0] + 1.5))
    im = ax.imshow(v, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(v.shape[1]))
    ax.set_xticklabels(range(1, v.shape[1] + 1), fontsize=fontsize)
    ax.set_yticks(range(v.shape[0]))
    ax.set_yticklabels(range(1, v.shape[0] + 1), fontsize=fontsize)
    ax.set_xlabel(_("head"))
    ax.set_ylabel(_("layer"))
    if marks is not None:
        for l in range(v.shape[0]):
            for h in range(v.shape[1]):
                if marks[l][h]:
                    ax.text(h, l, marks[l][h], ha="center", va="center", fontsize=fontsize)
    if title:
        ax.set_title(title, fontsize=9)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label=label)
    return ax
