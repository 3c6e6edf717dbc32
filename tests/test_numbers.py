"""Every time and expected number the docs quote comes from docs/numbers.json (scripts/course_numbers.py)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def course_numbers():
    spec = importlib.util.spec_from_file_location("course_numbers", ROOT / "scripts" / "course_numbers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def numbers(course_numbers):
    return course_numbers.gather()


def test_numbers_from_one_source(course_numbers, numbers):
    """README, README.zh-CN, both guides, the lessons' headers and docs/numbers.json agree with the sources."""
    assert course_numbers.problems(numbers) == []
    committed = json.loads((ROOT / "docs" / "numbers.json").read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(numbers))


def test_numbers_from_one_source_reads_the_measured_files(numbers):
    """The generated file holds what the benchmark files hold, independently read here."""
    full = json.loads((ROOT / "benchmarks" / "measured" / "course_full_offline.json").read_text(encoding="utf-8"))
    assert numbers["lessons"]["11"]["offline_full_s"] == full["lessons"]["11"]["seconds"] == 316
    assert numbers["course"]["offline_full_total_s"] == sum(m["seconds"] for m in full["lessons"].values()) == 825
    assert numbers["course"]["offline_full_feeds_12_s"] == sum(
        full["lessons"][n]["seconds"] for n in ("05", "06", "07", "08", "09", "10", "11"))
    assert set(numbers["lessons"]) == {f"{n:02d}" for n in range(14)}
    for key in ("offline_full", "minilm_full", "bert_base_shape_full"):
        source = numbers["sources"][key]
        assert source["model"] and source["machine"] and re.fullmatch(r"\d{4}-\d\d-\d\d", source["date"])


def test_numbers_from_one_source_fails_on_planted_drift(course_numbers, numbers):
    """A number changed by hand inside a generated block, a heading, a lesson header or free text is caught."""
    guide = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    heading = re.search(r"^### 11 · .*$", guide, re.M).group(0)
    assert "316 s" in heading
    drifted = guide.replace(heading, heading.replace("316 s", "265 s"))
    assert course_numbers.render_markdown(drifted, numbers, "en") != drifted  # the heading is rewritten
    assert course_numbers.render_markdown(guide, numbers, "en") == guide

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "lesson 13 (92 s)" in readme
    drifted = readme.replace("lesson 13 (92 s)", "lesson 13 (107 s)")
    assert course_numbers.render_markdown(drifted, numbers, "en") != drifted

    zh = (ROOT / "docs" / "teaching.zh-CN.md").read_text(encoding="utf-8")
    planted = zh + "\n第 11 课在笔记本上约 10 分钟，第 13 课 107 秒。\n"
    drift = course_numbers.hand_written_drift(planted, numbers, "zh")
    assert len(drift) == 2 and "lesson 11" in drift[0] and "lesson 13" in drift[1]
    assert course_numbers.hand_written_drift(zh, numbers, "zh") == []
    planted = guide + "\nLesson 11 takes about 10 minutes. The smoke pass takes about 2 minutes for all 13.\n"
    assert [d.split(":")[0] for d in course_numbers.hand_written_drift(planted, numbers, "en")] == [
        "lesson 11", "the course"]

    nb = json.loads((ROOT / "notebooks" / "13_attention_limits.ipynb").read_text(encoding="utf-8"))
    header = next("".join(c["source"]) for c in nb["cells"] if "Estimated time" in "".join(c["source"]))
    drifted = re.sub(r"full run \d+ s", "full run 107 s", header)
    assert drifted != header
    assert course_numbers.render_estimate(drifted, numbers, "13", "en") == header


def test_history_lives_in_the_changelog():
    """The guides and READMEs describe the course as it is; the rounds are in CHANGELOG.md."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for title in ("This round", "The round before", "What changed in the last round"):
        assert title in changelog
        assert f"### {title}" not in (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    assert "### 这一轮" not in (ROOT / "docs" / "teaching.zh-CN.md").read_text(encoding="utf-8")
    for path in ("README.md", "README.zh-CN.md", "docs/teaching.md", "docs/teaching.zh-CN.md"):
        assert "CHANGELOG.md" in (ROOT / path).read_text(encoding="utf-8")


def test_guides_have_a_term_plan():
    en = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    zh = (ROOT / "docs" / "teaching.zh-CN.md").read_text(encoding="utf-8")
    for text, title in ((en, "### A term (seven weeks, two lessons a week)"), (zh, "### 一个学期（七周，每周两课）")):
        plan = text.split(title, 1)[1].split("\n### ", 1)[0]
        weeks = re.findall(r"^\| (\d) \|", plan, re.M)
        assert weeks == [str(w) for w in range(1, 8)]
        taught = re.findall(r"\b(\d\d) ", " ".join(r.split(" | ")[1] + " " + r.split(" | ")[2]
                                                     for r in plan.splitlines() if re.match(r"^\| \d \|", r)))
        assert sorted(taught) == [f"{n:02d}" for n in range(14)]
