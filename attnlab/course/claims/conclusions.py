"""The source article's six conclusions, each judged on the results lessons 05-11 saved.

1. Most heads learn a fixed pattern; only a few capture lexical or syntactic information.
2. Lower layers are more diverse; heads of upper layers converge.
3. Fewer heads make attention collapse onto the token itself (or onto [CLS]).
4. Multi-head attention works like an ensemble of weak learners (a random forest).
5. More heads is not always better.
6. Heads without visible lexical or syntactic structure may still help, depending on the task.

Each ``conclusion_N`` takes the saved records it needs (types of
:mod:`attnlab.course.lesson_results`; None when a lesson has not been run) and
returns a :class:`~attnlab.course.verdicts.ClaimVerdict`. Conclusions 3 and 5
are judged in two readings each (3: onto the token *itself*, the article's
picture, and onto *one* token of any kind; 5: heads varied at a fixed width,
Vaswani et al.'s design, and at a fixed head size); conclusion 6 has two
halves that must both hold. Every threshold is a named constant below and a
keyword argument of its function, so a sensitivity table can move it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.analysis.costs_nothing import SHARE_GRID, TOLERANCE_SHARE
from attnlab.analysis.covering import (
    PAIR_FLOOR,
    PAIR_GRID,
    PAIR_MARGIN,
    PAIR_MATCHINGS,
    PAIR_READINGS,
    READINGS,
    Covering,
    all_masked_move,
    covering_reading,
    covering_ratio,
    held_out_top_head,
    interaction_excess,
    null_ratio,
    pair_deviation,
    pair_interaction,
    pair_meet_chance,
    pair_reading,
    pair_vector_share,
    tolerance,
    top_set_ratio,
)
from attnlab.analysis.compare import FOLLOWER_MARGIN
from attnlab.analysis.stats import (
    Interval,
    chance_beyond,
    bootstrap_share_above,
    permutation_test,
    resample_counts,
    too_few_units,
    too_small_groups,
)
from attnlab.course.claims.head_count import (
    COLLAPSE_CLAIM,
    COLLAPSE_TARGET,
    MIN_HEAD_SIZE,
    MORE_HEADS_CLAIM,
    SELF_CLAIM,
    verdict_fewer_heads_collapse,
    verdict_more_heads_not_always_better,
    verdict_self_collapse,
)
from attnlab.course.claims.attention_limits import FIXED_HEADS_CHEAP
from attnlab.course.claims.averaging import SENSITIVITY_THRESHOLDS
from attnlab.course.claims.diversity import (
    ADDS,
    AS_DEPTH,
    CLAIM_CONVERGE,
    CLAIM_TRAINING,
    CONVERGE_FLOOR,
    KEEPS,
    shape_text,
    verdict_training_converges,
    verdict_upper_layers_converge,
)
from attnlab.course.lesson_results import (
    AttentionLimitsResult,
    AveragingResult,
    DiversityResult,
    HeadCountResult,
    HeadPatternsResult,
    PerturbationResult,
    PruningResult,
)
from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS
from attnlab.core.language import N_, _
from attnlab.course.claims.readings import READING, WHY, WHY_READING
from attnlab.course.verdicts import BECAUSE, BECAUSE_SETTLED, FAILS, HOLDS, UNSURE, ClaimVerdict, combine, from_tests

CLAIMS = {  # looked up by number, so marked with N_ for the catalogue
    1: N_("most heads learn a fixed pattern; only a few capture lexical or syntactic information: over 60% of "
          "the heads, each weighted by how much of its rows reads the text, are fixed (a head that spreads every "
          "row evenly counts as fixed: its pattern is the same for every query), and under 15% follow the "
          "content (half and a quarter, each a tenth of the heads beyond)"),
    2: CLAIM_CONVERGE,
    3: COLLAPSE_CLAIM,
    4: N_("multi-head attention is an ensemble of weak learners (a random forest)"),
    5: MORE_HEADS_CLAIM,
    6: N_("heads without visible lexical/syntactic structure are not useless, and what they are used for "
          "depends on the task"),
}
#: the two readings of conclusion 4: the ensemble picture (weak, additive) and covering (redundancy)
WEAK_ADD_CLAIM = N_("weak heads whose effects add up: the strongest head (chosen on half the texts) does clearly "
                    "less than a tenth of the sum of every head's move alone on the other half, and two heads of one "
                    "layer masked together move the sentence vectors as far as their two moves added, within 5% of "
                    "that sum either way, on average over random pairs of each layer's heads; masking every head must "
                    "move them by more than costs nothing (5% of the mean 1 - cos between two texts)")
COVER_CLAIM = N_("heads cover for one another: two heads of one layer masked together move the sentence vectors "
                 "further than their two moves added, by more than 5% of that sum on average over random pairs of "
                 "each layer's heads (a head backed up by another costs little alone); masking every head must "
                 "move them by more than costs nothing (5% of the mean 1 - cos between two texts)")
#: the two halves of conclusion 6
USEFUL_CLAIM = N_("heads that do not follow the content are not the useless ones: within each layer, they land among "
                  "the least important quarter of the heads no more often than content-following heads do: the "
                  "share difference stays below a margin of 0.15 by at least a floor of 0.05, with the labels "
                  "shuffled within layers counted in its interval")
TASK_CLAIM = N_("which heads matter depends on the task: a query-family probe and a word-start probe rank the heads "
                "clearly less alike than the margin (a rank agreement of 0.5), by at least a floor of 0.1, once "
                "the noise of the queries and of fitting the probes (20 splits of their training queries) is "
                "divided out")
#: the two designs of lesson 10's training study
DESIGNS = ("fixed width", "fixed head size")

#: conclusion 1: "most heads" means more than this share is fixed (lesson 08) ...
MOST_FIXED = 0.5
#: ... and "only a few" means at most this share follows the content (lesson 06)
FEW_CONTENT = 0.25
#: ... each beyond its line by this floor, in shares of heads (0.1: 14 of 144 heads, 7 of 72). A share
#: within a tenth of the line crosses it when a tenth of the heads change label, as one step of lesson 08's
#: threshold (0.4 to 0.6) already does; "most" and "a few" must survive that. A model that learned no
#: pattern leaves its content rows near uniform (heads "uniform" or "varying", no follower), so its
#: fixed share sits far below 0.6; a trained one clears 0.6 or fails clearly below 0.4 (the offline
#: default: 0.25 [0.25, 0.26], rows and heads weighted by content mass, 8,000 queries of 10 tokens in
#: 8 shards, 40 of 144 heads fixed; 2-core Intel Xeon, busy, 2026-12-05).
FLOOR_1 = 0.1
#: conclusion 4 decides on pairs of heads of one layer masked together (:func:`attnlab.analysis.covering.covering_study`
#: is lesson 11's measurement; every pair's interaction r = (||both masked|| - ||their two moves added||) / ||added||,
#: pooled over the texts). 4a: "add up" when the mean |r| over the pairs lies wholly below PAIR_MARGIN (5%) ...
ADD_LINE_4A = PAIR_MARGIN
#: ... and holds only when the model's mean |r| lies below its untrained twin's by more than FLOOR_4A (a
#: fifth of the margin; on 64 texts multilingual-e5-small gives 0.013 and its twin 0.027, all-MiniLM-L6-v2
#: 0.011 and 0.016: an encoder's heads add up about as well untrained, so "holds" needs a clear gap)
FLOOR_4A = 0.01
#: 4b: "cover" when the signed mean r lies wholly above FLOOR_4B (5% of a pair's summed move), "saturate"
#: wholly below minus it; the same floor is the distance the model's number must keep from its twin's
FLOOR_4B = PAIR_FLOOR
#: ... and both need masking every head to move the sentence vectors, on average over the texts, by
#: more than MOVE_4 x the mean 1 - cos between two different texts: the "costs nothing" tolerance of
#: lessons 11 and 13 (5%: 22% of the distance). Moves that cost nothing add up whatever the heads do.
MOVE_4 = TOLERANCE_SHARE
#: each head is weak when the held-out top head does at most WEAK_SHARE of the sum of every head's
#: move alone (equal heads: 1 / 144 or 1 / 72), one head is strong from STRONG_SHARE
WEAK_SHARE = 0.1
STRONG_SHARE = 0.25
#: conclusion 2: the floor, in shares of the lower third's dispersion
#: (:data:`attnlab.course.claims.diversity.CONVERGE_FLOOR`): the last layer must lie within it of the least
#: diverse layer, the upper third keep less than 1 minus it of the lower third's dispersion; the deciding
#: number (:func:`~attnlab.course.claims.diversity.convergence_gap`, holds below 0, smaller is toward
#: "holds") must also keep this far from the untrained twin's
FLOOR_2 = CONVERGE_FLOOR
#: a number of one half of conclusion 6 as its verdict records it, e.g. "6a: estimate" (marked when the module
#: is imported, so a saved record's keys read back in the reader's language in a fresh kernel too)
PART_NUMBER = {"6a": N_("6a: {number}"), "6b": N_("6b: {number}")}
#: conclusion 6a: "the least important heads" are this share of all heads (lowest single-head effect)
LEAST_SHARE = 0.25
#: ... and "no more often" means a layer-stratified share difference below this margin (equivalence)
USEFUL_MARGIN = 0.15
#: ... each verdict beyond the margin by this floor, in shares of heads: "holds" needs the whole interval
#: below 0.10, "does not hold" wholly above 0.20. 0.05 is one head in twenty among the least important
#: (2 of the 36 least important of 144 heads). On a model that learned nothing, labels and importance are
#: unrelated and the difference scatters around 0 by the within-layer label band (SD about 0.05-0.1 at
#: 72-144 heads), so an untrained twin can land anywhere inside the margin; a trained model's heads must
#: keep clear of that line by more than a couple of heads' worth to tell the model from it
FLOOR_6A = 0.05
#: label shuffles within each layer, shown beside as a description of the labels
N_SHUFFLES = 2000
#: conclusion 6b: the tasks rank the heads differently when the disattenuated agreement's interval
#: lies below this margin, alike when it lies above it ...
TASK_MARGIN = 0.5
#: ... provided each task's reliability (refitted probes on other queries) lies above this
RELIABLE = 0.3
#: ... each verdict beyond the margin by this floor, in rank-agreement units: "holds" needs the whole
#: interval below 0.4, "does not hold" wholly above 0.6. 0.1 is about what one resplit of the probes'
#: training queries moves the disattenuated agreement (SD 0.12 at 144 heads and 128 queries); a random-
#: weights model's probes read token identity and position, and its two tasks' rankings agree anywhere
#: between -0.2 and 0.2 (random model of bert-base-chinese's shape: -0.105), so a trained model must
#: differ from that by more than one refit's scatter
FLOOR_6B = 0.1
#: why 6b cannot tell when a task's ranking is too noisy to divide by (marked at import, so a saved record's
#: reason reads back in the reader's language)
TOO_NOISY = N_("a task's ranking is too noisy: its reliability does not lie above {line}")
#: ... with the probes refitted on at least this many splits of their training queries (a record with
#: fewer, saved before the splits, cannot tell)
MIN_SPLITS = 20
#: lesson 06's label of a head whose map moves with the tokens
CONTENT_LABEL = "content"

#: the thresholds of each conclusion's sensitivity table (their names head the table's columns, shown translated:
#: marked with N_ where the catalogue has no other use of them)
SENSITIVITY = {
    1: {N_("most"): [0.4, 0.5, 0.6], N_("few"): [0.15, 0.25, 0.35], "floor": [0.0, 0.1, 0.2]},
    "4a": {"margin": list(PAIR_GRID), N_("weak"): [0.05, 0.1, 0.2], N_("move"): list(SHARE_GRID)},
    "4b": {"floor": list(PAIR_GRID), N_("move"): list(SHARE_GRID)},
    2: {"floor": [0.05, 0.1, 0.2]},
    "6a": {N_("least"): [0.1, 0.25, 0.5], "margin": [0.1, 0.15, 0.2], "floor": [0.0, 0.05, 0.1]},
    "6b": {"margin": [0.3, 0.5, 0.7], "floor": [0.0, 0.1, 0.2]},
}


def _missing(number: int, *kinds: type) -> ClaimVerdict:
    names = ", ".join(k.file_name for k in kinds)
    return ClaimVerdict.missing(CLAIMS[number], N_("{names} (run those lessons first)").format(names=names))


# --------------------------------------------------------------------------- 1


def fixed_share(averaging: AveragingResult) -> float:
    """Share of the averaged heads that lesson 08 labelled fixed (whole interval above its threshold)."""
    return len(averaging.fixed_heads) / np.asarray(averaging.fixedness).size


def fixed_flags(averaging: AveragingResult) -> np.ndarray:
    """``(L', H)`` booleans: lesson 08 labelled the head fixed (rows: ``averaging.layers``)."""
    flags = np.zeros(np.shape(averaging.fixedness), dtype=bool)
    row = {layer: i for i, layer in enumerate(averaging.layers)}
    for layer, head in averaging.fixed_heads:
        flags[row[int(layer)], int(head)] = True
    return flags


def share_interval(flags: np.ndarray, unsure: np.ndarray | None = None, weights: np.ndarray | None = None) -> Interval:
    """Share of True among heads, from ``flags/N`` (no unsure head counted) to ``(flags | unsure)/N``
    (every unsure head counted); with ``weights`` (same shape), each head counts by its weight.

    The heads are the whole population, not a sample, so nothing is resampled over them: the only
    uncertainty is in each head's label, which ``unsure`` (heads whose label "cannot tell") carries.
    """
    flags = np.asarray(flags, dtype=bool)
    unsure = np.zeros_like(flags) if unsure is None else np.asarray(unsure, dtype=bool)
    w = np.ones(flags.shape) if weights is None else np.clip(np.nan_to_num(np.asarray(weights, dtype=float)), 0.0, None)
    total = float(w.sum())
    if not total > 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0.95, 0)
    point = float((w * flags).sum() / total)
    return Interval(point, point, float((w * (flags | unsure)).sum() / total), 0.95, 0)


