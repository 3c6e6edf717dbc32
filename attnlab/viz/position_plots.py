"""Figures of lesson 07: one layer's heads with and without position embeddings,
and one point per head for "unchanged under perturbation" against "changed
without positions".

The numbers come from :mod:`attnlab.analysis.position`; layers and heads are
labelled 1-based like the article.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from attnlab.analysis.compare import similarity
from attnlab.analysis.stats import Interval
from attnlab.core.checks import check_index
from attnlab.viz.fonts import use_cjk_font


def plot_with_without(with_maps: torch.Tensor, without_maps: torch.Tensor, layer: int, *, text: str = "",
                      cell: float = 1.25) -> Figure:
    """Every head of one layer: with position embeddings (top row) and without
    (bottom), each column titled with the similarity of the two maps.

    Args:
        with_maps, without_maps: ``[L, H, n, n]`` of one text (e.g. from
            :func:`attnlab.analysis.position.with_and_without`).
        layer: 0-based layer.
        text: the text, for the title.

    Returns:
        The figure.
    """
    if with_maps.shape != without_maps.shape or with_maps.ndim != 4:
        raise ValueError(f"need two [L, H, n, n] maps of one shape, got {tuple(with_maps.shape)} "
                         f"and {tuple(without_maps.shape)}")
    layer = check_index(layer, with_maps.shape[0], "layer")
    sims = similarity(with_maps[layer], without_maps[layer]).numpy()  # (H,)
    if any(ord(c) > 0x2E80 for c in text):
        use_cjk_font()
    heads = with_maps.shape[1]
    fig, axes = plt.subplots(2, heads, figsize=(cell * heads + 1.2, cell * 2 + 1.0), squeeze=False)
    for h in range(heads):
        for r, (maps, name) in enumerate(((with_maps, "with positions"), (without_maps, "without"))):
            ax = axes[r, h]
            ax.imshow(maps[layer, h].numpy(), vmin=0, vmax=1, cmap="viridis")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"H{h + 1}\nsim {sims[h]:.2f}", fontsize=7)
            if h == 0:
                ax.set_ylabel(name, fontsize=8)
    shown = f", {text!r}" if text else ""
    fig.suptitle(f"Layer {layer + 1}{shown}: with and without position embeddings", fontsize=9)
    fig.tight_layout()
    return fig


def plot_correlation(unchanged, changed, corr: Interval | None = None, *, method: str = "spearman") -> Figure:
    """Scatter, one point per head: similarity under perturbation (x) against change
    without position embeddings (y), coloured by layer.

    Args:
        unchanged, changed: ``[L, H]`` per-head values.
        corr: their correlation with its interval (e.g. from
            :func:`attnlab.analysis.stats.bootstrap_correlation`), shown in the title.
        method: the correlation's name, for the title.

    Returns:
        The figure.
    """
    x, y = np.asarray(unchanged, dtype=float), np.asarray(changed, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"unchanged and changed need one shape, got {x.shape} and {y.shape}")
    layers = np.repeat(np.arange(x.shape[0]), x.shape[1]) if x.ndim == 2 else np.zeros(x.size)  # (L * H,)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    sc = ax.scatter(x.ravel(), y.ravel(), c=layers + 1, cmap="viridis", s=22)
    fig.colorbar(sc, ax=ax, label="layer")
    ax.set_xlabel("unchanged under perturbation (position-space similarity)")
    ax.set_ylabel("changed without position embeddings (1 - similarity)")
    if corr is not None:
        ax.set_title(f"{method} r = {float(corr.estimate):.2f} "
                     f"[{float(corr.low):.2f}, {float(corr.high):.2f}] over {corr.n} heads", fontsize=9)
    fig.tight_layout()
    return fig
