"""The teacher's worked solutions of lesson 09's exercises (kept out of the students' package).

``solution_<name>`` answers ``check_<name>`` of :mod:`attnlab.course.exercises.lesson_09`; it takes the
check's arguments without ``answer``. ``attnlab class assignments`` puts each call between nbgrader's
solution markers in the teacher's source notebooks.
"""

from __future__ import annotations

from attnlab.course.exercises import lesson_09 as checks

#: the check's own computation of the answer
solution_closest_pair = checks._expected_closest_pair

#: the check's own computation of the answer
solution_dispersion = checks._expected_dispersion

#: the check's own computation of the answer
solution_trend_verdict = checks._expected_trend_verdict
