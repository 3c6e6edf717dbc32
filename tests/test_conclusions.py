"""Lesson 12's verdicts are computed from the saved evidence, not written in advance."""

from __future__ import annotations

import numpy as np
import pytest

import lesson_records as rec  # tests/lesson_records.py
from attnlab.course import conclusions as c
from attnlab.course import results
from attnlab.course.claims import conclusions as claims
from attnlab.course.exercises import lesson_12 as ex12
from attnlab.course.lesson_results import (
    RESULT_NAMES,
    AveragingResult,
    ConclusionsResult,
    DiversityResult,
    PerturbationResult,
)
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE

LABELS = [["content", "position", "position", "neither"], ["content"] * 4]


def test_conclusion_1_can_hold():
    v = claims.conclusion_1(rec.averaging(0.8), rec.perturbation(0.1), rec.patterns(0.6))
    assert v.verdict == HOLDS
    assert v.numbers["fixed heads (lesson 08)"] == pytest.approx(0.75)  # round(0.8 * 8) = 6 of 8 heads
    assert v.numbers["fixed-pattern labels (lesson 05)"] == pytest.approx(0.6)


def test_conclusion_1_can_fail():
    assert claims.conclusion_1(rec.averaging(0.8), rec.perturbation(0.6)).verdict == FAILS  # many content heads
    assert claims.conclusion_1(rec.averaging(0.25), rec.perturbation(0.1)).verdict == FAILS  # few fixed heads
    assert claims.conclusion_1(rec.averaging(0.5), rec.perturbation(0.1)).verdict == FAILS  # half is not most


def test_conclusion_2_can_hold():
    v = claims.conclusion_2(rec.diversity((3.0, 2.0, 1.0)), rec.averaging(slope=0.2))
    assert v.verdict == HOLDS
    assert v.numbers["slope per layer"] == pytest.approx(-1.0)
    assert v.numbers["fixedness slope per layer (lesson 08)"] == pytest.approx(0.2)


def test_conclusion_2_can_fail():
    assert claims.conclusion_2(rec.diversity((1.0, 2.0, 3.0))).verdict == FAILS
    assert claims.conclusion_2(rec.diversity((1.0, 1.0, 1.0))).verdict == UNSURE  # interval straddles 0


def test_conclusion_3_can_hold():
    v = claims.conclusion_3(rec.head_count())
    assert v.verdict == HOLDS and v.numbers["focus token at 2"] == "self"


def test_conclusion_3_can_fail():
    flatter = [rec.group(4, 0.2, 0.3, 0.5), rec.group(2, 0.15, 0.2, 0.9)]
    assert claims.conclusion_3(rec.head_count(regroup=flatter)).verdict == FAILS
    no_two = [rec.group(4, 0.2, 0.3, 0.5)]
    assert "missing" in claims.conclusion_3(rec.head_count(regroup=no_two)).numbers


def test_conclusion_4_can_hold():
    v = claims.conclusion_4(rec.pruning(prune_max=0.5))  # every head costs 0.01 alone, all together 0.5
    assert v.verdict == HOLDS
    assert v.numbers["largest loss increase when pruning many (D)"] == pytest.approx(0.5)
    assert v.numbers["single / D"] == pytest.approx(0.02)


def test_conclusion_4_can_fail():
    one_strong = np.full((2, 4), 0.01)
    one_strong[1, 2] = 0.4
    assert claims.conclusion_4(rec.pruning(effects=one_strong, prune_max=0.5)).verdict == FAILS
    barely = np.full((2, 4), 0.0001)
    assert claims.conclusion_4(rec.pruning(effects=barely, prune_max=0.01)).verdict == FAILS  # heads barely matter
    middle = np.full((2, 4), 0.01)
    middle[0, 0] = 0.2  # between weak (0.125) and strong (0.25) x D = 0.5
    assert claims.conclusion_4(rec.pruning(effects=middle, prune_max=0.5)).verdict == UNSURE


def test_conclusion_5_can_hold():
    v = claims.conclusion_5(rec.head_count({1: [5.3, 5.31, 5.29], 8: [4.9, 4.91, 4.89], 32: [5.0, 5.01, 4.99]}))
    assert v.verdict == HOLDS and v.numbers["best head count"] == 8


def test_conclusion_5_can_fail():
    more_is_better = {1: [5.3, 5.31, 5.29], 8: [5.0, 5.01, 4.99], 32: [4.5, 4.51, 4.49]}
    assert claims.conclusion_5(rec.head_count(more_is_better)).verdict == FAILS
    noisy = {1: [5.0, 4.5, 5.5], 8: [4.9, 4.4, 5.4], 32: [5.0, 4.5, 5.5]}
    assert claims.conclusion_5(rec.head_count(noisy)).verdict == UNSURE


