"""Lesson 08's claims: what the mean maps of many same-length queries say about each head.

The source article averages the maps of 100,000 queries of one length and
reads them. Its claims, decided from a
:class:`attnlab.analysis.fixedness.FixednessReport`:

1. :func:`verdict_flat_means_varying` -- a washed-out (flat) mean map means a
   head that looks at different places for different queries;
2. :func:`verdict_article_head_groups` -- in layers 1-4, heads 1, 3, 4, 5, 11,
   12 are fixed and heads 2, 7, 8, 9, 10 vary (head numbers only mean
   something in ``bert-base-chinese``: on any other model, "cannot tell");
3. :func:`verdict_more_fixed_with_depth` -- patterns get more fixed with depth,
   decided on real queries **minus the control**;
4. :func:`verdict_last_layer_all_fixed` -- in the last layer (最后一层) every
   head is fixed. The article's figure shows layers 1-4, so its "last layer"
   may be layer 4 of that figure or the model's last layer: both readings are
   decided (``reading="model"`` / ``reading="figure"``).

**Which heads are fixed.** Fixedness is the share of a row's information
that the mean map explains, with each head's own pattern-free null
subtracted (:mod:`attnlab.analysis.fixedness`): about 0 for rows drawn
independently per query, however sharp or diffuse. :func:`head_labels` is
the one rule, three-way from each head's interval over query shards:

* ``"fixed"``: the whole interval lies at or above ``threshold``
  (:data:`FIXED_THRESHOLD`: the mean map explains at least half of what a
  row says);
* ``"varying"``: the whole interval lies below it;
* ``"cannot tell"``: the interval straddles it, or rests on fewer than
  :data:`attnlab.analysis.stats.MIN_UNITS` shards (every head then);
* ``"uniform"``: the rows carry almost no information (the upper end of their
  information's interval is below :data:`~attnlab.analysis.fixedness.UNIFORM_INFO`):
  the head attends evenly every time and the share is undefined.

Every share of heads (:func:`label_share`) reports the four counts and an
interval from resampling query shards (never heads), widened to hold every
"cannot tell" head going either way. The control (random vocabulary pieces)
enters the depth trend: a head as fixed on random strings as on real queries
adds nothing to the difference whose slope decides it.

:func:`verdicts` gives all of them, keyed by :data:`FLAT_MEANS_VARYING`,
:data:`ARTICLE_HEAD_GROUPS`, :data:`MORE_FIXED_WITH_DEPTH`,
:data:`LAST_LAYER_ALL_FIXED` and :data:`FIGURE_LAST_LAYER_ALL_FIXED`.

**The fixed group against an untrained model.** :func:`verdict_fixed_pattern_share` counts the
heads whose map is the same for every query: labelled fixed, or uniform (the same even map every
time, a fixed pattern too). Measured again on the model's untrained twin over the same queries and
control strings, every verdict goes through lesson 12's rule (:func:`against_the_twin`, with
:data:`TOWARD_HOLDS` and :func:`twin_floor`): a "holds" stands only when the model is beyond the
twin by the claim's floor.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np

from attnlab.analysis.fixedness import UNIFORM_INFO, FixednessReport
from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS, KEY_READINGS
from attnlab.analysis.stats import (
    MIN_UNITS,
    Interval,
    interval_from_samples,
    permutation_test,
    too_few_units,
    too_small_groups,
)
from attnlab.core.language import N_
from attnlab.core.models import ARTICLE_MODEL
from attnlab.course.claims import twin_checks
from attnlab.course.claims.readings import with_other_reading
from attnlab.course.verdicts import UNSURE, ClaimVerdict

#: A head counts as "fixed" when the mean map explains at least half of what its rows say
#: (its whole interval of fixedness at or above this), "varying" when its whole interval is below.
FIXED_THRESHOLD = 0.5
#: Thresholds of the sensitivity tables (around the default).
SENSITIVITY_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)
#: Levels of "uniform" (rows' information over ln n) of :func:`uniform_table`, around UNIFORM_INFO.
SENSITIVITY_UNIFORM = (0.005, 0.01, 0.02, 0.05)
#: A mean map counts as "flat" (the article's washed-out look) when its sharpness is below this.
FLAT_THRESHOLD = 0.25
#: "A flat mean map means a varying head" holds when at least this share of flat-looking heads vary ...
MOST_FLAT_VARY = 2 / 3
#: ... and does not hold when at most this share of them vary.
FEW_FLAT_VARY = 1 / 3
#: The article's fixed heads must beat its varying heads with a permutation p below this ...
GROUPS_ALPHA = 0.05
#: ... and by this equivalence margin, in fixedness (the share of a row's information the mean map
#: explains): the claim holds when the interval of (fixed group - varying group) lies above it, and does
#: not hold when the interval lies below it (the groups are the same within the margin, or the wrong way
#: round); in between, "cannot tell". The article draws its groups on opposite sides of a picture's
#: "fixed" line (0.5 here), so its split is several tenths; under a tenth, the two groups say the same
#: about how fixed a row is. A large p alone is absence of evidence and never decides "does not hold".
GROUPS_MARGIN = 0.1
#: The margins of the groups' sensitivity table.
SENSITIVITY_GROUPS_MARGIN = (0.05, 0.1, 0.2)
#: Resamples of the groups' interval (query shards and the heads of each group).
GROUPS_RESAMPLES = 2000
#: Label permutations of the head-group test.
GROUPS_PERMUTATIONS = 5000
#: "The last layer is the most fixed" must hold in at least this share of resamples (and fail below 1 - it).
LAST_MOST_FIXED_SHARE = 0.95

#: The per-head labels.
FIXED, VARYING, UNSURE_LABEL, UNIFORM = N_("fixed"), N_("varying"), UNSURE, N_("uniform")  # marked: shown as labels
LABELS = (FIXED, VARYING, UNSURE_LABEL, UNIFORM)
_COUNT_KEYS = {FIXED: N_("fixed heads"), VARYING: N_("varying heads"), UNSURE_LABEL: N_("cannot tell heads"),
               UNIFORM: N_("uniform heads")}  # keys of a verdict's numbers, shown translated

#: A head "rests on the sink" when at least this share of its rows (mean over rows and queries) sits on
#: special tokens ([CLS]/[SEP], ``<s>``/``</s>``); its label then says so ("sink + varying" ...).
SINK_WEIGHT = 0.5
#: The prefix of such a head's label.
SINK_PREFIX = N_("sink + ")
#: The labels of heads that rest on a sink (:func:`sink_labels`), marked for the catalogue.
SINK_LABELS = (N_("sink + fixed"), N_("sink + varying"), N_("sink + cannot tell"), N_("sink + uniform"))

#: The source article's head groups (0-based head indices) in its layers 1-4.
ARTICLE_FIXED_HEADS = (0, 2, 3, 4, 10, 11)
ARTICLE_VARYING_HEADS = (1, 6, 7, 8, 9)
#: The article's figure shows layers 1-4 (0-based 0..3).
ARTICLE_LAYERS = 4
#: The article averaged this many queries.
ARTICLE_QUERIES = 100_000
#: Queries and random-token strings of a full-mode run of the course (shards of 1,000). On the
#: offline default, every head's label and every verdict came out the same from 10,000 queries
#: and 8,000 control strings on as from 79,000 and 20,000 (the depth verdict needs 8 shards of
#: each), at a third of the article's run time; ``ARTICLE_QUERIES`` reproduces the article's size.
COURSE_QUERIES = 30_000
COURSE_CONTROL = 10_000
#: The readings of "the last layer": the model's deepest averaged layer, or layer 4 of the article's figure.
READINGS = ("model", "figure")

CLAIM_FLAT = "a flat (washed-out) mean map means a head whose attention varies with the query"
CLAIM_GROUPS = "in layers 1-4, heads 1, 3, 4, 5, 11, 12 are fixed and heads 2, 7, 8, 9, 10 vary"
CLAIM_DEPTH = "attention patterns get more fixed with depth"
# picked by reading (model or figure), so marked with N_ for the catalogue
CLAIM_LAST = N_("in the last layer every head is fixed, and it is the most fixed layer")
CLAIM_FIGURE_LAST = N_("in the last layer of the figure (layer 4) every head is fixed, and it is the most fixed of layers 1-4")

#: Keys of :func:`verdicts`.
FLAT_MEANS_VARYING = "flat_means_varying"
ARTICLE_HEAD_GROUPS = "article_head_groups"
MORE_FIXED_WITH_DEPTH = "more_fixed_with_depth"
LAST_LAYER_ALL_FIXED = "last_layer_all_fixed"
FIGURE_LAST_LAYER_ALL_FIXED = "figure_last_layer_all_fixed"


# --------------------------------------------------------------------------- which heads are fixed


def point_labels(fixedness: np.ndarray, information: np.ndarray, *, threshold: float = FIXED_THRESHOLD,
                 uniform: float = UNIFORM_INFO) -> np.ndarray:
    """The rule on point estimates (no interval): ``[..., L, H]`` of ``"fixed"``, ``"varying"``, ``"uniform"``.

    Used inside each bootstrap resample and for the curve over query counts; a
    head's own label comes from its interval (:func:`head_labels`).
    """
    fixedness, information = np.asarray(fixedness, dtype=float), np.asarray(information, dtype=float)
    out = np.where(fixedness >= threshold, FIXED, VARYING).astype(object)
    out[~(information >= uniform) | np.isnan(fixedness)] = UNIFORM
    return out


def point_fixed_share(fixedness: np.ndarray, uniform: np.ndarray, *, threshold: float = FIXED_THRESHOLD) -> list[float]:
    """``[K]``: share of heads whose point fixedness reaches ``threshold`` in each of ``fixedness``
    ``[K, L, H]`` (e.g. after more and more queries), heads ``uniform`` ``[L, H]`` never counted."""
    reached = (np.nan_to_num(np.asarray(fixedness, dtype=float), nan=-np.inf) >= threshold) & ~np.asarray(uniform)
    return [float(r.mean()) for r in reached]


def head_labels(report: FixednessReport, *, threshold: float = FIXED_THRESHOLD, need: int = MIN_UNITS,
                uniform: float = UNIFORM_INFO) -> np.ndarray:
    """``[L, H]`` labels ``"fixed"`` / ``"varying"`` / ``"cannot tell"`` / ``"uniform"`` from each head's
    interval over query shards (see the module docstring); all "cannot tell" below ``need`` shards."""
    shape = report.fixedness.shape
    labels = np.full(shape, UNSURE_LABEL, dtype=object)
    if too_few_units(report.head_interval, need) is not None:
        return labels
    share, info = report.head_interval, report.information
    low, high = np.asarray(share.low, dtype=float), np.asarray(share.high, dtype=float)
    labels[low >= threshold] = FIXED
    labels[high < threshold] = VARYING
    labels[np.asarray(info.high, dtype=float) < uniform] = UNIFORM
    return labels


def reading_labels(report: FixednessReport, reading: str = CONTENT_KEYS, **kwargs) -> np.ndarray:
    """``[L, H]`` labels (:func:`head_labels`) of one reading: ``ALL_KEYS`` (the rows as computed)
    or ``CONTENT_KEYS`` (special keys left out, rows renormalised: :attr:`FixednessReport.content`).

    Raises:
        ValueError: an unknown reading, or a report without the content reading.
    """
    if reading not in KEY_READINGS:
        raise ValueError(f"reading must be one of {KEY_READINGS}, got {reading!r}")
    return head_labels(report.reading_report(reading), **kwargs)


def sink_labels(report: FixednessReport, *, sink: float = SINK_WEIGHT, **kwargs) -> np.ndarray:
    """``[L, H]``: each head's **content-key** label, prefixed ``"sink + "`` when it rests on the
    special tokens (mean special weight at least ``sink``). A head with 90% of every row on ``<s>``
    and the rest on a token chosen by each text is "sink + varying", never "fixed"."""
    labels = reading_labels(report, CONTENT_KEYS, **kwargs)  # (L, H)
    weight = report.special_weight if report.special_weight is not None else np.zeros(labels.shape)
    return np.where(np.asarray(weight) >= sink, SINK_PREFIX + labels.astype(str), labels).astype(object)


def both_readings(report: FixednessReport, **kwargs) -> list[list]:
    """One row per head, header first: ``[layer, head, special weight, fixedness (all keys), label
    (all keys), fixedness (content keys), label (content keys), label with the sink]``, layers and
    heads 1-based. Needs the content reading (:attr:`FixednessReport.content`)."""
    all_labels = reading_labels(report, ALL_KEYS, **kwargs)
    content = report.reading_report(CONTENT_KEYS)
    content_labels, sinks = reading_labels(report, CONTENT_KEYS, **kwargs), sink_labels(report, **kwargs)
    weight = report.special_weight if report.special_weight is not None else np.full(all_labels.shape, np.nan)
    rows: list[list] = [[N_("layer"), N_("head"), N_("special weight"), N_("fixedness, all keys"),
                         N_("label, all keys"), N_("fixedness, content keys"), N_("label, content keys"),
                         N_("label")]]
    for l, layer in enumerate(report.layers):
        for h in range(all_labels.shape[1]):
            rows.append([layer + 1, h + 1, float(weight[l, h]), float(report.fixedness[l, h]), all_labels[l, h],
                         float(content.fixedness[l, h]), content_labels[l, h], sinks[l, h]])
    return rows


_SHORT = {FIXED: "F", VARYING: "v", UNSURE_LABEL: "?", UNIFORM: "u"}


def readings_grid(report: FixednessReport, **kwargs) -> str:
    """Both readings of every head in one compact layer x head table: each cell is
    ``special weight (%) | all-keys fixedness and label | content-key fixedness and label``, labels
    F fixed, v varying, ? cannot tell, u uniform (e.g. ``84|.91F|.12v``: 84% on special tokens,
    fixed on all keys, varying on the content keys)."""
    all_labels = reading_labels(report, ALL_KEYS, **kwargs)
    content = report.reading_report(CONTENT_KEYS)
    content_labels = reading_labels(report, CONTENT_KEYS, **kwargs)
    weight = report.special_weight if report.special_weight is not None else np.full(all_labels.shape, np.nan)

    def cell(l: int, h: int) -> str:
        def part(x: float, label: str) -> str:
            return ("nan" if np.isnan(x) else f"{x:.2f}".replace("0.", ".").replace("1.00", "1.0")) + _SHORT[label]
        w = "--" if np.isnan(weight[l, h]) else f"{100 * weight[l, h]:2.0f}"
        return f"{w}|{part(report.fixedness[l, h], all_labels[l, h])}|{part(content.fixedness[l, h], content_labels[l, h])}"

    n_heads = all_labels.shape[1]
    width = max(len(cell(l, h)) for l in range(len(report.layers)) for h in range(n_heads))
    lines = ["     " + " ".join(f"H{h + 1}".ljust(width) for h in range(n_heads))]
    for l, layer in enumerate(report.layers):
        lines.append(f"L{layer + 1:<3d} " + " ".join(cell(l, h).ljust(width) for h in range(n_heads)))
    return "\n".join(lines)


def label_counts(labels: np.ndarray) -> dict[str, int]:
    """``{label: count}`` over :data:`LABELS` (zeros included)."""
    flat = np.asarray(labels, dtype=object).ravel().tolist()
    return {name: flat.count(name) for name in LABELS}


@dataclass
class LabelShare:
    """The share of some heads that carry one label, with how many cannot tell.

    Attributes:
        kind: the label counted (``"fixed"``, ``"varying"`` ...; ``"fixed+uniform"`` for several).
        heads: heads the share is over.
        counts: ``{label: count}`` among them, from each head's interval.
        interval: estimate = share with the point label ``kind``; low/high = the
            percentile interval of that share over resampled query shards, widened
            to hold ``counts[kind] / heads`` and ``(counts[kind] + counts["cannot tell"]) / heads``
            (every head that cannot tell going either way). ``n``: shards.
        why: why no verdict may rest on it (too few shards), or None.
    """

    kind: str
    heads: int
    counts: dict[str, int]
    interval: Interval
    why: str | None = None

    def numbers(self) -> dict:
        """``estimate``, ``low``, ``high`` and the counts, for a verdict's numbers."""
        return {"estimate": float(self.interval.estimate), "low": float(self.interval.low),
                "high": float(self.interval.high), "heads": self.heads, "shards": self.interval.n,
                **{_COUNT_KEYS.get(name, f"{name} heads"): c for name, c in self.counts.items()}}


