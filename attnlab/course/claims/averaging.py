"""Lesson 08's claims: what the mean maps of many same-length queries say about each head.

The source article averages the maps of 100,000 queries of one length and
reads them. Its claims, decided from a
:class:`attnlab.analysis.fixedness.FixednessReport`:

1. :func:`verdict_flat_means_varying` -- a washed-out (flat) mean map means a
   head that looks at different places for different queries;
2. :func:`verdict_article_head_groups` -- in layers 1-4, heads 1, 3, 4, 5, 11,
   12 are fixed and heads 2, 7, 8, 9, 10 vary (head numbers only mean
   something in ``bert-base-chinese``: on any other model, "cannot tell");
3. :func:`verdict_more_fixed_with_depth` -- patterns get more fixed with depth;
4. :func:`verdict_last_layer_all_fixed` -- in the last layer (最后一层) every
   head is fixed. The article's figure shows layers 1-4, so its "last layer"
   may be layer 4 of that figure or the model's last layer: both readings are
   decided (``reading="model"`` / ``reading="figure"``).

**Which heads are fixed.** :func:`fixed_mask` is the one rule: a head is
fixed when its fixedness on real queries reaches ``threshold`` *and* is not
clearly below its fixedness on the control (strings of random vocabulary
pieces, where nothing can be read from the content): "clearly below" means
the upper end of the interval of ``real - control`` is below ``-margin``. A
head that reacts to real content more than to noise is not called fixed,
however high its score. Without a control, the threshold alone decides.

:func:`verdicts` gives all of them, keyed by :data:`FLAT_MEANS_VARYING`,
:data:`ARTICLE_HEAD_GROUPS`, :data:`MORE_FIXED_WITH_DEPTH`,
:data:`LAST_LAYER_ALL_FIXED` and :data:`FIGURE_LAST_LAYER_ALL_FIXED`.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import numpy as np

from attnlab.analysis.fixedness import FixednessReport
from attnlab.analysis.stats import permutation_test
from attnlab.core.models import ARTICLE_MODEL
from attnlab.course.verdicts import ClaimVerdict

#: A head counts as "fixed" when what its attended positions reveal about the query is
#: at most 10% of the possible maximum (ln n): fixedness >= 0.9 ...
FIXED_THRESHOLD = 0.9
#: ... and its fixedness on real queries is not clearly more than this below the control's.
CONTROL_MARGIN = 0.02
#: Thresholds of the sensitivity tables (around the default).
SENSITIVITY_THRESHOLDS = (0.85, 0.875, 0.9, 0.925, 0.95)
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
#: The readings of "the last layer": the model's deepest averaged layer, or layer 4 of the article's figure.
READINGS = ("model", "figure")

CLAIM_FLAT = "a flat (washed-out) mean map means a head whose attention varies with the query"
CLAIM_GROUPS = "in layers 1-4, heads 1, 3, 4, 5, 11, 12 are fixed and heads 2, 7, 8, 9, 10 vary"
CLAIM_DEPTH = "attention patterns get more fixed with depth"
CLAIM_LAST = "in the last layer every head is fixed"
CLAIM_FIGURE_LAST = "in the last layer of the figure (layer 4) every head is fixed"

#: Keys of :func:`verdicts`.
FLAT_MEANS_VARYING = "flat_means_varying"
ARTICLE_HEAD_GROUPS = "article_head_groups"
MORE_FIXED_WITH_DEPTH = "more_fixed_with_depth"
LAST_LAYER_ALL_FIXED = "last_layer_all_fixed"
FIGURE_LAST_LAYER_ALL_FIXED = "figure_last_layer_all_fixed"


# --------------------------------------------------------------------------- which heads are fixed


def fixed_rule(fixedness: np.ndarray, gap_high: np.ndarray | None, *, threshold: float = FIXED_THRESHOLD,
               margin: float = CONTROL_MARGIN) -> np.ndarray:
    """The rule on plain arrays: ``fixedness >= threshold`` and ``gap_high >= -margin``.

    Args:
        fixedness: ``[..., L, H]`` on real queries.
        gap_high: upper end of ``real - control`` (same shape), or the point
            difference where there is no interval; None: no control, threshold only.
    """
    fixed = np.asarray(fixedness) >= threshold
    if gap_high is None:
        return fixed
    return fixed & (np.asarray(gap_high) >= -margin)


def fixed_mask(report: FixednessReport, *, threshold: float = FIXED_THRESHOLD,
               margin: float = CONTROL_MARGIN) -> np.ndarray:
    """``[L, H]`` booleans: the heads called fixed (see the module docstring)."""
    gap = None if report.difference is None else report.difference.high
    return fixed_rule(report.fixedness, gap, threshold=threshold, margin=margin)


def fixed_heads(report: FixednessReport, *, threshold: float = FIXED_THRESHOLD,
                margin: float = CONTROL_MARGIN) -> list[tuple[int, int]]:
    """``(layer, head)`` (0-based model layers) called fixed by :func:`fixed_mask`."""
    mask = fixed_mask(report, threshold=threshold, margin=margin)
    return [(report.layers[l], int(h)) for l, h in zip(*np.nonzero(mask))]


def below_control(report: FixednessReport, *, margin: float = CONTROL_MARGIN) -> np.ndarray:
    """``[L, H]``: heads clearly less fixed on real queries than on the control (False without one)."""
    if report.difference is None:
        return np.zeros(report.fixedness.shape, dtype=bool)
    return np.asarray(report.difference.high) < -margin


def fixed_share_table(report: FixednessReport, thresholds=SENSITIVITY_THRESHOLDS, *,
                      margin: float = CONTROL_MARGIN) -> list[list]:
    """Rows ``[threshold, fixed share (rule), share >= threshold on real, share >= threshold on control]``,
    header first: how the count of fixed heads moves with the threshold."""
    rows: list[list] = [["threshold", "fixed (rule)", "real >= t", "control >= t"]]
    for t in thresholds:
        control = float((report.control >= t).mean()) if report.control is not None else float("nan")
        rows.append([t, round(float(fixed_mask(report, threshold=t, margin=margin).mean()), 3),
                     round(float((report.fixedness >= t).mean()), 3), round(control, 3)])
    return rows


def _labels(report: FixednessReport, mask: np.ndarray) -> list[str]:
    return [f"L{report.layers[l] + 1} H{h + 1}" for l, h in zip(*np.nonzero(mask))]


# --------------------------------------------------------------------------- the claims


def verdict_flat_means_varying(report: FixednessReport, *, threshold: float = FIXED_THRESHOLD,
                               margin: float = CONTROL_MARGIN) -> ClaimVerdict:
    """Among the heads whose mean map is flat (sharpness below :data:`FLAT_THRESHOLD`), the share
    that vary (not fixed by :func:`fixed_mask`): holds from :data:`MOST_FLAT_VARY`, does not hold
    up to :data:`FEW_FLAT_VARY`. Without a flat-looking head there is nothing to judge."""
    flat = report.sharpness < FLAT_THRESHOLD  # (L, H)
    if not flat.any():
        return ClaimVerdict.missing(CLAIM_FLAT, f"no head has a flat mean map (sharpness < {FLAT_THRESHOLD})")
    fixed = fixed_mask(report, threshold=threshold, margin=margin)  # (L, H)
    varying_share = float((~fixed[flat]).mean())
    flat_but_fixed = _labels(report, flat & fixed)
    return ClaimVerdict.decide(
        CLAIM_FLAT, holds=varying_share >= MOST_FLAT_VARY, fails=varying_share <= FEW_FLAT_VARY,
        flat_heads=int(flat.sum()), varying_share=varying_share, flat_but_fixed=len(flat_but_fixed),
        flat_but_fixed_examples=flat_but_fixed[:8], sharpness_fixedness_rho=report.sharp_fixed_rho,
        threshold=threshold,
    )


def is_article_model(name: str) -> bool:
    """Whether ``name`` (a hub id, a folder, a model's ``name``) is the article's ``bert-base-chinese``."""
    base = str(name).split(" (")[0].strip().rstrip("/")
    return PurePosixPath(base.replace("\\", "/")).name.lower() == ARTICLE_MODEL


def verdict_article_head_groups(report: FixednessReport, *, seed: int = 0) -> ClaimVerdict:
    """Mean fixedness (over the averaged layers among 1-4) of the article's fixed heads minus its
    varying heads, with a one-sided permutation test over the head labels: holds when the
    difference is positive with p below :data:`GROUPS_ALPHA`; does not hold when it is not
    positive or p is at least :data:`GROUPS_CLEARLY_NOT`.

    Head numbers are arbitrary labels that only mean the same heads in the
    article's model: on any model other than ``bert-base-chinese`` the verdict
    is "cannot tell" (not applicable), whatever the numbers.
    """
    if not is_article_model(report.model_name):
        return ClaimVerdict.missing(CLAIM_GROUPS, f"not applicable: head numbers are specific to "
                                                  f"{ARTICLE_MODEL} (this run: {report.model_name or 'unnamed'})")
    n_heads = report.fixedness.shape[1]
    if n_heads <= max(ARTICLE_FIXED_HEADS + ARTICLE_VARYING_HEADS):
        return ClaimVerdict.missing(CLAIM_GROUPS, f"the article's head numbers need 12 heads per layer, "
                                                  f"this run has {n_heads}")
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
    0, does not hold when it lies below 0. Needs two layers and two shards (an interval). The
    control's per-layer fixedness is shown beside it: a trend the control shares owes nothing to
    the content of the queries."""
    if len(report.layers) < 2:
        return ClaimVerdict.missing(CLAIM_DEPTH, "a trend with depth needs at least two layers")
    if report.n_shards < 2:
        return ClaimVerdict.missing(CLAIM_DEPTH, "one shard of queries gives no interval: use several shards")
    s = report.slope
    numbers = dict(slope_per_layer=float(s.estimate), slope_low=float(s.low), slope_high=float(s.high),
                   level=s.level, spearman_rho=report.depth_rho,
                   first_layer=float(report.per_layer.estimate[0]), last_layer=float(report.per_layer.estimate[-1]))
    if report.control_per_layer is not None:
        c = np.asarray(report.control_per_layer.estimate)
        numbers.update(control_first_layer=float(c[0]), control_last_layer=float(c[-1]))
    return ClaimVerdict.decide(CLAIM_DEPTH, holds=s.above(0.0), fails=s.below(0.0), **numbers)


def verdict_last_layer_all_fixed(report: FixednessReport, *, reading: str = "model",
                                 threshold: float = FIXED_THRESHOLD, margin: float = CONTROL_MARGIN) -> ClaimVerdict:
    """Every head of "the last layer" fixed (:func:`fixed_mask`), and that layer the most fixed.

    ``reading="model"``: the deepest averaged layer, compared with every averaged
    layer (average every layer to test the model's last layer). ``reading="figure"``:
    layer 4, the last of the article's figure, compared with layers 1-4.

    Holds when all its heads are fixed and it is the most fixed layer in at
    least :data:`LAST_MOST_FIXED_SHARE` of the resamples; does not hold when
    one of its heads is not fixed or it is the most fixed layer in at most
    ``1 - LAST_MOST_FIXED_SHARE`` of them.
    """
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {READINGS}, got {reading!r}")
    claim = CLAIM_LAST if reading == "model" else CLAIM_FIGURE_LAST
    if report.n_shards < 2:
        return ClaimVerdict.missing(claim, "one shard of queries gives no interval: use several shards")
    if reading == "model":
        layer, among = report.layers[-1], list(report.layers)
    else:
        layer, among = ARTICLE_LAYERS - 1, list(range(ARTICLE_LAYERS))
        if any(l not in report.layers for l in among):
            return ClaimVerdict.missing(claim, f"layers 1-{ARTICLE_LAYERS} were not all averaged")
    row = report.layers.index(layer)
    fixed = fixed_mask(report, threshold=threshold, margin=margin)[row]  # (H,)
    share = report.share_most_fixed(layer, among)
    all_fixed = bool(fixed.all())
    return ClaimVerdict.decide(
        claim, holds=all_fixed and share >= LAST_MOST_FIXED_SHARE,
        fails=not all_fixed or share <= 1 - LAST_MOST_FIXED_SHARE,
        layer=layer + 1, fixed_heads=int(fixed.sum()), heads=int(fixed.size),
        least_fixed=float(report.fixedness[row].min()), most_fixed_layer_share=share, threshold=threshold,
        below_control=int(below_control(report, margin=margin)[row].sum()),
    )


def verdicts(report: FixednessReport) -> dict[str, ClaimVerdict]:
    """Every claim, keyed by :data:`FLAT_MEANS_VARYING`, :data:`ARTICLE_HEAD_GROUPS`,
    :data:`MORE_FIXED_WITH_DEPTH`, :data:`LAST_LAYER_ALL_FIXED` and
    :data:`FIGURE_LAST_LAYER_ALL_FIXED`."""
    return {
        FLAT_MEANS_VARYING: verdict_flat_means_varying(report),
        ARTICLE_HEAD_GROUPS: verdict_article_head_groups(report),
        MORE_FIXED_WITH_DEPTH: verdict_more_fixed_with_depth(report),
        LAST_LAYER_ALL_FIXED: verdict_last_layer_all_fixed(report, reading="model"),
        FIGURE_LAST_LAYER_ALL_FIXED: verdict_last_layer_all_fixed(report, reading="figure"),
    }
