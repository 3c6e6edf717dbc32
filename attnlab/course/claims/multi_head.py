"""Lesson 04's claim, on one query: heads of the last layer are more alike than
those of the first (lessons 08-09 test it over many queries).

The measure is :func:`attnlab.scratch.self_attention.head_spread`: the mean
Jensen-Shannon divergence between every pair of heads of a layer.
"""

from __future__ import annotations

from typing import Sequence

from attnlab.course.verdicts import ClaimVerdict

CLAIM_SPREAD = "for this query, the heads of the last layer are more alike than those of the first"


def verdict_spread_one_query(spread: Sequence[float]) -> ClaimVerdict:
    """Holds when the first layer's head spread is above the last layer's; does not hold
    when it is below; cannot tell when they are equal (one query, so no interval).

    Args:
        spread: one value per layer (first to last), e.g. ``[head_spread(att[0][l]) for l in ...]``.
    """
    if len(spread) < 2:
        raise ValueError(f"need the spread of at least two layers, got {len(spread)}")
    first, last = float(spread[0]), float(spread[-1])
    return ClaimVerdict.decide(CLAIM_SPREAD, holds=first > last, fails=first < last,
                               first_layer_spread=first, last_layer_spread=last, layers=len(spread))
