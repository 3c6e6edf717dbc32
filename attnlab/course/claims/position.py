"""Lesson 07's claim: the heads that keep their pattern under perturbation are
the position-driven ones.

The source article removes the position embeddings and looks again at the
layer of lesson 06: the heads that had followed the words (its heads 7 and 9)
barely change, heads 5 and 12 do not change either, and most of the other
"unchanging" heads change drastically. Its argument, measured over all heads:
"unchanged under perturbation" and "changed without positions" go together.
:func:`verdict_invariant_heads_are_positional` decides it from their correlation
across heads (:func:`attnlab.analysis.stats.bootstrap_correlation`).
"""

from __future__ import annotations

from attnlab.analysis.stats import Interval
from attnlab.course.verdicts import ClaimVerdict

#: The link must be at least this strong (a moderate rank correlation) ...
STRONG = 0.3
#: ... with the whole interval above this.
ABOVE = 0.0

#: The source article's heads (0-based) of its chosen layer that barely change without
#: positions: heads 7 and 9 (those that followed the words under perturbation) ...
ARTICLE_WORD_HEADS = (6, 8)
#: ... and heads 5 and 12 (unchanged under perturbation, and unchanged here too).
ARTICLE_STEADY_HEADS = (4, 11)
ARTICLE_HEADS = tuple(sorted(ARTICLE_WORD_HEADS + ARTICLE_STEADY_HEADS))

CLAIM_INVARIANT_POSITIONAL = ("heads that keep their pattern under perturbation are position-dominated "
                              "(they change most when position embeddings are removed)")


def verdict_invariant_heads_are_positional(corr: Interval, *, strong: float = STRONG,
                                           method: str = "spearman") -> ClaimVerdict:
    """Holds when the correlation across heads (between "unchanged under perturbation"
    and "changed without positions") is at least ``strong`` with its whole interval
    above 0; does not hold when it and the upper end of its interval are below
    ``strong`` (at most a weak link, or the opposite); cannot tell otherwise.

    Args:
        corr: the correlation with its interval, from
            :func:`attnlab.analysis.stats.bootstrap_correlation`.
        method: its name, for the numbers.
    """
    r, low, high = float(corr.estimate), float(corr.low), float(corr.high)
    return ClaimVerdict.decide(
        CLAIM_INVARIANT_POSITIONAL,
        holds=low > ABOVE and r >= strong, fails=high < strong and r < strong,
        method=method, r=r, low=low, high=high, level=corr.level, heads=corr.n, strong=strong,
    )
