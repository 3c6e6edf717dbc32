"""Lesson 13's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.course.exercises import lesson_13 as checks

# where a solution is the check's own computation of the answer, it is that function
solution_norm_contribution = checks._expected_norm_contribution
solution_rollout_two_layers = checks._expected_rollout_two_layers
solution_sink_layer = checks._expected_sink_layer
solution_best_view = checks._expected_best_view
solution_replaceable_fraction = checks._expected_replaceable_fraction
