"""Lesson 12's verdicts are computed from the saved evidence, not written in advance."""

from __future__ import annotations

import numpy as np
import pytest

import lesson_records as rec  # tests/lesson_records.py
from attnlab.core import language
from attnlab.core.distributions import CONTENT_KEYS
from attnlab.course import evidence as c
from attnlab.course import results
from attnlab.course.claims import conclusions as claims
from attnlab.course.exercises import lesson_12 as ex12
from attnlab.course.lesson_results import (
    AveragingResult,
    ConclusionsResult,
    DiversityResult,
    PerturbationResult,
)
from attnlab.course.registry import RERUN
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.analysis import covering as cv
from attnlab.analysis.covering import PAIR_READINGS
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol12 = teacher("12")

BIG = {"n_layers": 6, "n_heads": 12}


def test_conclusion_1_can_hold():
    v = claims.conclusion_1(rec.averaging(0.9, **BIG), rec.perturbation(0.05, **BIG), rec.patterns(0.6))
    assert v.verdict == HOLDS
    assert v.numbers["estimate"] == pytest.approx(65 / 72)  # round(0.9 * 72) = 65 heads, equal content mass
    assert v.numbers["low"] == pytest.approx(65 / 72) and v.numbers["high"] == pytest.approx(65 / 72)
    assert v.numbers["fixed heads (lesson 08), unweighted"] == f"{65 / 72:.3g} [{65 / 72 - 0.03:.3g}, {65 / 72 + 0.03:.3g}]"
    assert v.numbers["low"] > claims.MOST_FIXED and v.numbers["content high"] < claims.FEW_CONTENT
    assert v.numbers["fixed (lesson 08 heads)"] == 65 and v.numbers["cannot tell (lesson 08 heads)"] == 0
    assert v.numbers["query shards"] == 20
    assert v.numbers["fixed-pattern labels (lesson 05)"] == pytest.approx(0.6)


def test_conclusion_1_prints_an_exact_count_as_a_count():
    """The share is counted over every head, so its one line gives the count (and, when lesson 08 saved its
    fixedness, the range its label-threshold table gives), never a zero-width "interval"; with unsure heads
    it gives the count and how high the unsure heads take it, not an interval either."""
    exact = claims.conclusion_1(rec.averaging(0.9, **BIG), rec.perturbation(0.05, **BIG))
    line = c.summary_line(exact)
    assert "(counted: 65 / 72 heads, no label unsure" in line and "[0.903, 0.903]" not in line
    with language.speaking("zh"):
        assert "65 / 72" in c.summary_line(exact) and "counted" not in c.summary_line(exact)
    unsure = claims.conclusion_1(rec.averaging(0.45, unsure=0.15, **BIG), rec.perturbation(0.05, **BIG))
    line = c.summary_line(unsure)  # still a count, its high end the unsure heads counted in
    assert f"(counted: 32 / 72 heads; up to {unsure.numbers['high']:.3g} counting in the unsure heads (11)" in line
    assert f"[{unsure.numbers['low']:.3g}, {unsure.numbers['high']:.3g}]" not in c.deciding_number(unsure)
    assert unsure.numbers["high"] == pytest.approx((32 + 11) / 72)


def test_conclusion_1_can_fail():
    assert claims.conclusion_1(rec.averaging(0.9, **BIG), rec.perturbation(0.6, **BIG)).verdict == FAILS
    assert claims.conclusion_1(rec.averaging(0.2, **BIG), rec.perturbation(0.05, **BIG)).verdict == FAILS
    unsure_but_few = rec.averaging(0.2, unsure=0.2, **BIG)  # even with every unsure head fixed: 40%
    assert claims.conclusion_1(unsure_but_few, rec.perturbation(0.05, **BIG)).verdict == FAILS


def test_conclusion_1_cannot_tell():
    near = claims.conclusion_1(rec.averaging(0.45, unsure=0.15, **BIG), rec.perturbation(0.05, **BIG))
    assert near.verdict == UNSURE and near.numbers["low"] < claims.MOST_FIXED < near.numbers["high"]
    unsure = claims.conclusion_1(rec.averaging(0.4, unsure=0.3, **BIG), rec.perturbation(0.05, **BIG))
    assert unsure.verdict == UNSURE and unsure.numbers["cannot tell (lesson 08 heads)"] == 22
    assert unsure.numbers["high"] == pytest.approx((29 + 22) / 72)  # the unsure heads may all be fixed
    few = claims.conclusion_1(rec.averaging(0.9, shards=4, **BIG), rec.perturbation(0.05, **BIG))
    assert few.verdict == UNSURE and "4 resampled units" in few.numbers["why"]
    old = rec.averaging(0.9, **BIG)
    old.labels, old.fixed_share = [], None  # saved before the three-way labels
    assert "run lesson 08 again" in claims.conclusion_1(old, rec.perturbation(0.05, **BIG)).numbers["missing"]


def test_conclusion_1_says_why_it_cannot_tell_as_a_count():
    """A "cannot tell" of conclusion 1 never says an interval reaches a line. Each case of its reason: the
    unsure heads decide it (more queries could settle them), the count sits within the floor's band, exact
    or however the unsure heads are counted (settled: more data of the same kind does not move it), or
    lesson 06's content share reaches its band."""
    across = claims.conclusion_1(rec.averaging(0.4, unsure=0.3, **BIG), rec.perturbation(0.05, **BIG))  # 29-51 of 72
    assert across.verdict == UNSURE
    assert across.reason() == ("The data cannot decide: the 22 heads whose label is unsure decide it: the fixed "
                               "share is 0.403 with none of them fixed and 0.708 with all of them, on both sides of 0.6")
    assert across.what_would_change().startswith("It waits for evidence")
    in_band = claims.conclusion_1(rec.averaging(0.5, **BIG), rec.perturbation(0.05, **BIG))  # 36 / 72
    assert in_band.verdict == UNSURE and in_band.numbers["low"] == in_band.numbers["high"]
    assert in_band.reason() == ("The data cannot decide: the counted share of fixed heads, 0.5, lies within the "
                                "floor of its line (0.4 to 0.6)")
    assert "would not decide" in in_band.what_would_change() and "waits" not in in_band.what_would_change()
    ranged = claims.conclusion_1(rec.averaging(0.45, unsure=0.15, **BIG), rec.perturbation(0.05, **BIG))  # 32-43 of 72
    assert ranged.reason().endswith("however its 11 unsure heads are counted: from 0.444 to 0.597")
    assert "would not decide" in ranged.what_would_change()
    content = claims.conclusion_1(rec.averaging(0.9, **BIG), rec.perturbation(0.25, **BIG))
    assert content.verdict == UNSURE and "lesson 06's content share" in content.reason()
    for v in (across, in_band, ranged, content):
        assert "interval [" not in v.reason()
    with language.speaking("zh"):
        assert "22" in across.reason() and "heads" not in across.reason()
        assert "0.4" in in_band.reason() and "floor" not in in_band.reason()
    decided = claims.conclusion_1(rec.averaging(0.9, **BIG), rec.perturbation(0.05, **BIG))
    assert decided.verdict == HOLDS and "why" not in decided.numbers


