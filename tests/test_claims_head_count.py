"""Lesson 10's claims, judged on constructed evidence whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.regroup import FIRST_SPECIAL, GroupSummary
from attnlab.course.claims.head_count import (
    COLLAPSE_MARGIN,
    VASWANI_ROW_A,
    clearly_above,
    verdict_fewer_heads_collapse,
    verdict_self_collapse,
    verdict_head_count,
    verdict_more_heads_not_always_better,
    what_this_can_show,
)
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.scratch.head_count_training import HeadCountStudy, LookupLanguage, RunResult, TrainConfig


def _summary(n_groups, self_mass, cls_mass, entropy_ratio, *, spread=0.01, n_texts=30) -> GroupSummary:
    """Per-text masses scattered by ``spread`` around the given self and first-special-token masses."""
    rng = np.random.default_rng(n_groups)
    rest = 1.0 - self_mass - cls_mass
    mean = np.array([self_mass, rest / 4, rest / 4, cls_mass, 0.0, rest / 2])
    return GroupSummary(n_groups, mean + rng.normal(0, spread, (n_texts, 6)), np.tile(mean, (2, 1)),
                        entropy_ratio + rng.normal(0, spread, n_texts), 0.5)


def test_self_collapse_can_hold():
    v = verdict_self_collapse({12: _summary(12, 0.2, 0.3, 0.6), 2: _summary(2, 0.7, 0.1, 0.3)}, n_heads=12)
    assert v.verdict == HOLDS and v.numbers["change"] == pytest.approx(0.5, abs=0.02)
    assert v.numbers["where the mass goes, merged"]["self"] == pytest.approx(0.7, abs=0.01)


def test_self_collapse_can_fail():
    onto_cls = {12: _summary(12, 0.3, 0.2, 0.6), 2: _summary(2, 0.1, 0.7, 0.3)}
    v = verdict_self_collapse(onto_cls, n_heads=12)
    assert v.verdict == FAILS and v.numbers["change high"] < 0
    small_rise = {12: _summary(12, 0.2, 0.2, 0.6), 2: _summary(2, 0.22, 0.2, 0.6)}  # clearly below the margin
    assert verdict_self_collapse(small_rise, n_heads=12).verdict == FAILS
    assert verdict_self_collapse(small_rise, n_heads=12, margin=0.0).verdict == HOLDS  # any rise counts


def test_self_collapse_cannot_tell():
    noisy = {12: _summary(12, 0.2, 0.2, 0.6, spread=0.3), 2: _summary(2, 0.25, 0.2, 0.6, spread=0.3)}
    v = verdict_self_collapse(noisy, n_heads=12)
    assert v.verdict == UNSURE and v.numbers["change low"] < COLLAPSE_MARGIN < v.numbers["change high"]
    assert "missing" in verdict_self_collapse(noisy, n_heads=12, target=3).numbers
    other_texts = {12: _summary(12, 0.2, 0.2, 0.6), 2: _summary(2, 0.7, 0.1, 0.3, n_texts=5)}
    assert "missing" in verdict_self_collapse(other_texts, n_heads=12).numbers


def test_fewer_heads_collapse_can_hold():
    onto_self = {12: _summary(12, 0.2, 0.3, 0.6), 2: _summary(2, 0.7, 0.1, 0.3)}
    v = verdict_fewer_heads_collapse(onto_self, n_heads=12)
    assert v.verdict == HOLDS and v.numbers["focus token, merged"] == "self"
    assert v.numbers["its mass, all heads"] == pytest.approx(0.2, abs=0.01)
    onto_cls = {12: _summary(12, 0.3, 0.2, 0.6), 2: _summary(2, 0.1, 0.7, 0.3)}
    assert verdict_fewer_heads_collapse(onto_cls, n_heads=12).numbers["focus token, merged"] == FIRST_SPECIAL
    assert verdict_fewer_heads_collapse(onto_cls, n_heads=12).verdict == HOLDS


def test_fewer_heads_collapse_can_fail():
    flatter = {12: _summary(12, 0.2, 0.3, 0.5), 2: _summary(2, 0.15, 0.2, 0.9)}
    assert verdict_fewer_heads_collapse(flatter, n_heads=12).verdict == FAILS
    less_focused = {12: _summary(12, 0.2, 0.5, 0.5), 2: _summary(2, 0.2, 0.3, 0.5)}
    assert verdict_fewer_heads_collapse(less_focused, n_heads=12).verdict == FAILS


def test_fewer_heads_collapse_cannot_tell():
    noisy = {12: _summary(12, 0.2, 0.3, 0.5, spread=0.3), 2: _summary(2, 0.21, 0.36, 0.5, spread=0.3)}
    assert verdict_fewer_heads_collapse(noisy, n_heads=12).verdict == UNSURE
    assert "missing" in verdict_fewer_heads_collapse(noisy, n_heads=12, target=3).numbers


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
    v = verdict_head_count(MORE_IS_BETTER, design="fixed head size")
    assert v.verdict == FAILS and v.numbers["best h"] == 32 and v.numbers["design"] == "fixed head size"


def test_head_count_cannot_tell():
    assert verdict_head_count(NOISY).verdict == UNSURE
    assert verdict_head_count({1: [5.3], 4: [5.0], 32: [5.1]}).verdict == UNSURE  # one seed: no spread
    assert "missing" in verdict_head_count({1: [5.0, 5.1], 2: [4.0, 4.1]}).numbers
    # 32 heads worse than 8 by about 2.4 standard errors: clear at 2, not at 3
    close = {1: [5.3, 5.31, 5.29], 8: [4.90, 4.92, 4.88], 32: [4.94, 4.96, 4.92]}
    assert verdict_head_count(close, n_se=2.0).verdict == HOLDS
    assert verdict_head_count(close, n_se=3.0).verdict == UNSURE


def test_more_heads_not_always_better_can_hold():
    v = verdict_more_heads_not_always_better(VASWANI_LIKE)
    assert v.verdict == HOLDS and v.numbers["best head count"] == 8


def test_more_heads_not_always_better_can_fail():
    assert verdict_more_heads_not_always_better(MORE_IS_BETTER).verdict == FAILS


def test_more_heads_not_always_better_cannot_tell():
    assert verdict_more_heads_not_always_better(NOISY).verdict == UNSURE
    assert "missing" in verdict_more_heads_not_always_better({8: [4.0, 4.1]}).numbers


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
