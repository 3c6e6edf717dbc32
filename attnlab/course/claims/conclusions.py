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

import numpy as np

from attnlab.analysis.pruning import SetDamage, set_damage
from attnlab.analysis.stats import (
    Interval,
    bootstrap,
    bootstrap_mean,
    permutation_test,
    too_few_units,
    too_small_groups,
)
from attnlab.course.claims.head_count import (
    COLLAPSE_CLAIM,
    COLLAPSE_TARGET,
    MORE_HEADS_CLAIM,
    SELF_CLAIM,
    verdict_fewer_heads_collapse,
    verdict_more_heads_not_always_better,
    verdict_self_collapse,
)
from attnlab.course.attention_limits_result import AttentionLimitsResult
from attnlab.course.claims.attention_limits import FIXED_HEADS_CHEAP
from attnlab.course.claims.pruning import grid_index
from attnlab.course.lesson_results import (
    RESULT_NAMES,
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
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, ClaimVerdict, combine

CLAIMS = {  # looked up by number, so marked with N_ for the catalogue
    1: N_("most heads learn a fixed pattern; only a few capture lexical or syntactic information"),
    2: N_("lower layers are more diverse; heads of upper layers converge"),
    3: COLLAPSE_CLAIM,
    4: N_("multi-head attention is an ensemble of weak learners: no single head matters much, and the heads "
          "cover for one another"),
    5: MORE_HEADS_CLAIM,
    6: N_("heads without visible lexical/syntactic structure are not useless, and what they are used for "
          "depends on the task"),
}
#: the two halves of conclusion 6
USEFUL_CLAIM = "heads that do not follow the content are not the useless ones"
TASK_CLAIM = "which heads matter depends on the task (objective)"
#: the two designs of lesson 10's training study
DESIGNS = ("fixed width", "fixed head size")

#: conclusion 1: "most heads" means more than this share is fixed (lesson 08) ...
MOST_FIXED = 0.5
#: ... and "only a few" means at most this share follows the content (lesson 06)
FEW_CONTENT = 0.25
#: conclusion 4: random sets of this share of the heads are masked together (a point of lesson 11's grid)
REDUNDANCY_SHARE = 0.1
#: ... the heads are redundant when the set's loss increase is below this share of the sum of its
#: heads' increases alone (1 would be exactly additive)
REDUNDANT = 0.9
#: ... each head is weak when the top single head does at most WEAK_SHARE of what a random set does;
#: one head is strong from STRONG_SHARE
WEAK_SHARE = 0.25
STRONG_SHARE = 0.5
#: conclusion 2: at most this share of random deals of heads to layers may fall as fast as the real layers
CONTROL_ALPHA = 0.05
#: conclusion 6a: the share of their fair share of importance the non-content heads must carry
#: for "not useless" (the interval over texts must lie above it)
FAIR_SHARE = 0.8
#: conclusion 6b: an objective's ranking is stable when its split-half interval lies above this
STABLE = 0.5
#: conclusion 6b: objectives read off the same forward passes (not different tasks)
SAME_PASS_OBJECTIVES = ("sentence", "token")
#: lesson 06's label of a head whose map moves with the tokens
CONTENT_LABEL = "content"

#: the thresholds of each conclusion's sensitivity table
SENSITIVITY = {
    1: {"most": [0.4, 0.5, 0.6], "few": [0.15, 0.25, 0.35, 0.5]},
    4: {"redundant": [0.7, 0.8, 0.9, 1.0], "share": [0.1, 0.2, 0.3]},
    2: {"alpha": [0.01, 0.05, 0.1]},
    "6a": {"fair_share": [0.6, 0.8, 1.0]},
    "6b": {"stable": [0.3, 0.5, 0.7]},
}


def _missing(number: int, *kinds: type) -> ClaimVerdict:
    names = ", ".join(RESULT_NAMES[k] for k in kinds)
    return ClaimVerdict.missing(CLAIMS[number], f"{names} (run those lessons first)")


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


def share_interval(flags: np.ndarray, unsure: np.ndarray | None = None) -> Interval:
    """Share of True among heads, from ``flags/N`` (no unsure head counted) to ``(flags | unsure)/N``
    (every unsure head counted).

    The heads are the whole population, not a sample, so nothing is resampled over them: the only
    uncertainty is in each head's label, which ``unsure`` (heads whose label "cannot tell") carries.
    """
    flags = np.asarray(flags, dtype=bool)
    unsure = np.zeros_like(flags) if unsure is None else np.asarray(unsure, dtype=bool)
    point = float(flags.mean())
    return Interval(point, point, float((flags | unsure).mean()), 0.95, 0)


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


def conclusion_1(averaging: AveragingResult | None, perturbation: PerturbationResult | None,
                 patterns: HeadPatternsResult | None = None,
                 attention_limits: AttentionLimitsResult | None = None, *, most: float = MOST_FIXED,
                 few: float = FEW_CONTENT) -> ClaimVerdict:
    """Fixed patterns dominate and few heads follow content, decided on the **content keys**.

    The reading: most heads of a trained encoder rest much of every row on a special token
    ([CLS]/[SEP], ``<s>``/``</s>``), the same for every query; counted in, that weight makes
    almost every head "fixed" and keeps it from "changing". The article asks whether the part
    of a row that reads the text follows a fixed pattern or the content, so both halves are
    decided with the special keys left out and rows renormalised
    (:func:`attnlab.core.distributions.content_keys`); the all-keys numbers are shown beside.

    * lesson 08's share of heads **labelled** fixed on the content keys (each head's whole
      interval of fixedness over query shards above lesson 08's threshold), its interval from
      resampling query shards, widened to hold every "cannot tell" head going either way
      (``numbers["estimate"]``, ``["low"]``, ``["high"]``);
    * lesson 06's share of content-followers on the content keys, with its interval from
      resampling the **queries** (each resample labels every head anew), and the three-way
      label counts (content / position / cannot tell) from each head's own interval.

    Heads are never resampled: they are the whole population. Holds when the fixed share's
    interval lies above ``most`` **and** the content share's below ``few``; does not hold when
    the fixed share's interval lies below ``most`` or the content share's above ``few``;
    "cannot tell" otherwise, and when an interval rests on fewer than
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
        return ClaimVerdict.missing(CLAIMS[1], f"{RESULT_NAMES[AveragingResult]} was saved before heads had "
                                               "three-way labels (run lesson 08 again)")
    fixed = averaging.content_fixed_share
    content = perturbation.content_share_by_reading.get(CONTENT_KEYS)
    if fixed is None or content is None or not averaging.content_labels:
        late = [RESULT_NAMES[k] for k, ok in ((AveragingResult, fixed is not None and averaging.content_labels),
                                               (PerturbationResult, content is not None)) if not ok]
        return ClaimVerdict.missing(CLAIMS[1], N_("{names} saved before the content-key reading "
                                                  "(run those lessons again)").format(names=", ".join(late)))
    kinds = np.asarray(averaging.content_labels, dtype=object).ravel().tolist()
    followers = np.asarray(perturbation.follower_labels_by_reading.get(CONTENT_KEYS, []), dtype=object).ravel().tolist()
    all_content = perturbation.content_share_by_reading.get(ALL_KEYS)
    table = fixed_vs_followers(averaging, perturbation)
    numbers = {READING: CONTENT_KEYS, WHY_READING: WHY[CONTENT_KEYS],
               "estimate": float(fixed.estimate), "low": float(fixed.low), "high": float(fixed.high),
               "fixed heads (lesson 08)": float(fixed.estimate), "query shards": fixed.n,
               N_("fixed (lesson 08 heads)"): kinds.count("fixed"),
               N_("varying (lesson 08 heads)"): kinds.count("varying"),
               N_("cannot tell (lesson 08 heads)"): kinds.count(UNSURE),
               N_("uniform (lesson 08 heads)"): kinds.count("uniform"),
               "most means more than": most,
               "content followers (lesson 06)": float(content.estimate), "content low": float(content.low),
               "content high": float(content.high), "queries (lesson 06)": content.n,
               N_("content (lesson 06 heads)"): followers.count("content"),
               N_("position (lesson 06 heads)"): followers.count("position"),
               N_("cannot tell (lesson 06 heads)"): followers.count(UNSURE),
               "a few means at most": few,
               N_("all keys: fixed heads (lesson 08)"): float(averaging.fixed_share.estimate),
               N_("all keys: fixed low"): float(averaging.fixed_share.low),
               N_("all keys: fixed high"): float(averaging.fixed_share.high)}
    if all_content is not None:
        numbers.update({N_("all keys: content followers (lesson 06)"): float(all_content.estimate),
                        N_("all keys: content low"): float(all_content.low),
                        N_("all keys: content high"): float(all_content.high)})
    if averaging.special_weight is not None:
        weight = np.asarray(averaging.special_weight, dtype=float)
        numbers[N_("weight on special tokens, per head (min, median, max)")] = [
            round(float(np.nanmin(weight)), 3), round(float(np.nanmedian(weight)), 3), round(float(np.nanmax(weight)), 3)]
    numbers.update({"fixed and content-following (same heads)": table["fixed"].get(CONTENT_LABEL, 0),
                    "cross-tab 08 x 06": table})
    if patterns is not None:
        numbers["fixed-pattern labels (lesson 05)"] = float(patterns.fixed_share)
    if attention_limits is not None:
        rho = attention_limits.papa_rho
        numbers["fixedness vs cost of mean-map replacement (lesson 13)"] = (
            f"rho {float(rho.estimate):+.2f} [{float(rho.low):+.2f}, {float(rho.high):+.2f}]")
        cheap = attention_limits.verdicts.get(FIXED_HEADS_CHEAP)
        numbers["fixed heads cheap to replace (lesson 13)"] = cheap.verdict if cheap is not None else "not judged"
    else:
        numbers["mean-map replacement (lesson 13)"] = "not run yet"
    why = too_few_units(fixed) or too_few_units(content)
    if why is not None:
        return ClaimVerdict.decide(CLAIMS[1], holds=False, fails=False, why=why, **numbers)
    holds = fixed.above(most) and content.below(few)
    fails = fixed.below(most) or content.above(few)
    return ClaimVerdict.decide(CLAIMS[1], holds=holds, fails=fails, **numbers)


# --------------------------------------------------------------------------- 2


def depth_excess(diversity: DiversityResult) -> Interval:
    """Lesson 09's slope of dispersion against depth minus its shuffled-layer control's, per layer.

    The control (heads dealt to layers at random) has no layer structure; its mean slope is
    a constant of the run (about 0: every pseudo-layer is a random group of heads), so the
    interval over texts of the difference is the real slope's interval shifted by it.
    """
    real, control = diversity.slope, diversity.baseline_slope
    offset = float(control.estimate)
    return Interval(float(real.estimate) - offset, float(real.low) - offset, float(real.high) - offset,
                    real.level, real.n)


def conclusion_2(diversity: DiversityResult | None, averaging: AveragingResult | None = None, *,
                 alpha: float = CONTROL_ALPHA) -> ClaimVerdict:
    """Within-layer dispersion of heads shrinks with depth beyond what random layers give (lesson 09).

    Decided on the real slope of dispersion against depth minus the slope of lesson 09's
    shuffled-layer control (:func:`depth_excess`, interval over texts). Holds when the whole
    interval lies below 0 and at most ``alpha`` of the random deals fall as fast; does not
    hold when it lies above 0 or the real slope sits inside the random deals (more than
    ``1 - alpha`` of them fall as fast); otherwise "cannot tell". A record without the
    control, or an interval on too few texts, is "cannot tell" with the reason.
    Lesson 08's slope of fixedness against depth is shown beside it.

    Decided on **all keys**: the claim is about the picture Clark et al. drew, heads placed by
    how alike their whole rows are. Heads that all rest on the same special token are alike
    there; the same slope on the content keys (special tokens left out, rows renormalised) is
    shown beside it, so a trend carried by the sinks alone can be seen.
    """
    if diversity is None:
        return _missing(2, DiversityResult)
    if diversity.baseline_slope is None:
        return ClaimVerdict.missing(CLAIMS[2], _("lesson 09 saved no shuffled-layer control: run it again"))
    disp = np.atleast_1d(np.asarray(diversity.dispersion.estimate, dtype=float))  # (L,)
    excess = depth_excess(diversity)
    slope = diversity.slope
    numbers = {"estimate": excess.estimate, "low": excess.low, "high": excess.high,
               "measure": "slope minus shuffled-layer control",
               "dispersion, first layer": float(disp[0]), "dispersion, last layer": float(disp[-1]),
               "slope per layer": float(slope.estimate), "slope low": float(slope.low),
               "slope high": float(slope.high), "control slope": float(diversity.baseline_slope.estimate),
               "control low": float(diversity.baseline_slope.low),
               "control high": float(diversity.baseline_slope.high),
               "share of random deals falling as fast (p)": float(diversity.baseline_p), "texts": excess.n}
    if averaging is not None:
        numbers["fixedness slope per layer (lesson 08)"] = float(averaging.slope.estimate)
    numbers = {READING: ALL_KEYS, WHY_READING: WHY[ALL_KEYS], **numbers}
    if diversity.content_slope is not None and diversity.content_baseline_slope is not None:
        offset = float(diversity.content_baseline_slope.estimate)
        c = diversity.content_slope
        numbers.update({N_("content keys: slope minus control"): float(c.estimate) - offset,
                        N_("content keys: low"): float(c.low) - offset,
                        N_("content keys: high"): float(c.high) - offset,
                        N_("content keys: share of random deals falling as fast (p)"):
                            float(diversity.content_baseline_p)})
    else:
        numbers[N_("content keys")] = N_("not measured (run lesson 09 again)")
    why = too_few_units(excess)
    if why is not None:
        return ClaimVerdict.decide(CLAIMS[2], holds=False, fails=False, why=why, **numbers)
    p = float(diversity.baseline_p)
    holds = excess.below(0.0) and p < alpha
    fails = excess.above(0.0) or p > 1 - alpha
    return ClaimVerdict.decide(CLAIMS[2], holds=holds, fails=fails, **numbers)


# --------------------------------------------------------------------------- 3


def conclusion_3_self(head_count: HeadCountResult | None, *, target: int = COLLAPSE_TARGET) -> ClaimVerdict:
    """The article's reading: merged into ``target`` heads, every token attends to *itself* (lesson 10)."""
    if head_count is None:
        return ClaimVerdict.missing(SELF_CLAIM, f"{RESULT_NAMES[HeadCountResult]} (run that lesson first)")
    summaries = head_count.summaries()
    return verdict_self_collapse(summaries, n_heads=max(summaries), target=target)


def conclusion_3(head_count: HeadCountResult | None, *, target: int = COLLAPSE_TARGET) -> ClaimVerdict:
    """The general reading: merged into ``target`` heads, attention collapses onto *one* token (lesson 10)."""
    if head_count is None:
        return _missing(3, HeadCountResult)
    summaries = head_count.summaries()
    return verdict_fewer_heads_collapse(summaries, n_heads=max(summaries), target=target)


# --------------------------------------------------------------------------- 4


class NothingAlone(ValueError):
    """The heads of the random sets change nothing when masked alone: no ratio to form."""


def redundancy_evidence(pruning: PruningResult, *, share: float = REDUNDANCY_SHARE,
                        seed: int = 0) -> tuple[Interval, Interval, SetDamage]:
    """``(together / sum alone, top head / random set, damage)`` with bootstrap intervals over texts.

    ``damage`` is :func:`attnlab.analysis.pruning.set_damage` of lesson 11's random sets at the
    grid point at or above ``share``; on each evaluation text it pairs the loss increase of each
    random set masked together with the sum of its heads' single-head increases, and the top
    single head's increase. Each resample draws texts and recomputes both ratios of means on
    the same texts.
    """
    study = pruning.study
    fraction = float(study.fractions[grid_index(study, share)])
    damage = set_damage(study, pruning.ablation_per_text, fraction)
    if not damage.sum_alone.mean() > 0:
        raise NothingAlone(_("the heads alone change nothing: no sum to compare with"))

    def ratio(v: np.ndarray) -> float:
        top, bottom = v.mean(axis=0)
        return float(top / bottom) if bottom > 0 else float("nan")

    together = bootstrap(np.stack([damage.joint, damage.sum_alone], axis=1), ratio, seed=seed)
    single = bootstrap(np.stack([damage.top_alone, damage.joint], axis=1), ratio, seed=seed)
    return together, single, damage


def conclusion_4(pruning: PruningResult | None, *, share: float = REDUNDANCY_SHARE, redundant: float = REDUNDANT,
                 weak: float = WEAK_SHARE, strong: float = STRONG_SHARE) -> ClaimVerdict:
    """Heads are weak one by one and cover for one another (lesson 11).

    Two measurements on lesson 11's evaluation texts, from passes the lesson already made
    (:func:`redundancy_evidence`): random sets of ``share`` of the heads masked together,
    against the sum of what each of their heads does alone (``together / sum alone``), and
    the most damaging single head against those same random sets (``top / set``).

    Holds when the interval of ``together / sum alone`` lies below ``redundant`` (masked
    together the heads do clearly less than the sum of their parts: they are redundant)
    **and** the interval of ``top / set`` below ``weak`` (no head alone comes near a random
    set). Does not hold when ``together / sum alone`` lies above ``redundant`` (damage adds
    up or compounds: every head is needed for what it does itself) or ``top / set`` above
    ``strong`` (one head alone does most of what a set does); otherwise "cannot tell".
    ``estimate``, ``low`` and ``high`` are ``together / sum alone``.
    """
    if pruning is None:
        return _missing(4, PruningResult)
    study = pruning.study
    if (pruning.ablation_per_text is None or study.per_text.get("random") is None
            or not study.random_orders):
        return ClaimVerdict.missing(CLAIMS[4], "lesson 11 saved no per-text losses of its random sets: run it again")
    try:
        together, single, damage = redundancy_evidence(pruning, share=share)
    except NothingAlone as exc:
        return ClaimVerdict.decide(CLAIMS[4], holds=False, fails=False, why=str(exc))
    except ValueError as exc:
        return ClaimVerdict.missing(CLAIMS[4], _("no random sets to compare: {reason}").format(reason=exc))
    numbers = {"estimate": together.estimate, "low": together.low, "high": together.high,
               "measure": "together / sum alone", "heads per random set": damage.k,
               "random sets": damage.n_sets, "texts": together.n,
               "loss increase, set masked together": float(damage.joint.mean()),
               "sum of its heads' increases alone": float(damage.sum_alone.mean()),
               "redundant means below": redundant,
               "top head / random set": single.estimate, "top / set low": single.low, "top / set high": single.high,
               "weak means below": weak, "strong means above": strong}
    why = too_few_units(together)
    if why is not None:
        return ClaimVerdict.decide(CLAIMS[4], holds=False, fails=False, why=why, **numbers)
    holds = together.below(redundant) and single.below(weak)
    fails = together.above(redundant) or single.above(strong)
    return ClaimVerdict.decide(CLAIMS[4], holds=holds, fails=fails, **numbers)


# --------------------------------------------------------------------------- 5


def conclusion_5(head_count: HeadCountResult | None, *, design: str = DESIGNS[0]) -> ClaimVerdict:
    """Lesson 10's training study in one design: is the largest head count the best?"""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    if head_count is None:
        return _missing(5, HeadCountResult)
    ppl = head_count.perplexities(design)
    if not ppl:
        return ClaimVerdict.missing(MORE_HEADS_CLAIM, f"lesson 10 saved no {design} runs: run it again")
    return verdict_more_heads_not_always_better(ppl, design=design)


# --------------------------------------------------------------------------- 6


def non_content_ratio(perturbation: PerturbationResult, pruning: PruningResult, *, seed: int = 0) -> Interval:
    """The non-content heads' share of all importance divided by their share of the heads.

    Importance is each head's single-head ablation effect on lesson 11's evaluation texts
    (negatives counted as 0). 1 means importance ignores lesson 06's labels; below 1 the
    non-content heads matter less. The interval resamples the evaluation texts (the heads
    and their labels are the whole population and stay fixed).
    """
    labels = np.asarray(perturbation.follower_labels, dtype=object).ravel()  # (L*H,)
    other = labels != CONTENT_LABEL
    effects = np.asarray(pruning.ablation_per_text, dtype=float)
    effects = effects.reshape(len(effects), -1)  # (N, L*H)
    base = float(other.mean())

    def ratio(rows: np.ndarray) -> float:
        importance = np.clip(rows.mean(axis=0), 0.0, None)  # (L*H,)
        total = importance.sum()
        return float(importance[other].sum() / total / base) if total > 0 else float("nan")

    return bootstrap(effects, ratio, seed=seed)


def label_groups(perturbation: PerturbationResult) -> tuple[np.ndarray, np.ndarray]:
    """Lesson 06's heads as two groups: ``(content, other)`` flat indices into ``[layers, heads]``."""
    labels = np.asarray(perturbation.follower_labels, dtype=object).ravel()
    return np.flatnonzero(labels == CONTENT_LABEL), np.flatnonzero(labels != CONTENT_LABEL)


def conclusion_6a(perturbation: PerturbationResult | None, pruning: PruningResult | None, *,
                  fair_share: float = FAIR_SHARE) -> ClaimVerdict:
    """The heads that do not follow content (lesson 06) are not the useless ones (lesson 11).

    Their share of the total importance over their share of the heads (the base rate), with
    an interval over the evaluation texts (:func:`non_content_ratio`): holds when the whole
    interval lies above ``fair_share`` (they carry at least that much of their fair share);
    does not hold when it lies below (usefulness goes with visible structure); otherwise
    "cannot tell". An empty or one-head group of labels, or too few texts, is "cannot tell"
    with the reason.
    """
    if perturbation is None or pruning is None:
        return ClaimVerdict.missing(USEFUL_CLAIM, "lessons 06 and 11 (run those lessons first)")
    labels = np.asarray(perturbation.follower_labels, dtype=object)
    if labels.shape != np.shape(pruning.ablation):
        return ClaimVerdict.missing(USEFUL_CLAIM, "lessons 06 and 11 ran on models of different shapes")
    content, other = label_groups(perturbation)
    why = too_small_groups(content, other)
    if why is not None:
        return ClaimVerdict.decide(USEFUL_CLAIM, holds=False, fails=False, why=why,
                                   **{"content heads": len(content), "other heads": len(other)})
    if pruning.ablation_per_text is None:
        return ClaimVerdict.missing(USEFUL_CLAIM, "lesson 11 saved no per-text effects: run it again")
    ratio = non_content_ratio(perturbation, pruning)
    numbers = {"estimate": ratio.estimate, "low": ratio.low, "high": ratio.high,
               "measure": "importance share / head share (non-content heads)",
               "their share of heads (base rate)": len(other) / labels.size, "fair share needed": fair_share,
               "content heads": len(content), "other heads": len(other), "texts": ratio.n}
    why = too_few_units(ratio)
    if why is not None:
        return ClaimVerdict.decide(USEFUL_CLAIM, holds=False, fails=False, why=why, **numbers)
    return ClaimVerdict.decide(USEFUL_CLAIM, holds=ratio.above(fair_share), fails=ratio.below(fair_share),
                               **numbers)


def objective_pairs(pruning: PruningResult) -> dict[str, Interval]:
    """Lesson 11's between-objective agreements of objectives that are computed differently
    (``"sentence vs token"`` come from the same passes over the same hidden states: left out)."""
    pairs = dict(pruning.objective_agreements)
    return {name: iv for name, iv in pairs.items()
            if not set(name.split(" vs ")) <= set(SAME_PASS_OBJECTIVES)}


def conclusion_6b(pruning: PruningResult | None, *, stable: float = STABLE) -> ClaimVerdict:
    """Which heads matter changes with the objective (lesson 11's objectives that differ).

    For each pair of objectives (sentence similarity against contrastive, and the masked-LM
    loss when the model has its head), the rank correlation of their head importance is
    set against each objective's own split-half correlation (every interval from
    resampling texts). Holds when, for some pair, the between-objective interval lies
    wholly below both objectives' own split-half intervals, which themselves lie above
    ``stable`` (so the disagreement is not noise). Does not hold when every pair's
    between-objective interval reaches into the lower objective's split-half interval
    (they agree as well as each agrees with itself) and both are stable; otherwise
    "cannot tell". ``estimate``, ``low`` and ``high`` are the lowest pair's correlation.
    """
    if pruning is None:
        return ClaimVerdict.missing(TASK_CLAIM, f"{RESULT_NAMES[PruningResult]} (run that lesson first)")
    pairs = objective_pairs(pruning)
    if not pairs:
        return ClaimVerdict.missing(TASK_CLAIM, _("lesson 11 saved no importance under objectives that differ "
                                                  "(sentence vs contrastive): run it again"))
    rows, disagree, agree, unstable = {}, [], [], []
    for name, across in pairs.items():
        a, b = name.split(" vs ")
        halves = [pruning.split_half.get(a), pruning.split_half.get(b)]
        if any(h is None for h in halves):
            unstable.append(name)
            continue
        own_low = min(float(h.low) for h in halves)
        steady = all(h.above(stable) for h in halves)
        rows[name] = f"{across} against split-half " + ", ".join(f"{o} {h}" for o, h in zip((a, b), halves))
        if not steady:
            unstable.append(name)
        elif across.below(own_low):
            disagree.append(name)
        elif float(across.low) >= own_low:
            agree.append(name)
    lowest = min(pairs, key=lambda n: float(pairs[n].estimate))
    numbers = {"estimate": pairs[lowest].estimate, "low": pairs[lowest].low, "high": pairs[lowest].high,
               "measure": f"rank correlation, {lowest}", "pairs": rows, "stable means split-half above": stable,
               "pairs that clearly disagree": disagree, "pairs that agree": agree,
               "pairs with an unstable objective": unstable}
    return ClaimVerdict.decide(TASK_CLAIM, holds=bool(disagree), fails=len(agree) == len(pairs), **numbers)


def conclusion_6(perturbation: PerturbationResult | None, pruning: PruningResult | None) -> ClaimVerdict:
    """Both halves of the sixth conclusion (:func:`conclusion_6a` and :func:`conclusion_6b`) must hold."""
    a, b = conclusion_6a(perturbation, pruning), conclusion_6b(pruning)
    word = combine([a.verdict, b.verdict])
    return ClaimVerdict.decide(CLAIMS[6], holds=word == HOLDS, fails=word == FAILS, **{
        "not useless (6a)": a.verdict, "depends on the task (6b)": b.verdict,
        **{f"6a: {k}": v for k, v in a.numbers.items()}, **{f"6b: {k}": v for k, v in b.numbers.items()},
    })
