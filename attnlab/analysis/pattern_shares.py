"""Lesson 05's labels with intervals: each head fixed / not fixed / cannot tell,
and shares of heads with intervals from resampling the *texts*, never the heads.

A head's label (:func:`attnlab.analysis.taxonomy.classify_heads`) comes from
averages over many texts, so it carries their noise. The texts are the unit
that carries it: resample them with replacement, recompute every head's
statistics from the resampled texts' :class:`~attnlab.analysis.head_stats.HeadSums`
(sums add, so a resample is a weighted sum) and label every head anew.

* :func:`fixed_strength` -- one number per head that decides "fixed pattern":
  the largest ratio of a fixed-pattern statistic to its threshold (self /
  previous / next mass to ``positional``, the offset share of a row maximum at
  offset -1, 0 or +1 to ``offset_share``, [CLS]+[SEP] or punctuation mass to
  ``special``). The head has a fixed label exactly when it is at least 1.
* :func:`pattern_shares` -- per head the interval of that strength over texts
  and its side of the line (:data:`attnlab.analysis.stats.ABOVE` when the whole
  interval is at least 1, ``BELOW`` when it is below 1, ``STRADDLES``
  otherwise: the words are the course's, in
  :mod:`attnlab.course.claims.head_patterns`), and the shares of fixed,
  heterogeneous and broad heads with intervals over texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from attnlab.analysis.head_stats import HeadSums
from attnlab.analysis.stats import ABOVE, BELOW, STRADDLES, Interval, interval_from_samples, resample_counts
from attnlab.analysis.taxonomy import DEFAULTS

#: the statistics summed per row that the labels need
_ROW_SUMS = ("self_mass", "prev_mass", "next_mass", "cls_mass", "sep_mass", "punct_mass", "entropy",
             "uniform_entropy", "segment_mass")


@dataclass
class StackedSums:
    """Per-text sums stacked along a first axis of ``N`` texts.

    Attributes:
        sums: name -> ``[N, L, H]`` row sums (see :class:`HeadSums`).
        rows, punct_rows, pair_rows: ``[N]`` row counts behind them.
        offsets: ``[K]`` offsets of the row maximum; ``offset_counts``: ``[N, K, L, H]``.
    """

    sums: dict[str, np.ndarray]
    rows: np.ndarray
    punct_rows: np.ndarray
    pair_rows: np.ndarray
    offsets: np.ndarray
    offset_counts: np.ndarray

    @property
    def n_texts(self) -> int:
        return int(self.rows.shape[0])

    def weighted(self, weights: np.ndarray) -> "StackedSums":
        """Totals for each row of ``weights`` ``[B, N]`` (how often each text is drawn): a stack of B."""
        w = np.asarray(weights, dtype=float)
        return StackedSums(
            sums={k: np.einsum("bn,nlh->blh", w, v) for k, v in self.sums.items()},
            rows=w @ self.rows, punct_rows=w @ self.punct_rows, pair_rows=w @ self.pair_rows,
            offsets=self.offsets, offset_counts=np.einsum("bn,nklh->bklh", w, self.offset_counts),
        )

    def total(self) -> "StackedSums":
        """All texts once: a stack of one."""
        return self.weighted(np.ones((1, self.n_texts)))


def stack_sums(per_text: Sequence[HeadSums]) -> StackedSums:
    """Stack one :class:`HeadSums` per text (e.g. from :func:`attnlab.analysis.head_stats.text_sums`)."""
    if not per_text:
        raise ValueError("need the sums of at least one text")
    offsets = np.array(sorted({o for s in per_text for o in s.offset_counts}), dtype=int)  # (K,)
    shape = per_text[0].sums["self_mass"].shape
    counts = np.zeros((len(per_text), len(offsets)) + shape)  # (N, K, L, H)
    index = {int(o): k for k, o in enumerate(offsets)}
    for i, s in enumerate(per_text):
        for o, c in s.offset_counts.items():
            counts[i, index[int(o)]] = c
    return StackedSums(
        sums={k: np.stack([s.sums[k] for s in per_text]) for k in _ROW_SUMS},
        rows=np.array([s.n_rows for s in per_text], dtype=float),
        punct_rows=np.array([s.n_punct_rows for s in per_text], dtype=float),
        pair_rows=np.array([s.n_pair_rows for s in per_text], dtype=float),
        offsets=offsets, offset_counts=counts,
    )


def _per_row(total: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``[B, L, H]`` sums over ``[B]`` row counts (NaN where there were no rows)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / np.where(rows > 0, rows, np.nan)[:, None, None]


def fixed_strength(s: StackedSums, *, positional: float = DEFAULTS["positional"],
                   offset_share: float = DEFAULTS["offset_share"],
                   special: float = DEFAULTS["special"]) -> np.ndarray:
    """``[B, L, H]``: each head's largest fixed-pattern statistic over its threshold
    (the rules of :func:`attnlab.analysis.taxonomy.classify_heads`); at least 1
    exactly when the head gets a fixed label."""
    masses = [_per_row(s.sums[k], s.rows) / positional for k in ("self_mass", "prev_mass", "next_mass")]
    best = s.offset_counts.argmax(axis=1)  # (B, L, H): ties go to the most negative offset, as in finish()
    top = np.take_along_axis(s.offset_counts, best[:, None], axis=1)[:, 0]  # (B, L, H)
    near = np.isin(s.offsets[best], (-1, 0, 1))
    by_offset = np.where(near, _per_row(top, s.rows) / offset_share, 0.0)
    specials = (_per_row(s.sums["cls_mass"], s.rows) + _per_row(s.sums["sep_mass"], s.rows)) / special
    punct = np.nan_to_num(_per_row(s.sums["punct_mass"], s.punct_rows) / special, nan=0.0)
    return np.max(np.stack(masses + [by_offset, specials, punct]), axis=0)


def kinds_of(s: StackedSums, *, positional: float = DEFAULTS["positional"],
             offset_share: float = DEFAULTS["offset_share"], special: float = DEFAULTS["special"],
             block: float = DEFAULTS["block"], broad: float = DEFAULTS["broad"]) -> dict[str, np.ndarray]:
    """``{"fixed", "block", "broad", "heterogeneous"}`` -> ``[B, L, H]`` bool, the label
    groups of :func:`~attnlab.analysis.taxonomy.classify_heads` (fixed = self,
    previous, next or vertical)."""
    fixed = fixed_strength(s, positional=positional, offset_share=offset_share, special=special) >= 1.0
    seg = _per_row(s.sums["segment_mass"], s.pair_rows)
    is_block = ~fixed & (np.nan_to_num(seg, nan=-1.0) >= block)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(s.sums["uniform_entropy"] > 0, s.sums["entropy"] / s.sums["uniform_entropy"], 0.0)
    is_broad = ~fixed & ~is_block & (rel >= broad)
    return {"fixed": fixed, "block": is_block, "broad": is_broad, "heterogeneous": ~fixed & ~is_block & ~is_broad}


@dataclass
class PatternShares:
    """Lesson 05's evidence with intervals over texts.

    Attributes:
        strength: :func:`fixed_strength` per head (arrays ``[L, H]``), interval over texts.
        sides: ``[L, H]`` ints: ``ABOVE`` (fixed), ``BELOW`` (not fixed) or
            ``STRADDLES`` (cannot tell), the strength's interval against 1.
        fixed_share, heterogeneous_share, broad_share: scalar intervals over texts
            (each resample labels every head anew).
        thresholds: the label thresholds used.
    """

    strength: Interval
    sides: np.ndarray
    fixed_share: Interval
    heterogeneous_share: Interval
    broad_share: Interval
    thresholds: dict = field(default_factory=dict)

    @property
    def n_texts(self) -> int:
        return int(self.fixed_share.n)

    def counts(self) -> dict[int, int]:
        """Heads per side: ``{ABOVE: fixed, BELOW: not fixed, STRADDLES: cannot tell}``."""
        return {side: int((self.sides == side).sum()) for side in (ABOVE, BELOW, STRADDLES)}


def pattern_shares(per_text: "StackedSums | Sequence[HeadSums]", *, n_boot: int = 1000, level: float = 0.95,
                   seed: int = 0, chunk: int = 100, **thresholds) -> PatternShares:
    """Per-head fixed words and shares of label groups, resampling the texts.

    Args:
        per_text: one :class:`HeadSums` per text, or their :func:`stack_sums`.
        n_boot: resamples of the texts; ``chunk`` of them are summed at a time.
        thresholds: ``positional``, ``offset_share``, ``special``, ``block``,
            ``broad`` (defaults: :data:`attnlab.analysis.taxonomy.DEFAULTS`).
    """
    s = per_text if isinstance(per_text, StackedSums) else stack_sums(per_text)
    t = {**DEFAULTS, **thresholds}
    weights = resample_counts(s.n_texts, n_boot, seed).astype(float)  # (B, N)
    strengths, shares = [], {k: [] for k in ("fixed", "heterogeneous", "broad")}
    for start in range(0, n_boot, chunk):
        part = s.weighted(weights[start:start + chunk])
        strengths.append(fixed_strength(part, positional=t["positional"], offset_share=t["offset_share"],
                                        special=t["special"]))
        kinds = kinds_of(part, **t)
        for k in shares:
            shares[k].append(kinds[k].mean(axis=(1, 2)))
    total = s.total()
    point = fixed_strength(total, positional=t["positional"], offset_share=t["offset_share"], special=t["special"])[0]
    point_kinds = kinds_of(total, **t)
    strength = interval_from_samples(point, np.concatenate(strengths), level=level, n=s.n_texts)
    low, high = np.asarray(strength.low), np.asarray(strength.high)
    sides = np.where(low >= 1.0, ABOVE, np.where(high < 1.0, BELOW, STRADDLES)).astype(int)  # (L, H)
    share = {k: interval_from_samples(float(point_kinds[k][0].mean()), np.concatenate(v), level=level, n=s.n_texts)
             for k, v in shares.items()}
    return PatternShares(strength, sides, share["fixed"], share["heterogeneous"], share["broad"], t)
