"""Lesson 02's measurements, checked against theory and independent computations."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.scratch.self_attention import hidden_states
from attnlab.scratch.scaling import (
    SaturationCurve,
    dot_product_variance,
    model_scaling_stats,
    saturation_curve,
    softmax_jacobian_norm,
    verdict_model,
    verdict_gradient,
    verdict_saturation,
    verdict_variance,
)


@pytest.mark.parametrize("d_k", [16, 64, 256, 1024])
def test_dot_product_variance_is_d_k(d_k):
    # theory: var(q.k) = d_k for i.i.d. unit-variance entries
    assert dot_product_variance(d_k, n_samples=6000, seed=1) == pytest.approx(d_k, rel=0.10)


def test_dot_product_variance_is_reproducible_and_validates():
    assert dot_product_variance(8, 500, seed=3) == dot_product_variance(8, 500, seed=3)
    with pytest.raises(ValueError):
        dot_product_variance(0)


def test_softmax_jacobian_norm_matches_closed_form():
    scores = torch.randn(7, 5, generator=torch.Generator().manual_seed(0))
    p = torch.softmax(scores, dim=-1)
    closed = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # diag(p) - p p^T
    assert torch.allclose(softmax_jacobian_norm(scores), closed.flatten(1).norm(dim=-1), atol=1e-6)
    # a saturated row passes (almost) no gradient
    assert softmax_jacobian_norm(torch.tensor([[100.0, 0.0, 0.0]])).item() < 1e-6
    with pytest.raises(ValueError):
        softmax_jacobian_norm(torch.zeros(3))


def test_saturation_curves_and_verdict():
    d_ks = [4, 64, 1024]
    unscaled = saturation_curve(d_ks, scaled=False, n_rows=300)
    scaled = saturation_curve(d_ks, scaled=True, n_rows=300)
    # scaled scores have unit spread; unscaled ones grow like sqrt(d_k)
    assert scaled.score_std == pytest.approx([1.0] * 3, rel=0.1)
    assert [s / math.sqrt(d) for s, d in zip(unscaled.score_std, d_ks)] == pytest.approx([1.0] * 3, rel=0.1)
    assert unscaled.max_weight[0] < unscaled.max_weight[1] < unscaled.max_weight[2]
    assert unscaled.entropy[-1] < 0.2 * math.log(16)
    assert unscaled.grad_norm[-1] < 0.5 * unscaled.grad_norm[0]
    assert verdict_saturation(unscaled, scaled)[0] == "holds"
    assert verdict_gradient(unscaled, scaled)[0] == "holds"
    # a curve that does not saturate must not pass
    flat = SaturationCurve(d_ks, False, entropy=[2.0] * 3, max_weight=[0.3] * 3, grad_norm=[0.3] * 3, n_keys=16)
    assert verdict_saturation(flat, scaled)[0] == "does not hold"
    assert verdict_gradient(flat, scaled)[0] == "does not hold"


def test_verdict_variance():
    assert verdict_variance([16, 64], [16.5, 62.0])[0] == "holds"
    status, msg = verdict_variance([16, 64], [16.5, 80.0])
    assert status == "does not hold" and "25.0% off" in msg


def test_model_scaling_stats_agree_with_model_attention(tiny_en):
    texts = ["how do you play chess", "the king"]
    stats = model_scaling_stats(tiny_en, texts)
    assert len(stats.raw_var) == tiny_en.n_layers
    # the model's own softmax is the scaled one: its mean row entropy must match
    for layer in range(tiny_en.n_layers):
        ents = []
        for t in texts:
            _, _, atts = hidden_states(tiny_en, [t])
            p = atts[layer][0]  # (H, n, n)
            ents.append(-(p * p.clamp_min(1e-30).log()).sum(-1).flatten())
        assert stats.entropy_scaled[layer] == pytest.approx(float(torch.cat(ents).mean()), abs=1e-4)
        assert stats.scaled_var[layer] == pytest.approx(stats.raw_var[layer] / tiny_en.head_dim, rel=1e-5)


def test_verdict_model_on_bundled(bundled):
    stats = model_scaling_stats(bundled, ["how do you play chess"])
    status, msg = verdict_model(stats)
    assert status in ("holds", "holds in part", "does not hold") and "layers" in msg
    # unscaled scores are sqrt(d_h) times larger, so softmax can only get sharper here
    assert all(u > s for u, s in zip(stats.max_weight_unscaled, stats.max_weight_scaled))
