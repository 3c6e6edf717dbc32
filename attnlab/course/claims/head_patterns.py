"""Lesson 05's claim: most heads follow a fixed pattern.

The source article reads its heatmaps as: most heads attend to themselves, to a
neighbour, or to [CLS]/[SEP], whatever the words, and only a few capture
lexical or syntactic structure. Decided here from the head labels of
:func:`attnlab.analysis.taxonomy.classify_heads`:

* :func:`verdict_most_heads_fixed` -- the share of heads with a fixed-pattern
  label (:data:`attnlab.analysis.taxonomy.FIXED`) is clearly above one half;
* :func:`threshold_sensitivity` -- the same verdict redone for other label
  thresholds, to see whether it depends on where the lines are drawn.
"""

from __future__ import annotations

from typing import Any, Sequence

from attnlab.analysis.head_stats import HeadStats
from attnlab.analysis.taxonomy import FIXED, HeadLabels, classify_heads
from attnlab.course.verdicts import ClaimVerdict

#: "Most heads": the fixed-pattern share must be above this ...
MAJORITY = 0.5
#: ... by more than this margin to hold (and below it by more than the margin to fail).
MAJORITY_MARGIN = 0.05
#: Positional and special-token thresholds tried by :func:`threshold_sensitivity`
#: (around the defaults of Clark et al.'s analysis, 0.5 and 0.6).
POSITIONAL_GRID = (0.4, 0.5, 0.6)
SPECIAL_GRID = (0.5, 0.6, 0.7)

CLAIM_FIXED = ("most heads attend to themselves / a neighbour / [CLS] / [SEP]; "
               "few carry lexical or syntactic structure")


def verdict_most_heads_fixed(labels: HeadLabels, *, margin: float = MAJORITY_MARGIN) -> ClaimVerdict:
    """Holds when the fixed-pattern share exceeds :data:`MAJORITY` by more than
    ``margin`` *and* heterogeneous heads (the only candidates for structure) are
    fewer than fixed ones; does not hold when the share is below :data:`MAJORITY`
    by more than ``margin``; cannot tell in between."""
    fixed = labels.share(FIXED)
    hetero = labels.share(["heterogeneous"])
    return ClaimVerdict.decide(
        CLAIM_FIXED,
        holds=fixed > MAJORITY + margin and hetero < fixed,
        fails=fixed < MAJORITY - margin,
        fixed_share=fixed, heterogeneous_share=hetero, broad_share=labels.share(["broad"]),
        heads=int(labels.labels.size),
    )


def threshold_sensitivity(stats: HeadStats, *, positional: Sequence[float] = POSITIONAL_GRID,
                          special: Sequence[float] = SPECIAL_GRID) -> list[list[Any]]:
    """Fixed-pattern share, heterogeneous share and the verdict of
    :func:`verdict_most_heads_fixed`, for each pair of thresholds.

    Returns:
        Rows for :func:`attnlab.analysis.head_stats.format_table`, header first:
        ``[positional, special, fixed share, heterogeneous share, verdict]``.
    """
    rows: list[list[Any]] = [["positional", "special", "fixed share", "heterogeneous share", "verdict"]]
    for p in positional:
        for s in special:
            lab = classify_heads(stats, positional=p, special=s)
            rows.append([p, s, round(lab.share(FIXED), 3), round(lab.share(["heterogeneous"]), 3),
                         verdict_most_heads_fixed(lab).verdict])
    return rows
