"""The teacher's worked solutions of lesson 13's exercises (kept out of the students' package).

``solution_<name>`` answers ``check_<name>`` of :mod:`attnlab.course.exercises.lesson_13`; it takes the
check's arguments without ``answer``. ``attnlab class assignments`` puts each call between nbgrader's
solution markers in the teacher's source notebooks.
"""

from __future__ import annotations

from attnlab.course.exercises import lesson_13 as checks

#: the check's own computation of the answer
solution_norm_contribution = checks._expected_norm_contribution

#: the check's own computation of the answer
solution_rollout_two_layers = checks._expected_rollout_two_layers

#: the check's own computation of the answer
solution_sink_layer = checks._expected_sink_layer

#: the check's own computation of the answer
solution_best_view = checks._expected_best_view

#: the check's own computation of the answer
solution_replaceable_fraction = checks._expected_replaceable_fraction
