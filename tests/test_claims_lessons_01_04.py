"""Lesson 01's shape claim and lesson 04's one-query spread claim decide all three ways."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.analysis.stats import bootstrap_mean
from attnlab.course.claims import multi_head, self_attention
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.scratch.self_attention import find_pattern_heads, head_spread_rows, pattern_chance


def test_pattern_head_can_hold():
    n = 5
    maps = torch.full((1, 2, n, n), 1.0 / n)
    maps[0, 1] = torch.eye(n)  # a perfectly diagonal head
    layer, head, score = find_pattern_heads(maps)["diagonal"]
    chance = pattern_chance(maps, n_shuffles=100)["diagonal"]
    v = self_attention.verdict_pattern_head("diagonal", score, layer, head, chance)
    assert v.verdict == HOLDS and (v.numbers["layer_index"], v.numbers["head_index"]) == (0, 1)
    assert v.numbers["chance_level"] < 1.0 and v.numbers["shuffles"] == 100


def test_pattern_head_can_fail():
    n = 5
    maps = torch.full((1, 2, n, n), 1.0 / n)  # uniform heads: no shape anywhere
    layer, head, score = find_pattern_heads(maps)["diagonal"]
    chance = pattern_chance(maps, n_shuffles=20)["diagonal"]
    assert self_attention.verdict_pattern_head("diagonal", score, layer, head, chance).verdict == FAILS
    # the threshold itself does not count as "more than half"
    assert self_attention.verdict_pattern_head("band", self_attention.CLEAR_SHAPE, 0, 0, [0.1]).verdict == FAILS
    with pytest.raises(ValueError):
        self_attention.verdict_pattern_head("circle", 0.9, 0, 0, [0.1])


def test_pattern_head_cannot_tell():
    # a stripe of 0.6 in a 3-token text whose rows are one-hot: shuffled one-hot rows make
    # stripes that strong by luck, so passing 0.5 is not enough
    maps = torch.zeros(1, 4, 3, 3)
    maps[0, :, :, 0] = 1.0  # every head: everyone looks at token 0 ...
    maps[0, :, 2, 0], maps[0, :, 2, 2] = 0.0, 1.0  # ... except the last row
    score = find_pattern_heads(maps)["vertical"][2]
    chance = pattern_chance(maps, n_shuffles=200)["vertical"]
    v = self_attention.verdict_pattern_head("vertical", score, 0, 0, chance)
    assert score == pytest.approx(2 / 3) and v.verdict == UNSURE and v.numbers["chance_level"] >= score
    # without a control there is nothing to rule out luck with
    assert self_attention.verdict_pattern_head("vertical", 0.9, 0, 0).verdict == UNSURE


def test_pattern_chance_keeps_sharpness_and_destroys_position():
    n = 6
    maps = torch.eye(n).expand(2, 3, n, n).clone()  # every head looks at itself
    chance = pattern_chance(maps, n_shuffles=300, seed=1)
    assert set(chance) == {"diagonal", "vertical", "band"} and len(chance["diagonal"]) == 300
    # a shuffled one-hot row hits its own position with probability 1/n: the best of 6 heads stays well below 1
    assert np.mean(chance["diagonal"]) < 0.6 and max(chance["vertical"]) <= 1.0


def test_spread_one_query_can_hold():
    n = 4
    eye, shifted = torch.eye(n), torch.roll(torch.eye(n), 1, dims=1)
    first = torch.stack([eye, shifted])  # two different heads
    last = torch.stack([eye, eye])  # two identical heads
    v = multi_head.verdict_spread_one_query([head_spread_rows(first), head_spread_rows(last)])
    assert v.verdict == HOLDS and v.numbers["last_layer_spread"] == pytest.approx(0.0, abs=1e-12)
    assert v.numbers["first_layer_spread"] == pytest.approx(float(head_spread_rows(first).mean()))


def test_spread_one_query_can_fail():
    v = multi_head.verdict_spread_one_query([[0.1, 0.12, 0.11], [0.2, 0.2, 0.2], [0.3, 0.31, 0.29]])
    assert v.verdict == FAILS and v.numbers["difference"] == pytest.approx(-0.19)
    with pytest.raises(ValueError):
        multi_head.verdict_spread_one_query([[0.2, 0.1]])


def test_spread_one_query_cannot_tell():
    first, last = np.array([0.3, 0.1, 0.25, 0.05]), np.array([0.1, 0.2, 0.05, 0.2])
    v = multi_head.verdict_spread_one_query([first, last])
    assert v.verdict == UNSURE and v.numbers["difference_low"] < 0 < v.numbers["difference_high"]
    ref = bootstrap_mean(first - last)  # paired by query token
    assert (v.numbers["difference_low"], v.numbers["difference_high"]) == pytest.approx((ref.low, ref.high))
