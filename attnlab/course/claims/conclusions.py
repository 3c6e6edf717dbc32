"""The source article's six conclusions, each judged on the results lessons 05-11 saved.

1. Most heads learn a fixed pattern; only a few capture lexical or syntactic information.
2. Lower layers are more diverse; heads of upper layers converge.
3. Fewer heads make attention collapse onto the token itself (or onto [CLS]).
4. Multi-head attention works like an ensemble of weak learners (a random forest).
5. More heads is not always better.
6. Heads without visible lexical or syntactic structure may still help the task.

Each ``conclusion_N`` takes the saved records it needs (types of
:mod:`attnlab.course.lesson_results`; None when a lesson has not been run) and
returns a :class:`~attnlab.course.verdicts.ClaimVerdict`. The thresholds are
the named constants below.
"""

from __future__ import annotations

import numpy as np

from attnlab.course.claims.head_count import (
    COLLAPSE_CLAIM,
    COLLAPSE_TARGET,
    MORE_HEADS_CLAIM,
    verdict_fewer_heads_collapse,
    verdict_more_heads_not_always_better,
)
from attnlab.course.lesson_results import (
    RESULT_NAMES,
    AveragingResult,
    DiversityResult,
    HeadCountResult,
    HeadPatternsResult,
    PerturbationResult,
    PruningResult,
)
from attnlab.course.verdicts import ClaimVerdict

CLAIMS = {
    1: "most heads learn a fixed pattern; only a few capture lexical or syntactic information",
    2: "lower layers are more diverse; heads of upper layers converge",
    3: COLLAPSE_CLAIM,
    4: "multi-head attention is an ensemble of weak learners: no single head matters much, together they do",
    5: MORE_HEADS_CLAIM,
    6: "heads without visible lexical/syntactic structure may still help the task",
}

#: conclusion 1: "most heads" means more than this share is fixed (lesson 08) ...
MOST_FIXED = 0.5
#: ... and "only a few" means at most this share follows the content (lesson 06)
FEW_CONTENT = 0.25
#: conclusion 4: each head is weak when the largest single-head loss increase is at most
#: WEAK_SHARE x the largest increase from pruning many heads; one head is strong from STRONG_SHARE
WEAK_SHARE = 0.25
STRONG_SHARE = 0.5
#: conclusion 4: together the heads matter when pruning many raises the loss by this share of the unpruned loss
ENSEMBLE_MATTERS = 0.1
#: conclusion 6: "the most useful heads" are this share with the largest single-head ablation effect
TOP_USEFUL_SHARE = 0.25
#: lesson 06's label of a head whose map moves with the tokens
CONTENT_LABEL = "content"


def _missing(number: int, *kinds: type) -> ClaimVerdict:
    names = ", ".join(RESULT_NAMES[k] for k in kinds)
    return ClaimVerdict.missing(CLAIMS[number], f"{names} (run those lessons first)")


def fixed_share(averaging: AveragingResult) -> float:
    """Share of the averaged heads that lesson 08 called fixed."""
    return len(averaging.fixed_heads) / np.asarray(averaging.fixedness).size


def conclusion_1(averaging: AveragingResult | None, perturbation: PerturbationResult | None,
                 patterns: HeadPatternsResult | None = None, *, most: float = MOST_FIXED,
                 few: float = FEW_CONTENT) -> ClaimVerdict:
    """Fixed patterns dominate and few heads follow content.

    Holds when the share of fixed heads (lesson 08) exceeds ``most`` **and** the
    share of content-following heads (lesson 06) is at most ``few``; does not
    hold otherwise. Lesson 05's share of fixed-pattern labels is shown beside.
    """
    if averaging is None or perturbation is None:
        return _missing(1, *[k for k, r in ((AveragingResult, averaging), (PerturbationResult, perturbation))
                             if r is None])
    fixed = fixed_share(averaging)
    content = float(perturbation.content_follower_share)
    both = fixed > most and content <= few
    numbers = {"fixed heads (lesson 08)": fixed, "most means more than": most,
               "content followers (lesson 06)": content, "a few means at most": few,
               "position followers (lesson 06)": float(perturbation.position_follower_share)}
    if patterns is not None:
        numbers["fixed-pattern labels (lesson 05)"] = float(patterns.fixed_share)
    return ClaimVerdict.decide(CLAIMS[1], holds=both, fails=not both, **numbers)


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


