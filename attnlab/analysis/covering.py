"""Do heads cover for one another? Effect vectors of heads masked alone and together.

A head's *effect vector* on a text is how far masking it moves the text's
sentence vector (the mean-pooled final hidden state)::

    delta_S(x) = v_without S(x) - v_full(x)        (D,) per text, for a set S of heads

If the heads of ``S`` acted independently, their effects would add up:
``delta_S = sum_i delta_i``. The **covering ratio** compares the two lengths,

    ratio = mean_x ||delta_S(x)|| / mean_x ||sum_{i in S} delta_i(x)||

(a ratio of means over the texts, then averaged over the sets: numerators and
denominators are summed over sets and texts before dividing, so a text or set
where nothing moves cannot blow it up). Independent heads give exactly 1,
whatever the directions of their effects: aligned, orthogonal or opposed
(``1 - cos`` did not have this property: it is second order near the full
model, so two independent heads scored above "additive" when their effects
pointed the same way and below it when they pointed opposite ways). Then

* **clearly above 1** (``ratio > COVERS``): the heads *cover for one another*.
  A head backed up by others costs little alone, and only losing the backups
  too shows what they carried (redundancy, the random-forest picture);
* **near 1**: their effects *add up independently*;
* **clearly below 1** (``ratio < 1 / COVERS``): they *work only together* (one
  missing head already breaks what the set does: synergy) or the damage
  *saturates*.

"Each head is weak" is measured on the same vectors, with the strongest head
chosen on one half of the texts and scored on the other
(:func:`held_out_top_head`), so the choice cannot flatter the score.

Everything here works on arrays (``(N, D)`` per set of heads); the passes
that produce them are :func:`attnlab.analysis.importance.single_head_states`
and :func:`~attnlab.analysis.importance.head_sets_states` (see :func:`covering_study`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from attnlab.analysis.importance import (
    Objective,
    head_sets_states,
    masked_states,
    sentence_vectors_of,
    single_head_states,
)
from attnlab.analysis.stats import Interval, bootstrap
from attnlab.core.checks import check_positive_int
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record

#: the heads cover for one another when the covering ratio lies clearly above this (1 = additive)
COVERS = 1.1
#: the lines of the sensitivity table
COVERS_GRID = (1.05, 1.1, 1.2)
#: the three readings of a covering ratio, as printed
READINGS = {"cover": N_("cover for one another (redundant)"), "add": N_("add up independently"),
            "together": N_("work only together (or saturate)"), "unclear": N_("fall between two readings")}
#: percentiles of the per-set ratios shown as the random sets' band
SET_BAND = (10.0, 90.0)


def reading(interval: Interval, covers: float = COVERS) -> str:
    """Which of :data:`READINGS` an interval of the covering ratio supports: ``"cover"`` when it
    lies wholly above ``covers``, ``"together"`` wholly below ``1 / covers``, ``"add"`` wholly
    between the two, ``"unclear"`` when it reaches across a line."""
    if interval.above(covers):
        return "cover"
    if interval.below(1.0 / covers):
        return "together"
    if float(interval.low) >= 1.0 / covers and float(interval.high) <= covers:
        return "add"
    return "unclear"


def reading_words(key: str) -> str:
    """A reading's words in the reader's language."""
    return _(READINGS[key])


def effect_norms(full: np.ndarray, single: np.ndarray, joint: np.ndarray,
                 sets: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per set and text, the lengths the covering ratio compares.

    Args:
        full: ``(N, D)`` sentence vectors of the full model.
        single: ``(K, N, D)`` with head ``k`` alone masked (``K`` heads, flat index).
        joint: ``(S, N, D)`` with set ``s`` masked together.
        sets: ``S`` lists of flat head indices.

    Returns:
        ``(joint_norm (S, N), sum_norm (S, N), single_norm (N, K))``: ``||delta_S||``,
        ``||sum_i delta_i||`` and every head's ``||delta_k||``.
    """
    full = np.asarray(full, dtype=float)  # (N, D)
    deltas = np.asarray(single, dtype=float) - full[None]  # (K, N, D)
    joint_deltas = np.asarray(joint, dtype=float) - full[None]  # (S, N, D)
    if len(sets) != len(joint_deltas):
        raise ValueError(f"{len(sets)} sets but {len(joint_deltas)} joint passes")
    sums = np.stack([deltas[list(s)].sum(axis=0) for s in sets])  # (S, N, D)
    return (np.linalg.norm(joint_deltas, axis=-1), np.linalg.norm(sums, axis=-1),
            np.linalg.norm(deltas, axis=-1).T)


