"""The classroom on Jupyter's own tools: nbgrader assignments with the answers kept back, one model for
the whole class, and a student's work taken along and brought back.

``test_nbgrader_release`` and ``test_nbgrader_autograde`` run the real ``nbgrader`` (skipped where it is
not installed: the ``classroom`` extra; CI installs it with ``dev``). Autograding executes lesson 00 six
times (three planted submissions, two languages, the two languages at once) on a tiny model in smoke mode.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

import attnlab as al
from attnlab.core import class_setting, config
from attnlab.core.fast import choose_precision
from attnlab.course import attempts
from attnlab.course.exercises import lesson_04
from attnlab.tools import assignments, class_collect, take_work
from attnlab.tools.cli import main
from attnlab.tools.testing import save_tiny_model
from classroom_solutions import teacher  # tests/classroom_solutions.py

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import nb  # noqa: E402  scripts/nb.py: the lessons' standard cells

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # nbgrader runs alembic from the same environment
needs_nbgrader = pytest.mark.skipif(shutil.which("nbgrader", path=str(BIN)) is None,
                                    reason="nbgrader is not installed (pip install -e .[classroom])")


def _nbgrader(course: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    run_env = {**os.environ, **(env or {}), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=run_env, capture_output=True, text=True,
                          timeout=420)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _sources(nb: dict) -> list[str]:
    return ["".join(c["source"]) for c in nb["cells"]]


def _regions(text: str) -> list[str]:
    """The code lines between the solution markers of a source cell."""
    lines, inside, out = text.splitlines(), False, []
    for line in lines:
        if assignments.BEGIN in line or assignments.BEGIN_TESTS in line:
            inside = True
        elif assignments.END in line or assignments.END_TESTS in line:
            inside = False
        elif inside and line.strip():
            out.append(line.strip())
    return out


@pytest.fixture
def class_model(tmp_path, monkeypatch):
    """A tiny Chinese-reading model fixed for the class, in smoke mode: ``(folder, class file)``."""
    folder = save_tiny_model(tmp_path / "class-model", language="zh")
    setting = class_setting.write(tmp_path / "class.json", str(folder), precision="fp32", mode="smoke",
                                  name="attention-2027")
    monkeypatch.setenv(class_setting.ENV, str(setting))
    return folder, setting


# --------------------------------------------------------------------------- release


@needs_nbgrader
def test_nbgrader_release(tmp_path):
    course = tmp_path / "course"
    written = assignments.write_course(course)
    lessons = sorted(assignments.lesson_notebooks("en", ROOT))
    assert sorted(written) == sorted(f"lesson_{n}" + s for n in lessons for s in ("", "_zh"))
    assert all(graded >= 3 for graded in written.values())
    _nbgrader(course, "generate_assignment", "*", "--force", "--no-db")
    for name, graded in written.items():
        source_nb = next((course / "source" / name).glob("*.ipynb"))
        release = course / "release" / name
        assert sorted(p.name for p in release.iterdir()) == [source_nb.name]  # solutions_NN.py stays behind
        student = json.loads((release / source_nb.name).read_text(encoding="utf-8"))
        text = "\n".join(_sources(student))
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "solution_", "solutions_", "__wrapped__"):
            assert marker not in text, (name, marker)
        kept_back = [line for cell in _sources(json.loads(source_nb.read_text(encoding="utf-8")))
                     for line in _regions(cell)]
        assert len(kept_back) >= 3 * graded
        lines = {line.strip() for line in text.splitlines()}
        leaked = [line for line in kept_back if line in lines and not line.startswith("import ")]
        assert not leaked, (name, leaked)
        tests = [c for c in student["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
        assert len(tests) == graded and all(c["metadata"]["nbgrader"]["locked"] for c in tests)
        answers = [c for c in student["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
        assert len(answers) == graded
    # the installed package holds no worked solution, and the wheel takes no classroom/ folder
    import attnlab.course.exercises as exercises

    for path in Path(exercises.__file__).parent.glob("*.py"):
        assert "def solution_" not in path.read_text(encoding="utf-8"), path
    for n in lessons:
        module = __import__(f"attnlab.course.exercises.lesson_{n}", fromlist=["x"])
        assert not [k for k in vars(module) if k.startswith("solution")], n
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'include = ["attnlab*"]' in pyproject
    # the command: one lesson, one edition; a lesson that does not exist is one sentence
    assert main(["class", "assignments", str(tmp_path / "one"), "--lessons", "04", "--lang", "zh"]) == 0
    assert [p.name for p in (tmp_path / "one" / "source").iterdir()] == ["lesson_04_zh"]
    assert main(["class", "assignments", str(tmp_path / "two"), "--lessons", "99"]) == 2


# --------------------------------------------------------------------------- autograde


def _plant(release_nb: Path, submitted: Path, student: str, answers: list) -> None:
    """A student's submission: the released notebook with ``answers`` (None: left blank) in its answer cells."""
    nb = json.loads(release_nb.read_text(encoding="utf-8"))
    given = iter(answers)
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("solution"):
            answer = next(given)
            if answer is not None:
                cell["source"] = "".join(cell["source"]).replace("answer = None", f"answer = {answer!r}", 1)
    folder = submitted / student / release_nb.parent.name
    folder.mkdir(parents=True)
    (folder / release_nb.name).write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")


