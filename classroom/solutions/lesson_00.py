"""Lesson 00's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.course.exercises.lesson_00 import _text
from attnlab.data.examples import example_for


def solution_total_heads(m: LoadedModel) -> int:
    """Read layers and heads off the attention tensor of one query and multiply."""
    att = attention(m, [example_for(m)])
    _texts, layers, heads, _n, _m = att.tensor.shape  # [texts, layers, heads, n, n]
    return layers * heads


def solution_token_count(m: LoadedModel, text: str | None = None) -> int:
    """The length of the token list that ``al.attention`` reports."""
    att = attention(m, [_text(m, text)])
    return len(att.tokens[0])


def solution_top_key(m: LoadedModel, layer: int = 0, head: int = 0, text: str | None = None) -> str:
    """Take row 0 of the head's map from ``al.attention`` and find its largest entry."""
    att = attention(m, [_text(m, text)])
    row = att.head(0, layer, head)[0]  # (n,): the [CLS] row
    return att.tokens[0][int(row.argmax())]