def label_share(report: FixednessReport, kind: str | tuple[str, ...] = FIXED, among: np.ndarray | None = None, *,
                threshold: float = FIXED_THRESHOLD) -> LabelShare:
    """Share of the heads ``among`` (``[L, H]`` booleans, default all) labelled ``kind`` (or any of several
    labels), with its interval from resampling query shards (see :class:`LabelShare`)."""
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    among = np.ones(report.fixedness.shape, dtype=bool) if among is None else np.asarray(among, dtype=bool)
    total = int(among.sum())
    if total == 0:
        raise ValueError("the share is over no head")
    labels = head_labels(report, threshold=threshold)[among]  # (k,)
    counts = label_counts(labels)
    point = point_labels(report.fixedness, report.information.estimate, threshold=threshold)[among]  # (k,)
    boots = report.head_boots if report.head_boots is not None else report.fixedness[None]  # (B, L, H)
    info_boots = report.info_boots if report.info_boots is not None else np.asarray(report.information.estimate)[None]
    boot_labels = point_labels(boots, info_boots, threshold=threshold)[:, among]  # (B, k)
    counted = sum(counts[k] for k in kinds)
    estimate = float(np.isin(point, kinds).mean())
    resampled = interval_from_samples(estimate, np.isin(boot_labels, kinds).mean(axis=1), n=report.n_shards)
    low = min(float(resampled.low), counted / total)
    high = max(float(resampled.high), (counted + counts[UNSURE_LABEL]) / total)
    return LabelShare("+".join(kinds), total, counts, Interval(estimate, low, high, resampled.level, report.n_shards),
                      too_few_units(resampled))


