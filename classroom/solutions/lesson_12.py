"""Lesson 12's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.course.exercises import lesson_12 as checks

# where a solution is the check's own computation of the answer, it is that function
solution_fixed_share = checks._expected_fixed_share
solution_rejudge = checks._expected_rejudge
solution_most_diverse_layer = checks._expected_most_diverse_layer
