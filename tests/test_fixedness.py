"""Fixedness over query shards: the bootstrap and the report's numbers against independent computations."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import attnlab as al
from attnlab.analysis.fixedness import (
    UNIFORM_INFO,
    FixednessReport,
    bootstrap_fixedness,
    decades,
    fixedness_curve,
    fixedness_report,
    head_numbers,
    layer_means,
    leading_pieces,
)
from attnlab.analysis.stats import MIN_UNITS, resample_counts
from attnlab.core.streaming import ENTROPY_EPS, MeanAttention, information_from_sums, merge_all, sharded_mean_attention
from attnlab.course.claims import averaging as claims
from attnlab.viz.fixedness_plots import (
    fitted_range,
    plot_fixed_at,
    plot_fixedness,
    plot_fixedness_curve,
    plot_mean_maps,
    position_labels,
    threshold_slider,
)

from same_length import same_length_texts


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


N_KEYS = 8


def head_shards(rows, n_shards: int = 10) -> list[MeanAttention]:
    """Shards of one layer, one head: ``rows`` ``(Q, n, n)`` (every query's map) split into ``n_shards``."""
    rows = torch.as_tensor(rows, dtype=torch.float64)
    shards = []
    for part in rows.chunk(n_shards):
        shards.append(MeanAttention.empty(1, 1, rows.shape[-1]).add(part[:, None, None]))
    return shards


def dirichlet_rows(alpha: float, queries: int = 1000, seed: int = 0, base: np.ndarray | None = None) -> np.ndarray:
    """``(Q, n, n)``: every query's every row drawn on its own from Dirichlet(alpha * n * base)
    (``base`` ``(n, n)`` rows summing to 1; default uniform: symmetric Dirichlet(alpha))."""
    rng = np.random.default_rng(seed)
    base = np.full((N_KEYS, N_KEYS), 1.0 / N_KEYS) if base is None else base
    return np.stack([np.stack([rng.dirichlet(alpha * N_KEYS * b) for b in base]) for _ in range(queries)])


def labels_of(rows, n_shards: int = 10) -> tuple[str, FixednessReport]:
    rep = fixedness_report(head_shards(rows, n_shards), n_boot=300)
    return claims.head_labels(rep)[0, 0], rep


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.0, 5.0, 20.0])
def test_iid_rows_are_never_fixed(alpha):
    """Rows drawn independently for every query have no pattern, however sharp or diffuse they are."""
    label, rep = labels_of(dirichlet_rows(alpha, seed=int(alpha * 10)))
    assert label != claims.FIXED
    assert label in (claims.VARYING, claims.UNIFORM)  # 1,000 queries are enough to say so
    if label == claims.VARYING:
        assert abs(rep.fixedness[0, 0]) < 0.05
    if alpha == 2.0:  # the old score called this head fixed
        assert rep.js_score[0, 0] > 0.9


def test_iid_rows_of_many_heads_are_never_fixed():
    """The same over a whole synthetic model of pattern-free heads: no head fixed at any threshold of the table."""
    rng = np.random.default_rng(3)
    alphas = [0.3, 1.0, 2.0, 5.0, 20.0, 0.5]
    maps = np.stack([rng.dirichlet(np.full(N_KEYS, a), size=(400, N_KEYS)) for a in alphas], axis=1)  # (Q, H, n, n)
    shards = [MeanAttention.empty(1, len(alphas), N_KEYS).add(torch.from_numpy(part)[:, None])
              for part in np.array_split(maps, 10)]
    rep = fixedness_report(shards, n_boot=200)
    for t in claims.SENSITIVITY_THRESHOLDS:
        assert not claims.fixed_mask(rep, threshold=t).any()


def test_a_fixed_pattern_plus_noise_is_fixed():
    rng = np.random.default_rng(1)
    pattern = rng.dirichlet(np.full(N_KEYS, 0.3), size=N_KEYS)  # (n, n): one map for every query
    noise = dirichlet_rows(1.0, seed=2)  # (Q, n, n): fresh for every query
    label, rep = labels_of(0.8 * pattern + 0.2 * noise)
    assert label == claims.FIXED and rep.head_interval.low[0, 0] > claims.FIXED_THRESHOLD
    diffuse = dirichlet_rows(30.0, seed=4, base=0.5 * pattern + 0.5 / N_KEYS)  # a diffuse map, diffuse noise
    assert labels_of(diffuse)[0] == claims.FIXED


