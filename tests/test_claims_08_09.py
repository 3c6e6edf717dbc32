"""The claims of lessons 08 and 09 decided on constructed evidence: each can hold and each can fail."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.diversity import DepthTrend, LayerClustering
from attnlab.analysis.fixedness import FixednessReport, fixedness_report
from attnlab.analysis.stats import Interval
from attnlab.course.claims import averaging as avg
from attnlab.course.claims import diversity as div
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE

from test_fixedness import synthetic_shards


def report(fixedness, sharpness=None, *, layers=None, slope=(0.0, -0.1, 0.1), last_share=0.5, n_shards=10):
    """A FixednessReport with the given numbers (the rest filled in consistently)."""
    fixedness = np.asarray(fixedness, dtype=float)
    sharpness = np.full_like(fixedness, 0.5) if sharpness is None else np.asarray(sharpness, dtype=float)
    per_layer = fixedness.mean(axis=1)
    return FixednessReport(
        layers=list(range(len(fixedness))) if layers is None else layers, fixedness=fixedness,
        sharpness=sharpness, per_layer=Interval(per_layer, per_layer - 0.01, per_layer + 0.01, n=n_shards),
        slope=Interval(*slope, n=n_shards), depth_rho=0.0, sharp_fixed_rho=0.0,
        last_is_most_fixed_share=last_share, count=1000, n_shards=n_shards,
    )


# --------------------------------------------------------------------------- lesson 08


def test_flat_means_varying_can_hold():
    fixed = np.array([[0.2, 0.3, 0.95, 0.99]])  # the two flat heads vary
    sharp = np.array([[0.1, 0.05, 0.6, 0.1]])  # ... and one flat head is fixed: 2 of 3 flat heads vary
    v = avg.verdict_flat_means_varying(report(fixed, sharp))
    assert v.verdict == HOLDS
    assert v.numbers["flat_heads"] == 3 and v.numbers["varying_share"] == pytest.approx(2 / 3)
    assert v.numbers["flat_but_fixed_examples"] == ["L1 H4"]


def test_flat_means_varying_can_fail():
    fixed = np.array([[0.95, 0.92, 0.3, 0.99]])  # flat heads 1, 2, 4 are all fixed
    sharp = np.array([[0.1, 0.05, 0.6, 0.1]])
    v = avg.verdict_flat_means_varying(report(fixed, sharp))
    assert v.verdict == FAILS and v.numbers["flat_but_fixed"] == 3
    one_of_three = avg.verdict_flat_means_varying(report([[0.5, 0.95, 0.95]], [[0.1, 0.1, 0.1]]))
    assert one_of_three.verdict == FAILS  # 1/3 vary: at the bound
    half = avg.verdict_flat_means_varying(report([[0.5, 0.95]], [[0.1, 0.1]]))
    assert half.verdict == UNSURE
    no_flat = avg.verdict_flat_means_varying(report([[0.5, 0.95]], [[0.5, 0.9]]))
    assert no_flat.verdict == UNSURE and "no head has a flat mean map" in no_flat.numbers["missing"]


def _article_like(gap: float) -> np.ndarray:
    """4 layers x 12 heads: the article's fixed heads at 0.9, its varying heads at 0.9 - gap, others 0.7."""
    f = np.full((4, 12), 0.7)
    f[:, list(avg.ARTICLE_FIXED_HEADS)] = 0.9 + np.linspace(0, 0.01, 6)
    f[:, list(avg.ARTICLE_VARYING_HEADS)] = 0.9 - gap + np.linspace(0, 0.01, 5)
    return f


def test_article_head_groups_can_hold():
    v = avg.verdict_article_head_groups(report(_article_like(0.5)))
    assert v.verdict == HOLDS
    assert v.numbers["difference"] == pytest.approx(0.5, abs=0.01)
    assert v.numbers["permutation_p"] == pytest.approx(1 / 462, abs=0.002)  # the best of C(11, 5) labellings
    assert v.numbers["layers"] == [1, 2, 3, 4]


def test_article_head_groups_can_fail():
    assert avg.verdict_article_head_groups(report(_article_like(-0.5))).verdict == FAILS
    assert avg.verdict_article_head_groups(report(_article_like(0.0))).verdict == FAILS
    few_heads = avg.verdict_article_head_groups(report(np.full((4, 6), 0.9)))
    assert few_heads.verdict == UNSURE and "12 heads" in few_heads.numbers["missing"]
    deep_only = avg.verdict_article_head_groups(report(_article_like(0.5), layers=[6, 7, 8, 9]))
    assert deep_only.verdict == UNSURE


