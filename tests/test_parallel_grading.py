"""A class autograded on every core (``attnlab class autograde``): a gradebook locked by another writer
waited for (plain nbgrader gives up), a stalled grader stopped and graded again, and an interrupted run
that loses nothing and finishes when run again. The planted students of lesson 04, graded on every core
with the guide's own command, are ``test_grading_integrity.test_classroom_doc_followed_literally``'s.

The nbgrader runs are real (skipped where nbgrader is not installed: the ``classroom`` extra); the small
course of :func:`_small_course` runs no model.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from attnlab.tools import autograde

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
needs_nbgrader = pytest.mark.skipif(shutil.which("nbgrader", path=str(BIN)) is None,
                                    reason="nbgrader is not installed (pip install -e .[classroom])")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNLAB_")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT), ATTNLAB_OFFLINE="1", **extra)
    return env


def _nbgrader(course: Path, *args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env or _env(),
                          capture_output=True, text=True, timeout=600)
    assert not check or done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done


def _cell(kind: str, source: str, grade_id: str) -> dict:
    meta = {"grade_id": grade_id, "schema_version": 3, "task": False, "locked": kind == "test",
            "solution": kind == "answer", "grade": kind == "test"}
    if kind == "test":
        meta["points"] = 1
    return {"cell_type": "code", "execution_count": None, "id": grade_id,
            "metadata": {"nbgrader": meta} if kind != "plain" else {}, "outputs": [], "source": source}


def _small_course(tmp_path: Path, hold: Path) -> Path:
    """A course of one assignment ``a1`` (no model): the answer is 42; a submission that answers ``"slow"``
    waits while the file ``hold`` exists."""
    course = tmp_path / "course"
    (course / "source" / "a1").mkdir(parents=True)
    shutil.copyfile(ROOT / "classroom" / "nbgrader_config.py", course / "nbgrader_config.py")
    answer = ("answer = None\n### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION\n"
              f"import os, time\nwhile answer == 'slow' and os.path.exists({str(hold)!r}):\n    time.sleep(1.0)")
    nb = {"cells": [_cell("answer", answer, "answer_1"),
                    _cell("test", "### BEGIN HIDDEN TESTS\nassert answer == 42\n### END HIDDEN TESTS", "test_1"),
                    _cell("plain", "import ipykernel.connect\nprint(ipykernel.connect.get_connection_info(unpack=True)"
                                   "['transport'])", "transport")],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (course / "source" / "a1" / "a1.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    _nbgrader(course, "generate_assignment", "a1", "--force")
    return course


def _quick_and_held(tmp_path: Path, held: str) -> tuple[Path, Path]:
    """``(course, hold)``: :func:`_small_course` with two submissions, "quick" (right) and ``held``, whose
    kernel waits while the file ``hold`` exists."""
    hold = tmp_path / "hold"
    hold.write_text("x")
    course = _small_course(tmp_path, hold)
    _submit(course, "quick", "42")
    _submit(course, held, "'slow'")
    return course, hold


def _submit(course: Path, student: str, answer: str) -> None:
    nb = json.loads((course / "release" / "a1" / "a1.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("solution"):
            cell["source"] = "".join(cell["source"]).replace("answer = None", f"answer = {answer}", 1)
    folder = course / "submitted" / student / "a1"
    folder.mkdir(parents=True)
    (folder / "a1.ipynb").write_text(json.dumps(nb), encoding="utf-8")


def _scores(course: Path, assignment: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions(assignment)}


def _hold_lock(db: Path, seconds: float, release: threading.Event | None = None) -> threading.Thread:
    """Another writer: holds the gradebook's write lock for ``seconds`` (started at once), or until
    ``release`` is set."""
    ready = threading.Event()
    release = release or threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(db, timeout=60, isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        ready.set()
        release.wait(seconds)
        connection.execute("COMMIT")
        connection.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert ready.wait(60)
    return thread


# --------------------------------------------------------------------------- without nbgrader


def test_retry_when_locked_and_order_per_student(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    calls: list[tuple[str, str]] = []
    script = ("import sys, pathlib\nmark = pathlib.Path(sys.argv[1])\n"
              "if not mark.exists():\n    mark.write_text('x'); print('sqlite3.OperationalError: database is locked');"
              " sys.exit(1)\nprint('graded')\n")

    def command(plan, student, assignment, sockets):
        calls.append((student, assignment))
        if student == "bad":
            return [sys.executable, "-c", "print('[ERROR] There was an error processing assignment'); raise SystemExit(1)"]
        return [sys.executable, "-c", script, str(tmp_path / f"{student}-{assignment}.mark")]

    plan = autograde.Plan(course, {"ann": ["lesson_05", "lesson_12"], "bad": ["lesson_05", "lesson_12"]}, jobs=2,
                          env=dict(os.environ))
    said: list[str] = []
    outcomes = {(o.student, o.assignment): o for o in autograde.Runner(plan, command, said.append).run()}
    assert outcomes[("ann", "lesson_05")].status == "graded" and outcomes[("ann", "lesson_05")].tries == 2
    assert outcomes[("ann", "lesson_12")].status == "graded"
    # lesson 12 after lesson 05, for each student; a failure stops that student's later lessons, with a reason
    ann = [a for s, a in calls if s == "ann"]
    assert ann.index("lesson_12") > max(i for i, a in enumerate(ann) if a == "lesson_05")
    assert outcomes[("bad", "lesson_05")].status == "failed"
    assert "error processing assignment" in outcomes[("bad", "lesson_05")].reason
    assert outcomes[("bad", "lesson_12")].status == "not started" and ("bad", "lesson_12") not in calls
    lines = autograde.summary(list(outcomes.values()), 1.0, 2)
    assert lines[0].startswith("2 graded, 0 already graded (kept), 1 failed, 0 interrupted, 1 not started")
    assert lines[-1].endswith("attnlab class autograde lesson_05 lesson_12 --students bad")


def test_grader_env(tmp_path, monkeypatch):
    monkeypatch.setattr(autograde, "cores", lambda: 8)
    env = autograde.grader_env(4, {"ATTNLAB_CLASS": "class.json"}, start=tmp_path)
    assert env["OMP_NUM_THREADS"] == "2" and env["ATTNLAB_CLASS"] == str(tmp_path / "class.json")
    assert autograde.grader_env(16, {})["OMP_NUM_THREADS"] == "1"
    assert autograde.grader_env(2, {"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"  # the teacher's own


# --------------------------------------------------------------------------- the gradebook under several writers


@needs_nbgrader
def test_locked_gradebook_is_waited_for(tmp_path):
    course = _small_course(tmp_path, tmp_path / "no-hold")
    for student in ("ann", "bob"):
        _submit(course, student, "42")
    db = course / "gradebook.db"
    # plain nbgrader: another writer holds the gradebook past SQLite's 5 s, and the submission is not graded
    release = threading.Event()
    holder = _hold_lock(db, 120, release)  # nbgrader starts, reaches the gradebook, waits SQLite's 5 s, gives up
    plain = _nbgrader(course, "autograde", "a1", "--student", "ann", "--create", check=False)
    release.set()
    holder.join()
    assert plain.returncode != 0 and autograde.LOCKED in plain.stdout + plain.stderr, plain.stderr[-2000:]
    assert not (course / "autograded" / "ann" / "a1").exists()
    # the class's run: the same writer appears once the graders started; they wait for it and grade
    holders: list[threading.Thread] = []

    def say(line: str) -> None:
        if line.startswith("grading "):
            holders.append(_hold_lock(db, 9))  # past SQLite's own 5 s wait

    outcomes = autograde.autograde(course, ["a1"], jobs=2, create=True, say=say)
    holders[0].join()
    assert {(o.student, o.status) for o in outcomes} == {("ann", "graded"), ("bob", "graded")}
    assert _scores(course, "a1") == {"ann": 1.0, "bob": 1.0}
    # each grader's kernel on local sockets of its own, not TCP ports two kernels could both pick
    graded = json.loads((course / "autograded" / "ann" / "a1" / "a1.ipynb").read_text(encoding="utf-8"))
    assert "".join(graded["cells"][-1]["outputs"][0]["text"]).strip() == "ipc"


@needs_nbgrader
def test_interrupted_run_loses_nothing(tmp_path):
    course, hold = _quick_and_held(tmp_path, "slow")
    submitted = (course / "submitted" / "slow" / "a1" / "a1.ipynb").read_bytes()
    command = [str(BIN / "attnlab"), "class", "autograde", "a1", "--jobs", "2", "--create"]
    run = subprocess.Popen(command, cwd=course, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    lines = []
    for line in run.stdout:  # wait until quick is graded (slow waits on the hold file)
        lines.append(line)
        if line.startswith("quick a1: graded"):
            break
    time.sleep(2)
    run.send_signal(signal.SIGINT)
    out = "".join(lines) + run.stdout.read()
    assert run.wait(120) == 130, out
    assert "1 graded, 0 already graded (kept), 0 failed, 1 interrupted" in out, out
    assert "grade the rest with: attnlab class autograde a1 --students slow" in out, out
    assert not (course / "autograded" / "slow" / "a1").exists()  # no half-graded copy left behind
    assert (course / "submitted" / "slow" / "a1" / "a1.ipynb").read_bytes() == submitted
    assert _scores(course, "a1")["quick"] == 1.0
    # the same command again: quick's grade kept, slow graded (its answer is wrong: 0)
    hold.unlink()
    again = subprocess.run(command, cwd=course, env=_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 graded, 1 already graded (kept), 0 failed" in again.stdout, again.stdout
    assert _scores(course, "a1") == {"quick": 1.0, "slow": 0.0}


@needs_nbgrader
def test_stalled_grader_is_stopped_and_graded_again(tmp_path, monkeypatch):
    # a kernel that does nothing (as one that stopped answering does) past the stall limit: stopped, graded
    # again once, then named as failed; the other submission is graded meanwhile. A stopped grader gets 3 s,
    # not the class's 30, to end before it is killed (what it leaves is removed either way)
    monkeypatch.setattr(autograde, "STOP_WAIT_S", 3)
    course, hold = _quick_and_held(tmp_path, "stuck")
    said: list[str] = []
    outcomes = {o.student: o for o in autograde.autograde(course, ["a1"], jobs=2, create=True, say=said.append,
                                                          stall_s=8)}
    assert outcomes["quick"].status == "graded" and outcomes["quick"].stalls == 0
    stuck = outcomes["stuck"]
    assert stuck.status == "failed" and stuck.stalls == 2 and stuck.tries == 2, stuck
    assert "stopped answering twice" in stuck.reason and "ipykernel#1554" in stuck.reason
    assert not (course / "autograded" / "stuck" / "a1").exists()
    assert any(line.startswith("stuck a1: failed: its kernel stopped answering twice") for line in said), said
    # the same submission once the kernel answers again: graded (its answer is wrong: 0)
    hold.unlink()
    again = autograde.autograde(course, ["a1"], jobs=2, say=said.append, stall_s=8)
    assert {(o.student, o.status) for o in again} == {("quick", "skipped"), ("stuck", "graded")}
    assert _scores(course, "a1") == {"quick": 1.0, "stuck": 0.0}
