"""Lesson 02's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

import math

from attnlab.core.models import LoadedModel
from attnlab.scratch.scaling import saturation_curve


def solution_qk_variance(m: LoadedModel | None = None, d_k: int = 128) -> float:
    return float(d_k)


def solution_scale_factor(m: LoadedModel) -> float:
    return math.sqrt(m.head_dim)


def solution_saturation_direction(m: LoadedModel | None = None) -> str:
    curve = saturation_curve([8, 512], scaled=False, n_rows=300, seed=3)
    return "rise" if curve.max_weight[1] > curve.max_weight[0] else "fall"
