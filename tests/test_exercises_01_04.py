"""Each checker of lessons 01-04 accepts its worked solution, rejects a
plausible wrong answer, and says "not yet" (without crashing) for None."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from attnlab.course.exercises import lesson_01, lesson_02, lesson_03, lesson_04
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol01 = teacher("01")
sol02 = teacher("02")
sol03 = teacher("03")
sol04 = teacher("04")

pytestmark = pytest.mark.usefixtures("attempts_folder")  # attempts are saved in a folder of the test's own


def _not_yet(verdict):
    assert not verdict and str(verdict).startswith("❌ not yet")


# --------------------------------------------------------------------------- lesson 01


def test_tiny_weight_by_hand():
    # row 0's scaled scores are 1, 2.5, 1.5 (see the lesson): written out independently here
    by_hand = math.exp(2.5) / (math.exp(1.0) + math.exp(2.5) + math.exp(1.5))
    assert sol01.solution_tiny_weight(None, 0, 1) == pytest.approx(by_hand)
    assert lesson_01.check_tiny_weight(None, sol01.solution_tiny_weight(None, 0, 1))
    assert not lesson_01.check_tiny_weight(None, 1 / 3)  # forgot the scores: uniform
    unscaled = math.exp(5) / (math.exp(2) + math.exp(5) + math.exp(3))  # forgot / sqrt(d_k)
    assert not lesson_01.check_tiny_weight(None, unscaled)
    _not_yet(lesson_01.check_tiny_weight(None, None))
    with pytest.raises(ValueError):
        lesson_01.check_tiny_weight(None, 0.5, row=3)
    with pytest.raises(TypeError):
        lesson_01.check_tiny_weight(None, 0.5, row=True)  # a bool is not a token index
    # numpy indices (from argmax) are indices like any other
    assert sol01.solution_tiny_weight(None, np.int64(0), np.int64(1)) == pytest.approx(by_hand)


def test_strongest_key_and_diagonal_head(each_model):
    good = sol01.solution_strongest_key(each_model, layer=0, head=2, query=1)
    assert lesson_01.check_strongest_key(each_model, good, layer=0, head=2, query=1)
    import attnlab as al

    att = al.attention(each_model, [al.example_for(each_model)])
    row = att.head(0, 0, 2)[1]
    weakest = att.tokens[0][int(row.argmin())]
    if weakest != good:
        assert not lesson_01.check_strongest_key(each_model, weakest, layer=0, head=2, query=1)
    _not_yet(lesson_01.check_strongest_key(each_model, None))

    best = sol01.solution_diagonal_head(each_model)
    assert lesson_01.check_diagonal_head(each_model, best)
    diag = att[0].diagonal(dim1=-2, dim2=-1).mean(-1)  # (L, H)
    worst = divmod(int(diag.argmin()), diag.shape[1])
    assert not lesson_01.check_diagonal_head(each_model, worst)
    # 1-based answer for the 0-based question is wrong unless it happens to coincide
    one_based = (best[0] + 1, best[1] + 1)
    if one_based[0] < each_model.n_layers:
        assert not lesson_01.check_diagonal_head(each_model, one_based)
    _not_yet(lesson_01.check_diagonal_head(each_model, None))
    assert not lesson_01.check_diagonal_head(each_model, "layer one")


# --------------------------------------------------------------------------- lesson 02


def test_lesson_02(tiny_en, bundled):
    assert lesson_02.check_qk_variance(tiny_en, sol02.solution_qk_variance(tiny_en, 128), d_k=128)
    assert not lesson_02.check_qk_variance(tiny_en, math.sqrt(128), d_k=128)  # the std, not the variance
    assert not lesson_02.check_qk_variance(tiny_en, 1.0, d_k=128)
    _not_yet(lesson_02.check_qk_variance(tiny_en, None))
    for m in (tiny_en, bundled):
        assert lesson_02.check_scale_factor(m, sol02.solution_scale_factor(m))
        assert not lesson_02.check_scale_factor(m, m.head_dim)  # forgot the square root
        assert not lesson_02.check_scale_factor(m, math.sqrt(m.hidden_size))  # whole width, not one head
    assert lesson_02.check_scale_factor(bundled, math.sqrt(32))
    assert lesson_02.check_saturation_direction(tiny_en, sol02.solution_saturation_direction())
    assert sol02.solution_saturation_direction() == "rise"
    assert not lesson_02.check_saturation_direction(tiny_en, "fall")
    _not_yet(lesson_02.check_saturation_direction(tiny_en, None))


# --------------------------------------------------------------------------- lesson 03


def test_lesson_03(each_model):
    n = len(each_model.tokenizer(__import__("attnlab").example_for(each_model))["input_ids"])
    assert lesson_03.example_length(each_model) == n
    for kind in ("lstm", "attention"):
        assert lesson_03.check_path_length(each_model, sol03.solution_path_length(each_model, kind), kind)
        assert lesson_03.check_sequential_steps(each_model, sol03.solution_sequential_steps(each_model, kind), kind)
    assert sol03.solution_path_length(each_model, "lstm") == n - 1
    assert not lesson_03.check_path_length(each_model, n - 1, "attention")
    assert not lesson_03.check_sequential_steps(each_model, 1, "lstm")
    assert lesson_03.check_attention_entries(each_model, each_model.n_heads * n * n)
    assert not lesson_03.check_attention_entries(each_model, n * n)  # forgot the heads
    _not_yet(lesson_03.check_attention_entries(each_model, None))


# --------------------------------------------------------------------------- lesson 04


def test_lesson_04(each_model):
    assert lesson_04.check_head_width(each_model, sol04.solution_head_width(each_model))
    assert not lesson_04.check_head_width(each_model, each_model.hidden_size)
    _not_yet(lesson_04.check_head_width(each_model, None))
    # the shape must be what split_heads really gives for the example
    from attnlab.scratch.self_attention import hidden_states, split_heads
    import attnlab as al

    hs, _, _ = hidden_states(each_model, [al.example_for(each_model)])
    with torch.no_grad():
        real = tuple(split_heads(each_model.layer_parts()[0].query(hs[0]), each_model.n_heads).shape)
    assert sol04.solution_split_shape(each_model) == real
    assert lesson_04.check_split_shape(each_model, real)
    b, h, t, d = real
    assert not lesson_04.check_split_shape(each_model, (b, t, h, d))  # heads and tokens swapped
    _not_yet(lesson_04.check_split_shape(each_model, None))
    assert lesson_04.check_head_slice(each_model, sol04.solution_head_slice(each_model, 6), head=6)
    one_based = (7 * each_model.head_dim, 8 * each_model.head_dim)  # 0-based head 7's slice: a 1-based slip
    assert not lesson_04.check_head_slice(each_model, one_based, head=6)
    _not_yet(lesson_04.check_head_slice(each_model, None))


# --------------------------------------------------------------------------- attempts and hints


def test_a_wrong_answer_gets_a_hint_and_the_value_only_at_the_third_attempt(attempts_folder):
    from attnlab.course import attempts

    expected = sol01.solution_tiny_weight(None, 1, 2)
    shown = f"{expected:.4g}"
    first = lesson_01.check_tiny_weight(None, 0.1, row=1, col=2)
    second = lesson_01.check_tiny_weight(None, 0.9, row=1, col=2)
    assert not first and not second
    assert shown not in str(first) and shown not in str(second)
    assert "too low" in str(first) and "too high" in str(second) and "softmax" in str(first)  # a hint
    third = lesson_01.check_tiny_weight(None, 0.2, row=1, col=2)
    assert shown in str(third)
    right = lesson_01.check_tiny_weight(None, expected, row=1, col=2)
    assert right
    lesson_01.check_tiny_weight(None, None)  # the placeholder is not an attempt
    saved = json.loads((attempts_folder / "exercises" / "01.tiny_weight.json").read_text(encoding="utf-8"))
    assert saved["kind"] == attempts.KIND and saved["exercise"] == "01.tiny_weight"
    assert [a["attempt"] for a in saved["attempts"]] == [1, 2, 3, 4]
    assert [a["answer"] for a in saved["attempts"]] == [0.1, 0.9, 0.2, pytest.approx(expected)]
    assert [a["right"] for a in saved["attempts"]] == [False, False, False, True]
    assert all(a["time"].endswith("Z") for a in saved["attempts"])


def test_the_teachers_solutions_show_the_value_at_once(attempts_folder, monkeypatch, tiny_en):
    from attnlab.course import attempts

    monkeypatch.setenv(attempts.SOLUTIONS_ENV, "1")
    feedback = lesson_04.check_head_width(tiny_en, tiny_en.head_dim + 1)
    assert not feedback and f"{tiny_en.head_dim}" in feedback.shown_answer
    attempts.show_solutions(False)  # the function overrides the environment
    assert lesson_04.check_head_width(tiny_en, tiny_en.head_dim + 1).shown_answer.startswith("(attempt 2")
    saved = json.loads((attempts_folder / "exercises" / "04.head_width.json").read_text(encoding="utf-8"))
    assert {a["model"] for a in saved["attempts"]} == {tiny_en.name}


def test_a_damaged_attempts_file_is_kept_aside_and_a_new_one_started(attempts_folder):
    folder = attempts_folder / "exercises"
    folder.mkdir(parents=True)
    (folder / "01.tiny_weight.json").write_text("{not json", encoding="utf-8")
    with pytest.warns(UserWarning, match="damaged"):
        lesson_01.check_tiny_weight(None, 0.5)
    kept = [p for p in folder.iterdir() if ".damaged-" in p.name]
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == "{not json"
    saved = json.loads((folder / "01.tiny_weight.json").read_text(encoding="utf-8"))
    assert [a["attempt"] for a in saved["attempts"]] == [1]


def test_an_unwritable_results_folder_warns_and_the_check_still_answers(attempts_folder):
    attempts_folder.mkdir(parents=True)
    (attempts_folder / "exercises").write_text("a file where the folder should be", encoding="utf-8")
    with pytest.warns(UserWarning, match="could not be saved"):
        feedback = lesson_01.check_tiny_weight(None, sol01.solution_tiny_weight(None))
    assert feedback