def fixed_mask(report: FixednessReport, *, threshold: float = FIXED_THRESHOLD) -> np.ndarray:
    """``[L, H]`` booleans: the heads labelled fixed by :func:`head_labels`."""
    return head_labels(report, threshold=threshold) == FIXED


def fixed_heads(report: FixednessReport, *, threshold: float = FIXED_THRESHOLD) -> list[tuple[int, int]]:
    """``(layer, head)`` (0-based model layers) labelled fixed by :func:`head_labels`."""
    mask = fixed_mask(report, threshold=threshold)
    return [(report.layers[l], int(h)) for l, h in zip(*np.nonzero(mask))]


def fixed_share_table(report: FixednessReport, thresholds=SENSITIVITY_THRESHOLDS) -> list[list]:
    """Rows ``[threshold, fixed, varying, cannot tell, uniform, share >= t on real, share >= t on control]``,
    header first: how the labels move with the threshold (counts of heads; shares of point estimates)."""
    rows: list[list] = [["threshold", FIXED, VARYING, UNSURE_LABEL, UNIFORM, N_("real >= t"), N_("control >= t")]]
    for t in thresholds:
        counts = label_counts(head_labels(report, threshold=t))
        control = (float(np.mean(np.nan_to_num(report.control, nan=-1.0) >= t))
                   if report.control is not None else float("nan"))
        real = float(np.mean(np.nan_to_num(report.fixedness, nan=-1.0) >= t))
        rows.append([t, counts[FIXED], counts[VARYING], counts[UNSURE_LABEL], counts[UNIFORM],
                     round(real, 3), round(control, 3)])
    return rows


