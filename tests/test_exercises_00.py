"""Lesson 00 exercises: each checker accepts the worked solution and rejects plausible mistakes."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.course.exercises import lesson_00 as ex
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol00 = teacher("00")

pytestmark = pytest.mark.usefixtures("attempts_folder")  # attempts are saved in a folder of the test's own


def test_total_heads(each_model):
    solution = sol00.solution_total_heads(each_model)
    assert solution == each_model.n_layers * each_model.n_heads
    assert ex.check_total_heads(each_model, solution).correct
    assert ex.check_total_heads(each_model, (each_model.n_layers, each_model.n_heads)).correct
    wrong = ex.check_total_heads(each_model, each_model.n_heads)  # heads of one layer only
    assert not wrong.correct and "ONE layer" in wrong.message
    assert not ex.check_total_heads(each_model, (each_model.n_heads, each_model.n_layers + 1)).correct
    assert not ex.check_total_heads(each_model, "many").correct


def test_total_heads_of_the_bundled_model_is_72(bundled):
    assert ex.check_total_heads(bundled, 72).correct  # 6 layers x 12 heads, from its config


def test_token_count(each_model):
    solution = sol00.solution_token_count(each_model)
    assert ex.check_token_count(each_model, solution).correct
    without_specials = ex.check_token_count(each_model, solution - 2)
    assert not without_specials.correct and "special tokens" in without_specials.message


def test_token_count_known_values(bundled, tiny_zh):
    # [CLS] how do you play chess [SEP]
    assert ex.check_token_count(bundled, 7).correct
    # [CLS] 王 者 荣 耀 怎 么 玩 [SEP]: one token per character
    assert ex.check_token_count(tiny_zh, 9).correct
    assert not ex.check_token_count(tiny_zh, 4).correct  # words, not tokens


def _hand_first_row(m, text: str, head: int) -> torch.Tensor:
    """Row 0 of layer 0's map for ``head``, written out: softmax(q k^T / sqrt(d)) on the embeddings."""
    enc = m.tokenizer(text, return_tensors="pt")
    parts = m.layer_parts()[0]
    with torch.no_grad():
        x = m.model.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])  # (1, n, d)
        d = m.head_dim
        q = parts.query(x)[0, :, head * d:(head + 1) * d]  # (n, d)
        k = parts.key(x)[0, :, head * d:(head + 1) * d]    # (n, d)
        scores = q[0] @ k.T / math.sqrt(d)                  # (n,)
    return torch.softmax(scores, dim=-1)


@pytest.mark.parametrize("fixture", ["tiny_en", "bundled"])
def test_top_key_matches_a_hand_computation(fixture, request):
    m = request.getfixturevalue(fixture)
    text = "how do you play chess"
    tokens = m.tokenizer.convert_ids_to_tokens(m.tokenizer(text)["input_ids"])
    for head in (0, 5):
        row = _hand_first_row(m, text, head)
        best = int(row.argmax())
        assert ex.check_top_key(m, tokens[best], layer=0, head=head).correct
        assert ex.check_top_key(m, best, layer=0, head=head).correct
        assert sol00.solution_top_key(m, layer=0, head=head) == tokens[best]
        runner_up = int(row.argsort(descending=True)[1])
        if tokens[runner_up] != tokens[best]:
            assert not ex.check_top_key(m, tokens[runner_up], layer=0, head=head).correct
        assert not ex.check_top_key(m, runner_up, layer=0, head=head).correct


def test_top_key_solution_in_later_layers(each_model):
    layer, head = each_model.n_layers - 1, each_model.n_heads - 1
    solution = sol00.solution_top_key(each_model, layer=layer, head=head)
    verdict = ex.check_top_key(each_model, solution, layer=layer, head=head)
    assert verdict.correct and f"layer {layer + 1}, head {head + 1}" in verdict.message


def test_top_key_bad_indices_are_clear(tiny_en):
    with pytest.raises(ValueError, match="out of range"):
        ex.check_top_key(tiny_en, "[CLS]", layer=tiny_en.n_layers)
    assert not ex.check_top_key(tiny_en, 1.5).correct


@pytest.mark.parametrize("checker", [ex.check_total_heads, ex.check_token_count, ex.check_top_key])
def test_none_means_not_yet(checker, tiny_en):
    verdict = checker(tiny_en, None)
    assert not verdict.correct and "replace None" in verdict.message
    assert str(verdict).startswith("❌ not yet")