def test_conclusion_1_does_not_depend_on_the_number_of_heads():
    """8 heads decide as well as 72: the uncertainty is in each head's label, not in how many heads there are."""
    # 2 layers x 4 heads; no content-follower: one of 8 (0.125 +- 0.03) is within the floor of "a few" (0.25 - 0.1)
    small = claims.conclusion_1(rec.averaging(0.9), rec.perturbation(0.0))
    assert small.verdict == HOLDS and small.numbers["estimate"] == pytest.approx(7 / 8)
    assert claims.conclusion_1(rec.averaging(0.25), rec.perturbation(0.1)).verdict == FAILS


def test_content_mass_weighting():
    """Fixed heads that read the text against varying heads that park almost every row on a sink: counted
    head by head it is half and half; weighted by the share of each row that reads the text, the fixed
    heads carry it (and the other way round)."""
    def record(fixed_read: float, varying_read: float):
        avg = rec.averaging(0.5, **BIG)  # layers 1-3 fixed, 4-6 varying on the content keys
        avg.special_weight = np.repeat([1 - fixed_read, 1 - varying_read], 3)[:, None] * np.ones((6, 12))
        avg.sink_labels = [row if i < 3 or varying_read > 0.5 else ["sink + " + x for x in row]
                           for i, row in enumerate(avg.content_labels)]
        return avg

    reads = record(0.9, 0.05)  # the varying heads read the text with 5% of each row
    v = claims.conclusion_1(reads, rec.perturbation(0.05, **BIG))
    by_hand = 36 * 0.9 / (36 * 0.9 + 36 * 0.05)
    assert v.numbers["estimate"] == pytest.approx(by_hand) and v.verdict == HOLDS
    assert v.numbers["fixed heads (lesson 08), unweighted"].startswith("0.5 ")  # head by head: no majority
    assert v.numbers["heads not resting on a special token"] == 36 and v.numbers["verdict on those heads alone"] == HOLDS
    v = claims.conclusion_1(record(0.05, 0.9), rec.perturbation(0.05, **BIG))
    assert v.numbers["estimate"] == pytest.approx(36 * 0.05 / (36 * 0.05 + 36 * 0.9)) and v.verdict == FAILS
    flags = np.asarray(reads.content_labels) == "fixed"
    weighted = claims.share_interval(flags, np.zeros_like(flags), claims.content_mass(reads))
    assert weighted.estimate == pytest.approx(by_hand)


def test_norm_weighted_reading_changes_with_the_weights():
    """The norm-based weights are shown beside the decision: planted where they agree with the raw weights the
    verdict is the same, planted the other way round (the fixed heads move little from the text, the varying
    ones a lot) the share follows them and the verdict would differ; the decided verdict never moves."""
    avg = rec.averaging(0.5, **BIG)  # layers 1-3 fixed, 4-6 varying on the content keys
    avg.special_weight = np.repeat([0.1, 0.95], 3)[:, None] * np.ones((6, 12))  # raw content mass 0.9 / 0.05
    missing = claims.conclusion_1(avg, rec.perturbation(0.05, **BIG))
    assert missing.numbers["norm-weighted reading (Kobayashi et al.)"] == "not measured (run lesson 08 again)"
    assert "verdict with the norm-based weights" not in missing.numbers and missing.verdict == HOLDS

    avg.norm_special_weight = np.repeat([0.2, 0.9], 3)[:, None] * np.ones((6, 12))  # norm mass 0.8 / 0.1
    same = claims.conclusion_1(avg, rec.perturbation(0.05, **BIG))
    by_hand = 36 * 0.8 / (36 * 0.8 + 36 * 0.1)
    assert same.numbers["norm-weighted reading (Kobayashi et al.)"] == f"{by_hand:.3g} [{by_hand:.3g}, {by_hand:.3g}]"
    assert same.numbers["verdict with the norm-based weights"] == "same verdict" and same.verdict == HOLDS
    assert same.numbers["norm-based content mass per head (min, median, max)"] == [0.1, 0.45, 0.8]

    avg.norm_special_weight = np.repeat([0.9, 0.2], 3)[:, None] * np.ones((6, 12))  # norm mass 0.1 / 0.8
    other = claims.conclusion_1(avg, rec.perturbation(0.05, **BIG))
    by_hand = 36 * 0.1 / (36 * 0.1 + 36 * 0.8)
    assert other.numbers["norm-weighted reading (Kobayashi et al.)"].startswith(f"{by_hand:.3g} [")
    assert other.numbers["verdict with the norm-based weights"] == "different verdict"
    assert other.verdict == HOLDS and other.numbers["estimate"] == same.numbers["estimate"]  # beside, not deciding
    assert "different verdict" in str(other)


def test_share_interval_resamples_no_heads():
    flags = np.array([[True, True, False, False]])
    unsure = np.array([[False, False, True, False]])
    whole = claims.share_interval(flags)
    assert (whole.estimate, whole.low, whole.high) == (0.5, 0.5, 0.5)  # a count over the population
    widened = claims.share_interval(flags, unsure)
    assert (widened.estimate, widened.low, widened.high) == (0.5, 0.5, 0.75)