def test_a_random_single_token_per_query_is_varying():
    rng = np.random.default_rng(5)
    picks = rng.integers(0, N_KEYS, size=(1000, N_KEYS))  # (Q, n): one key per query and row
    label, rep = labels_of(np.eye(N_KEYS)[picks])
    assert label == claims.VARYING and rep.head_interval.high[0, 0] < 0.05
    assert rep.null_share[0, 0] > 0  # a finite mean of one-hot rows keeps a little: the null removes it


def test_uniform_rows_are_their_own_kind():
    label, rep = labels_of(np.full((500, N_KEYS, N_KEYS), 1.0 / N_KEYS))
    assert label == claims.UNIFORM and np.isnan(rep.fixedness[0, 0])
    assert rep.information.estimate[0, 0] == pytest.approx(0.0, abs=1e-9)


def test_labels_need_enough_shards():
    rows = np.tile(np.eye(N_KEYS), (400, 1, 1))  # the same one-hot map for every query: as fixed as it gets
    assert labels_of(rows, n_shards=MIN_UNITS)[0] == claims.FIXED
    label, rep = labels_of(rows, n_shards=MIN_UNITS // 2)
    assert label == claims.UNSURE_LABEL and rep.fixedness[0, 0] == pytest.approx(1.0, abs=1e-6)


def numpy_fixedness(rows: np.ndarray) -> tuple[float, float]:
    """The information share and the null term, written out with numpy from every query's rows."""
    q, n, _ = rows.shape
    p = (1 - ENTROPY_EPS) * rows + ENTROPY_EPS / n  # smoothed like the package

    def kl_to_uniform(r):
        return np.log(n) + np.sum(r * np.log(r), axis=-1)

    mean_info = kl_to_uniform(p.mean(axis=0)).sum()  # sum over query rows of KL(mean || u)
    row_info = kl_to_uniform(p).mean(axis=0).sum()  # sum over rows of mean_i KL(p_i || u)
    null = ((1 - ENTROPY_EPS) ** 2 * (n * np.sum(rows ** 2, axis=-1).mean(axis=0) - 1) / (2 * q)).sum()
    return (mean_info - null) / (row_info - null), null


def test_fixedness_matches_an_independent_numpy_computation():
    rng = np.random.default_rng(8)
    pattern = rng.dirichlet(np.full(N_KEYS, 0.5), size=N_KEYS)
    rows = 0.5 * pattern + 0.5 * dirichlet_rows(0.7, queries=300, seed=9)
    acc = MeanAttention.empty(1, 1, N_KEYS).add(torch.from_numpy(rows)[:, None, None])
    expected, null = numpy_fixedness(rows)
    assert float(acc.fixedness()[0, 0]) == pytest.approx(expected, abs=1e-9)
    fixed, _, null_share = head_numbers(acc)
    assert fixed[0, 0] == pytest.approx(expected, abs=1e-9)
    _, row_info, null_info = information_from_sums(acc.total, acc.total_sq, acc.entropy_total, torch.tensor(300.0))
    assert float(null_info[0, 0]) == pytest.approx(null, abs=1e-12)
    assert null_share[0, 0] == pytest.approx(null / float(row_info[0, 0]), abs=1e-12)


def test_the_null_is_what_shuffled_rows_keep():
    """``b`` against brute force: shuffle every query's row over its keys, many times, and average KL(mean || u)."""
    rng = np.random.default_rng(11)
    pattern = rng.dirichlet(np.full(N_KEYS, 0.4), size=N_KEYS)
    rows = 0.6 * pattern + 0.4 * dirichlet_rows(0.5, queries=200, seed=12)  # (Q, n, n): a head with a pattern
    acc = MeanAttention.empty(1, 1, N_KEYS).add(torch.from_numpy(rows)[:, None, None])
    _, _, null_info = information_from_sums(acc.total, acc.total_sq, acc.entropy_total, torch.tensor(200.0))
    p = (1 - ENTROPY_EPS) * rows + ENTROPY_EPS / N_KEYS
    kept = []
    for _ in range(300):
        order = np.argsort(rng.random(rows.shape), axis=-1)  # an independent shuffle of every row
        mean = np.take_along_axis(p, order, axis=-1).mean(axis=0)  # (n, n)
        kept.append((np.log(N_KEYS) + np.sum(mean * np.log(mean), axis=-1)).sum())
    assert float(null_info[0, 0]) == pytest.approx(np.mean(kept), rel=0.05)


def test_layer_means_leave_out_uniform_heads_and_nan():
    values = np.array([[0.2, 0.4, np.nan], [np.nan, np.nan, 1.0]])
    skip = np.array([[False, True, False], [False, False, False]])
    np.testing.assert_allclose(layer_means(values, skip), [0.2, 1.0])
    assert np.isnan(layer_means(values, np.ones_like(skip))).all()
    assert UNIFORM_INFO > 0


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


def test_every_resample_is_the_fixedness_of_its_drawn_shards(monkeypatch):
    """Resamples are computed a few at a time; each must still be its own drawn shards' fixedness."""
    import attnlab.analysis.fixedness as fx

    monkeypatch.setattr(fx, "RESAMPLES_AT_ONCE", 3)
    shards = synthetic_shards(n_shards=4, per_shard=20)
    boots = bootstrap_fixedness(shards, n_boot=7, seed=2)  # 3 + 3 + 1
    for b, counts in enumerate(resample_counts(4, 7, seed=2)):
        drawn = [s for s, k in zip(shards, counts) for _ in range(k)]
        torch.testing.assert_close(boots[b], merge_all(drawn).fixedness(), atol=1e-9, rtol=0)


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


def test_one_accumulator_gives_point_intervals():
    whole = merge_all(synthetic_shards(n_shards=2))
    rep = fixedness_report(whole)
    assert rep.n_shards == 1
    np.testing.assert_allclose(rep.per_layer.low, rep.per_layer.estimate)
    assert rep.slope.low == pytest.approx(rep.slope.estimate)


def test_control_fields_against_an_independent_computation():
    real, control = synthetic_shards(), synthetic_shards(vary=(0.0, 0.0, 0.0), seed=3)
    rep = fixedness_report(real, control=control, n_boot=200)
    c = merge_all(control).fixedness().numpy()
    np.testing.assert_allclose(rep.control, c, atol=1e-12)
    np.testing.assert_allclose(rep.control_per_layer.estimate, c.mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(rep.difference.estimate, rep.fixedness - c, atol=1e-12)
    assert np.all(rep.difference.low <= rep.difference.estimate + 1e-12)
    assert np.all(rep.difference.estimate <= rep.difference.high + 1e-12)
    assert rep.control_count == 360
    # the control never varies; layer 1 of the real run varies most: clearly below its control
    assert np.all(rep.difference.high[0] < 0) and "Control" in rep.summary()
    assert fixedness_report(real).control is None and "Control" not in fixedness_report(real).summary()
    with pytest.raises(ValueError, match="control averaged layers"):
        fixedness_report(real, control=[_one_layer(s) for s in control])


def _one_layer(acc: MeanAttention) -> MeanAttention:
    return MeanAttention(acc.total[:1], acc.total_sq[:1], acc.entropy_total[:1], acc.count, [0], acc.length)


def test_share_most_fixed_counts_resamples():
    rep = fixedness_report(synthetic_shards(), n_boot=200)
    assert rep.share_most_fixed(2) == pytest.approx(rep.last_is_most_fixed_share)
    per_layer = rep.head_boots.mean(axis=2)  # (B, 3): no head of these shards is uniform
    assert not rep.uniform.any()
    assert rep.share_most_fixed(1, among=[0, 1]) == pytest.approx(float((per_layer[:, 1] > per_layer[:, 0]).mean()))
    with pytest.raises(ValueError, match="among the averaged layers"):
        rep.share_most_fixed(5)


def test_curve_is_the_fixedness_of_each_prefix(tiny_en):
    texts = same_length_texts(60, seed=21)
    it = iter(texts)
    pieces = leading_pieces(tiny_en, it, [5, 20])
    rest = sharded_mean_attention(tiny_en, it, 20, progress=False)
    assert [p.count for p in pieces] == [5, 15] and [r.count for r in rest] == [20, 20]
    curve = fixedness_curve(pieces + rest, [5, 40, 60])
    assert curve.counts == [5, 40, 60] and curve.fixedness.shape == (3, 2, 12)
    for k, n in enumerate(curve.counts):  # each point: an independent mean over the first n texts
        direct = al.mean_attention(tiny_en, texts[:n], progress=False).fixedness().numpy()
        np.testing.assert_allclose(curve.fixedness[k], direct, atol=1e-9)
    np.testing.assert_allclose(curve.per_layer(), curve.fixedness.mean(axis=2))
    with pytest.raises(ValueError, match="do not fall between parts"):
        fixedness_curve(pieces + rest, [10])
    with pytest.raises(ValueError, match="ran out"):
        leading_pieces(tiny_en, iter(texts[:8]), [5, 20])
    with pytest.raises(ValueError, match="increase"):
        leading_pieces(tiny_en, iter(texts), [20, 5])


def test_decades():
    assert decades(100_000) == [10, 100, 1000, 10_000, 100_000]
    assert decades(200) == [10, 100, 200]
    assert decades(7) == [7]


def test_fitted_range_fits_the_data_not_zero_to_one():
    assert fitted_range(np.array([0.72, 0.99]), np.array([0.81])) == pytest.approx((0.70, 1.0))
    assert fitted_range(np.array([0.5, 0.5])) == pytest.approx((0.45, 0.55))


def test_plots_of_mean_maps_and_fixedness():
    acc = merge_all(synthetic_shards(n_shards=2))
    assert position_labels(acc) == ["[CLS]", "1", "2", "3", "4", "[SEP]"]
    fig = plot_mean_maps(acc, layers=range(2), heads=[0, 5, 11])
    shown = fig.axes[0].images  # one map per layer and head, on one colour scale
    assert len(shown) == 6
    assert np.allclose(shown[4].get_array(), acc.mean[1, 5].float().numpy())
    assert len({im.get_clim() for im in shown}) == 1
    rep = fixedness_report(synthetic_shards(n_shards=2), control=synthetic_shards(n_shards=2, seed=4), n_boot=50)
    fixed = rep.fixedness >= 0.5
    fig = plot_fixedness(rep, threshold=0.5, fixed=fixed, below_control=rep.difference.high < 0)
    heat = fig.axes[0]
    assert sum(t.get_text().endswith("*") for t in heat.texts) == int(fixed.sum())
    low, high = heat.images[0].get_clim()
    assert low == pytest.approx(fitted_range(rep.fixedness, rep.control, np.array([0.5]))[0]) and high <= 1.0
    bar = fig.axes[-4]  # the colourbar of the real panel: the threshold and the control's level marked
    marked = sorted(round(float(line.get_ydata()[0]), 6) for line in bar.lines)
    assert marked == sorted([0.5, round(float(np.nanmean(rep.control)), 6)])
    assert [ax.get_title() for ax in fig.axes if ax.get_title()][:3] == [
        "fixedness on 120 real queries", "fixedness on 120 strings of random tokens (control)",
        "real - control (< 0: less fixed on real queries)"]
    no_control = plot_fixedness(fixedness_report(synthetic_shards(n_shards=2)))
    assert not any(t.get_text().endswith("*") for t in no_control.axes[0].texts) and len(no_control.axes) == 4
    plt.close("all")


def test_curve_and_threshold_plots():
    fig = plot_fixedness_curve([10, 100, 1000], np.full((3, 2), 0.9), [0.5, 0.6, 0.7], [0, 1],
                               control_per_layer=[0.95, 0.96])
    left, right = fig.axes
    assert left.get_xscale() == "log" and len(left.get_lines()) == 4  # 2 layers + 2 control levels
    np.testing.assert_allclose(right.get_lines()[0].get_ydata(), [0.5, 0.6, 0.7])
    fixed = np.array([[True, False], [False, False]])
    fig = plot_fixed_at(np.full((2, 2), 0.9), fixed, [0, 1], 0.9)
    assert "1 of 4 heads fixed" in fig.axes[0].get_title()
    box = threshold_slider(np.full((2, 2), 0.9), lambda t: np.full((2, 2), t < 0.95), [0, 1])
    if box is not None:  # ipywidgets installed: the slider redraws at a new threshold without error
        box.children[0].value = 0.97
    plt.close("all")