def _grade_one_language(tmp_path: Path, language: str, right: list) -> dict:
    course = tmp_path / f"course-{language}"
    assignments.write_course(course, ["00"], (language,))
    name = assignments.assignment_name("00", language)
    _nbgrader(course, "generate_assignment", name, "--force")
    release_nb = next((course / "release" / name).glob("*.ipynb"))
    wrong = [right[0], right[1] + 1, "[CLS]" if right[2] != "[CLS]" else "[SEP]"]
    for student, answers in (("right", right), ("wrong", [right[0], wrong[1], None]), ("blank", [None] * 3)):
        _plant(release_nb, course / "submitted", student, answers)
    _nbgrader(course, "autograde", name, "--create", "--force")
    _nbgrader(course, "generate_feedback", name, "--force")
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {s: (gradebook.find_submission(name, s).score, gradebook.find_submission(name, s).max_score)
                  for s in ("right", "wrong", "blank")}
    feedback = {s: next((course / "feedback" / s / name).glob("*.html")).read_text(encoding="utf-8")
                for s in scores}
    return {"scores": scores, "feedback": feedback, "course": course}


@pytest.mark.notebooks
@needs_nbgrader
def test_nbgrader_autograde(tmp_path, class_model):
    folder, _setting = class_model
    m = al.load_model("auto", verbose=False)
    assert Path(m.path) == folder
    sol = teacher("00")
    right = [sol.solution_total_heads(m), sol.solution_token_count(m), sol.solution_top_key(m, layer=0, head=0)]
    with ThreadPoolExecutor(2) as pool:  # the two languages at once: two courses, two gradebooks
        graded = dict(zip(("en", "zh"), pool.map(lambda lang: _grade_one_language(tmp_path, lang, right),
                                                 ("en", "zh"))))
    for language, result in graded.items():
        assert result["scores"] == {"right": (3.0, 3.0), "wrong": (1.0, 3.0), "blank": (0.0, 3.0)}, language
        for student, html in result["feedback"].items():
            assert "Graded: exercise 00.total_heads" in html, (language, student)
        # the grader's hidden check says what was wrong, in the lesson's language
        assert "not yet" in result["feedback"]["wrong"] if language == "en" else "还不对" in result["feedback"]["wrong"]
    # class collect reads nbgrader's submissions: a student's results folder travels with the notebook
    submitted = graded["en"]["course"] / "submitted"
    exercises = submitted / "right" / "lesson_00" / "results" / "exercises"
    exercises.mkdir(parents=True)
    record = {"schema": 1, "kind": attempts.KIND, "exercise": "00.total_heads",
              "attempts": [{"attempt": 1, "answer": right[0], "right": True, "model": str(folder),
                            "precision": "fp32", "mode": "smoke"}]}
    (exercises / "00.total_heads.json").write_text(json.dumps(record), encoding="utf-8")
    rows = class_collect.read_class(submitted, class_setting.current()).rows
    assert [(r["student"], r["exercise"], r["right"], r["differs"]) for r in rows] == [
        ("right", "00.total_heads", True, "")]
    # the graded runs ran under the class setting: the lesson's header line names it
    autograded = json.loads(next((graded["en"]["course"] / "autograded" / "right" / "lesson_00")
                                 .glob("*.ipynb")).read_text(encoding="utf-8"))
    outputs = json.dumps([c.get("outputs", []) for c in autograded["cells"]], ensure_ascii=False)
    assert "attention-2027" in outputs and "smoke mode" in outputs


# --------------------------------------------------------------------------- one model for the class