def test_conclusion_1_cites_the_mean_map_replacement_of_lesson_13():
    from types import SimpleNamespace

    from attnlab.analysis.stats import Interval
    from attnlab.course.claims.attention_limits import FIXED_HEADS_CHEAP
    from attnlab.course.verdicts import ClaimVerdict

    papa = SimpleNamespace(papa_rho=Interval(-0.8, -0.89, -0.65),
                           verdicts={FIXED_HEADS_CHEAP: ClaimVerdict.decide("cheap", holds=True, fails=False)})
    without = claims.conclusion_1(rec.averaging(0.9, **BIG), rec.perturbation(0.05, **BIG))
    cited = claims.conclusion_1(rec.averaging(0.9, **BIG), rec.perturbation(0.05, **BIG), None, papa)
    assert without.numbers["mean-map replacement (lesson 13)"] == "not run yet"
    assert cited.numbers["fixed heads cheap to replace (lesson 13)"] == HOLDS
    assert "-0.80" in cited.numbers["fixedness vs cost of mean-map replacement (lesson 13)"]
    assert cited.verdict == without.verdict  # cited beside the verdict, which stays about how many heads


def test_fixed_vs_followers_counts_head_by_head():
    avg = rec.averaging(0.5)  # the first 4 of 8 heads (layer 0) are fixed
    labels = [["content", "position", "position", "neither"], ["content", "content", "position", "neither"]]
    table = claims.fixed_vs_followers(avg, rec.perturbation(labels=labels))
    assert table["fixed"] == {"content": 1, "neither": 1, "position": 2}
    assert table["not fixed"] == {"content": 2, "neither": 1, "position": 1}
    v = claims.conclusion_1(avg, rec.perturbation(labels=labels))
    assert v.numbers["fixed and content-following (same heads)"] == 1


def test_conclusion_2_can_hold():
    v = claims.conclusion_2(rec.diversity((3.0, 2.0, 1.0), control_slope=0.02), rec.averaging(slope=0.2))
    assert v.verdict == HOLDS
    # the curve falls to the top: the last layer is the least diverse (rebound 0), and the upper third keeps
    # 1/3 of the lower third's dispersion; the larger gap is the rebound's, 0 - floor
    assert v.numbers["estimate"] == pytest.approx(-claims.FLOOR_2)
    assert v.numbers["high"] < 0 and v.numbers["holds below"] == 0.0
    assert v.numbers["least diverse layer"] == 3
    assert v.numbers["upper third over lower third"].startswith(f"{1 / 3:.3f}")
    assert v.numbers["floor"] == pytest.approx(claims.FLOOR_2)
    assert v.numbers["slope per layer"] == pytest.approx(-1.0)  # shown beside, not deciding
    assert v.numbers["fixedness slope per layer (lesson 08)"] == pytest.approx(0.2)
    assert v.numbers["content keys: verdict"] == HOLDS


def u_curve(layers: int = 12) -> np.ndarray:
    """The offline default's curve, measured (lesson 09, 2,000 queries): high, down to layer 10, up again."""
    curve = np.array([2.72, 2.97, 2.07, 1.12, 1.32, 1.13, 1.41, 0.94, 0.81, 0.79, 1.15, 1.84])
    return curve[:layers]


def test_conclusion_2_a_u_does_not_hold_though_its_slope_falls():
    record = rec.diversity(u_curve(), half_width=0.01, n_texts=40)
    v = claims.conclusion_2(record)
    assert v.verdict == FAILS
    assert v.numbers["slope high"] < 0  # a straight slope reads this curve as converging
    assert v.numbers["least diverse layer"] == 10
    lower = u_curve()[:4].mean()
    rebound = (1.84 - 0.79) / lower  # the last layer above layer 10, in shares of the lower third's dispersion
    assert record.shape.rebound.estimate == pytest.approx(rebound)
    assert v.numbers["estimate"] == pytest.approx(rebound - claims.FLOOR_2)
    assert v.numbers["low"] > 0


def test_conclusion_2_can_fail():
    assert claims.conclusion_2(rec.diversity((1.0, 2.0, 3.0))).verdict == FAILS  # rising
    flat = claims.conclusion_2(rec.diversity((2.0, 2.0, 2.0), half_width=0.01))  # no fall: the upper share is 1
    assert flat.verdict == FAILS and flat.numbers["estimate"] == pytest.approx(claims.FLOOR_2)


def test_conclusion_2_cannot_tell():
    # the last layer climbs back by about the floor: the interval of the rebound reaches it
    near = claims.conclusion_2(rec.diversity((3.0, 1.0, 1.3), half_width=0.1))
    assert near.verdict == UNSURE and near.numbers["low"] < 0 < near.numbers["high"]
    no_shape = claims.conclusion_2(rec.diversity((3.0, 2.0, 1.0), with_shape=False))  # a record from before
    assert no_shape.verdict == UNSURE and no_shape.numbers["missing"] == claims.NO_SHAPE
    few = claims.conclusion_2(rec.diversity((3.0, 2.0, 1.0), n_texts=4))  # smoke mode: 4 resampled units
    assert few.verdict == UNSURE and "4 resampled units" in few.numbers["why"]
    assert claims.conclusion_2(None).verdict == UNSURE


def test_conclusion_2_sensitivity_moves_its_floor():
    """A last layer that climbs back by 0.15 of the lower third's spread: a U at the floors 0.05 and 0.1, not at 0.2."""
    record = rec.diversity((3.0, 1.0, 1.45), half_width=0.01)
    words = {f: claims.conclusion_2(record, floor=f).verdict for f in claims.SENSITIVITY[2]["floor"]}
    assert words == {0.05: FAILS, 0.1: FAILS, 0.2: HOLDS}


def test_conclusion_2_claim_states_its_lines():
    assert f"{1 - claims.FLOOR_2:.0%}" in claims.CLAIMS[2] and f"{claims.FLOOR_2:.0%}" in claims.CLAIMS[2]
    assert str(claims.FLOOR_2) in claims.CLAIM_TRAINING