def content_mass(averaging: AveragingResult, *, norm_based: bool = False) -> np.ndarray | None:
    """``(L', H)``: each head's mean weight on the content keys, ``1 - special_weight``; with
    ``norm_based``, the share of its norm-based weight ``alpha_ij ||f_h(x_j)||`` on them (Kobayashi et
    al.), ``1 - norm_special_weight``. None when lesson 08 did not save that weight."""
    weight = averaging.norm_special_weight if norm_based else averaging.special_weight
    if weight is None:
        return None
    return np.clip(1.0 - np.asarray(weight, dtype=float), 0.0, 1.0)


def fixed_vs_followers(averaging: AveragingResult, perturbation: PerturbationResult) -> dict[str, dict[str, int]]:
    """Head by head, lesson 08's call (fixed or not) against lesson 06's label, on the layers both measured.

    Returns:
        ``{"fixed": {label: count}, "not fixed": {label: count}}`` over lesson 06's
        labels on all keys (``"position"``, ``"content"``, ``"cannot tell"``).
    """
    labels = np.asarray(perturbation.follower_labels, dtype=object)  # (L, H)
    fixed = fixed_flags(averaging)  # (L', H)
    names = sorted(set(labels.ravel().tolist()))
    table = {"fixed": dict.fromkeys(names, 0), "not fixed": dict.fromkeys(names, 0)}
    for i, layer in enumerate(averaging.layers):
        if layer >= labels.shape[0]:
            continue
        for head in range(min(fixed.shape[1], labels.shape[1])):
            table["fixed" if fixed[i, head] else "not fixed"][labels[layer, head]] += 1
    return table


def fixed_share_gap(averaging: AveragingResult, perturbation: PerturbationResult) -> tuple[float, float, str | None]:
    """``(difference, p, why)``: the share of lesson 08's fixed heads among lesson 06's content
    followers minus among the other heads, on the layers both measured, and a two-sided
    label-shuffle p. When a group is too small to compare both numbers are NaN and ``why``
    says so (else ``why`` is None). A description of the two lessons' labels, not a verdict.
    """
    labels = np.asarray(perturbation.follower_labels, dtype=object)  # (L, H)
    fixed = fixed_flags(averaging)  # (L', H)
    rows = [i for i, layer in enumerate(averaging.layers) if layer < labels.shape[0]]
    heads = min(fixed.shape[1], labels.shape[1])
    fixed_flat = fixed[rows, :heads].ravel().astype(float)  # (heads compared,)
    labels_flat = np.asarray([labels[averaging.layers[i], :heads] for i in rows], dtype=object).ravel()
    content, other = fixed_flat[labels_flat == CONTENT_LABEL], fixed_flat[labels_flat != CONTENT_LABEL]
    why = too_small_groups(content, other)
    if why is not None:
        return float("nan"), float("nan"), why
    diff, p = permutation_test(content, other, alternative="two-sided")
    return diff, p, None


def weighted_content_share(averaging: AveragingResult, perturbation: PerturbationResult, *,
                           margin: float = FOLLOWER_MARGIN, n_boot: int = 1000) -> Interval | None:
    """Lesson 06's share of content-followers on the content keys, **each head weighted by its content
    mass** from lesson 08 (:func:`content_mass`), on the layers lesson 08 averaged, with its interval
    from resampling lesson 06's queries (each resample labels every head anew, as the unweighted share
    does: a head follows the content when its mean gap, position minus token similarity, lies below
    ``-margin``). None when lesson 06 saved no per-query content-key gaps or lesson 08 no weight."""
    mass = content_mass(averaging)
    gaps = perturbation.content_gap_per_query
    if mass is None or gaps is None:
        return None
    gaps = np.asarray(gaps, dtype=float)  # (N, L, H)
    if any(layer >= gaps.shape[1] for layer in averaging.layers) or gaps.shape[2] != mass.shape[1]:
        return None
    gaps = gaps[:, list(averaging.layers)]  # (N, L', H): the same heads as lesson 08's rows
    return bootstrap_share_above(-gaps, margin, n_boot=n_boot, column_weights=mass)


