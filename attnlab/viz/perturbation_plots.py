"""Figures of lesson 06: the four example queries head by head, the per-head
sensitivity maps, the position-/content-follower map, and lexical against
syntactic damage at equal displacement.

The numbers come from :mod:`attnlab.analysis.compare`; layers and heads are
labelled 1-based like the article.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from attnlab.core.language import _
from attnlab.analysis.compare import (FOLLOWER_MARGIN, SPACES, DisplacementControl, ExampleMaps, PerturbationStudy,
                                     kind_word)
from attnlab.core.checks import check_index
from attnlab.viz.fonts import cjk_font_for
from attnlab.viz.plot import plot_layer_head_map, tick_rotation


def space_word(space: str) -> str:
    """``"position"`` -> "position space", ``"token"`` -> "token space", in the reader's language."""
    words = {"position": _("position space"), "token": _("token space")}
    return words.get(space, space)


def _shared_colorbar(fig: Figure, axes, label: str) -> None:
    """One labelled colour bar for panels drawn on one scale."""
    fig.colorbar(axes[0].images[0], ax=list(axes), fraction=0.025, pad=0.02, label=label)


def plot_example_rows(ex: ExampleMaps, layer: int, *, heads: Sequence[int] | None = None,
                      cell: float = 1.45) -> Figure:
    """Every head of one layer (columns) for each of the four queries (rows).

    Each cell is titled with the head (1-based) and its position-space (p) /
    token-space (t) similarity to the original; the first cell of each row
    carries that query's tokens on both axes (rows: query token, columns: the
    token looked at). All cells share one colour scale (0 to 1). Returns the figure.
    """
    kinds = list(ex.maps)
    first = ex.maps[kinds[0]]  # (L, H, n, n)
    layer = check_index(layer, first.shape[0], "layer")
    heads = list(range(first.shape[1])) if heads is None else [check_index(h, first.shape[1], "head") for h in heads]
    cjk_font_for(list(ex.texts.values()) + [t for toks in ex.tokens.values() for t in toks])
    fig, axes = plt.subplots(len(kinds), len(heads), figsize=(cell * len(heads) + 2.4, cell * len(kinds) + 1.8),
                             squeeze=False, layout="constrained")
    for r, k in enumerate(kinds):
        tokens = list(ex.tokens[k])
        for c, h in enumerate(heads):
            ax = axes[r, c]
            ax.imshow(ex.maps[k][layer, h].numpy(), vmin=0, vmax=1, cmap="viridis")
            ax.set_xticks(range(len(tokens)) if c == 0 else [])
            ax.set_yticks(range(len(tokens)) if c == 0 else [])
            if c == 0:
                ax.set_xticklabels(tokens, rotation=tick_rotation(tokens), fontsize=5)
                ax.set_yticklabels(tokens, fontsize=5)
                ax.set_ylabel(f"{kind_word(k)}\n{ex.texts[k]}", fontsize=7)
            title = f"H{h + 1}" if r == 0 else ""
            if k != "original":
                title += ("\n" if title else "") + f"p{ex.position[k][layer, h]:.2f} t{ex.token[k][layer, h]:.2f}"
            ax.set_title(title, fontsize=7)
    _shared_colorbar(fig, axes.ravel(), _("attention weight"))
    fig.suptitle(_("Layer {number}: every head, four queries (p = position-space, t = token-space similarity "
                   "to the original, compared word by word)").format(number=layer + 1), fontsize=9)
    return fig


