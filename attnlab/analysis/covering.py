"""Do heads cover for one another? Effect vectors of heads masked alone and together.

A head's *effect vector* on a text is how far masking it moves the text's
sentence vector (the mean-pooled final hidden state)::

    delta_S(x) = v_without S(x) - v_full(x)        (D,) per text, for a set S of heads

If the heads of ``S`` acted independently, their effects would add up:
``delta_S = sum_i delta_i``. Each number below is pooled over the sets and the
texts (sums over sets and texts before dividing, so a text or set where nothing
moves cannot blow it up):

* the **covering ratio** ``mean ||delta_S|| / mean ||sum_i delta_i||``;
* the **gain** ``g`` of the decomposition ``delta_S = g * sum_i delta_i + r``
  (least squares, ``r`` orthogonal to the sum): above 1 the set does *more* along
  the sum than its heads alone, below 1 less (synergy, saturation);
* the **residual share** ``||r|| / ||sum_i delta_i||``;
* the **interaction share** ``||delta_S - delta_S^null|| / ||sum_i delta_i||``
  (:func:`interaction_excess`): how far the set's move is from the move additive
  heads would make (the null, below), as a share of the heads' summed moves. This is
  the number the sets' readings (:func:`reading`) rest on: a description of large sets,
  shown beside the verdicts, which read the pairs of heads (below).

**Exactly 1 is not the line.** Exactly additive effects give ratio 1 and gain 1,
but the sentence vector comes out of a LayerNorm: effects that add up *before*
it do not add up after it (the norm is rescaled, the mean removed). The line is
therefore set by a **LayerNorm null** (:func:`additive_null`): the heads'
effects measured at the input of the model's own final LayerNorm, added up there
and passed through it, on the same sets and texts. ``delta_S^null`` is that
move, and the interaction share is the real move's distance from it, text by
text: the null's own bending is taken out *before* the length is taken.

**Why not the ratio's excess.** A backup pair's shared job appears only when both
heads are masked, in a direction of its own: it lengthens ``delta_S`` only in
quadrature (``sqrt(a^2 + b^2) - a``), so a job half or a third the size of a lone
head's effect moved the ratio by +0.03 and +0.01 at 72 of 144 heads and read "add
up". The interaction share grows in proportion to the job. Its *direction* is read
from two excesses over the null: the gain's (:func:`gain_excess`; above 0 the set
does more along the sum, below 0 less: saturation or synergy) and the covering
ratio's (:func:`excess_over_null`; a job pointing elsewhere than the heads' own
moves leaves the gain alone and lengthens the move).

* interaction share wholly above the floor (:data:`COVER_FLOOR`) and a move clearly
  longer than the null's: the heads *cover for one another*;
* above the floor and clearly shorter: they *work only together*, or the damage
  *saturates*; above the floor with neither, they *interact* (not additive, but
  neither covering nor saturating can be told);
* wholly below the equivalence margin (:data:`ADD_MARGIN`): their effects *add up*
  (as far as the sets can see, below);
* otherwise the reading falls between two of them.

**Power.** Two heads that back each other up show only when both land in the
same set; a head's partner is in its set with chance ``(k - 1) / (n - 1)``
(:func:`meet_chance`; sets of 14 of 144 heads: 9%). Below :data:`MIN_MEET` a
reading of "add up" is "too few backup pairs in a set to tell", so
:func:`covering_study` also masks larger sets (:data:`SHARES`: 10% and 50% of the
heads), and the verdicts decide on the largest.

"Each head is weak" is measured on the same vectors, with the strongest head
chosen on one half of the texts and scored on the other
(:func:`held_out_top_head`), so the choice cannot flatter the score, against the
**sum of every head's move alone**, not against masking every head (which breaks
the model and makes any head look small). Whether masking every head moves the
vectors at all beyond the "costs nothing" tolerance of lessons 11 and 13
(:func:`all_masked_move`) is measured on the same texts: where it does not,
"add up" says nothing (tiny moves add up whatever the heads do).

**Pairs of heads of one layer** (:func:`layer_pairs`): the verdicts of conclusion 4 decide here.
Every number above masks sets of 14 or 72 heads at once, and a real encoder's intermediate
LayerNorms, GELU and softmax bend so large a move whatever the heads do: trained or not, models
give an interaction share of 0.4-0.6 at 72 of 144 heads, far past any margin of "add up", and the
final-LayerNorm null removes only the last bend. Two heads are a small perturbation, and the heads
of one layer are the ensemble the claim is about (they sit side by side and their outputs are
summed into the same residual stream). For each of :data:`PAIR_MATCHINGS` random matchings of
each layer's heads, each pair ``(a, b)`` is masked together, and its **pair interaction** is::

    r_ab = (sum_n ||delta_ab(n)|| - sum_n ||delta_a(n) + delta_b(n)||) / sum_n ||delta_a(n) + delta_b(n)||

(sums over the texts): how much further (above 0) or less far (below 0) masking both heads moves
the sentence vectors than their two effects added up. Heads that back each other up cost little
alone and much together (``r > 0``: they **cover** for one another); heads whose damage saturates
cost less together than apart (``r < 0``). The verdicts read two means over the pairs, each with an
interval that resamples the texts and the pairs together (:func:`pair_interval`):

* the **signed** mean ``mean_p r_p`` (:func:`pair_interaction`): wholly above :data:`PAIR_FLOOR`,
  the heads cover for one another; wholly below ``-PAIR_FLOOR``, they saturate;
* the **unsigned** mean ``mean_p |r_p|`` (:func:`pair_deviation`): wholly below :data:`PAIR_MARGIN`,
  the pairs add up (covering and saturating pairs cannot cancel in it).

**Power.** A head's backup partner in its layer shares one of its pairs with chance
``PAIR_MATCHINGS / (H - 1)`` (2 of 11 at 12 heads a layer; :func:`pair_meet_chance`): the pairs see
covering spread over a layer's heads, not one hidden pair among 66.

Everything here works on arrays (``(N, D)`` per set of heads); the passes
that produce them are :func:`attnlab.analysis.importance.single_head_states`
and :func:`~attnlab.analysis.importance.head_sets_states` (see :func:`covering_study`).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from attnlab.analysis.costs_nothing import TOLERANCE_SHARE, mean_text_distance
from attnlab.analysis.importance import (
    Objective,
    head_sets_states,
    masked_states,
    sentence_vectors_of,
    single_head_states,
)
from attnlab.analysis.stats import Interval, bootstrap, bootstrap_mean, draws_of, resample_counts, reusable
from attnlab.core.checks import check_positive_int
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record

#: the large sets' readings (a description since the verdicts read the pairs of heads, :data:`PAIR_MARGIN`):
#: "add up": the interaction share beyond the LayerNorm null wholly below this equivalence margin
#: (half a percent of the heads' summed moves; a backup job 0.03 the size of a lone head's effect,
#: with half the heads in pairs, gives 0.019 at 72 of 144 heads, its interval's low end 0.018)
ADD_MARGIN = 0.005
#: "cover" or "work only together": the interaction share wholly above this floor (2% of the summed
#: moves: a backup job as large as a lone head's gives 0.60 at 72 of 144 heads, one a hundredth of
#: that 0.006). Measured at the report's sizes on multilingual-e5-small: 0.59 [0.57, 0.62], on its
#: untrained twin (weights shuffled within each tensor) 0.64 [0.64, 0.65], a shorter move ("work only
#: together"): real encoders interact far past the floor, trained or not; the direction tells them apart
COVER_FLOOR = 0.02
#: the equivalence margins and floors of the sensitivity tables
MARGIN_GRID = (0.0025, 0.005, 0.01)
FLOOR_GRID = (0.01, 0.02, 0.05)
#: shares of the heads in each random set: 10% (the article's scale) and 50% (where backup pairs meet)
SHARES = (0.1, 0.5)
#: "add up" needs sets where a head's backup partner is present at least this often (:func:`meet_chance`)
MIN_MEET = 0.25
#: the readings of a covering ratio against its null, as printed
READINGS = {"cover": N_("cover for one another (redundant)"), "add": N_("add up independently"),
            "together": N_("work only together (or saturate)"), "unclear": N_("fall between two readings"),
            "no power": N_("look additive, but sets this small rarely hold both heads of a backup pair"),
            "interact": N_("do not add up, but move neither clearly further nor clearly less far than additive heads")}
#: percentiles of the per-set ratios shown as the random sets' band
SET_BAND = (10.0, 90.0)
#: random matchings of each layer's heads masked in pairs (each head in this many pairs: as many pairs
#: as heads, one more sweep of the size of the single-head one)
PAIR_MATCHINGS = 2
#: "add up": the mean |r| of the pairs (:func:`pair_deviation`) wholly below this margin, 5% of a pair's
#: summed move. A real encoder's own bends lie well inside it (64 texts, 2 matchings a layer; 2-core CPU,
#: 2026-12-07): multilingual-e5-small 0.013 [0.009, 0.021], its untrained twin 0.027 [0.023, 0.031];
#: all-MiniLM-L6-v2 0.011 [0.009, 0.014], its twin 0.016 [0.014, 0.019]. A backup pair whose shared job is
#: half a lone head's effect, its heads doing a twentieth of one alone, gives r of about 6
PAIR_MARGIN = 0.05
#: "cover" (or "saturate"): the signed mean r of the pairs (:func:`pair_interaction`) wholly above this
#: floor (or below minus it), 5% of a pair's summed move: on the same runs the signed means are
#: multilingual-e5-small +0.006 [+0.001, +0.012] (twin +0.020 [+0.015, +0.025]) and all-MiniLM-L6-v2
#: +0.007 [+0.004, +0.011] (twin +0.008 [+0.003, +0.012]). Power at the course's sizes (144 pairs, 128
#: texts), every head of a layer in a backup pair of its layer: a mean r of twice the floor reads "cover"
#: in 6-7 of 10 planted models, half the floor in none (tests/test_covering.py); smoke mode's 4 texts
#: cannot tell (too few units)
PAIR_FLOOR = 0.05
#: the pair margins and floors of the sensitivity tables
PAIR_GRID = (0.025, 0.05, 0.1)
#: a pair whose summed move, summed over the texts, is below this share of the median pair's is left
#: out of the means (its ratio would be float noise over float noise)
TINY_PAIR = 1e-4
#: the readings of the pairs, as printed
PAIR_READINGS = {"cover": N_("cover for one another: two heads masked together cost more than their two moves added"),
                 "saturate": N_("saturate, or work only together: two heads masked together cost less than their two moves added"),
                 "add": N_("add up: two heads masked together move the vectors as far as their two moves added"),
                 "interact": N_("do not add up, but neither cover for one another nor saturate on average"),
                 "unclear": N_("fall between two readings")}


def meet_chance(k: int, n_total: int) -> float:
    """Chance that a head's one backup partner lands in the same random set of ``k`` of ``n_total``
    heads: ``(k - 1) / (n_total - 1)`` (14 of 144: 0.09; 72 of 144: 0.50)."""
    return (k - 1) / (n_total - 1) if n_total > 1 else 0.0


def direction(ratio: Interval) -> int:
    """Which way an interaction points, from the covering ratio's excess over the null: ``1`` (the
    set moves further than additive heads would: wholly above 0), ``-1`` (less far: wholly below
    0), ``0`` (cannot tell).

    Not the gain's excess, although it is shown beside: a backed-up job lengthens the move, but the
    final LayerNorm divides the larger input by its larger spread, which pulls the gain *below* the
    null's (-0.04 [-0.06, -0.02] with jobs as large as a lone head's, 72 of 144 heads, the ratio's
    excess +0.13), so the gain read covering as "work only together". Saturation before the final
    LayerNorm lowers the gain (-0.06) but not the length the LayerNorm restores (excess 0.00
    [-0.02, 0.02] at 72 of 144 heads): it reads "interact", not "cover"."""
    if ratio.above(0.0):
        return 1
    return -1 if ratio.below(0.0) else 0


def reading(interaction: Interval, way: int = 0, meet: float = 1.0, margin: float = ADD_MARGIN,
            floor: float = COVER_FLOOR) -> str:
    """Which of :data:`READINGS` an interval of the **interaction share beyond the LayerNorm null**
    supports, with its :func:`direction` ``way``: ``"cover"`` (``"together"``) wholly above
    ``floor`` with a longer (shorter) move than the null's, ``"add"`` wholly below ``margin`` when
    the sets have power (``meet``, the chance a backup partner shares the set, at least
    :data:`MIN_MEET`; else ``"no power"``), ``"interact"`` wholly above ``floor`` with no clear
    direction (not additive, neither covering nor saturating), ``"unclear"`` otherwise."""
    if interaction.above(floor):
        return "interact" if not way else ("cover" if way > 0 else "together")
    if interaction.below(margin):
        return "add" if meet >= MIN_MEET else "no power"
    return "unclear"


def reading_words(key: str) -> str:
    """A reading's words in the reader's language."""
    return _(READINGS[key])


def effect_norms(full: np.ndarray, single: np.ndarray, joint: np.ndarray,
                 sets: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per set and text, the lengths the covering ratio compares, and the product the gain needs.

    Args:
        full: ``(N, D)`` sentence vectors of the full model.
        single: ``(K, N, D)`` with head ``k`` alone masked (``K`` heads, flat index).
        joint: ``(S, N, D)`` with set ``s`` masked together.
        sets: ``S`` lists of flat head indices.

    Returns:
        ``(joint_norm (S, N), sum_norm (S, N), dot (S, N), single_norm (N, K))``: ``||delta_S||``,
        ``||sum_i delta_i||``, ``<delta_S, sum_i delta_i>`` and every head's ``||delta_k||``.
    """
    full = np.asarray(full, dtype=float)  # (N, D)
    joint_deltas = np.asarray(joint, dtype=float) - full[None]  # (S, N, D)
    if len(sets) != len(joint_deltas):
        raise ValueError(f"{len(sets)} sets but {len(joint_deltas)} joint passes")

    # one head's delta at a time, computed once: no (K, N, D) copy beside ``single``
    members = [{int(i) for i in s} for s in sets]
    sums = np.zeros((len(sets),) + full.shape)  # (S, N, D)
    single_norm = np.empty((full.shape[0], len(single)))  # (N, K)
    for k in range(len(single)):
        delta = np.asarray(single[k], dtype=float) - full  # (N, D)
        single_norm[:, k] = np.linalg.norm(delta, axis=-1)
        for s, member in enumerate(members):
            if k in member:
                sums[s] += delta
    return (np.linalg.norm(joint_deltas, axis=-1), np.linalg.norm(sums, axis=-1),
            np.einsum("snd,snd->sn", joint_deltas, sums), single_norm)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """``(..., D)``: LayerNorm over the last axis, ``weight * (x - mean) / sqrt(var + eps) + bias``."""
    centred = x - x.mean(axis=-1, keepdims=True)
    return weight * centred / np.sqrt((centred ** 2).mean(axis=-1, keepdims=True) + eps) + bias


