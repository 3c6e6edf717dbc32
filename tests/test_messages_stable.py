"""The Chinese entries of the from-scratch modules, regrouping, argument checks, query sources,
manifests and the claims of lessons 01, 03, 04 and 10.

Each test runs with the Chinese catalogue as the package will see it: a temporary
locale folder whose ``attnlab.po`` is the package's catalogue (where there is one)
(the stable modules' entries were merged into it). Messages are found in the source with :mod:`ast`:
the literals passed to ``_()``, the claims of ``ClaimVerdict.decide/missing`` (also
through module-level constants and the ``CLAIMS`` table of lesson 01), and the
reasons of a "cannot tell" for missing evidence, which are stored in English and
translated when a verdict is shown.
"""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

from attnlab.core import language
from attnlab.core.checks import check_index, check_positive_int
from attnlab.core.language import _, read_po
from attnlab.course.claims import self_attention as lesson_01
from attnlab.course.claims.sensitivity import format_rows, summary
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, WORDS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attnlab"
LC = PACKAGE / "locale" / "zh" / "LC_MESSAGES"
CLAIM_MODULES = [PACKAGE / "course" / "claims" / f"{name}.py"
                 for name in ("self_attention", "recurrence", "multi_head", "head_count", "sensitivity")]
MODULES = CLAIM_MODULES + sorted((PACKAGE / "scratch").glob("*.py")) + [PACKAGE / "analysis" / "regroup.py"] \
    + sorted((PACKAGE / "data").glob("*.py")) \
    + [PACKAGE / "core" / f"{name}.py" for name in ("errors", "checks", "atomic", "manifest")]
HAN = re.compile(r"[\u4e00-\u9fff]")
ENGLISH_VERDICT = re.compile(r"\b(holds|does not hold|cannot tell)\b", re.IGNORECASE)


@pytest.fixture
def chinese(tmp_path, monkeypatch):
    """Chinese, from the package's catalogue with this part appended, for the duration of a test."""
    folder = tmp_path / "locale" / "zh" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    main = LC / "attnlab.po"
    text = main.read_text(encoding="utf-8") if main.exists() else ""
    (folder / "attnlab.po").write_text(text, encoding="utf-8")
    before = language.current_language()
    monkeypatch.setattr(language, "LOCALE_DIR", tmp_path / "locale")
    language.set_language("zh")
    yield
    monkeypatch.undo()
    language.set_language(before)


