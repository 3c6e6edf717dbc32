"""Fixedness over query shards: the bootstrap and the report's numbers against independent computations."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from attnlab.analysis.fixedness import FixednessReport, bootstrap_fixedness, fixedness_report
from attnlab.analysis.stats import Interval, resample_counts
from attnlab.core.streaming import MeanAttention, merge_all
from attnlab.viz.fixedness_plots import plot_fixedness, plot_mean_maps, position_labels


def synthetic_shards(n_shards=6, per_shard=60, vary=(0.8, 0.4, 0.0), seed=0, heads=12):
    """Layer l: each query's map is a random one-hot map with probability vary[l], else one fixed map."""
    gen = torch.Generator().manual_seed(seed)
    n = 6
    fixed_map = torch.softmax(torch.randn(len(vary), heads, n, n, generator=gen) * 3, dim=-1)
    shards = []
    for _ in range(n_shards):
        acc = MeanAttention.empty(len(vary), heads, n)
        picks = torch.randint(0, n, (per_shard, len(vary), heads, n), generator=gen)
        random_maps = torch.nn.functional.one_hot(picks, n).float()  # (Q, L, H, n, n)
        chance = torch.tensor(vary).view(1, -1, 1, 1, 1)
        use_random = torch.rand(per_shard, len(vary), heads, 1, 1, generator=gen) < chance
        acc.add(torch.where(use_random, random_maps, fixed_map.expand(per_shard, -1, -1, -1, -1)))
        shards.append(acc)
    return shards


def test_bootstrap_of_shards_brackets_the_whole():
    shards = synthetic_shards()
    whole = merge_all(shards).fixedness()
    boots = bootstrap_fixedness(shards, n_boot=200)
    assert boots.shape == (200, 3, 12)
    assert torch.all(boots.quantile(0.01, dim=0) <= whole + 1e-9)
    assert torch.all(whole <= boots.quantile(0.99, dim=0) + 1e-9)
    torch.testing.assert_close(boots, bootstrap_fixedness(shards, n_boot=200))  # same seed, same resamples
    assert not torch.equal(boots, bootstrap_fixedness(shards, n_boot=200, seed=1))


def test_one_resample_is_the_fixedness_of_the_drawn_shards():
    shards = synthetic_shards(n_shards=4, per_shard=20)
    from_counts = resample_counts(4, 1, seed=5)[0]  # how often each shard is drawn
    drawn = [s for s, k in zip(shards, from_counts) for _ in range(k)]
    expected = merge_all(drawn).fixedness()
    torch.testing.assert_close(bootstrap_fixedness(shards, n_boot=1, seed=5)[0], expected, atol=1e-9, rtol=0)


def test_report_numbers_match_an_independent_computation():
    shards = synthetic_shards()
    rep = fixedness_report(shards, n_boot=300)
    whole = merge_all(shards)
    fixed = whole.fixedness().numpy()
    np.testing.assert_allclose(rep.fixedness, fixed, atol=1e-12)
    np.testing.assert_allclose(rep.sharpness, whole.sharpness().numpy(), atol=1e-12)
    per_layer = fixed.mean(axis=1)
    np.testing.assert_allclose(rep.per_layer.estimate, per_layer, atol=1e-12)
    assert rep.slope.estimate == pytest.approx(np.polyfit([0, 1, 2], per_layer, 1)[0], abs=1e-12)
    assert rep.per_layer.n == rep.slope.n == 6 and rep.n_shards == 6 and rep.count == 360
    assert np.all(rep.per_layer.low <= per_layer + 1e-12) and np.all(per_layer <= rep.per_layer.high + 1e-12)
    assert rep.slope.low <= rep.slope.estimate <= rep.slope.high
    assert rep.depth_rho == pytest.approx(1.0)  # layers vary less and less
    assert rep.sharp_fixed_rho == pytest.approx(spearmanr(rep.sharpness.ravel(), fixed.ravel())[0], abs=1e-12)
    assert rep.per_layer.estimate[0] < rep.per_layer.estimate[1] < rep.per_layer.estimate[2]
    assert rep.last_is_most_fixed_share == pytest.approx(1.0)
    assert "Slope against depth" in rep.summary()


def test_heads_at_least_uses_model_layers():
    rep = FixednessReport(layers=[3, 5], fixedness=np.array([[0.95, 0.2], [0.5, 0.9]]),
                          sharpness=np.zeros((2, 2)), per_layer=Interval(np.zeros(2), np.zeros(2), np.zeros(2)),
                          slope=Interval(0.0, 0.0, 0.0), depth_rho=float("nan"), sharp_fixed_rho=0.0,
                          last_is_most_fixed_share=0.5, count=10, n_shards=2)
    assert rep.heads_at_least(0.9) == [(3, 0), (5, 1)]
    assert rep.heads_at_least(0.99) == []


def test_one_accumulator_gives_point_intervals():
    whole = merge_all(synthetic_shards(n_shards=2))
    rep = fixedness_report(whole)
    assert rep.n_shards == 1
    np.testing.assert_allclose(rep.per_layer.low, rep.per_layer.estimate)
    assert rep.slope.low == pytest.approx(rep.slope.estimate)


def test_plots_of_mean_maps_and_fixedness():
    acc = merge_all(synthetic_shards(n_shards=2))
    assert position_labels(acc) == ["[CLS]", "1", "2", "3", "4", "[SEP]"]
    fig = plot_mean_maps(acc, layers=range(2), heads=[0, 5, 11])
    assert len(fig.axes) == 6
    fig = plot_fixedness(acc, threshold=0.9)
    stars = sum(t.get_text().endswith("*") for t in fig.axes[0].texts)
    assert stars == int((acc.fixedness() >= 0.9).sum())
    assert not any(t.get_text().endswith("*") for t in plot_fixedness(acc).axes[0].texts)
    plt.close("all")