def uniform_table(report: FixednessReport, levels=SENSITIVITY_UNIFORM) -> list[list]:
    """Rows ``[level, fixed, varying, cannot tell, uniform]``, header first: how the labels move with
    the level of information below which a head counts as uniform."""
    rows: list[list] = [["uniform below", FIXED, VARYING, UNSURE_LABEL, UNIFORM]]
    for level in levels:
        counts = label_counts(head_labels(report, uniform=level))
        rows.append([level, counts[FIXED], counts[VARYING], counts[UNSURE_LABEL], counts[UNIFORM]])
    return rows


def _labels(report: FixednessReport, mask: np.ndarray) -> list[str]:
    return [f"L{report.layers[l] + 1} H{h + 1}" for l, h in zip(*np.nonzero(mask))]


# --------------------------------------------------------------------------- the claims


def verdict_flat_means_varying(report: FixednessReport, *, threshold: float = FIXED_THRESHOLD) -> ClaimVerdict:
    """Among the heads whose mean map is flat (sharpness below :data:`FLAT_THRESHOLD`), the share
    labelled varying (:func:`label_share`): holds when its interval lies at or above
    :data:`MOST_FLAT_VARY`, does not hold when it lies at or below :data:`FEW_FLAT_VARY`.
    A uniform head counts against the claim (its mean is flat and nothing varies). Without a
    flat-looking head there is nothing to judge; with too few shards, "cannot tell"."""
    flat = report.sharpness < FLAT_THRESHOLD  # (L, H)
    if not flat.any():
        return ClaimVerdict.missing(CLAIM_FLAT, N_("no head has a flat mean map (sharpness < {threshold})").format(
            threshold=FLAT_THRESHOLD))
    share = label_share(report, VARYING, flat, threshold=threshold)
    labels = head_labels(report, threshold=threshold)
    numbers = dict(share.numbers(), flat_heads=int(flat.sum()), varying_share=share.interval.estimate,
                   flat_but_fixed_examples=_labels(report, flat & (labels == FIXED))[:8],
                   sharpness_fixedness_rho=report.sharp_fixed_rho, threshold=threshold)
    if share.why is not None:
        return ClaimVerdict.decide(CLAIM_FLAT, holds=False, fails=False, why=share.why, **numbers)
    return ClaimVerdict.decide(CLAIM_FLAT, holds=share.interval.low >= MOST_FLAT_VARY,
                               fails=share.interval.high <= FEW_FLAT_VARY, **numbers)


