"""Lesson 10's claims: fewer heads make attention collapse, and more heads is not always better.

Two claims of the source article about the number of heads:

* **Collapse** (the article's conclusion 3): forcing bert-base-chinese's 12
  heads into 2 makes every token attend to itself. Judged on the regrouping
  study (:mod:`attnlab.analysis.regroup`) twice: the article's specific claim
  (the mass on the token *itself* rises, :func:`verdict_self_collapse`) and the
  general one (attention piles up on *one* token, whichever it is: itself, a
  neighbour, [CLS] or [SEP], :func:`verdict_fewer_heads_collapse`). Both
  compare ``h' = H`` with ``h' =`` :data:`COLLAPSE_TARGET` text by text, with a
  bootstrap interval over texts.
* **More heads is not always better** (conclusion 5). The article cites
  Vaswani et al. 2017, Table 3 row (A), measured on a *translation* model
  (:data:`VASWANI_TASK`), not on bert-base. Judged on small models trained from
  scratch with different head counts
  (:mod:`attnlab.scratch.head_count_training`), in two designs (fixed width and
  fixed head size), against the spread over seeds.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from attnlab.analysis.regroup import GroupSummary
from attnlab.analysis.stats import Interval, bootstrap_mean
from attnlab.core.language import N_, _
from attnlab.course.verdicts import ClaimVerdict, from_tests
from attnlab.scratch.head_count_training import HeadCountStudy, shown_design

#: the article forces bert-base-chinese's 12 heads into this many
ARTICLE_HEADS = 12
COLLAPSE_TARGET = 2
#: a change of a mass (or of the entropy ratio) smaller than this is no change: the floor of conclusion 3
#: (stated in SELF_CLAIM and COLLAPSE_CLAIM; a test holds the words to this number)
COLLAPSE_MARGIN = 0.05
#: the margins of the sensitivity table
COLLAPSE_MARGINS = (0.0, 0.02, 0.05, 0.1)

#: Vaswani et al. 2017, Table 3 row (A): heads -> (dev perplexity, dev BLEU) of a Transformer
#: *translation* model; the base model has h = 8. The article quotes these numbers for bert-base's heads.
VASWANI_ROW_A = {1: (5.29, 24.9), 4: (5.00, 25.5), 8: (4.92, 25.8), 16: (4.91, 25.8), 32: (5.01, 25.4)}
VASWANI_TASK = "WMT 2014 English-German translation (newstest2013 dev set), Transformer base, d_model = 512"
#: a difference of mean perplexities counts as clear beyond this many standard errors
CLEAR_SE = 2.0
#: the floor of conclusion 5: the held-out gap must exceed this share of the perplexity at the best count
#: (stated in MORE_HEADS_CLAIM; a gap of 1% is about what Vaswani et al.'s row (A) shows between 16 and 32 heads)
MORE_HEADS_FLOOR = 0.01
#: the floors of the sensitivity table
MORE_HEADS_FLOORS = (0.0, 0.005, 0.01, 0.02)
#: the standard-error multiples of the sensitivity table
CLEAR_SES = (1.0, 1.5, 2.0, 3.0)
#: the row (A) pattern (worst, best in the middle, worse again) needs at least this many head counts
MIN_HEAD_COUNTS = 3
#: heads smaller than this (query/key dimensions per head) are degenerate: a 2-dimensional head can hardly
#: pick out one position among 16, so "more heads is worse" would be decided by that point alone
MIN_HEAD_SIZE = 4

SELF_CLAIM = "with fewer heads, every token attends to itself (the mass on the token itself rises by more than 0.05)"
COLLAPSE_CLAIM = ("with fewer heads, attention collapses onto one token "
                  "(itself, a neighbour, or a special token at either end of the text): its mass rises by more than 0.05")
ROW_A_CLAIM = "one head is worst, a middle number of heads is best, too many heads are worse again"
MORE_HEADS_CLAIM = ("more heads is not always better: a head count chosen on other seeds beats the largest by more "
                    "than 1% of its perplexity")
#: the deciding number of conclusion 5 (marked at import, so a saved record's measure reads back translated)
GAP_MEASURE = N_("perplexity at {most} heads minus at the best count chosen on the other half of the seeds, "
                 "+- {n_se} standard errors")


# --------------------------------------------------------------------------- collapse


def _pair(summaries: Mapping[int, GroupSummary], n_heads: int, target: int,
          claim: str) -> tuple[GroupSummary, GroupSummary] | ClaimVerdict:
    missing = [g for g in (n_heads, target) if g not in summaries]
    if missing:
        return ClaimVerdict.decide(claim, holds=False, fails=False,
                                   missing="no regrouping summary for some h'", **{"h' without a summary": missing})
    full, few = summaries[n_heads], summaries[target]
    if np.shape(full.per_text) != np.shape(few.per_text):
        return ClaimVerdict.missing(claim, "the two regroupings were measured on different texts")
    return full, few


def change(full: np.ndarray, few: np.ndarray, *, seed: int = 0) -> Interval:
    """Mean of ``few - full`` over texts (paired), with a 95% bootstrap interval over texts."""
    return bootstrap_mean(np.asarray(few, dtype=float) - np.asarray(full, dtype=float), seed=seed)


def verdict_self_collapse(summaries: Mapping[int, GroupSummary], *, n_heads: int,
                          target: int = COLLAPSE_TARGET, margin: float = COLLAPSE_MARGIN) -> ClaimVerdict:
    """The article's specific claim: merging ``n_heads`` heads into ``target`` raises the mass
    each token puts on itself.

    The change of the self mass from ``h' = n_heads`` to ``h' = target`` is
    measured text by text, with a bootstrap interval over texts. Holds when the
    whole interval lies above ``margin``; does not hold when it lies below
    ``margin`` (no rise worth the name, or a fall); otherwise "cannot tell".
    """
    pair = _pair(summaries, n_heads, target, SELF_CLAIM)
    if isinstance(pair, ClaimVerdict):
        return pair
    full, few = pair
    d = change(full.mass_per_text("self"), few.mass_per_text("self"))
    return ClaimVerdict.decide(SELF_CLAIM, holds=d.above(margin), fails=d.below(margin), decided_on="change",
                               resampled=d, **{
        N_("heads"): n_heads, N_("merged into"): target,
        N_("self mass, all heads"): full.self_mass, N_("self mass, merged"): few.self_mass,
        N_("change"): d.estimate, N_("change low"): d.low, N_("change high"): d.high, N_("margin"): margin,
        N_("floor"): margin,
        N_("where the mass goes, merged"): {k: round(v, 3) for k, v in few.masses.items()},
        N_("texts"): d.n,
    })


def verdict_fewer_heads_collapse(summaries: Mapping[int, GroupSummary], *, n_heads: int,
                                 target: int = COLLAPSE_TARGET, margin: float = COLLAPSE_MARGIN) -> ClaimVerdict:
    """The general claim: merging ``n_heads`` heads into ``target`` piles attention onto one token.

    The destination is the single token (itself, previous, next, [CLS] or [SEP])
    that gets the most attention at ``h' = target``. Its mass and the entropy
    ratio are compared between ``h' = n_heads`` and ``h' = target``, text by
    text, with bootstrap intervals over texts. Holds when the rise of that mass
    lies above ``margin`` and the rise of the entropy ratio below ``margin`` (no
    flatter); does not hold when the rise of the mass lies below ``margin``, or
    the maps clearly flatten (entropy rise above ``margin``) without it;
    otherwise "cannot tell".
    """
    pair = _pair(summaries, n_heads, target, COLLAPSE_CLAIM)
    if isinstance(pair, ClaimVerdict):
        return pair
    full, few = pair
    where = few.focus_on
    d_focus = change(full.mass_per_text(where), few.mass_per_text(where))
    d_entropy = change(full.entropy_per_text, few.entropy_per_text)
    holds = d_focus.above(margin) and d_entropy.below(margin)
    fails = d_focus.below(margin) or (d_entropy.above(margin) and not d_focus.above(margin))
    return ClaimVerdict.decide(COLLAPSE_CLAIM, holds=holds, fails=fails, decided_on="mass change",
                               resampled=d_focus, **{
        N_("heads"): n_heads, N_("merged into"): target, N_("focus token, merged"): where,
        N_("its mass, all heads"): full.mass(where), N_("its mass, merged"): few.mass(where),
        N_("mass change"): d_focus.estimate, N_("mass change low"): d_focus.low, N_("mass change high"): d_focus.high,
        N_("entropy/uniform, all heads"): full.entropy_ratio, N_("entropy/uniform, merged"): few.entropy_ratio,
        N_("entropy change low"): d_entropy.low, N_("entropy change high"): d_entropy.high,
        N_("focus token, all heads"): full.focus_on, N_("margin"): margin, N_("floor"): margin,
    })


# --------------------------------------------------------------------------- head count


def clearly_above(a: Sequence[float], b: Sequence[float], *, n_se: float = CLEAR_SE) -> bool:
    """Mean of ``a`` exceeds mean of ``b`` by more than ``n_se`` standard errors of the difference.

    The standard error is ``sqrt(var(a)/n_a + var(b)/n_b)`` (sample variances over
    seeds). With one value on both sides there is no spread: never clear.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    se = difference_se(a, b)
    if se == 0.0:
        return False
    return float(a.mean() - b.mean()) > n_se * se


