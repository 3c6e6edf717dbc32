"""Exercise checkers of lesson 13: right answers pass, wrong ones and None do not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.analysis.faithfulness import VIEWS, scoreboard
from attnlab.analysis.mean_map_replacement import TogetherCurves
from attnlab.analysis.sinks import sink_profile
from attnlab.course.exercises import lesson_13 as ex13
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol13 = teacher("13")

pytestmark = pytest.mark.usefixtures("attempts_folder")  # attempts are saved in a folder of the test's own

TEXT = "how do you play chess ?"


def test_norm_contribution(tiny_en):
    inputs = tiny_en.encode([TEXT])
    with torch.no_grad():
        run = tiny_en.model(**inputs, output_hidden_states=True, output_attentions=True)
    parts = tiny_en.layer_parts()[1]
    h, i, j, dh = 5, 2, 0, tiny_en.head_dim
    cols = slice(h * dh, (h + 1) * dh)
    with torch.no_grad():
        v = parts.value(run.hidden_states[1])[0, j, cols]  # (dh,)
        f = parts.output.weight[:, cols] @ v  # (d,)
    truth = float(run.attentions[1][0, h, i, j] * f.norm())
    assert ex13.check_norm_contribution(tiny_en, truth, TEXT, layer=1, head=h, i=i, j=j)
    assert not ex13.check_norm_contribution(tiny_en, truth * 1.1, TEXT, layer=1, head=h, i=i, j=j)
    assert not ex13.check_norm_contribution(tiny_en, float(run.attentions[1][0, h, i, j]), TEXT, 1, h, i, j)
    assert "not yet" in str(ex13.check_norm_contribution(tiny_en, None, TEXT, 1, h, i, j))
    with pytest.raises(ValueError):
        ex13.check_norm_contribution(tiny_en, 0.1, TEXT, 1, h, i, 99)


def test_rollout_two_layers(tiny_en):
    maps = al.attention(tiny_en, [TEXT])[0]  # (L, H, n, n)
    eye = torch.eye(maps.shape[-1])
    steps = [0.5 * maps[l].mean(0) + 0.5 * eye for l in range(2)]
    steps = [s / s.sum(-1, keepdim=True) for s in steps]
    right = (steps[1] @ steps[0]).numpy()
    assert ex13.check_rollout_two_layers(tiny_en, right, TEXT)
    wrong = ex13.check_rollout_two_layers(tiny_en, (steps[0] @ steps[1]).numpy(), TEXT)
    assert not wrong and "other order" in wrong.message
    assert not ex13.check_rollout_two_layers(tiny_en, (maps[1].mean(0) @ maps[0].mean(0)).numpy(), TEXT)
    assert not ex13.check_rollout_two_layers(tiny_en, None, TEXT)


def test_sink_layer(tiny_en):
    profile = sink_profile(tiny_en, ["how do you play chess", "what is the best game"])
    truth = int(profile.special("raw").mean(axis=0).argmax())
    assert ex13.check_sink_layer(tiny_en, truth, profile)
    assert ex13.check_sink_layer(tiny_en, np.int64(truth), profile)
    wrong = ex13.check_sink_layer(tiny_en, truth + 1, profile)
    assert not wrong and "1-based" in wrong.message
    assert not ex13.check_sink_layer(tiny_en, None, profile)
    assert sol13.solution_sink_layer(tiny_en, profile) == truth


def test_best_view(tiny_en):
    board = scoreboard(tiny_en, ["how do you play chess ?", "what is the best way to learn the rules",
                                 "good game of chess for you"])
    means = {v: float(np.mean(board.rho["masked"][v])) for v in VIEWS}
    truth = max(means, key=means.get)
    assert ex13.check_best_view(tiny_en, truth, board)
    deleted = {v: float(np.mean(board.rho["deleted"][v])) for v in VIEWS}
    assert ex13.check_best_view(tiny_en, max(deleted, key=deleted.get), board, truth="deleted")
    other = next(v for v in VIEWS if v != truth)
    assert not ex13.check_best_view(tiny_en, other, board)
    assert "answer one of" in str(ex13.check_best_view(tiny_en, "gradient", board))
    assert not ex13.check_best_view(tiny_en, None, board)


def test_replaceable_fraction():
    fractions = np.linspace(0, 1, 5)
    curve = np.array([[0.0, 0.001, 0.002, 0.05, 0.1], [0.0, 0.003, 0.004, 0.07, 0.1]])  # (texts, fractions)
    together = TogetherCurves(layers=[0], fractions=fractions, counts=np.arange(5), fixed_first=curve,
                              reverse=curve, random=curve[None], reference=np.array([0.2, 0.2]))
    # tolerance 0.05 * 0.2 = 0.01; the mean curve first passes it at fraction 0.75
    assert ex13.check_replaceable_fraction(None, 0.5, together)
    wrong = ex13.check_replaceable_fraction(None, 0.75, together)
    assert not wrong and "one before" in wrong.message
    assert not ex13.check_replaceable_fraction(None, 1.0, together)
    assert not ex13.check_replaceable_fraction(None, None, together)
    assert sol13.solution_replaceable_fraction(None, together) == 0.5
