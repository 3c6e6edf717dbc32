"""Lesson 08's claims: what the mean maps of many same-length queries say about each head.

The source article averages the maps of 100,000 queries of one length and
reads them. Its four claims, decided from a
:class:`attnlab.analysis.fixedness.FixednessReport`:

1. :func:`verdict_flat_means_varying` -- a washed-out (flat) mean map means a
   head that looks at different places for different queries;
2. :func:`verdict_article_head_groups` -- in layers 1-4, heads 1, 3, 4, 5, 11,
   12 are fixed and heads 2, 7, 8, 9, 10 vary (head numbers only mean the same
   thing in ``bert-base-chinese``);
3. :func:`verdict_more_fixed_with_depth` -- patterns get more fixed with depth;
4. :func:`verdict_last_layer_all_fixed` -- in the last layer every head is fixed.

:func:`verdicts` gives all four, keyed by :data:`FLAT_MEANS_VARYING`,
:data:`ARTICLE_HEAD_GROUPS`, :data:`MORE_FIXED_WITH_DEPTH` and
:data:`LAST_LAYER_ALL_FIXED`.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.fixedness import FixednessReport
from attnlab.analysis.stats import permutation_test
from attnlab.course.verdicts import ClaimVerdict

#: A head counts as "fixed" when what its attended positions reveal about the query is
#: at most 10% of the possible maximum (ln n): fixedness >= 0.9.
FIXED_THRESHOLD = 0.9
#: A mean map counts as "flat" (the article's washed-out look) when its sharpness is below this.
FLAT_THRESHOLD = 0.25
#: "A flat mean map means a varying head" holds when at least this share of flat-looking heads vary ...
MOST_FLAT_VARY = 2 / 3
#: ... and does not hold when at most this share of them vary.
FEW_FLAT_VARY = 1 / 3
#: The article's fixed heads must beat its varying heads with a permutation p below this ...
GROUPS_ALPHA = 0.05
#: ... and the claim does not hold when p is at least this (or the difference is not positive).
GROUPS_CLEARLY_NOT = 0.2
#: Label permutations of the head-group test.
GROUPS_PERMUTATIONS = 5000
#: "The last layer is the most fixed" must hold in at least this share of resamples (and fail below 1 - it).
LAST_MOST_FIXED_SHARE = 0.95

#: The source article's head groups (0-based head indices) in its layers 1-4.
ARTICLE_FIXED_HEADS = (0, 2, 3, 4, 10, 11)
ARTICLE_VARYING_HEADS = (1, 6, 7, 8, 9)
#: The article's figure shows layers 1-4 (0-based 0..3).
ARTICLE_LAYERS = 4
#: The article averaged this many queries.
ARTICLE_QUERIES = 100_000

CLAIM_FLAT = "a flat (washed-out) mean map means a head whose attention varies with the query"
CLAIM_GROUPS = "in layers 1-4, heads 1, 3, 4, 5, 11, 12 are fixed and heads 2, 7, 8, 9, 10 vary"
CLAIM_DEPTH = "attention patterns get more fixed with depth"
CLAIM_LAST = "in the last layer every head is fixed"

#: Keys of :func:`verdicts`.
FLAT_MEANS_VARYING = "flat_means_varying"
ARTICLE_HEAD_GROUPS = "article_head_groups"
MORE_FIXED_WITH_DEPTH = "more_fixed_with_depth"
LAST_LAYER_ALL_FIXED = "last_layer_all_fixed"


def fixed_heads(report: FixednessReport) -> list[tuple[int, int]]:
    """``(layer, head)`` (0-based) called fixed: fixedness at least :data:`FIXED_THRESHOLD`."""
    return report.heads_at_least(FIXED_THRESHOLD)


def _labels(report: FixednessReport, mask: np.ndarray) -> list[str]:
    return [f"L{report.layers[l] + 1} H{h + 1}" for l, h in zip(*np.nonzero(mask))]


def verdict_flat_means_varying(report: FixednessReport) -> ClaimVerdict:
    """Among the heads whose mean map is flat (sharpness below :data:`FLAT_THRESHOLD`), the share
    that vary (fixedness below :data:`FIXED_THRESHOLD`): holds from :data:`MOST_FLAT_VARY`, does
    not hold up to :data:`FEW_FLAT_VARY`. Without a flat-looking head there is nothing to judge."""
    flat = report.sharpness < FLAT_THRESHOLD  # (L, H)
    if not flat.any():
        return ClaimVerdict.missing(CLAIM_FLAT, f"no head has a flat mean map (sharpness < {FLAT_THRESHOLD})")
    varying_share = float((report.fixedness[flat] < FIXED_THRESHOLD).mean())
    flat_but_fixed = _labels(report, flat & (report.fixedness >= FIXED_THRESHOLD))
    return ClaimVerdict.decide(
        CLAIM_FLAT, holds=varying_share >= MOST_FLAT_VARY, fails=varying_share <= FEW_FLAT_VARY,
        flat_heads=int(flat.sum()), varying_share=varying_share, flat_but_fixed=len(flat_but_fixed),
        flat_but_fixed_examples=flat_but_fixed[:8], sharpness_fixedness_rho=report.sharp_fixed_rho,
    )


def verdict_article_head_groups(report: FixednessReport, *, seed: int = 0) -> ClaimVerdict:
    """Mean fixedness (over the averaged layers among 1-4) of the article's fixed heads minus its
    varying heads, with a one-sided permutation test over the head labels: holds when the
    difference is positive with p below :data:`GROUPS_ALPHA`; does not hold when it is not
    positive or p is at least :data:`GROUPS_CLEARLY_NOT`."""
    n_heads = report.fixedness.shape[1]
    if n_heads <= max(ARTICLE_FIXED_HEADS + ARTICLE_VARYING_HEADS):
        return ClaimVerdict.missing(CLAIM_GROUPS, f"the article's head numbers need 12 heads per layer, "
                                                  f"this model has {n_heads}")
    rows = [i for i, layer in enumerate(report.layers) if layer < ARTICLE_LAYERS]
    if not rows:
        return ClaimVerdict.missing(CLAIM_GROUPS, "none of layers 1-4 was averaged")
    per_head = report.fixedness[rows].mean(axis=0)  # (H,)
    fixed = per_head[list(ARTICLE_FIXED_HEADS)]
    varying = per_head[list(ARTICLE_VARYING_HEADS)]
    diff, p = permutation_test(fixed, varying, n_perm=GROUPS_PERMUTATIONS, seed=seed, alternative="greater")
    return ClaimVerdict.decide(
        CLAIM_GROUPS, holds=diff > 0 and p < GROUPS_ALPHA, fails=diff <= 0 or p >= GROUPS_CLEARLY_NOT,
        fixed_group_mean=float(fixed.mean()), varying_group_mean=float(varying.mean()),
        difference=diff, permutation_p=p, layers=[report.layers[i] + 1 for i in rows],
    )


def verdict_more_fixed_with_depth(report: FixednessReport) -> ClaimVerdict:
    """Holds when the whole interval of the slope of per-layer fixedness against depth lies above
    0, does not hold when it lies below 0. Needs two layers and two shards (an interval)."""
    if len(report.layers) < 2:
        return ClaimVerdict.missing(CLAIM_DEPTH, "a trend with depth needs at least two layers")
    if report.n_shards < 2:
        return ClaimVerdict.missing(CLAIM_DEPTH, "one shard of queries gives no interval: use several shards")
    s = report.slope
    return ClaimVerdict.decide(
        CLAIM_DEPTH, holds=s.above(0.0), fails=s.below(0.0),
        slope_per_layer=float(s.estimate), slope_low=float(s.low), slope_high=float(s.high),
        level=s.level, spearman_rho=report.depth_rho,
        first_layer=float(report.per_layer.estimate[0]), last_layer=float(report.per_layer.estimate[-1]),
    )


def verdict_last_layer_all_fixed(report: FixednessReport) -> ClaimVerdict:
    """The deepest averaged layer: holds when all its heads reach :data:`FIXED_THRESHOLD` and it
    is the most fixed layer in at least :data:`LAST_MOST_FIXED_SHARE` of the resamples; does
    not hold when one of its heads is below the threshold or it is the most fixed layer in at
    most ``1 - LAST_MOST_FIXED_SHARE`` of them. Average every layer to test the article's
    "last layer"."""
    if report.n_shards < 2:
        return ClaimVerdict.missing(CLAIM_LAST, "one shard of queries gives no interval: use several shards")
    last = report.fixedness[-1]  # (H,)
    share = report.last_is_most_fixed_share
    all_fixed = bool((last >= FIXED_THRESHOLD).all())
    return ClaimVerdict.decide(
        CLAIM_LAST, holds=all_fixed and share >= LAST_MOST_FIXED_SHARE,
        fails=not all_fixed or share <= 1 - LAST_MOST_FIXED_SHARE,
        layer=report.layers[-1] + 1, fixed_heads=int((last >= FIXED_THRESHOLD).sum()), heads=int(last.size),
        least_fixed=float(last.min()), most_fixed_layer_share=share, threshold=FIXED_THRESHOLD,
    )


def verdicts(report: FixednessReport) -> dict[str, ClaimVerdict]:
    """The four claims, keyed by :data:`FLAT_MEANS_VARYING`, :data:`ARTICLE_HEAD_GROUPS`,
    :data:`MORE_FIXED_WITH_DEPTH` and :data:`LAST_LAYER_ALL_FIXED`."""
    return {
        FLAT_MEANS_VARYING: verdict_flat_means_varying(report),
        ARTICLE_HEAD_GROUPS: verdict_article_head_groups(report),
        MORE_FIXED_WITH_DEPTH: verdict_more_fixed_with_depth(report),
        LAST_LAYER_ALL_FIXED: verdict_last_layer_all_fixed(report),
    }
