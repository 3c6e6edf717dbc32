"""Head distances (Clark et al.) against scipy, dispersion against loops, the depth trend."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

import attnlab as al
from attnlab.analysis.diversity import (
    DepthShape,
    HeadDistances,
    depth_shape,
    depth_trend,
    head_distances,
    layer_clustering,
    layer_dispersion,
    pairwise_head_js,
    shape_numbers,
    shuffled_baseline,
    thirds,
)
from attnlab.course.claims.diversity import convergence_gap, verdict_upper_layers_converge
from attnlab.course.verdicts import FAILS, HOLDS, WORDS
from attnlab.viz.diversity_plots import plot_dispersion, plot_mds

from same_length import same_length_texts


def _random_maps(b=3, k=5, n=6, seed=0):
    torch.manual_seed(seed)
    return torch.softmax(torch.randn(b, k, n, n) * 2, dim=-1)


def test_js_of_a_head_with_itself_is_zero_and_symmetric():
    d = pairwise_head_js(_random_maps())
    assert torch.all(d.diagonal(dim1=1, dim2=2) == 0)
    torch.testing.assert_close(d, d.transpose(1, 2))
    same = pairwise_head_js(_random_maps()[:, :1].expand(3, 4, 6, 6))
    assert float(same.abs().max()) < 1e-6


def test_js_matches_scipy_summed_over_rows():
    maps = _random_maps()
    p = (0.999 * maps + 0.001 / 6).double().numpy()
    d = pairwise_head_js(maps)
    for b, i, j in [(0, 0, 1), (1, 2, 4), (2, 3, 0)]:
        ref = sum(jensenshannon(p[b, i, r], p[b, j, r]) ** 2 for r in range(6))  # natural log, squared
        assert d[b, i, j].item() == pytest.approx(ref, abs=1e-6)


def test_layer_dispersion_is_the_mean_over_head_pairs():
    torch.manual_seed(1)
    x = torch.rand(2, 12, 12).double()
    d = x + x.transpose(1, 2)
    d[:, range(12), range(12)] = 0
    got = layer_dispersion(d, n_layers=3, n_heads=4)  # (2, 3)
    for b in range(2):
        for l in range(3):
            pairs = [d[b, 4 * l + i, 4 * l + j] for i in range(4) for j in range(i + 1, 4)]
            assert got[b, l].item() == pytest.approx(float(sum(pairs) / len(pairs)))


def test_head_distances_match_brute_force_over_all_maps(tiny_en):
    texts = same_length_texts(9, seed=12)
    hd = head_distances(tiny_en, texts, batch_size=4, progress=False)
    maps = al.attention(tiny_en, texts).tensor  # (N, L, H, n, n)
    n = maps.shape[-1]
    flat = maps.reshape(9, 24, n, n)
    p = (0.999 * flat + 0.001 / n).double().numpy()
    for a, b in [(0, 1), (3, 17), (12, 23)]:
        ref = np.mean([sum(jensenshannon(p[t, a, r], p[t, b, r]) ** 2 for r in range(n)) for t in range(9)])
        assert hd.distance[a, b].item() == pytest.approx(ref, abs=1e-5)
    assert hd.per_text.shape == (9, 2)
    np.testing.assert_allclose(hd.dispersion(), layer_dispersion(hd.distance, 2, 12).numpy(), atol=1e-9)


def test_mds_output_shape(tiny_en):
    hd = head_distances(tiny_en, same_length_texts(4), progress=False)
    xy = hd.mds(seed=0)
    assert xy.shape == (24, 2) and np.isfinite(xy).all()
    assert hd.labels()[13] == (1, 1)


def _fake(per_text: np.ndarray) -> HeadDistances:
    n_layers = per_text.shape[1]
    return HeadDistances(torch.zeros(n_layers * 2, n_layers * 2), torch.tensor(per_text), list(range(n_layers)), 2)


def test_depth_trend_numbers():
    rng = np.random.default_rng(0)
    shrinking = _fake(np.linspace(2.0, 1.0, 6) + rng.normal(0, 0.05, (200, 6)))
    t = depth_trend(shrinking, n_boot=300)
    point = shrinking.per_text.numpy().mean(axis=0)
    np.testing.assert_allclose(t.dispersion.estimate, point, atol=1e-12)
    assert t.slope.estimate == pytest.approx(np.polyfit(np.arange(6), point, 1)[0], abs=1e-12)
    assert t.slope.estimate == pytest.approx(-0.2, abs=0.02) and t.spearman < -0.9
    assert t.slope.high < 0 and t.n_texts == 200
    assert np.all(t.dispersion.low <= t.dispersion.estimate) and np.all(t.dispersion.estimate <= t.dispersion.high)
    assert "Slope" in t.summary()
    noisy = depth_trend(_fake(np.full(6, 1.5) + rng.normal(0, 1.0, (200, 6))), n_boot=300)
    assert noisy.slope.low < 0 < noisy.slope.high  # no trend: the interval straddles 0


def test_depth_trend_needs_three_layers_and_two_texts():
    with pytest.raises(ValueError, match="3 layers"):
        depth_trend(_fake(np.ones((5, 2))))
    with pytest.raises(ValueError, match="2 texts"):
        depth_trend(_fake(np.ones((1, 4))))


def _blocks(n_layers: int, n_heads: int, within: float, between: float) -> HeadDistances:
    """Distances ``within`` between heads of one layer and ``between`` across layers (plus small noise)."""
    k = n_layers * n_heads
    rng = np.random.default_rng(1)
    layer = np.repeat(np.arange(n_layers), n_heads)
    d = np.where(layer[:, None] == layer[None, :], within, between) + rng.uniform(0, 0.01, (k, k))
    d = 0.5 * (d + d.T)
    np.fill_diagonal(d, 0.0)
    return HeadDistances(torch.tensor(d), torch.zeros(3, n_layers), list(range(n_layers)), n_heads)


def test_layer_clustering_against_a_direct_computation():
    hd = _blocks(3, 4, within=0.2, between=1.0)
    c = layer_clustering(hd, n_perm=500)
    d = hd.distance.numpy()
    same = [d[i, j] for i in range(12) for j in range(12) if i != j and i // 4 == j // 4]
    other = [d[i, j] for i in range(12) for j in range(12) if i // 4 != j // 4]
    assert c.within == pytest.approx(np.mean(same)) and c.between == pytest.approx(np.mean(other))
    assert c.p_value == pytest.approx(1 / 501)  # no shuffle of the labels does as well
    assert c.ratio == pytest.approx(c.within / c.between)
    apart = layer_clustering(_blocks(3, 4, within=1.0, between=0.2), n_perm=500)
    assert apart.within > apart.between and apart.p_value > 0.9
    assert "permutation p" in c.summary()


def test_shuffled_baseline_against_a_direct_computation():
    hd = _blocks(3, 4, within=0.2, between=1.0)
    base = shuffled_baseline(hd, n_perm=300, seed=1)
    d = hd.distance.numpy()
    # every shuffle deals the 12 heads into 3 groups of 4: the mean over groups and shuffles is the mean pair distance
    assert float(np.mean(base.dispersion.estimate)) == pytest.approx(d[~np.eye(12, dtype=bool)].mean(), abs=0.03)
    truth = np.polyfit([0, 1, 2], layer_dispersion(hd.distance, 3, 4).numpy(), 1)[0]
    assert base.observed_slope == pytest.approx(truth)
    assert abs(base.slope.estimate) < 0.05 and base.slope.low < 0 < base.slope.high
    assert base.n_perm == 300 and 0 < base.p_value <= 1 and "shuffles" in base.summary()
    # a layer structure that shrinks with depth: random deals rarely fall that fast
    layer = np.repeat(np.arange(3), 4)
    within = np.array([1.5, 1.0, 0.5])[layer]
    dist = np.where(layer[:, None] == layer[None, :], within[:, None], 2.0)
    np.fill_diagonal(dist, 0.0)
    falling = HeadDistances(torch.tensor(dist), torch.zeros(3, 3), [0, 1, 2], 4)
    f = shuffled_baseline(falling, n_perm=500)
    assert f.observed_slope == pytest.approx(-0.5) and f.p_value < 0.01
    rising = HeadDistances(torch.tensor(dist[::-1, ::-1].copy()), torch.zeros(3, 3), [0, 1, 2], 4)
    assert shuffled_baseline(rising, n_perm=500).p_value > 0.99


def test_plots_draw_every_layer(tiny_en):
    hd = head_distances(tiny_en, same_length_texts(4), progress=False)
    fig = plot_mds(hd, hd.mds(seed=0))
    assert len(fig.axes[0].collections) == 2  # one scatter per layer
    trend = depth_trend(_fake(np.random.default_rng(2).normal(1.0, 0.1, (20, 4))), n_boot=50)
    fig = plot_dispersion(trend)
    assert len(fig.axes[0].get_xticks()) == 4
    hd4 = _blocks(4, 3, within=0.3, between=1.0)
    fig = plot_dispersion(trend, shuffled_baseline(hd4, n_perm=50))
    assert len(fig.axes[0].collections) >= 2  # the baseline band and the error bars
    plt.close("all")


def test_the_dispersion_figure_bakes_no_verdict_into_its_title():
    trend = depth_trend(_fake(np.linspace(2.0, 1.0, 4) + np.zeros((20, 4))), n_boot=50)
    title = plot_dispersion(trend).axes[0].get_title().lower()
    assert title and not any(word in title for word in WORDS)
    assert not any(word in title for word in ("converge", "shrink", "confirmed", "true", "false"))
    plt.close("all")


# --------------------------------------------------------------------------- the shape of the curve

#: the course's sizes: 12 layers (bert-base, the offline default), 40 queries in smoke mode and 250 (the
#: report's first look), and a spread between texts of 20% of each layer's level: the offline default's
#: texts scatter by 3% (layer 1) to 11% (layer 12) of the level, its twin's by 6% to 15% (a collapsed layer
#: scatters as little as it is high)
SHAPE_LAYERS, SHAPE_TEXTS, SHAPE_SPREAD = 12, (40, 250), 0.2
PLANTED = {
    "falling": np.linspace(2.5, 0.4, SHAPE_LAYERS),
    "flat": np.full(SHAPE_LAYERS, 1.5),
    # the offline default's measured curve: down to layer 10, up again at the top
    "U": np.array([2.72, 2.97, 2.07, 1.12, 1.32, 1.13, 1.41, 0.94, 0.81, 0.79, 1.15, 1.84]),
    "rising": np.linspace(0.8, 2.0, SHAPE_LAYERS),
    # an untrained twin's: heads identical from the middle up
    "collapsing": 1.9 * np.exp(-0.7 * np.arange(SHAPE_LAYERS)),
}


def planted_distances(curve: np.ndarray, n_texts: int, seed: int, spread: float = SHAPE_SPREAD) -> HeadDistances:
    """Texts whose within-layer dispersion scatters around ``curve`` ``(L,)`` by the share ``spread`` of each
    layer's level (log-normal factors of mean 1, so never below 0)."""
    rng = np.random.default_rng(seed)
    factors = rng.lognormal(-spread ** 2 / 2, spread, size=(n_texts, len(curve)))  # (N, L), mean 1
    per_text = curve * factors  # (N, L)
    return HeadDistances(torch.zeros(1, 1), torch.tensor(per_text), list(range(len(curve))), n_heads=12)


