"""Figures of lesson 11: a score per head, and the pruning curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from attnlab.analysis.pruning import PruningStudy
from attnlab.viz.plot import plot_layer_head_map


def plot_head_scores(scores: np.ndarray, *, title: str = "", ax=None, cmap: str = "magma", label: str = ""):
    """Heatmap of a ``[layers, heads]`` score map; axes numbered 1-based like the article.

    Returns:
        The axes.
    """
    return plot_layer_head_map(scores, ax=ax, title=title, cmap=cmap, label=label, fontsize=8)


def plot_pruning_curves(study: PruningStudy, *, ax=None, relative: bool = True):
    """Loss (relative to the unpruned model, by default) against the fraction of heads masked.

    Draws the importance order, the mean and range of the random orders, the
    reverse order, the tolerance line and the largest prunable fraction.

    Returns:
        The axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    scale = study.base_loss if relative and study.base_loss else 1.0
    x = np.asarray(study.fractions) * 100
    rand = np.atleast_2d(study.curves["random"]) / scale  # (seeds, F)
    ax.plot(x, study.curves["importance"] / scale, marker="o", label="least important first")
    ax.plot(x, rand.mean(0), marker="s", label=f"random order (mean of {len(rand)})")
    ax.fill_between(x, rand.min(0), rand.max(0), alpha=0.2, color="C1")
    ax.plot(x, study.curves["reverse"] / scale, marker="^", label="most important first")
    if relative:
        ax.axhline(1 + study.tolerance, color="grey", linestyle=":", label=f"+{study.tolerance:.0%}")
    ax.axvline(study.prunable["importance"] * 100, color="C0", linestyle="--", alpha=0.6)
    ax.set_xlabel("heads masked (%)")
    ax.set_ylabel("loss / unpruned loss" if relative else "loss")
    ax.set_title("Pruning heads")
    ax.legend(fontsize=8)
    return ax
