"""Verdict and check cards: the deciding number found and drawn where it lies, every label in the
reader's language (no English key in the Chinese edition), the details folded away."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from attnlab.core import language
from attnlab.course import cards
from attnlab.course.checks import Check
from attnlab.course.verdicts import ClaimVerdict

PACKAGE = Path(__file__).resolve().parents[1] / "attnlab"
HAN = re.compile(r"[\u4e00-\u9fff]")
BUILDERS = {("ClaimVerdict", "decide"), ("ClaimVerdict", "missing"), ("Check", "of")}
#: helpers that decide the tests themselves and pass their other keyword arguments on as numbers
FORWARDERS = {"_below_cost_floor"}
NOT_NUMBERS = {"holds", "fails", "passed", "resampled"}  # the tests and the kept resamples, not numbers


def _key(node: ast.AST) -> str | None:
    """A literal key, or the literal inside ``N_("...")`` / ``_("...")``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("N_", "_") \
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def _is_builder(func: ast.AST) -> bool:
    if isinstance(func, ast.Name):
        return func.id in FORWARDERS
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
        and (func.value.id, func.attr) in BUILDERS


def number_keys() -> set[str]:
    """Every literal key a verdict's or check's numbers can have, read from the package's source: keyword
    arguments of ``ClaimVerdict.decide`` / ``missing`` and ``Check.of`` (and of any helper called with
    ``holds=`` and ``fails=``, and of the :data:`FORWARDERS`), the keys of dicts passed with
    ``**``, and the literal keys of dicts named ``numbers`` (assigned, updated or indexed)."""
    keys: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (_is_builder(node.func) or {"holds", "fails"} <= {
                    kw.arg for kw in node.keywords}):  # a builder, or a helper that passes its tests on
                for kw in node.keywords:
                    if kw.arg and kw.arg not in NOT_NUMBERS:
                        keys.add(kw.arg)
                    elif kw.arg is None and isinstance(kw.value, ast.Dict):
                        keys |= {k for k in map(_key, kw.value.keys) if k}
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                    isinstance(t, ast.Name) and t.id == "numbers" for t in node.targets):
                keys |= {k for k in map(_key, node.value.keys) if k}
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) \
                    and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "numbers":
                key = _key(node.targets[0].slice)
                if key:
                    keys.add(key)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "numbers" \
                    and node.args and isinstance(node.args[0], ast.Dict):
                keys |= {k for k in map(_key, node.args[0].keys) if k}
    return keys


def test_the_scan_finds_keys_of_each_kind():
    keys = number_keys()
    assert {"layer_index", "chance_level", "worst_relative_error", "change low", "most means more than",
            "its_low", "mean_map_cost"} <= keys and len(keys) > 150


def test_every_number_key_has_a_chinese_label(chinese):
    english = sorted(k for k in number_keys() if not HAN.search(cards.label(k)))
    assert english == [], f"number keys shown in English in the Chinese edition: {english}"


def test_labels_in_english_are_words_not_python_names():
    assert cards.label("layer_index") == "layer (0-based)"
    assert cards.label("fixed_share_low") == "share of fixed heads, low end"
    assert cards.label("some_new_key") == "some new key"


def test_the_deciding_number_is_found_in_each_form():
    d = cards.deciding({"estimate": 0.6, "low": 0.5, "high": 0.7, "most means more than": 0.5, "queries": 30})
    assert (d.key, d.estimate, d.low, d.high, d.thresholds) == ("estimate", 0.6, 0.5, 0.7, {"most means more than": 0.5})
    d = cards.deciding({"heads": 12, "change": -0.2, "change low": -0.3, "change high": -0.1, "margin": 0.05})
    assert (d.key, d.low, d.high, d.thresholds) == ("change", -0.3, -0.1, {"margin": 0.05})
    d = cards.deciding({"lstm_orders_of_magnitude_lost": 2.0, "its_low": 1.5, "its_high": 2.5, "factor": 10})
    assert (d.key, d.estimate, d.low, d.high, d.thresholds) == ("lstm_orders_of_magnitude_lost", 2.0, 1.5, 2.5, {})
    d = cards.deciding({"share": [0.4, 0.3, 0.5], "few": 0.1, "many": 0.6})
    assert (d.key, d.low, d.high, d.thresholds) == ("share", 0.3, 0.5, {"few": 0.1, "many": 0.6})
    d = cards.deciding({"score": 0.8, "threshold": 0.5, "chance_level": 0.2})
    assert (d.estimate, d.has_interval, d.nearest()) == (0.8, False, ("threshold", 0.5))
    assert cards.deciding({"heads": 12, "texts": 40}) is None
    assert cards.deciding({"score": float("nan"), "threshold": 0.5}) is None


