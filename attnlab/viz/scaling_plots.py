"""Lesson 02's figures: variance of q . k and the softmax with and without 1/sqrt(d_k).

Each function draws measurements from :mod:`attnlab.scratch.scaling` and
returns the matplotlib object it drew (axes or figure), so lessons and the
``attnlab figures`` command share one drawing.
"""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

from attnlab.core.language import N_, _
from attnlab.analysis.stats import Interval
from attnlab.scratch.scaling import ModelScalingStats, SaturationCurve
from attnlab.viz.plot import plot_curves

#: (field of SaturationCurve / ModelScalingStats, axis label, panel title)
SOFTMAX_MEASURES = (
    ("entropy", N_("entropy (nats)"), N_("row entropy")),
    ("max_weight", N_("largest weight"), N_("largest weight in the row")),
    ("grad_norm", N_("softmax Jacobian norm"), N_("gradient through the softmax")),
)


def plot_variance(d_ks: Sequence[int], measured: Sequence["Interval | float"], *, tolerance: float | None = None,
                  title: str | None = None):
    """Measured ``var(q . k)`` against ``d_k``, next to the theory ``var = d_k``.

    Left: both on log-log axes (theory a dashed line, measurements hollow
    markers with their interval, so neither hides the other). Right: measured
    divided by ``d_k``, where the theory is the line at 1 and any deviation is
    visible; with ``tolerance``, the band ``1 +- tolerance`` is shaded.

    Args:
        measured: one :class:`~attnlab.analysis.stats.Interval` (or bare number) per width.

    Returns:
        The figure (two axes).
    """
    if len(measured) != len(d_ks) or not d_ks:
        raise ValueError(f"need one measured variance per d_k, got {len(measured)} for {len(d_ks)} widths")
    d = np.asarray(d_ks, dtype=float)
    est, low, high = (np.asarray(v, dtype=float) for v in zip(*(_bounds(m) for m in measured)))
    fig, (ax, ratio_ax) = plt.subplots(1, 2, figsize=(10.5, 3.8))
    ax.plot(d, d, ls="--", color="0.35", lw=1.5, label=_("theory: var = d_k"), zorder=1)
    ax.errorbar(d, est, yerr=[est - low, high - est], fmt="o", ms=8, mfc="none", mew=1.8, color="C3",
                capsize=3, label=_("measured var(q.k)"), zorder=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("d_k")
    ax.set_ylabel(_("variance of q.k"))
    ax.set_title(title or _("variance of q.k against d_k"), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ratio_ax.axhline(1.0, ls="--", color="0.35", lw=1.5, label=_("theory: ratio = 1"), zorder=1)
    if tolerance is not None:
        ratio_ax.axhspan(1 - tolerance, 1 + tolerance, color="0.85", zorder=0, label=_("within {tolerance} of d_k").format(
            tolerance=f"{tolerance:.0%}"))
    ratio_ax.errorbar(d, est / d, yerr=[(est - low) / d, (high - est) / d], fmt="o", ms=7, color="C3", capsize=3,
                      label=_("measured / d_k (95% interval)"), zorder=3)
    ratio_ax.set_xscale("log", base=2)
    ratio_ax.set_xlabel("d_k")
    ratio_ax.set_ylabel(_("measured var(q.k) / d_k"))
    ratio_ax.set_title(_("the same, divided by the theory"), fontsize=10)
    ratio_ax.grid(True, alpha=0.3)
    ratio_ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _bounds(value: "Interval | float") -> tuple[float, float, float]:
    """``(estimate, low, high)`` of an interval; a bare number is its own interval."""
    if isinstance(value, Interval):
        return float(value.estimate), float(value.low), float(value.high)
    return float(value), float(value), float(value)


def plot_saturation(unscaled: SaturationCurve, scaled: SaturationCurve,
                    measures: Sequence[str] = ("entropy", "max_weight", "grad_norm"), *, suptitle: str | None = None):
    """One panel per softmax measure against ``d_k``, without and with ``1 / sqrt(d_k)``.

    Args:
        unscaled, scaled: curves over the same ``d_ks``.
        measures: which of ``"entropy"``, ``"max_weight"``, ``"grad_norm"`` to draw.

    Returns:
        The figure. The entropy panel has a dotted line at the uniform entropy ``log(n_keys)``.
    """
    if list(unscaled.d_ks) != list(scaled.d_ks):
        raise ValueError(f"the two curves cover different d_k: {unscaled.d_ks} and {scaled.d_ks}")
    labels = {name: (ylabel, title) for name, ylabel, title in SOFTMAX_MEASURES}
    unknown = [m for m in measures if m not in labels]
    if unknown or not measures:
        raise ValueError(f"measures must be some of {list(labels)}, got {list(measures)}")
    fig, axes = plt.subplots(1, len(measures), figsize=(4.6 * len(measures), 3.6), squeeze=False)
    for ax, name in zip(axes[0], measures):
        ylabel, title = labels[name]
        plot_curves(unscaled.d_ks, {_("without scaling"): getattr(unscaled, name),
                                    _("with 1/sqrt(d_k)"): getattr(scaled, name)},
                    xlabel="d_k", ylabel=_(ylabel), logx=True, ax=ax, title=_(title))
        if name == "entropy":
            ax.axhline(math.log(unscaled.n_keys), color="grey", ls=":", lw=1)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def plot_model_scaling(stats: ModelScalingStats):
    """Per layer of a real model: each softmax measure as the model computes it
    (scores divided by ``sqrt(d_h)``) and as it would without the division.

    Returns:
        The figure (three panels, layers numbered from 1).
    """
    layers = list(range(1, len(stats.entropy_scaled) + 1))
    fig, axes = plt.subplots(1, len(SOFTMAX_MEASURES), figsize=(14, 3.6))
    for ax, (name, ylabel, title) in zip(axes, SOFTMAX_MEASURES):
        plot_curves(layers, {_("scaled (the model)"): getattr(stats, f"{name}_scaled"),
                             _("unscaled"): getattr(stats, f"{name}_unscaled")},
                    xlabel=_("layer"), ylabel=_(ylabel), ax=ax, title=_(title))
    fig.tight_layout()
    return fig
