"""Lesson 02's claims: why attention divides its scores by sqrt(d_k).

The argument has three steps, each measured on random vectors
(:mod:`attnlab.scratch.scaling`) and decided here:

1. :func:`verdict_variance` -- ``var(q . k)`` grows like ``d_k``;
2. :func:`verdict_saturation` -- without the factor the softmax saturates as
   ``d_k`` grows, with it the softmax keeps its spread;
3. :func:`verdict_gradient` -- the saturated softmax passes less and less
   gradient, the scaled one does not.

:func:`verdict_model` asks the data-dependent question on a real model:
would its softmax pass less gradient in every layer without the factor?
(That the unscaled rows would be *sharper* is no finding: multiplying the
scores by ``sqrt(d_h) > 1`` can only lower a softmax's entropy and raise its
largest weight, so lesson 02 prints it as a check.)
"""

from __future__ import annotations

import math
from typing import Sequence

from attnlab.course.verdicts import ClaimVerdict
from attnlab.scratch.scaling import ModelScalingStats, SaturationCurve

#: Each measured var(q . k) must lie within this fraction of d_k.
VARIANCE_TOLERANCE = 0.10
#: Saturation: the unscaled largest weight must rise by more than this from the smallest to the largest d_k ...
SATURATION_RISE = 0.1
#: ... and the unscaled entropy must fall below this fraction of its first value.
ENTROPY_FALL = 0.7
#: The unscaled softmax Jacobian norm must fall below this fraction of its first value.
GRADIENT_FALL = 0.7
#: "Flat" across d_k: the spread (max - min) of a scaled curve is at most this fraction of its maximum.
FLAT_TOLERANCE = 0.1

CLAIM_VARIANCE = "for random unit-variance q and k, var(q . k) grows linearly with d_k (equals d_k)"
CLAIM_SATURATION = "without 1/sqrt(d_k) the softmax saturates as d_k grows; with it, it does not"
CLAIM_GRADIENT = "without 1/sqrt(d_k) the gradient through the softmax vanishes as d_k grows; with it, it does not"
CLAIM_MODEL = "on this model, dropping 1/sqrt(d_h) would shrink the gradient through the softmax in every layer"


def is_flat(values: Sequence[float], tolerance: float = FLAT_TOLERANCE) -> bool:
    """True when ``max - min`` of ``values`` is at most ``tolerance`` times their maximum."""
    return (max(values) - min(values)) <= tolerance * max(values)


def verdict_variance(d_ks: Sequence[int], measured: Sequence[float],
                     tolerance: float = VARIANCE_TOLERANCE) -> ClaimVerdict:
    """Holds when every measured variance is within ``tolerance`` (relative) of its ``d_k``.

    Args:
        d_ks: the widths.
        measured: ``var(q . k)`` measured at each width (same length).
    """
    if len(d_ks) != len(measured) or not d_ks:
        raise ValueError(f"need one measured variance per d_k, got {len(measured)} for {len(d_ks)} widths")
    errors = [abs(v - d) / d for d, v in zip(d_ks, measured)]
    worst = max(range(len(errors)), key=errors.__getitem__)
    return ClaimVerdict.decide(
        CLAIM_VARIANCE, holds=errors[worst] <= tolerance, fails=errors[worst] > tolerance,
        worst_d_k=int(d_ks[worst]), its_variance=float(measured[worst]),
        worst_relative_error=errors[worst], tolerance=tolerance, widths=len(d_ks),
    )


def verdict_saturation(unscaled: SaturationCurve, scaled: SaturationCurve) -> ClaimVerdict:
    """Holds when, from the smallest to the largest ``d_k``, the unscaled largest weight
    rises by more than :data:`SATURATION_RISE` and its entropy falls below
    :data:`ENTROPY_FALL` of its first value, while the scaled entropy stays flat."""
    rises = unscaled.max_weight[-1] > unscaled.max_weight[0] + SATURATION_RISE
    falls = unscaled.entropy[-1] < ENTROPY_FALL * unscaled.entropy[0]
    flat = is_flat(scaled.entropy)
    ok = rises and falls and flat
    return ClaimVerdict.decide(
        CLAIM_SATURATION, holds=ok, fails=not ok,
        d_k_first=unscaled.d_ks[0], d_k_last=unscaled.d_ks[-1],
        unscaled_max_weight_first=unscaled.max_weight[0], unscaled_max_weight_last=unscaled.max_weight[-1],
        unscaled_entropy_first=unscaled.entropy[0], unscaled_entropy_last=unscaled.entropy[-1],
        scaled_entropy_min=min(scaled.entropy), scaled_entropy_max=max(scaled.entropy),
        uniform_entropy=math.log(unscaled.n_keys),
    )


def verdict_gradient(unscaled: SaturationCurve, scaled: SaturationCurve) -> ClaimVerdict:
    """Holds when the unscaled softmax Jacobian norm falls below :data:`GRADIENT_FALL`
    of its first value as ``d_k`` grows while the scaled one stays flat."""
    falls = unscaled.grad_norm[-1] < GRADIENT_FALL * unscaled.grad_norm[0]
    ok = falls and is_flat(scaled.grad_norm)
    return ClaimVerdict.decide(
        CLAIM_GRADIENT, holds=ok, fails=not ok,
        d_k_first=unscaled.d_ks[0], d_k_last=unscaled.d_ks[-1],
        unscaled_grad_norm_first=unscaled.grad_norm[0], unscaled_grad_norm_last=unscaled.grad_norm[-1],
        shrinks_by=unscaled.grad_norm[0] / max(unscaled.grad_norm[-1], 1e-30),
        scaled_grad_norm_min=min(scaled.grad_norm), scaled_grad_norm_max=max(scaled.grad_norm),
    )


def verdict_model(stats: ModelScalingStats) -> ClaimVerdict:
    """Holds when every layer's mean softmax Jacobian norm would be smaller without
    the ``1 / sqrt(d_h)`` factor; does not hold when some layer's would be larger
    (a sharper softmax is not always a flatter one: concentrating a row from 16
    keys onto 2 makes its Jacobian larger)."""
    n = len(stats.grad_norm_scaled)
    if n == 0:
        return ClaimVerdict.missing(CLAIM_MODEL, "no layers were measured")
    less = [gu < gs for gu, gs in zip(stats.grad_norm_unscaled, stats.grad_norm_scaled)]
    return ClaimVerdict.decide(
        CLAIM_MODEL, holds=all(less), fails=not all(less),
        layers_with_less_gradient=sum(less), layers=n,
        mean_grad_norm_scaled=sum(stats.grad_norm_scaled) / n,
        mean_grad_norm_unscaled=sum(stats.grad_norm_unscaled) / n,
    )
