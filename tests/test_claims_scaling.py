"""Lesson 02: the three checks of the theorems pass and fail on constructed curves; the model claim decides all three ways."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.stats import Interval, bootstrap_mean
from attnlab.course.checks import FAILED, PASSED, Check
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


def test_variance_check_passes_within_the_tolerance():
    c = claims.check_variance([16, 64], [Interval(16.2, 16.0, 16.4), Interval(62.0, 60.0, 64.0)])
    assert isinstance(c, Check) and c.passed and c.verdict == PASSED
    assert c.numbers["worst_relative_error"] == pytest.approx(2 / 64) and c.numbers["widths_within"] == 2
    assert c.numbers["its_low"] == 60.0 and c.numbers["its_high"] == 64.0  # the interval is shown with it
    assert claims.check_variance([16, 64], [16.5, 62.0]).passed  # bare numbers work too
    assert "Check:" in str(c) and "passed" in str(c)


def test_variance_check_fails_outside_the_tolerance():
    c = claims.check_variance([16, 64], [Interval(16.5, 16.0, 17.0), Interval(80.0, 77.0, 83.0)])
    assert not c.passed and c.verdict == FAILED and c.numbers["worst_relative_error"] == pytest.approx(0.25)
    assert c.numbers["worst_d_k"] == 64 and c.numbers["its_variance"] == 80.0 and c.numbers["widths_within"] == 1
    # just outside the tolerance fails, just inside passes: the tolerance is the named constant
    edge = 64 * (1 + claims.VARIANCE_TOLERANCE)
    assert not claims.check_variance([64], [edge + 0.1]).passed
    assert claims.check_variance([64], [edge - 0.1]).passed
    with pytest.raises(ValueError):
        claims.check_variance([16, 64], [16.0])


def test_variance_check_on_random_pairs_agrees_with_the_theory_and_not_with_a_wrong_one():
    measured = [variance_interval(d, n_samples=4000, n_boot=200, seed=1) for d in (4, 64)]
    assert all(iv.contains(d) for iv, d in zip(measured, (4, 64)))
    assert claims.check_variance([4, 64], measured, tolerance=0.2).passed
    # the same draws against a wrong theory (var = 2 d_k) fail
    assert not claims.check_variance([8, 128], measured, tolerance=0.2).passed


def test_saturation_check_passes_on_a_saturating_curve():
    c = claims.check_saturation(SATURATING, STEADY)
    assert c.passed and c.numbers["unscaled_max_weight_last"] == 0.95


def test_saturation_check_fails_without_saturation_or_when_the_scaled_side_collapses():
    assert not claims.check_saturation(NOT_SATURATING, STEADY).passed
    assert not claims.check_saturation(SATURATING, SATURATING).passed
    # a rise of 0.15 passes the default line 0.1 and fails a line of 0.2
    rising_a_little = curve([2.5, 1.2, 0.3], [0.2, 0.3, 0.35], [0.25, 0.15, 0.02])
    assert claims.check_saturation(rising_a_little, STEADY).passed
    assert not claims.check_saturation(rising_a_little, STEADY, rise=0.2).passed


def test_gradient_check_passes_and_fails():
    c = claims.check_gradient(SATURATING, STEADY)
    assert c.passed and c.numbers["shrinks_by"] == pytest.approx(0.25 / 0.02)
    assert not claims.check_gradient(NOT_SATURATING, STEADY).passed
    assert not claims.check_gradient(SATURATING, SATURATING).passed
    # 0.16 < 0.7 * 0.25 = 0.175 passes; a line of 0.6 (0.15) does not
    slow = curve([2.5, 1.2, 0.3], [0.2, 0.6, 0.95], [0.25, 0.2, 0.16])
    assert claims.check_gradient(slow, STEADY).passed and not claims.check_gradient(slow, STEADY, fall=0.6).passed


def test_flatness_is_the_spread_against_the_largest_value():
    assert claims.is_flat([1.0, 1.0]) and claims.is_flat([1.0, 0.92])  # 8% apart
    assert not claims.is_flat([1.0, 0.5]) and claims.is_flat([1.0, 0.5], tolerance=0.5)


def test_measured_random_curves_pass_both_checks():
    unscaled = saturation_curve(D_KS, scaled=False, n_rows=300)
    scaled = saturation_curve(D_KS, scaled=True, n_rows=300)
    assert claims.check_saturation(unscaled, scaled).passed
    assert claims.check_gradient(unscaled, scaled).passed
    # the "scaled" curve is flat; swapping the roles makes both checks fail
    assert not claims.check_saturation(scaled, unscaled).passed
    assert not claims.check_gradient(scaled, unscaled).passed


def test_a_check_round_trips_through_its_record():
    c = claims.check_variance([16], [16.4])
    back = Check.from_record(c.to_record())
    assert (back.what, back.passed) == (c.what, c.passed)
    assert back.numbers["worst_relative_error"] == pytest.approx(0.4 / 16)


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
