"""Lesson 09's figures: heads embedded by MDS, and the within-layer dispersion per layer."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from attnlab.analysis.diversity import DepthTrend, HeadDistances, ShuffledBaseline
from attnlab.core.language import _


def plot_mds(hd: HeadDistances, xy: np.ndarray | None = None, *, seed: int = 0):
    """Clark et al.'s picture: every head as a point (2-D MDS), coloured by layer.

    Args:
        hd: head distances (``K = layers x heads`` heads, layer-major).
        xy: ``[K, 2]`` coordinates from :meth:`HeadDistances.mds`; computed when None.
    """
    xy = hd.mds(seed) if xy is None else xy  # (K, 2)
    colours = plt.get_cmap("viridis")(np.linspace(0, 1, len(hd.layers)))
    fig, ax = plt.subplots(figsize=(6.2, 5.2))
    for i, layer in enumerate(hd.layers):
        rows = slice(i * hd.n_heads, (i + 1) * hd.n_heads)
        ax.scatter(xy[rows, 0], xy[rows, 1], color=colours[i], label=_("layer {layer}").format(layer=layer + 1), s=28,
                   edgecolor="black", linewidth=0.3)
    ax.legend(fontsize=7, ncol=2, frameon=False)
    ax.set_title(_("Heads embedded by MDS of their JS distances ({count} queries)").format(count=hd.count), fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    return fig


def plot_dispersion(trend: DepthTrend, baseline: ShuffledBaseline | None = None):
    """Within-layer dispersion per layer with its bootstrap interval, the fitted slope, and (when
    given) the band that heads dealt to layers at random give.

    The title asks the question; the answer is the claim's verdict, printed beside the figure.
    """
    x = np.asarray(trend.layers) + 1  # 1-based layers
    d = trend.dispersion
    estimate = np.asarray(d.estimate)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    if baseline is not None:
        b = baseline.dispersion
        ax.fill_between(x, b.low, b.high, color="grey", alpha=0.25, lw=0,
                        label=_("heads dealt to layers at random ({level:.0%} of {shuffles} shuffles)").format(
                            level=b.level, shuffles=baseline.n_perm))
        ax.plot(x, b.estimate, color="grey", lw=1)
    yerr = np.clip([estimate - d.low, d.high - estimate], 0.0, None)  # (2, L); rounding can dip below 0
    ax.errorbar(x, estimate, yerr=yerr,
                fmt="o-", capsize=3, label=_("dispersion ({level:.0%} bootstrap interval over queries)").format(level=d.level))
    s = trend.slope
    fit = estimate.mean() + s.estimate * (x - x.mean())
    ax.plot(x, fit, "--", color="black", lw=1,
            label=_("slope {slope:+.3f} per layer [{low:+.3f}, {high:+.3f}]").format(
                slope=s.estimate, low=s.low, high=s.high))
    ax.set_xlabel(_("layer"))
    ax.set_ylabel(_("mean JS distance between heads of the layer"))
    ax.set_xticks(x)
    ax.set_title(_("Within-layer dispersion of the heads by depth ({count:,} queries)").format(count=trend.n_texts),
                 fontsize=10)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig
