"""Lesson 02's figures: variance of q . k and the softmax with and without 1/sqrt(d_k).

Each function draws measurements from :mod:`attnlab.scratch.scaling` and
returns the matplotlib object it drew (axes or figure), so lessons and the
``attnlab figures`` command share one drawing.
"""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt

from attnlab.scratch.scaling import ModelScalingStats, SaturationCurve
from attnlab.viz.plot import plot_curves

#: (field of SaturationCurve / ModelScalingStats, axis label, panel title)
SOFTMAX_MEASURES = (
    ("entropy", "entropy (nats)", "row entropy"),
    ("max_weight", "largest weight", "largest weight in the row"),
    ("grad_norm", "softmax Jacobian norm", "gradient through the softmax"),
)


def plot_variance(d_ks: Sequence[int], measured: Sequence[float], *, ax=None, title: str | None = None):
    """Measured ``var(q . k)`` against ``d_k`` next to the theory line ``var = d_k`` (log-log axes).

    Returns:
        The axes.
    """
    return plot_curves(list(d_ks), {"measured var(q.k)": list(measured), "theory: var = d_k": [float(d) for d in d_ks]},
                       xlabel="d_k", ylabel="variance of q.k", logx=True, logy=True, ax=ax,
                       title=title or "variance of q.k against d_k")


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
        plot_curves(unscaled.d_ks, {"without scaling": getattr(unscaled, name),
                                    "with 1/sqrt(d_k)": getattr(scaled, name)},
                    xlabel="d_k", ylabel=ylabel, logx=True, ax=ax, title=title)
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
        plot_curves(layers, {"scaled (the model)": getattr(stats, f"{name}_scaled"),
                             "unscaled": getattr(stats, f"{name}_unscaled")},
                    xlabel="layer", ylabel=ylabel, ax=ax, title=title)
    fig.tight_layout()
    return fig