def _constants(tree: ast.Module) -> dict[str, str]:
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def _text(node: ast.AST | None, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _verdict_calls(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("decide", "missing") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "ClaimVerdict":
            yield node


def claims_and_reasons(path: Path) -> tuple[set[str], set[str]]:
    """The claim texts and the missing-evidence reasons a module's verdicts can carry."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = _constants(tree)
    claims, reasons = set(), set()
    for call in _verdict_calls(tree):
        claim = _text(call.args[0], constants) if call.args else None
        if claim:
            claims.add(claim)
        if call.func.attr == "missing" and len(call.args) > 1:
            reason = _text(call.args[1], constants)
            assert reason is not None or isinstance(call.args[1], ast.Name), \
                f"{path.name}:{call.lineno}: a missing-evidence reason must be a constant sentence"
            if reason:
                reasons.add(reason)
        for keyword in call.keywords:
            if keyword.arg == "missing":
                reason = _text(keyword.value, constants)
                assert reason, f"{path.name}:{call.lineno}: a missing-evidence reason must be a constant sentence"
                reasons.add(reason)
    return claims, reasons


def loop_reasons(path: Path) -> set[str]:
    """Reasons given through a loop variable: the ``why`` of ``for kind, why in ((..., "..."), ...)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple):
            for item in node.iter.elts:
                if isinstance(item, ast.Tuple) and item.elts and isinstance(item.elts[-1], ast.Constant):
                    value = item.elts[-1].value
                    if isinstance(value, str) and " " in value:
                        out.add(value)
    return out


def wrapped_messages(path: Path) -> set[str]:
    """The literals passed to ``_()`` in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)}


def _fields(text: str) -> list[str]:
    return sorted(f for _lit, f, _spec, _conv in string.Formatter().parse(text) if f is not None)


def _assert_translated(messages: set[str]) -> None:
    problems = []
    for msgid in sorted(messages):
        shown = _(msgid)
        if shown == msgid or not HAN.search(shown):
            problems.append(f"no Chinese entry: {msgid!r}")
        elif _fields(shown) != _fields(msgid):
            problems.append(f"placeholders differ: {msgid!r} {_fields(msgid)} -> {shown!r} {_fields(shown)}")
        else:
            shown.format(**{name: 1.5 for name in _fields(msgid)})  # a broken brace or spec raises here
    assert problems == [], "\n".join(problems)


# --------------------------------------------------------------------------- the source has what we expect


def test_the_scan_finds_the_claims_of_every_claims_module():
    claims = {p.stem: claims_and_reasons(p)[0] for p in CLAIM_MODULES}
    assert len(claims["recurrence"]) == 4 and len(claims["head_count"]) == 4 and len(claims["multi_head"]) == 1
    assert claims["sensitivity"] == set()  # it decides nothing itself
    # lesson 01 passes claim_pattern_head(shape); its table holds one constant sentence per shape
    assert set(lesson_01.CLAIMS) == set(lesson_01.SHAPES)
    assert all("{" not in c for c in lesson_01.CLAIMS.values())  # no number or name inside a claim


def test_lesson_01_claims_are_constant_sentences_and_unknown_shapes_are_refused():
    assert [lesson_01.claim_pattern_head(s) for s in lesson_01.SHAPES] == [
        "a head with a clear diagonal pattern exists for this query",
        "a head with a clear vertical pattern exists for this query",
        "a head with a clear band pattern exists for this query"]
    with pytest.raises(ValueError, match="shape must be one of"):
        lesson_01.claim_pattern_head("ring")


# --------------------------------------------------------------------------- the catalogue


def test_the_catalogue_names_each_message_once():
    text = (LC / "attnlab.po").read_text(encoding="utf-8")
    ids = [key for block in re.split(r"\n\s*\n", text) for key in read_po(block, untranslated=True) if key]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    assert len(ids) > 100


def test_every_claim_of_these_modules_has_a_chinese_translation(chinese):
    claims = set(lesson_01.CLAIMS.values())
    for path in CLAIM_MODULES:
        claims |= claims_and_reasons(path)[0]
    assert len(claims) == 12
    _assert_translated(claims)


def test_every_missing_evidence_reason_and_stored_word_has_a_chinese_translation(chinese):
    # besides the reasons: head_count's "design" when none is given, and the verdict words as stored,
    # which sensitivity tables show and a verdict's numbers can hold (the parts of lesson 10's row (A) claim)
    reasons = {"not given", *WORDS}
    for path in CLAIM_MODULES:
        reasons |= claims_and_reasons(path)[1] | loop_reasons(path)
    assert {"no lstm layer was measured", "no attention layer was measured"} <= reasons
    _assert_translated(reasons)


def test_every_wrapped_message_of_these_modules_has_a_chinese_translation(chinese):
    messages = set().union(*(wrapped_messages(p) for p in MODULES))
    assert len(messages) > 100
    messages -= {"token", "tokens"}  # a glossary term kept as it is (checked in the part file's test)
    _assert_translated(messages)


# --------------------------------------------------------------------------- what a reader sees


def _toy_rows() -> list[list]:
    return [["limit", "verdict"], [0.25, FAILS], [0.5, UNSURE], [1.0, HOLDS]]


def test_sensitivity_table_shows_the_verdict_words_in_chinese(chinese):
    text = format_rows(_toy_rows())
    assert ENGLISH_VERDICT.search(text) is None
    lines = text.splitlines()
    assert "判断" in lines[0] and "不成立" in lines[1] and "无法判断" in lines[2]
    assert lines[3].endswith("成立")
    assert summary(_toy_rows()) == "判断取决于阈值：3 种设置下分别为 不成立, 无法判断, 成立"
    assert summary([["limit", "verdict"], [0.5, HOLDS], [1.0, HOLDS]]) == "在全部 2 种设置下判断相同：成立"


def test_sensitivity_table_stays_english_by_default():
    assert language.current_language() == "en"
    text = format_rows(_toy_rows())
    assert text.splitlines()[0].split() == ["limit", "verdict"] and text.splitlines()[1].split() == [
        "0.25", "does", "not", "hold"]


def test_an_index_error_speaks_chinese_with_its_numbers(chinese):
    with pytest.raises(ValueError) as info:
        check_index(12, 12, "layer")
    assert str(info.value) == ("层的下标 12 超出范围：共有 12 个层，代码中编号为 0..11"
                               "（原文的“第 1 个层”就是下标 0）。")
    with pytest.raises(ValueError, match="^n_heads 至少为 1，收到的是 0$"):
        check_positive_int(0, "n_heads")


def test_an_index_error_is_unchanged_in_english():
    with pytest.raises(ValueError) as info:
        check_index(12, 12, "layer")
    assert str(info.value) == ("layer index 12 is out of range: there are 12 layers, numbered 0..11 in code "
                               "(the article's 'layer 1' is index 0).")
