"""Saved results: one schema, atomic writes, strict JSON, bad files treated as missing."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

import numpy as np
import pytest

from attnlab.core.records import Record, RecordError
from attnlab.course import results
from attnlab.course.lesson_results import RESULT_KINDS, RESULT_NAMES, PerturbationResult
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
    assert len(set(RESULT_NAMES.values())) == len(RESULT_NAMES)
    assert all(RESULT_KINDS[name] is kind for kind, name in RESULT_NAMES.items())


def test_an_interrupted_write_keeps_the_old_file(tmp_path):
    from attnlab.core.atomic import atomic_path, write_text_atomic

    target = write_text_atomic(tmp_path / "x.txt", "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]