def test_class_model_pinned(tmp_path, class_model, monkeypatch, capsys):
    folder, setting_file = class_model
    # what a student may have set: another model, another precision, the full sizes
    monkeypatch.setenv("ATTNLAB_MODEL", "bundled")
    monkeypatch.setenv("ATTNLAB_PRECISION", "bf16")
    monkeypatch.setenv("ATTNLAB_SMOKE", "0")
    m = al.load_model("auto")
    said = capsys.readouterr().out
    assert Path(m.path) == folder and "class setting" in said and str(setting_file) in said
    assert choose_precision(m, "auto") == ("fp32", f"the class setting {setting_file}")
    assert config.is_smoke() and config.pick(100, 3) == 3
    header = al.mode_line()
    assert "attention-2027" in header and str(folder) in header and "fp32" in header
    # the setting is installed once for the environment: <prefix>/etc/attnlab/class.json
    monkeypatch.delenv(class_setting.ENV)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    assert class_setting.current() is None
    class_setting.write(class_setting.default_file(), str(folder), mode="smoke")
    assert class_setting.current().model == str(folder)
    monkeypatch.setenv(class_setting.ENV, str(setting_file))
    # a bad setting stops with one sentence
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "kind": "attnlab-class", "model": "x", "precision": "fp8"}', encoding="utf-8")
    monkeypatch.setenv(class_setting.ENV, str(bad))
    with pytest.raises(class_setting.ClassSettingError, match="precision 'fp8'"):
        al.load_model("auto")
    monkeypatch.setenv(class_setting.ENV, str(setting_file))

    # each attempt records the setting; in a class nothing is revealed, whatever the student switches on
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "uploads" / "ann" / "results"))
    monkeypatch.setenv("ATTNLAB_SOLUTIONS", "1")
    attempts.show_solutions(True)
    try:
        for _ in range(attempts.REVEAL_AFTER + 1):
            feedback = lesson_04.check_head_width(m, 1)
        assert not feedback and feedback.expected is None  # under a class setting the object holds no answer
        assert "expected answer" not in str(feedback) and "attempt" not in str(feedback)
        assert len(attempts.read("04.head_width")) == attempts.REVEAL_AFTER + 1
    finally:
        attempts.show_solutions(False)
    lesson_04.check_head_width(m, m.head_dim)
    saved = attempts.read("04.head_width")[-1]
    assert (saved["model"], saved["precision"], saved["mode"]) == (m.name, "fp32", "smoke")

    # bob ran the bundled model in full mode (before the class file was there); collect flags it
    bob = tmp_path / "uploads" / "bob" / "results" / "exercises"
    bob.mkdir(parents=True)
    record = {"schema": 1, "kind": attempts.KIND, "exercise": "04.head_width",
              "attempts": [{"attempt": 1, "answer": 32, "right": True, "model": "all-MiniLM-L6-v2",
                            "precision": "fp32", "mode": "full"}]}
    (bob / "04.head_width.json").write_text(json.dumps(record), encoding="utf-8")
    found = class_collect.collect(tmp_path / "uploads", tmp_path / "out", class_setting.current())
    flags = {(r["student"], r["exercise"]): r["differs"] for r in found.rows}
    assert flags[("ann", "04.head_width")] == ""
    assert flags[("bob", "04.head_width")] == "model all-MiniLM-L6-v2; mode full"
    assert main(["class", "collect", str(tmp_path / "uploads"), "--out", str(tmp_path / "out2"),
                 "--class", str(setting_file)]) == 0
    assert "bob, 04.head_width: not under the class setting (model all-MiniLM-L6-v2; mode full)" in capsys.readouterr().out


# --------------------------------------------------------------------------- take your work with you


