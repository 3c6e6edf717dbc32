"""Lesson 10's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.course.exercises import lesson_10 as checks

# where a solution is the check's own computation of the answer, it is that function
solution_group_width = checks._expected_group_width
solution_most_focused_group_count = checks._expected_most_focused_group_count
solution_best_head_count = checks._expected_best_head_count
