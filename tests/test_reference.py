"""Reference results: planted differences are found and given the right cause; identical results give none."""

from __future__ import annotations

import copy
import json

import pytest

from attnlab.core.language import current_language, set_language
from attnlab.course import reference


def record(**overrides) -> dict:
    """A saved lesson-08-like result with one verdict, as results.save writes it."""
    base = {"schema": 3, "name": "08_layer_averaging", "kind": "AveragingResult", "model": "tiny",
            "n_layers": 2, "n_heads": 2, "precision": "fp32", "device": "cpu", "smoke": True,
            "non_finite": "null", "time": 0.0,
            "data": {"n_queries": 64,
                     "verdict": {"claim": "heads become more fixed with depth", "verdict": "does not hold",
                                 "numbers": {"slope": -0.019, "interval": [-0.02, -0.018], "n_heads": 4}},
                     "by_layer": [{"claim": "layer 1 is fixed", "verdict": "holds", "numbers": {"share": 1.0}}]}}
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        out[key] = value
    return out


def folder(**records) -> dict[str, dict]:
    return {name: rec for name, rec in records.items()}


def test_identical_results_give_no_difference():
    ref = folder(**{"08_layer_averaging": record()})
    assert reference.compare(copy.deepcopy(ref), ref) == []
    assert "match" in reference.report([])


def test_a_planted_verdict_and_number_are_found_with_the_precision_as_cause():
    ref = folder(**{"08_layer_averaging": record()})
    mine = copy.deepcopy(ref)
    rec = mine["08_layer_averaging"]
    rec["precision"] = "bf16"
    rec["data"]["verdict"]["verdict"] = "cannot tell"
    rec["data"]["verdict"]["numbers"]["interval"] = [-0.03, 0.001]
    rec["data"]["verdict"]["numbers"]["slope"] = -0.0191  # within the tolerance: not a difference
    found = reference.compare(mine, ref)
    assert [(d.what, d.yours, d.reference) for d in found] == [
        ("heads become more fixed with depth", "cannot tell", "does not hold"),
        ("heads become more fixed with depth: interval.0", -0.03, -0.02),
        ("heads become more fixed with depth: interval.1", 0.001, -0.018),
    ]
    assert {d.cause for d in found} == {"precision"}
    assert "bf16" in found[0].explain() and "ATTNLAB_PRECISION=fp32" in found[0].explain()  # the reference's


@pytest.mark.parametrize("change, cause", [
    ({"model": "other"}, "model"),
    ({"smoke": False}, "smoke"),
    ({"device": "cuda:0"}, "device"),
    ({"model": "other", "precision": "bf16"}, "model"),  # the model outranks the precision
])
def test_the_cause_is_read_from_what_the_run_recorded(change, cause):
    ref = folder(**{"08_layer_averaging": record()})
    mine = folder(**{"08_layer_averaging": record(**change)})
    mine["08_layer_averaging"]["data"]["by_layer"][0]["verdict"] = "cannot tell"
    found = reference.compare(mine, ref)
    assert [d.cause for d in found] == [cause]
    assert found[0].what == "layer 1 is fixed"


def test_sizes_and_missing_lessons_are_named():
    ref = folder(**{"08_layer_averaging": record(), "09_head_diversity": record(name="09_head_diversity")})
    mine = folder(**{"08_layer_averaging": record()})
    mine["08_layer_averaging"]["data"]["n_queries"] = 8
    mine["08_layer_averaging"]["data"]["verdict"]["numbers"]["slope"] = -0.05
    found = reference.compare(mine, ref)
    assert [(d.lesson, d.cause) for d in found] == [("08_layer_averaging", "sizes"), ("09_head_diversity", "missing")]
    assert "n_queries 8" in found[0].explain() and "n_queries 64" in found[0].explain()


def test_the_report_speaks_the_readers_language():
    ref = folder(**{"08_layer_averaging": record()})
    mine = folder(**{"08_layer_averaging": record(smoke=False)})
    mine["08_layer_averaging"]["data"]["verdict"]["verdict"] = "holds"
    found = reference.compare(mine, ref)
    before = current_language()
    try:
        set_language("zh")
        text = reference.report(found)
    finally:
        set_language(before)
    assert "与参考结果不同之处：1 处" in text and "最可能的原因" in text and "smoke 模式" in text
    assert "likely cause" not in text


def test_differences_reads_folders_and_the_shipped_smoke_reference(tmp_path):
    ref_dir = reference.reference_dir("smoke")
    shipped = reference.read_folder(ref_dir)
    assert set(shipped) == set(reference.LESSONS)
    assert sum(len(reference.verdicts_of(r["data"])) for r in shipped.values()) >= 7
    assert all(r["smoke"] and r["model"] for r in shipped.values())
    for name, rec in shipped.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(rec), encoding="utf-8")
    assert reference.differences(tmp_path) == []
    (tmp_path / "08_layer_averaging.json").write_text("{not json", encoding="utf-8")
    found = reference.differences(tmp_path)
    assert [(d.lesson, d.cause) for d in found] == [("08_layer_averaging", "missing")]
