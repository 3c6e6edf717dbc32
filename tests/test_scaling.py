"""Lesson 02's measurements, checked against theory and independent computations."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.analysis.stats import Interval, bootstrap, bootstrap_mean
from attnlab.core.distributions import entropy
from attnlab.scratch.scaling import (
    ModelScalingStats,
    SaturationCurve,
    dot_product_variance,
    dot_products,
    model_scaling_stats,
    saturation_curve,
    softmax_jacobian_norm,
    variance_interval,
)
from attnlab.scratch.self_attention import hidden_states


@pytest.mark.parametrize("d_k", [16, 64, 256, 1024])
def test_dot_product_variance_is_d_k(d_k):
    # theory: var(q.k) = d_k for i.i.d. unit-variance entries
    assert dot_product_variance(d_k, n_samples=6000, seed=1) == pytest.approx(d_k, rel=0.10)


def test_variance_interval_is_the_bootstrap_of_the_same_draws():
    iv = variance_interval(16, n_samples=3000, seed=2, n_boot=300)
    assert iv.estimate == pytest.approx(dot_product_variance(16, 3000, seed=2))
    dots = dot_products(16, 3000, seed=2).numpy()
    ref = bootstrap(dots, lambda v: v.var(ddof=1), n_boot=300, seed=2)
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high))
    assert iv.low < 16 < iv.high and iv.n == 3000


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


def test_saturation_curves_match_theory():
    d_ks = [4, 64, 1024]
    unscaled = saturation_curve(d_ks, scaled=False, n_rows=300)
    scaled = saturation_curve(d_ks, scaled=True, n_rows=300)
    # scaled scores have unit spread; unscaled ones grow like sqrt(d_k)
    assert scaled.score_std == pytest.approx([1.0] * 3, rel=0.1)
    assert [s / math.sqrt(d) for s, d in zip(unscaled.score_std, d_ks)] == pytest.approx([1.0] * 3, rel=0.1)
    assert unscaled.max_weight[0] < unscaled.max_weight[1] < unscaled.max_weight[2]
    assert unscaled.entropy[-1] < 0.2 * math.log(16)
    assert unscaled.grad_norm[-1] < 0.5 * unscaled.grad_norm[0]


def test_saturation_curve_entries_match_a_direct_computation():
    # the same draws as saturation_curve, recomputed here without the package's loop
    gen = torch.Generator().manual_seed(4)
    q = torch.randn(50, 1, 8, generator=gen)
    k = torch.randn(50, 5, 8, generator=gen)
    p = torch.softmax((q * k).sum(-1) / math.sqrt(8), dim=-1)  # (50, 5)
    curve = saturation_curve([8], scaled=True, n_keys=5, n_rows=50, seed=4)
    ent = -(p * p.log()).sum(-1).mean()
    assert curve.entropy[0] == pytest.approx(float(ent), rel=1e-5)
    assert curve.max_weight[0] == pytest.approx(float(p.max(-1).values.mean()), rel=1e-5)
    with pytest.raises(ValueError):
        saturation_curve([8], scaled=True, n_keys=1)


def test_saturation_curve_intervals_are_bootstraps_over_rows():
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(40, 1, 8, generator=gen)
    k = torch.randn(40, 16, 8, generator=gen)
    p = torch.softmax((q * k).sum(-1), dim=-1)  # (40, 16): unscaled rows
    curve = saturation_curve([8], scaled=False, n_rows=40, seed=5)
    ref = bootstrap_mean(p.max(-1).values.double().numpy(), seed=5)
    iv = curve.intervals["max_weight"][0]
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((ref.estimate, ref.low, ref.high))
    assert curve.bounds("max_weight") == ([iv.low], [iv.high])
    by_hand = SaturationCurve([8], False, max_weight=[0.5])
    assert by_hand.bounds("max_weight") == ([0.5], [0.5])  # no intervals: the values themselves


def test_curves_and_stats_survive_their_records():
    curve = saturation_curve([4, 16], scaled=False, n_rows=20)
    assert SaturationCurve.from_record(curve.to_record()) == curve
    assert isinstance(SaturationCurve.from_record(curve.to_record()).intervals["entropy"][0], Interval)
    stats = ModelScalingStats(head_dim=4, n_texts=1, raw_var=[2.0], grad_norm_scaled=[0.1])
    assert ModelScalingStats.from_record(stats.to_record()) == stats


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
    # one change of the gradient per layer and text; their mean over rows pooled per text
    assert [len(c) for c in stats.grad_norm_change] == [len(texts)] * tiny_en.n_layers
    _, _, atts = hidden_states(tiny_en, [texts[1]])
    rows = atts[0][0].flatten(0, 1)  # (H*n, n): layer 1's rows for the second text, the model's scaled softmax
    scaled_rows = torch.log(rows.clamp_min(1e-30))  # softmax is unchanged by a shift per row
    unscaled_rows = scaled_rows * math.sqrt(tiny_en.head_dim)
    change = softmax_jacobian_norm(unscaled_rows).mean() - softmax_jacobian_norm(scaled_rows).mean()
    assert stats.grad_norm_change[0][1] == pytest.approx(float(change), abs=1e-4)


def test_unscaled_softmax_is_sharper_on_the_bundled_model(bundled):
    """A check, not a finding: multiplying every score by sqrt(d_h) > 1 can only lower the entropy."""
    stats = model_scaling_stats(bundled, ["how do you play chess"])
    assert all(u > s for u, s in zip(stats.max_weight_unscaled, stats.max_weight_scaled))
    assert all(u < s for u, s in zip(stats.entropy_unscaled, stats.entropy_scaled))


def test_entropy_falls_when_scores_are_multiplied():
    """The identity behind that check, on random rows: softmax(c s) has lower entropy for c > 1."""
    scores = torch.randn(200, 9, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    base = entropy(torch.softmax(scores, -1))
    for c in (1.5, 4.0, 8.0):
        assert (entropy(torch.softmax(c * scores, -1)) < base).all()


def test_scaling_plots_draw_the_measurements():
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.viz.scaling_plots import plot_model_scaling, plot_saturation, plot_variance

    fig = plot_variance([4, 16], [Interval(4.2, 4.0, 4.4), 15.0], tolerance=0.1)
    ax, ratio_ax = fig.axes
    # both series visible: the theory a dashed line, the measurements markers without a connecting line
    theory = [line for line in ax.get_lines() if line.get_label() == "theory: var = d_k"][0]
    assert list(theory.get_ydata()) == [4.0, 16.0] and theory.get_linestyle() == "--"
    measured = [c for c in ax.containers if c.get_label() == "measured var(q.k)"][0]
    assert list(measured.lines[0].get_ydata()) == [4.2, 15.0] and measured.lines[0].get_linestyle() == "None"
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"theory: var = d_k", "measured var(q.k)"}
    ratio = [c for c in ratio_ax.containers if c.get_label().startswith("measured / d_k")][0]
    assert list(ratio.lines[0].get_ydata()) == pytest.approx([1.05, 15.0 / 16])
    with pytest.raises(ValueError):
        plot_variance([4, 16], [4.2])
    unscaled = SaturationCurve([4, 16], False, entropy=[2.0, 1.0], max_weight=[0.3, 0.7], grad_norm=[0.2, 0.1], n_keys=16)
    scaled = SaturationCurve([4, 16], True, entropy=[2.1, 2.1], max_weight=[0.3, 0.3], grad_norm=[0.2, 0.2], n_keys=16)
    fig = plot_saturation(unscaled, scaled, ["entropy", "grad_norm"])
    assert len(fig.axes) == 2
    entropy_lines = {line.get_label(): list(line.get_ydata()) for line in fig.axes[0].get_lines()}
    assert entropy_lines["without scaling"] == [2.0, 1.0] and entropy_lines["with 1/sqrt(d_k)"] == [2.1, 2.1]
    assert [line.get_ydata()[0] for line in fig.axes[0].get_lines() if line.get_label().startswith("_")] \
        == pytest.approx([math.log(16)])  # the uniform-entropy guide line
    with pytest.raises(ValueError):
        plot_saturation(unscaled, scaled, ["variance"])
    stats = ModelScalingStats(head_dim=4, n_texts=1, entropy_scaled=[1.0, 2.0], entropy_unscaled=[0.5, 1.0],
                              max_weight_scaled=[0.5, 0.4], max_weight_unscaled=[0.8, 0.7],
                              grad_norm_scaled=[0.2, 0.3], grad_norm_unscaled=[0.1, 0.2])
    fig = plot_model_scaling(stats)
    assert [list(line.get_ydata()) for line in fig.axes[2].get_lines()] == [[0.2, 0.3], [0.1, 0.2]]