def test_conclusion_6_can_hold():
    useful_positional = np.array([[0, 0.9, 0, 0], [0, 0, 0, 0]])
    v = claims.conclusion_6(rec.perturbation(labels=LABELS), rec.pruning(effects=useful_positional))
    assert v.verdict == HOLDS and v.numbers["examples"].startswith("L1 H2")


def test_conclusion_6_can_fail():
    useful_content = np.array([[0.9, 0, 0, 0], [0.8, 0, 0, 0]])
    assert claims.conclusion_6(rec.perturbation(labels=LABELS), rec.pruning(effects=useful_content)).verdict == FAILS
    all_content = [["content"] * 4] * 2
    assert claims.conclusion_6(rec.perturbation(labels=all_content), rec.pruning()).verdict == UNSURE
    other_shape = claims.conclusion_6(rec.perturbation(n_layers=3), rec.pruning())
    assert "missing" in other_shape.numbers


def test_missing_evidence_cannot_tell():
    verdicts = c.all_conclusions(c.Evidence())
    assert [v.verdict for v in verdicts] == [UNSURE] * 6
    assert all("missing" in v.numbers for v in verdicts)
    assert RESULT_NAMES[AveragingResult] in verdicts[0].numbers["missing"]


def test_all_conclusions_judge_the_full_evidence():
    verdicts = c.all_conclusions(rec.evidence())
    assert [v.verdict for v in verdicts] == [HOLDS] * 6
    assert [v.claim for v in verdicts] == [claims.CLAIMS[i] for i in range(1, 7)]


def test_gather_reads_saved_records_and_reruns_missing(tmp_path, monkeypatch, tiny_en):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    monkeypatch.delenv("ATTNLAB_SMOKE", raising=False)
    shape = {"n_layers": tiny_en.n_layers, "n_heads": tiny_en.n_heads}
    results.save(RESULT_NAMES[PerturbationResult], rec.perturbation(0.2, **shape), model=tiny_en)
    results.save(RESULT_NAMES[AveragingResult], rec.averaging(**shape), model="another model")  # not used
    ran = []

    def runner(name, m):
        ran.append(name)
        if name == RESULT_NAMES[AveragingResult]:
            results.save(name, rec.averaging(0.5, **shape), model=m)

    ev = c.gather(tiny_en, runner=runner, progress=False)
    assert ran == [RESULT_NAMES[k] for k in c.SOURCES if k is not PerturbationResult]
    assert ev.origin[RESULT_NAMES[PerturbationResult]] == "saved"
    assert ev.origin[RESULT_NAMES[AveragingResult]] == "recomputed"
    assert ev.origin[RESULT_NAMES[DiversityResult]] == "missing"
    assert isinstance(ev.perturbation, PerturbationResult) and ev.perturbation.content_follower_share == 0.2
    assert len(ev.averaging.fixed_heads) == round(0.5 * tiny_en.n_layers * tiny_en.n_heads)
    assert ev.diversity is None and "missing" in ev.table()
    read_only = c.gather(tiny_en, progress=False)  # no runner: nothing is re-run
    assert read_only.origin[RESULT_NAMES[DiversityResult]] == "missing" and len(ran) == 5


def test_conclusions_result_round_trips(tmp_path, monkeypatch, tiny_en):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    record = ConclusionsResult(verdicts=c.all_conclusions(rec.evidence()), evidence_origin={"x": "saved"})
    results.save(RESULT_NAMES[ConclusionsResult], record, model=tiny_en)
    back = results.load(RESULT_NAMES[ConclusionsResult], ConclusionsResult, model=tiny_en)
    assert [v.verdict for v in back.verdicts] == [HOLDS] * 6 and back.evidence_origin == {"x": "saved"}


def test_lesson_12_exercises():
    ev = rec.evidence(averaging=rec.averaging(0.75), perturbation=rec.perturbation(0.4),
                      diversity=rec.diversity((3.0, 2.0, 1.0)))
    assert ex12.check_fixed_share(ev, ex12.solution_fixed_share(ev))
    assert ex12.solution_fixed_share(ev) == pytest.approx(0.75)
    assert not ex12.check_fixed_share(ev, 0.5)
    assert ex12.solution_rejudge(ev) == HOLDS  # 40% content heads is "at most half"
    assert ex12.check_rejudge(ev, HOLDS) and not ex12.check_rejudge(ev, FAILS)
    assert ex12.solution_most_diverse_layer(ev) == 1
    assert not ex12.check_most_diverse_layer(ev, 3)
    assert not ex12.check_fixed_share(ev, None)
    with pytest.raises(ValueError, match="08_layer_averaging"):
        ex12.solution_fixed_share(c.Evidence())
