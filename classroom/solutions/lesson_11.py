"""The teacher's worked solutions of lesson 11's exercises (kept out of the students' package).

``solution_<name>`` answers ``check_<name>`` of :mod:`attnlab.course.exercises.lesson_11`; it takes the
check's arguments without ``answer``. ``attnlab class assignments`` puts each call between nbgrader's
solution markers in the teacher's source notebooks.
"""

from __future__ import annotations

from attnlab.analysis.pruning import PruningStudy
from attnlab.core.models import LoadedModel
from attnlab.course.exercises import lesson_11 as checks

#: the check's own computation of the answer
solution_heads_masked = checks._expected_heads_masked

#: the check's own computation of the answer
solution_most_important_head = checks._expected_most_important_head


def solution_prunable_fraction(m: LoadedModel, study: PruningStudy) -> float:
    """Worked solution: the importance curve's prunable fraction, as the study read it off the curve."""
    return float(study.prunable["importance"])
