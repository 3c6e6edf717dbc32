"""Lesson 05 checkers: right answers pass, wrong ones fail, None says "not yet"."""

from __future__ import annotations

from collections import Counter

import pytest

import attnlab as al
from attnlab.course.exercises import lesson_05 as ex
from attnlab.analysis.taxonomy import LABELS, classify_heads, default_survey
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol05 = teacher("05")

pytestmark = pytest.mark.usefixtures("attempts_folder")  # attempts are saved in a folder of the test's own


@pytest.fixture(autouse=True)
def smoke(monkeypatch):
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")


def test_survey_is_cached(tiny_en):
    assert default_survey(tiny_en) is default_survey(tiny_en)


def test_head_label(tiny_en, capsys):
    layer, head = ex.quiz_head(tiny_en, seed=3)
    printed = capsys.readouterr().out
    assert f"layer {layer + 1}, head {head + 1}" in printed and "self_mass" in printed
    truth = classify_heads(default_survey(tiny_en))[layer, head]
    assert truth not in printed  # the quiz does not give the answer away
    assert ex.check_head_label(tiny_en, truth, layer, head).correct
    assert ex.check_head_label(tiny_en, truth.upper(), layer, head).correct
    wrong = next(name for name in LABELS if name != truth)
    v = ex.check_head_label(tiny_en, wrong, layer, head)
    assert not v.correct and v.expected is None
    assert "not yet" in str(ex.check_head_label(tiny_en, None, layer, head))
    assert "one of" in str(ex.check_head_label(tiny_en, "diagonal-ish", layer, head))
    assert sol05.solution_head_label(tiny_en, layer, head)[0] == truth
    with pytest.raises(ValueError):
        ex.check_head_label(tiny_en, truth, 9, 0)


def test_cls_mass(tiny_en):
    att = al.attention(tiny_en, [al.example_for(tiny_en)])
    n = att.lengths[0]
    expected = float(att.tensor[0, 1, 4, :n, 0].sum() / n)  # [CLS] is position 0
    assert ex.check_cls_mass(tiny_en, expected, 1, 4).correct
    assert not ex.check_cls_mass(tiny_en, expected + 0.05, 1, 4).correct
    assert not ex.check_cls_mass(tiny_en, "a lot", 1, 4).correct
    assert "not yet" in str(ex.check_cls_mass(tiny_en, None, 1, 4))


def test_layer_majority(tiny_en):
    labels = classify_heads(default_survey(tiny_en)).labels
    counts = Counter(labels[0].tolist())
    best = counts.most_common(1)[0][0]
    assert ex.check_layer_majority(tiny_en, best, 0).correct
    absent = [name for name in LABELS if counts.get(name, 0) < counts[best]]
    assert not ex.check_layer_majority(tiny_en, absent[0], 0).correct
    assert "not yet" in str(ex.check_layer_majority(tiny_en, None, 0))
    assert best in sol05.solution_layer_majority(tiny_en, 0)
