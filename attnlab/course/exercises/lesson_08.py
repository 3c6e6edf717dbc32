"""Exercises for lesson 08 (averaging attention over many same-length queries).

* :func:`check_mean_cell` — average one cell of one head's map by brute force.
* :func:`check_fixedness_by_hand` — fixedness from two entropies.
* :func:`check_most_fixed_layer` — which layer is the most fixed?

Truths are computed from the running model (and from the lesson's own result
object when the notebook passes it). ``solution_*`` are the worked answers.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from attnlab.core.config import pick
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.core.streaming import MeanAttention, mean_attention
from attnlab.data.querygen import same_length_queries

from . import NOT_YET as _NOT_YET, per_model, Feedback, check_choice, check_number

__all__ = [
    "check_mean_cell", "solution_mean_cell",
    "check_fixedness_by_hand", "solution_fixedness_by_hand",
    "check_most_fixed_layer", "solution_most_fixed_layer",
]


def _default_result(m: LoadedModel) -> MeanAttention:
    """A small mean over same-length queries (when the notebook passes none)."""
    return per_model(m, "lesson_08", lambda: mean_attention(m, same_length_queries(m, pick(2000, 150)), progress=False))


# --------------------------------------------------------------------------- 1. one cell by brute force


def solution_mean_cell(m: LoadedModel, texts: Sequence[str], layer: int = 0, head: int = 0) -> float:
    """Mean over ``texts`` of the weight from [CLS] (row 0) to [SEP] (last column) in one head."""
    layer, head = m.check_layer(layer), m.check_head(head)
    att = attention(m, list(texts))
    return float(sum(att.head(i, layer, head)[0, -1] for i in range(len(att))) / len(att))


def check_mean_cell(m: LoadedModel, answer: Any, texts: Sequence[str], layer: int = 0, head: int = 0) -> Feedback:
    """Is ``answer`` the mean [CLS]->[SEP] weight of ``(layer, head)`` over ``texts``?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = solution_mean_cell(m, texts, layer, head)
    return check_number(answer, truth, rel=1e-3, abs_tol=1e-5, what="your mean weight",
                        hint="use al.attention(m, texts) and average att.head(i, layer, head)[0, -1] over i.")


# --------------------------------------------------------------------------- 2. fixedness by hand


def _position_of(res: MeanAttention, layer: int) -> int:
    """Where model layer ``layer`` sits along ``res``'s first axis; a clear error if it was not averaged."""
    if layer not in res.layers:
        raise ValueError(f"layer {layer} was not averaged in this result (its layers are {res.layers})")
    return res.layers.index(layer)


def solution_fixedness_by_hand(m: LoadedModel, layer: int, head: int, result: MeanAttention | None = None) -> float:
    """``1 - (H(mean map) - mean H(individual maps)) / ln n``, entropies averaged over rows."""
    res = result if result is not None else _default_result(m)
    l = _position_of(res, m.check_layer(layer))
    head = m.check_head(head)
    gap = res.entropy_of_mean()[l, head] - res.mean_entropy()[l, head]
    return float(1 - gap / math.log(res.length))


def check_fixedness_by_hand(m: LoadedModel, answer: Any, layer: int, head: int,
                            result: MeanAttention | None = None) -> Feedback:
    """Is ``answer`` the fixedness of ``(layer, head)``, as ``result.fixedness()`` defines it?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    res = result if result is not None else _default_result(m)
    l = _position_of(res, m.check_layer(layer))
    truth = float(res.fixedness()[l, m.check_head(head)])
    return check_number(answer, truth, rel=1e-4, abs_tol=1e-6, what="your fixedness",
                        hint="1 - (result.entropy_of_mean() - result.mean_entropy()) / ln(n) for that head, "
                             "with n = result.length.")


# --------------------------------------------------------------------------- 3. the most fixed layer


def solution_most_fixed_layer(m: LoadedModel, result: MeanAttention | None = None) -> int:
    """0-based layer with the highest mean fixedness over its heads."""
    res = result if result is not None else _default_result(m)
    per_layer = res.fixedness().mean(dim=1)
    return int(res.layers[int(per_layer.argmax())])


def check_most_fixed_layer(m: LoadedModel, answer: Any, result: MeanAttention | None = None) -> Feedback:
    """Is ``answer`` (0-based) the layer whose heads are, on average, the most fixed?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = solution_most_fixed_layer(m, result)
    verdict = check_choice(answer, truth, what="layer",
                           hint="average result.fixedness() over heads (dim=1) and take the argmax; "
                                "answer 0-based.")
    if not verdict and answer == truth + 1:
        verdict.message += " (Did you answer 1-based? Code indices are 0-based.)"
    return verdict
