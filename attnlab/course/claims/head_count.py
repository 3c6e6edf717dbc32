"""Lesson 10's claims: fewer heads make attention collapse, and more heads is not always better.

Two claims of the source article about the number of heads:

* **Collapse** (the article's conclusion 3): forcing bert-base-chinese's 12
  heads into 2 makes every token attend to itself. Judged on the regrouping
  study (:mod:`attnlab.analysis.regroup`): how the largest single-token mass
  ("focus") and the flatness of the maps change from ``H`` heads to
  :data:`COLLAPSE_TARGET`.
* **More heads is not always better** (conclusion 5). The article cites
  Vaswani et al. 2017, Table 3 row (A), measured on a *translation* model
  (:data:`VASWANI_TASK`), not on BERT. Judged on small models trained from
  scratch with different head counts
  (:mod:`attnlab.scratch.head_count_training`), against the spread over seeds.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from attnlab.analysis.regroup import GroupSummary
from attnlab.course.verdicts import ClaimVerdict, from_tests
from attnlab.scratch.head_count_training import HeadCountStudy

#: the article forces bert-base-chinese's 12 heads into this many
ARTICLE_HEADS = 12
COLLAPSE_TARGET = 2
#: a change of the focus (or of the entropy ratio) smaller than this is no change
COLLAPSE_MARGIN = 0.05

#: Vaswani et al. 2017, Table 3 row (A): heads -> (dev perplexity, dev BLEU) of a Transformer
#: *translation* model; the base model has h = 8. The article quotes these numbers for BERT's heads.
VASWANI_ROW_A = {1: (5.29, 24.9), 4: (5.00, 25.5), 8: (4.92, 25.8), 16: (4.91, 25.8), 32: (5.01, 25.4)}
VASWANI_TASK = "WMT 2014 English-German translation (newstest2013 dev set), Transformer base, d_model = 512"
#: a difference of mean perplexities counts as clear beyond this many standard errors
CLEAR_SE = 2.0
#: the row (A) pattern (worst, best in the middle, worse again) needs at least this many head counts
MIN_HEAD_COUNTS = 3

COLLAPSE_CLAIM = "with fewer heads, attention collapses onto the token itself (or onto one special token such as [CLS])"
ROW_A_CLAIM = "one head is worst, a middle number of heads is best, too many heads are worse again"
MORE_HEADS_CLAIM = "more heads is not always better"


# --------------------------------------------------------------------------- collapse


def verdict_fewer_heads_collapse(summaries: Mapping[int, GroupSummary], *, n_heads: int,
                                 target: int = COLLAPSE_TARGET, margin: float = COLLAPSE_MARGIN) -> ClaimVerdict:
    """Forcing ``n_heads`` heads into ``target`` makes attention collapse onto a single token.

    Compares ``h' = n_heads`` with ``h' = target``. Holds when the focus (the
    largest of the self, [CLS] and [SEP] masses) rises by at least ``margin``
    and the maps get no flatter (the entropy ratio rises by at most
    ``margin``); does not hold when the focus falls by ``margin`` or more, or
    the maps flatten (entropy ratio up by more than ``margin``) without the
    focus rising by ``margin``; otherwise "cannot tell".
    """
    missing = [g for g in (n_heads, target) if g not in summaries]
    if missing:
        return ClaimVerdict.missing(COLLAPSE_CLAIM, f"no regrouping summary for h' = {missing}")
    full, few = summaries[n_heads], summaries[target]
    d_focus = few.focus - full.focus
    d_entropy = few.entropy_ratio - full.entropy_ratio
    holds = d_focus >= margin and d_entropy <= margin
    fails = not holds and (d_focus <= -margin or (d_entropy > margin and d_focus < margin))
    return ClaimVerdict.decide(COLLAPSE_CLAIM, holds=holds, fails=fails, **{
        f"focus at {n_heads} heads": full.focus, f"focus at {target}": few.focus,
        f"focus token at {target}": few.focus_on,
        f"self mass at {n_heads}": full.self_mass, f"self mass at {target}": few.self_mass,
        f"entropy/uniform at {n_heads}": full.entropy_ratio, f"entropy/uniform at {target}": few.entropy_ratio,
        "margin": margin,
    })


# --------------------------------------------------------------------------- head count


def clearly_above(a: Sequence[float], b: Sequence[float], *, n_se: float = CLEAR_SE) -> bool:
    """Mean of ``a`` exceeds mean of ``b`` by more than ``n_se`` standard errors of the difference.

    The standard error is ``sqrt(var(a)/n_a + var(b)/n_b)`` (sample variances over
    seeds). With one value on both sides there is no spread: never clear.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    se = math.sqrt((a.var(ddof=1) / len(a) if len(a) > 1 else 0.0) + (b.var(ddof=1) / len(b) if len(b) > 1 else 0.0))
    if se == 0.0:
        return False
    return float(a.mean() - b.mean()) > n_se * se