def conclusion_1(averaging: AveragingResult | None, perturbation: PerturbationResult | None,
                 patterns: HeadPatternsResult | None = None,
                 attention_limits: AttentionLimitsResult | None = None, *, most: float = MOST_FIXED,
                 few: float = FEW_CONTENT, floor: float = FLOOR_1) -> ClaimVerdict:
    """Fixed patterns dominate and few heads follow content, decided on the **content keys**.

    The reading: most heads of a trained encoder rest much of every row on a special token
    ([CLS]/[SEP], ``<s>``/``</s>``), the same for every query; counted in, that weight makes
    almost every head "fixed" and keeps it from "changing". The article asks whether the part
    of a row that reads the text follows a fixed pattern or the content, so both halves are
    decided with the special keys left out and rows renormalised
    (:func:`attnlab.core.distributions.content_keys`); the all-keys numbers are shown beside.

    * lesson 08's share of heads **labelled** fixed on the content keys (each head's whole
      interval of fixedness over query shards above lesson 08's threshold), **each head weighted
      by its content mass** (its mean weight on the content keys, ``1 - special_weight``): a head
      that puts 1% of every row on the text counts a hundredth of one that puts all of it there.
      The interval runs from the weighted share with no "cannot tell" head fixed to the one with
      all of them (``numbers["estimate"]``, ``["low"]``, ``["high"]``); the unweighted share with
      its interval over query shards, and the same rule on the heads that do not rest on a
      special token alone, are shown beside; so is the share weighted by each head's
      **norm-based** content mass (Kobayashi et al.: each weight times the size ``||f_h(x_j)||`` of
      what it moves, :func:`norm_weighted`), with whether the verdict would be the same;
    * lesson 06's share of content-followers on the content keys, **each head weighted by its
      content mass** the same way (:func:`weighted_content_share`), with its interval from
      resampling the **queries** (each resample labels every head anew); inside each head, lesson
      06's similarity weights every row by its content mass (a row with 99% on [CLS] counts a
      hundredth: :func:`attnlab.analysis.compare.content_similarity`). The unweighted share and
      the three-way label counts (content / position / cannot tell) from each head's own interval
      are shown beside; a lesson 06 record saved before the per-query gaps is decided unweighted.

    Heads are never resampled: they are the whole population. Holds when the weighted fixed share's
    interval lies above ``most + floor`` **and** the content share's below ``few - floor``; does not
    hold when the fixed share's interval lies below ``most - floor`` or the content share's above
    ``few + floor`` (:data:`FLOOR_1`, in shares of heads: a share within a tenth of its line decides
    nothing); "cannot tell" otherwise, and when an interval rests on fewer than
    :data:`~attnlab.analysis.stats.MIN_UNITS` shards or queries. The head-by-head cross-tab of
    the two lessons (:func:`fixed_vs_followers`, all keys) and lesson 05's share of
    fixed-pattern labels are shown beside.

    Lesson 13 (replacing each head's map by its mean map, Hassid et al.'s PAPA test) measures
    the same conclusion by what the model loses: when its result is saved, the rank correlation
    of fixedness with replacement cost and the saving over another query's map are cited beside
    the verdict (evidence about *which* heads are fixed, not about how many).
    """
    if averaging is None or perturbation is None:
        return _missing(1, *[k for k, r in ((AveragingResult, averaging), (PerturbationResult, perturbation))
                             if r is None])
    if averaging.fixed_share is None or not averaging.labels:
        return ClaimVerdict.missing(CLAIMS[1], f"{AveragingResult.file_name} was saved before heads had "
                                               "three-way labels (run lesson 08 again)")
    fixed = averaging.content_fixed_share
    content = perturbation.content_share_by_reading.get(CONTENT_KEYS)
    if fixed is None or content is None or not averaging.content_labels:
        late = [k.file_name for k, ok in ((AveragingResult, fixed is not None and averaging.content_labels),
                                               (PerturbationResult, content is not None)) if not ok]
        return ClaimVerdict.missing(CLAIMS[1], N_("{names} saved before the content-key reading "
                                                  "(run those lessons again)").format(names=", ".join(late)))
    kinds = np.asarray(averaging.content_labels, dtype=object).ravel().tolist()
    grid = np.asarray(averaging.content_labels, dtype=object)  # (L', H)
    mass = content_mass(averaging)
    fixed_like = fixed_pattern(grid)  # (L', H): "fixed" or "uniform", on model and twin alike
    weighted = share_interval(fixed_like, grid == UNSURE, mass)
    content_weighted = weighted_content_share(averaging, perturbation)
    followed = content_weighted if content_weighted is not None else content  # the content share decided
    sinks = np.asarray(averaging.sink_labels, dtype=object) if averaging.sink_labels else None
    plain = (np.array([[not str(x).startswith("sink") for x in row] for row in sinks]) if sinks is not None
             else np.ones(grid.shape, dtype=bool))  # (L', H): heads that do not rest on a special token
    followers = np.asarray(perturbation.follower_labels_by_reading.get(CONTENT_KEYS, []), dtype=object).ravel().tolist()
    all_content = perturbation.content_share_by_reading.get(ALL_KEYS)
    table = fixed_vs_followers(averaging, perturbation)
    decided = weighted if mass is not None else fixed
    numbers = {READING: CONTENT_KEYS, WHY_READING: WHY[CONTENT_KEYS],
               "estimate": float(decided.estimate), "low": float(decided.low), "high": float(decided.high),
               "measure": (N_("share of heads fixed on the content keys, each weighted by its content mass")
                           if mass is not None else N_("share of heads fixed on the content keys")),
               N_("floor"): floor, N_("holds above"): most + floor,
               N_("content share holds below"): few - floor,
               N_("fixed heads (lesson 08), unweighted"): f"{float(fixed.estimate):.3g} [{float(fixed.low):.3g}, "
                                                          f"{float(fixed.high):.3g}]",
               N_("query shards"): fixed.n,
               N_("fixed (lesson 08 heads)"): kinds.count("fixed"),
               N_("varying (lesson 08 heads)"): kinds.count("varying"),
               N_("cannot tell (lesson 08 heads)"): kinds.count(UNSURE),
               N_("uniform (lesson 08 heads)"): kinds.count("uniform"),
               N_("most means more than"): most,
               N_("content followers (lesson 06)"): float(followed.estimate), N_("content low"): float(followed.low),
               N_("content high"): float(followed.high), N_("queries (lesson 06)"): content.n,
               N_("content followers, unweighted"): f"{float(content.estimate):.3g} [{float(content.low):.3g}, "
                                                    f"{float(content.high):.3g}]",
               N_("content (lesson 06 heads)"): followers.count("content"),
               N_("position (lesson 06 heads)"): followers.count("position"),
               N_("cannot tell (lesson 06 heads)"): followers.count(UNSURE),
               N_("a few means at most"): few,
               N_("all keys: fixed heads (lesson 08)"): float(averaging.fixed_share.estimate),
               N_("all keys: fixed low"): float(averaging.fixed_share.low),
               N_("all keys: fixed high"): float(averaging.fixed_share.high)}
    if all_content is not None:
        numbers.update({N_("all keys: content followers (lesson 06)"): float(all_content.estimate),
                        N_("all keys: content low"): float(all_content.low),
                        N_("all keys: content high"): float(all_content.high)})
    if content_weighted is None:
        numbers[N_("content followers, each head weighted by its content mass")] = N_("not measured (run lesson "
                                                                                       "06 again)")
    if averaging.special_weight is not None:
        weight = np.asarray(averaging.special_weight, dtype=float)
        numbers[N_("weight on special tokens, per head (min, median, max)")] = [
            round(float(np.nanmin(weight)), 3), round(float(np.nanmedian(weight)), 3), round(float(np.nanmax(weight)), 3)]
    numbers.update({N_("fixed and content-following (same heads)"): table["fixed"].get(CONTENT_LABEL, 0),
                    N_("cross-tab 08 x 06"): table})
    if patterns is not None:
        numbers[N_("fixed-pattern labels (lesson 05)")] = float(patterns.fixed_share)
    if attention_limits is not None:
        rho = attention_limits.papa_rho
        numbers[N_("fixedness vs cost of mean-map replacement (lesson 13)")] = (
            f"rho {float(rho.estimate):+.2f} [{float(rho.low):+.2f}, {float(rho.high):+.2f}]")
        cheap = attention_limits.verdicts.get(FIXED_HEADS_CHEAP)
        numbers[N_("fixed heads cheap to replace (lesson 13)")] = cheap.verdict if cheap is not None else "not judged"
    else:
        numbers[N_("mean-map replacement (lesson 13)")] = N_("not run yet")
    if mass is not None:
        numbers[N_("content mass per head (min, median, max)")] = [
            round(float(np.nanmin(mass)), 3), round(float(np.nanmedian(mass)), 3), round(float(np.nanmax(mass)), 3)]
    if plain.any():
        alone = share_interval(fixed_like[plain], (grid == UNSURE)[plain])
        numbers[N_("heads not resting on a special token")] = int(plain.sum())
        numbers[N_("their fixed share")] = f"{float(alone.estimate):.3g} [{float(alone.low):.3g}, {float(alone.high):.3g}]"
        numbers[N_("verdict on those heads alone")] = from_tests(
            alone.above(most + floor) and followed.below(few - floor), alone.below(most - floor) or followed.above(few + floor))
    why = too_few_units(fixed) or too_few_units(content)

    def word(share: Interval) -> str:  # the verdict the rule gives with this fixed share
        if why is not None:
            return UNSURE
        return from_tests(share.above(most + floor) and followed.below(few - floor),
                          share.below(most - floor) or followed.above(few + floor))

    numbers.update(norm_weighted(grid, content_mass(averaging, norm_based=True), word(decided), word))
    numbers.update(counted_share(grid, mass, decided, averaging))
    if why is not None:
        return ClaimVerdict.decide(CLAIMS[1], holds=False, fails=False, why=why, **numbers)
    holds = decided.above(most + floor) and followed.below(few - floor)
    fails = decided.below(most - floor) or followed.above(few + floor)
    if not holds and not fails:  # in one line, what keeps each half from deciding (a count is no interval)
        numbers["why"], settled = undecided_1(decided, followed, int((grid == UNSURE).sum()), most=most, few=few,
                                              floor=floor)
        if settled:  # a count in the floor's band: no more data of the same kind decides
            numbers[BECAUSE] = BECAUSE_SETTLED
    return ClaimVerdict.decide(CLAIMS[1], holds=holds, fails=fails, **numbers)