@dataclass
class Covering(Record):
    """What masking heads together does to the sentence vectors, against the sum of what each
    head does alone (a :class:`~attnlab.core.records.Record`: lesson 11 saves it).

    Attributes:
        k: heads in each set.
        sets: ``S`` random sets, flat head indices (``layer * heads + head``).
        joint_norm: ``(S, N)``: ``||delta_S||`` per set and text.
        sum_norm: ``(S, N)``: ``||sum_i delta_i||`` over the set's heads.
        single_norm: ``(N, K)``: every head's ``||delta_k||`` alone.
        all_norm: ``(N,)``: ``||delta||`` with every head masked.
        top_set: the ``k`` heads ranked most important on other texts (flat indices), or empty.
        top_joint_norm, top_sum_norm: ``(N,)`` the same two lengths for ``top_set``.
        n_heads: heads per layer (to turn flat indices into ``(layer, head)``).
        seed: fixes the sets and the halves of :func:`held_out_top_head`.
    """

    k: int
    sets: list[list[int]]
    joint_norm: np.ndarray
    sum_norm: np.ndarray
    single_norm: np.ndarray
    all_norm: np.ndarray
    n_heads: int
    top_set: list[int] = field(default_factory=list)
    top_joint_norm: np.ndarray | None = None
    top_sum_norm: np.ndarray | None = None
    seed: int = 0

    @property
    def n_texts(self) -> int:
        return int(np.shape(self.joint_norm)[1])

    def head(self, flat: int) -> tuple[int, int]:
        """A flat head index as ``(layer, head)``, 0-based."""
        return int(flat) // self.n_heads, int(flat) % self.n_heads


def ratio_of_means(pairs: np.ndarray) -> float:
    """``pairs[:, 0].mean() / pairs[:, 1].mean()`` (NaN when the denominator is 0)."""
    top, bottom = np.asarray(pairs, dtype=float).mean(axis=0)
    return float(top / bottom) if bottom > 0 else float("nan")


def covering_ratio(cov: Covering, *, seed: int = 0) -> Interval:
    """``sum ||delta_S|| / sum ||sum_i delta_i||`` over the random sets and the texts, with a
    bootstrap interval over the **texts** (each resample draws texts, the sets stay)."""
    per_text = np.stack([np.asarray(cov.joint_norm).mean(axis=0), np.asarray(cov.sum_norm).mean(axis=0)],
                        axis=1)  # (N, 2)
    return bootstrap(per_text, ratio_of_means, seed=seed)


def set_band(cov: Covering) -> tuple[float, float, float]:
    """``(low, median, high)`` of the per-set covering ratios (each a ratio of means over the
    texts): the :data:`SET_BAND` percentiles over the random sets, how much the answer
    depends on which heads are drawn."""
    ratios = np.asarray(cov.joint_norm).mean(axis=1) / np.asarray(cov.sum_norm).mean(axis=1)  # (S,)
    low, high = np.percentile(ratios, SET_BAND)
    return float(low), float(np.median(ratios)), float(high)


def top_set_ratio(cov: Covering, *, seed: int = 0) -> Interval | None:
    """The covering ratio of the ``k`` heads ranked most important on other texts (None when not measured)."""
    if not cov.top_set or cov.top_joint_norm is None:
        return None
    return bootstrap(np.stack([cov.top_joint_norm, cov.top_sum_norm], axis=1), ratio_of_means, seed=seed)


