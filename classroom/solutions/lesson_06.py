"""The teacher's worked solutions of lesson 06's exercises (kept out of the students' package).

``solution_<name>`` answers ``check_<name>`` of :mod:`attnlab.course.exercises.lesson_06`; it takes the
check's arguments without ``answer``. ``attnlab class assignments`` puts each call between nbgrader's
solution markers in the teacher's source notebooks.
"""

from __future__ import annotations

from attnlab.course.exercises import lesson_06 as checks

#: the check's own computation of the answer
solution_token_permutation = checks._expected_token_permutation

#: the check's own computation of the answer
solution_most_sensitive_head = checks._expected_most_sensitive_head

#: the check's own computation of the answer
solution_position_follower_share = checks._expected_position_follower_share
