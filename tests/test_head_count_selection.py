"""Lesson 10: the best head count is chosen on one half of the seeds and compared on the other."""

import numpy as np
import pytest

from attnlab.course.claims.head_count import (
    MIN_HEAD_SIZE,
    cross_fitted_best,
    degenerate_counts,
    difference_se,
    held_out_gap,
    seed_halves,
    verdict_more_heads_not_always_better,
)
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE


def test_seed_halves_split_every_seed_once():
    a, b = seed_halves(5)
    assert a.tolist() == [0, 2, 4] and b.tolist() == [1, 3]
    assert seed_halves(2)[0].tolist() == [0] and seed_halves(2)[1].tolist() == [1]
    with pytest.raises(ValueError):
        seed_halves(1)


def test_cross_fitted_best_chooses_without_the_seeds_it_scores():
    # seeds 0 and 2 (half A) favour 4 heads, seeds 1 and 3 (half B) favour 8 heads
    ppl = {1: [6.0, 6.0, 6.0, 6.0], 4: [4.0, 5.0, 4.0, 5.0], 8: [5.0, 4.0, 5.0, 4.0]}
    choices = cross_fitted_best(ppl)
    assert choices == {0: 8, 2: 8, 1: 4, 3: 4}  # each half's seeds get the other half's choice
    gap, se, _ = held_out_gap(ppl)
    largest = np.array(ppl[8])
    chosen = np.array([ppl[8][0], ppl[4][1], ppl[8][2], ppl[4][3]])
    assert gap == pytest.approx(largest.mean() - chosen.mean(), abs=1e-12)
    assert se == pytest.approx(difference_se(largest, chosen), abs=1e-12)


def test_lucky_seeds_do_not_make_a_best_count():
    """Same-data choice: 4 heads looks best on all seeds only because each half's luck is
    counted; cross-fitted, the choice made on one half is worse than the largest on the other."""
    ppl = {4: [4.0, 5.0, 4.0, 5.0], 8: [5.0, 4.0, 5.0, 4.0], 16: [4.6, 4.6, 4.6, 4.61]}
    v = verdict_more_heads_not_always_better(ppl, n_se=1.0)
    assert v.numbers["best head count"] in (4, 8)  # on all seeds a lucky count wins
    assert v.numbers["estimate"] < 0  # held out, the chosen count loses to 16
    assert v.verdict != HOLDS


def test_degenerate_counts_are_left_out():
    sizes = {1: 64, 8: 8, 16: 4, 32: 2}
    assert degenerate_counts(sizes) == [32] and MIN_HEAD_SIZE == 4
    assert degenerate_counts(None) == []
    ppl = {1: [5.3, 5.31, 5.29], 8: [5.0, 5.01, 4.99], 16: [4.5, 4.51, 4.49], 32: [6.0, 6.01, 5.99]}
    v = verdict_more_heads_not_always_better(ppl, head_sizes=sizes)
    assert v.verdict == FAILS and v.numbers["verdict with the degenerate point"] == HOLDS
    only_two = verdict_more_heads_not_always_better({16: [4.0, 4.1], 32: [5.0, 5.1]}, head_sizes=sizes)
    assert only_two.verdict == UNSURE and "missing" in only_two.numbers
