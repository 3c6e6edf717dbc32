"""Lesson 07's claims: which heads depend on positions, and whether the heads that
keep their pattern under perturbation are the position-driven ones.

The source article removes the position embeddings (sets them to zero) and
looks again at the layer of lesson 06: the heads that had followed the words
(its heads 7 and 9) barely change, heads 5 and 12 do not change either, and
most of the other "unchanging" heads change drastically. Zero position vectors
are an input the model never saw in training, so a head can change because it
reads positions *or* because the input is strange. The course therefore also
replaces the positions by their mean vector (no order, the usual scale) and
shuffles them (every vector real, the order wrong)
(:func:`attnlab.core.position.replace_positions`):

* :func:`position_dependent_heads` -- heads whose map changes clearly under
  *both* order-free controls (mean and shuffle): they read where tokens are;
* :func:`disrupted_heads` -- heads that zeroing changes clearly more than the
  mean-vector control: the extra change comes from the strange input, not
  from the lost order;
* :func:`position_labels` / :func:`disruption_labels` -- the same, three-way
  per head from its interval over queries ("cannot tell" where it straddles the
  line), and :func:`position_dependent_share` / :func:`disrupted_share` -- the
  shares with intervals from resampling the queries, never the heads;
* :func:`verdict_invariant_heads_are_positional` -- the article's argument,
  decided layer by layer from the rank correlation across one layer's heads
  (:func:`attnlab.analysis.position.correlation_by_layer_over_queries`: the
  interval comes from resampling the queries, never the heads), never from one
  correlation pooling heads of different layers.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.position import PositionStudy
from attnlab.analysis.stats import ABOVE as SIDE_ABOVE, BELOW as SIDE_BELOW
from attnlab.analysis.stats import Interval, bootstrap_share_all_above, side_of, too_few_units
from attnlab.core.language import N_
from attnlab.course.verdicts import UNSURE, ClaimVerdict

#: The link must be at least this strong (a moderate rank correlation) ...
STRONG = 0.3
#: ... with the whole interval above this ...
ABOVE = 0.0
#: ... in more than this share of the layers.
LAYER_MAJORITY = 0.5
#: A head's map "changes clearly" under an intervention when the lower end of its
#: change interval (1 - similarity) exceeds this (as in lesson 06).
CHANGE_THRESHOLD = 0.1
#: Zeroing "disrupts" a head when its change exceeds the mean-vector control's by
#: more than this (the whole interval of the difference).
DISRUPTION_MARGIN = 0.05

#: The source article's heads (0-based) of its chosen layer that barely change without
#: positions: heads 7 and 9 (those that followed the words under perturbation) ...
ARTICLE_WORD_HEADS = (6, 8)
#: ... and heads 5 and 12 (unchanged under perturbation, and unchanged here too).
ARTICLE_STEADY_HEADS = (4, 11)
ARTICLE_HEADS = tuple(sorted(ARTICLE_WORD_HEADS + ARTICLE_STEADY_HEADS))

#: The per-head words of :func:`position_labels` and :func:`disruption_labels`.
DEPENDENT, NOT_DEPENDENT = "position-dependent", "not position-dependent"
DISRUPTED, NOT_DISRUPTED = "disrupted", "not disrupted"
CANNOT_TELL = UNSURE

CLAIM_INVARIANT_POSITIONAL = ("heads that keep their pattern under perturbation are position-dominated "
                              "(within a layer, they change most when the positions are taken away)")


def position_dependent_heads(study: PositionStudy, *, threshold: float = CHANGE_THRESHOLD, **boot) -> np.ndarray:
    """``[L, H]`` bool: the change interval lies above ``threshold`` under the
    mean-vector control *and* under the shuffle."""
    return np.asarray(study.change("mean", **boot).above(threshold)) & \
        np.asarray(study.change("shuffle", **boot).above(threshold))


def disrupted_heads(study: PositionStudy, *, margin: float = DISRUPTION_MARGIN, **boot) -> np.ndarray:
    """``[L, H]`` bool: zeroing changes the head clearly more than the mean-vector
    control (the interval of the difference of changes lies above ``margin``)."""
    return np.asarray(study.excess("zero", "mean", **boot).above(margin))


def position_labels(study: PositionStudy, *, threshold: float = CHANGE_THRESHOLD, **boot) -> np.ndarray:
    """``[L, H]`` strings: :data:`DEPENDENT` where the change interval lies above
    ``threshold`` under the mean-vector control and under the shuffle,
    :data:`NOT_DEPENDENT` where one of them lies wholly below it, otherwise
    :data:`CANNOT_TELL`."""
    mean = np.asarray(side_of(study.change("mean", **boot), threshold))  # (L, H)
    shuffle = np.asarray(side_of(study.change("shuffle", **boot), threshold))
    yes = (mean == SIDE_ABOVE) & (shuffle == SIDE_ABOVE)
    no = (mean == SIDE_BELOW) | (shuffle == SIDE_BELOW)
    return np.where(yes, DEPENDENT, np.where(no, NOT_DEPENDENT, CANNOT_TELL)).astype(object)


def disruption_labels(study: PositionStudy, *, margin: float = DISRUPTION_MARGIN, **boot) -> np.ndarray:
    """``[L, H]`` strings: :data:`DISRUPTED` where zeroing's extra change over the
    mean-vector control lies above ``margin``, :data:`NOT_DISRUPTED` where it lies
    below, otherwise :data:`CANNOT_TELL`."""
    side = np.asarray(side_of(study.excess("zero", "mean", **boot), margin))
    words = np.where(side == SIDE_ABOVE, DISRUPTED, np.where(side == SIDE_BELOW, NOT_DISRUPTED, CANNOT_TELL))
    return words.astype(object)


def position_dependent_share(study: PositionStudy, *, threshold: float = CHANGE_THRESHOLD, **boot) -> Interval:
    """Share of heads whose mean change exceeds ``threshold`` under both the mean
    vector and the shuffle, with an interval from resampling the queries."""
    return bootstrap_share_all_above([(1.0 - study.values("mean"), threshold),
                                      (1.0 - study.values("shuffle"), threshold)], **boot)


def disrupted_share(study: PositionStudy, *, margin: float = DISRUPTION_MARGIN, **boot) -> Interval:
    """Share of heads whose mean extra change under zeroing (over the mean vector)
    exceeds ``margin``, with an interval from resampling the queries."""
    return bootstrap_share_all_above([(study.values("mean") - study.values("zero"), margin)], **boot)


#: the names a verdict shows as values of ``method`` and ``intervention``, marked for the catalogue
SHOWN_NAMES = (N_("spearman"), N_("pearson"), N_("shuffle"))


def verdict_invariant_heads_are_positional(per_layer: Interval, *, strong: float = STRONG,
                                           majority: float = LAYER_MAJORITY, method: str = "spearman",
                                           intervention: str = "") -> ClaimVerdict:
    """Decide the argument from one correlation per layer.

    Holds when in more than ``majority`` of the layers the correlation (between
    "unchanged under perturbation" and "changed without positions", across that
    layer's heads) is at least ``strong`` with its whole interval above 0, and
    no layer's interval lies wholly below 0; does not hold when in more than
    ``majority`` of the layers the upper end is below ``strong`` (at most a weak
    link, or the opposite); cannot tell otherwise, and when the intervals rest on
    fewer queries than :data:`attnlab.analysis.stats.MIN_UNITS`.

    Args:
        per_layer: arrays ``(L,)`` from
            :func:`attnlab.analysis.position.correlation_by_layer_over_queries`
            (``n`` = the queries resampled).
        method, intervention: names, for the numbers.
    """
    r = np.asarray(per_layer.estimate, dtype=float).ravel()  # (L,)
    low = np.asarray(per_layer.low, dtype=float).ravel()
    high = np.asarray(per_layer.high, dtype=float).ravel()
    if r.size == 0:
        return ClaimVerdict.missing(CLAIM_INVARIANT_POSITIONAL, "no layer to correlate")
    why = too_few_units(per_layer)
    numbers = {"too_few_units": why} if why else {}
    supporting = (r >= strong) & (low > ABOVE)  # (L,)
    weak = high < strong
    opposite = high < ABOVE
    return ClaimVerdict.decide(
        CLAIM_INVARIANT_POSITIONAL,
        holds=why is None and supporting.mean() > majority and not opposite.any(),
        fails=why is None and weak.mean() > majority,
        **numbers,
        method=method, intervention=intervention, layers=int(r.size),
        layers_supporting=int(supporting.sum()), layers_weak=int(weak.sum()), layers_opposite=int(opposite.sum()),
        median_r=float(np.nanmedian(r)), strong=strong, queries=per_layer.n,
    )
