"""Lesson 11's claim, judged on constructed pruning studies whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.pruning import PruningStudy
from attnlab.course.claims.pruning import (
    MICHEL_BERT_FRACTION,
    grid_index,
    increase_at,
    prunable_together,
    removable_alone,
    verdict_some_heads_prunable,
)
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE

FRACTIONS = np.array([0.0, 0.1, 0.2, 1.0])


def _study(rise_at_10: float, *, spread: float = 0.001, n_prunable: int | None = 3, n_texts: int = 40,
           per_text: bool = True) -> PruningStudy:
    """10 heads; each text's loss (0 for the full model) rises by ``rise_at_10`` (scattered by
    ``spread``) when 10% are masked in importance order; random orders rise by 0.05 there."""
    rng = np.random.default_rng(0)
    rise = np.array([0.0, rise_at_10, 2 * rise_at_10, 0.5])
    texts = rise[:, None] + rng.normal(0, spread, (4, n_texts)) * (rise[:, None] > 0)  # (F, N)
    curves = {"importance": texts.mean(1), "reverse": np.array([0.0, 0.3, 0.4, 0.5]),
              "random": np.array([[0.0, 0.05, 0.1, 0.5]] * 5)}
    return PruningStudy(FRACTIONS, np.zeros((2, 5)), curves, 0.0,
                        {"importance": 0.1, "random": 0.0, "reverse": 0.0}, 0.01, "test", [], n_prunable,
                        relative=False, per_text={"importance": texts} if per_text else {})


def test_some_heads_prunable_can_hold():
    v = verdict_some_heads_prunable(_study(0.002))
    assert v.verdict == HOLDS
    assert v.numbers["loss increase"] == pytest.approx(0.002, abs=0.001)
    assert v.numbers["increase high"] < v.numbers["allowed increase"] == pytest.approx(0.01)
    assert v.numbers["random orders, median increase"] == pytest.approx(0.05)  # the baseline
    assert v.numbers["Michel et al. BERT"] == MICHEL_BERT_FRACTION


def test_some_heads_prunable_can_fail():
    v = verdict_some_heads_prunable(_study(0.05))
    assert v.verdict == FAILS and v.numbers["increase low"] > 0.01
    assert verdict_some_heads_prunable(_study(0.05), tolerance=0.1).verdict == HOLDS  # a looser tolerance


def test_some_heads_prunable_cannot_tell():
    v = verdict_some_heads_prunable(_study(0.01, spread=0.01))  # right on the tolerance
    assert v.verdict == UNSURE and v.numbers["increase low"] < 0.01 < v.numbers["increase high"]
    assert "missing" in verdict_some_heads_prunable(_study(0.002, per_text=False)).numbers


def test_share_picks_the_grid_point():
    study = _study(0.004)
    assert grid_index(study, 0.1) == 1 and grid_index(study, 0.15) == 2
    assert increase_at(study, 0.2).estimate == pytest.approx(0.008, abs=0.001)
    assert verdict_some_heads_prunable(study, share=0.2).verdict == HOLDS
    assert verdict_some_heads_prunable(study, share=0.2, tolerance=0.005).verdict == FAILS
    with pytest.raises(ValueError, match="stop at"):
        grid_index(PruningStudy(np.array([0.0, 0.1]), np.zeros((2, 5)), {}, 0.0, {}, 0.01, "t"), 0.5)


def test_removable_alone_and_together():
    effects = np.array([[0.0, 0.005, 0.02], [-0.3, 0.011, 0.009]])
    assert removable_alone(effects, base_loss=-1.0, tolerance=0.01) == pytest.approx(4 / 6)  # |base| is used
    assert removable_alone(effects, base_loss=0.0, tolerance=0.01, relative=False) == pytest.approx(4 / 6)
    assert removable_alone(effects, base_loss=0.0, tolerance=0.01) == pytest.approx(2 / 6)  # relative to 0
    assert prunable_together(_study(0.0, n_prunable=4)) == pytest.approx(0.4)
    assert prunable_together(_study(0.0, n_prunable=None)) == pytest.approx(0.1)
    v = verdict_some_heads_prunable(_study(0.002), effects)
    assert v.numbers["removable alone"] == pytest.approx(round(4 / 6, 3))
