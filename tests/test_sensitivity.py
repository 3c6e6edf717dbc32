"""The sensitivity table: a claim decided at several thresholds, as plain rows and text."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.course.claims import scaling
from attnlab.course.claims.sensitivity import format_rows, sensitivity_rows, summary, verdicts_seen
from attnlab.course.verdicts import ClaimVerdict, FAILS, HOLDS, UNSURE
from attnlab.scratch.scaling import ModelScalingStats


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
    stats = ModelScalingStats(head_dim=32, n_texts=4, grad_norm_scaled=[0.3, 0.2], grad_norm_unscaled=[0.1, 0.15],
                              grad_norm_change=[[-0.2, -0.25, -0.15, -0.2], [-0.1, -0.12, -0.09, -0.11]])

    def with_margin(s, margin=0.0):  # less gradient by more than margin in every layer
        shifted = ModelScalingStats(head_dim=32, n_texts=4, grad_norm_scaled=s.grad_norm_scaled,
                                    grad_norm_unscaled=s.grad_norm_unscaled,
                                    grad_norm_change=[[v + margin for v in t] for t in s.grad_norm_change])
        return scaling.verdict_model(shifted)

    rows = sensitivity_rows(with_margin, stats, {"margin": [0.0, 0.1, 0.3]},
                            numbers=["layers_with_less_gradient", "absent"])
    assert [r[1] for r in rows[1:]] == [HOLDS, UNSURE, FAILS]
    assert rows[1][2] == 2 and rows[1][3] is None  # a missing number is None
    same = sensitivity_rows(with_margin, stats, {"margin": [0.0, 0.05]})
    assert summary(same) == f"the verdict is the same at all 2 settings: {HOLDS}"


def test_a_check_fills_a_table_like_a_verdict():
    rows = sensitivity_rows(scaling.check_variance, ([16, 64], [16.2, 63.0]), {"tolerance": [0.01, 0.05]},
                            numbers=["worst_relative_error"])
    assert [r[1] for r in rows[1:]] == ["failed", "passed"] and rows[1][2] == pytest.approx(0.0156)


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


def test_a_table_measures_the_record_once_and_gives_the_verdicts_of_separate_calls(monkeypatch):
    """Conclusion 4a's table (lesson 12) judges one covering record under 27 threshold settings: inside the
    table each bootstrap interval is measured once, and every row is the verdict a separate call gives."""
    import itertools

    import lesson_records as rec  # tests/lesson_records.py
    from attnlab.analysis import covering, stats
    from attnlab.course.claims import conclusions as claims

    pruning = rec.pruning()
    grid = claims.SENSITIVITY["4a"]
    alone = [claims.conclusion_4a(pruning, **dict(zip(grid, values)))
             for values in itertools.product(*grid.values())]  # outside a table: every call measures
    calls = []
    counted = stats.bootstrap

    def counting(*args, **kwargs):
        calls.append(1)
        return counted(*args, **kwargs)

    monkeypatch.setattr(covering, "bootstrap", counting)
    claims.conclusion_4a(pruning)
    per_call = len(calls)
    calls.clear()
    rows = sensitivity_rows(claims.conclusion_4a, pruning, grid, numbers=["estimate", "top high"])
    assert len(rows) - 1 == len(alone) > 1 and per_call > 0
    assert len(calls) <= per_call  # 27 settings measured no more than one call alone (the first; the rest reused)
    assert [row[len(grid)] for row in rows[1:]] == [v.verdict for v in alone]


def test_outside_a_table_a_changed_record_is_measured_again():
    import lesson_records as rec  # tests/lesson_records.py
    from attnlab.analysis import covering, stats

    cov = rec.pruning().covering
    with stats.measurements_reused():
        first = covering.covering_ratio(cov)
        assert covering.covering_ratio(cov) is first  # reused inside the block
    cov.joint_norm = np.asarray(cov.joint_norm) * 2.0  # the sets together move twice as far
    again = covering.covering_ratio(cov)
    assert again is not first and float(again.estimate) == pytest.approx(2.0 * float(first.estimate))
