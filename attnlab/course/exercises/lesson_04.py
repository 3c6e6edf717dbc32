"""Exercises of lesson 04 (splitting into heads).

1. :func:`check_head_width` -- the width of one head of the running model.
2. :func:`check_split_shape` -- the shape of the example's queries after ``split_heads``.
3. :func:`check_head_slice` -- which features of the hidden vector belong to a head.
"""

from __future__ import annotations

from typing import Any

from attnlab.core.models import LoadedModel
from attnlab.course.exercises import Feedback, check_number
from attnlab.data.examples import example_for


def check_head_width(m: LoadedModel, answer: Any) -> Feedback:
    """Features per head (``hidden_size / n_heads``) of the running model."""
    return check_number(answer, m.head_dim, rel=0, abs_tol=0.5, what="head width",
                        hint=f"divide the hidden width {m.hidden_size} by the {m.n_heads} heads.")


def solution_head_width(m: LoadedModel) -> int:
    return m.hidden_size // m.n_heads


def _split_shape(m: LoadedModel) -> tuple[int, int, int, int]:
    n = len(m.tokenizer(example_for(m))["input_ids"])
    return (1, m.n_heads, n, m.head_dim)


def check_split_shape(m: LoadedModel, answer: Any) -> Feedback:
    """Shape of ``split_heads(query(hidden), n_heads)`` for the example query alone (batch 1)."""
    expected = _split_shape(m)
    if answer is None:
        return Feedback(False, "no answer yet: set answer to a 4-tuple (batch, heads, tokens, head width).", expected)
    try:
        got = tuple(int(v) for v in answer)
    except (TypeError, ValueError):
        return Feedback(False, f"answer should be a tuple of 4 ints, got {answer!r}.", expected)
    if got == expected:
        return Feedback(True, f"shape {got} is right.", expected)
    return Feedback(False, f"shape {got} is not it: the order is (batch, heads, tokens, head width), "
                          "and tokens include [CLS] and [SEP].", expected)


def solution_split_shape(m: LoadedModel) -> tuple[int, int, int, int]:
    return _split_shape(m)


def check_head_slice(m: LoadedModel, answer: Any, head: int = 6) -> Feedback:
    """``(start, stop)`` of the hidden features that 0-based ``head`` owns
    (Python slice convention: ``stop`` excluded)."""
    head = m.check_head(head)
    expected = (head * m.head_dim, (head + 1) * m.head_dim)
    if answer is None:
        return Feedback(False, "no answer yet: set answer to (start, stop).", expected)
    try:
        got = (int(answer[0]), int(answer[1]))
    except (TypeError, ValueError, IndexError):
        return Feedback(False, f"answer should be a (start, stop) pair, got {answer!r}.", expected)
    if got == expected:
        return Feedback(True, f"head {head} (the article's head {head + 1}) owns features {got[0]}..{got[1] - 1}.",
                       expected)
    return Feedback(False, f"{got} is not it. Hint: head h owns h*d_h up to (h+1)*d_h, with d_h = {m.head_dim}; "
                          "mind the 0-based index.", expected)


def solution_head_slice(m: LoadedModel, head: int = 6) -> tuple[int, int]:
    head = m.check_head(head)
    return head * m.head_dim, (head + 1) * m.head_dim