def difference_se(a: Sequence[float], b: Sequence[float]) -> float:
    """Standard error of ``mean(a) - mean(b)``: ``sqrt(var(a)/n_a + var(b)/n_b)`` (0 without spread)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return math.sqrt((a.var(ddof=1) / len(a) if len(a) > 1 else 0.0) + (b.var(ddof=1) / len(b) if len(b) > 1 else 0.0))


def _means(perplexities: Mapping[int, Sequence[float]]) -> dict[int, float]:
    return {int(h): float(np.mean(p)) for h, p in sorted(perplexities.items())}


def verdict_head_count(perplexities: Mapping[int, Sequence[float]], *, n_se: float = CLEAR_SE,
                       design: str = "") -> ClaimVerdict:
    """Vaswani et al.'s row (A), as the source article reads it: one head is worst, a middle
    head count is best, too many heads are worse again.

    Args:
        perplexities: ``{heads: per-seed validation perplexities}``
            (:meth:`HeadCountStudy.perplexities_by_heads`).
        n_se: how many standard errors make a difference clear (:func:`clearly_above`).
        design: how the head count was varied (shown with the numbers).

    Each of the three parts is judged with :func:`clearly_above`. Holds when all
    three hold clearly; does not hold when one is clearly contradicted;
    otherwise (also with a single seed) "cannot tell".
    """
    if len(perplexities) < MIN_HEAD_COUNTS:
        return ClaimVerdict.decide(ROW_A_CLAIM, holds=False, fails=False, missing="the claim needs more head counts",
                                   head_counts=len(perplexities), needed=MIN_HEAD_COUNTS)
    ppl = {int(h): np.asarray(p, dtype=float) for h, p in perplexities.items()}
    hs = sorted(ppl)
    means = _means(ppl)
    best = min(means, key=means.get)
    few, many = hs[0], hs[-1]
    others = [h for h in hs if h != few]
    rest = [h for h in hs if h != best]
    above = lambda a, b: clearly_above(ppl[a], ppl[b], n_se=n_se)  # noqa: E731
    # (a) one head is worst
    a_holds = all(above(few, h) for h in others)
    a_fails = any(above(h, few) for h in others)
    # (b) the best is in the middle
    b_holds = best not in (few, many) and above(few, best) and above(many, best)
    b_fails = best in (few, many) and all(above(h, best) for h in rest)
    # (c) too many heads are worse than the best
    c_holds = above(many, best)
    c_fails = best == many and all(above(h, many) for h in rest)
    return ClaimVerdict.decide(
        ROW_A_CLAIM, holds=a_holds and b_holds and c_holds, fails=a_fails or b_fails or c_fails, **{
            N_("design"): design or N_("not given"), N_("standard errors for clear"): n_se,
            N_("mean perplexity"): {h: round(v, 3) for h, v in means.items()},
            N_("best h"): best,
            N_("fewest heads"): few, N_("fewest heads worst"): from_tests(a_holds, a_fails),
            N_("middle best"): from_tests(b_holds, b_fails),
            N_("most heads"): many, N_("most heads worse"): from_tests(c_holds, c_fails),
            N_("seeds"): min(len(p) for p in ppl.values()),
        })


def seed_halves(n_seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """Two halves of the seed indices ``0 .. n_seeds - 1``: the even and the odd positions
    (sizes ``ceil(n / 2)`` and ``floor(n / 2)``); every seed is in exactly one."""
    if n_seeds < 2:
        raise ValueError(f"splitting the seeds needs at least 2, got {n_seeds}")
    idx = np.arange(n_seeds)
    return idx[0::2], idx[1::2]


def cross_fitted_best(perplexities: Mapping[int, Sequence[float]]) -> dict[int, int]:
    """``{seed index: best head count chosen without that seed's half}``: for the seeds of each
    half (:func:`seed_halves`), the head count with the lowest mean perplexity over the *other*
    half. Every seed is scored by a choice its own numbers did not make."""
    ppl = {int(h): np.asarray(p, dtype=float) for h, p in perplexities.items()}
    n = min(len(p) for p in ppl.values())
    halves = seed_halves(n)
    out = {}
    for mine, other in ((halves[0], halves[1]), (halves[1], halves[0])):
        means = {h: float(p[other].mean()) for h, p in ppl.items()}
        best = min(means, key=means.get)
        out.update({int(i): best for i in mine})
    return out


def held_out_gap(perplexities: Mapping[int, Sequence[float]]) -> tuple[float, float, dict[int, int]]:
    """``(mean gap, standard error, choices)``: the mean perplexity of the largest head count
    minus the mean perplexity of the best count chosen on the other half of the seeds
    (:func:`cross_fitted_best`: each seed's value is taken at the count its own half did not
    choose), with the standard error of that difference as :func:`difference_se` gives it
    (unpaired, like :func:`clearly_above`). Positive: the count chosen elsewhere beats the
    largest on seeds it was not chosen on."""
    ppl = {int(h): np.asarray(p, dtype=float) for h, p in perplexities.items()}
    most = max(ppl)
    choices = cross_fitted_best(ppl)
    largest = np.array([ppl[most][i] for i in sorted(choices)])  # (seeds,)
    chosen = np.array([ppl[best][i] for i, best in sorted(choices.items())])  # (seeds,)
    return float(largest.mean() - chosen.mean()), difference_se(largest, chosen), choices


def degenerate_counts(head_sizes: Mapping[int, int] | None, min_head_size: int = MIN_HEAD_SIZE) -> list[int]:
    """The head counts whose heads are smaller than ``min_head_size`` (none without sizes)."""
    return sorted(int(h) for h, size in (head_sizes or {}).items() if size < min_head_size)


def verdict_more_heads_not_always_better(perplexities: Mapping[int, Sequence[float]], *,
                                         n_se: float = CLEAR_SE, design: str = "",
                                         head_sizes: Mapping[int, int] | None = None,
                                         min_head_size: int = MIN_HEAD_SIZE,
                                         floor: float = MORE_HEADS_FLOOR) -> ClaimVerdict:
    """The article's conclusion 5: the largest head count is not the best one.

    Holds when the best head count, **chosen on one half of the seeds**, beats the largest
    count **on the other half** by more than ``n_se`` standard errors (:func:`held_out_gap`,
    cross-fitted so every seed is scored once) and by more than ``floor`` of the perplexity at the
    best count (the gap's lower end, ``gap - n_se * se``, above it); does not hold when the largest head count is
    clearly better than every other (:func:`clearly_above`, no choice involved); otherwise
    "cannot tell" (also with one seed). ``design`` (how the head count was varied) is shown
    with the numbers; the best count chosen on all seeds is shown beside the held-out choices.

    Args:
        head_sizes: ``{heads: head size}``; head counts with heads smaller than
            ``min_head_size`` are left out of the decision, and the verdict with them is
            reported beside (``"verdict with the degenerate point"``).
    """
    dropped = degenerate_counts(head_sizes, min_head_size)
    kept = {int(h): p for h, p in perplexities.items() if int(h) not in dropped}
    with_them = {}
    if dropped:
        everything = verdict_more_heads_not_always_better(perplexities, n_se=n_se, design=design, floor=floor)
        with_them = {N_("smallest head size kept"): min_head_size,
                     N_("left out: head size by head count"): {h: head_sizes[h] for h in dropped},
                     N_("verdict with the degenerate point"): everything.verdict}
    if len(kept) < 2:
        return ClaimVerdict.decide(MORE_HEADS_CLAIM, holds=False, fails=False,
                                   missing="the claim needs more head counts", head_counts=len(kept), needed=2,
                                   **with_them)
    ppl = {h: np.asarray(p, dtype=float) for h, p in kept.items()}
    means = _means(ppl)
    most = max(ppl)
    best = min(means, key=means.get)
    seeds = min(len(p) for p in ppl.values())
    fails = best == most and all(clearly_above(ppl[h], ppl[most], n_se=n_se) for h in ppl if h != most)
    if seeds < 2:
        gap, se, choices = means[most] - means[best], 0.0, {}
    else:
        gap, se, choices = held_out_gap(ppl)
    margin = floor * means[best]  # the floor in perplexity units
    holds = seeds >= 2 and gap > 0 and gap - n_se * se > margin and not fails
    chosen = sorted(set(choices.values()))
    return ClaimVerdict.decide(MORE_HEADS_CLAIM, holds=holds, fails=fails, **{
        N_("measure"): GAP_MEASURE.format(most=most, n_se=f"{n_se:g}"),
        N_("estimate"): gap, N_("low"): gap - n_se * se, N_("high"): gap + n_se * se,
        N_("design"): design or N_("not given"), N_("best head count"): best,
        N_("best chosen on the other half"): ", ".join(str(h) for h in chosen) or N_("one seed: no split"),
        N_("largest head count"): most,
        N_("perplexity at the best count"): means[best], N_("perplexity at the largest count"): means[most],
        N_("standard errors for clear"): n_se, N_("seeds"): seeds, N_("floor"): margin, N_("holds above"): margin,
        N_("floor, share of the perplexity at the best count"): floor, **with_them,
    })


def what_this_can_show(study: HeadCountStudy) -> str:
    """A plain statement of what this small run can and cannot tell, from its own numbers."""
    s = study.summary()
    spread = max(v["ppl_sd"] for v in s.values())
    means = [v["ppl_mean"] for v in s.values()]
    gap = max(means) - min(means)
    best = math.exp(study.language.best_loss())
    lines = [
        _("Largest seed spread (sd) of perplexity: {spread:.3f}; range of the means over h: {gap:.3f}.").format(
            spread=spread, gap=gap),
        _("Best possible perplexity on this language: {best:.3f}; best mean reached: {reached:.3f}.").format(
            best=best, reached=min(means)),
    ]
    if s[study.head_counts[0]]["seeds"] < 2:
        lines.append(_("One seed per head count: there is no spread, so no difference can be called clear."))
    elif gap < CLEAR_SE * spread:
        lines.append(_("The differences between head counts are within about two seed spreads: "
                       "this run cannot separate them."))
    else:
        lines.append(_("Some differences are several seed spreads wide: those are real for this setup."))
    lines.append(_("Design: {design}. This is a 2-layer model on a synthetic language trained for "
                   "seconds, not a translation model trained for days: it can show how the head count interacts "
                   "with a task that needs {lookups} lookups at once, not whether the same "
                   "numbers hold for bert-base or for translation.").format(
        design=shown_design(study.config.design), lookups=len(study.language.offsets)))
    return "\n".join(lines)