def test_conclusion_2_training_against_the_twin():
    """The companion reading: the model's upper share against its untrained twin's (depth alone)."""
    collapsing_twin = rec.diversity((1.2, 1.9, 1.4, 0.75, 0.54, 0.28, 0.12, 0.044, 0.024, 0.007, 0.001, 0.0005),
                                    half_width=0.01, n_texts=40)
    keeps = claims.conclusion_2_training(rec.diversity(u_curve(), half_width=0.01, n_texts=40), collapsing_twin)
    assert keeps.verdict == FAILS and keeps.numbers["training against depth alone"] == claims.KEEPS
    assert keeps.numbers["estimate"] > claims.FLOOR_2
    same = claims.conclusion_2_training(collapsing_twin, collapsing_twin)
    assert same.verdict == FAILS and same.numbers["training against depth alone"] == claims.AS_DEPTH
    assert same.numbers["estimate"] == pytest.approx(0.0)
    flat_twin = rec.diversity((2.0, 2.0, 2.0), half_width=0.01)
    adds = claims.conclusion_2_training(rec.diversity((3.0, 2.0, 1.0), half_width=0.01), flat_twin)
    assert adds.verdict == HOLDS and adds.numbers["training against depth alone"] == claims.ADDS
    missing = claims.conclusion_2_training(rec.diversity(), None)
    assert missing.verdict == UNSURE and "twin" in missing.numbers["missing"]
    old_twin = claims.conclusion_2_training(rec.diversity(), rec.diversity(with_shape=False))  # a twin saved before
    assert old_twin.verdict == UNSURE and old_twin.numbers["missing"] == claims.NO_TWIN_SHAPE


def test_conclusion_3_self_can_hold():
    v = claims.conclusion_3_self(rec.head_count())  # self mass 0.2 -> 0.7
    assert v.verdict == HOLDS and v.numbers["change"] == pytest.approx(0.5, abs=0.02)


def test_conclusion_3_self_can_fail():
    onto_cls = [rec.group(4, 0.3, 0.2, 0.5), rec.group(2, 0.1, 0.7, 0.3)]  # collapse on [CLS], self falls
    v = claims.conclusion_3_self(rec.head_count(regroup=onto_cls))
    assert v.verdict == FAILS and v.numbers["change high"] < 0
    assert claims.conclusion_3(rec.head_count(regroup=onto_cls)).verdict == HOLDS  # the general reading holds


def test_conclusion_3_self_cannot_tell():
    noisy = [rec.group(4, 0.2, 0.3, 0.5, spread=0.3), rec.group(2, 0.25, 0.3, 0.5, spread=0.3)]
    assert claims.conclusion_3_self(rec.head_count(regroup=noisy)).verdict == UNSURE


def test_conclusion_3_can_hold():
    v = claims.conclusion_3(rec.head_count())
    assert v.verdict == HOLDS and v.numbers["focus token, merged"] == "self"


def test_conclusion_3_can_fail():
    flatter = [rec.group(4, 0.2, 0.3, 0.5), rec.group(2, 0.15, 0.2, 0.9)]
    assert claims.conclusion_3(rec.head_count(regroup=flatter)).verdict == FAILS
    no_two = [rec.group(4, 0.2, 0.3, 0.5)]
    assert "missing" in claims.conclusion_3(rec.head_count(regroup=no_two)).numbers


def test_conclusion_4b_can_hold():
    v = claims.conclusion_4b(rec.pruning(**BIG, cover=1.5, top=0.05))  # a pair together: 1.5 x their moves added
    assert v.verdict == HOLDS
    assert v.numbers["estimate"] == pytest.approx(0.5, abs=0.03) and v.numbers["low"] > claims.FLOOR_4B
    assert v.numbers["reading"] == PAIR_READINGS["cover"] and v.numbers["floor"] == claims.FLOOR_4B
    assert v.numbers["holds above"] == v.numbers["fails below"] == claims.FLOOR_4B
    assert v.numbers["pairs of heads of one layer"] == 72 and v.numbers["texts"] == 30
    assert v.numbers["all heads masked must move beyond"] == pytest.approx(claims.MOVE_4 * 0.5)
    assert claims.conclusion_4a(rec.pruning(**BIG, cover=1.5)).verdict == FAILS  # not additive


def test_conclusion_4a_can_hold_and_fail():
    v = claims.conclusion_4a(rec.pruning(**BIG, cover=1.0, top=0.05))
    assert v.verdict == HOLDS and v.numbers["reading"] == PAIR_READINGS["add"]
    assert v.numbers["top high"] < claims.WEAK_SHARE  # held out: about 1 against the 72 heads' sum
    assert v.numbers["top head / sum of every head alone (held out)"] == pytest.approx(1 / 72, rel=0.05)
    assert 0 <= v.numbers["low"] <= v.numbers["high"] < claims.ADD_LINE_4A == v.numbers["holds below"]
    assert v.numbers["floor"] == claims.FLOOR_4A and "|pair interaction|" in v.numbers["measure"]
    strong = rec.pruning(**BIG, cover=1.0)
    strong.covering = rec.covering(1.0, 0.05, strong=40.0, **BIG)  # head (0, 0) alone: 40 of the heads' 111
    v = claims.conclusion_4a(strong)
    assert v.verdict == FAILS and v.numbers["top low"] > claims.STRONG_SHARE
    assert v.numbers["top head (chosen on the other half)"] == "L1 H1"
    assert claims.conclusion_4a(rec.pruning(**BIG, cover=0.5)).verdict == FAILS  # they saturate


def test_conclusion_4b_can_fail():
    """Old rule: "add up" and "work only together" read from the sets' unsigned share and a
    direction beside it. Now the signed pair interaction decides: additive pairs (0) and saturating
    pairs (-0.5) both lie below the floor, each with its own reading."""
    for factor, word in ((1.0, "add"), (0.5, "saturate")):
        v = claims.conclusion_4b(rec.pruning(**BIG, cover=factor))
        assert v.verdict == FAILS and v.numbers["reading"] == PAIR_READINGS[word]
        assert v.numbers["estimate"] == pytest.approx(factor - 1.0, abs=0.01)
    assert claims.conclusion_4b(rec.pruning(**BIG, cover=1.0)).numbers["high"] < claims.FLOOR_4B


