"""The claims of lessons 08 and 09 decided on constructed evidence: each can hold and each can fail."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.diversity import DepthTrend, LayerClustering, ShuffledBaseline
from attnlab.analysis.fixedness import FixednessReport, fixedness_report
from attnlab.analysis.stats import Interval
from attnlab.course.claims import averaging as avg
from attnlab.course.claims import diversity as div
from attnlab.course.claims.sensitivity import sensitivity_rows
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE

from test_fixedness import synthetic_shards


ARTICLE = "bert-base-chinese"


def report(fixedness, sharpness=None, *, layers=None, slope=(0.0, -0.1, 0.1), last_share=0.5, n_shards=10,
           model="tiny", control=None, boots=None):
    """A FixednessReport with the given numbers (the rest filled in consistently).

    ``last_share``: share of resamples in which the last layer is the most fixed (made exact by
    ``boots`` built here: that share of resamples lifts the last layer above all others).
    ``control``: the control's fixedness; the difference interval is the point +- 0.001.
    """
    fixedness = np.asarray(fixedness, dtype=float)
    sharpness = np.full_like(fixedness, 0.5) if sharpness is None else np.asarray(sharpness, dtype=float)
    per_layer = fixedness.mean(axis=1)
    if boots is None:
        n_boot, lifted = 200, int(round(last_share * 200))
        boots = np.repeat(fixedness[None], n_boot, axis=0)
        boots[:lifted, -1] = fixedness.max() + 1.0  # the last layer on top in these resamples
        boots[lifted:, -1] = fixedness.min() - 1.0
    rep = FixednessReport(
        layers=list(range(len(fixedness))) if layers is None else layers, fixedness=fixedness,
        sharpness=sharpness, per_layer=Interval(per_layer, per_layer - 0.01, per_layer + 0.01, n=n_shards),
        slope=Interval(*slope, n=n_shards), depth_rho=0.0, sharp_fixed_rho=0.0,
        last_is_most_fixed_share=last_share, count=1000, n_shards=n_shards, model_name=model, head_boots=boots,
    )
    if control is not None:
        control = np.asarray(control, dtype=float)
        diff = fixedness - control
        rep.control = control
        c = control.mean(axis=1)
        rep.control_per_layer = Interval(c, c - 0.01, c + 0.01, n=n_shards)
        rep.difference = Interval(diff, diff - 0.001, diff + 0.001, n=n_shards)
        rep.control_count = 500
    return rep


# --------------------------------------------------------------------------- lesson 08


def test_fixed_rule_needs_the_threshold_and_no_clear_fall_below_the_control():
    real = [[0.95, 0.95, 0.95, 0.80]]
    control = [[0.94, 0.96, 0.99, 0.80]]  # head 3 is 0.04 below its control: it reacts to real content
    rep = report(real, control=control)
    np.testing.assert_array_equal(avg.fixed_mask(rep), [[True, True, False, False]])
    np.testing.assert_array_equal(avg.below_control(rep), [[False, False, True, False]])
    np.testing.assert_array_equal(avg.fixed_mask(rep, margin=0.05), [[True, True, True, False]])
    np.testing.assert_array_equal(avg.fixed_mask(report(real)), [[True, True, True, False]])  # no control
    assert avg.fixed_heads(rep) == [(0, 0), (0, 1)]
    table = avg.fixed_share_table(rep, thresholds=(0.75, 0.9, 0.97))
    assert table[0][0] == "threshold" and [row[1] for row in table[1:]] == [0.75, 0.5, 0.0]
    assert [row[3] for row in table[1:]] == [1.0, 0.75, 0.25]  # control heads at or above each threshold


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


def test_flat_means_varying_uses_the_control():
    fixed, sharp = np.array([[0.95, 0.95, 0.95]]), np.array([[0.1, 0.1, 0.1]])
    assert avg.verdict_flat_means_varying(report(fixed, sharp)).verdict == FAILS  # all three look fixed
    # on random tokens they are clearly more fixed: on real queries they react to the content
    with_control = avg.verdict_flat_means_varying(report(fixed, sharp, control=[[0.99, 0.99, 0.99]]))
    assert with_control.verdict == HOLDS and with_control.numbers["varying_share"] == 1.0
    assert avg.verdict_flat_means_varying(report(fixed, sharp), threshold=0.96).verdict == HOLDS


def _article_like(gap: float) -> np.ndarray:
    """4 layers x 12 heads: the article's fixed heads at 0.9, its varying heads at 0.9 - gap, others 0.7."""
    f = np.full((4, 12), 0.7)
    f[:, list(avg.ARTICLE_FIXED_HEADS)] = 0.9 + np.linspace(0, 0.01, 6)
    f[:, list(avg.ARTICLE_VARYING_HEADS)] = 0.9 - gap + np.linspace(0, 0.01, 5)
    return f


