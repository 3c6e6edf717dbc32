"""Build-it-yourself checkers (lessons 01 and 04): the teacher's solutions and a student's own code pass,
the package's own functions do not (the exercise asks for them); each usual mistake fails with its own
message; the placeholder is "not yet written", not an attempt."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.course import attempts
from attnlab.course.exercises import build_it, lesson_01, lesson_04
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol01 = teacher("01")
sol04 = teacher("04")

pytestmark = pytest.mark.usefixtures("attempts_folder")


def _attention(scale=lambda d: 1 / math.sqrt(d), dim=-1, use_mask=True, keys_first=False):
    """A student's attention with one thing changed (written out here, not taken from the package)."""
    def attend(q, k, v, mask=None):
        scores = (k @ q.transpose(-2, -1) if keys_first else q @ k.transpose(-2, -1)) * scale(q.shape[-1])
        if mask is not None and use_mask:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=dim)
        return (weights @ v if not keys_first else weights.transpose(-2, -1) @ v), weights
    return attend


def placeholder(q, k, v, mask=None):
    raise NotImplementedError


def test_build_it_yourself_attention_passes_the_teachers_solution():
    for fn in (sol01.solution_attention, _attention()):
        feedback = lesson_01.check_attention(None, fn)
        assert feedback, str(feedback)
        assert "passes every test" in str(feedback)


@pytest.mark.parametrize("wrong, words", [
    (_attention(scale=lambda d: 1.0), "no scale"),
    (_attention(scale=lambda d: 1 / d), "divided by d_k"),
    (_attention(dim=-2), "sum to 1"),
    (_attention(use_mask=False), "hidden by the mask"),
    (_attention(keys_first=True), "keys and queries are swapped"),
    (lambda q, k, v, mask=None: (v, q), "shape (..., T_q, T_k)"),
    (lambda q, k, v: _attention()(q, k, v), "fourth argument, mask"),
    (lambda q, k, v, mask=None: 1 / 0, "ZeroDivisionError"),
])
def test_build_it_yourself_attention_names_each_mistake(wrong, words):
    feedback = lesson_01.check_attention(None, wrong)
    assert not feedback and words in str(feedback), str(feedback)


def test_build_it_yourself_each_attention_mistake_has_its_own_message():
    wrong = [_attention(scale=lambda d: 1.0), _attention(dim=-2), _attention(use_mask=False),
             _attention(keys_first=True)]
    messages = {build_it.attention_problem(fn) for fn in wrong}
    assert len(messages) == len(wrong) and None not in messages


def _split(order):
    def split(x, n_heads):
        B, T, d = x.shape
        if order == "no transpose":  # reshaped straight to (B, H, T, d_h)
            return x.reshape(B, n_heads, T, d // n_heads)
        if order == "interleaved":  # heads cut from the wrong axis: every H-th feature
            return x.reshape(B, T, d // n_heads, n_heads).permute(0, 3, 1, 2)
        if order == "not swapped":  # (B, T, H, d_h)
            return x.reshape(B, T, n_heads, d // n_heads)
        return x.reshape(B, T, n_heads, d // n_heads).transpose(1, 2)
    return split


def _merge_without_transpose(x):
    B, H, T, d_h = x.shape
    return x.reshape(B, T, H * d_h)


def _merge(x):
    """A student's own merge (written out here, not taken from the package)."""
    B, H, T, d_h = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d_h)


def test_build_it_yourself_split_and_merge_pass_the_teachers_solution(tiny_en):
    for pair in ((sol04.solution_split_heads, sol04.solution_merge_heads), (_split("right"), _merge)):
        assert lesson_04.check_split_and_merge(None, pair), str(lesson_04.check_split_and_merge(None, pair))
    feedback = lesson_04.check_split_and_merge(tiny_en, (_split("right"), _merge))  # the model's width and heads
    assert feedback and "pass every test" in str(feedback)


@pytest.mark.parametrize("pair, words", [
    ((_split("no transpose"), _merge), "wrong transpose: "),
    ((_split("interleaved"), _merge), "wrong split"),
    ((_split("not swapped"), _merge), "still sit after the tokens"),
    ((_split("right"), _merge_without_transpose), "wrong transpose in merge"),
    ((_split("right"), lambda x: x.sum(1)), "merge should give"),
    ((lambda x, n: _split("right")(x, 4), _merge), "one head"),
])
def test_build_it_yourself_split_and_merge_name_each_mistake(pair, words):
    feedback = lesson_04.check_split_and_merge(None, pair)
    assert not feedback and words in str(feedback), str(feedback)


def test_build_it_yourself_placeholder_is_not_yet_written_and_not_an_attempt(attempts_folder):
    for feedback in (lesson_01.check_attention(None, placeholder),
                     lesson_01.check_attention(None, lambda q, k, v, mask=None: ...),
                     lesson_04.check_split_and_merge(None, (lambda x, n: ..., _merge))):
        assert not feedback and "not yet written" in str(feedback)
    assert not (attempts_folder / "exercises").exists()
    lesson_01.check_attention(None, _attention(scale=lambda d: 1.0))
    saved = attempts.read("01.attention")
    assert [(a["attempt"], a["right"], a["answer"]) for a in saved] == [(1, False, "<function attend>")]


def test_build_it_yourself_never_shows_a_worked_solution():
    """The worked solutions live in the teacher's source folder: not even the teacher's switch prints one."""
    wrong = _attention(scale=lambda d: 1.0)
    attempts.show_solutions(True)
    shown = str(lesson_01.check_attention(None, wrong))
    assert not lesson_01.check_attention(None, wrong)
    assert "def " not in shown and "masked_fill" not in shown