#: conclusion 1's reasons for "cannot tell", one per way a half can fail to decide (:func:`undecided_1`)
COUNT_NEAR = N_("the counted share of fixed heads, {share}, lies within the floor of its line ({low} to {high})")
RANGE_NEAR = N_("the counted share of fixed heads lies within the floor of its line ({line_low} to {line_high}) "
                "however its {heads} unsure heads are counted: from {low} to {high}")
UNSURE_DECIDE = N_("the {heads} heads whose label is unsure decide it: the fixed share is {low} with none of them "
                   "fixed and {high} with all of them, on both sides of {line}")
CONTENT_NEAR = N_("lesson 06's content share {share} [{low}, {high}] reaches the band {line_low} to {line_high} "
                  "around its line")


def undecided_1(decided: Interval, followed: Interval, unsure_heads: int, *, most: float, few: float,
                floor: float) -> tuple[str, bool]:
    """``(why, settled)``: why conclusion 1 cannot tell, in one line (an English template filled in, shown
    in the reader's language). The fixed share is a count over every head, so its ends are the count with
    no unsure head fixed and with all of them, not a confidence interval; the content share is an interval
    over queries. The fixed half is named when it decides neither way, else the content half.

    ``settled``: the count lies within the floor's band however its unsure heads are counted
    (:data:`COUNT_NEAR`, :data:`RANGE_NEAR`), which more data of the same kind does not move; not when
    the unsure heads decide it (:data:`UNSURE_DECIDE`: more queries could settle their labels) or the
    content share's interval reaches its band (:data:`CONTENT_NEAR`)."""
    low, high = most - floor, most + floor
    band = dict(line_low=f"{low:.3g}", line_high=f"{high:.3g}")
    if decided.low >= low and decided.high <= high:
        if decided.low == decided.high or unsure_heads == 0:
            return COUNT_NEAR.format(share=f"{float(decided.estimate):.3g}", low=band["line_low"],
                                     high=band["line_high"]), True
        return RANGE_NEAR.format(heads=unsure_heads, low=f"{float(decided.low):.3g}",
                                 high=f"{float(decided.high):.3g}", **band), True
    if not (decided.above(high) or decided.below(low)):  # the range runs across an edge of the band
        line = high if decided.low < high <= decided.high else low
        return UNSURE_DECIDE.format(heads=unsure_heads, low=f"{float(decided.low):.3g}",
                                    high=f"{float(decided.high):.3g}", line=f"{line:.3g}"), False
    return CONTENT_NEAR.format(share=f"{float(followed.estimate):.3g}", low=f"{float(followed.low):.3g}",
                               high=f"{float(followed.high):.3g}", line_low=f"{few - floor:.3g}",
                               line_high=f"{few + floor:.3g}"), False


#: the labels of lesson 08 that are a fixed pattern: a head that spreads every row evenly ("uniform") has
#: the same pattern for every query, so it is counted with the fixed heads, on the model and its twin alike
FIXED_PATTERN_LABELS = ("fixed", "uniform")


def fixed_pattern(grid: np.ndarray) -> np.ndarray:
    """``(L', H)`` booleans: lesson 08's label (``grid``) is a fixed pattern (:data:`FIXED_PATTERN_LABELS`)."""
    return np.isin(np.asarray(grid, dtype=object), FIXED_PATTERN_LABELS)


def threshold_range(averaging: AveragingResult, mass: np.ndarray | None,
                    thresholds: tuple[float, ...] = SENSITIVITY_THRESHOLDS) -> tuple[float, float]:
    """``(lowest, highest)`` weighted share of fixed-pattern heads when each head is called fixed by its
    content-key fixedness alone (at or above the threshold, or uniform), over lesson 08's sensitivity
    ``thresholds``: how far the count moves with the line that labels a head."""
    grid = np.asarray(averaging.content_labels, dtype=object)  # (L', H)
    fixedness = np.nan_to_num(np.asarray(averaging.content_fixedness, dtype=float), nan=-np.inf)
    shares = [float(share_interval((fixedness >= t) | (grid == "uniform"), None, mass).estimate) for t in thresholds]
    return min(shares), max(shares)


#: the numbers of a counted share (:func:`counted_share`), which a verdict's one line prints as a count
EXACT = N_("an exact count")
COUNTED = N_("fixed-pattern heads, counted")
UNSURE_HEADS = N_("heads whose label is unsure (counted in only at the high end)")
THRESHOLDS_MOVE = N_("share over lesson 08's label thresholds {low}-{high}")


def thresholds_key() -> str:
    """The key of a counted share's range over lesson 08's label thresholds (its sensitivity table's ends)."""
    return THRESHOLDS_MOVE.format(low=SENSITIVITY_THRESHOLDS[0], high=SENSITIVITY_THRESHOLDS[-1])


def counted_share(grid: np.ndarray, mass: np.ndarray | None, decided: Interval, averaging: AveragingResult) -> dict:
    """Conclusion 1's share is counted over the whole population of heads, not estimated from a sample: its
    low and high ends are the share with no unsure head fixed and with every one (no confidence interval).
    The numbers that say so, which the verdict's one line prints as a count
    (:func:`attnlab.course.evidence.deciding_number`): the heads counted fixed, the unsure heads, whether
    the count is exact (no head unsure), and the share's range over lesson 08's label thresholds, from its
    sensitivity table.

    Args:
        grid: ``(L', H)`` lesson 08's content-key labels.
        mass: ``(L', H)`` each head's content mass (None: unweighted).
        decided: the decided share (:func:`share_interval`).
    """
    out = {COUNTED: f"{int(fixed_pattern(grid).sum())} / {grid.size}", UNSURE_HEADS: int((grid == UNSURE).sum())}
    if decided.low == decided.high:
        out[EXACT] = N_("no head's label is unsure, so the share is counted, not estimated")
    if averaging.content_fixedness is not None:
        low, high = threshold_range(averaging, mass)
        out[thresholds_key()] = f"{low:.3g}-{high:.3g}"
    return out


def norm_weighted(grid: np.ndarray, norm_mass: np.ndarray | None, decided: str,
                  word: Callable[[Interval], str]) -> dict:
    """Conclusion 1's fixed share with each head weighted by its **norm-based** content mass (Kobayashi
    et al.: a row's weight times the size of what it moves), shown beside the decision, never deciding.

    Args:
        grid: ``(L', H)`` lesson 08's content-key labels.
        norm_mass: ``(L', H)`` :func:`content_mass` with ``norm_based=True`` (None: not measured).
        decided: the verdict word of the decided (weight-based) share.
        word: the verdict rule, from a fixed share's interval to a verdict word.

    Returns:
        The numbers to show: the share with its interval, and whether the verdict would be the same.
    """
    key = N_("norm-weighted reading (Kobayashi et al.)")
    if norm_mass is None:
        return {key: N_("not measured (run lesson 08 again)")}
    share = share_interval(fixed_pattern(grid), grid == UNSURE, norm_mass)
    return {key: f"{float(share.estimate):.3g} [{float(share.low):.3g}, {float(share.high):.3g}]",
            N_("norm-based content mass per head (min, median, max)"): [
                round(float(np.nanmin(norm_mass)), 3), round(float(np.nanmedian(norm_mass)), 3),
                round(float(np.nanmax(norm_mass)), 3)],
            N_("verdict with the norm-based weights"): (N_("same verdict") if word(share) == decided
                                                        else N_("different verdict"))}