def test_article_head_groups_can_hold():
    v = avg.verdict_article_head_groups(report(_article_like(0.5), model=ARTICLE))
    assert v.verdict == HOLDS
    assert v.numbers["difference"] == pytest.approx(0.5, abs=0.01)
    assert v.numbers["permutation_p"] == pytest.approx(1 / 462, abs=0.002)  # the best of C(11, 5) labellings
    assert v.numbers["layers"] == [1, 2, 3, 4]


def test_article_head_groups_can_fail():
    assert avg.verdict_article_head_groups(report(_article_like(-0.5), model=ARTICLE)).verdict == FAILS
    assert avg.verdict_article_head_groups(report(_article_like(0.0), model=ARTICLE)).verdict == FAILS


def test_article_head_groups_cannot_tell():
    few_heads = avg.verdict_article_head_groups(report(np.full((4, 6), 0.9), model=ARTICLE))
    assert few_heads.verdict == UNSURE and "12 heads" in few_heads.numbers["missing"]
    deep_only = avg.verdict_article_head_groups(report(_article_like(0.5), layers=[6, 7, 8, 9], model=ARTICLE))
    assert deep_only.verdict == UNSURE


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2 (bundled)", "tiny", "", "bert-base-uncased",
                                  "/models/bert-base-chinese-finetuned"])
def test_article_head_groups_are_not_applicable_to_other_models(name):
    for gap in (0.5, -0.5):  # whatever the numbers say
        v = avg.verdict_article_head_groups(report(_article_like(gap), model=name))
        assert v.verdict == UNSURE
        assert v.numbers["missing"].startswith("not applicable: head numbers are specific to bert-base-chinese")


@pytest.mark.parametrize("name", ["bert-base-chinese", "google-bert/bert-base-chinese", "/data/bert-base-chinese/",
                                  "C:\\models\\bert-base-chinese", "BERT-base-Chinese (local folder)"])
def test_the_article_model_is_recognised_by_name(name):
    assert avg.is_article_model(name)
    assert avg.verdict_article_head_groups(report(_article_like(0.5), model=name)).verdict == HOLDS


def test_more_fixed_with_depth_can_hold():
    v = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), slope=(0.05, 0.02, 0.08)))
    assert v.verdict == HOLDS and v.numbers["slope_low"] == pytest.approx(0.02)


def test_more_fixed_with_depth_can_fail():
    assert avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), slope=(-0.05, -0.08, -0.01))).verdict == FAILS


def test_more_fixed_with_depth_cannot_tell():
    assert avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), slope=(0.01, -0.01, 0.03))).verdict == UNSURE
    with_control = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), control=np.full((3, 12), 0.9)))
    assert with_control.numbers["control_last_layer"] == pytest.approx(0.9)
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
    below = avg.verdict_last_layer_all_fixed(report(f * 0 + 0.95, last_share=0.99, control=np.full((2, 12), 0.99)))
    assert below.verdict == FAILS and below.numbers["below_control"] == 12  # fixed, but far below random tokens
    high_bar = avg.verdict_last_layer_all_fixed(report(np.vstack([np.full(12, 0.5), np.full(12, 0.95)]),
                                                       last_share=0.99), threshold=0.96)
    assert high_bar.verdict == FAILS


def test_last_layer_all_fixed_cannot_tell():
    all_fixed = np.vstack([np.full(12, 0.97), np.full(12, 0.95)])
    assert avg.verdict_last_layer_all_fixed(report(all_fixed, last_share=0.5)).verdict == UNSURE
    assert avg.verdict_last_layer_all_fixed(report(all_fixed, n_shards=1)).verdict == UNSURE
    with pytest.raises(ValueError, match="reading"):
        avg.verdict_last_layer_all_fixed(report(all_fixed), reading="last")


def test_the_figures_last_layer_is_layer_4():
    f = np.full((6, 12), 0.5)
    f[3] = 0.97  # layer 4: all fixed and the most fixed of layers 1-4
    boots = np.repeat(f[None], 50, axis=0)
    figure = avg.verdict_last_layer_all_fixed(report(f, boots=boots), reading="figure")
    assert figure.verdict == HOLDS and figure.numbers["layer"] == 4 and figure.numbers["most_fixed_layer_share"] == 1.0
    model = avg.verdict_last_layer_all_fixed(report(f, boots=boots), reading="model")
    assert model.verdict == FAILS and model.numbers["layer"] == 6  # the model's last layer is not fixed
    f2 = f.copy()
    f2[3, 0] = 0.6
    assert avg.verdict_last_layer_all_fixed(report(f2, boots=np.repeat(f2[None], 50, axis=0)),
                                            reading="figure").verdict == FAILS
    partial = avg.verdict_last_layer_all_fixed(report(f[:3], layers=[0, 1, 2], boots=boots[:, :3]),
                                               reading="figure")
    assert partial.verdict == UNSURE and "layers 1-4" in partial.numbers["missing"]


