"""Lesson 05's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.core.models import LoadedModel
from attnlab.course.exercises import lesson_05 as checks
from attnlab.course.exercises.lesson_05 import _labels
from collections import Counter

# where a solution is the check's own computation of the answer, it is that function
solution_cls_mass = checks._expected_cls_mass


def solution_head_label(m: LoadedModel, layer: int, head: int) -> tuple[str, str]:
    """``(label, reason)`` of the head: classify the survey statistics with the default thresholds."""
    labels = _labels(m)
    return labels[layer, head], str(labels.reasons[layer, head])


def solution_layer_majority(m: LoadedModel, layer: int) -> list[str]:
    """The most common label(s) in the layer's row of the taxonomy map."""
    counts = Counter(_labels(m).labels[layer].tolist())
    top = max(counts.values())
    return sorted(name for name, c in counts.items() if c == top)