def conclusion_3(head_count: HeadCountResult | None, *, target: int = COLLAPSE_TARGET) -> ClaimVerdict:
    """Lesson 10's regrouping: the model's heads merged into ``target`` (the largest h' is the model's own)."""
    if head_count is None:
        return _missing(3, HeadCountResult)
    summaries = head_count.summaries()
    return verdict_fewer_heads_collapse(summaries, n_heads=max(summaries), target=target)


def largest_pruning_increase(pruning: PruningResult) -> float:
    """``D``: the largest loss increase over the unpruned loss on any pruning curve of lesson 11."""
    curves = pruning.study.curves
    highest = max(float(np.max(curves["importance"])), float(np.max(curves["reverse"])),
                  float(np.max(curves["random"])))
    return highest - pruning.study.base_loss


def conclusion_4(pruning: PruningResult | None, *, weak: float = WEAK_SHARE, strong: float = STRONG_SHARE,
                 matters: float = ENSEMBLE_MATTERS) -> ClaimVerdict:
    """No single head matters much, yet together the heads do (lesson 11).

    With ``D`` = :func:`largest_pruning_increase` and ``top`` = the largest
    single-head ablation effect: holds when ``top <= weak x D`` and
    ``D >= matters x`` the unpruned loss; does not hold when one head alone costs
    ``strong x D`` or more, or when pruning many heads costs less than
    ``matters x`` the unpruned loss; otherwise (also when ``D <= 0``) "cannot tell".
    """
    if pruning is None:
        return _missing(4, PruningResult)
    base = pruning.study.base_loss
    d = largest_pruning_increase(pruning)
    top = float(np.max(pruning.ablation))
    numbers = {"unpruned loss": base, "largest single-head effect": top,
               "largest loss increase when pruning many (D)": d,
               "prunable at the tolerance (importance order)": float(pruning.study.prunable["importance"])}
    if d <= 0:
        return ClaimVerdict.decide(CLAIMS[4], holds=False, fails=False, **numbers)
    numbers["single / D"] = top / d
    every_head_weak, one_head_strong = top <= weak * d, top >= strong * d
    together_matter = d >= matters * abs(base)
    return ClaimVerdict.decide(CLAIMS[4], holds=every_head_weak and together_matter,
                               fails=one_head_strong or not together_matter, **numbers)


def conclusion_5(head_count: HeadCountResult | None) -> ClaimVerdict:
    """Lesson 10's training study: is the largest head count the best?"""
    if head_count is None:
        return _missing(5, HeadCountResult)
    return verdict_more_heads_not_always_better(head_count.perplexities())


def conclusion_6(perturbation: PerturbationResult | None, pruning: PruningResult | None, *,
                 top_share: float = TOP_USEFUL_SHARE) -> ClaimVerdict:
    """Among the most useful heads (the ``top_share`` with the largest single-head
    ablation effect, lesson 11), are there heads that do not follow content (lesson 06)?

    Holds when at least one is; does not hold when none is although such heads
    exist; "cannot tell" when every head follows content.
    """
    if perturbation is None or pruning is None:
        return _missing(6, *[k for k, r in ((PerturbationResult, perturbation), (PruningResult, pruning))
                             if r is None])
    labels = np.asarray(perturbation.follower_labels, dtype=object)  # (L, H)
    effects = np.asarray(pruning.ablation, dtype=float)  # (L, H)
    if labels.shape != effects.shape:
        return ClaimVerdict.missing(CLAIMS[6], "lessons 06 and 11 ran on models of different shapes")
    k = max(1, int(round(top_share * effects.size)))
    top = np.argsort(effects.ravel())[::-1][:k]  # flat indices of the k most useful heads
    non_content = [int(i) for i in top if labels.ravel()[i] != CONTENT_LABEL]
    share_all = float(np.mean(labels != CONTENT_LABEL))
    n_heads = labels.shape[1]
    examples = ", ".join(f"L{i // n_heads + 1} H{i % n_heads + 1}" for i in non_content[:4]) or "none"
    return ClaimVerdict.decide(CLAIMS[6], holds=bool(non_content), fails=not non_content and share_all > 0, **{
        "most useful heads (k)": k, "non-content heads among them": len(non_content),
        "non-content heads overall": share_all, "examples": examples,
        "objective": pruning.study.objective[:60],
    })