def plot_sensitivity_maps(study: PerturbationStudy, *, kinds: Sequence[str] | None = None, **boot) -> Figure:
    """Grid of ``layers x heads`` sensitivity maps (1 - similarity): one column per
    perturbation, one row per space (position, token), all on one colour scale
    with one labelled colour bar. Returns the figure."""
    kinds = list(kinds or study.kinds)
    maps = {(k, space): study.sensitivity(k, space, **boot).estimate for k in kinds for space in SPACES}  # (L, H)
    top = max(0.05, max(float(np.nanmax(v)) for v in maps.values()))
    fig, axes = plt.subplots(2, len(kinds), figsize=(4.0 * len(kinds) + 1.0, 6.2), squeeze=False,
                             layout="constrained")
    for c, k in enumerate(kinds):
        for r, space in enumerate(SPACES):
            plot_layer_head_map(maps[(k, space)], ax=axes[r, c], title=_("{kind}, {space}").format(kind=kind_word(k), space=space_word(space)), vmin=0, vmax=top,
                                fontsize=6, colorbar=False)
    _shared_colorbar(fig, axes.ravel(), _("change of the map (1 - similarity), one scale for all panels"))
    fig.suptitle(_("Sensitivity (1 - similarity) over {n} queries").format(n=study.n_queries), fontsize=10)
    return fig


def plot_followers(study: PerturbationStudy, kind: str = "both", margin: float = FOLLOWER_MARGIN,
                   **boot) -> Figure:
    """``layers x heads`` map of position - token similarity (red: follows positions,
    blue: follows content); heads with a clear label are marked P / C. The colour
    bar is labelled and shows the band of +-``margin`` inside which no head is
    labelled. Returns the figure."""
    gap = study.follower_gap(kind, **boot).estimate  # (L, H)
    labels = study.followers(kind, margin, **boot)  # (L, H)
    lim = max(2 * margin, float(np.nanmax(np.abs(gap))))
    marks = [[{"position": "P", "content": "C"}.get(x, "") for x in row] for row in labels]
    ax = plot_layer_head_map(gap, cmap="coolwarm", vmin=-lim, vmax=lim, marks=marks, colorbar=False)
    bar = ax.figure.colorbar(ax.images[0], ax=ax, fraction=0.046, pad=0.04,
                             label=_("position-space minus token-space similarity\n(between the lines, +-{margin}: "
                                     "band where no head is labelled)").format(margin=f"{margin:g}"))
    for edge in (-margin, margin):
        bar.ax.axhline(edge, color="black", linewidth=1.0)
    ax.set_title(_("under '{kind}' damage: P = position-follower (interval above +{margin}), "
                   "C = content-follower (below -{margin})").format(kind=kind_word(kind), margin=f"{margin:g}"), fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def plot_displacement_control(control: DisplacementControl) -> Figure:
    """Two ``layers x heads`` maps on one colour scale: the plain difference of the
    mean changes under the two kinds, and the difference at equal token
    displacement; heads whose interval lies above 0 are marked "+", below 0 "-".
    Returns the figure."""
    first, second = control.kinds
    panels = ((_("plain difference of mean changes"), control.raw_gap),
              (_("difference at equal displacement"), control.gap))
    lim = max(0.05, max(float(np.nanmax(np.abs(iv.estimate))) for _title, iv in panels))
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8), squeeze=False, layout="constrained")
    for ax, (title, iv) in zip(axes[0], panels):
        marks = np.where(iv.above(0.0), "+", np.where(iv.below(0.0), "-", ""))  # (L, H)
        plot_layer_head_map(iv.estimate, ax=ax, cmap="coolwarm", vmin=-lim, vmax=lim, marks=marks.tolist(),
                            title=title, fontsize=6, colorbar=False)
    _shared_colorbar(fig, axes[0], _("{first} minus {second} change (1 - similarity)").format(
        first=kind_word(first), second=kind_word(second)))
    d = control.mean_displacement
    fig.suptitle(_("{first} vs {second} damage, {space}; mean displacement {d_first} vs "
                   "{d_second} token positions ({n} queries; +/-: interval above/below 0)").format(
        first=kind_word(first), second=kind_word(second), space=space_word(control.space), d_first=f"{d[first]:.2f}", d_second=f"{d[second]:.2f}",
        n=control.n_queries), fontsize=9)
    return fig
