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
           per_text: bool = True, random_at_10: float = 0.05) -> PruningStudy:
    """10 heads; each text's loss (0 for the full model) rises by ``rise_at_10`` (scattered by
    ``spread``) when 10% are masked in importance order, and by ``random_at_10`` (the same
    scatter) in each of 5 random orders."""
    rng = np.random.default_rng(0)
    rise = np.array([0.0, rise_at_10, 2 * rise_at_10, 0.5])
    texts = rise[:, None] + rng.normal(0, spread, (4, n_texts)) * (rise[:, None] > 0)  # (F, N)
    random_rise = np.array([0.0, random_at_10, 2 * random_at_10, 0.5])
    random = random_rise[None, :, None] + rng.normal(0, spread, (5, 4, n_texts)) * (random_rise[None, :, None] > 0)
    curves = {"importance": texts.mean(1), "reverse": np.array([0.0, 0.3, 0.4, 0.5]),
              "random": random.mean(axis=2)}
    return PruningStudy(FRACTIONS, np.zeros((2, 5)), curves, 0.0,
                        {"importance": 0.1, "random": 0.0, "reverse": 0.0}, 0.01, "test", [], n_prunable,
                        relative=False, per_text={"importance": texts, "random": random} if per_text else {})


def test_some_heads_prunable_can_hold():
    v = verdict_some_heads_prunable(_study(0.002))
    assert v.verdict == HOLDS
    assert v.numbers["loss increase"] == pytest.approx(0.002, abs=0.001)
    assert v.numbers["increase high"] < v.numbers["allowed increase"] == pytest.approx(0.01)
    assert v.numbers["random orders, median increase"] == pytest.approx(0.05, abs=0.001)  # the control
    assert v.numbers["advantage over random"] == pytest.approx(0.048, abs=0.001) and v.numbers["advantage low"] > 0
    assert v.numbers["Michel et al. BERT"] == MICHEL_BERT_FRACTION


def test_some_heads_prunable_can_fail():
    v = verdict_some_heads_prunable(_study(0.05))
    assert v.verdict == FAILS and v.numbers["increase low"] > 0.01
    assert verdict_some_heads_prunable(_study(0.05, random_at_10=0.2), tolerance=0.1).verdict == HOLDS  # looser
    worse = verdict_some_heads_prunable(_study(0.006, random_at_10=0.002))  # within tolerance, worse than random
    assert worse.verdict == FAILS and worse.numbers["advantage high"] < 0


def test_some_heads_prunable_cannot_tell():
    v = verdict_some_heads_prunable(_study(0.01, spread=0.01))  # right on the tolerance
    assert v.verdict == UNSURE and v.numbers["increase low"] < 0.01 < v.numbers["increase high"]
    like_random = verdict_some_heads_prunable(_study(0.002, random_at_10=0.002))  # any 10% of heads would do
    assert like_random.verdict == UNSURE and like_random.numbers["increase high"] < 0.01
    assert like_random.numbers["advantage low"] < 0 < like_random.numbers["advantage high"]
    few = verdict_some_heads_prunable(_study(0.002, n_texts=5))
    assert few.verdict == UNSURE and "5 resampled units" in few.numbers["why"]
    assert "missing" in verdict_some_heads_prunable(_study(0.002, per_text=False)).numbers
    no_random = _study(0.002)
    no_random.per_text.pop("random")
    assert "missing" in verdict_some_heads_prunable(no_random).numbers


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
