"""Lesson 05's claim: most heads follow a fixed pattern.

The source article reads its heatmaps as: most heads attend to themselves, to a
neighbour, or to [CLS]/[SEP], whatever the words, and only a few capture
lexical or syntactic structure. Decided here from the labels of
:func:`attnlab.analysis.taxonomy.classify_heads` *with their noise*: every head
is fixed / not fixed / cannot tell from its interval over the survey's inputs,
and every share of heads has an interval from resampling the inputs, never the
heads (:func:`attnlab.analysis.pattern_shares.pattern_shares`):

* :func:`verdict_most_heads_fixed` -- the share of heads with a fixed-pattern
  label (:data:`attnlab.analysis.taxonomy.FIXED`) is clearly above one half;
* :func:`threshold_sensitivity` -- the same verdict redone for other label
  thresholds, to see whether it depends on where the lines are drawn.
"""

from __future__ import annotations

from typing import Any, Sequence

from attnlab.analysis.head_stats import HeadSums
import numpy as np

from attnlab.analysis.pattern_shares import PatternShares, StackedSums, pattern_shares, stack_sums
from attnlab.analysis.stats import ABOVE, BELOW, STRADDLES, too_few_units
from attnlab.core.language import N_
from attnlab.course.verdicts import UNSURE, ClaimVerdict

#: "Most heads": the fixed-pattern share must be above this ...
MAJORITY = 0.5
#: ... by more than this margin (its whole interval) to hold, and below it by more than the margin to fail.
MAJORITY_MARGIN = 0.05
#: Positional and special-token thresholds tried by :func:`threshold_sensitivity`
#: (around the defaults of Clark et al.'s analysis, 0.5 and 0.6).
POSITIONAL_GRID = (0.4, 0.5, 0.6)
SPECIAL_GRID = (0.5, 0.6, 0.7)

#: The per-head words: the fixed strength's interval over inputs against 1.
FIXED_WORD, NOT_FIXED_WORD, CANNOT_TELL = N_("fixed"), N_("not fixed"), UNSURE  # marked: shown per head
HEAD_WORDS = (FIXED_WORD, NOT_FIXED_WORD, CANNOT_TELL)

CLAIM_FIXED = ("most heads attend to themselves / a neighbour / the special tokens at either end; "
               "few carry lexical or syntactic structure")


def fixed_words(shares: PatternShares) -> np.ndarray:
    """``[L, H]`` strings: :data:`FIXED_WORD`, :data:`NOT_FIXED_WORD` or :data:`CANNOT_TELL` per head."""
    names = {ABOVE: FIXED_WORD, BELOW: NOT_FIXED_WORD, STRADDLES: CANNOT_TELL}
    return np.vectorize(names.get, otypes=[object])(shares.sides)


def word_counts(shares: PatternShares) -> dict[str, int]:
    """Heads per word of :data:`HEAD_WORDS` (every word present, possibly 0)."""
    sides = shares.counts()
    return {FIXED_WORD: sides[ABOVE], NOT_FIXED_WORD: sides[BELOW], CANNOT_TELL: sides[STRADDLES]}


def verdict_most_heads_fixed(shares: PatternShares, *, margin: float = MAJORITY_MARGIN) -> ClaimVerdict:
    """Holds when the whole interval (over inputs) of the fixed-pattern share lies
    above :data:`MAJORITY` + ``margin`` *and* the heterogeneous share (the only
    candidates for structure) lies wholly below it; does not hold when the fixed
    share's whole interval lies below :data:`MAJORITY` - ``margin``; cannot tell
    otherwise, and when the intervals rest on fewer inputs than
    :data:`attnlab.analysis.stats.MIN_UNITS`."""
    fixed, hetero = shares.fixed_share, shares.heterogeneous_share
    why = too_few_units(fixed)
    counts = word_counts(shares)
    numbers = {"too_few_units": why} if why else {}
    return ClaimVerdict.decide(
        CLAIM_FIXED,
        holds=why is None and fixed.low > MAJORITY + margin and hetero.high < fixed.low,
        fails=why is None and fixed.high < MAJORITY - margin,
        **numbers,
        fixed_share=float(fixed.estimate), fixed_share_low=float(fixed.low), fixed_share_high=float(fixed.high),
        heterogeneous_share=float(hetero.estimate), heterogeneous_share_high=float(hetero.high),
        broad_share=float(shares.broad_share.estimate),
        heads_fixed=counts[FIXED_WORD], heads_not_fixed=counts[NOT_FIXED_WORD], heads_cannot_tell=counts[CANNOT_TELL],
        heads=int(shares.sides.size), inputs=shares.n_texts, margin=margin,
        **{"holds above": MAJORITY + margin, "fails below": MAJORITY - margin},  # the lines a card draws
    )


def threshold_sensitivity(per_text: "StackedSums | Sequence[HeadSums]", *,
                          positional: Sequence[float] = POSITIONAL_GRID, special: Sequence[float] = SPECIAL_GRID,
                          n_boot: int = 1000, seed: int = 0) -> list[list[Any]]:
    """Fixed-pattern share (with its interval over inputs), heads that cannot tell,
    heterogeneous share and the verdict of :func:`verdict_most_heads_fixed`, for
    each pair of thresholds.

    Returns:
        Rows for :func:`attnlab.analysis.head_stats.format_table`, header first:
        ``[positional, special, fixed share, low, high, undecided heads, heterogeneous share, verdict]``.
    """
    stacked = per_text if isinstance(per_text, StackedSums) else stack_sums(per_text)
    rows: list[list[Any]] = [["positional", "special", N_("fixed share"), "low", "high", N_("undecided heads"),
                              N_("heterogeneous share"), "verdict"]]
    for p in positional:
        for s in special:
            sh = pattern_shares(stacked, n_boot=n_boot, seed=seed, positional=p, special=s)
            rows.append([p, s, round(float(sh.fixed_share.estimate), 3), round(float(sh.fixed_share.low), 3),
                         round(float(sh.fixed_share.high), 3), word_counts(sh)[CANNOT_TELL],
                         round(float(sh.heterogeneous_share.estimate), 3), verdict_most_heads_fixed(sh).verdict])
    return rows
