"""Figures of lesson 11: a score per head, and the pruning curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from attnlab.analysis.pruning import RANDOM_BAND, PruningStudy, loss_limit, order_label
from attnlab.core.language import _
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
        _fig, ax = plt.subplots(figsize=(6.5, 4))
    scale = study.base_loss if study.relative and study.base_loss else 1.0
    x = np.asarray(study.fractions) * 100
    low, median, high = (v / scale for v in study.random_band())
    n_random = np.atleast_2d(study.curves["random"]).shape[0]
    ax.plot(x, study.curves["importance"] / scale, marker="o", label=order_label("importance"))
    ax.plot(x, median, marker="s", color="C1", label=_("random order: median of {n}").format(n=n_random))
    ax.fill_between(x, low, high, alpha=0.25, color="C1",
                    label=_("random order: {low}th-{high}th percentile").format(
                        low=f"{RANDOM_BAND[0]:g}", high=f"{RANDOM_BAND[1]:g}"))
    ax.plot(x, study.curves["reverse"] / scale, marker="^", color="C2", label=order_label("reverse"))
    limit = loss_limit(study.base_loss, study.tolerance, relative=study.relative) / scale
    tolerance = f"{study.tolerance:.0%}" if study.relative else f"{study.tolerance:.3g}"
    ax.axhline(limit, color="grey", linestyle=":", label=_("tolerance (+{tol})").format(tol=tolerance))
    ax.axvline(study.prunable["importance"] * 100, color="C0", linestyle="--", alpha=0.6,
               label=_("prunable (importance order)"))
    ax.set_xlabel(_("heads masked (% of all heads)"))
    ax.set_ylabel(_("loss / unpruned loss") if study.relative else _("loss: 1 - cos with the full model"))
    ax.set_title(_("Pruning heads") if study.relative else _("Pruning heads (ranked on other texts)"))
    ax.legend(fontsize=7)
    return ax
