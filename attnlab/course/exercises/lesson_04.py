"""Exercises of lesson 04 (splitting into heads).

1. :func:`check_head_width` -- the width of one head of the running model.
2. :func:`check_split_shape` -- the shape of the example's queries after ``split_heads``.
3. :func:`check_head_slice` -- which features of the hidden vector belong to a head.
4. :func:`check_split_and_merge` -- build it yourself: write the split into heads and the merge.
"""

from __future__ import annotations

from typing import Any, Callable

from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.course.exercises import Feedback, build_it, check_number, exercise
from attnlab.data.examples import example_for


@exercise
def check_head_width(m: LoadedModel, answer: Any) -> Feedback:
    """Features per head (``hidden_size / n_heads``) of the running model."""
    return check_number(answer, m.head_dim, rel=0, abs_tol=0.5, what=_("head width"),
                        hint=_("divide the hidden width {hidden} by the {heads} heads.").format(
                            hidden=m.hidden_size, heads=m.n_heads))


def _split_shape(m: LoadedModel) -> tuple[int, int, int, int]:
    n = len(m.tokenizer(example_for(m))["input_ids"])
    return (1, m.n_heads, n, m.head_dim)


@exercise
def check_split_shape(m: LoadedModel, answer: Any) -> Feedback:
    """Shape of ``split_heads(query(hidden), n_heads)`` for the example query alone (batch 1)."""
    expected = _split_shape(m)
    if answer is None:
        return Feedback(False, _("no answer yet: set answer to a 4-tuple (batch, heads, tokens, head width)."),
                        expected)
    try:
        got = tuple(int(v) for v in answer)
    except (TypeError, ValueError):
        return Feedback(False, _("answer should be a tuple of 4 ints, got {answer!r}.").format(answer=answer),
                        expected)
    if got == expected:
        return Feedback(True, _("shape {got} is right.").format(got=got), expected)
    return Feedback(False, _("shape {got} is not it: the order is (batch, heads, tokens, head width), "
                             "and tokens include {first} and {last}.").format(got=got, first=m.cls_token, last=m.sep_token),
                    expected)


@exercise
def check_head_slice(m: LoadedModel, answer: Any, head: int = 6) -> Feedback:
    """``(start, stop)`` of the hidden features that 0-based ``head`` owns
    (Python slice convention: ``stop`` excluded)."""
    head = m.check_head(head)
    expected = (head * m.head_dim, (head + 1) * m.head_dim)
    if answer is None:
        return Feedback(False, _("no answer yet: set answer to (start, stop)."), expected)
    try:
        got = (int(answer[0]), int(answer[1]))
    except (TypeError, ValueError, IndexError):
        return Feedback(False, _("answer should be a (start, stop) pair, got {answer!r}.").format(answer=answer),
                        expected)
    if got == expected:
        return Feedback(True, _("head {head} (the article's head {number}) owns features {start}..{last}.").format(
            head=head, number=head + 1, start=got[0], last=got[1] - 1), expected)
    return Feedback(False, _("{got} is not it. Hint: head h owns h*d_h up to (h+1)*d_h, with d_h = {width}; "
                             "mind the 0-based index.").format(got=got, width=m.head_dim), expected)


@exercise
def check_split_and_merge(m: LoadedModel | None, answer: tuple[Callable, Callable]) -> Feedback:
    """Build it yourself: ``answer = (split, merge)`` with ``split(x, n_heads)``: ``(B, T, d) -> (B, H, T, d / H)``
    and ``merge(x)``: ``(B, H, T, d_h) -> (B, T, H * d_h)``, tested against the package's ``split_heads`` and
    ``merge_heads`` on random tensors of the running model's width and head count (``m``; 24 wide, 4 heads
    without one): shapes, which features each head owns, the transposes, one head, and multi-head attention
    built with them against the heads computed one at a time (with a padding mask)."""
    if answer is None:
        return build_it.not_written()
    try:
        split, merge = answer
    except (TypeError, ValueError):
        return Feedback(False, _("answer should be the pair (my_split_heads, my_merge_heads)"))
    width, heads = (m.hidden_size, m.n_heads) if m is not None else (24, 4)
    return build_it.feedback(lambda: build_it.split_merge_problem(split, merge, width=width, n_heads=heads),
                             _("your split and merge pass every test: the shapes, the features each head owns, "
                               "the transposes, one head, and multi-head attention with a padding mask."))
