"""Lesson 11's claim, judged on constructed pruning studies whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.pruning import PruningStudy
from attnlab.course.claims.pruning import (
    MICHEL_BERT_FRACTION,
    prunable_together,
    removable_alone,
    verdict_some_heads_prunable,
)
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE


def _study(n_prunable: int | None, grid: float = 0.0) -> PruningStudy:
    """10 heads, ``n_prunable`` of them prunable together (None: only the 10% grid is known)."""
    return PruningStudy(np.array([0.0, 0.1]), np.zeros((2, 5)), {}, 1.0,
                        {"importance": grid, "random": 0.0, "reverse": 0.0}, 0.01, "test", [], n_prunable)


def test_some_heads_prunable_can_hold():
    v = verdict_some_heads_prunable(_study(3))
    assert v.verdict == HOLDS and v.numbers["prunable together (importance order)"] == pytest.approx(0.3)
    assert v.numbers["Michel et al. BERT"] == MICHEL_BERT_FRACTION
    assert verdict_some_heads_prunable(_study(1)).verdict == HOLDS  # exactly 10%
    assert verdict_some_heads_prunable(_study(None, grid=0.2)).verdict == HOLDS  # the grid alone


def test_some_heads_prunable_can_fail():
    assert verdict_some_heads_prunable(_study(0)).verdict == FAILS
    none_alone = np.full((2, 5), 0.5)
    assert verdict_some_heads_prunable(_study(0), none_alone).verdict == FAILS
    alone = none_alone.copy()
    alone[0, 0] = -0.1  # one head can go alone, none together
    v = verdict_some_heads_prunable(_study(0), alone)
    assert v.verdict == UNSURE and v.numbers["removable alone"] == pytest.approx(0.1)


def test_removable_alone_and_together():
    effects = np.array([[0.0, 0.005, 0.02], [-0.3, 0.011, 0.009]])
    assert removable_alone(effects, base_loss=-1.0, tolerance=0.01) == pytest.approx(4 / 6)  # |base| is used
    assert prunable_together(_study(4)) == pytest.approx(0.4)
    assert prunable_together(_study(None, grid=0.3)) == pytest.approx(0.3)