# --------------------------------------------------------------------------- 2


def depth_excess(diversity: DiversityResult) -> Interval:
    """Lesson 09's slope of dispersion against depth minus its shuffled-layer control's, per layer
    (shown beside conclusion 2: a slope cannot tell a curve falling to the top from a U).

    The control (heads dealt to layers at random) has no layer structure; its mean slope is
    a constant of the run (about 0: every pseudo-layer is a random group of heads), so the
    interval over texts of the difference is the real slope's interval shifted by it.
    """
    real, control = diversity.slope, diversity.baseline_slope
    offset = float(control.estimate)
    return Interval(float(real.estimate) - offset, float(real.low) - offset, float(real.high) - offset,
                    real.level, real.n)


NO_SHAPE = N_("lesson 09 saved no shape of its dispersion curve (a record from before it measured one): run it "
              "again")
NO_TWIN_SHAPE = N_("the untrained twin's lesson 09 record has no shape of its dispersion curve (it was measured "
                   "before the shape was): run attnlab report again to measure the twin anew")


def conclusion_2(diversity: DiversityResult | None, averaging: AveragingResult | None = None, *,
                 floor: float = FLOOR_2) -> ClaimVerdict:
    """Lower layers are more diverse and the heads of the upper layers converge (lesson 09), read on the
    **shape** of the within-layer dispersion curve, not on its slope.

    Decided by :func:`attnlab.course.claims.diversity.verdict_upper_layers_converge` on the record's
    :class:`~attnlab.analysis.diversity.DepthShape` (intervals over texts). Its two tests, each in
    shares of the lower third's dispersion: the **rebound** (the last layer's dispersion above the
    least diverse layer's) must lie below ``floor``, and the **upper share** (the upper third's
    dispersion over the lower third's) below ``1 - floor``. The deciding number is the larger of the
    two gaps past their lines (:func:`~attnlab.course.claims.diversity.convergence_gap`): holds when
    its whole interval lies below 0, does not hold when it lies wholly above 0 (a U: the heads spread
    again at the top; or upper layers as diverse as the lower ones), otherwise "cannot tell".
    Smaller is toward "holds", and ``floor`` (:data:`FLOOR_2`) is also the distance the model must
    keep from its untrained twin. A record without the shape (saved before it was measured) cannot
    tell, and says so.

    Shown beside: the slope against depth and its shuffled-layer control (heads dealt to layers at
    random), lesson 08's slope of fixedness, and the same shape on the **content keys** (special
    tokens left out, rows renormalised). Decided on **all keys**: the claim is about the picture
    Clark et al. drew, heads placed by how alike their whole rows are.
    """
    if diversity is None:
        return _missing(2, DiversityResult)
    if diversity.shape is None:
        return ClaimVerdict.missing(CLAIMS[2], NO_SHAPE)
    decided = verdict_upper_layers_converge(diversity.shape, floor=floor)
    disp = np.atleast_1d(np.asarray(diversity.dispersion.estimate, dtype=float))  # (L,)
    slope = diversity.slope
    numbers = {READING: ALL_KEYS, WHY_READING: WHY[ALL_KEYS], **decided.numbers,
               N_("dispersion, first layer"): float(disp[0]), N_("dispersion, last layer"): float(disp[-1]),
               N_("slope per layer"): float(slope.estimate), N_("slope low"): float(slope.low),
               N_("slope high"): float(slope.high)}
    if diversity.baseline_slope is not None:
        excess = depth_excess(diversity)
        numbers[N_("slope minus shuffled-layer control")] = f"{excess.estimate:.3g} [{excess.low:.3g}, {excess.high:.3g}]"
        numbers[N_("share of random deals falling as fast (p)")] = float(diversity.baseline_p)
    if averaging is not None:
        numbers[N_("fixedness slope per layer (lesson 08)")] = float(averaging.slope.estimate)
    content = diversity.content_shape
    if content is not None:
        numbers.update({N_("content keys: rebound"): shape_text(content.rebound),
                        N_("content keys: upper third over lower third"): shape_text(content.upper_share),
                        N_("content keys: verdict"): verdict_upper_layers_converge(content, floor=floor).verdict})
    else:
        numbers[N_("content keys")] = N_("not measured (run lesson 09 again)")
    return ClaimVerdict(decided.claim, decided.verdict, numbers, resampled=decided.resampled)


def conclusion_2_training(model: DiversityResult | None, twin: DiversityResult | None, *,
                          floor: float = FLOOR_2) -> ClaimVerdict:
    """Conclusion 2's companion reading: does training make the upper layers converge beyond what depth
    alone does, or keep them diverse? The model's lesson 09 record against its untrained twin's
    (:func:`attnlab.course.claims.diversity.verdict_training_converges`): the twin's heads grow
    alike with depth by themselves, so only the model's curve *relative to* the twin's says what
    training did. Missing records or shapes: "cannot tell", saying which."""
    if model is None or twin is None:
        return ClaimVerdict.missing(CLAIM_TRAINING, N_(
            "lesson 09's record of the model and of its untrained twin (run lesson 09, and attnlab report for "
            "the twin)"))
    if model.shape is None:
        return ClaimVerdict.missing(CLAIM_TRAINING, NO_SHAPE)
    if twin.shape is None:
        return ClaimVerdict.missing(CLAIM_TRAINING, NO_TWIN_SHAPE)
    return verdict_training_converges(model.shape, twin.shape, floor=floor)


# --------------------------------------------------------------------------- 3


def conclusion_3_self(head_count: HeadCountResult | None, *, target: int = COLLAPSE_TARGET) -> ClaimVerdict:
    """The article's reading: merged into ``target`` heads, every token attends to *itself* (lesson 10)."""
    if head_count is None:
        return ClaimVerdict.missing(SELF_CLAIM, N_("{name} (run that lesson first)").format(name=HeadCountResult.file_name))
    summaries = head_count.summaries()
    return verdict_self_collapse(summaries, n_heads=max(summaries), target=target)


def conclusion_3(head_count: HeadCountResult | None, *, target: int = COLLAPSE_TARGET) -> ClaimVerdict:
    """The general reading: merged into ``target`` heads, attention collapses onto *one* token (lesson 10)."""
    if head_count is None:
        return _missing(3, HeadCountResult)
    summaries = head_count.summaries()
    return verdict_fewer_heads_collapse(summaries, n_heads=max(summaries), target=target)


# --------------------------------------------------------------------------- 4


def pair_numbers(cov: Covering, *, margin: float = ADD_LINE_4A,
                 floor: float = FLOOR_4B) -> tuple[dict, str, Interval, Interval]:
    """``(numbers, reading, signed, unsigned)``: conclusion 4's pairs of heads of one layer
    (:func:`attnlab.analysis.covering.pair_interaction` and
    :func:`~attnlab.analysis.covering.pair_deviation`, intervals over texts and pairs), with the power
    of the design and, beside, the large random sets' interaction share (a description: at 72 of 144
    heads a real encoder's own bends give 0.4-0.6 whatever its heads do)."""
    signed, unsigned = pair_interaction(cov), pair_deviation(cov)
    word = pair_reading(signed, unsigned, margin=margin, floor=floor)
    size = max(cov.sizes)
    numbers = {N_("reading"): PAIR_READINGS[word],
               N_("pairs of heads of one layer"): len(cov.pairs), "texts": cov.n_texts,
               N_("pair interaction, signed (cover above 0, saturate below)"): str(signed),
               N_("pair interaction, either way"): str(unsigned),
               N_("pair interaction as vectors, ||both - added|| / ||added||"): round(pair_vector_share(cov), 4),
               N_("chance a backup partner in the layer shares a pair"): round(
                   pair_meet_chance(cov.n_heads, PAIR_MATCHINGS), 3)}
    if cov.has_interaction:  # the large random sets, described (a twin's record measures none)
        numbers.update({
            N_("random sets of {k} heads: interaction share beyond the LayerNorm null").format(k=size): (
                f"{interaction_excess(cov, size)} ({_(READINGS[covering_reading(cov, size)])})"),
            N_("random sets of {k} heads: covering ratio (additive heads through the LayerNorm: {null})").format(
                k=size, null=null_ratio(cov, size)): str(covering_ratio(cov, size))})
    top_set = top_set_ratio(cov)
    if top_set is not None:
        numbers[N_("covering ratio of the most important heads (ranked on other texts)")] = str(top_set)
    return numbers, word, signed, unsigned


def _covering_or_missing(pruning: PruningResult | None, claim: str) -> Covering | ClaimVerdict:
    if pruning is None:
        return ClaimVerdict.missing(claim, N_("{name} (run that lesson first)").format(name=PruningResult.file_name))
    cov = pruning.covering
    if cov is None or not cov.has_move or not cov.has_pairs:
        return ClaimVerdict.missing(claim, N_("lesson 11 saved no pairs of heads masked together: run it again"))
    if not np.asarray(cov.pair_sum_norm).mean() > 0:
        return ClaimVerdict.decide(claim, holds=False, fails=False,
                                   why=N_("the heads alone change nothing: no sum to compare with"))
    return cov


