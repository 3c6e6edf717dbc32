"""Exercises for lesson 09 (head diversity across layers).

* :func:`check_closest_pair` — the two heads with the smallest JS distance.
* :func:`check_dispersion` — one layer's within-layer dispersion from the distance matrix.
* :func:`check_trend_verdict` — does "heads become more alike with depth" hold here?

Truths are computed from the running model (and from the lesson's own result
objects when the notebook passes them). The worked answers are in the teacher's source folder
(``classroom/solutions/``).
"""

from __future__ import annotations

from typing import Any

import torch

from attnlab.analysis.diversity import (
    DepthTrend,
    HeadDistances,
    ShuffledBaseline,
    depth_trend,
    head_distances,
    shuffled_baseline,
)
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.course.claims.diversity import verdict_more_alike_with_depth
from attnlab.course.verdicts import word_from

from . import NOT_YET as _NOT_YET, per_model_over_queries, Feedback, check_choice, check_number, exercise

__all__ = [
    "check_closest_pair",
    "check_dispersion",
    "check_trend_verdict",
]


def _default_distances(m: LoadedModel) -> HeadDistances:
    """Head distances over a few same-length queries (when the notebook passes none)."""
    return per_model_over_queries(m, "lesson_09", head_distances, 500, 40)


# --------------------------------------------------------------------------- 1. closest pair


def _expected_closest_pair(m: LoadedModel, hd: HeadDistances | None = None) -> tuple[tuple[int, int], tuple[int, int]]:
    """The two distinct heads ``((layer, head), (layer, head))`` (0-based) with the smallest distance."""
    hd = hd if hd is not None else _default_distances(m)
    d = hd.distance.clone()
    d.fill_diagonal_(float("inf"))
    a, b = divmod(int(torch.argmin(d)), d.shape[0])
    labels = hd.labels()
    return tuple(sorted((labels[a], labels[b])))  # type: ignore[return-value]


@exercise
def check_closest_pair(m: LoadedModel, answer: Any, hd: HeadDistances | None = None) -> Feedback:
    """Is ``answer`` the closest pair of heads, e.g. ``((3, 1), (4, 7))`` (order does not matter)?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    try:
        given = tuple(sorted(tuple(int(x) for x in pair) for pair in answer))
    except (TypeError, ValueError):
        return Feedback(False, _("answer with two (layer, head) pairs, e.g. ((3, 1), (4, 7)); got {answer!r}.").format(
            answer=answer))
    truth = _expected_closest_pair(m, hd)
    return check_choice(given, truth, what=_("pair"),
                        hint=_("fill the diagonal of hd.distance with inf, take the argmin and map it "
                               "back with hd.labels()."))


# --------------------------------------------------------------------------- 2. dispersion


def _expected_dispersion(m: LoadedModel, layer: int, hd: HeadDistances | None = None) -> float:
    """Mean distance over the head pairs of one layer, from ``hd.distance``."""
    hd = hd if hd is not None else _default_distances(m)
    layer = m.check_layer(layer)
    if layer not in hd.layers:
        raise ValueError(f"layer {layer} is not among these distances' layers {hd.layers}")
    i = hd.layers.index(layer)
    h = hd.n_heads
    block = hd.distance[i * h:(i + 1) * h, i * h:(i + 1) * h]
    return float(block.sum() / (h * (h - 1)))


@exercise
def check_dispersion(m: LoadedModel, answer: Any, layer: int, hd: HeadDistances | None = None) -> Feedback:
    """Is ``answer`` the within-layer dispersion of ``layer`` (0-based)?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = _expected_dispersion(m, layer, hd)
    return check_number(answer, truth, rel=1e-4, abs_tol=1e-6, what=_("your dispersion"),
                        hint=_("take the layer's heads x heads block of hd.distance and average its "
                               "off-diagonal entries (the diagonal is 0)."))


# --------------------------------------------------------------------------- 3. the verdict


def _expected_trend_verdict(m: LoadedModel, trend: DepthTrend | None = None,
                            baseline: ShuffledBaseline | None = None) -> str:
    """The verdict word of :func:`attnlab.course.claims.diversity.verdict_more_alike_with_depth`
    (with the shuffled baseline when given; both computed here when ``trend`` is None)."""
    if trend is None:
        hd = _default_distances(m)
        trend = depth_trend(hd, n_boot=300)
        baseline = shuffled_baseline(hd, n_perm=500) if baseline is None else baseline
    return verdict_more_alike_with_depth(trend, baseline).verdict


@exercise
def check_trend_verdict(m: LoadedModel, answer: Any, trend: DepthTrend | None = None,
                        baseline: ShuffledBaseline | None = None) -> Feedback:
    """Is ``answer`` ("holds", "does not hold" or "cannot tell", or the word as the verdict
    prints it in the reader's language, e.g. "成立") the verdict of this run?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = _expected_trend_verdict(m, trend, baseline)
    given = word_from(answer) if isinstance(answer, str) else answer
    return check_choice(given, truth, what=_("verdict"),
                        hint=_("look at the slope's bootstrap interval and at the baseline's p: interval below 0 "
                               "and p below 0.05 holds; interval above 0 or p above 0.95 does not hold; "
                               "anything else cannot tell."))