def is_article_model(name: str) -> bool:
    """Whether ``name`` (a hub id, a folder, a model's ``name``) is the article's ``bert-base-chinese``."""
    base = str(name).split(" (")[0].strip().rstrip("/")
    return PurePosixPath(base.replace("\\", "/")).name.lower() == ARTICLE_MODEL


def group_difference(report: FixednessReport, rows: list[int], *, seed: int = 0,
                     n_boot: int = GROUPS_RESAMPLES) -> Interval:
    """Mean fixedness over the layers ``rows`` of the article's fixed heads minus its varying heads,
    with an interval from resampling both the query shards (each draw one of the report's resampled
    fixedness grids, :attr:`FixednessReport.head_boots`) and the heads inside each group (with
    replacement): the heads stand for what those head numbers do, so a group of five or six heads
    carries its own spread. Uniform heads are left out."""
    boots = report.head_boots if report.head_boots is not None else report.fixedness[None]  # (B, L, H)

    def per_head(grid: np.ndarray) -> np.ndarray:  # (..., L', H) -> (..., H): mean over the layers, uniform out
        kept = np.where(report.uniform[rows], np.nan, grid[..., rows, :])
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(kept, axis=-2)

    point, drawn = per_head(report.fixedness), per_head(boots)  # (H,), (B, H)
    fixed = [h for h in ARTICLE_FIXED_HEADS if not np.isnan(point[h])]
    varying = [h for h in ARTICLE_VARYING_HEADS if not np.isnan(point[h])]
    rng = np.random.default_rng(seed)
    grid = drawn[rng.integers(0, len(drawn), size=n_boot)]  # (n_boot, H): one shard resample each
    pick_f = np.asarray(fixed)[rng.integers(0, len(fixed), size=(n_boot, len(fixed)))]  # (n_boot, 6)
    pick_v = np.asarray(varying)[rng.integers(0, len(varying), size=(n_boot, len(varying)))]  # (n_boot, 5)
    rows_b = np.arange(n_boot)[:, None]
    diffs = np.nanmean(grid[rows_b, pick_f], axis=1) - np.nanmean(grid[rows_b, pick_v], axis=1)  # (n_boot,)
    estimate = float(point[fixed].mean() - point[varying].mean())
    return interval_from_samples(estimate, diffs, n=report.n_shards)