def halves(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint halves of ``range(n)``, fixed by ``seed`` (the first gets ``n // 2``)."""
    if n < 4:
        raise ValueError(f"two halves need at least 4 texts, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2:])


def held_out_top_head(cov: Covering, *, seed: int | None = None) -> tuple[Interval, int]:
    """``(weak ratio, head)``: the head whose ``||delta||`` alone is largest on one half of the
    texts, and its ``||delta||`` on the **other** half over what masking every head does there
    (``mean ||delta_top|| / mean ||delta_all||``, interval over the scoring half's texts).

    Choosing and scoring on the same texts would reward the head for fitting those texts.
    """
    single = np.asarray(cov.single_norm, dtype=float)  # (N, K)
    choose, score = halves(len(single), cov.seed if seed is None else seed)
    top = int(np.argmax(single[choose].mean(axis=0)))
    pairs = np.stack([single[score, top], np.asarray(cov.all_norm, dtype=float)[score]], axis=1)  # (N/2, 2)
    return bootstrap(pairs, ratio_of_means, seed=cov.seed), top


def random_sets(n_total: int, k: int, n_sets: int, seed: int = 0) -> list[list[int]]:
    """``n_sets`` random sets of ``k`` distinct flat head indices out of ``n_total``, fixed by ``seed``."""
    k, n_sets = check_positive_int(k, "k"), check_positive_int(n_sets, "n_sets")
    if k > n_total:
        raise ValueError(f"a set of {k} heads out of {n_total}")
    rng = np.random.default_rng(seed)
    return [sorted(int(i) for i in rng.choice(n_total, size=k, replace=False)) for _draw in range(n_sets)]


def covering_from_vectors(full: np.ndarray, single: np.ndarray, joint: np.ndarray, everything: np.ndarray,
                          sets: Sequence[Sequence[int]], n_heads: int, *, seed: int = 0) -> Covering:
    """:class:`Covering` from sentence vectors measured elsewhere.

    Args:
        full: ``(N, D)`` full model; single: ``(K, N, D)`` each head alone masked (flat index);
        joint: ``(S, N, D)`` each set of ``sets`` masked; everything: ``(N, D)`` every head masked.
        n_heads: heads per layer.
    """
    sets = [[int(i) for i in s] for s in sets]
    sizes = {len(s) for s in sets}
    if len(sizes) != 1:
        raise ValueError(f"every set must have the same size, got sizes {sorted(sizes)}")
    joint_norm, sum_norm, single_norm = effect_norms(full, single, joint, sets)
    return Covering(sizes.pop(), sets, joint_norm, sum_norm, single_norm,
                    np.linalg.norm(np.asarray(everything, dtype=float) - np.asarray(full, dtype=float), axis=-1),
                    n_heads, seed=seed)


def covering_study(m: LoadedModel, objective: Objective, *, share: float = 0.1, n_sets: int = 20,
                   importance: np.ndarray | None = None, seed: int = 0, progress: bool = False,
                   threads: int | None = None, single: np.ndarray | None = None) -> Covering:
    """Measure :class:`Covering` on the texts of ``objective`` (any objective: only its texts are used).

    Passes: the full model, every head alone (``layers x heads``, unless ``single`` ``(L, H, N, D)``
    from an earlier :func:`~attnlab.analysis.importance.single_head_states` is given), every head
    together, ``n_sets`` random sets of ``round(share * layers * heads)`` heads, and, when
    ``importance`` ``(L, H)`` is given (ranked on *other* texts), the set of the most important
    heads of the same size.
    """
    total = m.n_layers * m.n_heads
    k = max(1, int(round(share * total)))
    sets = random_sets(total, k, n_sets, seed)

    def pairs(flat: Sequence[int]) -> list[tuple[int, int]]:
        return [(int(i) // m.n_heads, int(i) % m.n_heads) for i in flat]

    full = masked_states(m, objective, [], sentence_vectors_of, threads=threads)  # (N, D)
    if single is None:
        single = single_head_states(m, objective, sentence_vectors_of, progress=progress, threads=threads)
    single = np.asarray(single, dtype=float).reshape((total,) + full.shape)  # (K, N, D)
    top = ([] if importance is None else
           [int(i) for i in np.argsort(-np.asarray(importance, dtype=float).ravel(), kind="stable")[:k]])
    together = [pairs(s) for s in sets] + [pairs(range(total))] + ([pairs(top)] if top else [])
    vectors = np.stack(head_sets_states(m, objective, together, sentence_vectors_of, threads=threads))  # (S+1(+1), N, D)
    joint, everything = vectors[:len(sets)], vectors[len(sets)]  # (S, N, D), (N, D)
    cov = covering_from_vectors(full, single, joint, everything, sets, m.n_heads, seed=seed)
    if top:
        top_joint = vectors[-1]  # (N, D)
        t_joint, t_sum, _single = effect_norms(full, single, top_joint[None], [top])
        cov.top_set, cov.top_joint_norm, cov.top_sum_norm = top, t_joint[0], t_sum[0]
    return cov
