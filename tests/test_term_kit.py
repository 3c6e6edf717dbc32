"""A term's kit (attnlab/tools/term_kit.py): roster import into nbgrader's gradebook, due dates, the grades
in Canvas's and Moodle's import columns, and the rubric cells in nbgrader's format.

The gradebook is built with nbgrader's own API (assignments, grade cells, submissions, scores); the
expected export is computed here from the scores set, not read back through the code under test.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import re
from pathlib import Path

import pytest

from attnlab.tools import term_kit

nbgrader_api = pytest.importorskip("nbgrader.api")
ROOT = Path(__file__).resolve().parents[1]

#: an LMS-style export: other column names, a BOM, a blank line, upper-case user names
ROSTER = ("\ufeffSIS Login ID,First Name,Surname,Email Address,Canvas User ID\n"
          "ANN,Ann,Li,ann@school.example,1001\n"
          "\n"
          "bo,Bo,Wang,bo@school.example,1002\n"
          "cy,Cy,Zhao,,\n")
#: assignment -> grade cell -> (max, {student: score}); cy never submits lesson_05
SCORES = {"lesson_04": {"test_a": (1, {"ann": 1, "bo": 0, "cy": 1}), "test_b": (2, {"ann": 2, "bo": 1, "cy": 0})},
          "lesson_05": {"test_a": (1, {"ann": 0, "bo": 1}), "verdict_05": (3, {"ann": 2, "bo": 3})}}


def test_roster_columns_found_by_name():
    students = term_kit.read_roster(ROSTER)
    assert [s.username for s in students] == ["ann", "bo", "cy"]
    assert students[0] == term_kit.Student("ann", "Ann", "Li", "ann@school.example", "1001")
    assert students[2].email == "" and students[2].lms_id == ""


@pytest.mark.parametrize("text, problem", [
    ("name,email\nann,a@x\n", "no user-name column"),
    ("username\nann\nAnn\n", "listed twice"),
    ("username\nann smith\n", "not a user name"),
    ("username\n1ann\n", "not a user name"),
])
def test_a_bad_roster_is_refused_with_the_line(text, problem):
    with pytest.raises(ValueError, match=problem):
        term_kit.read_roster(text)


def test_roster_import_fills_the_gradebook_and_the_hub_list(tmp_path):
    course = tmp_path / "course"
    hub_roster = tmp_path / "roster.txt"
    assert term_kit.import_roster(course, term_kit.read_roster(ROSTER), hub_roster) == 3
    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="attnlab") as gb:
        found = {s.id: (s.first_name, s.last_name, s.email, s.lms_user_id) for s in gb.students}
    assert found == {"ann": ("Ann", "Li", "ann@school.example", "1001"), "bo": ("Bo", "Wang", "bo@school.example", "1002"),
                     "cy": ("Cy", "Zhao", None, None)}
    names = [line for line in hub_roster.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    assert names == ["ann", "bo", "cy"] and hub_roster.stat().st_mode & 0o777 == 0o600
    # importing again updates, never duplicates
    term_kit.import_roster(course, term_kit.read_roster("username,email\nann,new@school.example\n"))
    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="attnlab") as gb:
        assert len(gb.students) == 3 and gb.find_student("ann").email == "new@school.example"


def test_due_dates_are_stored_in_utc(tmp_path):
    due = term_kit.read_due_dates("assignment,due\nlesson_04,2027-03-14T23:59+08:00\nlesson_05,2027-03-21T12:00\n")
    assert due == {"lesson_04": datetime.datetime(2027, 3, 14, 15, 59), "lesson_05": datetime.datetime(2027, 3, 21, 12)}
    term_kit.set_due_dates(tmp_path / "course", due)
    with nbgrader_api.Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}", course_id="attnlab") as gb:
        assert gb.find_assignment("lesson_04").duedate == datetime.datetime(2027, 3, 14, 15, 59)
    with pytest.raises(ValueError, match="assignment and due"):
        term_kit.read_due_dates("lesson,when\nlesson_04,2027-03-14\n")


def _graded_course(course: Path) -> None:
    """A gradebook with SCORES: the roster, two assignments with grade cells, submissions and their scores."""
    term_kit.import_roster(course, term_kit.read_roster(ROSTER))
    term_kit.set_due_dates(course, {"lesson_04": datetime.datetime(2027, 3, 14), "lesson_05": datetime.datetime(2027, 3, 21)})
    with nbgrader_api.Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="attnlab") as gb:
        for assignment, cells in SCORES.items():
            gb.add_notebook("nb", assignment)
            for cell, (most, _) in cells.items():
                gb.add_grade_cell(cell, "nb", assignment, max_score=most, cell_type="code")
        for assignment, cells in SCORES.items():
            students = set.union(*(set(scores) for _, scores in cells.values()))
            for student in sorted(students):
                gb.add_submission(assignment, student)
                for cell, (_, scores) in cells.items():
                    grade = gb.find_grade(cell, "nb", assignment, student)
                    grade.manual_score = scores[student]
        gb.db.commit()


def _expected_totals() -> dict[str, dict[str, float | None]]:
    totals: dict[str, dict[str, float | None]] = {s: {} for s in ("ann", "bo", "cy")}
    for assignment, cells in SCORES.items():
        for student in totals:
            got = [scores[student] for _, scores in cells.values() if student in scores]
            totals[student][assignment] = float(sum(got)) if got else None
    return totals


def test_lms_export_canvas(tmp_path):
    course = tmp_path / "course"
    _graded_course(course)
    rows, maximum = term_kit.grade_rows(course)
    assert maximum == {"lesson_04": 3.0, "lesson_05": 4.0}
    table = list(csv.reader(io.StringIO(term_kit.lms_csv(rows, maximum, "canvas"))))
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "lesson_04", "lesson_05"]
    assert table[1] == ["Points Possible", "", "", "", "", "3", "4"]
    expected = _expected_totals()
    by_login = {row[3]: row for row in table[2:]}
    assert set(by_login) == {"ann", "bo", "cy"}
    assert by_login["ann"][:2] == ["Li, Ann", "1001"] and by_login["cy"][1] == ""
    for student, row in by_login.items():
        for column, assignment in zip(row[5:], ("lesson_04", "lesson_05")):
            want = expected[student][assignment]
            assert column == ("" if want is None else f"{want:g}"), (student, assignment)
    assert by_login["cy"][6] == "", "no submission is an empty cell, not a 0"


def test_lms_export_moodle(tmp_path):
    course = tmp_path / "course"
    _graded_course(course)
    rows, maximum = term_kit.grade_rows(course)
    table = list(csv.DictReader(io.StringIO(term_kit.lms_csv(rows, maximum, "moodle"))))
    assert list(table[0]) == ["First name", "Last name", "Username", "Email address", "lesson_04", "lesson_05"]
    expected = _expected_totals()
    for row in table:
        want = expected[row["Username"]]
        assert row["lesson_04"] == f"{want['lesson_04']:g}"
        assert row["lesson_05"] == ("" if want["lesson_05"] is None else f"{want['lesson_05']:g}")
    assert {r["Username"]: r["Email address"] for r in table}["ann"] == "ann@school.example"
    with pytest.raises(ValueError, match="canvas, moodle"):
        term_kit.lms_csv(rows, maximum, "blackboard")


def test_rubric_cells_are_manually_graded_in_nbgrader_format():
    rubric, answer = term_kit.verdict_cells("08", "zh")
    assert rubric["metadata"]["nbgrader"]["locked"] and not rubric["metadata"]["nbgrader"]["grade"]
    meta = answer["metadata"]["nbgrader"]
    assert (meta["grade"], meta["solution"], meta["points"], answer["cell_type"]) == (True, True, 3, "markdown")
    assert term_kit.verdict_cells("03", "en") == []  # lessons 00-04 end in no verdict
    report = term_kit.report_notebook("en")
    assert report["cells"][1]["metadata"]["nbgrader"]["points"] == term_kit.REPORT_POINTS
    # the report's rubric is the guide's, criterion by criterion
    guide = (ROOT / "docs" / "classroom.md").read_text(encoding="utf-8")
    for line in term_kit.REPORT_RUBRIC["en"].splitlines():
        if line.startswith("| ") and not line.startswith("| criterion"):
            assert line in guide, line
    guide_zh = (ROOT / "docs" / "classroom.zh-CN.md").read_text(encoding="utf-8")
    for line in term_kit.REPORT_RUBRIC["zh"].splitlines():
        if line.startswith("| ") and not line.startswith("| 评分项"):
            assert line in guide_zh, line
    criteria = re.findall(r"^\| ([^|]+) \|", term_kit.REPORT_RUBRIC["zh"], re.M)
    assert len(criteria) == 6  # header and five criteria, as in English
    assert json.dumps(report)  # a notebook nbgrader can read


def test_rubrics_added_once_and_released_without_the_graders_notes(tmp_path):
    import shutil
    import subprocess
    import sys

    course = tmp_path / "course"
    blank = {"cells": [{"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# a lesson\n"}],
             "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for name in ("lesson_03", "lesson_05", "lesson_05_zh"):
        (course / "source" / name).mkdir(parents=True)
        (course / "source" / name / "lesson.ipynb").write_text(json.dumps(blank), encoding="utf-8")
    shutil.copyfile(ROOT / "classroom" / "nbgrader_config.py", course / "nbgrader_config.py")
    assert term_kit.add_rubrics(course) == {"lesson_05": 3, "lesson_05_zh": 3, "report": 10, "report_zh": 10}
    assert "lesson_05" not in term_kit.add_rubrics(course)  # a second run adds nothing
    cells = json.loads((course / "source" / "lesson_05_zh" / "lesson.ipynb").read_text(encoding="utf-8"))["cells"]
    assert len(cells) == 3 and "人工评分" in "".join(cells[1]["source"])
    assert len(json.loads((course / "source" / "lesson_03" / "lesson.ipynb").read_text(encoding="utf-8"))["cells"]) == 1
    done = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "report", "--force"], cwd=course,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    released = json.loads((course / "release" / "report" / "report.ipynb").read_text(encoding="utf-8"))
    text = json.dumps(released, ensure_ascii=False)
    assert term_kit.MODEL_ANSWER["en"] not in text and "BEGIN SOLUTION" not in text
    assert term_kit.ANSWER_PROMPT["en"] in text and "| the numbers |" in text  # the prompt and the rubric stay
