"""Lesson 10's claims, judged on constructed evidence whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.regroup import GroupSummary
from attnlab.course.claims.head_count import (
    VASWANI_ROW_A,
    clearly_above,
    verdict_fewer_heads_collapse,
    verdict_head_count,
    verdict_more_heads_not_always_better,
    what_this_can_show,
)
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.scratch.head_count_training import HeadCountStudy, LookupLanguage, RunResult, TrainConfig


def _summary(n_groups, self_mass, cls_mass, entropy_ratio) -> GroupSummary:
    return GroupSummary(n_groups, self_mass, cls_mass, 0.0, entropy_ratio, 0.5)


def test_fewer_heads_collapse_can_hold():
    onto_self = {12: _summary(12, 0.2, 0.3, 0.6), 2: _summary(2, 0.7, 0.1, 0.3)}
    v = verdict_fewer_heads_collapse(onto_self, n_heads=12)
    assert v.verdict == HOLDS and v.numbers["focus token at 2"] == "self"
    assert v.numbers["focus at 12 heads"] == pytest.approx(0.3) and v.numbers["focus at 2"] == pytest.approx(0.7)


def test_fewer_heads_collapse_can_fail():
    flatter = {12: _summary(12, 0.2, 0.3, 0.5), 2: _summary(2, 0.15, 0.2, 0.9)}
    assert verdict_fewer_heads_collapse(flatter, n_heads=12).verdict == FAILS
    less_focused = {12: _summary(12, 0.2, 0.5, 0.5), 2: _summary(2, 0.2, 0.3, 0.5)}
    assert verdict_fewer_heads_collapse(less_focused, n_heads=12).verdict == FAILS
    same = {12: _summary(12, 0.2, 0.3, 0.5), 2: _summary(2, 0.21, 0.31, 0.5)}
    assert verdict_fewer_heads_collapse(same, n_heads=12).verdict == UNSURE
    assert "missing" in verdict_fewer_heads_collapse(same, n_heads=12, target=3).numbers


VASWANI_LIKE = {1: [5.3, 5.31, 5.29], 4: [5.0, 5.01, 4.99], 8: [4.92, 4.93, 4.91], 32: [5.01, 5.02, 5.0]}
MORE_IS_BETTER = {1: [5.3, 5.31, 5.29], 4: [5.0, 5.01, 4.99], 8: [4.8, 4.81, 4.79], 32: [4.5, 4.51, 4.49]}
NOISY = {1: [5.3, 4.0, 6.0], 4: [5.0, 6.0, 4.0], 8: [4.9, 5.9, 4.1], 32: [5.0, 4.0, 6.1]}


def test_head_count_can_hold():
    v = verdict_head_count(VASWANI_LIKE)
    assert v.verdict == HOLDS and v.numbers["best h"] == 8
    assert v.numbers["mean perplexity"][1] == pytest.approx(5.3)
    # Vaswani et al.'s own means pass too, once given a small spread
    published = {h: [ppl - 0.001, ppl, ppl + 0.001] for h, (ppl, _bleu) in VASWANI_ROW_A.items()}
    assert verdict_head_count(published).verdict == HOLDS


def test_head_count_can_fail():
    v = verdict_head_count(MORE_IS_BETTER)
    assert v.verdict == FAILS and v.numbers["best h"] == 32
    assert verdict_head_count(NOISY).verdict == UNSURE
    assert verdict_head_count({1: [5.3], 4: [5.0], 32: [5.1]}).verdict == UNSURE  # one seed: no spread
    assert "missing" in verdict_head_count({1: [5.0, 5.1], 2: [4.0, 4.1]}).numbers


def test_more_heads_not_always_better_can_hold():
    v = verdict_more_heads_not_always_better(VASWANI_LIKE)
    assert v.verdict == HOLDS and v.numbers["best head count"] == 8


def test_more_heads_not_always_better_can_fail():
    assert verdict_more_heads_not_always_better(MORE_IS_BETTER).verdict == FAILS
    assert verdict_more_heads_not_always_better(NOISY).verdict == UNSURE


def test_clearly_above_is_two_standard_errors():
    a, b = np.array([5.0, 5.2, 5.4]), np.array([4.0, 4.2, 4.4])
    se = np.sqrt(a.var(ddof=1) / 3 + b.var(ddof=1) / 3)  # 0.163
    assert clearly_above(a, b) and not clearly_above(b, a)
    assert clearly_above(a, b, n_se=(1.0 - 1e-9) / se) and not clearly_above(a, b, n_se=(1.0 + 1e-9) / se)
    assert not clearly_above([5.0], [4.0])  # no spread to judge by


def test_what_this_can_show_reads_the_spread():
    runs = [RunResult(h, s, [1], [0.0], [0.0], p, 0.5, 100, 0.0) for h, ps in VASWANI_LIKE.items()
            for s, p in enumerate(ps)]
    text = what_this_can_show(HeadCountStudy(runs, LookupLanguage(), TrainConfig(), list(VASWANI_LIKE)))
    assert "several seed spreads" in text
    one_seed = [RunResult(h, 0, [1], [0.0], [0.0], 5.0, 0.5, 100, 0.0) for h in (1, 2)]
    assert "One seed" in what_this_can_show(HeadCountStudy(one_seed, LookupLanguage(), TrainConfig(), [1, 2]))
