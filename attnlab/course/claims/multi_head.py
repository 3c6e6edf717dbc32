"""Lesson 04's claim, on one query: heads of the last layer are more alike than
those of the first (lessons 08-09 test it over many queries).

The measure is :func:`attnlab.scratch.self_attention.head_spread_rows`: per
query token, the mean Jensen-Shannon divergence between every pair of heads of
a layer. The first and last layers see the same tokens, so the claim is decided
on the paired differences, with a bootstrap interval over the query tokens.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from attnlab.analysis.stats import bootstrap_mean
from attnlab.core.language import _
from attnlab.course.verdicts import ClaimVerdict

CLAIM_SPREAD = "for this query, the heads of the last layer are more alike than those of the first"
#: the difference of spreads (first layer minus last) the interval must clear
SPREAD_THRESHOLD = 0.0


def verdict_spread_one_query(spread_rows: Sequence[Sequence[float]]) -> ClaimVerdict:
    """Holds when the interval of the mean (first-layer spread minus last-layer spread)
    over query tokens lies above 0; does not hold when it lies below 0; cannot tell
    when it contains 0 (one query and a few tokens: the interval is wide).

    Args:
        spread_rows: ``[layers, n]``, one row per layer (first to last) of per-token
            spreads, e.g. ``[head_spread_rows(att[0][l]) for l in ...]``.
    """
    rows = np.asarray([np.asarray(r, dtype=float) for r in spread_rows])  # (L, n)
    if rows.ndim != 2 or rows.shape[0] < 2:
        raise ValueError(_("need per-token spreads of at least two layers, got shape {shape}").format(shape=rows.shape))
    diff = bootstrap_mean(rows[0] - rows[-1])  # first minus last, paired by query token
    return ClaimVerdict.decide(CLAIM_SPREAD, holds=diff.above(SPREAD_THRESHOLD), fails=diff.below(SPREAD_THRESHOLD),
                               first_layer_spread=float(rows[0].mean()), last_layer_spread=float(rows[-1].mean()),
                               difference=float(diff.estimate), difference_low=float(diff.low),
                               difference_high=float(diff.high), threshold=SPREAD_THRESHOLD, tokens=rows.shape[1],
                               layers=rows.shape[0])