def test_conclusion_4_cannot_tell():
    pr = rec.pruning(**BIG)
    pr.covering = rec.covering(1.05, noise=0.3, **BIG)  # on the floor, and noisy
    near = claims.conclusion_4b(pr)
    assert near.verdict == UNSURE and near.numbers["low"] < claims.FLOOR_4B < near.numbers["high"]
    few = rec.pruning(**BIG)
    few.covering = rec.covering(1.5, n_texts=6, **BIG)
    few_v = claims.conclusion_4b(few)
    assert few_v.verdict == UNSURE and "resampled units" in few_v.numbers["why"]
    nothing = rec.pruning(**BIG)
    nothing.covering.pair_sum_norm = np.zeros_like(nothing.covering.pair_sum_norm)
    assert "alone change nothing" in claims.conclusion_4a(nothing).numbers["why"]
    old = rec.pruning()
    old.covering = cv.Covering.from_record({k: v for k, v in old.covering.to_record().items()
                                            if not k.startswith("pair")})  # saved before the pairs
    for judge in (claims.conclusion_4a, claims.conclusion_4b):
        v = judge(old)
        assert v.verdict == UNSURE and "run it again" in v.numbers["missing"]
    old.covering.interaction_norm = None  # saved before the interaction share
    assert "missing" in claims.conclusion_4b(old).numbers
    old.covering.null_dot = None  # saved before the LayerNorm null
    assert "missing" in claims.conclusion_4b(old).numbers
    old.covering = None
    assert "missing" in claims.conclusion_4a(old).numbers


def test_conclusion_4_claims_say_the_rule():
    """The claim words state the lines the rules use (5% of a pair's summed move, pairs of one layer)."""
    assert claims.ADD_LINE_4A == 0.05 and claims.FLOOR_4B == 0.05 and claims.MOVE_4 == 0.05
    for claim in (claims.WEAK_ADD_CLAIM, claims.COVER_CLAIM):
        assert "two heads of one layer" in claim and "5% of that sum" in claim and "random pairs" in claim
    assert "either way" in claims.WEAK_ADD_CLAIM and "further than their two moves added" in claims.COVER_CLAIM
    assert set(claims.SENSITIVITY["4a"]) == {"margin", "weak", "move"}
    assert set(claims.SENSITIVITY["4b"]) == {"floor", "move"}
    for grid, value in ((claims.SENSITIVITY["4a"]["margin"], claims.ADD_LINE_4A),
                        (claims.SENSITIVITY["4b"]["floor"], claims.FLOOR_4B)):
        assert min(grid) < value < max(grid)


def test_conclusion_5_can_hold():
    v = claims.conclusion_5(rec.head_count({1: [5.3, 5.31, 5.29], 8: [4.9, 4.91, 4.89], 16: [5.0, 5.01, 4.99]}))
    assert v.verdict == HOLDS and v.numbers["best head count"] == 8 and v.numbers["design"] == "fixed width"
    assert v.numbers["best chosen on the other half"] == "8"


def test_conclusion_5_can_fail():
    more_is_better = {1: [5.3, 5.31, 5.29], 8: [5.0, 5.01, 4.99], 16: [4.5, 4.51, 4.49]}
    assert claims.conclusion_5(rec.head_count(more_is_better)).verdict == FAILS
    noisy = {1: [5.0, 4.5, 5.5], 8: [4.9, 4.4, 5.4], 16: [5.0, 4.5, 5.5]}
    assert claims.conclusion_5(rec.head_count(noisy)).verdict == UNSURE


def test_conclusion_5_leaves_out_degenerate_heads_and_says_so():
    """At width 64, 32 heads have size 2: only that point makes "more heads is worse" hold."""
    only_narrow_hurts = {1: [5.3, 5.31, 5.29], 8: [5.0, 5.01, 4.99], 16: [4.5, 4.51, 4.49], 32: [6.0, 6.01, 5.99]}
    v = claims.conclusion_5(rec.head_count(only_narrow_hurts))
    assert v.verdict == FAILS  # among heads of size >= 4, the largest count (16) is the best
    assert v.numbers["verdict with the degenerate point"] == HOLDS
    assert "left out: head size by head count = {32: 2}" in str(v)  # 32 heads of size 2
    assert claims.conclusion_5(rec.head_count(only_narrow_hurts), min_head_size=1).verdict == HOLDS
    fixed_head = claims.conclusion_5(rec.head_count(only_narrow_hurts), design="fixed head size")
    assert "verdict with the degenerate point" not in fixed_head.numbers  # every head has size 8 there


def test_conclusion_5_designs_are_judged_apart():
    narrow_hurts = {1: [5.3, 5.31, 5.29], 8: [4.9, 4.91, 4.89], 16: [5.0, 5.01, 4.99]}
    more_is_better = {1: [5.3, 5.31, 5.29], 8: [5.0, 5.01, 4.99], 16: [4.5, 4.51, 4.49]}
    hc = rec.head_count(narrow_hurts, ppl_fixed_head=more_is_better)
    assert claims.conclusion_5(hc, design="fixed width").verdict == HOLDS
    v = claims.conclusion_5(hc, design="fixed head size")
    assert v.verdict == FAILS and v.numbers["design"] == "fixed head size"
    with pytest.raises(ValueError, match="design"):
        claims.conclusion_5(hc, design="fixed depth")


LAYERED = [["content"] * 6 + ["position"] * 6] * 6  # 6 x 12 heads, half of each layer follows the content


def _by_hand(least_flags, labels):
    """The layer-stratified share difference written out: per layer, the share of non-content heads
    among the least important minus that of content heads, Mantel-Haenszel weights, "cannot tell" out."""
    top = bottom = 0.0
    for flags, row in zip(np.asarray(least_flags), labels):
        other = [f for f, x in zip(flags, row) if x not in ("content", "cannot tell")]
        content = [f for f, x in zip(flags, row) if x == "content"]
        if other and content:
            w = len(other) * len(content) / (len(other) + len(content))
            top += w * (np.mean(other) - np.mean(content))
            bottom += w
    return top / bottom