def moves_enough(cov: Covering, move: float = MOVE_4) -> tuple[bool, dict]:
    """``(enough, numbers)``: whether masking every head moves the sentence vectors, on average over
    the texts, beyond ``move`` x the mean ``1 - cos`` between two different texts (the interval's
    low end above it), and the numbers that say so."""
    moved, line = all_masked_move(cov), tolerance(cov, move)
    return bool(moved.above(line)), {N_("all heads masked, 1 - cos"): str(moved),
                                     N_("all heads masked must move beyond"): line,
                                     N_("share of the mean 1 - cos between two texts"): move}


def conclusion_4a(pruning: PruningResult | None, *, margin: float = ADD_LINE_4A, weak: float = WEAK_SHARE,
                  strong: float = STRONG_SHARE, move: float = MOVE_4, floor: float = FLOOR_4A) -> ClaimVerdict:
    """The ensemble picture: each head is weak, and their effects add up (lesson 11's covering).

    A random forest is an *additive* average of weak learners, side by side. Three measurements on
    lesson 11's evaluation texts, on the effect vectors of the sentence vectors:

    * the **held-out top head** (:func:`attnlab.analysis.covering.held_out_top_head`): the head
      that moves the vectors most on one half of the texts, scored on the other half against the
      sum of every head's move alone;
    * **additivity** (:func:`pair_numbers`): two heads of one layer masked together against their
      two moves added, ``|r|`` averaged over random pairs (either way: covering and saturating
      pairs cannot cancel), interval over texts and pairs;
    * the **move** (:func:`moves_enough`): masking every head must move the vectors beyond
      ``move`` x the mean ``1 - cos`` between two texts (the "costs nothing" tolerance): tiny
      moves add up whatever the heads do.

    Holds when the top head's interval lies below ``weak``, the mean ``|r|``'s below ``margin`` and
    the all-masked move clears its line; does not hold when the top head's interval lies above
    ``strong`` or the mean ``|r|``'s wholly above ``margin`` (the pairs do not add up); otherwise
    "cannot tell". The deciding number (``estimate``, ``low``, ``high``) is the mean ``|r|``, smaller
    toward "holds"; ``floor`` (:data:`FLOOR_4A`) is how far below its untrained twin's it must lie.
    """
    cov = _covering_or_missing(pruning, WEAK_ADD_CLAIM)
    if isinstance(cov, ClaimVerdict):
        return cov
    numbers, word, _signed, unsigned = pair_numbers(cov, margin=margin)
    top, head = held_out_top_head(cov)
    enough, moved = moves_enough(cov, move)
    numbers = {"estimate": unsigned.estimate, "low": unsigned.low, "high": unsigned.high,
               "measure": N_("mean |pair interaction| of two heads of one layer"),
               N_("holds below"): margin, N_("fails above"): margin, N_("floor"): floor, **numbers,
               N_("top head / sum of every head alone (held out)"): top.estimate, N_("top low"): top.low,
               N_("top high"): top.high,
               N_("top head (chosen on the other half)"): f"L{cov.head(head)[0] + 1} H{cov.head(head)[1] + 1}",
               N_("weak means below"): weak, N_("strong means above"): strong, **moved}
    why = too_few_units(unsigned) or too_few_units(top)
    if why is not None:
        return ClaimVerdict.decide(WEAK_ADD_CLAIM, holds=False, fails=False, why=why, **numbers)
    holds = top.below(weak) and unsigned.below(margin) and enough
    fails = top.above(strong) or unsigned.above(margin)
    return ClaimVerdict.decide(WEAK_ADD_CLAIM, holds=holds, fails=fails, resampled=unsigned, **numbers)


def conclusion_4b(pruning: PruningResult | None, *, floor: float = FLOOR_4B, move: float = MOVE_4) -> ClaimVerdict:
    """Compensation: heads cover for one another (lesson 11's pairs, :func:`pair_numbers`).

    The deciding number is the **signed** mean pair interaction ``r`` (two heads of one layer
    masked together against their two moves added; above 0 they cost more together: covering;
    below 0 less: their damage saturates), interval over texts and pairs, larger toward "holds".

    Holds when it lies wholly above ``floor`` (:data:`FLOOR_4B`) and masking every head moves the
    vectors beyond the "costs nothing" tolerance (``move``, :func:`moves_enough`). Does not hold
    when it lies wholly below ``floor``, with its reading printed beside: **saturate** (wholly below
    ``-floor``: the heads' damage saturates, the opposite of covering), **add up**, or neither;
    "cannot tell" when the interval crosses the floor. ``numbers["floor"]`` is also the distance
    the model's number must keep from its untrained twin's.
    """
    cov = _covering_or_missing(pruning, COVER_CLAIM)
    if isinstance(cov, ClaimVerdict):
        return cov
    numbers, word, signed, _unsigned = pair_numbers(cov, floor=floor)
    enough, moved = moves_enough(cov, move)
    numbers = {"estimate": signed.estimate, "low": signed.low, "high": signed.high,
               "measure": N_("mean pair interaction of two heads of one layer, signed"),
               N_("holds above"): floor, N_("fails below"): floor, N_("floor"): floor, **numbers, **moved}
    why = too_few_units(signed)
    if why is not None:
        return ClaimVerdict.decide(COVER_CLAIM, holds=False, fails=False, why=why, **numbers)
    return ClaimVerdict.decide(COVER_CLAIM, holds=signed.above(floor) and enough, fails=signed.below(floor),
                               resampled=signed, **numbers)


# --------------------------------------------------------------------------- 5


