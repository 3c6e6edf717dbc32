"""``attnlab class collect``: three simulated students (a folder, a zip, a bare exercises folder), damaged,
foreign and hostile files among them; the table's numbers against a count written out by hand."""

from __future__ import annotations

import csv
import json
import zipfile
from types import SimpleNamespace

import numpy as np
import pytest

from attnlab.core import language
from attnlab.course.exercises import lesson_01, lesson_04
from attnlab.tools import class_collect
from attnlab.tools.cli import main
from classroom_solutions import teacher  # tests/classroom_solutions.py

sol01 = teacher("01")

FAKE = SimpleNamespace(name="fake-model", head_dim=4, hidden_size=48, n_heads=12)  # what check_head_width reads


def _as_student(monkeypatch, results, answers):
    """Run the real checkers with ``results`` as the results folder: ``answers`` is [(checker, answer)]."""
    monkeypatch.setenv("ATTNLAB_RESULTS", str(results))
    for check, answer in answers:
        check(answer)


@pytest.fixture
def uploads(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNLAB_SOLUTIONS", raising=False)
    right_weight = sol01.solution_tiny_weight(None, 0, 1)
    weight = lambda a: lesson_01.check_tiny_weight(None, a)  # noqa: E731
    width = lambda a: lesson_04.check_head_width(FAKE, a)  # noqa: E731
    folder = tmp_path / "uploads"
    # alice: her whole results folder; the weight right at the second attempt
    _as_student(monkeypatch, folder / "alice" / "results", [(weight, 0.1), (weight, right_weight)])
    (folder / "alice" / "results" / "01_self_attention.json").write_text("{}", encoding="utf-8")  # a lesson's result: not read
    # bob: a zip; the weight wrong three times, the width right at once; a damaged, a foreign and a hostile member
    work = tmp_path / "bob-work"
    _as_student(monkeypatch, work, [(weight, 0.2), (weight, 0.3), (weight, 0.4), (width, 4)])
    with zipfile.ZipFile(folder / "bob.zip", "w") as z:
        for path in sorted((work / "exercises").iterdir()):
            z.write(path, f"results/exercises/{path.name}")
        z.writestr("results/exercises/02.direction.json", "{\"schema\": 1, \"kind\": \"attnlab-exer")  # cut short
        z.writestr("results/exercises/notes.json", json.dumps({"hello": "teacher"}))
        z.writestr("../exercises/04.head_width.json", "{}")
    # carol: just her exercises folder; the width wrong, then right; a damaged file
    _as_student(monkeypatch, folder / "carol", [(width, 12), (width, 4.0)])
    (folder / "carol" / "exercises" / "01.tiny_weight.json").write_bytes(b"\xff\xfe not text")
    (folder / "readme.txt").write_text("uploaded from the LMS", encoding="utf-8")
    monkeypatch.delenv("ATTNLAB_RESULTS")
    return folder


# what the three students did, counted by hand from the fixture above: (attempts, right, first right at)
BY_HAND = {("alice", "01.tiny_weight"): (2, True, 2),
           ("bob", "01.tiny_weight"): (3, False, None), ("bob", "04.head_width"): (1, True, 1),
           ("carol", "04.head_width"): (2, True, 2)}


def test_class_collect(uploads, tmp_path):
    found = class_collect.collect(uploads)
    got = {(r["student"], r["exercise"]): (r["attempts"], r["right"], r["first_right_attempt"] or None)
           for r in found.rows}
    assert got == BY_HAND
    # right answers per exercise and per student, by hand: the weight 1 (alice), the width 2 (bob, carol)
    marks = class_collect.grid(found)
    assert found.exercises == ["01.tiny_weight", "04.head_width"] and found.students == ["alice", "bob", "carol"]
    np.testing.assert_array_equal(np.nan_to_num(marks, nan=-1), [[1, -1], [0, 1], [-1, 1]])
    assert np.nansum(marks, axis=0).tolist() == [1, 2] and np.nansum(marks, axis=1).tolist() == [1, 1, 1]
    # one line per skipped file, naming it; the lesson result and bob's good files say nothing
    assert len(found.problems) == 5, found.problems
    for name in ("02.direction.json", "notes.json", "../exercises/04.head_width.json", "carol/exercises/01.tiny_weight.json",
                 "readme.txt"):
        assert sum(name in line for line in found.problems) == 1, (name, found.problems)
    # the table holds the same numbers; the figure is a PNG
    assert found.table == uploads.with_name("uploads-collected") / "class.csv"
    with open(found.table, encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    assert {(r["student"], r["exercise"]): (int(r["attempts"]), r["right"] == "yes", int(r["first right at attempt"])
                                            if r["first right at attempt"] else None) for r in table} == BY_HAND
    assert {r["model"] for r in table if r["exercise"] == "04.head_width"} == {"fake-model"}
    assert found.figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # nothing is overwritten: a second run picks a new folder; an --out that holds the table is refused
    again = class_collect.collect(uploads)
    assert again.table.parent.name == "uploads-collected-2" and found.table.exists()
    before = found.table.read_bytes()
    with pytest.raises(ValueError, match="nothing is overwritten"):
        class_collect.collect(uploads, out=found.table.parent)
    assert found.table.read_bytes() == before
    assert main(["class", "collect", str(uploads), "--out", str(found.table.parent)]) == 2


def test_class_collect_in_chinese(uploads, tmp_path, capsys):
    before = language.current_language()
    try:
        assert main(["class", "collect", str(uploads), "--out", str(tmp_path / "zh"), "--lang", "zh"]) == 0
    finally:
        language.set_language(before)
    printed = capsys.readouterr().out
    assert "跳过" in printed and "3 名学生" in printed
    header = (tmp_path / "zh" / "class.csv").read_text(encoding="utf-8-sig").splitlines()[0]
    assert header.split(",")[:3] == ["学生", "练习", "尝试次数"]


def test_class_collect_refuses_a_zip_bomb_and_members_past_the_limits(tmp_path, monkeypatch):
    folder = tmp_path / "uploads"
    folder.mkdir()
    with zipfile.ZipFile(folder / "dan.zip", "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("exercises/01.tiny_weight.json", b" " * (class_collect.MAX_FILE_BYTES + 10))  # squeezes to a few KB
    (folder / "eve.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    found = class_collect.read_class(folder)
    assert found.rows == []
    assert any("dan.zip:exercises/01.tiny_weight.json" in p and "larger" in p for p in found.problems)
    assert any("eve.zip" in p and "zip" in p for p in found.problems)
