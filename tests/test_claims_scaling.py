"""Lesson 02's claims decide all three ways on constructed evidence, and hold on measured curves."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.stats import Interval, bootstrap_mean
from attnlab.course.claims import scaling as claims
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.scratch.scaling import ModelScalingStats, SaturationCurve, saturation_curve, variance_interval

D_KS = [4, 64, 1024]


def curve(entropy, max_weight, grad_norm, scaled=False, halfwidth=0.0):
    """A curve built by hand; ``halfwidth`` > 0 gives every point an interval of that half-width."""
    c = SaturationCurve(D_KS, scaled, entropy=entropy, max_weight=max_weight, grad_norm=grad_norm, n_keys=16)
    if halfwidth:
        c.intervals = {name: [Interval(v, v - halfwidth, v + halfwidth) for v in getattr(c, name)]
                       for name in ("entropy", "max_weight", "grad_norm")}
    return c


SATURATING = curve([2.5, 1.2, 0.3], [0.2, 0.6, 0.95], [0.25, 0.15, 0.02])
STEADY = curve([2.4, 2.35, 2.38], [0.25, 0.26, 0.25], [0.24, 0.245, 0.24], scaled=True)
NOT_SATURATING = curve([2.5, 2.4, 2.3], [0.2, 0.22, 0.25], [0.25, 0.24, 0.24])


def test_variance_can_hold():
    v = claims.verdict_variance([16, 64], [Interval(16.5, 16.0, 17.0), Interval(62.0, 60.0, 64.0)])
    assert v.verdict == HOLDS
    assert v.numbers["worst_relative_error"] == pytest.approx(2 / 64) and v.numbers["widths_inside"] == 2
    assert claims.verdict_variance([16, 64], [16.5, 62.0]).verdict == HOLDS  # bare numbers: intervals of width 0


def test_variance_can_fail():
    v = claims.verdict_variance([16, 64], [Interval(16.5, 16.0, 17.0), Interval(80.0, 77.0, 83.0)])
    assert v.verdict == FAILS and v.numbers["worst_relative_error"] == pytest.approx(0.25)
    assert v.numbers["worst_d_k"] == 64 and v.numbers["its_variance"] == 80.0 and v.numbers["widths_outside"] == 1
    # just outside the tolerance fails, just inside holds: the threshold is the named constant
    edge = 64 * (1 + claims.VARIANCE_TOLERANCE)
    assert claims.verdict_variance([64], [edge + 0.1]).verdict == FAILS
    assert claims.verdict_variance([64], [edge - 0.1]).verdict == HOLDS
    with pytest.raises(ValueError):
        claims.verdict_variance([16, 64], [16.0])


def test_variance_cannot_tell():
    # the estimate is inside the 10% band but its interval reaches beyond it: too few pairs to say
    v = claims.verdict_variance([64], [Interval(66.0, 58.0, 74.0)])
    assert v.verdict == UNSURE and v.numbers["widths_inside"] == 0 and v.numbers["widths_outside"] == 0


def test_variance_intervals_from_random_pairs_decide_like_the_theory():
    measured = [variance_interval(d, n_samples=4000, n_boot=200, seed=1) for d in (4, 64)]
    assert all(iv.contains(d) for iv, d in zip(measured, (4, 64)))
    assert claims.verdict_variance([4, 64], measured, tolerance=0.2).verdict == HOLDS
    # the same draws against a wrong theory (var = 2 d_k) fail
    assert claims.verdict_variance([8, 128], measured, tolerance=0.2).verdict == FAILS


def test_saturation_can_hold():
    assert claims.verdict_saturation(SATURATING, STEADY).verdict == HOLDS
    assert claims.verdict_saturation(curve([2.5, 1.2, 0.3], [0.2, 0.6, 0.95], [0.25, 0.15, 0.02], halfwidth=0.02),
                                     STEADY).verdict == HOLDS


def test_saturation_can_fail():
    assert claims.verdict_saturation(NOT_SATURATING, STEADY).verdict == FAILS
    # the scaled side must stay flat too: a scaled curve that also collapses sinks the claim
    assert claims.verdict_saturation(SATURATING, SATURATING).verdict == FAILS


def test_saturation_cannot_tell():
    # the largest weight rises by 0.15 > 0.1, but with intervals of +-0.05 the rise could be 0.05
    rising_a_little = curve([2.5, 1.2, 0.3], [0.2, 0.3, 0.35], [0.25, 0.15, 0.02], halfwidth=0.05)
    v = claims.verdict_saturation(rising_a_little, STEADY)
    assert v.verdict == UNSURE
    # the same evidence against a lower rise threshold holds
    assert claims.verdict_saturation(rising_a_little, STEADY, rise=0.01).verdict == HOLDS


def test_gradient_can_hold():
    v = claims.verdict_gradient(SATURATING, STEADY)
    assert v.verdict == HOLDS and v.numbers["shrinks_by"] == pytest.approx(0.25 / 0.02)


def test_gradient_can_fail():
    assert claims.verdict_gradient(NOT_SATURATING, STEADY).verdict == FAILS
    assert claims.verdict_gradient(SATURATING, SATURATING).verdict == FAILS


def test_gradient_cannot_tell():
    # 0.16 < 0.7 * 0.25 = 0.175, but intervals of +-0.03 reach 0.19 > 0.7 * 0.22
    v = claims.verdict_gradient(curve([2.5, 1.2, 0.3], [0.2, 0.6, 0.95], [0.25, 0.2, 0.16], halfwidth=0.03), STEADY)
    assert v.verdict == UNSURE


def test_flatness_needs_the_whole_intervals():
    assert claims.flatness([1.0, 1.0], [1.0, 1.0], [1.0, 1.0]) == (True, False)
    assert claims.flatness([0.98, 0.9], [1.02, 0.94], [1.0, 0.92]) == (False, False)  # 8% apart, ends 12%
    assert claims.flatness([1.0, 0.5], [1.0, 0.5], [1.0, 0.5]) == (False, True)


def test_measured_random_curves_support_both_claims():
    unscaled = saturation_curve(D_KS, scaled=False, n_rows=300)
    scaled = saturation_curve(D_KS, scaled=True, n_rows=300)
    assert claims.verdict_saturation(unscaled, scaled).verdict == HOLDS
    assert claims.verdict_gradient(unscaled, scaled).verdict == HOLDS
    # the "scaled" curve is flat; swapping the roles makes both claims fail
    assert claims.verdict_saturation(scaled, unscaled).verdict == FAILS


def stats(grad_scaled, grad_unscaled, per_text=None):
    return ModelScalingStats(head_dim=32, n_texts=len(per_text[0]) if per_text else 1,
                             grad_norm_scaled=grad_scaled, grad_norm_unscaled=grad_unscaled,
                             grad_norm_change=per_text or [])


def test_model_can_hold():
    v = claims.verdict_model(stats([0.3, 0.2, 0.25], [0.1, 0.05, 0.2]))
    assert v.verdict == HOLDS and v.numbers["layers_with_less_gradient"] == 3
    per_text = [[-0.2, -0.25, -0.15, -0.2], [-0.1, -0.12, -0.09, -0.11]]
    v = claims.verdict_model(stats([0.3, 0.2], [0.1, 0.09], per_text))
    assert v.verdict == HOLDS and v.numbers["weakest_layer_index"] == 1
    assert v.numbers["its_change"] == pytest.approx(-0.105)


def test_model_can_fail():
    v = claims.verdict_model(stats([0.3, 0.2, 0.25], [0.1, 0.4, 0.2]))  # layer 2 would pass more
    assert v.verdict == FAILS and v.numbers["layers_with_less_gradient"] == 2
    assert v.numbers["layers_with_more_gradient"] == 1
    assert claims.verdict_model(stats([], [])).verdict == UNSURE


def test_model_cannot_tell():
    # layer 2's texts disagree: on average less gradient, but the interval over texts reaches above 0
    per_text = [[-0.2, -0.25, -0.15, -0.2], [-0.3, 0.2, -0.25, 0.15]]
    v = claims.verdict_model(stats([0.3, 0.2], [0.1, 0.15], per_text))
    assert v.verdict == UNSURE and v.numbers["layers_with_less_gradient"] == 1
    iv = claims.gradient_change_intervals(stats([0.3, 0.2], [0.1, 0.15], per_text))[1]
    ref = bootstrap_mean(np.array(per_text[1]))
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((ref.estimate, ref.low, ref.high))


def test_model_verdict_on_the_bundled_model_agrees_with_its_numbers(bundled):
    from attnlab.scratch.scaling import model_scaling_stats

    s = model_scaling_stats(bundled, ["how do you play chess", "the cat sat on the mat"])
    changes = claims.gradient_change_intervals(s)
    v = claims.verdict_model(s)
    below = sum(bool(iv.below(0.0)) for iv in changes)
    above = sum(bool(iv.above(0.0)) for iv in changes)
    expected = HOLDS if below == bundled.n_layers else (FAILS if above else UNSURE)
    assert v.verdict == expected and v.numbers["layers"] == bundled.n_layers