def test_equivalence_can_hold_and_fail():
    """6a is an equivalence test: it holds when both kinds of heads are equally often least important
    (or non-content heads less often), fails when non-content heads clearly are, and cannot tell when
    the ranking moves with the texts. The interval counts the label assignment (a within-layer
    permutation band), so "holds" needs enough heads for that band to fit inside the margin less
    its floor: 24 layers of 48 heads, a quarter of each layer least important, half of each kind."""
    wide = [["content"] * 24 + ["position"] * 24] * 24
    one_each = np.full((24, 48), 0.5)
    one_each[:, :6] = 0.01  # six content heads per layer ...
    one_each[:, 24:30] = 0.011  # ... and six non-content heads: the 288 least important, half of each kind
    v = claims.conclusion_6a(rec.perturbation(labels=wide, n_layers=24, n_heads=48),
                             rec.pruning(effects=one_each, n_layers=24, n_heads=48))
    assert v.verdict == HOLDS and v.numbers["estimate"] == pytest.approx(0.0, abs=1e-12)
    assert v.numbers["high"] < claims.USEFUL_MARGIN - claims.FLOOR_6A and v.numbers["least important heads"] == 288
    assert v.numbers["estimate"] == pytest.approx(_by_hand(claims.least_important(one_each), wide))
    useless = np.tile(np.r_[np.full(6, 0.5), np.full(6, 0.01)], (6, 1))  # only the content heads matter
    v = claims.conclusion_6a(rec.perturbation(labels=LAYERED, **BIG), rec.pruning(effects=useless, **BIG))
    assert v.verdict == FAILS and v.numbers["low"] > 0
    assert v.numbers["estimate"] == pytest.approx(_by_hand(claims.least_important(useless), LAYERED))
    assert v.numbers["estimate"] == pytest.approx(0.5)  # ties by layer: layers 1-3 give 1, layers 4-6 give 0
    noisy = np.random.default_rng(3).random((6, 12)) * 0.01
    v = claims.conclusion_6a(rec.perturbation(labels=LAYERED, **BIG), rec.pruning(effects=noisy, noise=0.05, **BIG))
    assert v.verdict == UNSURE and v.numbers["low"] < 0 < claims.USEFUL_MARGIN < v.numbers["high"]


def test_conclusion_6a_leaves_unsure_heads_out_and_reads_content_keys():
    labels = [["content"] * 5 + ["cannot tell"] + ["position"] * 6] * 6
    useless = np.tile(np.r_[np.full(5, 0.5), 0.01, np.full(6, 0.01)], (6, 1))
    pert = rec.perturbation(labels=LAYERED, **BIG)
    pert.follower_labels_by_reading = {**pert.follower_labels_by_reading, CONTENT_KEYS: labels}
    v = claims.conclusion_6a(pert, rec.pruning(effects=useless, **BIG))
    assert v.numbers["cannot tell (lesson 06 heads)"] == 6 and v.numbers["content heads"] == 30
    assert v.numbers["estimate"] == pytest.approx(_by_hand(claims.least_important(useless), labels))
    assert "all keys: share difference" in v.numbers


def test_conclusion_6a_holds_depth_fixed():
    """Upper layers are both unimportant and mostly label-free: pooled over layers the label-free heads look
    over-represented among the least important; within each layer they are not."""
    labels = [["content"] * 10 + ["position"] * 2] * 3 + [["content"] * 2 + ["position"] * 10] * 3
    effects = np.tile(np.linspace(1.0, 2.0, 12), (6, 1)) * np.repeat([1.0, 0.01], 3)[:, None]  # (6, 12)
    effects[3:, :2] = 0.001  # within the upper layers the content heads are the least useful
    v = claims.conclusion_6a(rec.perturbation(labels=labels, **BIG), rec.pruning(effects=effects, **BIG))
    assert v.numbers["non-content share of the least important (all heads)"] > 0.5  # pooled: over-represented
    assert v.verdict == HOLDS and v.numbers["estimate"] == pytest.approx(-0.3)  # within layers: less often
    other_shape = claims.conclusion_6a(rec.perturbation(n_layers=3), rec.pruning())
    assert "missing" in other_shape.numbers


@pytest.mark.parametrize("labels", [[["content"] * 4] * 2, [["position"] * 4] * 2,
                                    [["content"] + ["position"] * 3, ["position"] * 4]])
def test_conclusion_6a_cannot_tell_on_an_empty_or_one_head_group(labels):
    v = claims.conclusion_6a(rec.perturbation(labels=labels), rec.pruning())
    assert v.verdict == UNSURE and "too small to compare" in v.numbers["why"]


def test_shuffled_within_layers_keeps_each_layers_count():
    flags = np.array([[True, True, False, False], [True, False, False, False]])
    chosen = np.array([[True, False, False, False], [True, True, False, False]])
    observed, null, p = claims.shuffled_within_layers(flags, chosen, n_shuffles=4000)
    assert observed == pytest.approx(2 / 3)
    # by hand: layer 0 puts a flag on its chosen head with chance 1/2, layer 1 on its two with chance 1/2
    assert null.mean() == pytest.approx((0.5 + 0.5) / 3, abs=0.01)
    assert p == pytest.approx(np.mean(null >= observed - 1e-12), abs=0.01)


def test_conclusion_6b_can_hold():
    v = claims.conclusion_6b(rec.pruning(task_kind="different"))  # the word-start ranking is the family's reversed
    assert v.verdict == HOLDS and v.numbers["estimate"] < -0.9
    assert v.numbers["probe accuracy, family"] == 0.9 and v.numbers["word start from token identity alone"] == 0.7


def test_task_dependence_can_fail():
    """Both "tasks" are one task measured twice: they agree as well as each agrees with itself."""
    v = claims.conclusion_6b(rec.pruning(task_kind="same"))
    assert v.verdict == FAILS and v.numbers["estimate"] > 0.9


def test_correlated_tasks_that_differ_still_agree():
    """Two genuinely different tasks whose rankings share most of their order: they rank the heads
    largely alike, so "depends on the task" does not hold (the old rule only failed identical tasks)."""
    pr = rec.pruning(task_kind="correlated", **BIG)
    truth = claims.conclusion_6b(pr)
    assert truth.verdict == FAILS and truth.numbers["low"] > claims.TASK_MARGIN
    halves, across = claims.task_evidence(pr)
    assert across.high < min(h.low for h in halves.values())  # the old rule: agree less than each with itself


