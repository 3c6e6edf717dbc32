"""attnlab.analysis.stats against brute-force and textbook computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from attnlab.analysis import stats


def test_bootstrap_mean_matches_a_brute_force_loop():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(40, 2, 3))
    got = stats.bootstrap_mean(values, n_boot=400, seed=7)
    # independent: draw the same multinomial counts, average by hand
    counts = np.random.default_rng(7).multinomial(40, np.full(40, 1 / 40), size=400)
    boots = np.stack([(c[:, None, None] * values).sum(0) / 40 for c in counts])
    np.testing.assert_allclose(got.estimate, values.mean(0), atol=1e-12)
    np.testing.assert_allclose(got.low, np.quantile(boots, 0.025, axis=0), atol=1e-12)
    np.testing.assert_allclose(got.high, np.quantile(boots, 0.975, axis=0), atol=1e-12)
    assert got.n == 40 and got.estimate.shape == (2, 3)


def test_bootstrap_interval_covers_the_true_mean_about_as_often_as_it_says():
    hits = 0
    for seed in range(200):
        sample = np.random.default_rng(seed).normal(loc=3.0, size=30)
        iv = stats.bootstrap_mean(sample, n_boot=300, seed=seed)
        hits += bool(iv.contains(3.0))
    assert 0.85 <= hits / 200 <= 0.99  # nominal 95%; the percentile bootstrap is a little narrow at n = 30


def test_bootstrap_drops_nan_rows_and_refuses_empty_input():
    iv = stats.bootstrap_mean([1.0, np.nan, 3.0], n_boot=50)
    assert iv.estimate == pytest.approx(2.0) and iv.n == 2
    with pytest.raises(ValueError):
        stats.bootstrap_mean([])
    with pytest.raises(ValueError):
        stats.bootstrap_mean([np.nan])


def test_interval_sides():
    iv = stats.Interval(0.3, 0.1, 0.5)
    assert iv.above(0.0) and not iv.below(0.0) and not iv.contains(0.0) and iv.contains(0.2)
    iv = stats.Interval(-0.1, -0.3, 0.2)
    assert not iv.above(0.0) and not iv.below(0.0) and iv.contains(0.0)
    back = stats.Interval.from_record(stats.Interval(np.ones((2, 2)), np.zeros((2, 2)), 2 * np.ones((2, 2)), n=5).to_record())
    assert back.estimate.shape == (2, 2) and back.n == 5


def test_slope_matches_polyfit_row_by_row():
    rng = np.random.default_rng(0)
    x = np.array([0.0, 1.0, 2.0, 5.0])
    y = rng.normal(size=(3, 4))
    want = [np.polyfit(x, row, 1)[0] for row in y]
    np.testing.assert_allclose(stats.slope(x, y), want, atol=1e-12)
    assert stats.slope(x, 2 * x + 1) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        stats.slope([1.0, 1.0], [0.0, 1.0])


def test_bootstrap_slope_sees_a_trend_and_no_trend():
    rng = np.random.default_rng(3)
    depth = np.arange(6.0)
    rising = depth[None, :] * 0.5 + rng.normal(scale=0.3, size=(50, 6))
    flat = rng.normal(scale=0.3, size=(50, 6))
    assert stats.bootstrap_slope(depth, rising, n_boot=300).above(0.0)
    assert stats.bootstrap_slope(depth, flat, n_boot=300).contains(0.0)


def test_correlation_matches_scipy_and_its_interval_brackets_it():
    rng = np.random.default_rng(4)
    x = rng.normal(size=60)
    y = x + rng.normal(scale=0.5, size=60)
    iv = stats.bootstrap_correlation(x, y, n_boot=300)
    assert iv.estimate == pytest.approx(sps.spearmanr(x, y)[0], abs=1e-12)
    assert iv.low <= iv.estimate <= iv.high and iv.above(0.5)
    assert stats.correlation(x, y, "pearson") == pytest.approx(sps.pearsonr(x, y)[0], abs=1e-12)
    assert np.isnan(stats.correlation(np.ones(5), np.arange(5.0)))


def test_permutation_test_agrees_with_exact_enumeration():
    from itertools import combinations

    a, b = np.array([5.0, 6.0, 7.0]), np.array([1.0, 2.0, 3.0, 6.5])
    diff, p = stats.permutation_test(a, b, n_perm=20000, seed=0)
    both = np.concatenate([a, b])
    null = []
    for idx in combinations(range(7), 3):
        mask = np.zeros(7, bool)
        mask[list(idx)] = True
        null.append(both[mask].mean() - both[~mask].mean())
    exact = np.mean(np.array(null) >= diff - 1e-12)
    assert diff == pytest.approx(a.mean() - b.mean())
    assert p == pytest.approx(exact, abs=0.01)
    _, p_less = stats.permutation_test(a, b, n_perm=2000, alternative="less")
    assert p_less > 0.9


def test_side_of_says_above_below_or_straddles():
    iv = stats.Interval(np.array([0.5, 0.05, 0.1]), np.array([0.3, 0.0, 0.05]), np.array([0.7, 0.08, 0.2]))
    np.testing.assert_array_equal(stats.side_of(iv, 0.1), [stats.ABOVE, stats.BELOW, stats.STRADDLES])
    assert stats.side_of(stats.Interval(0.5, 0.4, 0.6), 0.1) == stats.ABOVE


def test_bootstrap_share_above_matches_a_brute_force_loop_over_the_units():
    rng = np.random.default_rng(3)
    values = rng.normal(0.1, 0.05, size=(12, 2, 3))  # 12 units, 6 heads near the threshold
    values[:, 0, 0] += 0.5  # one head far above it
    iv = stats.bootstrap_share_above(values, 0.1, n_boot=300, seed=5)
    counts = stats.resample_counts(12, 300, seed=5)  # the same resamples, written out
    flat = values.reshape(12, -1)
    shares = [((c[:, None] * flat).sum(axis=0) / 12 > 0.1).mean() for c in counts]
    low, high = np.quantile(shares, [0.025, 0.975])
    assert iv.estimate == pytest.approx((flat.mean(axis=0) > 0.1).mean())
    assert (iv.low, iv.high) == pytest.approx((low, high)) and iv.n == 12
    assert iv.low >= 1 / 6 - 1e-12  # the far head is above in every resample


def test_bootstrap_share_above_separates_a_null_from_a_planted_share():
    rng = np.random.default_rng(0)
    null = rng.normal(0.0, 0.02, size=(40, 12))  # no head changes: pure noise around 0
    planted = null.copy()
    planted[:, :3] += 0.4  # three heads of twelve change by 0.4
    assert stats.bootstrap_share_above(null, 0.1, n_boot=200).high == pytest.approx(0.0, abs=1e-12)
    iv = stats.bootstrap_share_above(planted, 0.1, n_boot=200)
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((0.25, 0.25, 0.25))
    with pytest.raises(ValueError):
        stats.bootstrap_share_above(np.ones(3), 0.1)


def test_an_interval_without_values_is_nan_and_says_nothing():
    """A column whose bootstrap samples are all NaN has NaN bounds (cannot tell), with no numpy warning
    in the reader's output (lesson 12's reduced twin printed "RuntimeWarning: All-NaN slice encountered")."""
    import warnings

    boots = np.full((200, 2), np.nan)
    boots[:, 0] = np.arange(200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        iv = stats.interval_from_samples(np.array([99.5, np.nan]), boots)
    assert np.isnan(iv.low[1]) and np.isnan(iv.high[1])
    assert iv.low[0] == pytest.approx(np.quantile(np.arange(200), 0.025))
    assert iv.high[0] == pytest.approx(np.quantile(np.arange(200), 0.975))