def test_thirds_split_the_depth():
    assert [t.tolist() for t in thirds(12)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert [len(t) for t in thirds(13)] == [5, 4, 4] and [t.tolist() for t in thirds(3)] == [[0], [1], [2]]
    with pytest.raises(ValueError):
        thirds(2)


def test_shape_numbers_by_hand():
    curve = np.array([4.0, 2.0, 3.0, 1.0, 0.5, 2.0])  # thirds: (4, 2), (3, 1), (0.5, 2)
    share, rebound, least = shape_numbers(curve)
    assert share == pytest.approx(((0.5 + 2.0) / 2) / ((4.0 + 2.0) / 2))
    assert rebound == pytest.approx((2.0 - 0.5) / 3.0) and least == 4
    many = shape_numbers(np.stack([curve, curve[::-1]]))  # one row per curve
    assert many[0][1] == pytest.approx(((4.0 + 2.0) / 2) / ((2.0 + 0.5) / 2)) and many[2][1] == 4 - 3
    assert np.isnan(shape_numbers(np.array([0.0, 0.0, 1.0]))[0])  # no spread in the lower third


def test_depth_shape_resamples_texts():
    """The interval comes from resampling whole texts; a hand resample with the same counts agrees."""
    hd = planted_distances(PLANTED["U"], 40, seed=0)
    shape = depth_shape(hd, n_boot=300, seed=3)
    per_text = hd.per_text.numpy()
    counts = np.random.default_rng(3).multinomial(40, np.full(40, 1 / 40), size=300)  # (B, N)
    boots = np.array([shape_numbers((c[:, None] * per_text).sum(axis=0) / 40)[1] for c in counts])
    assert shape.rebound.low == pytest.approx(np.quantile(boots, 0.025))
    assert shape.rebound.high == pytest.approx(np.quantile(boots, 0.975))
    assert shape.rebound.estimate == pytest.approx(shape_numbers(per_text.mean(axis=0))[1])
    assert shape.least_layer == int(np.argmin(per_text.mean(axis=0))) and shape.n_texts == 40
    back = DepthShape.from_record(shape.to_record())
    assert back.rebound.high == pytest.approx(shape.rebound.high) and back.least_layer == shape.least_layer


@pytest.mark.parametrize("n_texts", SHAPE_TEXTS)
def test_planted_curves_read_as_their_shape(n_texts):
    """At the course's sizes and noise, only a curve that falls to the top holds; a U does not, though its
    straight slope falls beyond its interval."""
    expected = {"falling": HOLDS, "flat": FAILS, "U": FAILS, "rising": FAILS, "collapsing": HOLDS}
    for seed in range(5):
        for name, curve in PLANTED.items():
            hd = planted_distances(curve, n_texts, seed)
            shape = depth_shape(hd, n_boot=400, seed=seed)
            assert verdict_upper_layers_converge(shape).verdict == expected[name], (name, seed)
    u = planted_distances(PLANTED["U"], n_texts, 0)
    assert depth_trend(u, n_boot=400).slope.high < 0  # what the slope alone reads: heads converge


def test_pattern_free_null_never_holds_and_its_interval_covers():
    """Texts whose layers all scatter around one level: the upper share's interval covers 1 in about 95%
    of the seeds, and the claim never holds."""
    covered, words = 0, []
    for seed in range(60):
        shape = depth_shape(planted_distances(PLANTED["flat"], SHAPE_TEXTS[0], seed), n_boot=400, seed=seed)
        covered += bool(shape.upper_share.contains(1.0))
        words.append(verdict_upper_layers_converge(shape).verdict)
    assert covered >= 52  # 95% of 60 is 57; 52 is its binomial 1-in-1000 lower edge
    assert HOLDS not in words


def test_convergence_gap_is_the_larger_gap():
    shape = depth_shape(planted_distances(PLANTED["U"], 40, 0), n_boot=300)
    gap = convergence_gap(shape, 0.1)
    r, u = shape.rebound, shape.upper_share
    assert gap.estimate == pytest.approx(max(r.estimate - 0.1, u.estimate - 0.9))
    assert gap.low == pytest.approx(max(r.low - 0.1, u.low - 0.9))
    assert gap.high == pytest.approx(max(r.high - 0.1, u.high - 0.9))
