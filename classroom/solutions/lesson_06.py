"""Lesson 06's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.course.exercises import lesson_06 as checks

# where a solution is the check's own computation of the answer, it is that function
solution_token_permutation = checks._expected_token_permutation
solution_most_sensitive_head = checks._expected_most_sensitive_head
solution_position_follower_share = checks._expected_position_follower_share
