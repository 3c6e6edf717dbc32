"""Lesson 03's claims decide all three ways on constructed evidence, and on a real measurement."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.stats import bootstrap, slope
from attnlab.course.claims import recurrence as claims
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.scratch.recurrence import Influence, Timing, first_token_influence


def influence(lstm, attention, bilstm=None):
    """One seed: the shares at n = 4 and n = 64."""
    share = {"lstm": lstm, "attention": attention}
    if bilstm is not None:
        share["bilstm"] = bilstm
    return Influence([4, 64], [0], 16, share=share)


def seeded(per_seed: dict[str, list[list[float]]]) -> Influence:
    """Several seeds: kind -> one list per length (n = 4, 64) with each seed's share."""
    n_seeds = len(next(iter(per_seed.values()))[0])
    return Influence([4, 64], list(range(n_seeds)), 16, share={k: [float(np.mean(v)) for v in vals]
                                                                for k, vals in per_seed.items()},
                     share_per_seed=per_seed)


def test_decay_can_hold():
    v = claims.verdict_decay(influence([0.8, 1e-6], [1.0, 1.1]))
    assert v.verdict == HOLDS and v.numbers["lstm_orders_of_magnitude_lost"] == pytest.approx(np.log10(0.8e6))
    # a share that underflowed to exactly 0 counts at the floor: a fall of about 30 orders of magnitude
    v = claims.verdict_decay(influence([0.8, 0.0], [1.0, 1.0]))
    assert v.verdict == HOLDS and v.numbers["lstm_orders_of_magnitude_lost"] == pytest.approx(np.log10(0.8) + 30)


def test_decay_can_fail():
    assert claims.verdict_decay(influence([0.5, 0.4], [1.0, 1.0])).verdict == FAILS  # LSTM remembers
    assert claims.verdict_decay(influence([0.8, 1e-6], [1.0, 0.2])).verdict == FAILS  # attention forgets too
    assert claims.verdict_decay(Influence([4], [0], 8, share={"lstm": [1.0]})).verdict == UNSURE


def test_decay_cannot_tell():
    # on average the LSTM loses 1.6 orders of magnitude (> 1 for a factor 10), but one seed of three keeps it
    inf = seeded({"lstm": [[0.5, 0.5, 0.5], [5e-4, 5e-4, 0.4]], "attention": [[1.0, 1.0, 1.0], [1.0, 1.1, 0.9]]})
    v = claims.verdict_decay(inf)
    assert v.verdict == UNSURE and v.numbers["seeds"] == 3
    assert v.numbers["its_low"] < 1 < v.numbers["its_high"]
    # with the same evidence a lower threshold decides: every seed loses more than a factor of 1.2
    assert claims.verdict_decay(inf, factor=1.2).verdict == HOLDS


def test_decay_holds_on_measured_layers():
    inf = first_token_influence([4, 40], width=16, seeds=(0, 1))
    assert claims.verdict_decay(inf).verdict == HOLDS


def test_bilstm_can_hold():
    assert claims.verdict_bilstm(influence([1, 0], [1, 1], bilstm=[0.9, 0.01])).verdict == HOLDS


def test_bilstm_can_fail():
    assert claims.verdict_bilstm(influence([1, 0], [1, 1], bilstm=[0.9, 0.5])).verdict == FAILS
    assert claims.verdict_bilstm(influence([1, 0], [1, 1])).verdict == UNSURE


def test_bilstm_cannot_tell():
    inf = seeded({"lstm": [[1, 1], [0, 0]], "attention": [[1, 1], [1, 1]], "bilstm": [[0.9, 0.9], [0.001, 0.5]]})
    v = claims.verdict_bilstm(inf)
    assert v.verdict == UNSURE and v.numbers["its_low"] < 1 < v.numbers["its_high"]


def timing(lstm, attention, lengths=(16, 32, 128), width=64):
    """Timing with repeats: kind -> one list per length with every repeat's seconds."""
    return Timing(list(lengths), 4, width,
                  seconds={"lstm": [float(np.median(v)) for v in lstm], "attention": [float(np.median(v)) for v in attention]},
                  samples={"lstm": lstm, "attention": attention})


