"""The claims of lessons 05-07 on constructed evidence: each can hold, can fail, and
can stay undecided; and the lesson results they end up in survive a save and a load."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.compare import PerturbationStudy
from attnlab.analysis.stats import Interval, bootstrap_correlation
from attnlab.analysis.taxonomy import HeadLabels
from attnlab.course import results
from attnlab.course.claims import head_patterns, perturbation, position
from attnlab.course.lesson_results import HeadPatternsResult, PerturbationResult, PositionResult
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE

# --------------------------------------------------------------------------- lesson 05


def _labels(n_fixed: int, n_hetero: int, n_heads: int = 12) -> HeadLabels:
    """One layer of ``n_heads`` heads: ``n_fixed`` fixed-pattern, ``n_hetero`` heterogeneous, the rest broad."""
    fixed = ["self", "previous", "next", "vertical"]
    names = [fixed[i % 4] for i in range(n_fixed)] + ["heterogeneous"] * n_hetero
    names += ["broad"] * (n_heads - len(names))
    arr = np.array([names])
    return HeadLabels(labels=arr, reasons=np.full(arr.shape, ""), stats=None)  # type: ignore[arg-type]


def test_verdict_most_heads_fixed_can_hold():
    v = head_patterns.verdict_most_heads_fixed(_labels(9, 2))
    assert v.verdict == HOLDS
    assert v.numbers["fixed_share"] == pytest.approx(9 / 12)
    assert v.numbers["heterogeneous_share"] == pytest.approx(2 / 12)
    assert v.numbers["broad_share"] == pytest.approx(1 / 12) and v.numbers["heads"] == 12


def test_verdict_most_heads_fixed_can_fail():
    v = head_patterns.verdict_most_heads_fixed(_labels(3, 8))
    assert v.verdict == FAILS and v.numbers["fixed_share"] == pytest.approx(0.25)


def test_verdict_most_heads_fixed_near_one_half_cannot_tell():
    assert head_patterns.verdict_most_heads_fixed(_labels(6, 6)).verdict == UNSURE
    # 6.5 / 12 would be 0.54: inside the margin too; a wider margin makes 9 / 12 undecided
    assert head_patterns.verdict_most_heads_fixed(_labels(9, 2), margin=0.3).verdict == UNSURE


# --------------------------------------------------------------------------- lesson 06


def _study(change_pos: np.ndarray, change_tok: np.ndarray, n: int = 40, seed: int = 0) -> PerturbationStudy:
    """A study of one layer: per head, a typical change (1 - similarity) in each space, with small noise."""
    rng = np.random.default_rng(seed)
    heads = len(change_pos)
    sims = {}
    for space, change in (("position", change_pos), ("token", change_tok)):
        noise = rng.normal(0, 0.01, size=(n, 1, heads))
        sims[space] = {k: np.clip(1 - np.asarray(change)[None, None, :] + noise, 0, 1)
                       for k in ("lexical", "syntactic", "both")}
    return PerturbationStudy(sims["position"], sims["token"], ["q"] * n,
                             {k: ["q"] * n for k in ("lexical", "syntactic", "both")})


def test_changing_heads():
    study = _study(np.array([0.02, 0.3, 0.5, 0.05]), np.full(4, 0.02))
    np.testing.assert_array_equal(perturbation.changing_heads(study, "lexical", n_boot=200),
                                  [[False, True, True, False]])
    np.testing.assert_array_equal(perturbation.changing_heads(study, "lexical", threshold=0.4, n_boot=200),
                                  [[False, False, True, False]])


def test_verdict_few_heads_change_can_hold():
    # one head of twelve changes and follows the content; the others keep their map
    pos = np.full(12, 0.02)
    pos[3] = 0.4
    tok = np.full(12, 0.02)
    study = _study(pos, tok)
    v = perturbation.verdict_few_heads_change(study, n_boot=200)
    assert v.verdict == HOLDS
    assert v.numbers["share_changing_lexical"] == pytest.approx(1 / 12)
    assert v.numbers["share_content_followers"] == pytest.approx(1 / 12)
    assert v.numbers["queries"] == 40


def test_verdict_few_heads_change_can_fail():
    # every head changes in position space and keeps its map in token space: all follow the content
    study = _study(np.full(8, 0.5), np.full(8, 0.02))
    v = perturbation.verdict_few_heads_change(study, n_boot=200)
    assert v.verdict == FAILS
    assert v.numbers["share_changing_syntactic"] == pytest.approx(1.0)
    assert v.numbers["share_content_followers"] == pytest.approx(1.0)


def test_verdict_few_heads_change_in_between_or_missing():
    pos = np.full(8, 0.02)
    pos[:3] = 0.4  # 3 of 8 heads = 0.375: more than a few, not a majority
    v = perturbation.verdict_few_heads_change(_study(pos, np.full(8, 0.02)), n_boot=200)
    assert v.verdict == UNSURE
    only_both = PerturbationStudy({"both": np.ones((3, 1, 2))}, {"both": np.ones((3, 1, 2))}, ["q"] * 3, {})
    missing = perturbation.verdict_few_heads_change(only_both, n_boot=50)
    assert missing.verdict == UNSURE and "missing" in missing.numbers


# --------------------------------------------------------------------------- lesson 07


def test_verdict_invariant_heads_are_positional_can_hold():
    rng = np.random.default_rng(0)
    unchanged = rng.uniform(0.5, 1.0, size=(4, 12))
    change = 0.8 * unchanged + rng.normal(0, 0.03, size=(4, 12))  # the steadier, the more positional
    corr = bootstrap_correlation(unchanged, change, n_boot=500)
    v = position.verdict_invariant_heads_are_positional(corr)
    assert v.verdict == HOLDS
    assert v.numbers["r"] == pytest.approx(corr.estimate) and v.numbers["heads"] == 48
    assert v.numbers["low"] > 0


def test_verdict_invariant_heads_are_positional_can_fail():
    rng = np.random.default_rng(1)
    unchanged = rng.uniform(0.5, 1.0, size=(4, 12))
    change = -unchanged + rng.normal(0, 0.03, size=(4, 12))  # the opposite link
    v = position.verdict_invariant_heads_are_positional(bootstrap_correlation(unchanged, change, n_boot=500))
    assert v.verdict == FAILS and v.numbers["r"] < 0


def test_verdict_invariant_heads_are_positional_weak_evidence_cannot_tell():
    # strong enough but the interval reaches below 0; or above 0 but weaker than STRONG, with room above it
    for estimate, low, high in ((0.35, -0.1, 0.7), (0.2, 0.05, 0.5)):
        corr = Interval(estimate, low, high, 0.95, 48)
        assert position.verdict_invariant_heads_are_positional(corr).verdict == UNSURE
    assert position.verdict_invariant_heads_are_positional(Interval(0.2, 0.05, 0.5, 0.95, 48),
                                                           strong=0.1).verdict == HOLDS


def test_article_heads_are_the_articles_numbers():
    # the article's 1-based heads 7 and 9 (lesson 06), and 5, 7, 9, 12 (lesson 07)
    assert [h + 1 for h in perturbation.ARTICLE_HEADS] == [7, 9]
    assert [h + 1 for h in position.ARTICLE_HEADS] == [5, 7, 9, 12]


# --------------------------------------------------------------------------- saved results


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    monkeypatch.delenv("ATTNLAB_SMOKE", raising=False)
    return tmp_path


def test_lesson_results_survive_a_save_and_a_load(results_dir, tiny_en):
    labels = _labels(9, 2)
    v05 = head_patterns.verdict_most_heads_fixed(labels)
    r05 = HeadPatternsResult(n_inputs=30, labels=labels.labels.tolist(), label_counts=labels.counts(),
                             fixed_share=0.75, verdict=v05, fixed_share_by_layer=np.array([0.75]),
                             depth_spearman=float("nan"), zoo={"self": [0, 0]},
                             threshold_verdicts={"positional=0.5 special=0.6": v05.verdict},
                             stats={"self_mass": np.eye(2)})
    study = _study(np.full(4, 0.02), np.full(4, 0.02))
    r06 = PerturbationResult(n_queries=40, chosen_layer=0,
                             verdict=perturbation.verdict_few_heads_change(study, n_boot=50),
                             follower_labels=study.followers(n_boot=50).tolist(),
                             position_follower_share=0.0, content_follower_share=0.0,
                             unchanged=study.unchanged(),
                             sensitivity={"lexical_position": study.sensitivity("lexical", n_boot=50).estimate})
    corr = bootstrap_correlation(np.arange(5.0), np.arange(5.0) ** 2, n_boot=50)
    r07 = PositionResult(n_queries=40, chosen_layer=0, change=np.ones((1, 4)),
                         verdict=position.verdict_invariant_heads_are_positional(corr), correlation=corr)
    for record in (r05, r06, r07):
        name = f"result_{type(record).__name__}"
        results.save(name, record, model=tiny_en)
        back = results.load(name, type(record), model=tiny_en)
        assert type(back) is type(record) and back.verdict.verdict == record.verdict.verdict
    back05 = results.load("result_HeadPatternsResult", HeadPatternsResult, model=tiny_en)
    assert back05.fixed_share == 0.75 and back05.zoo == {"self": [0, 0]} and np.isnan(back05.depth_spearman)
    np.testing.assert_array_equal(back05.stats["self_mass"], np.eye(2))
    back06 = results.load("result_PerturbationResult", PerturbationResult, model=tiny_en)
    np.testing.assert_allclose(back06.unchanged, study.unchanged())
    np.testing.assert_allclose(back06.sensitivity["lexical_position"], r06.sensitivity["lexical_position"])
    back07 = results.load("result_PositionResult", PositionResult, model=tiny_en)
    assert back07.correlation.estimate == pytest.approx(1.0) and back07.correlation.n == 5
    assert back07.follower_gap_correlation is None and back07.change_low is None