def verdict_article_head_groups(report: FixednessReport, *, seed: int = 0,
                                margin: float = GROUPS_MARGIN) -> ClaimVerdict:
    """Mean fixedness (over the averaged layers among 1-4) of the article's fixed heads minus its
    varying heads (:func:`group_difference`, interval over query shards and the heads of each group),
    decided by an **equivalence margin**: holds when the whole interval lies above ``margin``
    (:data:`GROUPS_MARGIN`) and a one-sided permutation test over the head labels gives p below
    :data:`GROUPS_ALPHA`; does not hold when the whole interval lies below ``margin`` (the groups
    are alike within the margin, or the wrong way round); "cannot tell" otherwise. A large p alone
    never decides "does not hold": a small difference measured too loosely is "cannot tell".

    Head numbers are arbitrary labels that only mean the same heads in the
    article's model: on any model other than ``bert-base-chinese`` the verdict
    is "cannot tell" (not applicable), whatever the numbers.
    """
    if not is_article_model(report.model_name):
        return ClaimVerdict.missing(CLAIM_GROUPS, N_("not applicable: head numbers are specific to "
                                                     "{article} (this run: {model})").format(
            article=ARTICLE_MODEL, model=report.model_name or "unnamed"))
    n_heads = report.fixedness.shape[1]
    if n_heads <= max(ARTICLE_FIXED_HEADS + ARTICLE_VARYING_HEADS):
        return ClaimVerdict.missing(CLAIM_GROUPS, N_("the article's head numbers need 12 heads per layer, "
                                                     "this run has {heads}").format(heads=n_heads))
    rows = [i for i, layer in enumerate(report.layers) if layer < ARTICLE_LAYERS]
    if not rows:
        return ClaimVerdict.missing(CLAIM_GROUPS, "none of layers 1-4 was averaged")
    kept = np.where(report.uniform[rows], np.nan, report.fixedness[rows])  # (L', H): uniform heads left out
    per_head = np.array([np.nanmean(c) if (~np.isnan(c)).any() else np.nan for c in kept.T])  # (H,)
    fixed = per_head[list(ARTICLE_FIXED_HEADS)]
    varying = per_head[list(ARTICLE_VARYING_HEADS)]
    fixed, varying = fixed[~np.isnan(fixed)], varying[~np.isnan(varying)]
    small = too_small_groups(fixed, varying)
    if small is not None:
        return ClaimVerdict.missing(CLAIM_GROUPS, small)
    diff, p = permutation_test(fixed, varying, n_perm=GROUPS_PERMUTATIONS, seed=seed, alternative="greater")
    gap = group_difference(report, rows, seed=seed)
    numbers = dict(estimate=float(gap.estimate), low=float(gap.low), high=float(gap.high),
                   measure=N_("mean fixedness of the article's fixed heads minus its varying heads"),
                   **{N_("floor"): margin}, fixed_group_mean=float(fixed.mean()), varying_group_mean=float(varying.mean()),
                   difference=diff, permutation_p=p, layers=[report.layers[i] + 1 for i in rows])
    why = too_few_units(gap)
    if why is not None:
        return ClaimVerdict.decide(CLAIM_GROUPS, holds=False, fails=False, why=why, **numbers)
    return ClaimVerdict.decide(CLAIM_GROUPS, holds=gap.above(margin) and p < GROUPS_ALPHA,
                               fails=gap.below(margin), **numbers)


def verdict_more_fixed_with_depth(report: FixednessReport) -> ClaimVerdict:
    """Decided on real queries **minus the control**: holds when the whole interval of the slope of the
    per-layer difference (real - control fixedness, over heads uniform in neither run) against depth
    lies above 0, does not hold when it lies below 0. A head as fixed on random strings as on real
    queries adds 0 to the difference, so a trend the control shares cannot decide the claim. The raw
    slope is shown beside it. Needs two layers, a control and :data:`~attnlab.analysis.stats.MIN_UNITS`
    shards in each run."""
    if len(report.layers) < 2:
        return ClaimVerdict.missing(CLAIM_DEPTH, "a trend with depth needs at least two layers")
    if report.difference_slope is None:
        return ClaimVerdict.missing(CLAIM_DEPTH, "the trend is decided against the control: run it too")
    d, s = report.difference_slope, report.slope
    numbers = dict(estimate=float(d.estimate), low=float(d.low), high=float(d.high), level=d.level, shards=d.n,
                   raw_slope=float(s.estimate), raw_slope_low=float(s.low), raw_slope_high=float(s.high),
                   spearman_rho=report.depth_rho,
                   first_layer=float(report.per_layer.estimate[0]), last_layer=float(report.per_layer.estimate[-1]),
                   control_first_layer=float(report.control_per_layer.estimate[0]),
                   control_last_layer=float(report.control_per_layer.estimate[-1]))
    why = too_few_units(d)
    if why is not None:
        return ClaimVerdict.decide(CLAIM_DEPTH, holds=False, fails=False, why=why, **numbers)
    return ClaimVerdict.decide(CLAIM_DEPTH, holds=d.above(0.0), fails=d.below(0.0), **numbers)