def pooling_matrix(text_of: np.ndarray, n_texts: int) -> np.ndarray:
    """``(N, T_all)``: row ``n`` averages the tokens of text ``n`` (``text_of`` ``(T_all,)``: each
    token's text), so ``P @ tokens`` gives the sentence vectors."""
    text_of = np.asarray(text_of, dtype=int)
    counts = np.bincount(text_of, minlength=n_texts).astype(float)  # (N,)
    pool = np.zeros((n_texts, len(text_of)))
    pool[text_of, np.arange(len(text_of))] = 1.0
    return pool / np.maximum(counts, 1.0)[:, None]


def additive_null(z_full: np.ndarray, blocks: Iterable[tuple[Sequence[int], np.ndarray]], sets: Sequence[Sequence[int]],
                  norm: tuple[np.ndarray, np.ndarray, float], text_of: np.ndarray, n_texts: int,
                  single: np.ndarray, joint: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The covering numbers heads would give if their effects added up **exactly** until the model's
    final LayerNorm: the null that sets the covering line (not 1).

    Every token's input to the final LayerNorm is measured with each head alone masked; a set's
    effects there are added, ``z_full + sum_i (z_i - z_full)``, passed through the LayerNorm,
    and pooled into sentence vectors like the real ones. With one head, the null is the real
    single-head vector, so the two ratios differ only in what the heads do together.

    Args:
        z_full: ``(T_all, D)``: the full model's LayerNorm inputs, every real token of every text.
        blocks: ``(flat head indices (k,), z (k, T_all, D))``: the same with each of those heads
            masked (a layer at a time keeps the memory to one layer's heads).
        sets: ``S`` lists of flat head indices.
        norm: the LayerNorm's ``(weight (D,), bias (D,), eps)``.
        text_of: ``(T_all,)`` each token's text; ``n_texts``: ``N``.
        single: ``(K, N, D)`` the real sentence vectors with each head alone masked.
        joint: ``(S, N, D)`` the real sentence vectors with each set masked.

    Returns:
        ``(joint_norm (S, N), sum_norm (S, N), dot (S, N))`` of the null, as :func:`effect_norms`, and
        ``interaction_norm (S, N)``: ``||delta_S - delta_S^null||``, how far each real move is from
        the null's.
    """
    weight, bias, eps = (np.asarray(norm[0], dtype=float), np.asarray(norm[1], dtype=float), float(norm[2]))
    z_full = np.asarray(z_full, dtype=np.float64)  # (T_all, D)
    members = [set(int(i) for i in s) for s in sets]
    # (S, T_all, D): each set's added effects, kept in float32 (on bert-base's shape with 40 sets of
    # 128 texts a float64 copy, and the LayerNorm's temporaries over all sets at once, took 2 GB);
    # each set's sum goes through the LayerNorm on its own, in float64
    summed = np.zeros((len(sets),) + z_full.shape, dtype=np.float32)
    for heads, z in blocks:
        for j, head in enumerate(heads):  # one head's (T_all, D) difference at a time: no block-sized copies
            in_sets = [s for s, member in enumerate(members) if int(head) in member]
            if in_sets:
                delta = (np.asarray(z[j], dtype=np.float64) - z_full).astype(np.float32)  # (T_all, D)
                for s in in_sets:
                    summed[s] += delta
    pool = pooling_matrix(text_of, n_texts)  # (N, T_all)
    full = pool @ layer_norm(z_full, weight, bias, eps)  # (N, D)
    null_joint = np.stack([pool @ layer_norm(z_full + summed[s], weight, bias, eps)
                           for s in range(len(sets))])  # (S, N, D)
    joint_norm, sum_norm, dot, _single = effect_norms(full, single, null_joint, sets)
    # delta_S - delta_S^null: the full model's vector cancels (the null's is the real one, to float32)
    interaction = np.linalg.norm(np.asarray(joint, dtype=float) - null_joint, axis=-1)  # (S, N)
    return joint_norm, sum_norm, dot, interaction


@dataclass
class Covering(Record):
    """What masking heads together does to the sentence vectors, against the sum of what each
    head does alone (a :class:`~attnlab.core.records.Record`: lesson 11 saves it).

    Attributes:
        k: heads in each of the smallest sets (the sizes: :attr:`sizes`).
        sets: ``S`` random sets, flat head indices (``layer * heads + head``), of one or more sizes.
        joint_norm: ``(S, N)``: ``||delta_S||`` per set and text.
        sum_norm: ``(S, N)``: ``||sum_i delta_i||`` over the set's heads.
        single_norm: ``(N, K)``: every head's ``||delta_k||`` alone.
        all_norm: ``(N,)``: ``||delta||`` with every head masked.
        top_set: the ``k`` heads ranked most important on other texts (flat indices), or empty.
        top_joint_norm, top_sum_norm: ``(N,)`` the same two lengths for ``top_set``.
        n_heads: heads per layer (to turn flat indices into ``(layer, head)``).
        seed: fixes the sets and the halves of :func:`held_out_top_head`.
        dot: ``(S, N)``: ``<delta_S, sum_i delta_i>`` (for the gain), or None in an older record.
        null_joint_norm, null_sum_norm, null_dot: ``(S, N)``: the same three under the LayerNorm
            null (:func:`additive_null`), or None when the LayerNorm was not known.
        interaction_norm: ``(S, N)``: ``||delta_S - delta_S^null||``, or None (older record, no null).
        all_distance: ``(N,)``: ``1 - cos`` between each text's vector with every head masked and
            the full model's, or None in an older record.
        text_distance: the mean ``1 - cos`` between two different texts' full vectors (the unit of
            the "costs nothing" tolerance, :mod:`attnlab.analysis.costs_nothing`), NaN when unknown.
        pairs: ``P`` pairs of heads of one layer (flat indices, :func:`layer_pairs`), or empty in
            an older record.
        pair_joint_norm: ``(P, N)``: ``||delta_ab||``, both heads masked together, or None.
        pair_sum_norm: ``(P, N)``: ``||delta_a + delta_b||``, their moves alone added, or None.
        pair_interaction_norm: ``(P, N)``: ``||delta_ab - delta_a - delta_b||`` (shown beside), or None.
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
    dot: np.ndarray | None = None
    null_joint_norm: np.ndarray | None = None
    null_sum_norm: np.ndarray | None = None
    null_dot: np.ndarray | None = None
    interaction_norm: np.ndarray | None = None
    all_distance: np.ndarray | None = None
    text_distance: float = float("nan")
    pairs: list[list[int]] = field(default_factory=list)
    pair_joint_norm: np.ndarray | None = None
    pair_sum_norm: np.ndarray | None = None
    pair_interaction_norm: np.ndarray | None = None

    @property
    def n_texts(self) -> int:
        return int(np.shape(self.joint_norm)[1])

    @property
    def n_total(self) -> int:
        """Heads in the model (``layers x heads``)."""
        return int(np.shape(self.single_norm)[1])

    @property
    def sizes(self) -> list[int]:
        """The set sizes measured, smallest first."""
        return sorted({len(s) for s in self.sets})

    @property
    def has_null(self) -> bool:
        """Whether the gain and the LayerNorm null were measured (records from before them lack both)."""
        return all(x is not None for x in (self.dot, self.null_joint_norm, self.null_sum_norm, self.null_dot))

    @property
    def has_interaction(self) -> bool:
        """Whether the interaction share and the all-masked move were measured (records from before lack them)."""
        return self.has_null and self.interaction_norm is not None and self.has_move

    @property
    def has_move(self) -> bool:
        """Whether the all-masked move was measured (what conclusion 4 reads beside the pairs)."""
        return self.all_distance is not None

    @property
    def has_pairs(self) -> bool:
        """Whether pairs of heads were masked together (records from before the pairs lack them)."""
        return bool(self.pairs) and self.pair_joint_norm is not None and self.pair_sum_norm is not None

    def of_size(self, size: int | None = None) -> np.ndarray:
        """Indices of the sets of ``size`` heads (default :attr:`k`)."""
        size = self.k if size is None else int(size)
        chosen = np.flatnonzero([len(s) == size for s in self.sets])
        if not len(chosen):
            raise ValueError(f"no sets of {size} heads (sizes measured: {self.sizes})")
        return chosen

    def head(self, flat: int) -> tuple[int, int]:
        """A flat head index as ``(layer, head)``, 0-based."""
        return int(flat) // self.n_heads, int(flat) % self.n_heads


def ratio_of_means(pairs: np.ndarray) -> float:
    """``pairs[:, 0].mean() / pairs[:, 1].mean()`` (NaN when the denominator is 0)."""
    top, bottom = np.asarray(pairs, dtype=float).mean(axis=0)
    return float(top / bottom) if bottom > 0 else float("nan")


@reusable
def covering_ratio(cov: Covering, size: int | None = None, *, seed: int = 0) -> Interval:
    """``sum ||delta_S|| / sum ||sum_i delta_i||`` over the random sets of ``size`` heads (default
    :attr:`Covering.k`) and the texts, with a bootstrap interval over the **texts** (each
    resample draws texts, the sets stay)."""
    rows = cov.of_size(size)
    per_text = np.stack([np.asarray(cov.joint_norm)[rows].mean(axis=0), np.asarray(cov.sum_norm)[rows].mean(axis=0)],
                        axis=1)  # (N, 2)
    return bootstrap(per_text, ratio_of_means, seed=seed)


def _per_text(cov: Covering, rows: np.ndarray, null: bool) -> np.ndarray:
    """``(N, 5)``: per text, summed over the chosen sets: ``||delta_S||``, ``||sum||``,
    ``<delta_S, sum>``, ``||sum||^2`` and ``||delta_S||^2``."""
    joint, total, dot = ((cov.null_joint_norm, cov.null_sum_norm, cov.null_dot) if null
                         else (cov.joint_norm, cov.sum_norm, cov.dot))
    joint, total, dot = (np.asarray(x, dtype=float)[rows] for x in (joint, total, dot))  # (S', N) each
    return np.stack([joint.sum(0), total.sum(0), dot.sum(0), (total ** 2).sum(0), (joint ** 2).sum(0)], axis=1)


def _gain(rows: np.ndarray) -> float:
    """``g = sum <delta_S, sum> / sum ||sum||^2`` from :func:`_per_text` rows."""
    return float(rows[:, 2].sum() / rows[:, 3].sum()) if rows[:, 3].sum() > 0 else float("nan")


def _residual(rows: np.ndarray) -> float:
    """``sqrt(sum ||delta_S - g sum||^2 / sum ||sum||^2)``, with the pooled gain ``g``."""
    g = _gain(rows)
    left = rows[:, 4].sum() - 2 * g * rows[:, 2].sum() + g * g * rows[:, 3].sum()
    return float(np.sqrt(max(left, 0.0) / rows[:, 3].sum())) if rows[:, 3].sum() > 0 else float("nan")


@reusable
def decomposition(cov: Covering, size: int | None = None, *, null: bool = False,
                  seed: int = 0) -> tuple[Interval, Interval]:
    """``(gain, residual share)`` of ``delta_S = g * sum_i delta_i + r`` over the sets of ``size``
    heads, each with an interval over the texts; ``null=True``: the same under the LayerNorm null."""
    if not cov.has_null:
        raise ValueError("this covering record has no gain or LayerNorm null (measured before them)")
    rows = _per_text(cov, cov.of_size(size), null)  # (N, 5)
    return bootstrap(rows, _gain, seed=seed), bootstrap(rows, _residual, seed=seed)


def _excess(rows: np.ndarray) -> float:
    """The real covering ratio minus the null's, from rows ``[real joint, real sum, null joint, null sum]``."""
    return ratio_of_means(rows[:, :2]) - ratio_of_means(rows[:, 2:])


@reusable
def null_ratio(cov: Covering, size: int | None = None, *, seed: int = 0) -> Interval:
    """The covering ratio of the LayerNorm null over the sets of ``size`` heads (interval over texts)."""
    rows = _per_text(cov, cov.of_size(size), True)
    return bootstrap(rows[:, :2], ratio_of_means, seed=seed)


@reusable
def excess_over_null(cov: Covering, size: int | None = None, *, seed: int = 0) -> Interval:
    """The covering ratio minus the LayerNorm null's on the same sets and texts (paired: each
    resample draws the same texts for both), the number :func:`reading` reads."""
    if not cov.has_null:
        raise ValueError("this covering record has no LayerNorm null (measured before it)")
    rows = cov.of_size(size)
    real, fake = _per_text(cov, rows, False), _per_text(cov, rows, True)
    return bootstrap(np.concatenate([real[:, :2], fake[:, :2]], axis=1), _excess, seed=seed)


def _interaction_rows(cov: Covering, rows: np.ndarray) -> np.ndarray:
    """``(N, 2)``: per text, summed over the chosen sets: ``||delta_S - delta_S^null||^2`` and ``||sum||^2``."""
    if not cov.has_interaction:
        raise ValueError("this covering record has no interaction share (measured before it): run lesson 11 again")
    gap, total = (np.asarray(x, dtype=float)[rows] for x in (cov.interaction_norm, cov.sum_norm))  # (S', N)
    return np.stack([(gap ** 2).sum(0), (total ** 2).sum(0)], axis=1)


def _root_share(rows: np.ndarray) -> float:
    """``sqrt(sum rows[:, 0] / sum rows[:, 1])`` (NaN when the denominator is 0)."""
    bottom = rows[:, 1].sum()
    return float(np.sqrt(rows[:, 0].sum() / bottom)) if bottom > 0 else float("nan")


@reusable
def interaction_excess(cov: Covering, size: int | None = None, *, seed: int = 0) -> Interval:
    """The interaction share beyond the LayerNorm null over the sets of ``size`` heads,
    ``sqrt(sum ||delta_S - delta_S^null||^2 / sum ||sum_i delta_i||^2)`` (sums over sets and texts),
    with an interval over the texts: the number :func:`reading` reads.

    Additive heads give 0 (the null is exactly their move); a backup job ``c`` shared by pairs
    that meet in the set adds in proportion to ``||c||``, whatever way it points.
    """
    return bootstrap(_interaction_rows(cov, cov.of_size(size)), _root_share, seed=seed)


def _gain_gap(rows: np.ndarray) -> float:
    """``(sum <delta_S, sum> - sum <delta_S^null, sum>) / sum ||sum||^2`` from rows ``[dot, null dot, ||sum||^2]``."""
    bottom = rows[:, 2].sum()
    return float((rows[:, 0].sum() - rows[:, 1].sum()) / bottom) if bottom > 0 else float("nan")


@reusable
def gain_excess(cov: Covering, size: int | None = None, *, seed: int = 0) -> Interval:
    """The gain ``g`` minus the LayerNorm null's gain over the sets of ``size`` heads (paired over
    texts): above 0 the set does more along the heads' summed move than additive heads, below 0 less."""
    rows = cov.of_size(size)
    real, fake = _per_text(cov, rows, False), _per_text(cov, rows, True)
    return bootstrap(np.stack([real[:, 2], fake[:, 2], real[:, 3]], axis=1), _gain_gap, seed=seed)


def covering_direction(cov: Covering, size: int | None = None) -> int:
    """:func:`direction` of the sets of ``size`` heads: ``1`` more than additive, ``-1`` less, ``0`` unclear."""
    return direction(excess_over_null(cov, size))


def covering_reading(cov: Covering, size: int | None = None, *, margin: float = ADD_MARGIN,
                     floor: float = COVER_FLOOR) -> str:
    """:func:`reading` of the sets of ``size`` heads (default: the largest measured, the one with power)."""
    size = max(cov.sizes) if size is None else size
    return reading(interaction_excess(cov, size), covering_direction(cov, size), meet_chance(size, cov.n_total),
                   margin, floor)


@reusable
def all_masked_move(cov: Covering, *, seed: int = 0) -> Interval:
    """Mean ``1 - cos`` between each text's vector with every head masked and the full model's
    (interval over the texts), in the units of the "costs nothing" tolerance."""
    if cov.all_distance is None:
        raise ValueError("this covering record has no all-masked distance (measured before it)")
    return bootstrap_mean(np.asarray(cov.all_distance, dtype=float), seed=seed)


def tolerance(cov: Covering, share: float = TOLERANCE_SHARE) -> float:
    """The "costs nothing" tolerance of lessons 11 and 13 on these texts: ``share`` x the mean
    ``1 - cos`` between two different texts (:mod:`attnlab.analysis.costs_nothing`)."""
    return float(share) * float(cov.text_distance)


def set_band(cov: Covering, size: int | None = None) -> tuple[float, float, float]:
    """``(low, median, high)`` of the per-set covering ratios of ``size`` heads (each a ratio of
    means over the texts): the :data:`SET_BAND` percentiles over the random sets, how much the
    answer depends on which heads are drawn."""
    rows = cov.of_size(size)
    ratios = np.asarray(cov.joint_norm)[rows].mean(axis=1) / np.asarray(cov.sum_norm)[rows].mean(axis=1)  # (S',)
    low, high = np.percentile(ratios, SET_BAND)
    return float(low), float(np.median(ratios)), float(high)


@reusable
def top_set_ratio(cov: Covering, *, seed: int = 0) -> Interval | None:
    """The covering ratio of the ``k`` heads ranked most important on other texts (None when not measured)."""
    if not cov.top_set or cov.top_joint_norm is None:
        return None
    return bootstrap(np.stack([cov.top_joint_norm, cov.top_sum_norm], axis=1), ratio_of_means, seed=seed)


# --------------------------------------------------------------------------- pairs of heads


def layer_pairs(n_layers: int, n_heads: int, matchings: int = PAIR_MATCHINGS, seed: int = 0) -> list[list[int]]:
    """``matchings`` random matchings of each layer's heads, as pairs of flat head indices
    (``layer * n_heads + head``): each head in ``matchings`` pairs (one head of an odd layer sits one
    matching out). Fixed by ``seed``; a pair drawn twice is kept twice (it is one draw of the design)."""
    check_positive_int(matchings, "matchings")
    if n_heads < 2:
        raise ValueError(f"pairs of heads need at least 2 heads a layer, got {n_heads}")
    rng = np.random.default_rng(seed)
    out = []
    for layer in range(n_layers):
        for _draw in range(matchings):
            order = layer * n_heads + rng.permutation(n_heads)
            out += [sorted(int(i) for i in order[j:j + 2]) for j in range(0, n_heads - 1, 2)]
    return out


def pair_meet_chance(n_heads: int, matchings: int = PAIR_MATCHINGS) -> float:
    """Chance that a head's one backup partner in its layer shares one of its ``matchings`` pairs:
    ``1 - (1 - 1 / (H - 1)) ** matchings`` (12 heads, 2 matchings: 0.17)."""
    return 1.0 - (1.0 - 1.0 / (n_heads - 1)) ** matchings if n_heads > 1 else 0.0


def pair_norms(full: np.ndarray, single: np.ndarray, joint: np.ndarray,
               pairs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair and text, ``(||delta_ab||, ||delta_a + delta_b||, ||delta_ab - delta_a - delta_b||)``, each ``(P, N)``.

    Args:
        full: ``(N, D)`` sentence vectors of the full model.
        single: ``(K, N, D)`` with head ``k`` alone masked (flat index).
        joint: ``(P, N, D)`` with both heads of pair ``p`` masked.
        pairs: ``P`` pairs of flat head indices.
    """
    full = np.asarray(full, dtype=float)  # (N, D)
    if len(pairs) != len(joint):
        raise ValueError(f"{len(pairs)} pairs but {len(joint)} joint passes")
    both = np.asarray(joint, dtype=float) - full[None]  # (P, N, D)
    added = np.stack([np.asarray(single[a], dtype=float) + np.asarray(single[b], dtype=float) - 2 * full
                      for a, b in pairs])  # (P, N, D)
    return (np.linalg.norm(both, axis=-1), np.linalg.norm(added, axis=-1),
            np.linalg.norm(both - added, axis=-1))


def add_pairs(cov: Covering, full: np.ndarray, single: np.ndarray, both: np.ndarray,
              pairs: Sequence[Sequence[int]]) -> Covering:
    """Store in ``cov`` the pairs of heads and their :func:`pair_norms` (arguments as there); returns ``cov``."""
    cov.pairs = [[int(i) for i in p] for p in pairs]
    cov.pair_joint_norm, cov.pair_sum_norm, cov.pair_interaction_norm = pair_norms(full, single, both, pairs)
    return cov


def pair_interval(joint: np.ndarray, added: np.ndarray, *, signed: bool, n_boot: int = 1000, level: float = 0.95,
                  seed: int = 0) -> Interval:
    """The mean over pairs of ``r_p`` (``signed``) or ``|r_p|``, ``r_p = sum_n (joint - added) / sum_n added``,
    with a percentile interval that resamples the **texts and the pairs** together: each resample
    draws texts (every pair's ratio is taken on them) and, independently, pairs.

    Args:
        joint, added: ``(P, N)``: ``||delta_ab||`` and ``||delta_a + delta_b||`` per pair and text.

    Returns:
        An :class:`~attnlab.analysis.stats.Interval` whose ``n`` is the smaller of the two unit counts
        (texts, pairs left in). For ``|r_p|`` the resamples are shifted by their mean's lift over
        the estimate (resampling the texts adds their noise to every ``|r_p|`` once more). Pairs whose summed move is below :data:`TINY_PAIR` of the median
        pair's are left out; NaN when none is left.
    """
    joint, added = np.asarray(joint, dtype=float), np.asarray(added, dtype=float)  # (P, N) each
    moved = added.sum(axis=1)  # (P,)
    keep = moved > TINY_PAIR * (np.median(moved) if len(moved) else 0.0)
    joint, added = joint[keep], added[keep]
    n_pairs, n_texts = added.shape
    if n_pairs == 0 or n_texts == 0:
        return Interval(float("nan"), float("nan"), float("nan"), level, 0)
    gap = joint - added  # (P', N)

    def statistic(text_weights: np.ndarray, pair_weights: np.ndarray) -> np.ndarray:
        """``(B,)`` from text weights ``(B, N)`` and pair weights ``(B, P')``."""
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = (text_weights @ gap.T) / (text_weights @ added.T)  # (B, P')
        ratio = ratio if signed else np.abs(ratio)
        ratio = np.where(np.isfinite(ratio), ratio, 0.0)
        return (pair_weights * ratio).sum(axis=1) / pair_weights.sum(axis=1)

    estimate = float(statistic(np.ones((1, n_texts)), np.ones((1, n_pairs)))[0])
    texts = resample_counts(n_texts, n_boot, seed).astype(float)  # (B, N)
    pairs = resample_counts(n_pairs, n_boot, seed + 1).astype(float)  # (B, P')
    boots = statistic(texts, pairs)  # (B,)
    if not signed:  # the texts' noise lifts every |r|, in each resample once more: take that lift out
        boots = boots - (boots.mean() - estimate)
    tail = 50.0 * (1.0 - level)
    low, high = np.percentile(boots, [tail, 100.0 - tail])
    draws = draws_of("texts and pairs" if signed else "texts and pairs, |r|", np.concatenate([keep, np.ones(n_texts, bool)]),
                     seed, n_boot)  # the pairs kept, then the texts
    return Interval(estimate, float(low), float(high), level, int(min(n_pairs, n_texts)), samples=boots, draws=draws)


def _pair_arrays(cov: Covering) -> tuple[np.ndarray, np.ndarray]:
    if not cov.has_pairs:
        raise ValueError("this covering record has no pairs of heads (measured before them): run lesson 11 again")
    return np.asarray(cov.pair_joint_norm, dtype=float), np.asarray(cov.pair_sum_norm, dtype=float)


@reusable
def pair_interaction(cov: Covering, *, seed: int = 0) -> Interval:
    """The signed mean pair interaction ``mean_p r_p`` (:func:`pair_interval`): above 0 two heads of a
    layer masked together cost more than their two moves added (they cover for one another), below
    0 less (their damage saturates). The number conclusion 4b decides on."""
    return pair_interval(*_pair_arrays(cov), signed=True, seed=seed)


@reusable
def pair_deviation(cov: Covering, *, seed: int = 0) -> Interval:
    """The unsigned mean pair interaction ``mean_p |r_p|`` (:func:`pair_interval`): how far pairs of
    heads are from adding up, either way (covering and saturating pairs cannot cancel). The
    number conclusion 4a decides on."""
    return pair_interval(*_pair_arrays(cov), signed=False, seed=seed)


def pair_vector_share(cov: Covering) -> float:
    """``sqrt(sum ||delta_ab - delta_a - delta_b||^2 / sum ||delta_a + delta_b||^2)`` over pairs and texts
    (shown beside: it counts bends in every direction, so a real encoder's own bends show in it)."""
    if cov.pair_interaction_norm is None:
        return float("nan")
    gap, added = np.asarray(cov.pair_interaction_norm, dtype=float), _pair_arrays(cov)[1]
    bottom = (added ** 2).sum()
    return float(np.sqrt((gap ** 2).sum() / bottom)) if bottom > 0 else float("nan")


def pair_reading(interaction: Interval, deviation: Interval, *, margin: float = PAIR_MARGIN,
                 floor: float = PAIR_FLOOR) -> str:
    """Which of :data:`PAIR_READINGS` the pairs support: ``"cover"`` when the signed mean lies wholly
    above ``floor``, ``"saturate"`` wholly below ``-floor``, ``"add"`` when the unsigned mean lies
    wholly below ``margin``, ``"interact"`` when it lies wholly above ``margin`` with neither
    direction clear, ``"unclear"`` otherwise."""
    if interaction.above(floor):
        return "cover"
    if interaction.below(-floor):
        return "saturate"
    if deviation.below(margin):
        return "add"
    return "interact" if deviation.above(margin) else "unclear"


def pair_reading_words(key: str) -> str:
    """A pair reading's words in the reader's language."""
    return _(PAIR_READINGS[key])


def halves(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint halves of ``range(n)``, fixed by ``seed`` (the first gets ``n // 2``)."""
    if n < 4:
        raise ValueError(f"two halves need at least 4 texts, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2:])


@reusable
def held_out_top_head(cov: Covering, *, seed: int | None = None) -> tuple[Interval, int]:
    """``(weak ratio, head)``: the head whose ``||delta||`` alone is largest on one half of the
    texts, and its ``||delta||`` on the **other** half over the **sum of every head's** ``||delta||``
    alone there (``mean ||delta_top|| / mean sum_k ||delta_k||``, interval over the scoring half's
    texts): the top head's share of what the heads do one at a time (equal heads: ``1 / K``).

    Not against masking every head: that breaks the model, moves the vectors far more than any
    sum of single heads, and made every head look weak (0.08-0.11 at 144 heads in every run).
    Choosing and scoring on the same texts would reward the head for fitting those texts.
    """
    single = np.asarray(cov.single_norm, dtype=float)  # (N, K)
    choose, score = halves(len(single), cov.seed if seed is None else seed)
    top = int(np.argmax(single[choose].mean(axis=0)))
    pairs = np.stack([single[score, top], single[score].sum(axis=1)], axis=1)  # (N/2, 2)
    return bootstrap(pairs, ratio_of_means, seed=cov.seed), top


def random_sets(n_total: int, k: int, n_sets: int, seed: int = 0) -> list[list[int]]:
    """``n_sets`` random sets of ``k`` distinct flat head indices out of ``n_total``, fixed by ``seed``."""
    k, n_sets = check_positive_int(k, "k"), check_positive_int(n_sets, "n_sets")
    if k > n_total:
        raise ValueError(f"a set of {k} heads out of {n_total}")
    rng = np.random.default_rng(seed)
    return [sorted(int(i) for i in rng.choice(n_total, size=k, replace=False)) for _draw in range(n_sets)]


def covering_from_vectors(full: np.ndarray, single: np.ndarray, joint: np.ndarray, everything: np.ndarray,
                          sets: Sequence[Sequence[int]], n_heads: int, *, seed: int = 0,
                          null: tuple[np.ndarray, ...] | None = None) -> Covering:
    """:class:`Covering` from sentence vectors measured elsewhere.

    Args:
        full: ``(N, D)`` full model; single: ``(K, N, D)`` each head alone masked (flat index);
        joint: ``(S, N, D)`` each set of ``sets`` masked (sets may differ in size);
        everything: ``(N, D)`` every head masked.
        n_heads: heads per layer.
        null: :func:`additive_null`'s four arrays for the same sets, or None (no null).
    """
    sets = [[int(i) for i in s] for s in sets]
    if not sets or any(not s for s in sets):
        raise ValueError("need at least one non-empty set of heads")
    joint_norm, sum_norm, dot, single_norm = effect_norms(full, single, joint, sets)
    full, everything = np.asarray(full, dtype=float), np.asarray(everything, dtype=float)  # (N, D) each
    cos = np.einsum("nd,nd->n", full, everything) / np.maximum(
        np.linalg.norm(full, axis=-1) * np.linalg.norm(everything, axis=-1), 1e-300)  # (N,)
    cov = Covering(min(len(s) for s in sets), sets, joint_norm, sum_norm, single_norm,
                   np.linalg.norm(everything - full, axis=-1), n_heads, seed=seed, dot=dot,
                   all_distance=1.0 - cos, text_distance=mean_text_distance(full) if len(full) > 1 else float("nan"))
    if null is not None:
        (cov.null_joint_norm, cov.null_sum_norm, cov.null_dot,
         cov.interaction_norm) = (np.asarray(x, dtype=float) for x in null)
    return cov


def _final_norm_slot(m: LoadedModel) -> tuple[torch.nn.Module, str, torch.nn.LayerNorm] | None:
    """``(parent, attribute, module)`` of the last ``nn.LayerNorm`` of the encoder in module order
    (the one the final hidden states come out of), or None when the model has none."""
    named = [(name, mod) for name, mod in m.model.named_modules() if isinstance(mod, torch.nn.LayerNorm)]
    if not named:
        return None
    name, module = named[-1]
    parent_name, _dot, attribute = name.rpartition(".")
    return m.model.get_submodule(parent_name) if parent_name else m.model, attribute, module


def final_layer_norm(m: LoadedModel) -> tuple[np.ndarray, np.ndarray, float] | None:
    """``(weight (D,), bias (D,), eps)`` of the final LayerNorm (:func:`_final_norm_slot`), or None."""
    slot = _final_norm_slot(m)
    if slot is None or slot[2].weight is None:
        return None
    last = slot[2]
    bias = last.bias if last.bias is not None else torch.zeros_like(last.weight)
    return (last.weight.detach().double().cpu().numpy(), bias.detach().double().cpu().numpy(), float(last.eps))


@contextmanager
def final_norm_removed(m: LoadedModel) -> Iterator[None]:
    """Inside the block the final LayerNorm is an identity, so the "final hidden states" are its
    inputs; restored on exit, whatever happens."""
    slot = _final_norm_slot(m)
    if slot is None:
        raise ValueError("the model has no LayerNorm to remove")
    parent, attribute, module = slot
    setattr(parent, attribute, torch.nn.Identity())
    try:
        yield
    finally:
        setattr(parent, attribute, module)


def real_tokens_of(states: list[tuple[torch.Tensor, torch.Tensor]]) -> np.ndarray:
    """A states reducer: ``(T_all, D)`` float32, every real token's final state, batch by batch,
    text by text (the order :func:`token_texts` numbers)."""
    return np.concatenate([hidden[mask.bool()].float().cpu().numpy() for hidden, mask in states])


def token_texts(objective: Objective) -> np.ndarray:
    """``(T_all,)``: the text of every real token, in the order of :func:`real_tokens_of`."""
    out, offset = [], 0
    for batch in objective.batches:
        mask = batch["inputs"]["attention_mask"].cpu().bool()  # (B, T)
        rows, _cols = np.nonzero(mask.numpy())
        out.append(rows + offset)
        offset += mask.shape[0]
    return np.concatenate(out)


def measure_null(m: LoadedModel, objective: Objective, sets: Sequence[Sequence[int]], single: np.ndarray,
                 joint: np.ndarray, *, progress: bool = False,
                 threads: int | None = None) -> tuple[np.ndarray, ...] | None:
    """:func:`additive_null` on the model: the final LayerNorm's inputs with each head masked (one
    layer's heads at a time), or None when the model has no final LayerNorm.

    One batch of texts at a time: the null of a text needs only that text's tokens, so the
    ``(S, tokens, D)`` sums are held for one batch, not for every text (on bert-base's shape with
    40 sets of 128 texts, 135 MB instead of 270 MB); the passes are the same ones.
    ``single``: ``(K, N, D)`` and ``joint`` ``(S, N, D)``, aligned with the objective's texts.
    """
    norm = final_layer_norm(m)
    if norm is None:
        return None
    bar = tqdm(total=len(objective.batches) * m.n_layers, desc=_("LayerNorm null"), unit=_("layer"),
               disable=not progress)
    parts, first = [], 0
    with bar, final_norm_removed(m):
        for i, size in enumerate(objective.sizes):
            part = objective.one_batch(i)
            z_full = masked_states(m, part, [], real_tokens_of, threads=threads)  # (T_b, D)

            def blocks() -> Iterator[tuple[list[int], np.ndarray]]:
                for layer in range(m.n_layers):
                    z = single_head_states(m, part, real_tokens_of, layers=[layer], threads=threads)  # (1, H, T_b, D)
                    bar.update(1)
                    yield [layer * m.n_heads + h for h in range(m.n_heads)], np.asarray(z)[0]

            parts.append(additive_null(z_full, blocks(), sets, norm, token_texts(part), size,
                                       np.asarray(single)[:, first:first + size],
                                       np.asarray(joint)[:, first:first + size]))
            first += size
    return tuple(np.concatenate([p[j] for p in parts], axis=1) for j in range(len(parts[0])))  # (S, N) each


def covering_study(m: LoadedModel, objective: Objective, *, shares: Sequence[float] = SHARES, n_sets: int = 20,
                   importance: np.ndarray | None = None, seed: int = 0, progress: bool = False,
                   threads: int | None = None, single: np.ndarray | None = None,
                   pair_matchings: int = PAIR_MATCHINGS, describe: bool = True) -> Covering:
    """Measure :class:`Covering` on the texts of ``objective`` (any objective: only its texts are used).

    Passes: the full model, every head alone (``layers x heads``, unless ``single`` ``(L, H, N, D)``
    from an earlier :func:`~attnlab.analysis.importance.single_head_states` is given), every head
    together, ``n_sets`` random sets of ``round(share * layers * heads)`` heads for each of
    ``shares``, and, when ``importance`` ``(L, H)`` is given (ranked on *other* texts), the set
    of the most important heads of the smallest size. The LayerNorm null (:func:`measure_null`)
    takes one more sweep of every head alone, with the final LayerNorm removed. The pairs of heads
    (:func:`layer_pairs`, ``pair_matchings`` matchings of each layer's heads; 0: none) take one pass each.

    ``describe=False`` measures only what conclusion 4 decides on (the pairs, every head alone, every
    head together): one random set of each size instead of ``n_sets``, and no LayerNorm null. The
    random sets and the null only describe (a real encoder's own bends give any large set an
    interaction share of 0.4-0.6, trained or not), and on an untrained twin they were a third of
    lesson 11's time in the report.
    """
    total = m.n_layers * m.n_heads
    if not describe:
        n_sets = 1
    sizes = sorted({max(1, int(round(share * total))) for share in shares})
    sets = [s for i, size in enumerate(sizes) for s in random_sets(total, size, n_sets, seed + i)]
    k = sizes[0]

    def pairs_of(flat: Sequence[int]) -> list[tuple[int, int]]:
        return [(int(i) // m.n_heads, int(i) % m.n_heads) for i in flat]

    full = masked_states(m, objective, [], sentence_vectors_of, threads=threads)  # (N, D)
    if single is None:
        single = single_head_states(m, objective, sentence_vectors_of, progress=progress, threads=threads)
    single = np.asarray(single, dtype=float).reshape((total,) + full.shape)  # (K, N, D)
    top = ([] if importance is None else
           [int(i) for i in np.argsort(-np.asarray(importance, dtype=float).ravel(), kind="stable")[:k]])
    together = [pairs_of(s) for s in sets] + [pairs_of(range(total))] + ([pairs_of(top)] if top else [])
    vectors = np.stack(head_sets_states(m, objective, together, sentence_vectors_of, threads=threads))  # (S+1(+1), N, D)
    joint, everything = vectors[:len(sets)], vectors[len(sets)]  # (S, N, D), (N, D)
    null = measure_null(m, objective, sets, single, joint, progress=progress, threads=threads) if describe else None
    cov = covering_from_vectors(full, single, joint, everything, sets, m.n_heads, seed=seed, null=null)
    if m.n_heads > 1 and pair_matchings:
        pairs = layer_pairs(m.n_layers, m.n_heads, pair_matchings, seed)
        both = np.stack(head_sets_states(m, objective, [pairs_of(p) for p in pairs], sentence_vectors_of,
                                         threads=threads))  # (P, N, D)
        add_pairs(cov, full, single, both, pairs)
    if top:
        top_joint = vectors[-1]  # (N, D)
        t_joint, t_sum, _dot, _single = effect_norms(full, single, top_joint[None], [top])
        cov.top_set, cov.top_joint_norm, cov.top_sum_norm = top, t_joint[0], t_sum[0]
    return cov
