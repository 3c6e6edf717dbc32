"""Lesson 02's claims decide both ways on constructed evidence, and hold on measured curves."""

from __future__ import annotations

import pytest

from attnlab.course.claims import scaling as claims
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.scratch.scaling import ModelScalingStats, SaturationCurve, saturation_curve

D_KS = [4, 64, 1024]


def curve(entropy, max_weight, grad_norm, scaled=False):
    return SaturationCurve(D_KS, scaled, entropy=entropy, max_weight=max_weight, grad_norm=grad_norm, n_keys=16)


SATURATING = curve([2.5, 1.2, 0.3], [0.2, 0.6, 0.95], [0.25, 0.15, 0.02])
STEADY = curve([2.4, 2.35, 2.38], [0.25, 0.26, 0.25], [0.24, 0.245, 0.24], scaled=True)
NOT_SATURATING = curve([2.5, 2.4, 2.3], [0.2, 0.22, 0.25], [0.25, 0.24, 0.24])


def test_variance_can_hold():
    v = claims.verdict_variance([16, 64], [16.5, 62.0])
    assert v.verdict == HOLDS
    assert v.numbers["worst_relative_error"] == pytest.approx(2 / 64)


def test_variance_can_fail():
    v = claims.verdict_variance([16, 64], [16.5, 80.0])
    assert v.verdict == FAILS and v.numbers["worst_relative_error"] == pytest.approx(0.25)
    assert v.numbers["worst_d_k"] == 64 and v.numbers["its_variance"] == 80.0
    # just outside the tolerance fails, just inside holds: the threshold is the named constant
    edge = 64 * (1 + claims.VARIANCE_TOLERANCE)
    assert claims.verdict_variance([64], [edge + 0.1]).verdict == FAILS
    assert claims.verdict_variance([64], [edge - 0.1]).verdict == HOLDS
    with pytest.raises(ValueError):
        claims.verdict_variance([16, 64], [16.0])


def test_saturation_can_hold():
    assert claims.verdict_saturation(SATURATING, STEADY).verdict == HOLDS


def test_saturation_can_fail():
    assert claims.verdict_saturation(NOT_SATURATING, STEADY).verdict == FAILS
    # the scaled side must stay flat too: a scaled curve that also collapses sinks the claim
    assert claims.verdict_saturation(SATURATING, SATURATING).verdict == FAILS


def test_gradient_can_hold():
    v = claims.verdict_gradient(SATURATING, STEADY)
    assert v.verdict == HOLDS and v.numbers["shrinks_by"] == pytest.approx(0.25 / 0.02)


def test_gradient_can_fail():
    assert claims.verdict_gradient(NOT_SATURATING, STEADY).verdict == FAILS
    assert claims.verdict_gradient(SATURATING, SATURATING).verdict == FAILS


def test_measured_random_curves_support_both_claims():
    unscaled = saturation_curve(D_KS, scaled=False, n_rows=300)
    scaled = saturation_curve(D_KS, scaled=True, n_rows=300)
    assert claims.verdict_saturation(unscaled, scaled).verdict == HOLDS
    assert claims.verdict_gradient(unscaled, scaled).verdict == HOLDS


def stats(grad_scaled, grad_unscaled):
    return ModelScalingStats(head_dim=32, n_texts=3, grad_norm_scaled=grad_scaled, grad_norm_unscaled=grad_unscaled)


def test_model_can_hold():
    v = claims.verdict_model(stats([0.3, 0.2, 0.25], [0.1, 0.05, 0.2]))
    assert v.verdict == HOLDS and v.numbers["layers_with_less_gradient"] == 3


def test_model_can_fail():
    v = claims.verdict_model(stats([0.3, 0.2, 0.25], [0.1, 0.4, 0.2]))  # layer 2 would pass more
    assert v.verdict == FAILS and v.numbers["layers_with_less_gradient"] == 2
    assert claims.verdict_model(stats([], [])).verdict == UNSURE


def test_model_verdict_on_the_bundled_model_agrees_with_its_numbers(bundled):
    from attnlab.scratch.scaling import model_scaling_stats

    s = model_scaling_stats(bundled, ["how do you play chess"])
    less = sum(u < g for u, g in zip(s.grad_norm_unscaled, s.grad_norm_scaled))
    v = claims.verdict_model(s)
    assert v.verdict == (HOLDS if less == bundled.n_layers else FAILS)
    assert v.numbers["layers"] == bundled.n_layers
