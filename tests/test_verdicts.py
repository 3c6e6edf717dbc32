"""One verdict type, built one way, with its words defined once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, WORDS, ClaimVerdict, combine, from_tests

PACKAGE = Path(__file__).resolve().parents[1] / "attnlab"


def test_decide_gives_each_word_from_the_tests():
    assert ClaimVerdict.decide("c", holds=True, fails=False, x=1.0).verdict == HOLDS
    assert ClaimVerdict.decide("c", holds=False, fails=True).verdict == FAILS
    assert ClaimVerdict.decide("c", holds=False, fails=False).verdict == UNSURE
    with pytest.raises(ValueError, match="both"):
        from_tests(True, True)
    with pytest.raises(ValueError):
        ClaimVerdict("c", "holds in part", {})
    assert ClaimVerdict.missing("c", "lesson 08 was not run").numbers == {"missing": "lesson 08 was not run"}


def test_combine_needs_every_part():
    assert combine([HOLDS, HOLDS]) == HOLDS
    assert combine([HOLDS, UNSURE]) == UNSURE
    assert combine([UNSURE, FAILS, HOLDS]) == FAILS
    assert combine([]) == UNSURE
    with pytest.raises(ValueError):
        combine(["maybe"])


def test_a_verdict_survives_a_round_trip_through_its_record():
    v = ClaimVerdict.decide("c", holds=True, fails=False, slope=-0.25, heads=[1, 2])
    back = ClaimVerdict.from_record(v.to_record())
    assert back == v and "HOLDS" in str(back)


def _string_constants(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_verdict_words_are_typed_only_in_the_verdicts_module():
    typed = [
        f"{path.relative_to(PACKAGE.parent)}:{line} {value!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "verdicts.py"
        for line, value in _string_constants(path)
        if value in WORDS
    ]
    assert not typed, "use HOLDS / FAILS / UNSURE from attnlab.course.verdicts:\n" + "\n".join(typed)



def test_a_verdict_prints_in_chinese_and_its_record_stays_english(chinese):
    from attnlab.course.verdicts import shown

    v = ClaimVerdict.decide("more heads is not always better", holds=False, fails=True, slope=0.25)
    text = str(v)
    assert "头并不是越多越好" in text and "不成立" in text and "slope = 0.25" in text
    assert "Claim" not in text and "HOLD" not in text
    assert v.to_record() == {"claim": "more heads is not always better", "verdict": FAILS,
                             "numbers": {"slope": 0.25}}
    assert [shown(w) for w in WORDS] == ["成立", "不成立", "无法判断"]


def test_an_untranslated_claim_prints_as_written(chinese):
    v = ClaimVerdict.decide("a claim nobody translated", holds=False, fails=False)
    assert "a claim nobody translated" in str(v) and "无法判断" in str(v)


def test_verdict_words_are_read_back_in_either_language(chinese):
    from attnlab.course.verdicts import word_from

    assert [word_from(t) for t in ("成立", " 不成立 ", "无法判断", "Holds", "CANNOT TELL")] == \
        [HOLDS, FAILS, UNSURE, HOLDS, UNSURE]
    assert word_from("maybe") == "maybe"
