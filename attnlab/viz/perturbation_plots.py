"""Figures of lesson 06: the four example queries head by head, the per-head
sensitivity maps, and the position-/content-follower map.

The numbers come from :mod:`attnlab.analysis.compare`; layers and heads are
labelled 1-based like the article.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from attnlab.analysis.compare import FOLLOWER_MARGIN, SPACES, ExampleMaps, PerturbationStudy
from attnlab.core.checks import check_index
from attnlab.viz.fonts import use_cjk_font
from attnlab.viz.plot import plot_layer_head_map


def _has_cjk(texts) -> bool:
    return any(any(ord(c) > 0x2E80 for c in t) for t in texts)


def plot_example_rows(ex: ExampleMaps, layer: int, *, heads: Sequence[int] | None = None,
                      cell: float = 1.25) -> Figure:
    """Every head of one layer (columns) for each of the four queries (rows).

    Each cell is titled with the head (1-based) and its position-space (p) /
    token-space (t) similarity to the original. Returns the figure.
    """
    kinds = list(ex.maps)
    first = ex.maps[kinds[0]]  # (L, H, n, n)
    layer = check_index(layer, first.shape[0], "layer")
    heads = list(range(first.shape[1])) if heads is None else [check_index(h, first.shape[1], "head") for h in heads]
    if _has_cjk(ex.texts.values()):
        use_cjk_font()
    fig, axes = plt.subplots(len(kinds), len(heads), figsize=(cell * len(heads) + 1.2, cell * len(kinds) + 1.0),
                             squeeze=False)
    for r, k in enumerate(kinds):
        for c, h in enumerate(heads):
            ax = axes[r, c]
            ax.imshow(ex.maps[k][layer, h].numpy(), vmin=0, vmax=1, cmap="viridis")
            ax.set_xticks([])
            ax.set_yticks([])
            title = f"H{h + 1}" if r == 0 else ""
            if k != "original":
                title += ("\n" if title else "") + f"p{ex.position[k][layer, h]:.2f} t{ex.token[k][layer, h]:.2f}"
            ax.set_title(title, fontsize=7)
            if c == 0:
                ax.set_ylabel(f"{k}\n{ex.texts[k]}", fontsize=7)
    fig.suptitle(f"Layer {layer + 1}: every head, four queries (p = position-space, t = token-space similarity)",
                 fontsize=9)
    fig.tight_layout()
    return fig


def plot_sensitivity_maps(study: PerturbationStudy, *, kinds: Sequence[str] | None = None, **boot) -> Figure:
    """Grid of ``layers x heads`` sensitivity maps (1 - similarity): one column per
    perturbation, one row per space (position, token). Returns the figure."""
    kinds = list(kinds or study.kinds)
    fig, axes = plt.subplots(2, len(kinds), figsize=(4.2 * len(kinds), 6.2), squeeze=False)
    for c, k in enumerate(kinds):
        for r, space in enumerate(SPACES):
            sens = study.sensitivity(k, space, **boot).estimate  # (L, H)
            plot_layer_head_map(sens, ax=axes[r, c], title=f"{k}, {space} space", vmin=0,
                                vmax=max(0.05, float(np.nanmax(sens))), fontsize=6)
    fig.suptitle(f"Sensitivity (1 - similarity) over {study.n_queries} queries", fontsize=10)
    fig.tight_layout()
    return fig


def plot_followers(study: PerturbationStudy, kind: str = "both", margin: float = FOLLOWER_MARGIN,
                   **boot) -> Figure:
    """``layers x heads`` map of position - token similarity (red: follows positions,
    blue: follows content); heads with a clear label are marked P / C. Returns the figure."""
    gap = study.follower_gap(kind, **boot).estimate  # (L, H)
    labels = study.followers(kind, margin, **boot)  # (L, H)
    lim = max(0.05, float(np.nanmax(np.abs(gap))))
    marks = [[{"position": "P", "content": "C"}.get(x, "") for x in row] for row in labels]
    ax = plot_layer_head_map(gap, cmap="coolwarm", vmin=-lim, vmax=lim, marks=marks)
    ax.set_title(f"position - token similarity under '{kind}' (P: position-follower, C: content-follower)",
                 fontsize=8)
    ax.figure.tight_layout()
    return ax.figure
