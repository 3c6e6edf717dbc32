"""Exercises of lesson 11 (pruning heads).

1. :func:`check_heads_masked` - how many heads are masked at a given fraction?
2. :func:`check_most_important_head` - which head matters most to the loss?
3. :func:`check_prunable_fraction` - read the largest prunable fraction off the curve.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlab.analysis.pruning import PruningStudy, heads_masked_at
from attnlab.core.models import LoadedModel
from attnlab.viz.plot import head_label

from . import NOT_YET as _NOT_YET, Feedback, check_choice, check_number, exercise


def _expected_heads_masked(m: LoadedModel, fraction: float = 0.3) -> int:
    """The answer the check expects: ``round(fraction * layers * heads)``."""
    return heads_masked_at(fraction, m.n_layers * m.n_heads)


@exercise
def check_heads_masked(m: LoadedModel, answer: Any, fraction: float = 0.3) -> Feedback:
    """``answer``: how many heads of this model are masked when ``fraction`` of them are pruned."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    return check_number(answer, _expected_heads_masked(m, fraction), rel=0, abs_tol=0.5, what="your count",
                        hint=f"the model has {m.n_layers} x {m.n_heads} heads; round to the nearest head.")


def _expected_most_important_head(importance: np.ndarray) -> tuple[int, int]:
    """The answer the check expects: the 0-based ``(layer, head)`` of the largest importance score."""
    layer, head = np.unravel_index(int(np.argmax(importance)), np.shape(importance))
    return int(layer), int(head)


@exercise
def check_most_important_head(m: LoadedModel, answer: Any, importance: np.ndarray | None = None) -> Feedback:
    """``answer``: 0-based ``(layer, head)`` with the largest score in ``importance [layers, heads]``."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    if importance is None:
        return Feedback(False, "pass the importance map: check_most_important_head(m, answer, importance=importance).")
    try:
        layer, head = answer
        answer = (int(layer), int(head))
    except (TypeError, ValueError):
        return Feedback(False, f"answer with a (layer, head) pair, e.g. (0, 6); got {answer!r}.")
    expected = _expected_most_important_head(importance)
    return check_choice(answer, expected, what=f"your head {head_label(*answer)}",
                        hint="np.unravel_index(np.argmax(importance), importance.shape); remember 0-based.")


@exercise
def check_prunable_fraction(m: LoadedModel, answer: Any, study: PruningStudy | None = None) -> Feedback:
    """``answer``: the largest fraction of heads masked in importance order before the loss first
    rose above the tolerance line (read from ``study.curves['importance']``; the line is
    :func:`attnlab.analysis.pruning.loss_limit` of the unpruned loss)."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    if study is None:
        return Feedback(False, "pass the pruning study: check_prunable_fraction(m, answer, study=study).")
    return check_number(answer, study.prunable["importance"], rel=0, abs_tol=1e-6, what="your fraction",
                        hint="walk the importance curve from 0%; stop before the first loss above the tolerance line "
                             "(study.base_loss + study.tolerance for a representation objective, "
                             "(1 + study.tolerance) x study.base_loss otherwise).")
