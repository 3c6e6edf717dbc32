"""Exercises for lesson 08 (averaging attention over many same-length queries).

* :func:`check_mean_cell` — average one cell of one head's map by brute force.
* :func:`check_fixedness_by_hand` — fixedness from two entropies and the null.
* :func:`check_most_fixed_layer` — which layer is the most fixed?

Truths are computed from the running model (and from the lesson's own result
object when the notebook passes it). The worked answers are in the teacher's source folder
(``classroom/solutions/``).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from attnlab.core.extract import attention
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.streaming import MeanAttention, mean_attention

from . import NOT_YET as _NOT_YET, per_model_over_queries, Feedback, check_choice, check_number, exercise

__all__ = [
    "check_mean_cell",
    "check_fixedness_by_hand",
    "check_most_fixed_layer",
]


def _default_result(m: LoadedModel) -> MeanAttention:
    """A small mean over same-length queries (when the notebook passes none)."""
    return per_model_over_queries(m, "lesson_08", mean_attention, 2000, 150)


# --------------------------------------------------------------------------- 1. one cell by brute force


def _expected_mean_cell(m: LoadedModel, texts: Sequence[str], layer: int = 0, head: int = 0) -> float:
    """Mean over ``texts`` of the weight from [CLS] (row 0) to [SEP] (last column) in one head."""
    layer, head = m.check_layer(layer), m.check_head(head)
    att = attention(m, list(texts))
    return float(sum(att.head(i, layer, head)[0, -1] for i in range(len(att))) / len(att))


@exercise
def check_mean_cell(m: LoadedModel, answer: Any, texts: Sequence[str], layer: int = 0, head: int = 0) -> Feedback:
    """Is ``answer`` the mean [CLS]->[SEP] weight of ``(layer, head)`` over ``texts``?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = _expected_mean_cell(m, texts, layer, head)
    return check_number(answer, truth, rel=1e-3, abs_tol=1e-5, what="your mean weight",
                        hint="use al.attention(m, texts) and average att.head(i, layer, head)[0, -1] over i.")


# --------------------------------------------------------------------------- 2. fixedness by hand


def _position_of(res: MeanAttention, layer: int) -> int:
    """Where model layer ``layer`` sits along ``res``'s first axis; a clear error if it was not averaged."""
    if layer not in res.layers:
        raise ValueError(f"layer {layer} was not averaged in this result (its layers are {res.layers})")
    return res.layers.index(layer)


@exercise
def check_fixedness_by_hand(m: LoadedModel, answer: Any, layer: int, head: int,
                            result: MeanAttention | None = None) -> Feedback:
    """Is ``answer`` the fixedness of ``(layer, head)``, as ``result.fixedness()`` defines it?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    res = result if result is not None else _default_result(m)
    l = _position_of(res, m.check_layer(layer))
    truth = float(res.fixedness()[l, m.check_head(head)])
    return check_number(answer, truth, rel=1e-4, abs_tol=1e-6, what=_("your fixedness"),
                        hint=_("(KL(mean) - b) / (KL(rows) - b) for that head: KL(mean) = ln n - "
                               "result.entropy_of_mean(), KL(rows) = ln n - result.mean_entropy(), and the "
                               "null b = (n * E||p||^2 - 1) / (2N), where E||p||^2 is "
                               "result.total_sq[l, h].sum(-1).mean() / N and N = result.count."))


# --------------------------------------------------------------------------- 3. the most fixed layer


def _expected_most_fixed_layer(m: LoadedModel, result: MeanAttention | None = None) -> int:
    """0-based layer with the highest mean fixedness over its heads."""
    res = result if result is not None else _default_result(m)
    per_layer = res.fixedness().nanmean(dim=1)  # uniform heads (NaN) left out
    return int(res.layers[int(per_layer.nan_to_num(nan=-math.inf).argmax())])


@exercise
def check_most_fixed_layer(m: LoadedModel, answer: Any, result: MeanAttention | None = None) -> Feedback:
    """Is ``answer`` (0-based) the layer whose heads are, on average, the most fixed?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    truth = _expected_most_fixed_layer(m, result)
    verdict = check_choice(answer, truth, what="layer",
                           hint=_("average result.fixedness() over heads (dim=1, nanmean: uniform heads "
                                   "are NaN) and take the argmax; answer 0-based."))
    if not verdict and answer == truth + 1:
        verdict.message += " (Did you answer 1-based? Code indices are 0-based.)"
    return verdict
