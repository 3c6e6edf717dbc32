"""The untrained-twin floors at the course's own sizes and noise: a model that beats its twin by twice the
floor reads "holds" often enough, one that beats it by half the floor almost never, and the chance each card
states is the chance the rule gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attnlab.analysis.stats import Interval, chance_beyond
from attnlab.course import evidence as c
from attnlab.course import twin_control
from attnlab.course.claims import conclusions as claims
from attnlab.course.verdicts import HOLDS, ClaimVerdict

REFERENCE = Path(claims.__file__).resolve().parents[1] / "reference" / "full" / "multilingual-e5-small"
SEEDS = 400


def course_noise() -> dict[str, float]:
    """Each twin-gated row's half-width of its deciding interval in the shipped full-size run of the offline
    default (the course's own sizes and noise), for rows whose record has one."""
    data = json.loads((REFERENCE / "12_conclusions.json").read_text(encoding="utf-8"))["data"]
    noise = {}
    for label, record in zip(data["labels"], data["verdicts"]):
        d = ClaimVerdict.from_record(record).decider
        if label in c.TOWARD_HOLDS and d is not None and np.isfinite([d.low, d.high]).all():
            noise[label] = max(d.estimate - d.low, d.high - d.estimate)
    return noise


def share_holding(label: str, effect: float, half_width: float, floor: float, seed: int = 0) -> float:
    """Plant a model whose deciding number beats its twin's by ``effect`` toward holding, both measured with
    intervals of ``half_width`` (normal noise of that size), and count how often the twin rule keeps "holds"."""
    rng = np.random.default_rng(seed)
    direction = c.TOWARD_HOLDS[label]
    se = half_width / 1.959964
    kept = 0
    for _ in range(SEEDS):
        twin_at = rng.normal(0.0, se)
        model_at = direction * effect + rng.normal(0.0, se)
        model = ClaimVerdict("planted", HOLDS, {"estimate": model_at, "low": model_at - half_width,
                                                 "high": model_at + half_width, "floor": floor})
        twin = ClaimVerdict("planted", HOLDS, {"estimate": twin_at, "low": twin_at - half_width,
                                                "high": twin_at + half_width, "floor": floor})
        kept += twin_control.against_twin(label, model, twin, direction=direction).verdict == HOLDS
    return kept / SEEDS


def stated_power(label: str, half_width: float, floor: float) -> float:
    diff = twin_control.difference(Interval(0.0, -half_width, half_width, 0.95, 0),
                                   Interval(0.0, -half_width, half_width, 0.95, 0))
    return twin_control.power(diff, c.TOWARD_HOLDS[label], floor)


def test_chance_beyond_is_the_normal_power():
    assert chance_beyond(1.0 + 1.959964 * 0.5, 1.0, 1.959964 * 0.5) == pytest.approx(0.5, abs=1e-4)  # effect - line = z se
    assert chance_beyond(1.0, 1.0, 0.2) < 0.03 and chance_beyond(5.0, 1.0, 0.2) == pytest.approx(1.0)
    assert chance_beyond(0.2, 0.1, 0.0) == 1.0 and chance_beyond(0.05, 0.1, 0.0) == 0.0


def test_floors_near_the_floor():
    """At each row's noise in the course's full run, with its own floor: half the floor reads "holds" in at
    most 5% of seeds; twice the floor in at least 80% where the stated power says the run can show it; the
    stated power is what the rule gives (within sampling error of 400 seeds)."""
    noise = course_noise()
    assert {"1", "2", "3a"} <= set(noise)
    strong_enough = []
    for label, half_width in noise.items():
        floor = _floor_of(label)
        stated = stated_power(label, half_width, floor)
        at_twice = share_holding(label, 2 * floor, half_width, floor)
        at_half = share_holding(label, 0.5 * floor, half_width, floor, seed=1)
        assert at_half <= 0.05, (label, at_half)
        assert at_twice == pytest.approx(stated, abs=0.07), (label, at_twice, stated)
        if stated >= 0.8:
            assert at_twice >= 0.8 - 0.05, (label, at_twice)
            strong_enough.append(label)
    assert {"1", "2", "3a"} <= set(strong_enough)  # the course's sizes can show these rows' floors


def _floor_of(label: str) -> float:
    """The floor a row's verdict prints (its ``numbers["floor"]``) in the shipped run."""
    data = json.loads((REFERENCE / "12_conclusions.json").read_text(encoding="utf-8"))["data"]
    record = dict(zip(data["labels"], data["verdicts"]))[label]
    return float(record["numbers"]["floor"])


def test_the_card_states_the_power():
    model = ClaimVerdict("planted", HOLDS, {"estimate": 0.9, "low": 0.85, "high": 0.95, "floor": 0.1})
    twin = ClaimVerdict("planted", HOLDS, {"estimate": 0.5, "low": 0.45, "high": 0.55, "floor": 0.1})
    checked = twin_control.against_twin("1", model, twin, direction=+1)
    assert checked.numbers[twin_control.POWER] == pytest.approx(chance_beyond(0.2, 0.1, np.hypot(0.05, 0.05)), abs=1e-3)


def planted_six_a(seed: int, *, true: bool, layers: int = 12, heads: int = 12, texts: int = 128):
    """6a's inputs at the course's size (144 heads, 128 texts) with the offline default's label mix (29
    content, 51 other, 64 unsure heads), each layer's labels dealt at random. True: every head's importance is
    drawn the same way whatever its label; false: the heads without visible structure are the least
    important ones."""
    rng = np.random.default_rng(seed)
    flat = np.array(["content"] * 29 + ["position"] * 51 + ["cannot tell"] * 64, dtype=object)
    labels = rng.permutation(flat).reshape(layers, heads)
    effect = rng.gamma(2.0, 0.01, size=(layers, heads))  # (L, H) each head's mean effect
    if not true:
        effect = np.where(labels == "position", effect * 0.05, effect + 0.02)
    per_text = effect * rng.lognormal(0.0, 0.5, size=(texts, layers, heads))  # (N, L, H) text by text
    return labels, per_text


def test_six_a_power_at_course_size():
    """At 144 heads and 128 texts, with the offline default's label mix, 6a's stated chance of holding when it
    is true is what the rule gives (within sampling error), and a planted false 6a never holds."""
    stated, held = [], 0
    runs = 30
    for seed in range(runs):
        labels, per_text = planted_six_a(seed, true=True)
        diff = claims.useful_interval(per_text, labels)
        stated.append(claims.useful_power(diff))
        held += diff.below(claims.USEFUL_MARGIN - claims.FLOOR_6A)
    assert held / runs == pytest.approx(np.mean(stated), abs=0.12)
    assert np.mean(stated) < 0.5  # the label band of 80 labelled heads is wide: the card says so
    for seed in range(10):
        labels, per_text = planted_six_a(100 + seed, true=False)
        diff = claims.useful_interval(per_text, labels)
        assert not diff.below(claims.USEFUL_MARGIN - claims.FLOOR_6A)
        assert diff.above(claims.USEFUL_MARGIN + claims.FLOOR_6A)  # over-represented: "does not hold"