def verdict_last_layer_all_fixed(report: FixednessReport, *, reading: str = "model",
                                 threshold: float = FIXED_THRESHOLD) -> ClaimVerdict:
    """Every head of "the last layer" labelled fixed (:func:`head_labels`), and that layer the most fixed.

    ``reading="model"``: the deepest averaged layer, compared with every averaged
    layer (average every layer to test the model's last layer). ``reading="figure"``:
    layer 4, the last of the article's figure, compared with layers 1-4.

    Holds when all its heads are labelled fixed and it is the most fixed layer in
    at least :data:`LAST_MOST_FIXED_SHARE` of the resamples; does not hold when
    one of its heads is labelled varying or uniform, or it is the most fixed layer
    in at most ``1 - LAST_MOST_FIXED_SHARE`` of them; "cannot tell" otherwise and
    with fewer than :data:`~attnlab.analysis.stats.MIN_UNITS` shards.
    """
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {READINGS}, got {reading!r}")
    claim = CLAIM_LAST if reading == "model" else CLAIM_FIGURE_LAST
    if reading == "model":
        layer, among = report.layers[-1], list(report.layers)
    else:
        layer, among = ARTICLE_LAYERS - 1, list(range(ARTICLE_LAYERS))
        if any(l not in report.layers for l in among):
            return ClaimVerdict.missing(claim, N_("layers 1-{last} were not all averaged").format(
                last=ARTICLE_LAYERS))
    row = report.layers.index(layer)
    in_layer = np.zeros(report.fixedness.shape, dtype=bool)
    in_layer[row] = True
    share = label_share(report, FIXED, in_layer, threshold=threshold)
    counts = share.counts
    most = report.share_most_fixed(layer, among)
    numbers = dict(share.numbers(), layer=layer + 1, fixed_heads=counts[FIXED], most_fixed_layer_share=most,
                   least_fixed=float(np.nanmin(report.fixedness[row])) if not np.isnan(report.fixedness[row]).all()
                   else float("nan"), threshold=threshold)
    if share.why is not None:
        return ClaimVerdict.decide(claim, holds=False, fails=False, why=share.why, **numbers)
    all_fixed = counts[FIXED] == share.heads
    clearly_not = counts[VARYING] + counts[UNIFORM] > 0
    return ClaimVerdict.decide(claim, holds=all_fixed and most >= LAST_MOST_FIXED_SHARE,
                               fails=clearly_not or most <= 1 - LAST_MOST_FIXED_SHARE, **numbers)


def verdicts(report: FixednessReport, *, keys: str = ALL_KEYS) -> dict[str, ClaimVerdict]:
    """Every claim, keyed by :data:`FLAT_MEANS_VARYING`, :data:`ARTICLE_HEAD_GROUPS`,
    :data:`MORE_FIXED_WITH_DEPTH`, :data:`LAST_LAYER_ALL_FIXED` and
    :data:`FIGURE_LAST_LAYER_ALL_FIXED`.

    Decided on the reading ``keys`` (default ``ALL_KEYS``: the article's claims are about the mean
    maps it drew, special tokens included); when the report holds the content reading, each verdict
    also shows the other reading's word and estimate beside its own (:mod:`attnlab.course.claims.readings`).
    """
    def decide(r: FixednessReport) -> dict[str, ClaimVerdict]:
        return {
            FLAT_MEANS_VARYING: verdict_flat_means_varying(r),
            ARTICLE_HEAD_GROUPS: verdict_article_head_groups(r),
            MORE_FIXED_WITH_DEPTH: verdict_more_fixed_with_depth(r),
            LAST_LAYER_ALL_FIXED: verdict_last_layer_all_fixed(r, reading="model"),
            FIGURE_LAST_LAYER_ALL_FIXED: verdict_last_layer_all_fixed(r, reading="figure"),
        }

    used = decide(report.reading_report(keys))
    if report.content is None:
        return used
    other = decide(report.reading_report(CONTENT_KEYS if keys == ALL_KEYS else ALL_KEYS))
    return {k: with_other_reading(v, keys, other[k]) for k, v in used.items()}


