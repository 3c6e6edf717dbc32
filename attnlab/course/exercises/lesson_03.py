"""Exercises of lesson 03 (why self-attention, not recurrence).

All use the example query's token count ``n`` on the running model.

1. :func:`check_path_length` -- steps from the first to the last token.
2. :func:`check_sequential_steps` -- operations that must wait for each other.
3. :func:`check_attention_entries` -- weights one attention layer computes.
"""

from __future__ import annotations

from typing import Any

from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.course.exercises import Feedback, check_number, exercise
from attnlab.data.examples import example_for
from attnlab.scratch.recurrence import path_length, sequential_steps


def example_length(m: LoadedModel) -> int:
    """Tokens of the example query on this model, [CLS] and [SEP] included."""
    return len(m.tokenizer(example_for(m))["input_ids"])


@exercise
def check_path_length(m: LoadedModel, answer: Any, kind: str = "lstm") -> Feedback:
    """Maximum path length (first to last token of the example) for ``kind``
    (``"lstm"``, ``"bilstm"`` or ``"attention"``)."""
    n = example_length(m)
    return check_number(answer, path_length(kind, n), rel=0, abs_tol=0.5, what=_("{kind} path length (n={n})").format(kind=kind, n=n),
                        hint=_("a recurrence moves one token per step; attention connects every pair directly."))


@exercise
def check_sequential_steps(m: LoadedModel, answer: Any, kind: str = "lstm") -> Feedback:
    """Sequential operations one layer of ``kind`` needs for the example."""
    n = example_length(m)
    return check_number(answer, sequential_steps(kind, n), rel=0, abs_tol=0.5,
                        what=_("{kind} sequential steps (n={n})").format(kind=kind, n=n),
                        hint=_("each recurrent step needs the previous hidden state."))


@exercise
def check_attention_entries(m: LoadedModel, answer: Any) -> Feedback:
    """How many attention weights does one layer compute for the example (all heads)?"""
    n = example_length(m)
    return check_number(answer, m.n_heads * n * n, rel=0, abs_tol=0.5, what=_("attention weights per layer"),
                        hint=_("each of the {heads} heads has an n x n matrix (n = {n}).").format(heads=m.n_heads, n=n))


