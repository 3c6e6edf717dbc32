"""The teacher's worked solutions of lesson 10's exercises (kept out of the students' package).

``solution_<name>`` answers ``check_<name>`` of :mod:`attnlab.course.exercises.lesson_10`; it takes the
check's arguments without ``answer``. ``attnlab class assignments`` puts each call between nbgrader's
solution markers in the teacher's source notebooks.
"""

from __future__ import annotations

from attnlab.course.exercises import lesson_10 as checks

#: the check's own computation of the answer
solution_group_width = checks._expected_group_width

#: the check's own computation of the answer
solution_most_focused_group_count = checks._expected_most_focused_group_count

#: the check's own computation of the answer
solution_best_head_count = checks._expected_best_head_count
