"""Lesson 01's shape claim and lesson 04's one-query spread claim decide both ways."""

from __future__ import annotations

import pytest
import torch

from attnlab.course.claims import multi_head, self_attention
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.scratch.self_attention import find_pattern_heads, head_spread


def test_pattern_head_can_hold():
    n = 5
    maps = torch.full((1, 2, n, n), 1.0 / n)
    maps[0, 1] = torch.eye(n)  # a perfectly diagonal head
    layer, head, score = find_pattern_heads(maps)["diagonal"]
    v = self_attention.verdict_pattern_head("diagonal", score, layer, head)
    assert v.verdict == HOLDS and (v.numbers["layer_index"], v.numbers["head_index"]) == (0, 1)


def test_pattern_head_can_fail():
    n = 5
    maps = torch.full((1, 2, n, n), 1.0 / n)  # uniform heads: no shape anywhere
    layer, head, score = find_pattern_heads(maps)["diagonal"]
    assert self_attention.verdict_pattern_head("diagonal", score, layer, head).verdict == FAILS
    # the threshold itself does not count as "more than half"
    assert self_attention.verdict_pattern_head("band", self_attention.CLEAR_SHAPE, 0, 0).verdict == FAILS
    with pytest.raises(ValueError):
        self_attention.verdict_pattern_head("circle", 0.9, 0, 0)


def test_spread_one_query_can_hold():
    n = 4
    eye, shifted = torch.eye(n), torch.roll(torch.eye(n), 1, dims=1)
    first = torch.stack([eye, shifted])  # two different heads
    last = torch.stack([eye, eye])  # two identical heads
    v = multi_head.verdict_spread_one_query([head_spread(first), head_spread(last)])
    assert v.verdict == HOLDS and v.numbers["last_layer_spread"] == pytest.approx(0.0, abs=1e-12)


def test_spread_one_query_can_fail():
    assert multi_head.verdict_spread_one_query([0.1, 0.2, 0.3]).verdict == FAILS
    assert multi_head.verdict_spread_one_query([0.2, 0.2]).verdict == UNSURE
    with pytest.raises(ValueError):
        multi_head.verdict_spread_one_query([0.2])
