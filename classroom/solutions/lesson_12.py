"""The teacher's worked solutions of lesson 12's exercises (kept out of the students' package).

``solution_<name>`` answers ``check_<name>`` of :mod:`attnlab.course.exercises.lesson_12`; it takes the
check's arguments without ``answer``. ``attnlab class assignments`` puts each call between nbgrader's
solution markers in the teacher's source notebooks.
"""

from __future__ import annotations

from attnlab.course.exercises import lesson_12 as checks

#: the check's own computation of the answer
solution_fixed_share = checks._expected_fixed_share

#: the check's own computation of the answer
solution_rejudge = checks._expected_rejudge

#: the check's own computation of the answer
solution_most_diverse_layer = checks._expected_most_diverse_layer
