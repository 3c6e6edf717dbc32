"""Exercises for lesson 12 (the six conclusions).

The answers are computed from the evidence that lessons 05-11 saved for the
model that is running (an :class:`attnlab.course.evidence.Evidence`).

* :func:`check_fixed_share` — recompute conclusion 1's "fixed heads" share from lesson 08's fixedness map.
* :func:`check_rejudge` — judge conclusion 1 again with "a few" meaning at most half of the heads.
* :func:`check_most_diverse_layer` — which layer has the most diverse heads (lesson 09)?
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlab.course.claims.conclusions import conclusion_1, fixed_share
from attnlab.course.evidence import Evidence
from attnlab.course.lesson_results import AveragingResult, DiversityResult

from . import NOT_YET as _NOT_YET, Feedback, check_choice, check_number, exercise

#: "a few" in exercise 2: at most half of the heads
HALF = 0.5


def _need(record: Any, kind: type) -> Any:
    if record is None:
        raise ValueError(f"this exercise needs the results of {kind.file_name}: run that lesson first")
    return record


def _expected_fixed_share(ev: Evidence, threshold: float | None = None) -> float:
    """Share of heads whose fixedness (lesson 08) reaches the threshold lesson 08 used
    (the heads it listed as fixed), or ``threshold`` when given."""
    avg: AveragingResult = _need(ev.averaging, AveragingResult)
    if threshold is None:
        return fixed_share(avg)
    return float((np.asarray(avg.fixedness, dtype=float) >= threshold).mean())


@exercise
def check_fixed_share(ev: Evidence, answer: Any, threshold: float | None = None) -> Feedback:
    """What share of all heads is "fixed" in lesson 08's sense? (a number in [0, 1])"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    return check_number(answer, _expected_fixed_share(ev, threshold), rel=0.0, abs_tol=0.01,
                        hint="count the (layer, head) pairs in evidence.averaging.fixed_heads "
                             "and divide by the number of heads in evidence.averaging.fixedness.",
                        what="fixed share")


def _expected_rejudge(ev: Evidence) -> str:
    """Conclusion 1's verdict when "a few content heads" means at most half of the heads."""
    return conclusion_1(ev.averaging, ev.perturbation, ev.patterns, few=HALF).verdict


@exercise
def check_rejudge(ev: Evidence, answer: Any) -> Feedback:
    """Predict conclusion 1's verdict if "a few" meant "at most half of the heads"
    (one of the three verdict words)."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    return check_choice(answer, _expected_rejudge(ev),
                        hint="compare the content-follower share's interval with 0.5 less the floor (0.1), and "
                             "remember the fixed share's interval must still lie above one half plus the floor.",
                        what="verdict")


def _expected_most_diverse_layer(ev: Evidence) -> int:
    """1-based number of the layer with the largest within-layer dispersion (lesson 09)."""
    div: DiversityResult = _need(ev.diversity, DiversityResult)
    return int(np.argmax(np.asarray(div.dispersion.estimate, dtype=float))) + 1


@exercise
def check_most_diverse_layer(ev: Evidence, answer: Any) -> Feedback:
    """Which layer (1-based) has the most diverse heads?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    return check_choice(answer, _expected_most_diverse_layer(ev),
                        hint="look for the largest value in evidence.diversity.dispersion.estimate "
                             "and add 1 to its index.", what="layer")
