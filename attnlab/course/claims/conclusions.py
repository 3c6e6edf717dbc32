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

from attnlab.analysis.pruning import loss_limit
from attnlab.analysis.stats import Interval, bootstrap, bootstrap_mean, permutation_test, too_few_units
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
from attnlab.course.lesson_results import (
    RESULT_NAMES,
    AveragingResult,
    DiversityResult,
    HeadCountResult,
    HeadPatternsResult,
    PerturbationResult,
    PruningResult,
)
from attnlab.course.verdicts import FAILS, HOLDS, ClaimVerdict, combine

CLAIMS = {
    1: "most heads learn a fixed pattern; only a few capture lexical or syntactic information",
    2: "lower layers are more diverse; heads of upper layers converge",
    3: COLLAPSE_CLAIM,
    4: "multi-head attention is an ensemble of weak learners: no single head matters much, together they do",
    5: MORE_HEADS_CLAIM,
    6: "heads without visible lexical/syntactic structure are not useless, and what they are used for "
       "depends on the task",
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
#: conclusion 4: each head is weak when the largest single-head loss increase is at most
#: WEAK_SHARE x the largest increase from pruning many heads (D); one head is strong from STRONG_SHARE
WEAK_SHARE = 0.25
STRONG_SHARE = 0.5
#: conclusion 4: together the heads matter when D is at least this (absolute for a representation
#: objective: 1 - cos with the full model; relative to the unpruned loss otherwise)
ENSEMBLE_MATTERS = 0.1
#: conclusion 6a: the permutation test's level, and the share of their fair share of importance
#: the non-content heads must carry for "not useless"
ALPHA = 0.05
FAIR_SHARE = 0.8
#: conclusion 6b: two importance rankings "agree" from this Spearman correlation on
AGREEMENT = 0.8
#: lesson 06's label of a head whose map moves with the tokens
CONTENT_LABEL = "content"

#: the thresholds of each conclusion's sensitivity table
SENSITIVITY = {
    1: {"most": [0.4, 0.5, 0.6], "few": [0.15, 0.25, 0.35, 0.5]},
    4: {"weak": [0.15, 0.25, 0.35, 0.5]},
    "6a": {"fair_share": [0.6, 0.8, 1.0], "alpha": [0.01, 0.05, 0.1]},
    "6b": {"agreement": [0.6, 0.7, 0.8, 0.9]},
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
        labels (``"position"``, ``"content"``, ``"neither"`` ...).
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


def conclusion_1(averaging: AveragingResult | None, perturbation: PerturbationResult | None,
                 patterns: HeadPatternsResult | None = None,
                 attention_limits: AttentionLimitsResult | None = None, *, most: float = MOST_FIXED,
                 few: float = FEW_CONTENT) -> ClaimVerdict:
    """Fixed patterns dominate and few heads follow content.

    Decided on lesson 08's share of heads **labelled** fixed (each head's whole
    interval of fixedness over query shards above lesson 08's threshold; a
    head with i.i.d. rows is never fixed), whose interval comes from
    resampling query shards and is widened to hold every "cannot tell" head
    going either way (``numbers["estimate"]``, ``["low"]``, ``["high"]``), and
    on lesson 06's share of content-following heads (from its labels; heads
    whose label cannot tell widen it). Heads are never resampled: they are the
    whole population. Holds when the fixed share's interval lies above
    ``most`` **and** the content share's below ``few``; does not hold when the
    fixed share's interval lies below ``most`` or the content share's above
    ``few``; "cannot tell" otherwise, and when the fixed share rests on fewer
    than :data:`~attnlab.analysis.stats.MIN_UNITS` shards. The head-by-head
    cross-tab of the two lessons (:func:`fixed_vs_followers`) and lesson 05's
    share of fixed-pattern labels are shown beside.

    Lesson 13 (replacing each head's map by its mean map, Hassid et al.'s
    PAPA test) measures the same conclusion by what the model loses: when its
    result is saved, the rank correlation of fixedness with replacement cost
    and the saving over another query's map are cited beside the verdict
    (evidence about *which* heads are fixed, not about how many).
    """
    if averaging is None or perturbation is None:
        return _missing(1, *[k for k, r in ((AveragingResult, averaging), (PerturbationResult, perturbation))
                             if r is None])
    if averaging.fixed_share is None or not averaging.labels:
        return ClaimVerdict.missing(CLAIMS[1], f"{RESULT_NAMES[AveragingResult]} was saved before heads had "
                                               "three-way labels (run lesson 08 again)")
    fixed = averaging.fixed_share
    labels = np.asarray(perturbation.follower_labels, dtype=object)
    content = share_interval(labels == CONTENT_LABEL, labels == "cannot tell")
    kinds = np.asarray(averaging.labels, dtype=object).ravel().tolist()
    table = fixed_vs_followers(averaging, perturbation)
    numbers = {"estimate": float(fixed.estimate), "low": float(fixed.low), "high": float(fixed.high),
               "fixed heads (lesson 08)": float(fixed.estimate), "query shards": fixed.n,
               **{f"{kind} (lesson 08 heads)": kinds.count(kind) for kind in ("fixed", "varying", "cannot tell",
                                                                               "uniform")},
               "most means more than": most,
               "content followers (lesson 06)": content.estimate, "content low": content.low,
               "content high": content.high, "a few means at most": few,
               "fixed and content-following (same heads)": table["fixed"].get(CONTENT_LABEL, 0),
               "cross-tab 08 x 06": table}
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
    why = too_few_units(fixed)
    if why is not None:
        return ClaimVerdict.decide(CLAIMS[1], holds=False, fails=False, why=why, **numbers)
    holds = fixed.above(most) and content.below(few)
    fails = fixed.below(most) or content.above(few)
    return ClaimVerdict.decide(CLAIMS[1], holds=holds, fails=fails, **numbers)


# --------------------------------------------------------------------------- 2


def conclusion_2(diversity: DiversityResult | None, averaging: AveragingResult | None = None) -> ClaimVerdict:
    """Within-layer dispersion of heads shrinks with depth (lesson 09).

    Holds when the whole interval of the slope of dispersion against depth lies
    below 0; does not hold when it lies above 0; otherwise "cannot tell".
    Lesson 08's slope of fixedness against depth is shown beside it.
    """
    if diversity is None:
        return _missing(2, DiversityResult)
    disp = np.atleast_1d(np.asarray(diversity.dispersion.estimate, dtype=float))  # (L,)
    slope = diversity.slope
    numbers = {"dispersion, first layer": float(disp[0]), "dispersion, last layer": float(disp[-1]),
               "slope per layer": float(slope.estimate), "slope low": float(slope.low),
               "slope high": float(slope.high)}
    if averaging is not None:
        numbers["fixedness slope per layer (lesson 08)"] = float(averaging.slope.estimate)
    return ClaimVerdict.decide(CLAIMS[2], holds=slope.below(0.0), fails=slope.above(0.0), **numbers)


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


def largest_pruning_increase(pruning: PruningResult) -> float:
    """``D``: the largest mean loss increase over the unpruned loss on the importance or reverse curve."""
    curves = pruning.study.curves
    highest = max(float(np.max(curves["importance"])), float(np.max(curves["reverse"])))
    return highest - pruning.study.base_loss


def single_over_d(pruning: PruningResult, *, seed: int = 0) -> tuple[Interval, Interval]:
    """``(top / D, D)`` with bootstrap intervals over the evaluation texts.

    ``top`` is the ablation effect of the head with the largest mean effect
    (chosen once, on all texts: a maximum taken again in every resample would
    be biased upwards) and ``D`` the loss increase at the point of the
    importance or reverse curve where the mean increase is largest; each
    resample draws texts and recomputes both on the same texts.
    """
    study = pruning.study
    effects = np.asarray(pruning.ablation_per_text, dtype=float)  # (N, L, H)
    curves = {name: np.asarray(study.per_text[name], dtype=float) for name in ("importance", "reverse")}  # (F, N)
    name, point = max(((n, int(np.argmax(c.mean(axis=1)))) for n, c in curves.items()),
                      key=lambda p: curves[p[0]][p[1]].mean())
    d_text = curves[name][point] - curves[name][0]  # (N,)
    flat = effects.reshape(len(effects), -1)  # (N, L*H)
    top_text = flat[:, int(np.argmax(flat.mean(axis=0)))]  # (N,): the top head on each text
    values = np.stack([top_text, d_text], axis=1)  # (N, 2)

    def ratio(v: np.ndarray) -> float:
        top, d = v.mean(axis=0)
        return float(top / d) if d > 0 else float("nan")

    return bootstrap(values, ratio, seed=seed), bootstrap_mean(d_text, seed=seed)


def conclusion_4(pruning: PruningResult | None, *, weak: float = WEAK_SHARE, strong: float = STRONG_SHARE,
                 matters: float = ENSEMBLE_MATTERS) -> ClaimVerdict:
    """No single head matters much, yet together the heads do (lesson 11).

    With ``D`` the largest loss increase when many heads are pruned and
    ``top`` the largest single-head ablation effect, both on the evaluation
    texts with bootstrap intervals over texts (:func:`single_over_d`): holds
    when the interval of ``top / D`` lies below ``weak`` and the interval of
    ``D`` above ``matters``; does not hold when the interval of ``top / D``
    lies above ``strong`` (one head alone does most of the damage) or the
    interval of ``D`` below ``matters`` (the heads barely matter even
    together); otherwise "cannot tell".
    """
    if pruning is None:
        return _missing(4, PruningResult)
    study = pruning.study
    if pruning.ablation_per_text is None or "reverse" not in study.per_text:
        return ClaimVerdict.missing(CLAIMS[4], "lesson 11 saved no per-text losses: run it again")
    ratio, d = single_over_d(pruning)
    needed = loss_limit(study.base_loss, matters, relative=study.relative) - study.base_loss
    numbers = {"unpruned loss": study.base_loss, "largest single-head effect": float(np.max(pruning.ablation)),
               "largest loss increase when pruning many (D)": d.estimate, "D low": d.low, "D high": d.high,
               "single / D": ratio.estimate, "single / D low": ratio.low, "single / D high": ratio.high,
               "weak means below": weak, "D needed": needed}
    together_matter, barely = d.above(needed), d.below(needed)
    holds = ratio.below(weak) and together_matter
    fails = ratio.above(strong) or barely
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


def non_content_importance(perturbation: PerturbationResult, pruning: PruningResult) -> tuple[float, float, float]:
    """``(share, base rate, p)``: the non-content heads' share of all importance (single-head
    ablation effects on the evaluation texts, negatives counted as 0), their share of the
    heads, and the permutation test's p that they hold *less* than that base rate."""
    labels = np.asarray(perturbation.follower_labels, dtype=object).ravel()
    importance = np.clip(np.asarray(pruning.ablation, dtype=float).ravel(), 0.0, None)
    other = labels != CONTENT_LABEL
    share = float(importance[other].sum() / importance.sum()) if importance.sum() > 0 else float("nan")
    _diff, p_less = permutation_test(importance[other], importance[~other], alternative="less")
    return share, float(other.mean()), p_less


def conclusion_6a(perturbation: PerturbationResult | None, pruning: PruningResult | None, *,
                  fair_share: float = FAIR_SHARE, alpha: float = ALPHA) -> ClaimVerdict:
    """The heads that do not follow content (lesson 06) are not the useless ones (lesson 11).

    Their share of the total importance is compared with their share of the
    heads (the base rate, the share they would get if importance ignored the
    labels), with a permutation test over head labels. Does not hold when the
    test says they hold clearly less than the base rate (p < ``alpha``: usefulness
    goes with visible structure); holds when it does not and they hold at least
    ``fair_share`` of their base rate; otherwise "cannot tell".
    """
    if perturbation is None or pruning is None:
        return ClaimVerdict.missing(USEFUL_CLAIM, "lessons 06 and 11 (run those lessons first)")
    labels = np.asarray(perturbation.follower_labels, dtype=object)
    if labels.shape != np.shape(pruning.ablation):
        return ClaimVerdict.missing(USEFUL_CLAIM, "lessons 06 and 11 ran on models of different shapes")
    if np.all(labels == CONTENT_LABEL) or not np.any(labels == CONTENT_LABEL):
        return ClaimVerdict.missing(USEFUL_CLAIM, "all heads carry one label: nothing to compare")
    share, base, p_less = non_content_importance(perturbation, pruning)
    ratio = share / base
    fails = p_less < alpha
    holds = not fails and ratio >= fair_share
    return ClaimVerdict.decide(USEFUL_CLAIM, holds=holds, fails=fails, **{
        "non-content heads' share of importance": share, "their share of heads (base rate)": base,
        "share / base rate": ratio, "fair share needed": fair_share,
        "p (less than base rate, label shuffles)": p_less, "alpha": alpha,
    })


def conclusion_6b(pruning: PruningResult | None, *, agreement: float = AGREEMENT) -> ClaimVerdict:
    """Which heads matter changes with the objective (lesson 11's two objectives).

    Holds when the interval of the rank correlation between the two
    objectives' head importance lies below ``agreement`` while each
    objective's own ranking is stable (split-half correlation at least
    ``agreement``), so that the disagreement is not noise; does not hold when
    the interval lies above ``agreement`` (both objectives rank the heads
    alike); otherwise "cannot tell".
    """
    if pruning is None or pruning.objective_agreement is None or len(pruning.split_half) < 2:
        return ClaimVerdict.missing(TASK_CLAIM, f"{RESULT_NAMES[PruningResult]} with two objectives "
                                                "(run that lesson again)")
    across = pruning.objective_agreement
    stable = {kind: float(iv.estimate) for kind, iv in pruning.split_half.items()}
    holds = across.below(agreement) and min(stable.values()) >= agreement
    return ClaimVerdict.decide(TASK_CLAIM, holds=holds, fails=across.above(agreement), **{
        "rank correlation between objectives": across.estimate, "low": across.low, "high": across.high,
        "agreement level": agreement, "split-half correlation per objective": stable,
        "objectives": ", ".join(pruning.objective_importance),
    })


def conclusion_6(perturbation: PerturbationResult | None, pruning: PruningResult | None) -> ClaimVerdict:
    """Both halves of the sixth conclusion (:func:`conclusion_6a` and :func:`conclusion_6b`) must hold."""
    a, b = conclusion_6a(perturbation, pruning), conclusion_6b(pruning)
    word = combine([a.verdict, b.verdict])
    return ClaimVerdict.decide(CLAIMS[6], holds=word == HOLDS, fails=word == FAILS, **{
        "not useless (6a)": a.verdict, "depends on the task (6b)": b.verdict,
        **{f"6a: {k}": v for k, v in a.numbers.items()}, **{f"6b: {k}": v for k, v in b.numbers.items()},
    })