def test_take_your_work(tmp_path, monkeypatch, tiny_en, capsys):
    # every lesson of both editions brings work back near its top and offers to take it at its end
    for path in nb.all_notebooks():
        assert [p for p in nb.problems(path) if "bring" in p or "take-your-work" in p] == [], path
    broken = nbformat.read(str(nb.notebooks()[0]), as_version=4)
    broken.cells = broken.cells[:-1]
    nbformat.write(broken, str(tmp_path / "00_tour.ipynb"))
    assert any("take-your-work" in p for p in nb.problems(tmp_path / "00_tour.ipynb"))  # the check can fail

    results = tmp_path / "session-1" / "results"
    monkeypatch.setenv("ATTNLAB_RESULTS", str(results))
    monkeypatch.chdir(tmp_path)
    lesson_04.check_head_width(tiny_en, 3)
    lesson_04.check_head_width(tiny_en, tiny_en.head_dim)
    (results / "lesson_05_patterns.json").write_text('{"a": 1}', encoding="utf-8")
    before = {p.relative_to(results).as_posix(): p.read_bytes() for p in results.rglob("*") if p.is_file()}

    # the lesson's own last cell on Binder: packs the results and the notebook, says what it holds and where it is
    monkeypatch.setenv("ATTNLAB_DOOR", "binder")
    exec(nb.take_work_cell_source(), {})
    [packed] = [p for p in tmp_path.glob(f"{take_work.KIND}-*.zip") if p.name != take_work.LATEST]
    said = capsys.readouterr().out.replace("\n", "")
    assert str(packed) in said and f"{len(before)} files of results" in said and "1 notebooks: 00_tour.ipynb" in said
    with zipfile.ZipFile(packed) as archive:
        assert sorted(archive.namelist()) == sorted([take_work.MANIFEST, "notebooks/00_tour.ipynb"]
                                                    + [f"results/{k}" for k in before])
        assert archive.read("notebooks/00_tour.ipynb") == (tmp_path / "00_tour.ipynb").read_bytes()
    assert take_work.holds(packed) == {"results": len(before), "notebooks": ["00_tour.ipynb"]}

    # each save point packs again (Colab, Binder): a session that dies before the last cell still leaves the work
    lesson_04.check_head_width(tiny_en, 5)
    with zipfile.ZipFile(tmp_path / take_work.LATEST) as archive:
        saved = json.loads(archive.read("results/exercises/04.head_width.json"))
    assert [a["answer"] for a in saved["attempts"]] == [3, tiny_en.head_dim, 5]
    assert take_work.bring_back_here(tmp_path) == []  # what this session packed is not brought back into it
    monkeypatch.setenv("ATTNLAB_DOOR", "local")
    (results / "exercises" / "04.head_width.json").write_bytes(before["exercises/04.head_width.json"])

    # a new session: an empty results folder; the first cell brings the uploaded file back, once
    fresh = tmp_path / "session-2"
    fresh.mkdir()
    shutil.copy(packed, fresh / packed.name)
    monkeypatch.setenv("ATTNLAB_RESULTS", str(fresh / "results"))
    monkeypatch.chdir(fresh)
    exec(nb.bring_back_cell_source(), {})  # the lesson's own bring-back cell
    assert f"({len(before) + 1} files)" in capsys.readouterr().out  # the results and the notebook
    after = {p.relative_to(fresh / "results").as_posix(): p.read_bytes()
             for p in (fresh / "results").rglob("*") if p.is_file()}
    assert after == before
    assert (fresh / "00_tour.ipynb").read_bytes() == (tmp_path / "00_tour.ipynb").read_bytes()
    assert take_work.bring_back_here(fresh) == []  # done once
    monkeypatch.chdir(tmp_path)
    assert [a["right"] for a in attempts.read("04.head_width")] == [False, True]

    # the command: a changed file is kept beside, never lost
    (fresh / "results" / "lesson_05_patterns.json").write_text('{"a": 2}', encoding="utf-8")
    assert main(["work", "bring", str(packed)]) == 0
    assert (fresh / "results" / "lesson_05_patterns.json").read_text(encoding="utf-8") == '{"a": 1}'
    assert [p.name for p in (fresh / "results").glob("lesson_05_patterns.json.before-*")]
    assert main(["work", "take", "--out", str(tmp_path / "again.zip")]) == 0
    assert (tmp_path / "again.zip").is_file()

    # damaged or foreign files stop with one sentence and write nothing
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(packed) as src, zipfile.ZipFile(damaged, "w") as out:
        for info in src.infolist():
            data = src.read(info)
            out.writestr(info.filename, data + b" " if info.filename.endswith("patterns.json") else data)
    hostile = tmp_path / "hostile.zip"
    with zipfile.ZipFile(hostile, "w") as out:
        out.writestr(take_work.MANIFEST, json.dumps({"kind": take_work.KIND, "schema": 1,
                                                     "files": {"results/../../evil.py": "0" * 64}}))
        out.writestr("results/../../evil.py", "print('x')")
    for bad, why in ((damaged, "checksum"), (hostile, "outside results")):
        target = tmp_path / "session-3"
        with pytest.raises(ValueError, match=why):
            take_work.bring(bad, target)
        assert not target.exists()
    assert main(["work", "bring", str(results / "lesson_05_patterns.json")]) == 2
    assert "not a readable zip" in capsys.readouterr().err
    assert not (tmp_path.parent / "evil.py").exists()
