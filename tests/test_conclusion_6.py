"""Conclusion 6's rules: 6a's equivalence margin, its label band and floor; 6b's floor.

Each test plants known data: the least important heads chosen per layer with a known mix of
labels (6a), or two tasks' rankings with a known rank agreement (6b), and checks that the rule
decides what the planted pattern says, and that the floor keeps a tiny effect from deciding.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

import lesson_records as rec  # tests/lesson_records.py
from attnlab.analysis import probes
from attnlab.analysis.probes import TASKS, TaskStudy
from attnlab.analysis.stats import resample_counts
from attnlab.course.claims import conclusions as claims
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE

#: 6a's planted shape: enough heads that the within-layer label band is narrow (SD about 0.026)
LAYERS, HEADS = 24, 48
#: 6b's planted shape: the Spearman agreement of 576 heads has an SE of about 0.03
TASK_LAYERS, TASK_HEADS = 12, 48


def useful_evidence(other_least: list[int], *, effect: float = 1.0, noise: float = 0.002):
    """Lesson 06 and 11 records: each layer has 24 content and 24 position heads, and its 12 least
    important heads (a quarter) are ``other_least[layer]`` position heads and the rest content
    heads, so that layer's share difference is ``(2 * k - 12) / 24``. ``effect`` scales every
    head's effect (and ``noise`` the texts' scatter) alike."""
    labels = [["content"] * 24 + ["position"] * 24] * LAYERS
    effects = np.full((LAYERS, HEADS), 0.5)
    for layer, k in enumerate(other_least):
        effects[layer, : 12 - k] = 0.01  # content heads among the least important
        effects[layer, 24: 24 + k] = 0.01  # position heads among them
    pert = rec.perturbation(labels=labels, n_layers=LAYERS, n_heads=HEADS)
    return pert, rec.pruning(effects=effect * effects, noise=effect * noise, n_layers=LAYERS, n_heads=HEADS)


def planted_difference(other_least: list[int]) -> float:
    return float(np.mean([(2 * k - 12) / 24 for k in other_least]))


def test_equivalence_within_margin_cannot_tell():
    """An estimate inside the margin whose interval crosses it is "cannot tell", not "does not hold"
    (the old rule said "does not hold" as soon as the interval lay above 0 and reached the margin)."""
    other_least = [7] * 14 + [8] * 10  # share differences 1/12 and 1/6: planted 0.118
    v = claims.conclusion_6a(*useful_evidence(other_least))
    assert v.numbers["estimate"] == pytest.approx(planted_difference(other_least))
    assert 0 < v.numbers["low"] and v.numbers["estimate"] < claims.USEFUL_MARGIN < v.numbers["high"]
    assert v.verdict == UNSURE
    # wholly beyond the margin (and its floor): does not hold
    v = claims.conclusion_6a(*useful_evidence([12] * LAYERS))  # every least important head is a position head
    assert v.verdict == FAILS and v.numbers["low"] > claims.USEFUL_MARGIN + claims.FLOOR_6A


def test_label_band_widens_a_steady_ranking():
    """Heads whose effects are tiny (~1e-5) but steady over the texts, and unrelated to the labels:
    resampling the texts never moves the ranking, so without the label band the interval has zero
    width (the old +0.106 [0.106, 0.106]); with it, the interval is as wide as random labels make it."""
    rng = np.random.default_rng(4)
    effects = 1e-5 * (1 + rng.random((6, 12)))
    labels = [["content"] * 6 + ["position"] * 6] * 6
    pr = rec.pruning(effects=effects, noise=1e-10, n_layers=6, n_heads=12)
    v = claims.conclusion_6a(rec.perturbation(labels=labels, n_layers=6, n_heads=12), pr)
    other, sure = np.asarray(labels) != "content", np.ones((6, 12), dtype=bool)
    means = np.einsum("bn,nlh->blh", resample_counts(30, 200) / 30, pr.ablation_per_text)  # texts resampled
    texts_only = claims.stratified_difference(claims.least_important(means), other, sure)  # (200,)
    assert np.ptp(texts_only) == 0 and texts_only[0] == pytest.approx(v.numbers["estimate"])  # zero width ...
    assert v.numbers["high"] - v.numbers["low"] > 0.2  # ... but not with the label band
    assert v.verdict == UNSURE


@pytest.mark.parametrize("side", ["does not hold", "holds"])
def test_floor_blocks_tiny_effects_6a(side):
    """6a's floor: a share difference past the margin by a hundredth of the full-size distance does not
    decide, and one past it by less than the floor decides only when the floor is set to 0."""
    if side == "does not hold":  # non-content heads over-represented: full size 0.5 (margin + 0.35)
        full, small, word = [12] * LAYERS, [9] * 18 + [8] * 6, FAILS  # small: 0.229, past 0.15 by 0.079
        tiny = [8] * 20 + [7] * 4  # 0.153: past the margin by 0.0035, a hundredth of 0.35
    else:  # content heads the least important: full size -0.5 (inside the margin by 0.65)
        full, small, word = [0] * LAYERS, [7] * LAYERS, HOLDS  # small: 0.083, inside by 0.067
        tiny = [8] * 17 + [7] * 7  # 0.142: inside the margin by 0.008, about a hundredth of 0.65
    assert claims.conclusion_6a(*useful_evidence(full)).verdict == word
    v = claims.conclusion_6a(*useful_evidence(tiny))
    assert abs(v.numbers["estimate"] - claims.USEFUL_MARGIN) < 0.01 and v.verdict == UNSURE
    assert v.numbers["floor"] == claims.FLOOR_6A
    evidence = useful_evidence(small)
    assert claims.conclusion_6a(*evidence, floor=0.0).verdict == word  # beyond the margin, within the floor
    assert claims.conclusion_6a(*evidence).verdict == UNSURE  # the floor keeps it from deciding


def planted_tasks(agreement: float, *, seed: int = 0) -> TaskStudy:
    """Two tasks whose noise-free rankings of 576 heads have the Spearman agreement ``agreement``
    (to 0.002), measured by probes with little query noise and none from their training sample."""
    rng = np.random.default_rng(seed)
    base, own = rng.normal(size=(2, TASK_LAYERS, TASK_HEADS))
    lo, hi = -1.0, 1.0
    for _step in range(40):  # bisect the mixing weight for the planted agreement
        w = 0.5 * (lo + hi)
        other = w * base + np.sqrt(1 - w * w) * own
        lo, hi = (w, hi) if spearmanr(base.ravel(), other.ravel())[0] < agreement else (lo, w)
    measured = {t: rec.probe_costs(truth, rng, n_texts=30, n_train=60, noise=0.01, probe_noise=0.0)
                for t, truth in zip(TASKS, (base, other))}
    return TaskStudy(list(TASKS), {t: m[0] for t, m in measured.items()}, dict.fromkeys(TASKS, 0.9),
                     dict.fromkeys(TASKS, 0.3), n_train=60, n_test=30,
                     refit_costs={t: m[1] for t, m in measured.items()}, identity_accuracy=0.7)


@pytest.mark.parametrize("side", ["holds", "does not hold"])
def test_floor_blocks_tiny_effects_6b(side):
    """6b's floor: an agreement a hundredth of the full-size distance from the margin does not decide,
    and one beyond the margin by less than the floor decides only when the floor is set to 0."""
    pr = rec.pruning()
    margin = claims.TASK_MARGIN
    if side == "holds":  # full size: rankings reversed, -1 (1.5 below the margin)
        full, small, tiny, word = -1.0, 0.40, margin - 0.015, HOLDS
    else:  # full size: one ranking, 1 (0.5 above the margin)
        full, small, tiny, word = 1.0, 0.60, margin + 0.005, FAILS
    for agreement, expected in ((full, {claims.FLOOR_6B: word}), (tiny, {claims.FLOOR_6B: UNSURE}),
                                (small, {0.0: word, claims.FLOOR_6B: UNSURE})):
        pr.tasks = planted_tasks(agreement)
        for floor, verdict in expected.items():
            v = claims.conclusion_6b(pr, floor=floor)
            assert v.numbers["estimate"] == pytest.approx(agreement, abs=0.03)
            assert v.verdict == verdict, (agreement, floor, v.numbers["low"], v.numbers["high"])
            assert v.numbers["floor"] == floor


def test_conclusion_6b_needs_twenty_splits():
    """A record whose probes were refitted on one split (saved before the splits) cannot tell."""
    pr = rec.pruning(task_kind="different")
    assert claims.conclusion_6b(pr).verdict == HOLDS and pr.tasks.n_splits == claims.MIN_SPLITS
    pr.tasks.refit_costs = {t: c[0] for t, c in pr.tasks.refit_costs.items()}  # (2, N, L, H): one split
    v = claims.conclusion_6b(pr)
    assert v.verdict == UNSURE and "fewer than 20" in v.numbers["why"]


def test_claim_words_state_the_constants():
    """The printed claims of 6a and 6b say their margins, floors and split count as the rules use them."""
    for number in (claims.USEFUL_MARGIN, claims.FLOOR_6A):
        assert f"{number:g}" in claims.USEFUL_CLAIM
    for number in (claims.TASK_MARGIN, claims.FLOOR_6B):
        assert f"{number:g}" in claims.TASK_CLAIM
    assert f"{claims.MIN_SPLITS} splits" in claims.TASK_CLAIM and claims.MIN_SPLITS == probes.N_SPLITS
