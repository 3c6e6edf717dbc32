"""Lesson 03's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.core.models import LoadedModel
from attnlab.course.exercises.lesson_03 import example_length
from attnlab.scratch.recurrence import path_length, sequential_steps


def solution_path_length(m: LoadedModel, kind: str = "lstm") -> int:
    return path_length(kind, example_length(m))


def solution_sequential_steps(m: LoadedModel, kind: str = "lstm") -> int:
    return sequential_steps(kind, example_length(m))


def solution_attention_entries(m: LoadedModel) -> int:
    n = example_length(m)
    return m.n_heads * n * n