def _x(svg: str, tag: str, attribute: str) -> list[float]:
    return [float(v) for v in re.findall(rf'<{tag} [^>]*?{attribute}="([-0-9.]+)"', svg)]


def test_the_figure_puts_the_interval_and_the_threshold_where_they_lie():
    d = cards.Decider("estimate", 0.6, 0.5, 0.7, {"threshold": 0.4})
    svg = cards.interval_svg(d, "#000", width=360)
    # by hand: values span 0.4..0.7, padded by 12% of 0.3 on each side; the axis runs from x=12 to x=348
    lo, hi = 0.4 - 0.036, 0.7 + 0.036
    at = lambda v: 12 + (v - lo) / (hi - lo) * 336  # noqa: E731
    assert _x(svg, "circle", "cx") == [pytest.approx(at(0.6), abs=0.06)]
    threshold_x, bar_start = _x(svg, "line", "x1")[1:3]
    assert threshold_x == pytest.approx(at(0.4), abs=0.06) and bar_start == pytest.approx(at(0.5), abs=0.06)
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched


def test_a_verdict_card_has_the_claim_the_coloured_word_the_figure_and_folded_details():
    v = ClaimVerdict.decide("Most heads <b>follow</b> a fixed pattern", holds=True, fails=False,
                            estimate=0.7, low=0.6, high=0.8, **{"most means more than": 0.5}, layer_index=3)
    page = v._repr_html_()
    assert "&lt;b&gt;follow&lt;/b&gt;" in page and "<b>" not in page  # escaped
    assert f"color:{cards.COLOURS['good']}" in page and ">HOLDS<" in page and "<svg" in page
    assert "<details" in page and "layer (0-based)" in page.split("<details")[1]
    assert "across 0.5" in v.what_would_change()
    unsure = ClaimVerdict.missing("Most heads follow a fixed pattern", "lesson 08 was not run")
    assert "lesson 08 was not run" in unsure._repr_html_() and cards.COLOURS["unsure"] in unsure._repr_html_()
    assert "<svg" not in unsure._repr_html_()
    failed = Check.of("rows sum to 1", passed=False, worst_relative_error=0.3, tolerance=0.1)
    page = failed._repr_html_()
    assert cards.COLOURS["bad"] in page and "FAILED" in page and "<svg" in page and "worst relative error" in page


def test_cards_speak_chinese_with_no_english_key(chinese):
    v = ClaimVerdict.decide("Most heads follow a fixed pattern", holds=False, fails=True, estimate=0.3, low=0.2,
                            high=0.4, **{"most means more than": 0.5}, layer_index=3, queries=40)
    c = Check.of("rows sum to 1", passed=True, worst_relative_error=0.02, tolerance=0.1)
    for shown in (v._repr_html_(), str(v), c._repr_html_(), str(c)):
        text = re.sub(r"<[^>]+>", " ", shown)
        assert not re.search(r"\b(estimate|low|high|layer_index|queries|worst_relative_error|tolerance|Details|"
                             r"Claim|Check|HOLDS|passed)\b", text), text
    assert "不成立" in v._repr_html_() and "论断：" in v._repr_html_() and "详细数字" in v._repr_html_()
    assert "越过" in v.what_would_change() or "另一侧" in v.what_would_change()
    assert language.current_language() == "zh"


def test_a_verdict_with_two_lines_draws_both():
    d = cards.deciding({"fixed_share": 0.6, "fixed_share_low": 0.52, "fixed_share_high": 0.68, "margin": 0.05,
                        "holds above": 0.55, "fails below": 0.45})
    assert (d.key, d.thresholds) == ("fixed_share", {"holds above": 0.55, "fails below": 0.45})
    assert d.nearest() == ("holds above", 0.55)


def test_values_are_shown_alike_whatever_their_number_type():
    import numpy as np

    assert cards.value_text(np.float32(0.123456)) == cards.value_text(0.123456) == "0.123"
    assert cards.value_text(np.int64(7)) == "7" and cards.value_text(True) == "True"
    assert cards.value_text({"fixed": 0.5, "heads": [1, 2.25]}) == "{fixed: 0.5, heads: [1, 2.25]}"


def test_a_key_made_from_a_template_labels_the_key_inside_it(chinese):
    from attnlab.core.language import N_

    key = N_("6a: {number}").format(number="permutation_p")
    assert cards.label(key) == "6a：置换检验 p 值"
    language.set_language("en")
    assert cards.label(key) == "6a: permutation p-value"
