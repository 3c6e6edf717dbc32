"""Lesson 08's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

import math

from attnlab.core.models import LoadedModel
from attnlab.core.streaming import ENTROPY_EPS, MeanAttention
from attnlab.course.exercises import lesson_08 as checks
from attnlab.course.exercises.lesson_08 import _default_result, _position_of

# where a solution is the check's own computation of the answer, it is that function
solution_mean_cell = checks._expected_mean_cell
solution_most_fixed_layer = checks._expected_most_fixed_layer


def solution_fixedness_by_hand(m: LoadedModel, layer: int, head: int, result: MeanAttention | None = None) -> float:
    """``(KL(mean) - b) / (KL(rows) - b)``, with ``KL(mean) = ln n - H(mean map)``, ``KL(rows) = ln n -
    mean H(individual maps)`` (entropies averaged over rows) and the null
    ``b = (1 - eps)^2 (n * mean_r sum_k total_sq[r, k] / N - 1) / (2N)``."""
    res = result if result is not None else _default_result(m)
    l = _position_of(res, m.check_layer(layer))
    head = m.check_head(head)
    n, count = res.length, res.count
    kl_mean = math.log(n) - float(res.entropy_of_mean()[l, head])
    kl_rows = math.log(n) - float(res.mean_entropy()[l, head])
    square = float(res.total_sq[l, head].sum(dim=-1).mean()) / count  # mean over rows of E ||p||^2
    null = (1 - ENTROPY_EPS) ** 2 * (n * square - 1) / (2 * count)
    return (kl_mean - null) / (kl_rows - null)