def test_probe_refit_noise_is_counted():
    """One task whose rankings move with the probe's training sample: each fixed probe is stable over
    queries (split-half near 1), so two probes of the same task look like two different tasks to a
    split-half rule; counting the refits' noise, the tasks agree once that noise is divided out."""
    pr = rec.pruning(task_kind="same", **BIG)
    pr.tasks = rec.tasks("same", probe_noise=0.3, noise=0.02, **BIG)
    halves, across = claims.task_evidence(pr)
    assert min(h.low for h in halves.values()) > 0.95 and across.high < 0.9  # the old rule would say "holds"
    v = claims.conclusion_6b(pr)
    assert v.verdict != HOLDS and v.numbers["high"] > claims.TASK_MARGIN
    refit = pr.tasks.refit_agreements()
    assert refit["reliability a"].estimate < 0.9  # the refits disagree: the probe's sample counts
    # by hand: the disattenuated agreement is the cross-task agreement over the square root of the reliabilities,
    # capped at 1; its interval counts the refits' noise, so it covers the true agreement, 1 (it once gave
    # 1.09 [1.076, 1.102], counting the queries' noise only)
    assert refit["disattenuated"].estimate == pytest.approx(min(1.0,
        refit["across"].estimate / np.sqrt(refit["reliability a"].estimate * refit["reliability b"].estimate)))
    assert refit["disattenuated"].contains(1.0) and refit["disattenuated"].high <= 1.0
    noisier = rec.pruning(task_kind="same", **BIG)
    noisier.tasks = rec.tasks("same", probe_noise=30.0, **BIG)  # the refits share almost nothing
    assert claims.conclusion_6b(noisier).verdict == UNSURE


def test_conclusion_6b_cannot_tell():
    assert claims.conclusion_6b(rec.pruning(task_kind="different", task_noise=3.0)).verdict == UNSURE  # unstable
    at_chance = rec.pruning()
    at_chance.tasks.accuracy["family"] = 0.3  # no better than the commonest family
    v = claims.conclusion_6b(at_chance)
    assert v.verdict == UNSURE and "commonest label" in v.numbers["why"]
    old = rec.pruning()
    old.tasks.refit_costs = {}
    assert "missing" in claims.conclusion_6b(old).numbers
    old.tasks = None
    assert "missing" in claims.conclusion_6b(old).numbers


SIX_USEFUL = np.array([[0.1, 0.9, 0.8, 0.7], [0.1, 0.8, 0.9, 0.6]])  # the content heads are the least useful
SIX_LABELS = [["content", "position", "position", "neither"]] * 2


def test_conclusion_6_can_hold():
    v = claims.conclusion_6(rec.perturbation(labels=SIX_LABELS), rec.pruning(effects=SIX_USEFUL))
    assert v.verdict == HOLDS and v.numbers["6b: estimate"] < -0.9


def test_conclusion_6_can_fail():
    v = claims.conclusion_6(rec.perturbation(labels=SIX_LABELS), rec.pruning(effects=SIX_USEFUL, task_kind="same"))
    assert v.verdict == FAILS and v.numbers["not useless (6a)"] == HOLDS  # one half failing sinks it


def test_conclusion_6_cannot_tell():
    v = claims.conclusion_6(rec.perturbation(labels=SIX_LABELS), rec.pruning(effects=SIX_USEFUL, task_noise=3.0))
    assert v.verdict == UNSURE and v.numbers["depends on the task (6b)"] == UNSURE


def test_fixed_share_gap_says_why_when_a_group_is_empty():
    avg = rec.averaging(0.5)  # the first 4 of 8 heads (layer 0) are fixed
    labels = [["content", "position", "position", "neither"], ["content", "content", "position", "neither"]]
    diff, p, why = claims.fixed_share_gap(avg, rec.perturbation(labels=labels))
    assert why is None and diff == pytest.approx(1 / 3 - 3 / 5) and 0 < p <= 1  # 1 of 3 content vs 3 of 5 others
    diff, p, why = claims.fixed_share_gap(avg, rec.perturbation(labels=[["position"] * 4] * 2))
    assert np.isnan(diff) and np.isnan(p) and "too small to compare" in why


def test_missing_evidence_cannot_tell():
    verdicts = c.all_conclusions(c.Evidence())
    assert list(verdicts) == list(c.LABELS)
    assert [v.verdict for v in verdicts.values()] == [UNSURE] * len(c.LABELS)
    assert all("missing" in v.numbers for k, v in verdicts.items() if k != "6")
    assert AveragingResult.file_name in verdicts["1"].numbers["missing"]


def test_all_conclusions_judge_the_full_evidence():
    labels = [["content", "position", "position", "neither"] * 3] * 6
    useful = np.tile([0.01, 0.02, 0.015, 0.012], (6, 3))
    ev = rec.evidence(averaging=rec.averaging(0.9, **BIG), perturbation=rec.perturbation(0.05, **BIG))
    assert c.data_verdicts(ev)["1"].verdict == HOLDS  # the data's verdict, before the untrained twin
    full = rec.evidence(perturbation=rec.perturbation(labels=labels, **BIG), pruning=rec.pruning(effects=useful, **BIG))
    rows = c.data_verdicts(full)
    assert [rows[k].verdict for k in ("2", "3a", "3b", "4b", "5a", "5b", "6a", "6b")] == [HOLDS] * 8
    assert rows["4a"].verdict == FAILS  # the default planted heads cover for one another: not additive
    verdicts = c.all_conclusions(full)  # no twin: every "holds" about the model waits for one
    assert [verdicts[k].verdict for k in ("2", "3a", "3b", "4b", "6")] == [UNSURE] * 5
    assert verdicts["4a"].verdict == FAILS and verdicts["5a"].verdict == HOLDS  # 5a: not about the model
    assert verdicts["3b"].claim == claims.CLAIMS[3] and verdicts["6"].claim == claims.CLAIMS[6]


def test_all_conclusions_cannot_tell_when_lesson_06_labels_every_head_alike():
    """A bert-base-chinese run whose 144 heads lesson 06 labelled alike: no crash, "cannot tell"."""
    shape = {"n_layers": 12, "n_heads": 12}
    alike = [["neither"] * 12] * 12
    ev = rec.evidence(averaging=rec.averaging(0.9, **shape), perturbation=rec.perturbation(labels=alike, **shape),
                      pruning=rec.pruning(**shape))
    verdicts = c.all_conclusions(ev)
    assert verdicts["6"].verdict == UNSURE and verdicts["6"].numbers["not useless (6a)"] == UNSURE
    assert "too small to compare" in verdicts["6"].numbers["6a: why"]
    assert np.isnan(claims.fixed_share_gap(ev.averaging, ev.perturbation)[0])


