"""Lesson 03's claims decide both ways on constructed evidence, and on a real measurement."""

from __future__ import annotations

import pytest

from attnlab.course.claims import recurrence as claims
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.scratch.recurrence import Influence, Timing, first_token_influence


def influence(lstm, attention, bilstm=None):
    share = {"lstm": lstm, "attention": attention}
    if bilstm is not None:
        share["bilstm"] = bilstm
    return Influence([4, 64], [0], 16, share=share)


def test_decay_can_hold():
    v = claims.verdict_decay(influence([0.8, 1e-6], [1.0, 1.1]))
    assert v.verdict == HOLDS and v.numbers["lstm_falls_by"] == pytest.approx(0.8e6)
    # a share that underflowed to exactly 0 has fallen by an unbounded factor
    assert claims.verdict_decay(influence([0.8, 0.0], [1.0, 1.0])).verdict == HOLDS


def test_decay_can_fail():
    assert claims.verdict_decay(influence([0.5, 0.4], [1.0, 1.0])).verdict == FAILS  # LSTM remembers
    assert claims.verdict_decay(influence([0.8, 1e-6], [1.0, 0.2])).verdict == FAILS  # attention forgets too
    assert claims.verdict_decay(Influence([4], [0], 8, share={"lstm": [1.0]})).verdict == UNSURE


def test_decay_holds_on_measured_layers():
    inf = first_token_influence([4, 40], width=16, seeds=(0, 1))
    assert claims.verdict_decay(inf).verdict == HOLDS


def test_bilstm_can_hold():
    assert claims.verdict_bilstm(influence([1, 0], [1, 1], bilstm=[0.9, 0.01])).verdict == HOLDS


def test_bilstm_can_fail():
    assert claims.verdict_bilstm(influence([1, 0], [1, 1], bilstm=[0.9, 0.5])).verdict == FAILS
    assert claims.verdict_bilstm(influence([1, 0], [1, 1])).verdict == UNSURE


def test_timing_can_hold():
    fast = Timing([16, 32, 128], 4, 64, {"lstm": [2.0, 3.0, 4.0], "attention": [1.0, 1.0, 9.0]})
    v = claims.verdict_timing(fast)
    assert v.verdict == HOLDS
    # the slowest attention below d=64 is at n=16 (2x faster); n=128 >= d does not count
    assert v.numbers["smallest_lstm_over_attention_time"] == pytest.approx(2.0) and v.numbers["at_n"] == 16


def test_timing_can_fail():
    slow = Timing([16, 32], 4, 64, {"lstm": [1.0, 1.0], "attention": [2.0, 0.5]})
    assert claims.verdict_timing(slow).verdict == FAILS
    tie = Timing([16], 4, 64, {"lstm": [1.0], "attention": [1.0]})  # "faster" means strictly faster
    assert claims.verdict_timing(tie).verdict == FAILS
    none_short = Timing([128], 4, 64, {"lstm": [1.0], "attention": [2.0]})
    assert claims.verdict_timing(none_short).verdict == UNSURE


def test_growth_can_hold():
    ns = [16, 32, 64]
    t = Timing(ns, 4, 64, {"lstm": [n * 1e-4 for n in ns], "attention": [n * n * 1e-6 for n in ns]})
    v = claims.verdict_growth(t)
    assert v.verdict == HOLDS
    assert v.numbers["exponent_attention"] == pytest.approx(2.0)
    assert v.numbers["exponent_lstm"] == pytest.approx(1.0)


def test_growth_can_fail():
    ns = [16, 32, 64]
    t = Timing(ns, 4, 64, {"lstm": [n * n * 1e-6 for n in ns], "attention": [n * 1e-4 for n in ns]})
    assert claims.verdict_growth(t).verdict == FAILS
    assert claims.verdict_growth(Timing([16], 4, 64, {"lstm": [1.0], "attention": [1.0]})).verdict == UNSURE