def test_timing_can_hold():
    fast = Timing([16, 32, 128], 4, 64, {"lstm": [2.0, 3.0, 4.0], "attention": [1.0, 1.0, 9.0]})
    v = claims.verdict_timing(fast)
    assert v.verdict == HOLDS
    # the slowest attention below d=64 is at n=16 (2x faster); n=128 >= d does not count
    assert v.numbers["lstm_over_attention_time"] == pytest.approx(2.0) and v.numbers["at_n"] == 16
    repeated = timing([[2.0, 2.1, 1.9, 2.0], [3.0, 3.1, 2.9, 3.0], [4.0] * 4],
                      [[1.0, 1.1, 0.9, 1.0], [1.0, 1.0, 1.1, 0.9], [9.0] * 4])
    assert claims.verdict_timing(repeated).verdict == HOLDS


def test_timing_can_fail():
    slow = Timing([16, 32], 4, 64, {"lstm": [1.0, 1.0], "attention": [2.0, 0.5]})
    v = claims.verdict_timing(slow)
    assert v.verdict == FAILS and v.numbers["lstm_faster_at"] == 1 and v.numbers["at_n"] == 16
    none_short = Timing([128], 4, 64, {"lstm": [1.0], "attention": [2.0]})
    assert claims.verdict_timing(none_short).verdict == UNSURE


def test_timing_cannot_tell():
    # n = 32: the repeats put attention ahead in some and behind in others (a tie that flips under load)
    tie = timing([[2.0, 2.1, 1.9, 2.0], [1.0, 1.2, 0.8, 1.0]], [[1.0, 1.0, 1.0, 1.0], [1.1, 0.9, 1.0, 1.05]],
                 lengths=(16, 32))
    v = claims.verdict_timing(tie)
    assert v.verdict == UNSURE and v.numbers["ties"] == 1 and v.numbers["at_n"] == 32
    # the interval is the bootstrap of the median of the paired ratios
    ratios = np.array([1.0, 1.2, 0.8, 1.0]) / np.array([1.1, 0.9, 1.0, 1.05])
    ref = bootstrap(ratios, np.median, n_boot=claims.N_BOOT)
    assert (v.numbers["its_low"], v.numbers["its_high"]) == pytest.approx((ref.low, ref.high))
    exact_tie = Timing([16], 4, 64, {"lstm": [1.0], "attention": [1.0]})  # equal times: no winner
    assert claims.verdict_timing(exact_tie).verdict == UNSURE


def test_growth_can_hold():
    ns = [16, 32, 64]
    t = Timing(ns, 4, 64, {"lstm": [n * 1e-4 for n in ns], "attention": [n * n * 1e-6 for n in ns]})
    v = claims.verdict_growth(t)
    assert v.verdict == HOLDS
    assert v.numbers["exponent_attention"] == pytest.approx(2.0)
    assert v.numbers["exponent_lstm"] == pytest.approx(1.0)
    assert v.numbers["gap"] == pytest.approx(1.0)


def test_growth_can_fail():
    ns = [16, 32, 64]
    t = Timing(ns, 4, 64, {"lstm": [n * n * 1e-6 for n in ns], "attention": [n * 1e-4 for n in ns]})
    assert claims.verdict_growth(t).verdict == FAILS
    assert claims.verdict_growth(Timing([16], 4, 64, {"lstm": [1.0], "attention": [1.0]})).verdict == UNSURE


def test_growth_cannot_tell():
    ns = (16, 32, 64)
    rng = np.random.default_rng(0)
    # both grow linearly; repeat-to-repeat noise of +-30% hides any difference of exponents
    lstm = [[n * 1e-4 * f for f in rng.uniform(0.7, 1.3, 6)] for n in ns]
    att = [[n * 1e-4 * f for f in rng.uniform(0.7, 1.3, 6)] for n in ns]
    v = claims.verdict_growth(timing(lstm, att, lengths=ns))
    assert v.verdict == UNSURE and v.numbers["gap_low"] < 0 < v.numbers["gap_high"]
    gap = np.log(np.array(att).T) - np.log(np.array(lstm).T)  # (R, K)
    assert v.numbers["gap"] == pytest.approx(slope(np.log(ns), gap.mean(axis=0)))
