"""A term's kit for the nbgrader course folder: roster, due dates, rubric cells and grades for the LMS.

    attnlab class rubrics course/        # after `attnlab class assignments course/`: the hand-graded cells
    attnlab class roster course/ students.csv [--hub-roster /srv/attnlab-hub/roster.txt]
    attnlab class due course/ due.csv
    attnlab class grades course/ --lms canvas --out grades-canvas.csv      # or --lms moodle

* **Roster** (:func:`read_roster`, :func:`import_roster`): a CSV with a header row; the columns are
  found by name (``username`` or ``login``, ``first_name``, ``last_name``, ``email``, ``lms_id``; the
  usual spellings of an LMS's export are accepted, see :data:`ROSTER_COLUMNS`). Each student goes into
  nbgrader's gradebook (``course/gradebook.db``) with their name, email and LMS id, so that
  ``nbgrader export`` and the LMS export carry them; ``--hub-roster`` also writes the class server's
  list of user names (mode 0600).
* **Due dates** (:func:`read_due_dates`, :func:`set_due_dates`): a CSV ``assignment,due`` with ISO 8601
  times (``2027-03-14T23:59+08:00``; a time without an offset is UTC). nbgrader records each
  submission's lateness against it (``total_seconds_late``), which the export carries.
* **Grades for the LMS** (:func:`grade_rows`, :func:`lms_csv`): one row per student, one column per
  assignment, in Canvas's gradebook-import columns (``Student, ID, SIS User ID, SIS Login ID,
  Section``, then the assignments, with a ``Points Possible`` row) or Moodle's grade-import columns
  (``First name, Last name, Username, Email address``, then the assignments; map ``Username`` on
  import). A student with no submission gets an empty cell, never a 0: the teacher decides.
* **Rubric cells** (:func:`add_rubrics`, :func:`verdict_cells`, :func:`report_notebook`): each lesson's verdict discussion
  (3 points) and the one-page report (10 points) as nbgrader's *manually graded answer* cells, each
  after a locked cell with its rubric, so graders score them in Formgrader beside the automatic points.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnlab.tools.class_server import COURSE_ID, PRIVATE_FILE_MODE

#: a safe system user name: the class server makes one account per student with it
USER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,30}$")
#: our field -> the column names accepted for it (compared lower-case, spaces and dashes as _)
ROSTER_COLUMNS = {
    "username": ("username", "user_name", "login", "login_id", "sis_login_id", "student_id"),
    "first_name": ("first_name", "firstname", "given_name"),
    "last_name": ("last_name", "lastname", "surname", "family_name"),
    "email": ("email", "email_address", "e_mail"),
    "lms_id": ("lms_id", "lms_user_id", "canvas_id", "canvas_user_id", "id_number", "moodle_id"),
}
LMS = ("canvas", "moodle")
GRADEBOOK = "gradebook.db"


@dataclass(frozen=True)
class Student:
    """One row of the roster."""

    username: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_id: str = ""


def _column_key(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def read_roster(text: str) -> list[Student]:
    """The students of a roster CSV (see the module's docstring).

    Raises:
        ValueError: no user-name column, a user name the class server cannot use, or a name twice.
    """
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    if not rows:
        raise ValueError("the roster is empty")
    header = [_column_key(h) for h in rows[0]]
    where: dict[str, int] = {}
    for field, names in ROSTER_COLUMNS.items():
        for name in names:
            if name in header and header.index(name) not in where.values():
                where[field] = header.index(name)
                break
    if "username" not in where:
        raise ValueError(f"the roster has no user-name column (one of {', '.join(ROSTER_COLUMNS['username'])}); "
                         f"its header is {', '.join(rows[0])}")
    students, seen = [], set()
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        values = {field: (row[i].strip() if i < len(row) else "") for field, i in where.items()}
        name = values["username"].lower()
        if not USER_NAME.match(name):
            raise ValueError(f"roster line {line}: {values['username']!r} is not a user name the class server can "
                             "use (lower-case letters, digits, - and _, starting with a letter)")
        if name in seen:
            raise ValueError(f"roster line {line}: {name} is listed twice")
        seen.add(name)
        students.append(Student(**{**values, "username": name}))
    return students


def _gradebook(course: Path) -> Any:
    from nbgrader.api import Gradebook  # the classroom extra

    course.mkdir(parents=True, exist_ok=True)
    return Gradebook(f"sqlite:///{course / GRADEBOOK}", course_id=COURSE_ID)


def keep_private(course: Path) -> None:
    """The course folder (solutions, submissions) 0700 and its gradebook 0600: only the teacher's
    account reads them, whatever the umask was when nbgrader made them."""
    course.chmod(0o700)
    if (course / GRADEBOOK).exists():
        (course / GRADEBOOK).chmod(PRIVATE_FILE_MODE)


def import_roster(course: str | Path, students: list[Student], hub_roster: str | Path | None = None) -> int:
    """Put ``students`` into the course's gradebook (added or updated, nobody removed; the course folder
    made private: :func:`keep_private`) and, with ``hub_roster``, write the class server's list of user
    names (0600). Returns how many."""
    with _gradebook(Path(course)) as gb:
        for s in students:
            gb.update_or_create_student(s.username, first_name=s.first_name or None, last_name=s.last_name or None,
                                        email=s.email or None, lms_user_id=s.lms_id or None)
    keep_private(Path(course))
    if hub_roster is not None:
        path = Path(hub_roster)
        path.write_text("# the class roster: one student user name a line\n"
                        + "".join(f"{s.username}\n" for s in students), encoding="utf-8")
        path.chmod(PRIVATE_FILE_MODE)
    return len(students)


def parse_due(text: str) -> datetime.datetime:
    """An ISO 8601 time as nbgrader stores it: UTC without an offset (a time without one is UTC)."""
    when = datetime.datetime.fromisoformat(text.strip())
    if when.tzinfo is not None:
        when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return when


def read_due_dates(text: str) -> dict[str, datetime.datetime]:
    """``assignment -> due time`` from a CSV with the columns ``assignment`` and ``due``."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    fields = {_column_key(f): f for f in reader.fieldnames or []}
    if not {"assignment", "due"} <= set(fields):
        raise ValueError("the due dates need the columns assignment and due (e.g. lesson_04,2027-03-14T23:59+08:00)")
    return {row[fields["assignment"]].strip(): parse_due(row[fields["due"]]) for row in reader
            if row[fields["assignment"]].strip()}


