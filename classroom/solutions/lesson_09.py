"""Lesson 09's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.course.exercises import lesson_09 as checks

# where a solution is the check's own computation of the answer, it is that function
solution_closest_pair = checks._expected_closest_pair
solution_dispersion = checks._expected_dispersion
solution_trend_verdict = checks._expected_trend_verdict
