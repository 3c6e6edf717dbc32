"""Exercise checkers of lessons 08 and 09: right answers pass, wrong ones and None do not."""

from __future__ import annotations

import pytest
import torch

import attnlab as al
from attnlab.analysis.diversity import depth_trend, head_distances, shuffled_baseline
from attnlab.core.streaming import MeanAttention
from attnlab.course.exercises import lesson_08 as ex08
from attnlab.course.exercises import lesson_09 as ex09
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, WORDS
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol08 = teacher("08")
sol09 = teacher("09")

from same_length import same_length_texts
from test_fixedness import numpy_fixedness

pytestmark = pytest.mark.usefixtures("attempts_folder")  # attempts are saved in a folder of the test's own


@pytest.fixture(scope="module")
def texts():
    return same_length_texts(12, seed=13)


@pytest.fixture(scope="module")
def result(tiny_en, texts):
    return al.mean_attention(tiny_en, texts, progress=False)


def test_mean_cell(tiny_en, texts):
    att = al.attention(tiny_en, texts).tensor  # independent brute force
    truth = float(att[:, 1, 3, 0, 6].mean())
    assert ex08.check_mean_cell(tiny_en, truth, texts, layer=1, head=3)
    assert not ex08.check_mean_cell(tiny_en, truth + 0.05, texts, layer=1, head=3)
    assert "not yet" in str(ex08.check_mean_cell(tiny_en, None, texts))
    assert sol08.solution_mean_cell(tiny_en, texts, 1, 3) == pytest.approx(truth, abs=1e-6)


def test_fixedness_by_hand(tiny_en, texts, result):
    maps = al.attention(tiny_en, texts).tensor.double()  # (N, L, H, n, n): every query's map
    value, _ = numpy_fixedness(maps[:, 1, 5].numpy())  # written out with numpy from the maps themselves
    exact = MeanAttention.empty(*maps.shape[1:4]).add(maps)  # float64 entropies: a random head's rows are
    assert sol08.solution_fixedness_by_hand(tiny_en, 1, 5, exact) == pytest.approx(value, abs=1e-9)  # near uniform
    assert ex08.check_fixedness_by_hand(tiny_en, value, 1, 5, result=exact)
    assert not ex08.check_fixedness_by_hand(tiny_en, value - 0.05, 1, 5, result=exact)
    assert not ex08.check_fixedness_by_hand(tiny_en, None, 1, 5, result=result)
    with pytest.raises(ValueError):
        ex08.check_fixedness_by_hand(tiny_en, 0.5, 7, 0, result=result)


def test_most_fixed_layer(tiny_en, result):
    truth = int(result.fixedness().nanmean(dim=1).argmax())
    assert ex08.check_most_fixed_layer(tiny_en, truth, result=result)
    wrong = ex08.check_most_fixed_layer(tiny_en, 1 - truth, result=result)
    assert not wrong
    assert not ex08.check_most_fixed_layer(tiny_en, None, result=result)


@pytest.fixture(scope="module")
def hd(tiny_factory):
    m = tiny_factory("bert", "en", n_layers=3)
    return m, head_distances(m, same_length_texts(8, seed=14), progress=False)


def test_closest_pair(hd):
    m, dist = hd
    d = dist.distance.clone()
    d.fill_diagonal_(1e9)
    a, b = divmod(int(d.argmin()), d.shape[0])
    pair = ((a // 12, a % 12), (b // 12, b % 12))
    assert ex09.check_closest_pair(m, pair, dist)
    assert ex09.check_closest_pair(m, pair[::-1], dist)
    assert not ex09.check_closest_pair(m, ((0, 0), (0, 0)), dist)
    assert not ex09.check_closest_pair(m, "heads", dist)
    assert not ex09.check_closest_pair(m, None, dist)


def test_dispersion(hd):
    m, dist = hd
    block = dist.distance[12:24, 12:24]
    value = float(block[~torch.eye(12, dtype=bool)].mean())
    assert ex09.check_dispersion(m, value, 1, dist)
    assert value == pytest.approx(float(dist.dispersion()[1]), rel=1e-9)
    assert not ex09.check_dispersion(m, value + 0.1, 1, dist)


def test_trend_verdict(hd):
    m, dist = hd
    trend = depth_trend(dist, n_boot=100)
    s = trend.slope
    truth = HOLDS if s.high < 0 else (FAILS if s.low > 0 else UNSURE)  # the rule, applied by hand
    assert sol09.solution_trend_verdict(m, trend) == truth
    assert ex09.check_trend_verdict(m, truth, trend)
    assert ex09.check_trend_verdict(m, truth.upper(), trend)
    for other in set(WORDS) - {truth}:
        assert not ex09.check_trend_verdict(m, other, trend)
    assert not ex09.check_trend_verdict(m, None, trend)


def test_trend_verdict_with_the_baseline(hd):
    m, dist = hd
    trend, base = depth_trend(dist, n_boot=100), shuffled_baseline(dist, n_perm=200)
    s = trend.slope
    holds = s.high < 0 and base.p_value < 0.05  # the rule, applied by hand
    fails = s.low > 0 or base.p_value > 0.95
    truth = HOLDS if holds else (FAILS if fails else UNSURE)
    assert sol09.solution_trend_verdict(m, trend, base) == truth
    assert ex09.check_trend_verdict(m, truth, trend, base)
    for other in set(WORDS) - {truth}:
        assert not ex09.check_trend_verdict(m, other, trend, base)


def test_layers_outside_the_result_are_clear_errors(tiny_en, result, hd):
    partial = al.mean_attention(tiny_en, same_length_texts(4, seed=17), layers=[1], progress=False)
    with pytest.raises(ValueError, match="was not averaged"):
        ex08.check_fixedness_by_hand(tiny_en, 0.5, 0, 0, result=partial)
    assert ex08.check_fixedness_by_hand(tiny_en, sol08.solution_fixedness_by_hand(tiny_en, 1, 0, partial), 1, 0,
                                        result=partial)
    assert sol08.solution_most_fixed_layer(tiny_en, partial) == 1
    m, dist = hd
    with pytest.raises(ValueError, match="out of range"):
        ex09.check_dispersion(m, 0.1, 3, dist)
