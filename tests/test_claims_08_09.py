"""The claims of lessons 08 and 09 decided on constructed evidence: each can hold and each can fail."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.diversity import DepthShape, DepthTrend, LayerClustering, ShuffledBaseline
from attnlab.analysis.fixedness import UNIFORM_INFO, FixednessReport, fixedness_report
from attnlab.analysis.stats import Interval
from attnlab.course.claims import averaging as avg
from attnlab.course.claims import diversity as div
from attnlab.course.claims.sensitivity import sensitivity_rows
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE

from test_fixedness import synthetic_shards


ARTICLE = "bert-base-chinese"


def report(fixedness, sharpness=None, *, layers=None, half=0.02, information=None, last_share=None, n_shards=10,
           model="tiny", diff_slope=None, boots=None):
    """A FixednessReport with the given numbers (the rest filled in consistently).

    Each head's interval is its fixedness +- ``half``; ``information`` (default 0.5 everywhere) sets
    which heads are uniform. ``last_share``: share of resamples in which the last layer is the most
    fixed (made exact by lowering every other layer far below in that share of the resamples; the
    last layer's own values never move). ``diff_slope``: ``(estimate, low, high)`` of the slope of
    real - control against depth (a control is attached).
    """
    fixedness = np.asarray(fixedness, dtype=float)
    sharpness = np.full_like(fixedness, 0.5) if sharpness is None else np.asarray(sharpness, dtype=float)
    info = np.full_like(fixedness, 0.5) if information is None else np.asarray(information, dtype=float)
    per_layer = fixedness.mean(axis=1)
    if boots is None:
        boots = np.repeat(fixedness[None], 200, axis=0)
        if last_share is not None:
            lifted = int(round(last_share * 200))
            boots[:lifted, :-1] = fixedness.min() - 1.0  # the last layer on top in these resamples
            boots[lifted:, :-1] = fixedness.max() + 1.0
    rep = FixednessReport(
        layers=list(range(len(fixedness))) if layers is None else layers, fixedness=fixedness,
        head_interval=Interval(fixedness, fixedness - half, fixedness + half, n=n_shards),
        information=Interval(info, info - 0.005, info + 0.005, n=n_shards), uniform=info < UNIFORM_INFO,
        null_share=np.zeros_like(fixedness), js_score=np.ones_like(fixedness),
        sharpness=sharpness, per_layer=Interval(per_layer, per_layer - 0.01, per_layer + 0.01, n=n_shards),
        slope=Interval(0.0, -0.1, 0.1, n=n_shards), depth_rho=0.0, sharp_fixed_rho=0.0,
        last_is_most_fixed_share=0.5 if last_share is None else last_share, count=1000, n_shards=n_shards,
        model_name=model, head_boots=boots, info_boots=np.repeat(info[None], len(boots), axis=0),
    )
    if diff_slope is not None:
        rep.control = fixedness.copy()
        rep.control_per_layer = Interval(per_layer, per_layer - 0.01, per_layer + 0.01, n=n_shards)
        rep.difference_slope = Interval(*diff_slope, n=n_shards)
        rep.control_count = 500
    return rep


# --------------------------------------------------------------------------- lesson 08


def test_head_labels_are_three_way_from_each_interval():
    rep = report([[0.8, 0.3, 0.51, 0.49, 0.9]], information=[[0.5, 0.5, 0.5, 0.5, 0.001]])
    assert avg.head_labels(rep).tolist() == [["fixed", "varying", "cannot tell", "cannot tell", "uniform"]]
    assert avg.fixed_heads(rep) == [(0, 0)]
    assert avg.head_labels(rep, threshold=0.25).tolist() == [["fixed", "fixed", "fixed", "fixed", "uniform"]]
    few = report([[0.8, 0.3]], n_shards=avg.MIN_UNITS - 1)  # e.g. smoke mode's 4 shards
    assert avg.head_labels(few).tolist() == [["cannot tell", "cannot tell"]]


def test_label_share_counts_cannot_tell_and_resamples_shards():
    f = np.array([[0.8, 0.8, 0.3, 0.51]])
    boots = np.repeat(f[None], 100, axis=0)
    boots[:10, 0, 3] = 0.49  # head 4 drops below the line in 10% of the resampled shards
    share = avg.label_share(report(f, boots=boots))
    assert share.counts == {"fixed": 2, "varying": 1, "cannot tell": 1, "uniform": 0} and share.heads == 4
    assert share.interval.estimate == pytest.approx(0.75)  # point labels: 3 of 4 at or above 0.5
    assert share.interval.low == pytest.approx(0.5)  # the unsure head counted out ...
    assert share.interval.high == pytest.approx(0.75)  # ... or in (the resamples stay inside)
    assert share.why is None and share.numbers()["cannot tell heads"] == 1
    assert avg.label_share(report(f, n_shards=4)).why is not None
    table = avg.fixed_share_table(report(f), thresholds=(0.2, 0.5, 0.9))
    assert table[0][:5] == ["threshold", "fixed", "varying", "cannot tell", "uniform"]
    assert [row[1:5] for row in table[1:]] == [[4, 0, 0, 0], [2, 1, 1, 0], [0, 4, 0, 0]]


def test_the_uniform_level_has_a_sensitivity_table():
    rep = report([[0.8, 0.3, 0.8]], information=[[0.004, 0.015, 0.5]])
    table = avg.uniform_table(rep, levels=(0.001, 0.01, 0.1))
    assert table[0] == ["uniform below", "fixed", "varying", "cannot tell", "uniform"]
    assert [row[1:] for row in table[1:]] == [[2, 1, 0, 0], [1, 1, 0, 1], [1, 0, 0, 2]]


def test_flat_means_varying_can_hold():
    fixed = np.array([[0.1, 0.05, 0.9, 0.8]])  # the two flat heads vary
    sharp = np.array([[0.1, 0.05, 0.6, 0.1]])  # ... and one flat head is fixed: 2 of 3 flat heads vary
    v = avg.verdict_flat_means_varying(report(fixed, sharp))
    assert v.verdict == HOLDS
    assert v.numbers["flat_heads"] == 3 and v.numbers["estimate"] == pytest.approx(2 / 3)
    assert v.numbers["flat_but_fixed_examples"] == ["L1 H4"]


def test_flat_means_varying_can_fail():
    fixed = np.array([[0.9, 0.8, 0.1, 0.99]])  # flat heads 1, 2, 4 are all fixed
    sharp = np.array([[0.1, 0.05, 0.6, 0.1]])
    v = avg.verdict_flat_means_varying(report(fixed, sharp))
    assert v.verdict == FAILS and v.numbers["fixed heads"] == 3
    uniform = avg.verdict_flat_means_varying(report([[0.1, 0.9, 0.9]], [[0.1, 0.1, 0.1]],
                                                    information=[[0.5, 0.001, 0.001]]))
    assert uniform.verdict == FAILS and uniform.numbers["uniform heads"] == 2  # flat, yet nothing varies


def test_flat_means_varying_cannot_tell():
    half = avg.verdict_flat_means_varying(report([[0.1, 0.9]], [[0.1, 0.1]]))
    assert half.verdict == UNSURE
    unsure = avg.verdict_flat_means_varying(report([[0.1, 0.5, 0.5]], [[0.1, 0.1, 0.1]]))  # 1 varies, 2 straddle
    assert unsure.verdict == UNSURE and unsure.numbers["low"] < avg.MOST_FLAT_VARY <= unsure.numbers["high"]
    few = avg.verdict_flat_means_varying(report([[0.1, 0.1, 0.1]], [[0.1, 0.1, 0.1]], n_shards=4))
    assert few.verdict == UNSURE and "resampled units" in few.numbers["why"]
    no_flat = avg.verdict_flat_means_varying(report([[0.5, 0.95]], [[0.5, 0.9]]))
    assert no_flat.verdict == UNSURE and "no head has a flat mean map" in no_flat.numbers["missing"]


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
    info = np.full((4, 12), 0.5)
    info[:, list(avg.ARTICLE_VARYING_HEADS)] = 0.001  # the "varying" group is uniform: nothing to compare
    uniform = avg.verdict_article_head_groups(report(_article_like(0.5), information=info, model=ARTICLE))
    assert uniform.verdict == UNSURE and "too small" in uniform.numbers["missing"]


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
    v = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), diff_slope=(0.05, 0.02, 0.08)))
    assert v.verdict == HOLDS and v.numbers["low"] == pytest.approx(0.02) and v.numbers["estimate"] == 0.05


def test_more_fixed_with_depth_can_fail():
    v = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), diff_slope=(-0.05, -0.08, -0.01)))
    assert v.verdict == FAILS


def test_more_fixed_with_depth_cannot_tell():
    straddles = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), diff_slope=(0.01, -0.01, 0.03)))
    assert straddles.verdict == UNSURE
    few = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8), diff_slope=(0.05, 0.02, 0.08), n_shards=4))
    assert few.verdict == UNSURE and "resampled units" in few.numbers["why"]
    no_control = avg.verdict_more_fixed_with_depth(report(np.full((3, 12), 0.8)))
    assert no_control.verdict == UNSURE and "control" in no_control.numbers["missing"]


def test_more_fixed_with_depth_is_decided_against_the_control():
    """End to end: a trend with depth that the random-token control shares decides nothing."""
    real = synthetic_shards(n_shards=10, vary=(0.8, 0.4, 0.0))  # more fixed with depth ...
    same_trend = synthetic_shards(n_shards=10, vary=(0.8, 0.4, 0.0), seed=5)  # ... and so is the control
    rep = fixedness_report(real, control=same_trend, n_boot=200)
    assert rep.slope.above(0.0)  # the raw slope alone would say "holds"
    assert avg.verdict_more_fixed_with_depth(rep).verdict != HOLDS
    flat_control = synthetic_shards(n_shards=10, vary=(0.4, 0.4, 0.4), seed=6)
    assert avg.verdict_more_fixed_with_depth(fixedness_report(real, control=flat_control, n_boot=200)).verdict == HOLDS


def test_last_layer_all_fixed_can_hold():
    f = np.vstack([np.full(12, 0.3), np.full(12, 0.95)])
    v = avg.verdict_last_layer_all_fixed(report(f, last_share=0.99))
    assert v.verdict == HOLDS and v.numbers["fixed_heads"] == 12 and v.numbers["layer"] == 2


def test_last_layer_all_fixed_can_fail():
    f = np.vstack([np.full(12, 0.3), np.full(12, 0.95)])
    f[1, 4] = 0.2  # one head of the last layer clearly varies
    assert avg.verdict_last_layer_all_fixed(report(f, last_share=0.99)).verdict == FAILS
    all_fixed = np.vstack([np.full(12, 0.97), np.full(12, 0.95)])
    assert avg.verdict_last_layer_all_fixed(report(all_fixed, last_share=0.02)).verdict == FAILS
    high_bar = avg.verdict_last_layer_all_fixed(report(np.vstack([np.full(12, 0.3), np.full(12, 0.6)]),
                                                       last_share=0.99), threshold=0.7)
    assert high_bar.verdict == FAILS


def test_last_layer_all_fixed_cannot_tell():
    all_fixed = np.vstack([np.full(12, 0.97), np.full(12, 0.95)])
    assert avg.verdict_last_layer_all_fixed(report(all_fixed, last_share=0.5)).verdict == UNSURE
    few = avg.verdict_last_layer_all_fixed(report(all_fixed, last_share=0.99, n_shards=4))
    assert few.verdict == UNSURE and "resampled units" in few.numbers["why"]
    straddles = all_fixed.copy()
    straddles[1, 3] = 0.51  # one head's interval straddles the line
    assert avg.verdict_last_layer_all_fixed(report(straddles, last_share=0.99)).verdict == UNSURE
    with pytest.raises(ValueError, match="reading"):
        avg.verdict_last_layer_all_fixed(report(all_fixed), reading="last")


def test_the_figures_last_layer_is_layer_4():
    f = np.full((6, 12), 0.3)
    f[3] = 0.97  # layer 4: all fixed and the most fixed of layers 1-4
    boots = np.repeat(f[None], 50, axis=0)
    figure = avg.verdict_last_layer_all_fixed(report(f, boots=boots), reading="figure")
    assert figure.verdict == HOLDS and figure.numbers["layer"] == 4 and figure.numbers["most_fixed_layer_share"] == 1.0
    model = avg.verdict_last_layer_all_fixed(report(f, boots=boots), reading="model")
    assert model.verdict == FAILS and model.numbers["layer"] == 6  # the model's last layer is not fixed
    f2 = f.copy()
    f2[3, 0] = 0.2
    assert avg.verdict_last_layer_all_fixed(report(f2, boots=np.repeat(f2[None], 50, axis=0)),
                                            reading="figure").verdict == FAILS
    partial = avg.verdict_last_layer_all_fixed(report(f[:3], layers=[0, 1, 2], boots=boots[:, :3]),
                                               reading="figure")
    assert partial.verdict == UNSURE and "layers 1-4" in partial.numbers["missing"]


def test_verdicts_on_synthetic_query_shards():
    """End to end: maps that vary less and less with depth, through the report, to the verdicts."""
    control = synthetic_shards(n_shards=10, vary=(0.4, 0.4, 0.4), seed=6)
    shrinking = avg.verdicts(fixedness_report(synthetic_shards(n_shards=10), n_boot=200, control=control))
    assert set(shrinking) == {avg.FLAT_MEANS_VARYING, avg.ARTICLE_HEAD_GROUPS, avg.MORE_FIXED_WITH_DEPTH,
                              avg.LAST_LAYER_ALL_FIXED, avg.FIGURE_LAST_LAYER_ALL_FIXED}
    assert shrinking[avg.ARTICLE_HEAD_GROUPS].verdict == UNSURE  # synthetic maps are not bert-base-chinese
    assert shrinking[avg.MORE_FIXED_WITH_DEPTH].verdict == HOLDS
    assert shrinking[avg.LAST_LAYER_ALL_FIXED].verdict == HOLDS
    growing = avg.verdicts(fixedness_report(synthetic_shards(n_shards=10, vary=(0.0, 0.4, 0.8)), n_boot=200,
                                            control=control))
    assert growing[avg.MORE_FIXED_WITH_DEPTH].verdict == FAILS
    assert growing[avg.LAST_LAYER_ALL_FIXED].verdict == FAILS
    smoke = avg.verdicts(fixedness_report(synthetic_shards(n_shards=4), n_boot=200,
                                          control=synthetic_shards(n_shards=4, seed=6)))
    assert {v.verdict for v in smoke.values()} == {UNSURE}  # 4 shards: nothing is decided


def test_the_sensitivity_table_shows_the_verdict_moving_with_the_threshold():
    f = np.vstack([np.full(12, 0.2), np.full(12, 0.65)])
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


def shape(upper: tuple[float, float, float], rebound: tuple[float, float, float], texts: int = 50) -> DepthShape:
    """A curve's shape with the given ``(estimate, low, high)`` of its upper share and rebound."""
    return DepthShape(layers=list(range(12)), upper_share=Interval(*upper, 0.95, texts),
                      rebound=Interval(*rebound, 0.95, texts), least_layer=11, n_boot=500)


def test_upper_layers_converge_can_hold():
    v = div.verdict_upper_layers_converge(shape((0.3, 0.28, 0.32), (0.0, 0.0, 0.02)))
    assert v.verdict == HOLDS
    # the larger gap past its line: the rebound's (0.02 - 0.1) against the upper share's (0.32 - 0.9)
    assert v.numbers["high"] == pytest.approx(0.02 - div.CONVERGE_FLOOR)
    assert v.numbers["least diverse layer"] == 12


def test_upper_layers_converge_can_fail():
    u = div.verdict_upper_layers_converge(shape((0.52, 0.50, 0.53), (0.47, 0.44, 0.50)))  # the offline default's U
    assert u.verdict == FAILS and u.numbers["low"] == pytest.approx(0.44 - div.CONVERGE_FLOOR)
    flat = div.verdict_upper_layers_converge(shape((1.0, 0.97, 1.03), (0.02, 0.0, 0.05)))  # no fall at all
    assert flat.verdict == FAILS and flat.numbers["low"] == pytest.approx(0.97 - (1 - div.CONVERGE_FLOOR))


def test_upper_layers_converge_cannot_tell():
    assert div.verdict_upper_layers_converge(shape((0.3, 0.28, 0.32), (0.09, 0.05, 0.13))).verdict == UNSURE
    few = div.verdict_upper_layers_converge(shape((0.3, 0.28, 0.32), (0.0, 0.0, 0.0), texts=4))
    assert few.verdict == UNSURE and "4 resampled units" in few.numbers["why"]


def test_training_converges_can_hold():
    twin = shape((0.9, 0.88, 0.92), (0.0, 0.0, 0.01))
    v = div.verdict_training_converges(shape((0.3, 0.28, 0.32), (0.0, 0.0, 0.01)), twin)
    assert v.verdict == HOLDS and v.numbers["training against depth alone"] == div.ADDS
    assert v.numbers["estimate"] == pytest.approx(-0.6)
    assert v.numbers["high"] == pytest.approx(-0.6 + np.hypot(0.02, 0.02))  # both runs' noise, in quadrature


def test_training_converges_can_fail():
    twin = shape((0.006, 0.005, 0.007), (0.0, 0.0, 0.0))  # a twin collapsed with depth
    keeps = div.verdict_training_converges(shape((0.52, 0.50, 0.53), (0.47, 0.44, 0.50)), twin)
    assert keeps.verdict == FAILS and keeps.numbers["training against depth alone"] == div.KEEPS
    same = div.verdict_training_converges(shape((0.05, 0.04, 0.06), (0.0, 0.0, 0.0)), twin)
    assert same.verdict == FAILS and same.numbers["training against depth alone"] == div.AS_DEPTH


def test_training_converges_cannot_tell():
    twin = shape((0.5, 0.45, 0.55), (0.0, 0.0, 0.0))
    v = div.verdict_training_converges(shape((0.4, 0.35, 0.45), (0.0, 0.0, 0.0)), twin)  # 0.1 apart, wide
    assert v.verdict == UNSURE and v.numbers["training against depth alone"] == div.UNDECIDED


def test_fixed_pattern_share_can_hold():
    fixed = np.array([[0.9, 0.8, 0.1, 0.7], [0.9, 0.9, 0.9, 0.2]])
    info = np.array([[0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.0]])  # the last head: uniform
    v = avg.verdict_fixed_pattern_share(report(fixed, information=info))
    assert v.verdict == HOLDS
    assert v.numbers["estimate"] == pytest.approx(7 / 8)  # 6 fixed and the uniform one
    assert v.numbers["fixed heads"] == 6 and v.numbers["uniform heads"] == 1


def test_fixed_pattern_share_can_fail():
    fixed = np.array([[0.1, 0.2, 0.9, 0.1], [0.3, 0.1, 0.2, 0.2]])
    assert avg.verdict_fixed_pattern_share(report(fixed)).verdict == FAILS
    straddles = report(np.array([[0.5, 0.5, 0.9, 0.1]]), half=0.1)  # two heads cannot tell: 1/4 to 3/4
    assert avg.verdict_fixed_pattern_share(straddles).verdict == UNSURE
    assert avg.verdict_fixed_pattern_share(report(fixed, n_shards=4)).verdict == UNSURE  # too few shards


def test_lesson08_groups_against_the_twin():
    """The fixed-pattern share and lesson 08's claims through lesson 12's rule, against planted twins:
    the twin gives the same -> cannot tell; the model beyond the twin by the floor -> holds; the model
    does not hold -> does not hold. Uniform heads count as a fixed pattern on the model and the twin alike."""
    trained = report(np.full((3, 4), 0.9), diff_slope=(0.05, 0.03, 0.07))
    varying = report(np.full((3, 4), 0.1), diff_slope=(0.0, -0.01, 0.01))
    even = report(np.full((3, 4), 0.1), information=np.zeros((3, 4)), diff_slope=(0.0, -0.01, 0.01))
    model = avg.checked_claims(trained)
    assert set(avg.TOWARD_HOLDS) == set(model) == set(avg.TWIN_FLOORS)
    assert model[avg.FIXED_PATTERN_SHARE].verdict == HOLDS and model[avg.MORE_FIXED_WITH_DEPTH].verdict == HOLDS
    beyond = avg.against_the_twin(model, avg.checked_claims(varying), twin_name="twin")
    for key in (avg.FIXED_PATTERN_SHARE, avg.MORE_FIXED_WITH_DEPTH):
        assert beyond[key].verdict == HOLDS, (key, beyond[key].numbers)
    # the floor is in the slope's units: a model ahead of its twin by less than 0.01 per layer is not ahead
    slight = avg.checked_claims(report(np.full((3, 4), 0.9), diff_slope=(0.004, 0.003, 0.005)))
    below = avg.checked_claims(report(np.full((3, 4), 0.1), diff_slope=(-0.001, -0.0015, -0.0005)))
    assert slight[avg.MORE_FIXED_WITH_DEPTH].verdict == HOLDS and below[avg.MORE_FIXED_WITH_DEPTH].verdict == FAILS
    assert avg.against_the_twin(slight, below)[avg.MORE_FIXED_WITH_DEPTH].verdict == UNSURE
    assert avg.against_the_twin(slight, below, scale=0.0)[avg.MORE_FIXED_WITH_DEPTH].verdict == HOLDS
    same = avg.against_the_twin(model, avg.checked_claims(trained))
    assert all(v.verdict == UNSURE for k, v in same.items() if model[k].verdict == HOLDS)
    # an untrained model whose heads all attend evenly draws one map for every query: as fixed a pattern
    assert avg.verdict_fixed_pattern_share(even).verdict == HOLDS
    assert avg.against_the_twin(model, avg.checked_claims(even))[avg.FIXED_PATTERN_SHARE].verdict == UNSURE
    # the model does not hold: "does not hold" whatever the twin does
    not_fixed = avg.checked_claims(varying)
    assert not_fixed[avg.FIXED_PATTERN_SHARE].verdict == FAILS
    assert avg.against_the_twin(not_fixed, avg.checked_claims(even))[avg.FIXED_PATTERN_SHARE].verdict == FAILS
    table = avg.twin_floor_table(model, avg.checked_claims(varying))
    row = next(r for r in table[1:] if r[0] == avg.FIXED_PATTERN_SHARE)
    assert row[1] == avg.TWIN_FLOOR_HEADS and row[2:] == [HOLDS] * 4  # 1.0 against 0.0 clears every floor


def test_every_claim_function_has_hold_and_fail_tests():
    names = {n for n in globals() if n.startswith("test_")}
    for module in (avg, div):
        for claim in [n[len("verdict_"):] for n in dir(module) if n.startswith("verdict_")]:
            assert {f"test_{claim}_can_hold", f"test_{claim}_can_fail"} <= names, claim
