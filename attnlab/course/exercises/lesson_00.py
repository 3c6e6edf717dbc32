"""Exercises for lesson 00 (the tour).

Three warm-ups that make a student look at the running model and at one
attention map. Every checker computes the right answer from the model that
is running (``m``), so the same exercise works for ``bert-base-chinese``, the
bundled MiniLM or any other BERT-family model.

* :func:`check_total_heads` — how many attention heads does the model have in all?
* :func:`check_token_count` — how many tokens does the example query become?
* :func:`check_top_key` — which token does the first query row of a head attend to most?

The worked answers are in the teacher's source folder (``classroom/solutions/``), not in this package.
"""

from __future__ import annotations

from typing import Any

import torch

from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.run import encode, run
from attnlab.data.examples import example_for
from attnlab.course.exercises import Feedback, NOT_YET as _NOT_YET, check_number, exercise

__all__ = ["check_total_heads", "check_token_count", "check_top_key"]


def _text(m: LoadedModel, text: str | None) -> str:
    return example_for(m) if text is None else text


# --------------------------------------------------------------------------- 1. layers x heads


@exercise
def check_total_heads(m: LoadedModel, answer: Any) -> Feedback:
    """How many attention heads does the running model have in all (layers x heads)?

    Args:
        m: the running model (``al.load_model(...)``).
        answer: an int (the total), or a ``(layers, heads)`` pair.
    """
    expected = m.n_layers * m.n_heads
    if answer is None:
        return Feedback(False, _NOT_YET, None)
    if isinstance(answer, (tuple, list)):
        if len(answer) != 2:
            return Feedback(False, _("give one number, or a pair (layers, heads)."), None)
        layers, heads = answer
        if (layers, heads) == (m.n_layers, m.n_heads):
            return Feedback(True, _("{layers} layers x {heads} heads = {total} heads in all.").format(
                layers=layers, heads=heads, total=expected), expected)
        return Feedback(False, _("({layers}, {heads}) is not it. Look at m.n_layers and m.n_heads, "
                                 "or at the shape of att.tensor.").format(layers=layers, heads=heads), None)
    hint = ""
    try:
        if float(answer) == m.n_heads:
            hint = _("That is the number of heads in ONE layer; every layer has its own heads.")
        elif float(answer) == m.n_layers:
            hint = _("That is the number of layers; each layer has several heads.")
    except (TypeError, ValueError):
        pass
    verdict = check_number(answer, expected, rel=0.0, abs_tol=0.5, what=_("total heads"),
                           hint=hint or _("The attention tensor is [texts, layers, heads, n, n]."))
    if not verdict.correct:
        verdict.expected = None  # do not give the number away
    return verdict


# --------------------------------------------------------------------------- 2. token count


def _token_count(m: LoadedModel, text: str) -> int:
    """Tokens of ``text`` as the tokenizer encodes it, special tokens included."""
    return len(m.tokenizer(text)["input_ids"])


@exercise
def check_token_count(m: LoadedModel, answer: Any, text: str | None = None) -> Feedback:
    """How many tokens does the example query have, special tokens included?

    Args:
        m: the running model.
        answer: an int.
        text: the query (default: the lesson's example, ``al.example_for(m)``).
    """
    text = _text(m, text)
    expected = _token_count(m, text)
    if answer is None:
        return Feedback(False, _NOT_YET, None)
    pieces = m.tokenizer.tokenize(text)
    hint = _("Count every row (or column) of one attention map.")
    try:
        if float(answer) == len(pieces):
            hint = _("Close: you counted the text's own tokens. The model adds special tokens at both ends.")
        elif float(answer) == len(text.split()) or float(answer) == len(text):
            hint = _("Tokens are not words or characters one to one; look at att.tokens[0].")
    except (TypeError, ValueError):
        pass
    verdict = check_number(answer, expected, rel=0.0, abs_tol=0.5, what=_("token count"), hint=hint)
    if verdict.correct:
        verdict.message += _(" ({text} text tokens + {special} special tokens)").format(
            text=len(pieces), special=expected - len(pieces))
    else:
        verdict.expected = None
    return verdict


# --------------------------------------------------------------------------- 3. the strongest key


def _first_row(m: LoadedModel, text: str, layer: int, head: int) -> tuple[torch.Tensor, list[str]]:
    """Row 0 of one head's map, from a plain forward pass: ``([n], tokens)``."""
    layer, head = m.check_layer(layer), m.check_head(head)
    batch = encode(m, [text])
    maps = run(m, batch, keep=("maps",), layers=[layer]).maps[layer]  # (1, H, n, n)
    row = maps[0, head, 0].float().cpu()  # (n,)
    tokens = m.tokenizer.convert_ids_to_tokens(batch.input_ids[0].cpu().tolist())
    return row, tokens


@exercise
def check_top_key(m: LoadedModel, answer: Any, layer: int = 0, head: int = 0, text: str | None = None) -> Feedback:
    """Which token does the first query row ([CLS]) of one head attend to most?

    Args:
        m: the running model.
        answer: the token as a string (e.g. ``"[SEP]"``) or its 0-based position.
        layer, head: 0-based indices of the head (default: layer 1, head 1).
        text: the query (default: the lesson's example).
    """
    text = _text(m, text)
    layer, head = m.check_layer(layer), m.check_head(head)
    row, tokens = _first_row(m, text, layer, head)
    best = int(row.argmax())
    where = _("layer {layer}, head {head} (code: layer={index}, head={head_index})").format(
        layer=layer + 1, head=head + 1, index=layer, head_index=head)
    if answer is None:
        return Feedback(False, _NOT_YET, None)
    if isinstance(answer, str):
        ok = answer.strip().lower() == tokens[best].lower()
        shown = repr(answer)
    elif isinstance(answer, int) and not isinstance(answer, bool):
        ok = answer == best
        shown = _("position {answer}").format(answer=answer)
    else:
        return Feedback(False, _("give a token string such as {example!r} or a 0-based position, "
                                 "got {kind}.").format(example=tokens[-1], kind=type(answer).__name__), None)
    if ok:
        return Feedback(True, _("in {where}, row 0 puts its largest weight, {weight:.2f}, "
                                "on {token!r} (position {best}).").format(
            where=where, weight=float(row[best]), token=tokens[best], best=best), tokens[best])
    return Feedback(False, _("{shown} is not the strongest key of row 0 in {where}. Plot the head and read "
                             "the first row: the brightest cell is the answer.").format(shown=shown, where=where),
                    None)


