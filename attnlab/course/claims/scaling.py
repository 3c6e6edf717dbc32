"""Lesson 02: why attention divides its scores by sqrt(d_k) -- three checks and one claim.

The argument has three steps. On random unit-variance vectors each step is a
theorem, so measuring it can only agree or be too noisy: these are
:class:`~attnlab.course.checks.Check` s (measured numbers against a
tolerance), never verdicts:

1. :func:`check_variance` -- ``var(q . k)`` equals ``d_k``;
2. :func:`check_saturation` -- without the factor the softmax saturates as
   ``d_k`` grows, with it the softmax keeps its spread;
3. :func:`check_gradient` -- the saturated softmax passes less and less
   gradient, the scaled one does not.

:func:`verdict_model` is the claim that could come out the other way, on a
real model: would its softmax pass less gradient in every layer without the
factor? (That the unscaled rows would be *sharper* is no finding: multiplying
the scores by ``sqrt(d_h) > 1`` can only lower a softmax's entropy and raise
its largest weight, so lesson 02 prints it as a check too.)
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from attnlab.analysis.stats import Interval, bootstrap_mean
from attnlab.course.checks import Check
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

CHECK_VARIANCE = "for random unit-variance q and k, var(q . k) equals d_k within the tolerance"
CHECK_SATURATION = "without 1/sqrt(d_k) the softmax saturates as d_k grows; with it, it keeps its spread"
CHECK_GRADIENT = "without 1/sqrt(d_k) the gradient through the softmax vanishes as d_k grows; with it, it does not"
CLAIM_MODEL = "on this model, dropping 1/sqrt(d_h) would shrink the gradient through the softmax in every layer"


def _as_interval(value: "Interval | float") -> Interval:
    """An :class:`Interval` as it is; a bare number as an interval of width 0."""
    if isinstance(value, Interval):
        return value
    return Interval(float(value), float(value), float(value), n=1)


def is_flat(values: Sequence[float], tolerance: float = FLAT_TOLERANCE) -> bool:
    """True when ``max - min`` of a curve is at most ``tolerance`` times its largest value."""
    return max(values) - min(values) <= tolerance * max(values)


def check_variance(d_ks: Sequence[int], measured: Sequence["Interval | float"],
                   tolerance: float = VARIANCE_TOLERANCE) -> Check:
    """Passes when every measured variance lies within ``tolerance`` (relative) of its ``d_k``.

    Args:
        d_ks: the widths.
        measured: ``var(q . k)`` at each width (same length), as intervals
            (:func:`attnlab.scratch.scaling.variance_interval`) or bare numbers;
            the furthest width's interval is shown with the check.
    """
    if len(d_ks) != len(measured) or not d_ks:
        raise ValueError(f"need one measured variance per d_k, got {len(measured)} for {len(d_ks)} widths")
    ivs = [_as_interval(v) for v in measured]
    errors = [abs(float(iv.estimate) - d) / d for d, iv in zip(d_ks, ivs)]
    worst = max(range(len(errors)), key=errors.__getitem__)
    return Check.of(
        CHECK_VARIANCE, passed=errors[worst] <= tolerance,
        worst_d_k=int(d_ks[worst]), its_variance=float(ivs[worst].estimate),
        its_low=float(ivs[worst].low), its_high=float(ivs[worst].high),
        worst_relative_error=errors[worst], tolerance=tolerance, widths=len(d_ks),
        widths_within=sum(e <= tolerance for e in errors),
    )


def check_saturation(unscaled: SaturationCurve, scaled: SaturationCurve, *, rise: float = SATURATION_RISE,
                     fall: float = ENTROPY_FALL, flat: float = FLAT_TOLERANCE) -> Check:
    """Passes when, from the smallest to the largest ``d_k``, the unscaled largest
    weight rises by more than ``rise`` and the unscaled entropy falls below ``fall``
    times its first value, while the scaled entropy stays flat (within ``flat``)."""
    rises = unscaled.max_weight[-1] - unscaled.max_weight[0] > rise
    falls = unscaled.entropy[-1] < fall * unscaled.entropy[0]
    steady = is_flat(scaled.entropy, flat)
    return Check.of(
        CHECK_SATURATION, passed=rises and falls and steady,
        d_k_first=unscaled.d_ks[0], d_k_last=unscaled.d_ks[-1],
        unscaled_max_weight_first=unscaled.max_weight[0], unscaled_max_weight_last=unscaled.max_weight[-1],
        unscaled_entropy_first=unscaled.entropy[0], unscaled_entropy_last=unscaled.entropy[-1],
        scaled_entropy_min=min(scaled.entropy), scaled_entropy_max=max(scaled.entropy),
        uniform_entropy=math.log(unscaled.n_keys) if unscaled.n_keys > 0 else float("nan"),
        rise=rise, fall=fall, flat=flat,
    )


def check_gradient(unscaled: SaturationCurve, scaled: SaturationCurve, *, fall: float = GRADIENT_FALL,
                   flat: float = FLAT_TOLERANCE) -> Check:
    """Passes when the unscaled softmax Jacobian norm falls below ``fall`` times its
    first value as ``d_k`` grows while the scaled one stays flat (within ``flat``)."""
    falls = unscaled.grad_norm[-1] < fall * unscaled.grad_norm[0]
    return Check.of(
        CHECK_GRADIENT, passed=falls and is_flat(scaled.grad_norm, flat),
        d_k_first=unscaled.d_ks[0], d_k_last=unscaled.d_ks[-1],
        unscaled_grad_norm_first=unscaled.grad_norm[0], unscaled_grad_norm_last=unscaled.grad_norm[-1],
        shrinks_by=unscaled.grad_norm[0] / max(unscaled.grad_norm[-1], 1e-30),
        scaled_grad_norm_min=min(scaled.grad_norm), scaled_grad_norm_max=max(scaled.grad_norm),
        fall=fall, flat=flat,
    )


def gradient_change_intervals(stats: ModelScalingStats, *, seed: int = 0) -> list[Interval]:
    """Per layer: the mean over texts of (Jacobian norm without the division minus
    with it), with a bootstrap interval over texts. Stats without per-text values
    give intervals of width 0 around ``grad_norm_unscaled - grad_norm_scaled``."""
    if stats.grad_norm_change:
        return [bootstrap_mean(np.asarray(per_text, dtype=float), seed=seed) for per_text in stats.grad_norm_change]
    return [_as_interval(u - s) for u, s in zip(stats.grad_norm_unscaled, stats.grad_norm_scaled)]


def verdict_model(stats: ModelScalingStats) -> ClaimVerdict:
    """Holds when in every layer the interval of the mean change of the softmax
    Jacobian norm (without minus with the ``1 / sqrt(d_h)`` factor, over texts)
    lies below 0; does not hold when some layer's lies above 0 (a sharper softmax
    is not always a flatter one: concentrating a row from 16 keys onto 2 makes its
    Jacobian larger); cannot tell otherwise."""
    n = len(stats.grad_norm_scaled)
    if n == 0:
        return ClaimVerdict.missing(CLAIM_MODEL, "no layers were measured")
    changes = gradient_change_intervals(stats)
    less = [bool(iv.below(0.0)) for iv in changes]
    more = [bool(iv.above(0.0)) for iv in changes]
    weakest = max(range(n), key=lambda i: float(changes[i].high))
    return ClaimVerdict.decide(
        CLAIM_MODEL, holds=all(less), fails=any(more),
        layers_with_less_gradient=sum(less), layers_with_more_gradient=sum(more), layers=n,
        texts=stats.n_texts, weakest_layer_index=weakest,
        its_change=float(changes[weakest].estimate), its_change_low=float(changes[weakest].low),
        its_change_high=float(changes[weakest].high),
        mean_grad_norm_scaled=sum(stats.grad_norm_scaled) / n,
        mean_grad_norm_unscaled=sum(stats.grad_norm_unscaled) / n,
    )
