"""Reference results: planted differences are found and given the right cause; identical results give none."""

from __future__ import annotations

import copy
import json

import pytest

from attnlab.core.language import current_language, set_language
from attnlab.course import reference
from attnlab.course.verdicts import WORDS


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


def chinese_report(found: list) -> str:
    """:func:`reference.report` of ``found`` in Chinese, the language put back afterwards."""
    before = current_language()
    try:
        set_language("zh")
        return reference.report(found)
    finally:
        set_language(before)


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
    text = chinese_report(found)
    assert "与参考结果不同之处：1 处" in text and "最可能的原因" in text and "smoke 模式" in text
    assert "likely cause" not in text


def test_a_claim_with_a_colon_and_a_conclusions_number_are_shown_whole_in_chinese():
    """Lesson 12's claims hold ": " in their own text, and conclusion 6's numbers are named "6a: ...": the
    report translates the claim whole and names the number in Chinese, with no English left."""
    from attnlab.course.claims.conclusions import CLAIMS  # noqa: F401  (marks conclusion 6's number names)

    claim = CLAIMS[2]
    assert ": " in claim
    numbers = {"6a: cannot tell (lesson 06 heads)": 64, "6a: estimate": 0.21, "cross-tab": {"fixed": {"cannot tell": 0}}}
    ref = folder(**{"12_conclusions": record(name="12_conclusions", data={
        "verdict": {"claim": claim, "verdict": "cannot tell", "numbers": numbers}})})
    mine = copy.deepcopy(ref)
    mine["12_conclusions"]["data"]["verdict"].update(
        verdict="holds", numbers={"6a: cannot tell (lesson 06 heads)": 80, "6a: estimate": 0.21,
                                   "cross-tab": {"fixed": {"cannot tell": 51}}})
    found = reference.compare(mine, ref)
    assert [(d.claim, d.number) for d in found] == [(claim, ""), (claim, "6a: cannot tell (lesson 06 heads)"),
                                                       (claim, "cross-tab.fixed.cannot tell")]
    text = chinese_report(found)
    assert "6a：无法判断（第 06 课的头）" in text
    english = [w for w in ("cannot tell", "over 60%", "heads", "yours", "reference") if w in text]
    assert english == [], text


def test_differences_reads_folders_and_the_shipped_smoke_reference(tmp_path):
    ref_dir = reference.reference_dir("smoke")
    shipped = reference.read_folder(ref_dir)
    assert set(shipped) == set(reference.COMPARED)
    assert reference.provenance("smoke")["native_bf16"] is True  # so its records say bf16
    assert sum(len(reference.verdicts_of(r["data"])) for r in shipped.values()) >= 7
    assert all(r["smoke"] and r["model"] for r in shipped.values())
    for name, rec in shipped.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(rec), encoding="utf-8")
    assert reference.differences(tmp_path) == []
    (tmp_path / "08_layer_averaging.json").write_text("{not json", encoding="utf-8")
    found = reference.differences(tmp_path)
    assert [(d.lesson, d.cause) for d in found] == [("08_layer_averaging", "missing")]


def conclusions_record() -> dict:
    """A saved lesson-12 record with two conclusions, one with an interval."""
    return {"schema": 3, "name": "12_conclusions", "kind": "ConclusionsResult", "model": "multilingual-e5-small",
            "n_layers": 12, "n_heads": 12, "precision": "bf16", "device": "cpu", "smoke": False,
            "data": {"verdicts": [
                {"claim": "heads specialise", "verdict": "holds",
                 "numbers": {"estimate": 0.625, "low": 0.5, "high": 0.75, "threshold": 0.3}},
                {"claim": "one head is enough", "verdict": "cannot tell", "numbers": {"missing": "no lesson 10"}}],
                "evidence_origin": {}, "labels": ["1", "4a"]}}


def test_full_conclusions_reads_lesson_12s_record(tmp_path, monkeypatch):
    monkeypatch.setattr(reference, "HERE", tmp_path)
    folder_ = reference.reference_dir("full", "multilingual-e5-small")
    folder_.mkdir(parents=True)
    (folder_ / "12_conclusions.json").write_text(json.dumps(conclusions_record()), encoding="utf-8")
    assert reference.full_conclusions("multilingual-e5-small") == {
        "1": ("holds", "estimate 0.625 [0.5, 0.75]"), "4a": ("cannot tell", "")}
    with pytest.raises(FileNotFoundError, match="all-MiniLM-L6-v2"):
        reference.full_conclusions("bundled")