def set_due_dates(course: str | Path, due: dict[str, datetime.datetime]) -> None:
    """Record each assignment's due time in the gradebook (nbgrader measures lateness against it)."""
    with _gradebook(Path(course)) as gb:
        for name, when in due.items():
            gb.update_or_create_assignment(name, duedate=when)
    keep_private(Path(course))


# --------------------------------------------------------------------------- grades for the LMS


@dataclass(frozen=True)
class GradeRow:
    """One student's scores: assignment -> (score, seconds late), None where nothing was submitted."""

    student: Student
    scores: dict[str, tuple[float, float] | None]


def grade_rows(course: str | Path) -> tuple[list[GradeRow], dict[str, float]]:
    """Every student's score per assignment from the gradebook, and each assignment's maximum."""
    with _gradebook(Path(course)) as gb:
        assignments = sorted(gb.assignments, key=lambda a: (a.duedate is None, a.duedate or 0, a.name))
        maximum = {a.name: float(a.max_score) for a in assignments}
        rows = []
        for s in sorted(gb.students, key=lambda s: s.id):
            scores: dict[str, tuple[float, float] | None] = {}
            for a in assignments:
                try:
                    sub = gb.find_submission(a.name, s.id)
                except Exception:  # noqa: BLE001 - nbgrader raises MissingEntry: nothing submitted
                    scores[a.name] = None
                    continue
                scores[a.name] = (float(sub.score), float(sub.total_seconds_late or 0.0))
            student = Student(s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
            rows.append(GradeRow(student, scores))
    return rows, maximum


def _score(value: tuple[float, float] | None) -> str:
    return "" if value is None else f"{value[0]:g}"


def lms_csv(rows: list[GradeRow], maximum: dict[str, float], lms: str) -> str:
    """The grades as an LMS imports them (Canvas's or Moodle's columns; see the module's docstring)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = list(maximum)
    if lms == "canvas":
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + names)
        writer.writerow(["Points Possible", "", "", "", ""] + [f"{maximum[n]:g}" for n in names])
        for row in rows:
            s = row.student
            shown = ", ".join(part for part in (s.last_name, s.first_name) if part) or s.username
            writer.writerow([shown, s.lms_id, "", s.username, ""] + [_score(row.scores[n]) for n in names])
    elif lms == "moodle":
        writer.writerow(["First name", "Last name", "Username", "Email address"] + names)
        for row in rows:
            s = row.student
            writer.writerow([s.first_name, s.last_name, s.username, s.email] + [_score(row.scores[n]) for n in names])
    else:
        raise ValueError(f"the LMS is one of {', '.join(LMS)}, not {lms!r}")
    return out.getvalue()


# --------------------------------------------------------------------------- rubric cells

#: each lesson's verdict discussion, 3 points (docs/classroom.md, "A guide for the term")
VERDICT_POINTS = 3
REPORT_POINTS = 10
#: lessons that end in a verdict on one of the article's claims
VERDICT_LESSONS = ("05", "06", "07", "08", "09", "10", "11", "12", "13")
VERDICT_RUBRIC = {
    "en": ("**Your verdict discussion (3 points, graded by hand).** In the cell below, in a few sentences:\n\n"
           "1. which claim of the article this lesson measured and what the run decided (holds, does not hold, "
           "cannot tell) — 1 point;\n"
           "2. the deciding number, read off this lesson's output, not off the article — 1 point;\n"
           "3. one way the verdict could change (another model, the line moved in the sensitivity table, smoke "
           "sizes) and why — 1 point."),
    "zh": ("**对判断的讨论（3 分，人工评分）。** 在下面的单元格里用几句话写出：\n\n"
           "1. 这一课测的是文章的哪个论断，以及这次运行的判断（成立、不成立、无法判断）——1 分；\n"
           "2. 决定判断的数字，要从本课的输出里读出来，而不是从文章里抄来——1 分；\n"
           "3. 判断可能怎样改变（换一个模型、敏感度表里阈值移动、smoke 规模）以及原因——1 分。"),
}
REPORT_RUBRIC = {
    "en": ("**The one-page report (10 points, graded by hand).** Pick one of the article's six conclusions and "
           "write one page below. Each criterion gives 0, 1 or 2 points:\n\n"
           "| criterion | 0 | 1 | 2 |\n|---|---|---|---|\n"
           "| the claim, in the student's own words | missing or copied | restated | restated with what would count "
           "as evidence against it |\n"
           "| the model and mode that ran | not said | named | named, with why it matters for the verdict (e.g. word "
           "pieces vs characters) |\n"
           "| the numbers | none | the verdict's deciding number | the deciding number, its interval and the "
           "threshold it was compared with |\n"
           "| the verdict | asserted | the computed verdict quoted | the computed verdict, and whether it survives "
           "the sensitivity table |\n"
           "| a limit | none | one limit named | one limit named and a concrete next measurement proposed |"),
    "zh": ("**一页报告（10 分，人工评分）。** 从文章的六个结论里选一个，在下面写一页。每一项得 0、1 或 2 分：\n\n"
           "| 评分项 | 0 分 | 1 分 | 2 分 |\n|---|---|---|---|\n"
           "| 用自己的话说出论断 | 没有或照抄 | 复述出来 | 复述出来，并说明什么样的证据会推翻它 |\n"
           "| 实际运行的模型和模式 | 没说 | 说出名字 | 说出名字，并说明它为什么影响判断（例如子词和单字的区别） |\n"
           "| 数字 | 没有 | 决定判断的那个数 | 决定判断的数、它的区间，以及和它比较的阈值 |\n"
           "| 判断 | 只是断言 | 引用计算出的判断 | 引用计算出的判断，并说明它在敏感度表里是否站得住 |\n"
           "| 局限 | 没有 | 指出一个局限 | 指出一个局限，并提出一个具体的后续测量 |"),
}
ANSWER_PROMPT = {"en": "Your answer (double-click to write):", "zh": "你的回答（双击这里书写）："}
MODEL_ANSWER = {"en": "(the teacher's notes for graders go here; students never see them)",
                "zh": "（这里写给助教的评分要点；学生看不到）"}


def _markdown(source: str, cell_id: str, meta: dict[str, Any]) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {"nbgrader": {"schema_version": 3, **meta}},
            "source": source.splitlines(keepends=True)}


def rubric_cells(rubric: str, points: int, grade_id: str, language: str) -> list[dict[str, Any]]:
    """A locked cell with the rubric, then nbgrader's manually graded answer cell of ``points`` points."""
    answer = f"{ANSWER_PROMPT[language]}\n\n### BEGIN SOLUTION\n{MODEL_ANSWER[language]}\n### END SOLUTION\n"
    return [_markdown(rubric, f"{grade_id}-rubric",
                      {"grade_id": f"{grade_id}_rubric", "grade": False, "solution": False, "locked": True,
                       "task": False}),
            _markdown(answer, grade_id, {"grade_id": grade_id, "grade": True, "solution": True, "locked": False,
                                         "points": points, "task": False})]


def verdict_cells(lesson: str, language: str) -> list[dict[str, Any]]:
    """The verdict discussion of ``lesson`` (none for a lesson without a verdict)."""
    if lesson not in VERDICT_LESSONS:
        return []
    return rubric_cells(VERDICT_RUBRIC[language], VERDICT_POINTS, f"verdict_{lesson}", language)


def report_notebook(language: str) -> dict[str, Any]:
    """The one-page report as an nbgrader notebook of its own (the assignment ``report``)."""
    cells = rubric_cells(REPORT_RUBRIC[language], REPORT_POINTS, "report", language)
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                        "name": "python3"},
                                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def add_rubrics(course: str | Path) -> dict[str, int]:
    """Add the hand-graded cells to the source notebooks ``attnlab class assignments`` wrote: each
    verdict lesson's discussion (after its last cell) and the report (``source/report`` and
    ``source/report_zh``). Run again after ``attnlab class assignments``: a lesson that has its
    discussion already is left as it is. Returns ``{assignment: hand-graded points added}``."""
    source = Path(course) / "source"
    added: dict[str, int] = {}
    for folder in sorted(source.glob("lesson_[0-9][0-9]*")):
        lesson, language = folder.name[len("lesson_"):][:2], "zh" if folder.name.endswith("_zh") else "en"
        cells = verdict_cells(lesson, language)
        for path in sorted(folder.glob("*.ipynb")):
            nb = json.loads(path.read_text(encoding="utf-8"))
            ids = {c.get("id") for c in nb["cells"]}
            if not cells or cells[-1]["id"] in ids:
                continue
            nb["cells"] += cells
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            added[folder.name] = VERDICT_POINTS
    for language, name in (("en", "report"), ("zh", "report_zh")):
        folder = source / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.ipynb").write_text(json.dumps(report_notebook(language), indent=1, ensure_ascii=False)
                                             + "\n", encoding="utf-8")
        added[name] = REPORT_POINTS
    return added


# --------------------------------------------------------------------------- the commands


def _rubrics_cmd(args: argparse.Namespace) -> int:
    for name, points in add_rubrics(args.course).items():
        print(f"{args.course}/source/{name}: {points} points graded by hand")
    return 0


def _roster_cmd(args: argparse.Namespace) -> int:
    students = read_roster(Path(args.csv).read_text(encoding="utf-8"))
    n = import_roster(args.course, students, args.hub_roster)
    print(f"{n} students in {Path(args.course) / GRADEBOOK}" + (f" and {args.hub_roster}" if args.hub_roster else ""))
    return 0


def _due_cmd(args: argparse.Namespace) -> int:
    due = read_due_dates(Path(args.csv).read_text(encoding="utf-8"))
    set_due_dates(args.course, due)
    for name, when in due.items():
        print(f"{name}: due {when.isoformat()} UTC")
    return 0


def _grades_cmd(args: argparse.Namespace) -> int:
    rows, maximum = grade_rows(args.course)
    text = lms_csv(rows, maximum, args.lms)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"{len(rows)} students, {len(maximum)} assignments, {args.lms}'s columns: {args.out}")
    return 0


def add_class_cli(sub: Any) -> None:
    """Register ``attnlab class roster``, ``class due`` and ``class grades`` under ``attnlab class``."""
    b = sub.add_parser("rubrics", help="add the hand-graded verdict discussions and the report to the course")
    b.add_argument("course", help="the nbgrader course folder that `attnlab class assignments` wrote")
    b.set_defaults(func=_rubrics_cmd)
    r = sub.add_parser("roster", help="put a roster CSV into nbgrader's gradebook (and the class server's list)")
    r.add_argument("course", help="the nbgrader course folder (holds gradebook.db)")
    r.add_argument("csv", help="the roster: a header row with username, first_name, last_name, email, lms_id")
    r.add_argument("--hub-roster", default=None, help="also write the class server's roster.txt here")
    r.set_defaults(func=_roster_cmd)
    d = sub.add_parser("due", help="record the assignments' due dates in nbgrader's gradebook")
    d.add_argument("course", help="the nbgrader course folder")
    d.add_argument("csv", help="a CSV with the columns assignment and due (ISO 8601, e.g. 2027-03-14T23:59+08:00)")
    d.set_defaults(func=_due_cmd)
    g = sub.add_parser("grades", help="the grades in an LMS's import columns (Canvas or Moodle)")
    g.add_argument("course", help="the nbgrader course folder")
    g.add_argument("--lms", choices=LMS, required=True, help="whose columns")
    g.add_argument("--out", required=True, help="the CSV to write")
    g.set_defaults(func=_grades_cmd)