def _means(perplexities: Mapping[int, Sequence[float]]) -> dict[int, float]:
    return {int(h): float(np.mean(p)) for h, p in sorted(perplexities.items())}


def verdict_head_count(perplexities: Mapping[int, Sequence[float]]) -> ClaimVerdict:
    """Vaswani et al.'s row (A), as the source article reads it: one head is worst, a middle
    head count is best, too many heads are worse again.

    Args:
        perplexities: ``{heads: per-seed validation perplexities}``
            (:meth:`HeadCountStudy.perplexities_by_heads`).

    Each of the three parts is judged with :func:`clearly_above`. Holds when all
    three hold clearly; does not hold when one is clearly contradicted;
    otherwise (also with a single seed) "cannot tell".
    """
    if len(perplexities) < MIN_HEAD_COUNTS:
        return ClaimVerdict.missing(ROW_A_CLAIM, f"the claim needs at least {MIN_HEAD_COUNTS} head counts")
    ppl = {int(h): np.asarray(p, dtype=float) for h, p in perplexities.items()}
    hs = sorted(ppl)
    means = _means(ppl)
    best = min(means, key=means.get)
    few, many = hs[0], hs[-1]
    others = [h for h in hs if h != few]
    rest = [h for h in hs if h != best]
    # (a) one head is worst
    a_holds = all(clearly_above(ppl[few], ppl[h]) for h in others)
    a_fails = any(clearly_above(ppl[h], ppl[few]) for h in others)
    # (b) the best is in the middle
    b_holds = best not in (few, many) and clearly_above(ppl[few], ppl[best]) and clearly_above(ppl[many], ppl[best])
    b_fails = best in (few, many) and all(clearly_above(ppl[h], ppl[best]) for h in rest)
    # (c) too many heads are worse than the best
    c_holds = clearly_above(ppl[many], ppl[best])
    c_fails = best == many and all(clearly_above(ppl[h], ppl[many]) for h in rest)
    return ClaimVerdict.decide(
        ROW_A_CLAIM, holds=a_holds and b_holds and c_holds, fails=a_fails or b_fails or c_fails, **{
            "mean perplexity": {h: round(v, 3) for h, v in means.items()},
            "best h": best,
            f"1 head worst ({few})": from_tests(a_holds, a_fails),
            "middle best": from_tests(b_holds, b_fails),
            f"too many heads worse ({many})": from_tests(c_holds, c_fails),
            "seeds": min(len(p) for p in ppl.values()),
        })


def verdict_more_heads_not_always_better(perplexities: Mapping[int, Sequence[float]]) -> ClaimVerdict:
    """The article's conclusion 5: the largest head count is not the best one.

    Holds when some smaller head count has a clearly lower mean perplexity than
    the largest (:func:`clearly_above`); does not hold when the largest head
    count is clearly better than every other; otherwise "cannot tell".
    """
    if len(perplexities) < 2:
        return ClaimVerdict.missing(MORE_HEADS_CLAIM, "the claim needs at least 2 head counts")
    ppl = {int(h): np.asarray(p, dtype=float) for h, p in perplexities.items()}
    means = _means(ppl)
    most = max(ppl)
    best = min(means, key=means.get)
    holds = best != most and clearly_above(ppl[most], ppl[best])
    fails = best == most and all(clearly_above(ppl[h], ppl[most]) for h in ppl if h != most)
    return ClaimVerdict.decide(MORE_HEADS_CLAIM, holds=holds, fails=fails, **{
        "best head count": best, f"perplexity at {best} heads": means[best],
        f"perplexity at {most} heads": means[most], "seeds": min(len(p) for p in ppl.values()),
    })


def what_this_can_show(study: HeadCountStudy) -> str:
    """A plain statement of what this small run can and cannot tell, from its own numbers."""
    s = study.summary()
    spread = max(v["ppl_sd"] for v in s.values())
    means = [v["ppl_mean"] for v in s.values()]
    gap = max(means) - min(means)
    best = math.exp(study.language.best_loss())
    lines = [
        f"Largest seed spread (sd) of perplexity: {spread:.3f}; range of the means over h: {gap:.3f}.",
        f"Best possible perplexity on this language: {best:.3f}; best mean reached: {min(means):.3f}.",
    ]
    if s[study.head_counts[0]]["seeds"] < 2:
        lines.append("One seed per head count: there is no spread, so no difference can be called clear.")
    elif gap < CLEAR_SE * spread:
        lines.append("The differences between head counts are within about two seed spreads: "
                     "this run cannot separate them.")
    else:
        lines.append("Some differences are several seed spreads wide: those are real for this setup.")
    lines.append("This is a 2-layer model on a synthetic language trained for minutes, not a translation "
                 "model trained for days: it can show how the head count interacts with a task that needs "
                 "several lookups at once, not whether the same numbers hold for BERT or for translation.")
    return "\n".join(lines)