def test_verdicts_on_synthetic_query_shards():
    """End to end: maps that vary less and less with depth, through the report, to the verdicts."""
    shrinking = avg.verdicts(fixedness_report(synthetic_shards(), n_boot=200))
    assert set(shrinking) == {avg.FLAT_MEANS_VARYING, avg.ARTICLE_HEAD_GROUPS, avg.MORE_FIXED_WITH_DEPTH,
                              avg.LAST_LAYER_ALL_FIXED, avg.FIGURE_LAST_LAYER_ALL_FIXED}
    assert shrinking[avg.ARTICLE_HEAD_GROUPS].verdict == UNSURE  # synthetic maps are not bert-base-chinese
    assert shrinking[avg.MORE_FIXED_WITH_DEPTH].verdict == HOLDS
    assert shrinking[avg.LAST_LAYER_ALL_FIXED].verdict == HOLDS
    growing = avg.verdicts(fixedness_report(synthetic_shards(vary=(0.0, 0.4, 0.8)), n_boot=200))
    assert growing[avg.MORE_FIXED_WITH_DEPTH].verdict == FAILS
    assert growing[avg.LAST_LAYER_ALL_FIXED].verdict == FAILS


def test_fixed_heads_use_the_threshold():
    rep = report([[0.95, 0.2], [avg.FIXED_THRESHOLD, 0.89]], layers=[2, 3])
    assert avg.fixed_heads(rep) == [(2, 0), (3, 0)]


def test_the_sensitivity_table_shows_the_verdict_moving_with_the_threshold():
    f = np.vstack([np.full(12, 0.5), np.full(12, 0.93)])
    rows = sensitivity_rows(avg.verdict_last_layer_all_fixed, report(f, last_share=0.99),
                            {"threshold": list(avg.SENSITIVITY_THRESHOLDS)}, numbers=["fixed_heads"])
    assert [r[1] for r in rows[1:]] == [HOLDS, HOLDS, HOLDS, HOLDS, FAILS]
    assert [r[2] for r in rows[1:]] == [12, 12, 12, 12, 0]


# --------------------------------------------------------------------------- lesson 09


def trend(slope: tuple[float, float, float]) -> DepthTrend:
    d = np.array([1.0, 0.9, 0.8])
    return DepthTrend(layers=[0, 1, 2], dispersion=Interval(d, d - 0.1, d + 0.1, n=50),
                      slope=Interval(*slope, n=50), spearman=-1.0, n_boot=100)


def baseline(p: float) -> ShuffledBaseline:
    d = np.full(3, 0.9)
    return ShuffledBaseline(dispersion=Interval(d, d - 0.05, d + 0.05, n=100), slope=Interval(0.0, -0.04, 0.04, n=100),
                            observed_slope=-0.1, p_value=p, n_perm=100)


def test_more_alike_with_depth_can_hold():
    v = div.verdict_more_alike_with_depth(trend((-0.1, -0.15, -0.05)))
    assert v.verdict == HOLDS
    assert v.numbers["first_layer"] == pytest.approx(1.0) and v.numbers["texts"] == 50
    beaten = div.verdict_more_alike_with_depth(trend((-0.1, -0.15, -0.05)), baseline(0.01))
    assert beaten.verdict == HOLDS and beaten.numbers["baseline_p"] == 0.01


def test_more_alike_with_depth_can_fail():
    assert div.verdict_more_alike_with_depth(trend((0.1, 0.05, 0.15))).verdict == FAILS
    assert div.verdict_more_alike_with_depth(trend((0.01, -0.05, 0.03)), baseline(0.99)).verdict == FAILS


def test_more_alike_with_depth_cannot_tell():
    assert div.verdict_more_alike_with_depth(trend((-0.01, -0.05, 0.03))).verdict == UNSURE
    # a fall beyond its interval that random deals of heads to layers show just as often
    assert div.verdict_more_alike_with_depth(trend((-0.1, -0.15, -0.05)), baseline(0.3)).verdict == UNSURE


def test_layers_cluster_can_hold():
    v = div.verdict_layers_cluster(LayerClustering(within=0.3, between=0.6, p_value=0.001, n_perm=1000))
    assert v.verdict == HOLDS and v.numbers["ratio"] == pytest.approx(0.5)


def test_layers_cluster_can_fail():
    assert div.verdict_layers_cluster(LayerClustering(0.7, 0.6, 0.9, 1000)).verdict == FAILS


def test_layers_cluster_cannot_tell():
    assert div.verdict_layers_cluster(LayerClustering(0.5, 0.6, 0.2, 1000)).verdict == UNSURE


def test_every_claim_function_has_hold_and_fail_tests():
    names = {n for n in globals() if n.startswith("test_")}
    for module in (avg, div):
        for claim in [n[len("verdict_"):] for n in dir(module) if n.startswith("verdict_")]:
            assert {f"test_{claim}_can_hold", f"test_{claim}_can_fail"} <= names, claim