def test_more_fixed_with_depth_can_hold():
    v = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), slope=(0.05, 0.02, 0.08)))
    assert v.verdict == HOLDS and v.numbers["slope_low"] == pytest.approx(0.02)


def test_more_fixed_with_depth_can_fail():
    assert avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), slope=(-0.05, -0.08, -0.01))).verdict == FAILS
    assert avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), slope=(0.01, -0.01, 0.03))).verdict == UNSURE
    one_shard = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), slope=(0.05, 0.05, 0.05), n_shards=1))
    assert one_shard.verdict == UNSURE and "shard" in one_shard.numbers["missing"]


def test_last_layer_all_fixed_can_hold():
    f = np.vstack([np.full(12, 0.5), np.full(12, 0.95)])
    v = avg.verdict_last_layer_all_fixed(report(f, last_share=0.99))
    assert v.verdict == HOLDS and v.numbers["fixed_heads"] == 12 and v.numbers["layer"] == 2


def test_last_layer_all_fixed_can_fail():
    f = np.vstack([np.full(12, 0.5), np.full(12, 0.95)])
    f[1, 4] = 0.6
    assert avg.verdict_last_layer_all_fixed(report(f, last_share=0.99)).verdict == FAILS
    all_fixed = np.vstack([np.full(12, 0.97), np.full(12, 0.95)])
    assert avg.verdict_last_layer_all_fixed(report(all_fixed, last_share=0.02)).verdict == FAILS
    assert avg.verdict_last_layer_all_fixed(report(all_fixed, last_share=0.5)).verdict == UNSURE


def test_verdicts_on_synthetic_query_shards():
    """End to end: maps that vary less and less with depth, through the report, to the verdicts."""
    shrinking = avg.verdicts(fixedness_report(synthetic_shards(), n_boot=200))
    assert set(shrinking) == {avg.FLAT_MEANS_VARYING, avg.ARTICLE_HEAD_GROUPS, avg.MORE_FIXED_WITH_DEPTH,
                              avg.LAST_LAYER_ALL_FIXED}
    assert shrinking[avg.MORE_FIXED_WITH_DEPTH].verdict == HOLDS
    assert shrinking[avg.LAST_LAYER_ALL_FIXED].verdict == HOLDS
    growing = avg.verdicts(fixedness_report(synthetic_shards(vary=(0.0, 0.4, 0.8)), n_boot=200))
    assert growing[avg.MORE_FIXED_WITH_DEPTH].verdict == FAILS
    assert growing[avg.LAST_LAYER_ALL_FIXED].verdict == FAILS


def test_fixed_heads_use_the_threshold():
    rep = report([[0.95, 0.2], [avg.FIXED_THRESHOLD, 0.89]], layers=[2, 3])
    assert avg.fixed_heads(rep) == [(2, 0), (3, 0)]


# --------------------------------------------------------------------------- lesson 09


def trend(slope: tuple[float, float, float]) -> DepthTrend:
    d = np.array([1.0, 0.9, 0.8])
    return DepthTrend(layers=[0, 1, 2], dispersion=Interval(d, d - 0.1, d + 0.1, n=50),
                      slope=Interval(*slope, n=50), spearman=-1.0, n_boot=100)


def test_more_alike_with_depth_can_hold():
    v = div.verdict_more_alike_with_depth(trend((-0.1, -0.15, -0.05)))
    assert v.verdict == HOLDS
    assert v.numbers["first_layer"] == pytest.approx(1.0) and v.numbers["texts"] == 50


def test_more_alike_with_depth_can_fail():
    assert div.verdict_more_alike_with_depth(trend((0.1, 0.05, 0.15))).verdict == FAILS
    assert div.verdict_more_alike_with_depth(trend((-0.01, -0.05, 0.03))).verdict == UNSURE


def test_layers_cluster_can_hold():
    v = div.verdict_layers_cluster(LayerClustering(within=0.3, between=0.6, p_value=0.001, n_perm=1000))
    assert v.verdict == HOLDS and v.numbers["ratio"] == pytest.approx(0.5)


def test_layers_cluster_can_fail():
    assert div.verdict_layers_cluster(LayerClustering(0.7, 0.6, 0.9, 1000)).verdict == FAILS
    assert div.verdict_layers_cluster(LayerClustering(0.5, 0.6, 0.2, 1000)).verdict == UNSURE