def head_sizes(head_count: HeadCountResult, design: str) -> dict[int, int] | None:
    """``{heads: head size}`` of one design: ``d_model // h`` at a fixed width, ``d_head`` at a
    fixed head size; None when the record does not say (saved before the sizes were kept)."""
    if design == DESIGNS[0]:
        return {h: head_count.d_model // h for h in head_count.head_counts} if head_count.d_model else None
    return {h: head_count.d_head for h in head_count.head_counts} if head_count.d_head else None


def conclusion_5(head_count: HeadCountResult | None, *, design: str = DESIGNS[0],
                 min_head_size: int = MIN_HEAD_SIZE) -> ClaimVerdict:
    """Lesson 10's training study in one design: is the largest head count the best? Head counts
    whose heads are smaller than ``min_head_size`` (32 heads of size 2 at width 64) are left out,
    and the verdict with them is shown beside (:func:`verdict_more_heads_not_always_better`)."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    if head_count is None:
        return _missing(5, HeadCountResult)
    ppl = head_count.perplexities(design)
    if not ppl:
        return ClaimVerdict.missing(MORE_HEADS_CLAIM, f"lesson 10 saved no {design} runs: run it again")
    return verdict_more_heads_not_always_better(ppl, design=design, head_sizes=head_sizes(head_count, design),
                                                min_head_size=min_head_size)


# --------------------------------------------------------------------------- 6


def least_important(importance: np.ndarray, share: float = LEAST_SHARE) -> np.ndarray:
    """``(..., L, H)`` booleans: in each ``(L, H)`` map of ``importance``, the ``round(share * L * H)``
    heads (at least one) with the lowest importance (ties: layer, then head)."""
    importance = np.asarray(importance, dtype=float)
    size = importance.shape[-2] * importance.shape[-1]
    k = max(1, int(round(share * size)))
    flat = importance.reshape(-1, size)
    out = np.zeros(flat.shape, dtype=bool)
    np.put_along_axis(out, np.argsort(flat, axis=1, kind="stable")[:, :k], True, axis=1)
    return out.reshape(importance.shape)


def layer_shuffles(flags: np.ndarray, n_shuffles: int, seed: int = 0) -> np.ndarray:
    """``(n_shuffles, L, H)``: ``flags`` ``(L, H)`` shuffled **within each layer** (every layer keeps
    its values, so depth is held fixed)."""
    flags = np.asarray(flags)
    rng = np.random.default_rng(seed)
    return rng.permuted(np.broadcast_to(flags, (n_shuffles,) + flags.shape).copy(), axis=2)


def shuffled_within_layers(flags: np.ndarray, chosen: np.ndarray, *, n_shuffles: int = N_SHUFFLES,
                           seed: int = 0) -> tuple[float, np.ndarray, float]:
    """``(observed, null, p)``: the share of ``flags`` among the ``chosen`` heads (both ``(L, H)``
    booleans), the same share after each of ``n_shuffles`` shuffles of ``flags`` within each layer
    (:func:`layer_shuffles`, ``(n_shuffles,)``), and the one-sided p of a share at least as high
    (the observed labelling counted)."""
    flags, chosen = np.asarray(flags, dtype=bool), np.asarray(chosen, dtype=bool)
    observed = float(flags[chosen].mean())
    null = layer_shuffles(flags, n_shuffles, seed)[:, chosen].mean(axis=1)  # (P,)
    p = float(((null >= observed - 1e-12).sum() + 1) / (n_shuffles + 1))
    return observed, null, p


def stratified_difference(least: np.ndarray, other: np.ndarray, sure: np.ndarray) -> np.ndarray | float:
    """Layer-stratified difference in the share of heads among the least important: the share of
    ``other`` heads minus that of the remaining sure heads, in each layer, averaged over the layers
    with Mantel-Haenszel weights ``n_other * n_content / (n_other + n_content)`` (a layer with
    only one kind of head carries no weight). All arguments ``(..., L, H)`` booleans (broadcast);
    a float for ``(L, H)`` maps, else one value per leading index; NaN when no layer has both kinds."""
    least, other, sure = np.broadcast_arrays(*(np.asarray(x, dtype=bool) for x in (least, other, sure)))
    a, b = other & sure, ~other & sure
    n_a, n_b = a.sum(axis=-1), b.sum(axis=-1)  # (..., L)
    both = (n_a > 0) & (n_b > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = (least & a).sum(axis=-1) / n_a - (least & b).sum(axis=-1) / n_b
        w = np.where(both, n_a * n_b / (n_a + n_b), 0.0)
        out = (w * np.where(both, diff, 0.0)).sum(axis=-1) / w.sum(axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def useful_interval(per_text: np.ndarray, labels: np.ndarray, *, least: float = LEAST_SHARE, n_boot: int = 1000,
                    seed: int = 0) -> Interval:
    """:func:`stratified_difference` of the non-content heads (``labels`` ``(L, H)``; "cannot tell"
    heads left out) among the ``least`` share of heads with the lowest mean effect, with a
    percentile interval over two kinds of noise at once:

    * the **texts** of ``per_text`` ``(N, L, H)`` are resampled (each resample ranks the heads anew);
    * the **label assignment**: each resample adds the difference that labels shuffled within each
      layer give on its ranking (:func:`layer_shuffles`; its mean is exactly 0, since a layer keeps
      its counts), the within-layer permutation band. Which heads carry a label is itself one draw;
      without it, a ranking that no text resample moves (heads whose effects are tiny but steady)
      would give an interval of zero width, however unrelated the labels are to it.
    """
    per_text = np.asarray(per_text, dtype=float)
    labels = np.asarray(labels, dtype=object)
    other, sure = labels != CONTENT_LABEL, labels != UNSURE
    n = len(per_text)
    means = np.einsum("bn,nlh->blh", resample_counts(n, n_boot, seed) / n, per_text)  # (B, L, H)
    chosen = least_important(means, least)  # (B, L, H)
    shuffled = layer_shuffles(labels, n_boot, seed + 1)  # (B, L, H)
    band = stratified_difference(chosen, shuffled != CONTENT_LABEL, shuffled != UNSURE)  # (B,)
    boots = stratified_difference(chosen, other, sure) + band
    low, high = np.nanpercentile(boots, [2.5, 97.5])
    estimate = stratified_difference(least_important(per_text.mean(axis=0), least), other, sure)
    return Interval(estimate, float(low), float(high), 0.95, n)


def useful_power(diff: Interval, margin: float = USEFUL_MARGIN, floor: float = FLOOR_6A) -> float:
    """The chance that 6a holds when it is true (the two kinds of heads equally often among the least important:
    a difference of 0) at the noise of ``diff`` (its interval's upper half-width): the whole interval must
    fall below ``margin - floor``. Low when few heads carry a label: the label band alone is wide."""
    return chance_beyond(margin - floor, 0.0, float(diff.high - diff.estimate))


def conclusion_6a(perturbation: PerturbationResult | None, pruning: PruningResult | None, *,
                  least: float = LEAST_SHARE, margin: float = USEFUL_MARGIN, floor: float = FLOOR_6A) -> ClaimVerdict:
    """The heads that do not follow content (lesson 06) are not the useless ones (lesson 11): an
    equivalence test.

    The least important heads are the ``least`` share of all heads with the smallest mean
    single-head effect on lesson 11's evaluation texts. Within each layer (depth held fixed:
    labels and importance both change with it), the share of non-content heads among them is
    compared with the share of content-following heads, and the differences are pooled over
    the layers (:func:`stratified_difference`); the interval comes from resampling the texts
    and the label assignment within layers (:func:`useful_interval`). Decided on lesson 06's
    **content-key** labels with "cannot tell" heads left out; the all-keys labels are shown beside.

    Holds when the whole interval lies below ``margin - floor`` (non-content heads are no more
    often useless than content heads, within the margin, by at least the floor); does not hold
    only when the whole interval lies beyond ``margin + floor`` (they are clearly
    over-represented among the least important); otherwise "cannot tell", in particular for an
    estimate inside the margin whose interval crosses it (:data:`FLOOR_6A`). A layer-wise label
    shuffle p (a description of the labels) is shown beside.
    """
    if perturbation is None or pruning is None:
        return ClaimVerdict.missing(USEFUL_CLAIM, N_("lessons 06 and 11 (run those lessons first)"))
    labels = np.asarray(perturbation.follower_labels_by_reading.get(CONTENT_KEYS, []), dtype=object)
    if labels.size == 0:
        return ClaimVerdict.missing(USEFUL_CLAIM, N_("{names} saved before the content-key reading "
                                                     "(run those lessons again)").format(
            names=PerturbationResult.file_name))
    if labels.shape != np.shape(pruning.ablation) or pruning.ablation_per_text is None:
        return ClaimVerdict.missing(USEFUL_CLAIM, "lessons 06 and 11 ran on models of different shapes")
    sure = labels != UNSURE
    content, other = np.flatnonzero((labels == CONTENT_LABEL).ravel()), np.flatnonzero((sure & (labels != CONTENT_LABEL)).ravel())
    why = too_small_groups(content, other)
    counts = {N_("content heads"): len(content), N_("other heads"): len(other),
              N_("cannot tell (lesson 06 heads)"): int((~sure).sum())}
    if why is not None:
        return ClaimVerdict.decide(USEFUL_CLAIM, holds=False, fails=False, why=why, **counts)
    diff = useful_interval(pruning.ablation_per_text, labels, least=least)
    chosen = least_important(pruning.ablation, least)
    observed, null, p = shuffled_within_layers(labels != CONTENT_LABEL, chosen)
    numbers = {READING: CONTENT_KEYS, WHY_READING: WHY[CONTENT_KEYS],
               "estimate": diff.estimate, "low": diff.low, "high": diff.high,
               "measure": N_("share difference among the least important heads, non-content minus content, "
                             "within layers"),
               N_("margin"): margin, N_("floor"): floor, "texts": diff.n,
               N_("least important heads"): int(chosen.sum()),
               N_("their share of all heads"): least, **counts,
               N_("non-content share of the least important (all heads)"): observed,
               N_("within-layer label shuffles, p (over-represented)"): p}
    all_labels = np.asarray(perturbation.follower_labels, dtype=object)
    if all_labels.shape == labels.shape:
        numbers[N_("all keys: share difference")] = str(useful_interval(pruning.ablation_per_text, all_labels,
                                                                        least=least))
    numbers[N_("chance of holds when both kinds of heads are equally useful, at this size")] = round(
        useful_power(diff, margin, floor), 3)
    why = too_few_units(diff)
    if why is not None or not np.isfinite(diff.estimate):
        return ClaimVerdict.decide(USEFUL_CLAIM, holds=False, fails=False,
                                   why=why or N_("no layer has both kinds of heads"), **numbers)
    return ClaimVerdict.decide(USEFUL_CLAIM, holds=diff.below(margin - floor), fails=diff.above(margin + floor),
                               **numbers)


def task_evidence(pruning: PruningResult) -> tuple[dict[str, Interval], Interval]:
    """``(split-half per task, agreement of the two tasks)`` of lesson 11's fixed probes (intervals over queries)."""
    return pruning.tasks.fixed_evidence


def conclusion_6b(pruning: PruningResult | None, *, margin: float = TASK_MARGIN,
                  reliable: float = RELIABLE, floor: float = FLOOR_6B) -> ClaimVerdict:
    """Which heads matter changes with the task (lesson 11's two probes, noise of both kinds counted).

    A sentence-level probe (which family a query comes from) and a token-level probe (does a
    token begin a word); a head's importance for a task is how far masking the head lowers the
    probe's log-odds of the right label on held-out queries
    (:class:`attnlab.analysis.probes.TaskStudy`). Each probe is also refitted on the two halves
    of each of at least :data:`MIN_SPLITS` random splits of its training queries, and each split's
    refits scored on two disjoint halves of the held-out queries
    (:func:`attnlab.analysis.probes.refit_agreements`): a task's **reliability** is the agreement
    of its two refits' rankings, the tasks' **agreement** is measured across the same halves, and
    dividing it by the square root of the two reliabilities gives the **disattenuated**
    agreement (capped at 1), what rankings free of query and probe noise would show. Means over
    the splits; intervals from the query bootstrap nested inside the splits, with the heads
    resampled, so the probes' training split moves the interval and not only the estimate.

    Holds when the disattenuated agreement's interval lies below ``margin - floor`` (the tasks
    rank the heads clearly differently); does not hold when it lies above ``margin + floor``
    (they rank them largely alike, even if not identically; :data:`FLOOR_6B`); "cannot tell"
    otherwise, when a reliability's interval does not lie above ``reliable`` (the rankings are
    too noisy to divide by), when a probe does no better than always answering the commonest
    label, or when the probes were refitted on fewer than :data:`MIN_SPLITS` splits (a record
    from before the splits). The fixed probes' split-half and agreement, and the word-start
    accuracy of token identity alone, are shown beside.
    """
    if pruning is None:
        return ClaimVerdict.missing(TASK_CLAIM, N_("{name} (run that lesson first)").format(name=PruningResult.file_name))
    tasks = pruning.tasks
    if tasks is None or set(tasks.refit_costs) != set(tasks.tasks):
        return ClaimVerdict.missing(TASK_CLAIM, N_("lesson 11 saved no refitted task probes: run it again"))
    halves, across = task_evidence(pruning)
    refit = tasks.refit_agreements()
    dis = refit["disattenuated"]
    rel = [refit["reliability a"], refit["reliability b"]]
    numbers = {"estimate": dis.estimate, "low": dis.low, "high": dis.high,
               "measure": N_("rank agreement of the two tasks, disattenuated"),
               N_("margin"): margin, N_("floor"): floor, N_("reliable means above"): reliable,
               N_("splits of the training queries"): tasks.n_splits,
               **{N_("reliability, {task}").format(task=t): str(r) for t, r in zip(tasks.tasks, rel)},
               N_("agreement across refits and halves"): str(refit["across"]),
               **{N_("split-half, {task}").format(task=t): str(h) for t, h in halves.items()},
               N_("agreement of the fixed probes"): str(across),
               **{N_("probe accuracy, {task}").format(task=t): tasks.accuracy[t] for t in tasks.tasks},
               **{N_("commonest label, {task}").format(task=t): tasks.chance[t] for t in tasks.tasks},
               N_("word start from token identity alone"): tasks.identity_accuracy,
               N_("held-out queries"): tasks.n_test, N_("training queries"): tasks.n_train}
    useless = [t for t in tasks.tasks if not tasks.accuracy[t] > tasks.chance[t]]
    if useless:
        return ClaimVerdict.decide(TASK_CLAIM, holds=False, fails=False, **numbers, why=N_(
            "a probe does no better than the commonest label: {tasks}").format(tasks=", ".join(useless)))
    why = too_few_units(dis)
    if why is None and tasks.n_splits < MIN_SPLITS:
        why = N_("the probes were refitted on {splits} split(s) of their training queries, fewer than {least}: "
                 "run lesson 11 again").format(splits=tasks.n_splits, least=MIN_SPLITS)
    if why is None and not all(r.above(reliable) for r in rel):
        why = TOO_NOISY.format(line=reliable)
    if why is None and not np.isfinite(float(dis.estimate)):
        why = TOO_NOISY.format(line=reliable)
    if why is not None:
        return ClaimVerdict.decide(TASK_CLAIM, holds=False, fails=False, why=why, **numbers)
    return ClaimVerdict.decide(TASK_CLAIM, holds=dis.below(margin - floor), fails=dis.above(margin + floor),
                               **numbers)


def conclusion_6(perturbation: PerturbationResult | None, pruning: PruningResult | None, *,
                 parts: tuple[ClaimVerdict, ClaimVerdict] | None = None) -> ClaimVerdict:
    """Both halves of the sixth conclusion (:func:`conclusion_6a` and :func:`conclusion_6b`) must hold.

    ``parts``: the two halves already judged (e.g. after the untrained-twin control), instead of
    judging them here."""
    a, b = parts if parts is not None else (conclusion_6a(perturbation, pruning), conclusion_6b(pruning))
    word = combine([a.verdict, b.verdict])
    return ClaimVerdict.decide(CLAIMS[6], holds=word == HOLDS, fails=word == FAILS, **{
        N_("not useless (6a)"): a.verdict, N_("depends on the task (6b)"): b.verdict,
        **{PART_NUMBER["6a"].format(number=k): v for k, v in a.numbers.items()},
        **{PART_NUMBER["6b"].format(number=k): v for k, v in b.numbers.items()},
    })


# --------------------------------------------------------------------------- the one table


@dataclass(frozen=True)
class Conclusion:
    """One row of lesson 12's verdicts, everything the course needs to know about it in one place.

    Every field is required (a row without one fails at import). Lists elsewhere (the rows'
    labels, judges, claims, readings, the untrained twin's direction toward "holds", the rows not
    about the model, the numbers check's row pattern) are derived from :data:`CONCLUSIONS`.

    Attributes:
        label: the row (``"1"``, ``"3a"``, ... ``"6b"``); conclusion 6's halves are judged apart.
        claim: the claim its verdict states (marked for the catalogue).
        judge: the function that judges it, taking the records named by ``reads`` in that order.
        reads: the fields of :class:`~attnlab.course.evidence.Evidence` it reads (lesson records).
        toward: +1 when a larger deciding number is toward "holds", -1 when a smaller one is.
        about_model: whether the claim is about the model under test (False: lesson 10 trains its own
            small models, so no untrained twin applies).
        reading: what a two-reading row reads the conclusion as (marked), or "" for a one-reading row.
        sensitivity: the thresholds its sensitivity table moves, ``{name: [values]}`` ({} for none).
    """

    label: str
    claim: str
    judge: Callable[..., ClaimVerdict]
    reads: tuple[str, ...]
    toward: int
    about_model: bool
    reading: str
    sensitivity: dict

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[1-9][0-9]*[a-z]?", self.label):
            raise ValueError(f"a conclusion's label is a number with an optional letter, got {self.label!r}")
        if self.toward not in (+1, -1):
            raise ValueError(f"conclusion {self.label}: toward must be +1 or -1, got {self.toward!r}")
        if not self.reads or not callable(self.judge) or not self.claim:
            raise ValueError(f"conclusion {self.label}: a claim, a judge and the records it reads are needed")

    @property
    def number(self) -> int:
        """The article's conclusion this row belongs to (``"3a"`` -> 3)."""
        return int(re.match(r"\d+", self.label).group())

    def judged(self, evidence) -> ClaimVerdict:
        """The row's verdict from the data alone, from ``evidence``'s records (an object with the fields ``reads``)."""
        return self.judge(*(getattr(evidence, field) for field in self.reads))


def _fixed_width(head_count: HeadCountResult | None) -> ClaimVerdict:
    return conclusion_5(head_count, design=DESIGNS[0])


def _fixed_head_size(head_count: HeadCountResult | None) -> ClaimVerdict:
    return conclusion_5(head_count, design=DESIGNS[1])


#: the rows of lesson 12, in the article's order (conclusion 6 as its two halves, combined afterwards)
CONCLUSIONS = (
    Conclusion("1", CLAIMS[1], conclusion_1, ("averaging", "perturbation", "patterns", "attention_limits"),
               +1, True, "", SENSITIVITY[1]),
    Conclusion("2", CLAIMS[2], conclusion_2, ("diversity", "averaging"), -1, True, "", SENSITIVITY[2]),
    Conclusion("3a", SELF_CLAIM, conclusion_3_self, ("head_count",), +1, True, N_("onto itself"), {}),
    Conclusion("3b", CLAIMS[3], conclusion_3, ("head_count",), +1, True, N_("onto one token"), {}),
    Conclusion("4a", WEAK_ADD_CLAIM, conclusion_4a, ("pruning",), -1, True, N_("weak and additive"),
               SENSITIVITY["4a"]),
    Conclusion("4b", COVER_CLAIM, conclusion_4b, ("pruning",), +1, True, N_("covering"), SENSITIVITY["4b"]),
    Conclusion("5a", CLAIMS[5], _fixed_width, ("head_count",), +1, False, N_("fixed width"), {}),
    Conclusion("5b", CLAIMS[5], _fixed_head_size, ("head_count",), +1, False, N_("fixed head size"), {}),
    Conclusion("6a", USEFUL_CLAIM, conclusion_6a, ("perturbation", "pruning"), -1, True, "", SENSITIVITY["6a"]),
    Conclusion("6b", TASK_CLAIM, conclusion_6b, ("pruning",), -1, True, "", SENSITIVITY["6b"]),
)
#: each row of :data:`CONCLUSIONS` by its label
BY_LABEL = {c.label: c for c in CONCLUSIONS}
#: the rows of conclusion 6, judged apart and combined into one (:func:`conclusion_6`)
SIX_PARTS = ("6a", "6b")
#: the labels of the verdicts lesson 12 shows: the table's rows, conclusion 6's halves as one "6"
SHOWN_LABELS = tuple(dict.fromkeys("6" if c.label in SIX_PARTS else c.label for c in CONCLUSIONS))
#: a label of a shown verdict or one of its parts, as a regular expression (the numbers check reads it)
LABEL_PATTERN = "(?:" + "|".join(sorted({re.escape(c.label) for c in CONCLUSIONS} | set(SHOWN_LABELS),
                                        key=len, reverse=True)) + ")"
