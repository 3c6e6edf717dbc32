"""Lesson 04's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

import torch

from attnlab.core.models import LoadedModel
from attnlab.course.exercises.lesson_04 import _split_shape


def solution_head_width(m: LoadedModel) -> int:
    return m.hidden_size // m.n_heads


def solution_split_shape(m: LoadedModel) -> tuple[int, int, int, int]:
    return _split_shape(m)


def solution_head_slice(m: LoadedModel, head: int = 6) -> tuple[int, int]:
    head = m.check_head(head)
    return head * m.head_dim, (head + 1) * m.head_dim


def solution_split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """The teacher's solution: ``(B, T, d) -> (B, T, H, d_h) -> (B, H, T, d_h)``."""
    B, T, d = x.shape
    return x.reshape(B, T, n_heads, d // n_heads).transpose(1, 2)  # (B, H, T, d_h)


def solution_merge_heads(x: torch.Tensor) -> torch.Tensor:
    """The teacher's solution: ``(B, H, T, d_h) -> (B, T, H, d_h) -> (B, T, H * d_h)``."""
    B, H, T, d_h = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d_h)  # (B, T, d)