def _interval_claim(ref: dict[str, dict]) -> tuple[str, str, str, float, float, float]:
    """The first verdict of lessons 05-11 in ``ref`` whose deciding number has an interval wide enough to
    move inside: (lesson, claim, key, estimate, low, high)."""
    from attnlab.course.cards import deciding

    for name in reference.LESSONS:
        for claim, v in reference.verdicts_of(ref[name]["data"]).items():
            d = deciding(v["numbers"])
            if (d is not None and isinstance(v["numbers"].get(d.key), float)
                    and d.high - d.low > 0.5 * (abs(d.estimate) + 1e-3)):
                return name, claim, d.key, d.estimate, d.low, d.high
    raise AssertionError("no verdict with an interval in the full reference")


def _plant(ref: dict[str, dict], name: str, change) -> list:
    mine = copy.deepcopy(ref)
    change(mine[name])
    return reference.compare(mine, ref, cpu="the reference's CPU")


def test_reference_full_explains_difference():
    ref = reference.read_folder(reference.reference_dir("full", "multilingual-e5-small"))
    name, claim, key, estimate, low, high = _interval_claim(ref)
    ref_precision = ref[name]["precision"]
    other = "fp32" if ref_precision == "bf16" else "bf16"

    def numbers(rec: dict) -> dict:
        return reference.verdicts_of(rec["data"])[claim]["numbers"]  # the record's own dict

    def move(value: float):
        return lambda rec: numbers(rec).__setitem__(key, value)

    inside = low + 0.1 * (high - low) if estimate - low > high - estimate else high - 0.1 * (high - low)
    outside = high + (high - low) + 1.0
    size_key = next(k for k in reference.SIZE_KEYS if isinstance(ref[name]["data"].get(k), int))

    def sizes(rec: dict) -> None:
        rec["data"][size_key] += 1
        move(outside)(rec)

    cases = {
        "precision": lambda rec: (rec.update(precision=other, smoke=True), move(inside)(rec)),  # precision first
        "smoke": lambda rec: (rec.update(smoke=True), rec["data"].__setitem__(size_key, 1), move(outside)(rec)),
        "sizes": sizes,
        "cpu inside": move(inside),
        "cpu outside": move(outside),
    }
    expected_inside = {"precision": True, "smoke": False, "sizes": False, "cpu inside": True, "cpu outside": False}
    for case, change in cases.items():
        found = [d for d in _plant(ref, name, change) if d.what == f"{claim}: {key}"]
        assert len(found) == 1, case
        assert found[0].cause == case.split()[0], case
        assert found[0].inside is expected_inside[case], case
    precision = _plant(ref, name, cases["precision"])[0]
    assert f"ATTNLAB_PRECISION={ref_precision}" in precision.explain()  # read from the reference record
    assert "the reference's CPU" in _plant(ref, name, cases["cpu inside"])[0].explain()
    text = reference.report(_plant(ref, name, cases["cpu outside"]))
    assert "outside the reference's interval" in text
    assert reference.compare(copy.deepcopy(ref), ref) == []


@pytest.mark.parametrize("model", list(reference.MODELS))
def test_shipped_full_references_hold_every_claim(model):
    full = reference.read_folder(reference.reference_dir("full", model))
    smoke = reference.read_folder(reference.reference_dir("smoke"))
    assert set(full) == set(reference.COMPARED)
    assert all(r["model"] == model and not r["smoke"] for r in full.values())
    for name in reference.LESSONS:  # every claim the lesson saves (the smoke run saves the same ones)
        claims = reference.verdicts_of(full[name]["data"])
        assert claims and set(claims) == set(reference.verdicts_of(smoke[name]["data"])), name
        assert all(v["verdict"] in WORDS for v in claims.values())
    conclusions = reference.full_conclusions(model)
    assert len(conclusions) >= 6 and all(word in WORDS for word, _text in conclusions.values())
    shipped = reference.provenance("full", model)
    assert shipped["model"] == model and shipped["precision"] == [full["08_layer_averaging"]["precision"]]
    assert shipped["native_bf16"] == (shipped["precision"] == ["bf16"])


def test_no_reference_for_another_model_says_which_ship(tmp_path):
    rec = record(model="bert-base-chinese")
    (tmp_path / "08_layer_averaging.json").write_text(json.dumps(rec), encoding="utf-8")
    text = reference.compare_with_reference(tmp_path)
    assert "bert-base-chinese" in text and "multilingual-e5-small" in text


def test_slim_keeps_every_verdict_and_size_and_drops_large_arrays():
    rec = record()
    rec["data"]["importance"] = [[0.1] * 200 for _ in range(12)]  # a large array without a verdict
    rec["data"]["by_layer"].append({"layer": 2, "values": list(range(500))})
    shipped = reference.slim(rec)
    assert "importance" not in shipped["data"] and len(shipped["data"]["by_layer"]) == 1
    assert shipped["data"]["n_queries"] == 64 and shipped["precision"] == rec["precision"]
    assert reference.verdicts_of(shipped["data"]) == reference.verdicts_of(rec["data"])
    assert reference.compare({"08_layer_averaging": shipped}, {"08_layer_averaging": rec}) == []
