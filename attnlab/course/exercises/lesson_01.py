"""Exercises of lesson 01 (self-attention, reading the matrix).

1. :func:`check_tiny_weight` -- compute one attention weight of the tiny
   example by hand.
2. :func:`check_strongest_key` -- which token does a query look at most in
   a given head of the running model?
3. :func:`check_diagonal_head` -- which head of the example query is the most
   "diagonal" (tokens looking at themselves)?
4. :func:`check_attention` -- build it yourself: write scaled dot-product attention.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from attnlab.core.language import _
from attnlab.core.checks import check_index
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.course.exercises import Feedback, build_it, check_choice, check_number, exercise
from attnlab.data.examples import example_for
from attnlab.scratch.self_attention import attention_steps, find_pattern_heads, tiny_example


def _tiny_weights() -> torch.Tensor:
    ex = tiny_example()
    return attention_steps(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"])["weights"]  # (3, 3)


def _check_cell(row: int, col: int) -> tuple[int, int]:
    """``(row, col)`` as plain ints in 0..2 (the tiny example has 3 tokens)."""
    return check_index(row, 3, "row"), check_index(col, 3, "column")


@exercise
def check_tiny_weight(m: LoadedModel | None, answer: Any, row: int = 0, col: int = 1) -> Feedback:
    """How much does token ``row`` attend to token ``col`` in the tiny example (0-based)?

    ``m`` is not needed (the example is fixed) but kept so every checker is
    called the same way.
    """
    row, col = _check_cell(row, col)
    expected = float(_tiny_weights()[row, col])
    return check_number(answer, expected, rel=0.01, what=f"weight[{row}, {col}]",
                        hint=_("score = q_row . k_col; divide by sqrt(d_k) = 2; softmax over the row."))


def _example_head(m: LoadedModel, layer: int, head: int) -> tuple[torch.Tensor, list[str]]:
    layer, head = m.check_layer(layer), m.check_head(head)
    att = attention(m, [example_for(m)])
    return att.head(0, layer, head), att.tokens[0]


@exercise
def check_strongest_key(m: LoadedModel, answer: Any, layer: int = 0, head: int = 0, query: int = 1) -> Feedback:
    """Which token (as a string) does token ``query`` of the example look at most,
    in 0-based ``layer``/``head`` of the running model?"""
    weights, tokens = _example_head(m, layer, head)
    query = check_index(query, len(tokens), "query token")
    expected = tokens[int(weights[query].argmax())]
    if answer is None:
        return Feedback(False, _("no answer yet: set answer to a token string, e.g. {token!r}.").format(token=m.cls_token),
                        expected)
    return check_choice(answer, expected, what=_("strongest key"),
                        hint=_("look along row {query} ({token!r}) for the largest weight.").format(
                            query=query, token=tokens[query]))


@exercise
def check_diagonal_head(m: LoadedModel, answer: Any) -> Feedback:
    """Which ``(layer, head)`` (0-based) puts the most weight on the diagonal
    for the example query?"""
    att = attention(m, [example_for(m)])
    layer, head, score = find_pattern_heads(att[0])["diagonal"]
    if answer is None:
        return Feedback(False, _("no answer yet: set answer to a (layer, head) pair, 0-based."), (layer, head))
    try:
        got = (int(answer[0]), int(answer[1]))
    except (TypeError, ValueError, IndexError):
        return Feedback(False, _("answer should be a (layer, head) pair, got {answer!r}.").format(answer=answer),
                        (layer, head))
    if got == (layer, head):
        return Feedback(True, _("(layer {layer}, head {head}) has mean diagonal weight {score:.2f}.").format(
            layer=layer, head=head, score=score), (layer, head))
    return Feedback(False, _("{got} is not the most diagonal head. Hint: compute the mean of each map's "
                             "diagonal and take the largest.").format(got=got), (layer, head))


@exercise
def check_attention(m: LoadedModel | None, answer: Callable) -> Feedback:
    """Build it yourself: ``answer(q, k, v, mask=None) -> (output, weights)``, scaled dot-product attention
    (``q (..., T_q, d_k)``, ``k (..., T_k, d_k)``, ``v (..., T_k, d_v)``, ``mask`` True where a query may look
    at a key), tested against the package's ``scaled_dot_product_attention`` on random tensors: shapes,
    rows that sum to 1, the scale, the mask, and one head alone as in a batch of heads.

    ``m`` is not needed (the tests use random tensors) but kept so every checker is called the same way.
    """
    if answer is None:
        return build_it.not_written()
    return build_it.feedback(lambda: build_it.attention_problem(answer),
                             _("your attention passes every test: the shapes, rows that sum to 1, the scale, "
                               "the mask, and one head alone as in a batch of heads."))