# --------------------------------------------------------------------------- the fixed group, against the twin

#: "Most heads follow a fixed pattern": the share of heads labelled fixed or uniform above this (interval).
MOST_FIXED_PATTERN = 0.5
CLAIM_FIXED_PATTERN = N_("most heads follow a fixed pattern: more than half of them are labelled fixed or uniform "
                         "(the same map for every query)")
#: Key of :func:`verdict_fixed_pattern_share` among the checked verdicts.
FIXED_PATTERN_SHARE = "fixed_pattern_share"


def fixed_pattern_share(report: FixednessReport, *, threshold: float = FIXED_THRESHOLD) -> LabelShare:
    """The share of heads whose map is the same for every query: labelled fixed, or uniform (a head that
    attends evenly every time follows a fixed pattern too), with its interval over query shards."""
    return label_share(report, (FIXED, UNIFORM), threshold=threshold)


def verdict_fixed_pattern_share(report: FixednessReport, *, threshold: float = MOST_FIXED_PATTERN) -> ClaimVerdict:
    """The share of heads that follow a fixed pattern (:func:`fixed_pattern_share`): holds when its
    interval lies above ``threshold``, does not hold when it lies below; "cannot tell" with too few shards."""
    share = fixed_pattern_share(report)
    numbers = dict(share.numbers(), threshold=threshold)
    if share.why is not None:
        return ClaimVerdict.decide(CLAIM_FIXED_PATTERN, holds=False, fails=False, why=share.why, **numbers)
    return ClaimVerdict.decide(CLAIM_FIXED_PATTERN, holds=share.interval.above(threshold),
                               fails=share.interval.below(threshold), **numbers)


#: Which way each claim's deciding number moves toward "holds" (all of lesson 08's: larger).
TOWARD_HOLDS = {FLAT_MEANS_VARYING: +1, ARTICLE_HEAD_GROUPS: +1, MORE_FIXED_WITH_DEPTH: +1, LAST_LAYER_ALL_FIXED: +1,
                FIGURE_LAST_LAYER_ALL_FIXED: +1, FIXED_PATTERN_SHARE: +1}
#: A share of heads must exceed the untrained twin's by a tenth of them: more than one head of a 12-head
#: layer, about one layer's heads of a 12-layer model.
TWIN_FLOOR_HEADS = 0.1
#: The slope of (real - control) fixedness against depth must exceed the twin's by this per layer: over
#: the 11 steps of a 12-layer model, 0.11 of fixedness, about the groups' margin (:data:`GROUPS_MARGIN`).
TWIN_FLOOR_SLOPE = 0.01
#: Each claim's floor against the twin, in its deciding number's units (the head groups: their own margin).
TWIN_FLOORS = {FLAT_MEANS_VARYING: TWIN_FLOOR_HEADS, ARTICLE_HEAD_GROUPS: GROUPS_MARGIN,
               MORE_FIXED_WITH_DEPTH: TWIN_FLOOR_SLOPE, LAST_LAYER_ALL_FIXED: TWIN_FLOOR_HEADS,
               FIGURE_LAST_LAYER_ALL_FIXED: TWIN_FLOOR_HEADS, FIXED_PATTERN_SHARE: TWIN_FLOOR_HEADS}
#: The lesson's number in each checked row's label.
LESSON = "08"


def twin_floor(key: str, verdict: ClaimVerdict) -> float:
    """How far beyond its untrained twin the model must be for claim ``key`` to hold (:data:`TWIN_FLOORS`)."""
    return TWIN_FLOORS[key]


def checked_claims(report: FixednessReport) -> dict[str, ClaimVerdict]:
    """The claims held against the twin: :func:`verdicts` and :func:`verdict_fixed_pattern_share`."""
    return {**verdicts(report), FIXED_PATTERN_SHARE: verdict_fixed_pattern_share(report)}


def against_the_twin(model: dict[str, ClaimVerdict], twin: dict[str, ClaimVerdict] | None, *,
                     twin_name: str = "", scale: float = 1.0) -> dict[str, ClaimVerdict]:
    """Every claim of :func:`checked_claims` after the untrained-twin control (``twin``: the same claims on
    the twin, over the same queries and control strings; ``scale`` multiplies every floor)."""
    return twin_checks.checked(model, twin, lesson=LESSON, toward=TOWARD_HOLDS, floor=twin_floor,
                               twin_name=twin_name, scale=scale)


def twin_floor_table(model: dict[str, ClaimVerdict], twin: dict[str, ClaimVerdict],
                     scales=twin_checks.FLOOR_SCALES) -> list[list]:
    """:func:`against_the_twin` with every floor scaled by each of ``scales`` (rows after a header)."""
    return twin_checks.floor_table(model, twin, lesson=LESSON, toward=TOWARD_HOLDS, floor=twin_floor, scales=scales)
