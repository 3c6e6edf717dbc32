"""Saved results: one schema, atomic writes, strict JSON, bad files treated as missing."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

import numpy as np
import pytest

from attnlab.analysis.stats import Interval
from attnlab.core.records import Record, RecordError
from attnlab.course import results
from attnlab.course.lesson_results import RECORD_TYPES, RESULT_KINDS, PerturbationResult
from attnlab.course.verdicts import ClaimVerdict


@pytest.fixture(autouse=True)
def _folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    monkeypatch.delenv("ATTNLAB_SMOKE", raising=False)


@dataclass
class Study(Record):
    scores: np.ndarray
    label: str
    ratio: float
    verdict: ClaimVerdict | None = None


def _study() -> Study:
    return Study(np.arange(6.0).reshape(2, 3), "x", float("nan"),
                 ClaimVerdict.decide("c", holds=False, fails=True, slope=-0.5))


def test_a_study_comes_back_as_it_was_saved(tiny_en):
    results.save("s", _study(), model=tiny_en)
    back = results.load("s", Study, model=tiny_en)
    np.testing.assert_array_equal(back.scores, np.arange(6.0).reshape(2, 3))
    assert back.label == "x" and np.isnan(back.ratio)
    assert back.verdict.verdict == "does not hold" and back.verdict.numbers == {"slope": -0.5}


def test_files_are_strict_json_with_nan_as_null(tiny_en, tmp_path):
    path = results.save("s", {"a": float("nan"), "b": np.float32(2.5), "c": np.array([np.inf, 1.0])}, model=tiny_en)
    text = path.read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert data["data"] == {"a": None, "b": 2.5, "c": [None, 1.0]}
    assert data["n_layers"] == tiny_en.n_layers and data["n_heads"] == tiny_en.n_heads
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # no temporary file left behind


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/b", "", ".hidden", "a..b", "x" * 200, 3])
def test_names_cannot_escape_the_folder(name):
    with pytest.raises(ValueError, match="not allowed"):
        results.save(name, {"a": 1})
    with pytest.raises(ValueError):
        results.load(name)


def test_another_model_or_shape_or_mode_reads_as_missing(tiny_en, monkeypatch):
    results.save("s", {"a": 1}, model=tiny_en)
    assert results.load("s", model=tiny_en) == {"a": 1}
    assert results.load("s", model="another model") is None
    # same name, other shape (a kit folder of another size under the same name)
    from types import SimpleNamespace

    monkeypatch.setattr(results, "LoadedModel", SimpleNamespace)
    other = SimpleNamespace(name=tiny_en.name, n_layers=tiny_en.n_layers + 1, n_heads=tiny_en.n_heads)
    assert results.load("s", model=other) is None
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    assert results.load("s", model=tiny_en.name) is None


@pytest.mark.parametrize("content", ["{\"data\": {\"a\": ", "[1, 2]", "{\"no\": 1}", "\udcff"])
def test_a_damaged_file_is_missing_with_a_warning(tmp_path, content):
    (tmp_path / "s.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.warns(UserWarning, match="ignored"):
        assert results.load("s") is None


def test_a_wrongly_shaped_record_is_missing_with_a_warning(tiny_en):
    results.save("06_perturbation", {"n_queries": 3}, model=tiny_en)  # lacks most fields
    with pytest.warns(UserWarning, match="PerturbationResult"):
        assert results.load("06_perturbation", PerturbationResult, model=tiny_en) is None
    with pytest.raises(RecordError):
        Study.from_record({"scores": [1.0], "label": "x"})


def test_load_or_compute_computes_once(tiny_en):
    calls = []

    def compute():
        calls.append(1)
        return _study()

    first = results.load_or_compute("s", Study, tiny_en, compute, verbose=False)
    second = results.load_or_compute("s", Study, tiny_en, compute, verbose=False)
    assert len(calls) == 1
    np.testing.assert_array_equal(first.scores, second.scores)


def test_readers_never_see_half_a_file(tiny_en):
    big = {"x": list(range(20000))}
    results.save("s", big, model=tiny_en)
    bad = []
    stop = threading.Event()

    def read():
        while not stop.is_set():
            try:
                json.loads(results.path_of("s").read_text(encoding="utf-8"))
            except (json.JSONDecodeError, FileNotFoundError) as exc:
                bad.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(40):
        results.save("s", big, model=tiny_en)
    stop.set()
    reader.join()
    assert not bad


def test_every_lesson_result_has_one_name():
    assert len({kind.file_name for kind in RECORD_TYPES}) == len(RECORD_TYPES)
    assert all(RESULT_KINDS[kind.file_name] is kind for kind in RECORD_TYPES)


def test_an_interrupted_write_keeps_the_old_file(tmp_path):
    from attnlab.core.atomic import atomic_path, write_text_atomic

    target = write_text_atomic(tmp_path / "x.txt", "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]


# --------------------------------------------------------------------------- NaN and infinities


def _poisoned(value):
    """``value`` with NaN in every floating-point number (floats, float arrays and tensors), everywhere inside."""
    import dataclasses

    import torch

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _poisoned(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return float("nan")
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return np.full_like(value, np.nan)
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return torch.full_like(value, float("nan"))
    if isinstance(value, dict):
        return {k: _poisoned(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_poisoned(v) for v in value)
    return value


def _nan_count(value) -> int:
    """How many NaN numbers ``value`` holds (walked like :func:`_poisoned`)."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(_nan_count(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init and f.compare)
    if isinstance(value, float):
        return int(np.isnan(value))
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return int(np.isnan(value).sum())
    if isinstance(value, dict):
        return sum(_nan_count(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nan_count(v) for v in value)
    return 0


def _assert_same(saved, back, where: str) -> None:
    """``back`` equals ``saved`` field by field, NaN where NaN (lists and tuples alike)."""
    import dataclasses

    if dataclasses.is_dataclass(saved) and not isinstance(saved, type):
        assert type(back) is type(saved), where
        for f in dataclasses.fields(saved):
            if f.init and f.compare:  # compare=False: kept in memory only (an interval's resamples)
                _assert_same(getattr(saved, f.name), getattr(back, f.name), f"{where}.{f.name}")
    elif isinstance(saved, float) and not isinstance(saved, bool):
        assert isinstance(back, float), f"{where}: {back!r} is not a float"
        assert (np.isnan(back) and np.isnan(saved)) or back == saved, f"{where}: {back!r} != {saved!r}"
    elif isinstance(saved, np.ndarray):
        np.testing.assert_array_equal(np.asarray(back, dtype=saved.dtype), saved, err_msg=where)  # NaN == NaN here
    elif isinstance(saved, dict):
        assert set(back) == set(saved), where
        for k in saved:
            _assert_same(saved[k], back[k], f"{where}[{k!r}]")
    elif isinstance(saved, (list, tuple)):
        assert isinstance(back, (list, tuple)) and len(back) == len(saved), where
        for i, (a, b) in enumerate(zip(saved, back)):
            _assert_same(a, b, f"{where}[{i}]")
    else:
        assert back == saved, f"{where}: {back!r} != {saved!r}"


def _example_records() -> dict[type, object]:
    """One record of every lesson's result kind (tests/lesson_records.py, and by hand for 07, 12, 13)."""
    import lesson_records as rec

    from attnlab.course.attention_limits_result import AttentionLimitsResult
    from attnlab.course.evidence import all_conclusions
    from attnlab.course.lesson_results import ConclusionsResult, PositionResult

    L, H = rec.L, rec.H
    grid = np.full((L, H), 0.5)
    per_layer = Interval(np.full(L, 0.5), np.full(L, 0.4), np.full(L, 0.6), 0.95, 10)
    one = Interval(0.5, 0.4, 0.6, 0.95, 10)
    verdicts = all_conclusions(rec.evidence())
    position = PositionResult(n_queries=10, chosen_layer=0, change=grid, verdict=rec.ANY, correlation=per_layer,
                              change_low=grid - 0.1, change_high=grid + 0.1, follower_gap_correlation=per_layer,
                              follower_gap_verdict=rec.ANY, output_cosine_mean=0.9, equivariance_gap_with=0.1,
                              equivariance_gap_without=0.2, pooled_correlation=one, change_mean=grid,
                              change_shuffle=grid, position_dependent_share=0.3, disrupted_share=0.2,
                              special_share_zero_by_layer=np.full(L, 0.1), verdicts_by_intervention={"zero": rec.ANY},
                              position_labels=[["cannot tell"] * H] * L, position_dependent_share_interval=one,
                              disrupted_share_interval=one)
    limits = AttentionLimitsResult(sink_texts=10, special_share_raw=per_layer, special_share_norm=per_layer,
                                   removed_share=0.3, sink_effect=0.01, control_effect=0.02,
                                   view_rho={"raw": one}, view_ranking=["raw"], scored_queries=10, papa_layers=[0],
                                   papa_cost=grid, papa_control=grid, papa_fixedness=grid, papa_rho=one,
                                   papa_saving=one, mean_queries=10, separator_share_raw=per_layer,
                                   view_rho_deleted={"raw": one}, view_ranking_deleted=["raw"], papa_within_rho=one,
                                   papa_labels=[["cheap"] * H] * L, together_fractions=np.array([0.0, 0.5]),
                                   together_fixed_first=np.array([0.0, 0.1]), together_reverse=np.array([0.0, 0.2]),
                                   together_random_low=np.array([0.0, 0.1]), together_random_high=np.array([0.0, 0.3]),
                                   together_replaceable=one, together_tolerance=0.01, verdicts={"sink": rec.ANY},
                                   sensitivity={"sink": {"0.5": "holds"}})
    return {kind: record for kind, record in [
        (type(rec.patterns()), rec.patterns()), (type(rec.perturbation()), rec.perturbation()),
        (PositionResult, position), (type(rec.averaging()), rec.averaging()),
        (type(rec.diversity()), rec.diversity()), (type(rec.head_count()), rec.head_count()),
        (type(rec.pruning()), rec.pruning()),
        (ConclusionsResult, ConclusionsResult(verdicts=list(verdicts.values()), evidence_origin={"x": "saved"},
                                              labels=list(verdicts))),
        (AttentionLimitsResult, limits)]}


def test_every_lesson_result_keeps_nan_in_every_number(tiny_en, tmp_path):
    examples = _example_records()
    assert set(examples) == set(RECORD_TYPES)  # every lesson's kind has an example
    for kind, record in examples.items():
        poisoned = _poisoned(record)
        assert _nan_count(poisoned) > 0, kind.__name__
        name = kind.file_name
        path = results.save(name, poisoned, model=tiny_en)
        text = path.read_text(encoding="utf-8")
        assert "NaN" not in text and "Infinity" not in text and "null" in text
        assert json.loads(text)["non_finite"] == "null" and json.loads(text)["schema"] == results.SCHEMA
        back = results.load(name, kind, model=tiny_en)
        assert back is not None, kind.__name__
        _assert_same(poisoned, back, kind.__name__)
        assert _nan_count(back) == _nan_count(poisoned), kind.__name__


@dataclass
class Bounds(Record):
    interval: Interval
    ratio: float


def test_infinities_are_saved_as_null_and_read_back_as_nan(tiny_en):
    results.save("inf", Bounds(Interval(float("inf"), float("-inf"), np.inf, 0.95, 3), float("-inf")), model=tiny_en)
    back = results.load("inf", Bounds, model=tiny_en)
    assert np.isnan(back.ratio) and np.isnan(back.interval.estimate) and np.isnan(back.interval.low)
    assert back.interval.n == 3
