"""Figures of lesson 11: a score per head, and the pruning curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from attnlab.analysis.pruning import RANDOM_BAND, PruningStudy, loss_limit
from attnlab.viz.plot import plot_layer_head_map


def plot_head_scores(scores: np.ndarray, *, title: str = "", ax=None, cmap: str = "magma", label: str = ""):
    """Heatmap of a ``[layers, heads]`` score map; axes numbered 1-based like the article.

    Returns:
        The axes.
    """
    return plot_layer_head_map(scores, ax=ax, title=title, cmap=cmap, label=label, fontsize=8)


def plot_pruning_curves(study: PruningStudy, *, ax=None):
    """The objective against the fraction of heads masked, for three orders.

    Draws the importance order, the median of the random orders with a band
    between the :data:`~attnlab.analysis.pruning.RANDOM_BAND` percentiles, the
    reverse order, the tolerance line and the largest prunable fraction. A
    relative objective (masked-LM, contrastive) is drawn divided by the
    unpruned loss; a representation objective (0 for the full model) as it is.

    Returns:
        The axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4))
    scale = study.base_loss if study.relative and study.base_loss else 1.0
    x = np.asarray(study.fractions) * 100
    low, median, high = (v / scale for v in study.random_band())
    n_random = np.atleast_2d(study.curves["random"]).shape[0]
    ax.plot(x, study.curves["importance"] / scale, marker="o", label="least important first")
    ax.plot(x, median, marker="s", color="C1", label=f"random order: median of {n_random}")
    ax.fill_between(x, low, high, alpha=0.25, color="C1",
                    label=f"random order: {RANDOM_BAND[0]:g}th-{RANDOM_BAND[1]:g}th percentile")
    ax.plot(x, study.curves["reverse"] / scale, marker="^", color="C2", label="most important first")
    limit = loss_limit(study.base_loss, study.tolerance, relative=study.relative) / scale
    tolerance = f"{study.tolerance:.0%}" if study.relative else f"{study.tolerance:g}"
    ax.axhline(limit, color="grey", linestyle=":", label=f"tolerance (+{tolerance})")
    ax.axvline(study.prunable["importance"] * 100, color="C0", linestyle="--", alpha=0.6,
               label="prunable (importance order)")
    ax.set_xlabel("heads masked (% of all heads)")
    ax.set_ylabel("loss / unpruned loss" if study.relative else "loss: 1 - cos with the full model")
    ax.set_title("Pruning heads" + ("" if study.relative else " (ranked on other texts)"))
    ax.legend(fontsize=7)
    return ax
