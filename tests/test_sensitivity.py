"""The sensitivity table: a claim decided at several thresholds, as plain rows and text."""

from __future__ import annotations

import pytest

from attnlab.analysis.stats import Interval
from attnlab.course.claims import scaling
from attnlab.course.claims.sensitivity import format_rows, sensitivity_rows, summary, verdicts_seen
from attnlab.course.verdicts import ClaimVerdict, FAILS, HOLDS, UNSURE


def at_most(value: float, limit: float = 1.0) -> ClaimVerdict:
    """A toy claim: ``value`` is at most ``limit``."""
    return ClaimVerdict.decide("toy", holds=value <= limit, fails=value > limit, value=value, limit=limit)


def test_one_threshold_gives_one_row_per_value_in_order():
    rows = sensitivity_rows(at_most, 0.5, {"limit": [0.25, 0.5, 1.0]}, numbers=["value"])
    assert rows == [["limit", "verdict", "value"], [0.25, FAILS, 0.5], [0.5, HOLDS, 0.5], [1.0, HOLDS, 0.5]]
    assert verdicts_seen(rows) == [FAILS, HOLDS]
    assert "depends on the threshold" in summary(rows)


def test_several_thresholds_give_every_combination():
    def between(value, low=0.0, high=1.0):
        return ClaimVerdict.decide("toy", holds=low < value < high, fails=not low < value < high)

    rows = sensitivity_rows(between, (0.5,), {"low": [0.0, 0.6], "high": [0.4, 1.0]})
    assert rows[0] == ["low", "high", "verdict"]
    assert [r[:2] for r in rows[1:]] == [[0.0, 0.4], [0.0, 1.0], [0.6, 0.4], [0.6, 1.0]]
    assert [r[2] for r in rows[1:]] == [FAILS, HOLDS, FAILS, FAILS]


def test_a_real_claim_with_intervals_and_the_same_verdict_everywhere():
    measured = [Interval(16.2, 15.9, 16.5), Interval(63.0, 62.0, 64.4)]
    rows = sensitivity_rows(scaling.verdict_variance, ([16, 64], measured), {"tolerance": [0.01, 0.05, 0.1]},
                            numbers=["worst_relative_error", "absent"])
    assert [r[1] for r in rows[1:]] == [UNSURE, HOLDS, HOLDS]
    assert rows[1][2] == pytest.approx(0.0156) and rows[1][3] is None  # rounded; a missing number is None
    same = sensitivity_rows(scaling.verdict_variance, ([16, 64], measured), {"tolerance": [0.05, 0.1]})
    assert summary(same) == f"the verdict is the same at all 2 settings: {HOLDS}"


def test_format_rows_aligns_columns():
    text = format_rows([["limit", "verdict"], [0.25, FAILS], [1.0, HOLDS], [None, UNSURE]])
    lines = text.splitlines()
    assert len(lines) == 4 and len({len(line) for line in lines}) == 1  # every line padded to one width
    assert lines[1].startswith("0.25 ") and lines[1].endswith(FAILS) and lines[3].startswith("-")


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        sensitivity_rows(at_most, 0.5, {})
    with pytest.raises(ValueError):
        sensitivity_rows(at_most, 0.5, {"limit": []})
    with pytest.raises(TypeError):
        sensitivity_rows(at_most, 0.5, {"no_such_threshold": [1.0]})
