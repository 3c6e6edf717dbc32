"""Lesson 11's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.analysis.pruning import PruningStudy
from attnlab.core.models import LoadedModel
from attnlab.course.exercises import lesson_11 as checks

# where a solution is the check's own computation of the answer, it is that function
solution_heads_masked = checks._expected_heads_masked
solution_most_important_head = checks._expected_most_important_head


def solution_prunable_fraction(m: LoadedModel, study: PruningStudy) -> float:
    """Worked solution: the importance curve's prunable fraction, as the study read it off the curve."""
    return float(study.prunable["importance"])
