"""One tolerance for "costs nothing" (lessons 11 and 13), against brute force and planted cases."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis import costs_nothing
from attnlab.analysis.costs_nothing import SHARE_GRID, TOLERANCE_SHARE, CostsNothing, distance_to_others
from attnlab.analysis.mean_map_replacement import TOLERANCE_SHARE as LESSON_13_SHARE
from attnlab.analysis.pruning import PruningStudy
from attnlab.course.claims import attention_limits
from attnlab.course.claims.pruning import verdict_some_heads_prunable
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE


def _brute_force(vectors: np.ndarray) -> tuple[np.ndarray, float]:
    n = len(vectors)
    per_text = np.zeros(n)
    pairs = []
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            cos = vectors[i] @ vectors[j] / (np.linalg.norm(vectors[i]) * np.linalg.norm(vectors[j]))
            per_text[i] += (1 - cos) / (n - 1)
            pairs.append(1 - cos)
    return per_text, float(np.mean(pairs))


def test_tolerance_equals_the_brute_force_pairwise_mean():
    vectors = np.random.default_rng(0).normal(size=(9, 5)) + 0.5  # (N, d), not centred: distances below 1
    per_text, mean = _brute_force(vectors)
    np.testing.assert_allclose(distance_to_others(vectors), per_text, atol=1e-12)
    c = costs_nothing.costs_nothing(vectors)
    assert c.distance == pytest.approx(mean, abs=1e-12) and c.n_texts == 9
    assert c.tolerance == pytest.approx(TOLERANCE_SHARE * mean, abs=1e-14)
    assert c.grid() == pytest.approx({s: s * mean for s in SHARE_GRID})
    assert "5%" in c.describe()


def test_distance_is_scale_free_and_zero_for_one_direction():
    same = np.tile([[1.0, 2.0, 3.0]], (4, 1)) * np.array([[1.0], [2.0], [0.5], [3.0]])
    np.testing.assert_allclose(distance_to_others(same), 0.0, atol=1e-12)
    opposite = np.array([[1.0, 0.0], [-1.0, 0.0]])
    np.testing.assert_allclose(distance_to_others(opposite), 2.0, atol=1e-12)
    with pytest.raises(ValueError):
        distance_to_others(np.ones((1, 3)))


def test_lessons_11_and_13_share_one_tolerance():
    assert LESSON_13_SHARE == TOLERANCE_SHARE
    assert tuple(attention_limits.TOLERANCE_GRID) == tuple(SHARE_GRID)


def _study(rise: float, n: int = 40) -> PruningStudy:
    """10 heads; masking 10% in importance order moves every text by ``rise`` (small scatter),
    random orders by 10 x as much."""
    rng = np.random.default_rng(0)
    fractions = np.array([0.0, 0.1, 0.2, 1.0])
    steps = np.array([0.0, rise, 2 * rise, 0.5])
    texts = steps[:, None] + rng.normal(0, rise / 20, (4, n)) * (steps[:, None] > 0)  # (F, N)
    random = 10 * steps[None, :, None] + rng.normal(0, rise / 20, (5, 4, n)) * (steps[None, :, None] > 0)
    curves = {"importance": texts.mean(1), "reverse": np.array([0.0, 0.3, 0.4, 0.5]), "random": random.mean(2)}
    return PruningStudy(fractions, np.zeros((2, 5)), curves, 0.0, {"importance": 0.1, "random": 0.0, "reverse": 0.0},
                        0.01, "test", [], 1, relative=False, per_text={"importance": texts, "random": random})


def test_prunable_verdict_flips_across_the_grid_where_it_should():
    """Texts are 0.2 apart on average; masking moves them by 0.012: 6% of that distance. The
    verdict "costs nothing" does not hold at 2% and 5% (tolerance 0.004, 0.010), holds at 10% and 20%."""
    c = CostsNothing(distance=0.2, n_texts=40)
    study = _study(0.012)
    words = {s: verdict_some_heads_prunable(study, tolerance=c.at(s)).verdict for s in SHARE_GRID}
    assert words == {0.02: FAILS, 0.05: FAILS, 0.1: HOLDS, 0.2: HOLDS}
    assert verdict_some_heads_prunable(_study(0.0099), tolerance=c.at(0.05)).verdict in (HOLDS, UNSURE)
    assert verdict_some_heads_prunable(_study(0.0099, n=40), tolerance=c.at(0.06)).verdict == HOLDS


def test_lesson_13_reference_is_the_same_distance_as_lesson_11(tiny_en):
    """Lesson 13's per-text reference is each text's mean distance to the others, so its mean is
    the pairwise mean that lesson 11's tolerance uses (both from the full model's sentence vectors)."""
    from attnlab.analysis.mean_map_replacement import reference_distance

    texts = ["how do you play chess", "what is the best game", "where is the station", "a short one"]
    vectors = costs_nothing.text_vectors(tiny_en, texts, batch_size=3)  # (N, d), two batches
    per_text, mean = _brute_force(vectors)
    np.testing.assert_allclose(reference_distance(tiny_en, texts, batch_size=2), per_text, atol=1e-6)
    assert costs_nothing.for_texts(tiny_en, texts).distance == pytest.approx(mean, abs=1e-6)


def test_tolerance_units():
    """A move at the tolerance, built by hand on the sphere, covers sqrt(share) of the root-mean-square
    distance between the texts' unit vectors (brute force over the pairs), at the stated angle."""
    rng = np.random.default_rng(4)
    vectors = rng.normal(size=(12, 6)) + 2.0  # texts at a typical angle
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    chords = [np.linalg.norm(unit[i] - unit[j]) for i in range(12) for j in range(12) if i != j]
    rms = float(np.sqrt(np.mean(np.square(chords))))
    for share in costs_nothing.SHARE_GRID:
        cn = costs_nothing.costs_nothing(vectors, share)
        assert cn.rms_chord == pytest.approx(rms, rel=1e-9)
        angle = np.arccos(1.0 - cn.tolerance)  # a move of exactly the tolerance
        other = rng.normal(size=6)
        other -= (other @ unit[0]) * unit[0]
        other /= np.linalg.norm(other)
        moved = np.cos(angle) * unit[0] + np.sin(angle) * other
        assert 1.0 - moved @ unit[0] == pytest.approx(cn.tolerance, rel=1e-9)
        assert np.linalg.norm(moved - unit[0]) / rms == pytest.approx(cn.chord_share(share), rel=1e-9)
        assert cn.degrees == pytest.approx(np.degrees(angle), rel=1e-9)
    five = costs_nothing.costs_nothing(vectors)
    assert round(five.chord_share(five.share), 2) == 0.22  # 5% of 1 - cos is 22% of the distance, not 5%
    assert "22% of the distance" in five.describe() and "on average over the texts" in five.describe()