def test_gather_reads_saved_records_and_reruns_missing(tmp_path, monkeypatch, tiny_en):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    monkeypatch.delenv("ATTNLAB_SMOKE", raising=False)
    shape = {"n_layers": tiny_en.n_layers, "n_heads": tiny_en.n_heads}
    results.save(PerturbationResult.file_name, rec.perturbation(0.2, **shape), model=tiny_en)
    results.save(AveragingResult.file_name, rec.averaging(**shape), model="another model")  # not used
    ran = []

    def runner(name, m):
        ran.append(name)
        if name == AveragingResult.file_name:
            results.save(name, rec.averaging(0.5, **shape), model=m)

    ev = c.gather(tiny_en, runner=runner, progress=False)
    assert ran == [r.name for r in RERUN if r.kind is not PerturbationResult]
    assert ev.origin[PerturbationResult.file_name] == "saved"
    assert ev.origin[AveragingResult.file_name] == "recomputed"
    assert ev.origin[DiversityResult.file_name] == "missing"
    assert isinstance(ev.perturbation, PerturbationResult) and ev.perturbation.content_follower_share == 0.2
    assert len(ev.averaging.fixed_heads) == round(0.5 * tiny_en.n_layers * tiny_en.n_heads)
    assert ev.diversity is None and "missing" in ev.table()
    read_only = c.gather(tiny_en, progress=False)  # no runner: nothing is re-run
    assert read_only.origin[DiversityResult.file_name] == "missing" and len(ran) == 5


def test_conclusions_result_round_trips(tmp_path, monkeypatch, tiny_en):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    verdicts = c.all_conclusions(rec.evidence())
    record = ConclusionsResult(verdicts=list(verdicts.values()), evidence_origin={"x": "saved"},
                               labels=list(verdicts))
    results.save(ConclusionsResult.file_name, record, model=tiny_en)
    back = results.load(ConclusionsResult.file_name, ConclusionsResult, model=tiny_en)
    assert [v.verdict for v in back.verdicts] == [v.verdict for v in verdicts.values()]
    assert back.labels == list(c.LABELS) and back.evidence_origin == {"x": "saved"}


@pytest.mark.usefixtures("attempts_folder")  # the checkers save attempts: in a folder of the test's own
def test_lesson_12_exercises():
    ev = rec.evidence(averaging=rec.averaging(0.75, **BIG), perturbation=rec.perturbation(0.3, **BIG),
                      diversity=rec.diversity((3.0, 2.0, 1.0)))
    assert ex12.check_fixed_share(ev, sol12.solution_fixed_share(ev))
    assert sol12.solution_fixed_share(ev) == pytest.approx(54 / 72)
    assert not ex12.check_fixed_share(ev, 0.5)
    # 30% of 72 follow content: beyond "a few" (0.25), but within its floor (0.1) of the line
    assert claims.conclusion_1(ev.averaging, ev.perturbation).verdict == UNSURE
    assert claims.conclusion_1(ev.averaging, ev.perturbation, floor=0.0).verdict == FAILS
    assert sol12.solution_rejudge(ev) == HOLDS  # but clearly "at most half"
    assert ex12.check_rejudge(ev, HOLDS) and not ex12.check_rejudge(ev, FAILS)
    assert sol12.solution_most_diverse_layer(ev) == 1
    assert not ex12.check_most_diverse_layer(ev, 3)
    assert not ex12.check_fixed_share(ev, None)
    with pytest.raises(ValueError, match="08_layer_averaging"):
        sol12.solution_fixed_share(c.Evidence())


def test_row_titles_name_the_readings():
    assert c.row_titles(c.LABELS) == ["1", "2", "3a (onto itself)", "3b (onto one token)", "4a (weak and additive)",
                                      "4b (covering)", "5a (fixed width)",
                                      "5b (fixed head size)", "6"]


def test_the_figure_shows_the_number_each_verdict_was_decided_on():
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.viz.conclusions_plots import plot_verdicts

    labels = [["content", "position", "position", "neither"] * 3] * 6
    ev = rec.evidence(perturbation=rec.perturbation(labels=labels, **BIG), pruning=rec.pruning(**BIG))
    verdicts = c.all_conclusions(ev)
    four = verdicts["4b"].numbers
    assert c.deciding_number(verdicts["4b"]) == (f"mean pair interaction of two heads of one layer, signed "
                                                 f"{four['estimate']:.3g} [{four['low']:.3g}, {four['high']:.3g}]")
    six = c.deciding_number(verdicts["6"])
    assert six.startswith("6a: share difference among the least important heads") and "; 6b: rank agreement" in six
    assert c.deciding_number(verdicts["3a"]).startswith("change ")  # lesson 10's own key names
    five = verdicts["5a"].numbers  # the gap between the most heads and the best, and the margin that makes it clear
    assert c.deciding_number(verdicts["5a"]).startswith("perplexity at ")
    assert five["low"] <= five["estimate"] <= five["high"]
    assert (five["low"] > 0) == (verdicts["5a"].verdict == HOLDS)
    assert "run that lesson" in c.deciding_number(c.all_conclusions(c.Evidence())["4a"])
    details = [c.deciding_number(v) for v in verdicts.values()]
    fig = plot_verdicts(list(verdicts.values()), c.VERDICT_COLOURS, labels=c.row_titles(verdicts), details=details)
    drawn = [t.get_text() for t in fig.axes[0].texts]
    assert any(c.deciding_number(verdicts["4b"]) in t for t in drawn)
    assert [t for t in drawn if t in (HOLDS, FAILS, UNSURE)] == [v.verdict for v in verdicts.values()]


def test_evidence_table_names_the_origin_in_the_readers_language():
    ev = c.Evidence()
    ev.origin = {PerturbationResult.file_name: "saved", AveragingResult.file_name: "recomputed"}
    before = language.current_language()
    try:
        language.set_language("en")
        english = ev.table().splitlines()
        language.set_language("zh")
        chinese = ev.table().splitlines()
    finally:
        language.set_language(before)
    assert len(english) == len(chinese) == len(RERUN)
    words = {line.split()[0]: line.split()[-1] for line in english}
    shown = {line.split()[0]: line.split()[-1] for line in chinese}
    assert words[PerturbationResult.file_name] == "saved" and shown[PerturbationResult.file_name] == "已保存"
    assert shown[AveragingResult.file_name] == "重新计算"
    assert shown[DiversityResult.file_name] == "缺失" and words[DiversityResult.file_name] == "missing"
    assert c.origin_word("elsewhere") == "elsewhere"
