"""Lesson 09's figures: heads embedded by MDS, the within-layer dispersion per layer, and the
same curve beside the model's untrained twin's."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

from attnlab.analysis.diversity import DepthTrend, HeadDistances, ShuffledBaseline, thirds
from attnlab.analysis.stats import Interval
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


def plot_dispersion_beside_twin(layers: Sequence[int], model: Interval, twin: Interval, *,
                                model_name: str = "", twin_name: str = ""):
    """The within-layer dispersion per layer of the model beside its untrained twin's.

    Left: both curves as measured, each with its bootstrap interval over queries. Right: each curve
    as a share of its own lower third's mean dispersion (the unit of conclusion 2's numbers,
    :func:`attnlab.analysis.diversity.depth_shape`), the thirds shaded: a curve that keeps falling
    to the top ends near its lowest point, a U climbs back.

    Args:
        layers: the 0-based layers of both curves.
        model, twin: ``(L,)`` dispersion with its interval (``DepthTrend.dispersion`` or a lesson 09
            record's ``dispersion``).
        model_name, twin_name: legend labels (default: "model", "untrained twin").
    """
    x = np.asarray(layers) + 1  # 1-based layers
    lower, _middle, upper = thirds(len(x))
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8))
    for curve, name, marker in ((model, model_name or _("model"), "o-"), (twin, twin_name or _("untrained twin"), "s--")):
        estimate = np.asarray(curve.estimate, dtype=float)  # (L,)
        yerr = np.clip([estimate - curve.low, curve.high - estimate], 0.0, None)  # (2, L)
        axes[0].errorbar(x, estimate, yerr=yerr, fmt=marker, capsize=3, label=name)
        scale = estimate[lower].mean()
        if scale > 0:
            axes[1].errorbar(x, estimate / scale, yerr=yerr / scale, fmt=marker, capsize=3, label=name)
    axes[0].set_ylabel(_("mean JS distance between heads of the layer"))
    axes[0].set_title(_("Within-layer dispersion: the model and its untrained twin"), fontsize=10)
    axes[1].axhline(1.0, color="grey", lw=0.8, ls=":")
    for part, shade in ((lower, 0.12), (upper, 0.12)):
        axes[1].axvspan(x[part[0]] - 0.5, x[part[-1]] + 0.5, color="grey", alpha=shade, lw=0)
    axes[1].set_ylabel(_("share of the lower third's dispersion"))
    axes[1].set_title(_("Each curve over its own lower third (shaded: lower and upper thirds)"), fontsize=10)
    for ax in axes:
        ax.set_xlabel(_("layer"))
        ax.set_xticks(x)
        ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig
