"""``attnlab class collect DIR``: a class's exercise attempts in one table and one figure.

``DIR`` holds one entry per student: a folder (their ``results`` or ``results/exercises``
folder) or a ``.zip`` of it, named after the student, as an LMS download of an
assignment gives them; nbgrader's ``submitted/`` folder (``submitted/<student>/<assignment>/``)
is such a folder too. Every attempts file (:mod:`attnlab.course.attempts`) found in a
folder named ``exercises`` is read, also inside a zip in a student's folder (the file
``attnlab take`` packs on Colab or Binder); the rest of a results folder is left alone.
Offline, nothing is run and nothing is extracted to disk::

    attnlab class collect uploads/              # writes uploads-collected/class.csv and class.png
    attnlab class collect uploads/ --lang zh    # the same, labelled in Chinese
    attnlab class collect uploads/ --out week3  # into week3/ (refused if it holds either file)
    attnlab class collect course/submitted --class class.json   # nbgrader's submissions, checked against the class

The table has one row per student and exercise: attempts, right or not, the attempt
that was first right, the last answer, the model, precision and mode it ran under, and,
against the class setting (``--class FILE``, else the one in force on this machine,
:mod:`attnlab.core.class_setting`), what differs: a row from another model, precision or
smoke mode is flagged, not mixed in silently. The ``right`` flags are the student's own
record (a student can edit the file); grades come from nbgrader. The figure shows who got which
exercise right (a grid) and how many students got each exercise and each student got
how many right (bars). A bad, damaged or foreign file gets one line and is skipped;
nothing is ever overwritten (without ``--out`` a new folder name is picked).

Zips are read member by member in memory, with limits: no member path that is absolute
or climbs out (``..``), no links, at most :data:`MAX_MEMBERS` members,
:data:`MAX_FILE_BYTES` per attempts file and :data:`MAX_ZIP_BYTES` read per zip.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnlab.core import class_setting
from attnlab.core.atomic import atomic_path
from attnlab.core.class_setting import ClassSetting
from attnlab.core.language import N_, _, current_language, language_option, speaking
from attnlab.course.attempts import FOLDER, valid
from attnlab.tools import autograde, class_server, term_kit
from attnlab.tools.assignments import add_class_cli
from attnlab.viz.fonts import use_cjk_font

#: the most bytes one attempts file may have
MAX_FILE_BYTES = 1_000_000
#: the most bytes read from one student's zip, all members together
MAX_ZIP_BYTES = 50_000_000
#: the most members one zip may list
MAX_MEMBERS = 10_000
TABLE = "class.csv"
FIGURE = "class.png"
#: the table's columns (keys), labelled in the chosen language
COLUMNS = {"student": N_("student"), "exercise": N_("exercise"), "attempts": N_("attempts"),
           "right": N_("right"), "first_right_attempt": N_("first right at attempt"),
           "last_answer": N_("last answer"), "model": N_("model"), "precision": N_("precision"),
           "mode": N_("mode"), "differs": N_("differs from the class setting")}


@dataclass
class Collected:
    """What :func:`collect` found: one row per student and exercise, the problems (one line per skipped
    file), and where the table and figure were written."""

    rows: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    table: Path | None = None
    figure: Path | None = None

    @property
    def students(self) -> list[str]:
        return sorted({r["student"] for r in self.rows})

    @property
    def exercises(self) -> list[str]:
        return sorted({r["exercise"] for r in self.rows})


def _parse(data: bytes, where: str, problems: list[str]) -> dict | None:
    """An attempts file's content, or None with one line in ``problems``."""
    if len(data) > MAX_FILE_BYTES:
        problems.append(_("{where}: skipped, larger than {limit} bytes").format(where=where, limit=MAX_FILE_BYTES))
        return None
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        problems.append(_("{where}: skipped, damaged (not JSON)").format(where=where))
        return None
    if not valid(record):
        problems.append(_("{where}: skipped, not an attnlab attempts file").format(where=where))
        return None
    return record


def _wanted(parts: tuple[str, ...]) -> bool:
    """Whether a path's parts name a file inside an ``exercises`` folder."""
    return len(parts) >= 2 and parts[-2] == FOLDER


def _from_folder(folder: Path, problems: list[str]) -> list[dict]:
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            if path.suffix.lower() == ".zip" and path.is_file() and not path.is_symlink():
                found += _from_zip(path, problems)
                continue
            if path.parent.name != FOLDER:
                continue
            where = str(path.relative_to(folder.parent))
            if path.is_symlink() or not path.is_file():
                problems.append(_("{where}: skipped, a link or not a plain file").format(where=where))
                continue
            if path.stat().st_size > MAX_FILE_BYTES:
                problems.append(_("{where}: skipped, larger than {limit} bytes").format(where=where, limit=MAX_FILE_BYTES))
                continue
            record = _parse(path.read_bytes(), where, problems)
            if record is not None:
                found.append(record)
    return found


def _safe_member(info: zipfile.ZipInfo) -> bool:
    """Whether a zip member's name stays inside the zip (no absolute path, no ``..``, no drive) and is no link."""
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
        return False
    return not stat.S_ISLNK(info.external_attr >> 16)


def _from_zip(path: Path, problems: list[str]) -> list[dict]:
    found, budget = [], MAX_ZIP_BYTES
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        problems.append(_("{where}: skipped, not a readable zip").format(where=path.name))
        return []
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            problems.append(_("{where}: skipped, more than {limit} members").format(where=path.name, limit=MAX_MEMBERS))
            return []
        for info in members:
            if info.is_dir():
                continue
            where = f"{path.name}:{info.filename}"
            parts = PurePosixPath(info.filename.replace("\\", "/")).parts
            if not _safe_member(info):
                problems.append(_("{where}: skipped, an unsafe path or a link").format(where=where))
                continue
            if not _wanted(parts):
                continue
            if info.file_size > MAX_FILE_BYTES or info.file_size > budget:
                problems.append(_("{where}: skipped, larger than {limit} bytes").format(
                    where=where, limit=min(MAX_FILE_BYTES, budget)))
                continue
            try:
                with archive.open(info) as member:
                    data = member.read(MAX_FILE_BYTES + 1)  # never more than the limit, whatever the header says
            except (zipfile.BadZipFile, OSError, RuntimeError, ValueError):  # damaged, encrypted, bad method
                problems.append(_("{where}: skipped, damaged (not JSON)").format(where=where))
                continue
            budget -= len(data)
            record = _parse(data, where, problems)
            if record is not None:
                found.append(record)
    return found


def differs(attempts: list[dict], setting: ClassSetting | None) -> str:
    """What of ``attempts`` ran under another model, precision or mode than ``setting`` (empty: nothing,
    or no setting to compare with), e.g. ``"model bundled-minilm; mode smoke"``."""
    if setting is None:
        return ""
    wanted = setting.as_record()
    found = []
    for key in ("model", "precision", "mode"):
        other = sorted({str(a.get(key) or "?") for a in attempts} - {wanted[key]})
        if other:
            found.append(f"{_(COLUMNS[key])} {', '.join(other)}")
    return "; ".join(found)


def _row(student: str, record: dict, setting: ClassSetting | None = None) -> dict:
    attempts = sorted(record["attempts"], key=lambda a: a["attempt"])
    right_at = [a["attempt"] for a in attempts if a["right"]]
    last = attempts[-1] if attempts else {}
    return {"student": student, "exercise": record["exercise"], "attempts": len(attempts),
            "right": bool(right_at), "first_right_attempt": right_at[0] if right_at else "",
            "last_answer": json.dumps(last.get("answer"), ensure_ascii=False) if attempts else "",
            "model": str(last.get("model", "")), "precision": str(last.get("precision", "")),
            "mode": str(last.get("mode", "")), "differs": differs(attempts, setting)}


def read_class(folder: str | Path, setting: ClassSetting | None = None) -> Collected:
    """Every student's attempts under ``folder`` (see the module's docstring), each row checked against
    the class ``setting`` when one is given; nothing is written."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(_("{folder} is not a folder of students' uploads").format(folder=folder))
    out = Collected()
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            out.problems.append(_("{where}: skipped, a link or not a plain file").format(where=entry.name))
            continue
        if entry.is_dir():
            student, records = entry.name, _from_folder(entry, out.problems)
        elif entry.suffix.lower() == ".zip" and entry.is_file():
            student, records = entry.stem, _from_zip(entry, out.problems)
        else:
            out.problems.append(_("{where}: skipped, neither a student's folder nor a zip").format(where=entry.name))
            continue
        if not records:
            out.problems.append(_("{student}: no exercise attempts found").format(student=student))
        seen: set[str] = set()
        for record in records:
            if record["exercise"] in seen:
                out.problems.append(_("{student}: {exercise} found twice; the first copy is used").format(
                    student=student, exercise=record["exercise"]))
                continue
            seen.add(record["exercise"])
            out.rows.append(_row(student, record, setting))
    out.rows.sort(key=lambda r: (r["student"], r["exercise"]))
    return out


def write_table(rows: list[dict], path: Path) -> Path:
    """The rows as CSV (headers in the current language; UTF-8 with a byte-order mark, for spreadsheets)."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([_(label) for label in COLUMNS.values()])
    for row in rows:
        writer.writerow([_("yes") if row[k] is True else (_("no") if row[k] is False else row[k]) for k in COLUMNS])
    with atomic_path(path) as tmp:
        tmp.write_text(text.getvalue(), encoding="utf-8-sig")
    return path


def grid(collected: Collected) -> np.ndarray:
    """``(students, exercises)``: 1 right, 0 tried and never right, NaN not tried."""
    students, exercises = collected.students, collected.exercises
    out = np.full((len(students), len(exercises)), np.nan)
    for row in collected.rows:
        out[students.index(row["student"]), exercises.index(row["exercise"])] = 1.0 if row["right"] else 0.0
    return out


def draw(collected: Collected, path: Path) -> Path:
    """The figure: who got which exercise right (grid), right answers per exercise and per student (bars)."""
    if current_language() == "zh":
        use_cjk_font(warn=False)
    marks = grid(collected)
    students, exercises = collected.students, collected.exercises
    right = np.nan_to_num(marks, nan=0.0)
    fig = Figure(figsize=(max(7.0, 0.45 * len(exercises) + 4), max(4.5, 0.3 * len(students) + 3.5)),
                 constrained_layout=True)
    axes = fig.subplot_mosaic([["per_exercise", "."], ["grid", "per_student"]],
                              height_ratios=[1, max(1.5, 0.12 * len(students))], width_ratios=[4, 1])
    colours = np.zeros(marks.shape + (3,)) + 0.93  # not tried: light grey
    colours[marks == 1] = (0.10, 0.50, 0.22)
    colours[marks == 0] = (0.81, 0.13, 0.18)
    ax = axes["grid"]
    ax.imshow(colours, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(exercises)), exercises, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(students)), students, fontsize=8)
    ax.set_xlabel(_("exercise"))
    ax.set_ylabel(_("student"))
    ax.set_title(_("green: right, red: tried, never right, grey: not tried"), fontsize=9)
    bars = axes["per_exercise"]
    bars.bar(range(len(exercises)), right.sum(axis=0), color="#1a7f37")
    bars.set_xlim(-0.5, len(exercises) - 0.5)
    bars.set_xticks([])
    bars.set_ylabel(_("students right"))
    bars.yaxis.set_major_locator(MaxNLocator(integer=True))
    bars.set_title(_("Right answers per exercise ({n} students)").format(n=len(students)))
    side = axes["per_student"]
    side.barh(range(len(students)), right.sum(axis=1), color="#1a7f37")
    side.set_ylim(len(students) - 0.5, -0.5)
    side.set_yticks([])
    side.set_xlabel(_("exercises right"))
    side.xaxis.set_major_locator(MaxNLocator(integer=True))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return path


def _out_folder(folder: Path, out: str | Path | None) -> Path:
    """``out`` when it holds neither output file (else a ValueError); without ``out``, ``<DIR>-collected``
    or the first of ``-2``, ``-3``... that does not exist yet."""
    if out is not None:
        out = Path(out)
        taken = [out / name for name in (TABLE, FIGURE) if (out / name).exists()]
        if taken:
            raise ValueError(_("{path} exists; nothing is overwritten: choose another --out").format(path=taken[0]))
        return out
    base = folder.resolve()
    candidate, n = base.with_name(base.name + "-collected"), 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-collected-{n}")
    return candidate


def collect(folder: str | Path, out: str | Path | None = None, setting: ClassSetting | None = None) -> Collected:
    """Read a class's uploads (:func:`read_class`, against ``setting``), write ``class.csv`` and ``class.png``
    into a new folder (see :func:`_out_folder`) and return what was found, where it went and what was skipped."""
    folder = Path(folder)
    collected = read_class(folder, setting)
    target = _out_folder(folder, out)
    target.mkdir(parents=True, exist_ok=True)
    collected.table = write_table(collected.rows, target / TABLE)
    collected.figure = draw(collected, target / FIGURE)
    return collected


def _collect_cmd(args: argparse.Namespace) -> int:
    with speaking(args.lang):  # default: the language speaking now
        return _collect_and_say(args)


def _collect_and_say(args: argparse.Namespace) -> int:
    setting = class_setting.parse(Path(args.class_file).read_text(encoding="utf-8"), args.class_file) \
        if args.class_file else class_setting.current()
    found = collect(args.folder, args.out, setting)
    for line in found.problems:
        print(line)
    for row in found.rows:
        if row["differs"]:
            print(_("{student}, {exercise}: not under the class setting ({differs})").format(**row))
    print(_("{students} students, {exercises} exercises, {right} right of {rows} tried: {table}, {figure}").format(
        students=len(found.students), exercises=len(found.exercises), right=sum(r["right"] for r in found.rows),
        rows=len(found.rows), table=found.table, figure=found.figure))
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``attnlab class collect`` and ``attnlab class assignments``."""
    p = subparsers.add_parser("class", help="a teacher's tools for a class")
    sub = p.add_subparsers(dest="class_command", required=True)
    c = sub.add_parser("collect", help="merge the students' exercise attempts (folders or zips) into a table and a figure")
    c.add_argument("folder", help="a folder with one folder or .zip per student (their results or results/exercises)")
    c.add_argument("--out", default=None, help="output folder (default: <folder>-collected, a new name if taken)")
    c.add_argument("--lang", type=language_option, default=None,
                   help="language of the table's headers and the figure (default: ATTNLAB_LANG, else en)")
    c.add_argument("--class", dest="class_file", default=None,
                   help="the class setting file to check each row against (default: the one in force here)")
    c.set_defaults(func=_collect_cmd)
    add_class_cli(sub)
    class_server.add_class_cli(sub)
    term_kit.add_class_cli(sub)
    autograde.add_class_cli(sub)
