"""Graded work that cannot be gamed: under a class setting no check hands out its answer, a build-it
exercise cannot be answered with the package's own function, each student's numbers are their own, a
graded run is on the class's model whatever the notebook asks, the classroom guide works when followed
literally, and nothing a student receives holds the teacher's solutions.

``test_classroom_doc_followed_literally`` runs the real ``nbgrader`` on lesson 04 with four planted
students (skipped where nbgrader is not installed: the ``classroom`` extra).
"""

from __future__ import annotations

import csv
import fnmatch
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import attnlab as al
from attnlab.core import class_setting, memo
from attnlab.course import attempts, results
from attnlab.course.exercises import Feedback, graded, lesson_01, lesson_04, lesson_09
from attnlab.data import corpus
from attnlab.scratch.self_attention import merge_heads, scaled_dot_product_attention, split_heads
from attnlab.tools import assignments, autograde, bundle, take_work
from attnlab.tools.testing import save_tiny_model

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
needs_nbgrader = pytest.mark.skipif(shutil.which("nbgrader", path=str(BIN)) is None,
                                    reason="nbgrader is not installed (pip install -e .[classroom])")
LESSONS = sorted(p.stem for p in (ROOT / "attnlab" / "course" / "exercises").glob("lesson_*.py"))


@pytest.fixture
def in_class(tmp_path, monkeypatch, tiny_zh):
    """A class setting on the tiny Chinese model, in smoke mode, with a results folder of the test's own."""
    setting = class_setting.write(tmp_path / "class.json", str(tiny_zh.path), mode="smoke", name="attention-2027")
    monkeypatch.setenv(class_setting.ENV, str(setting))
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv(class_setting.STUDENT_ENV, "ann")
    return setting


def _checkers() -> list:
    """Every checked exercise of every lesson (the functions :func:`attnlab.course.exercises.exercise` wraps)."""
    found = []
    for name in LESSONS:
        module = importlib.import_module(f"attnlab.course.exercises.{name}")
        found += [f for f in vars(module).values() if callable(f) and hasattr(f, "exercise_id")
                  and f.__module__ == module.__name__]
    return found


#: what a check needs beyond the model and the answer, where it has no default
NEEDS = {"layer": 0, "head": 0, "row": 0, "col": 1, "i": 1, "j": 0, "text": "王者荣耀怎么玩",
         "texts": ["王者荣耀怎么玩", "今天天气很好"]}


def _call(checker, m, answer) -> Feedback | None:
    """``checker(m, answer)`` with the arguments it needs beyond those (:data:`NEEDS`), or None when it needs
    another."""
    extra = {}
    for name, parameter in list(inspect.signature(checker).parameters.items())[2:]:
        if parameter.default is inspect.Parameter.empty:
            if name not in NEEDS:
                return None
            extra[name] = NEEDS[name]
    return checker(m, answer, **extra)


# --------------------------------------------------------------------------- 1. no answer on the object


def test_answers_not_exposed_in_class(in_class, tiny_zh, monkeypatch):
    # the object itself: built with an answer, or given one later, it holds none under a class setting
    feedback = Feedback(False, "x", expected=3)
    feedback.expected = 4
    assert feedback.expected is None
    monkeypatch.delenv(class_setting.ENV)
    assert Feedback(False, "x", expected=3).expected == 3  # without a class, the teacher's tools still see it
    monkeypatch.setenv(class_setting.ENV, str(in_class))

    checkers = _checkers()
    assert len(checkers) >= 40 and {c.__module__.rsplit(".", 1)[1] for c in checkers} == set(LESSONS)
    called, leaked = [], []
    for checker in checkers:
        for answer in (None, -7, ("x", "y")):  # the placeholder, a wrong number, a wrong pair
            try:
                feedback = _call(checker, tiny_zh, answer)
            except Exception:  # noqa: BLE001 - an answer of a shape this check refuses outright
                continue
            if feedback is None:
                break
            called.append(checker.__name__)
            if feedback.expected is not None or "expected answer" in str(feedback):
                leaked.append((checker.__name__, answer))
    assert not leaked, leaked
    assert set(called) == {c.__name__ for c in checkers}  # every checker ran, and every one returns a Feedback
    assert {inspect.signature(c.__wrapped__).return_annotation for c in checkers} == {"Feedback"}
    # the planted student of the issue: `answer = ex04.check_head_width(m, None).expected` answers None
    copied = lesson_04.check_head_width(tiny_zh, None).expected
    assert copied is None and not lesson_04.check_head_width(tiny_zh, copied)
    # the same checks without a class do carry it (so the test above can fail)
    monkeypatch.delenv(class_setting.ENV)
    assert lesson_04.check_head_width(tiny_zh, -7).expected == tiny_zh.head_dim


# --------------------------------------------------------------------------- 2. build it yourself


def _own_split(x, n_heads):
    B, T, d = x.shape
    return x.reshape(B, T, n_heads, d // n_heads).transpose(1, 2)


def _own_merge(x):
    B, H, T, d_h = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d_h)


def test_build_it_refuses_reference(attempts_folder):
    from attnlab.scratch.self_attention import split_heads as renamed  # an alias taken before the check

    assert lesson_04.check_split_and_merge(None, (_own_split, _own_merge))
    for pair, name in (((split_heads, merge_heads), "split_heads"),
                       ((lambda x, n: renamed(x, n), _own_merge), "split_heads"),
                       ((_own_split, lambda x: merge_heads(x)), "merge_heads")):
        feedback = lesson_04.check_split_and_merge(None, pair)
        assert not feedback and f"calls the package's own {name}" in str(feedback), str(feedback)

    def sly_split(x, n_heads):  # catches the refusal and answers with its own code: still 0
        try:
            return renamed(x, n_heads)
        except Exception:  # noqa: BLE001
            return _own_split(x, n_heads)

    assert "package's own split_heads" in str(lesson_04.check_split_and_merge(None, (sly_split, _own_merge)))
    feedback = lesson_01.check_attention(None, scaled_dot_product_attention)
    assert not feedback and "package's own scaled_dot_product_attention" in str(feedback)
    # after the check the package's functions work again
    x = torch.randn(2, 3, 8)
    assert torch.equal(merge_heads(split_heads(x, 2)), x)

    # hidden random inputs: new at every check, so answers learned from one check fail the next
    seen = []

    def recording(q, k, v, mask=None):
        seen.append(q.clone())
        return _attend(q, k, v, mask)

    assert lesson_01.check_attention(None, recording)
    first = len(seen)
    assert lesson_01.check_attention(None, recording)
    assert all(a.shape != b.shape or not torch.equal(a, b) for a, b in zip(seen[:first], seen[first:]))
    remembered: list = []
    calls = [0]

    def replaying(q, k, v, mask=None):  # answers the second check with what the first check's inputs gave
        calls[0] += 1
        if len(remembered) < first:
            remembered.append(_attend(q, k, v, mask))
            return remembered[-1]
        return remembered[(calls[0] - 1) % first]

    assert lesson_01.check_attention(None, replaying)
    assert not lesson_01.check_attention(None, replaying)


def _attend(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


# --------------------------------------------------------------------------- 3. each student's numbers


def test_per_student_numbers(in_class, tiny_zh, monkeypatch):
    ann = corpus.texts("zh", 30, seed=0)
    assert ann == corpus.texts("zh", 30, seed=0)  # the same student, the same queries every time
    monkeypatch.setenv(class_setting.STUDENT_ENV, "bob")
    bob = corpus.texts("zh", 30, seed=0)
    monkeypatch.delenv(class_setting.ENV)
    outside = corpus.texts("zh", 30, seed=0)  # no class: the published sample, what seed 0 always gave
    monkeypatch.setenv(class_setting.ENV, str(in_class))
    assert ann != bob and ann != outside and bob != outside

    # a number a student reports: ann's answer is right for ann, wrong for bob and for the published run
    monkeypatch.setenv(class_setting.STUDENT_ENV, "ann")
    memo.forget(tiny_zh)
    ann_answer = lesson_09._expected_dispersion(tiny_zh, 1)
    assert lesson_09.check_dispersion(tiny_zh, ann_answer, 1)
    monkeypatch.setenv(class_setting.STUDENT_ENV, "bob")
    memo.forget(tiny_zh)
    assert not lesson_09.check_dispersion(tiny_zh, ann_answer, 1), "bob passed with ann's number"
    monkeypatch.delenv(class_setting.ENV)
    memo.forget(tiny_zh)
    assert not lesson_09.check_dispersion(tiny_zh, ann_answer, 1)
    memo.forget(tiny_zh)

    # a saved result says whose sample it was computed on, and the comparison with the reference says why it differs
    from attnlab.course import reference

    monkeypatch.setenv(class_setting.ENV, str(in_class))
    saved = json.loads(results.save("lesson_09_sample", {"a": 1.0}, model=tiny_zh).read_text(encoding="utf-8"))
    assert saved["sample"] == "student bob"
    published = {k: v for k, v in saved.items() if k != "sample"}  # the shipped references record none
    assert reference.likely_cause(saved, published)[0] == "sample"
    assert reference.likely_cause(published, published)[0] == "cpu"


# --------------------------------------------------------------------------- 4. a graded run


def _graded_course(tmp_path: Path, student: str, assignment: str = "lesson_04") -> tuple[Path, Path]:
    """An nbgrader course folder with the class file, and the folder nbgrader grades ``student``'s submission in."""
    course = tmp_path / "course"
    folder = course / class_setting.AUTOGRADED / student / assignment
    folder.mkdir(parents=True)
    shutil.copyfile(ROOT / "classroom" / "nbgrader_config.py", course / "nbgrader_config.py")
    return course, folder


def test_graded_run_on_class_model(tmp_path, monkeypatch, tiny_zh, capsys):
    course, folder = _graded_course(tmp_path, "ann")
    class_setting.write(course / "class.json", str(tiny_zh.path), mode="smoke", name="attention-2027")
    mine = class_setting.write(tmp_path / "mine.json", "bundled", mode="smoke", name="mine")
    # the kernel started in the submission's folder with the grader's environment (a relative class file) ...
    monkeypatch.setattr(class_setting, "_FIRST_CWD", str(folder))
    monkeypatch.setattr(class_setting, "initial_environ", lambda: {class_setting.ENV: "class.json"})
    # ... and the notebook switched the class file and the results folder afterwards
    monkeypatch.setenv(class_setting.ENV, str(mine))
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "elsewhere"))
    monkeypatch.setenv(class_setting.STUDENT_ENV, "bob")
    monkeypatch.setattr(class_setting, "_ASKED", [])
    monkeypatch.chdir(folder)
    assert class_setting.setting_file() == course / "class.json"
    assert class_setting.current().name == "attention-2027" and class_setting.student() == "ann"
    assert results.results_dir() == course / class_setting.AUTOGRADED / "ann" / "results"

    m = al.load_model("auto", verbose=False)
    assert Path(m.path) == Path(tiny_zh.path) and class_setting.other_models_asked() == []
    right = graded(lambda: lesson_04.check_head_width.__wrapped__(m, m.head_dim))
    assert right.correct
    lesson_04.check_head_width(m, m.head_dim)  # the student's own cell: a graded run saves no attempt
    assert not (results.results_dir() / attempts.FOLDER).exists()

    # the planted student: loads "bundled"; the graded run loads the class's model and every item scores 0
    other = al.load_model("bundled", verbose=False)
    said = capsys.readouterr().out
    assert Path(other.path) == Path(tiny_zh.path) and "graded run asks for the model 'bundled'" in said
    feedback = graded(lambda: lesson_04.check_head_width.__wrapped__(other, other.head_dim))
    assert not feedback and "loads the model 'bundled', not the class's" in str(feedback)
    # the same notebook outside a graded run loads what it asks for
    monkeypatch.setattr(class_setting, "_FIRST_CWD", str(tmp_path))
    monkeypatch.setattr(class_setting, "initial_environ", lambda: {})
    assert class_setting.graded_run() is None and class_setting.graded_model("bundled") == "bundled"


# --------------------------------------------------------------------------- 5. the guide, followed literally


def _blocks(markdown: str) -> list[tuple[str, str, str]]:
    """``(section, language, code)`` of every fenced block, in order."""
    out, section = [], ""
    for match in re.finditer(r"^(## [^\n]*)$|^```(\w*)\n(.*?)^```", markdown, re.M | re.S):
        if match.group(1):
            section = match.group(1)[3:].strip()
        else:
            out.append((section, match.group(2), match.group(3)))
    return out


STUDENTS = {  # name: (first cell change, answers of the three answer cells, build-it body: own or the package's)
    "right": ("", ["m.hidden_size // m.n_heads", "(1, m.n_heads, len(m.tokenizer(text)['input_ids']), m.head_dim)",
                   "(6 * m.head_dim, 7 * m.head_dim)"], "own"),
    "copier": ("", ["ex04.check_head_width(m, None).expected", "ex04.check_split_shape(m, None).expected",
                    "ex04.check_head_slice(m, None, head=6).expected"], "package"),
    "bundled": ('al.load_model("bundled")', ["m.hidden_size // m.n_heads",
                                             "(1, m.n_heads, len(m.tokenizer(text)['input_ids']), m.head_dim)",
                                             "(6 * m.head_dim, 7 * m.head_dim)"], "own"),
    "switcher": ("switch", ["32", "(1, 12, 9, 32)", "(192, 224)"], "own"),
}
OWN = {"split": "B, T, d = x.shape\n    return x.reshape(B, T, n_heads, d // n_heads).transpose(1, 2)",
       "merge": "B, H, T, d_h = x.shape\n    return x.transpose(1, 2).reshape(B, T, H * d_h)"}
PACKAGE = {"split": "return split_heads(x, n_heads)", "merge": "return merge_heads(x)"}


def _plant(release_nb: Path, submitted: Path, student: str, mine: Path) -> None:
    first, answers, build = STUDENTS[student]
    nb = json.loads(release_nb.read_text(encoding="utf-8"))
    given = iter(answers)
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if 'al.load_model("auto")' in source and first == "switch":
            source = f"import os\nos.environ['ATTNLAB_CLASS'] = {str(mine)!r}\n" + source
        elif 'al.load_model("auto")' in source and first:
            source = source.replace('al.load_model("auto")', first)
        if cell["metadata"].get("nbgrader", {}).get("solution"):
            if "answer = None" in source:
                source = source.replace("answer = None", f"answer = {next(given)}", 1)
            else:
                body = OWN if build == "own" else PACKAGE
                source = source.replace('raise NotImplementedError(_("write the split here"))', body["split"])
                source = source.replace('raise NotImplementedError(_("write the merge here"))', body["merge"])
                assert "write the split here" not in source and "write the merge here" not in source, source
        cell["source"] = source
    folder = submitted / student / release_nb.parent.name
    folder.mkdir(parents=True)
    (folder / release_nb.name).write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")


def _run_line(line: str, cwd: Path, env: dict, said: dict[str, str] | None = None) -> Path:
    """One command line of the guide, run as a teacher types it; returns the folder after it (``cd``).
    What the command printed goes into ``said`` under the command."""
    command = line.split("  #", 1)[0].strip()
    if command.startswith("cd "):
        return (cwd / command[3:].strip()).resolve()
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{command}\n{done.stdout[-4000:]}\n{done.stderr[-3000:]}"
    if said is not None:
        said[command] = done.stdout
    return cwd


@pytest.mark.notebooks
@needs_nbgrader
def test_classroom_doc_followed_literally(tmp_path, tiny_factory):
    guide = (ROOT / "docs" / "classroom.md").read_text(encoding="utf-8")
    blocks = _blocks(guide)
    # the course's clone: its package, lessons and classroom folder (the guide's install lines need a network)
    clone = tmp_path / "attnlab"
    clone.mkdir()
    for part in ("attnlab", "notebooks", "classroom"):
        (clone / part).symlink_to(ROOT / part)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNLAB_")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT), ATTNLAB_OFFLINE="1",
               OMP_NUM_THREADS="1")
    tiny = save_tiny_model(tmp_path / "class-model", language="zh")

    # "One model for the class": the command that writes the class file, and the file it shows
    [(_s, _l, write_line)] = [b for b in blocks if b[0] == "One model for the class" and b[1] == "bash"]
    _run_line(write_line.strip(), clone, env)
    [(_s, _l, shown)] = [b for b in blocks if b[0] == "One model for the class" and b[1] == "json"]
    assert json.loads((clone / "class.json").read_text(encoding="utf-8")) == json.loads(shown)
    # as far as this machine allows: the class's model is a tiny one, in smoke mode
    class_setting.write(clone / "class.json", str(tiny), mode="smoke", name=json.loads(shown)["name"])
    mine = class_setting.write(tmp_path / "mine.json", "bundled", mode="smoke", name="mine")

    # "Assignments with nbgrader", line by line, the students' work planted where the guide says they submit
    roster = [("right", "Ann", "Right", "ann@example.edu"), ("copier", "Cai", "Copier", "cai@example.edu"),
              ("bundled", "Bo", "Bundled", "bo@example.edu"), ("switcher", "Sam", "Switcher", "sam@example.edu")]
    with open(clone / "roster.csv", "w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([("id", "first_name", "last_name", "email"), *roster])
    [(_s, _l, commands)] = [b for b in blocks if b[0] == "Assignments with nbgrader" and b[1] == "bash"]
    cwd, said = clone, {}
    for line in commands.strip().splitlines():
        if line.startswith("# ..."):  # the students fetch, work and submit
            release_nb = next((cwd / "release" / "lesson_04").glob("*.ipynb"))
            for student in STUDENTS:
                _plant(release_nb, cwd / "submitted", student, mine)
            continue
        cwd = _run_line(line, cwd, env, said)
    course = clone / "course"
    # the class graded on every core, each grader on its share of them
    jobs = min(autograde.cores(), len(STUDENTS))
    graded = said["attnlab class autograde lesson_04 --create"]
    assert f"grading 4 submissions of 4 students, {jobs} at once, 1 thread(s) each" in graded, graded
    assert f"{len(STUDENTS)} graded, 0 already graded (kept), 0 failed" in graded, graded
    assert (course / "class.json").is_file() and sorted(p.name for p in (course / "source").iterdir())[:2] == [
        "lesson_00", "lesson_00_zh"]

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {s: gradebook.find_submission("lesson_04", s).score for s in STUDENTS}
    assert scores == {"right": 4.0, "copier": 0.0, "bundled": 0.0, "switcher": 1.0}, scores
    feedback = {s: next((course / "feedback" / s / "lesson_04").glob("*.html")).read_text(encoding="utf-8")
                for s in STUDENTS}
    assert "package&#39;s own split_heads" in feedback["copier"] or "package's own split_heads" in feedback["copier"]
    assert "should be a number, got None" in feedback["copier"]
    assert "not the class" in feedback["bundled"] and "bundled" in feedback["bundled"]
    assert "head width = 32 is too" in feedback["switcher"]  # graded on the class's model, not the one switched to
    # the export names every student, as the roster does
    with open(course / "grades.csv", encoding="utf-8") as grades:
        rows = {row["student_id"]: row for row in csv.DictReader(grades)}
    for student, first, last, email in roster:
        assert (rows[student]["first_name"], rows[student]["last_name"], rows[student]["email"]) == (
            first, last, email)
    # graded runs wrote per student, each in their own results folder, never into the teacher's checkout
    assert {p.name for p in (course / "autograded").iterdir()} == set(STUDENTS)
    assert all((course / "autograded" / s / "results").is_dir() for s in STUDENTS)
    assert not (clone / "results").exists() and not (course / "results").exists()
    autograded = json.loads(next((course / "autograded" / "switcher" / "lesson_04").glob("*.ipynb")).read_text(
        encoding="utf-8"))
    assert "attention-2027" in json.dumps([c.get("outputs", []) for c in autograded["cells"]], ensure_ascii=False)

    # "Take your work with you": the last cell on Binder, then the bring-back cell in a new session
    take, bring = [b[2] for b in blocks if b[0] == "Take your work with you (Colab and Binder)" and b[1] == "python"]
    session = tmp_path / "binder"
    (session / "results" / "exercises").mkdir(parents=True)
    (session / "results" / "exercises" / "04.head_width.json").write_text("{}", encoding="utf-8")
    shutil.copyfile(next((course / "release" / "lesson_04").glob("*.ipynb")), session / "04_multi_head_splitting.ipynb")
    run_env = {**env, "ATTNLAB_DOOR": "binder", "ATTNLAB_RESULTS": str(session / "results")}
    done = subprocess.run([sys.executable, "-c", take], cwd=session, env=run_env, capture_output=True, text=True)
    assert done.returncode == 0 and "1 notebooks: 04_multi_head_splitting.ipynb" in done.stdout, done.stderr
    later = tmp_path / "later"
    later.mkdir()
    shutil.copy(next(session.glob(f"{take_work.KIND}-2*.zip")), later)
    done = subprocess.run([sys.executable, "-c", bring], cwd=later, env={**run_env, "ATTNLAB_RESULTS": str(
        later / "results")}, capture_output=True, text=True)
    assert done.returncode == 0 and (later / "results" / "exercises" / "04.head_width.json").is_file(), done.stderr
    assert (later / "04_multi_head_splitting.ipynb").is_file()


# --------------------------------------------------------------------------- 6. what students receive


def _teachers(name: str) -> bool:
    return (name.startswith("classroom/solutions/") or Path(name).name in ("gradebook.db", "grades.csv")
            or re.fullmatch(r"solutions_\d\d\.py", Path(name).name) is not None)


def _dockerignored(name: str, patterns: list[str]) -> bool:
    """Whether Docker's rules (as repo2docker passes the folder to it) leave ``name`` out of the image."""
    for pattern in patterns:
        pattern = pattern.strip("/")
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + "/*"):
            return True
        if pattern.startswith("**/") and (fnmatch.fnmatchcase(name, pattern[3:])
                                          or fnmatch.fnmatchcase(name, "*/" + pattern[3:])):
            return True
    return False


def test_student_artefacts_hold_no_solutions(tmp_path):
    # a teacher's clone after the guide's steps: the graded source, a gradebook and the grades in course/
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(clone)], check=True)
    assert [p.name for p in (clone / "classroom" / "solutions").glob("lesson_*.py")]  # the clone has them
    assignments.write_course(clone / "course", ["04"], ("en",), classroom=clone / "classroom")
    for name in ("gradebook.db", "grades.csv"):
        (clone / "course" / name).write_text("private", encoding="utf-8")
    assert (clone / "course" / "source" / "lesson_04" / "solutions_04.py").is_file()
    elsewhere = clone / "my-class"  # a course folder under another name
    shutil.copytree(clone / "course", elsewhere)

    # the release zip: what `git archive` (GitHub's source zip of a tag) makes of the clone
    release = tmp_path / "release.zip"
    subprocess.run(["git", "archive", "--format=zip", "-o", str(release), "HEAD"], cwd=clone, check=True)
    with zipfile.ZipFile(release) as archive:
        names = archive.namelist()
    assert "attnlab/course/exercises/lesson_04.py" in names
    assert [n for n in names if _teachers(n)] == []
    # nothing of the teacher's is left for git to add (status) or for the bundle to take
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone, check=True,
                            capture_output=True, text=True).stdout
    assert "course/" not in status and "gradebook" not in status
    files = bundle.course_files(clone)
    assert "attnlab/course/exercises/lesson_04.py" in files
    assert [f for f in files if _teachers(f) or f.startswith(("course/", "my-class/"))] == []

    # the Binder / Z2JH image: repo2docker of the repository (its tracked files), .dockerignore, then postBuild
    tracked = subprocess.run(["git", "ls-files"], cwd=clone, check=True, capture_output=True,
                             text=True).stdout.split()
    patterns = [p for p in (clone / ".dockerignore").read_text(encoding="utf-8").splitlines()
                if p.strip() and not p.startswith("#")]
    image = tmp_path / "image"
    for name in tracked:
        if not _dockerignored(name, patterns):
            (image / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(clone / name, image / name)
    assert not (image / "classroom" / "solutions").exists()
    post_build = (clone / "postBuild").read_text(encoding="utf-8")
    paragraph = post_build.split("# The image is what students work in", 1)[1].split("\n\n", 1)[0]
    cleanup = "\n".join(line for line in paragraph.splitlines()[1:] if not line.startswith("#"))
    assert "classroom/solutions" in cleanup
    (image / "classroom" / "solutions").mkdir(parents=True)  # as if the image had been built without .dockerignore
    (image / "classroom" / "solutions" / "lesson_04.py").write_text("x", encoding="utf-8")
    subprocess.run(["bash", "-euo", "pipefail", "-c", cleanup], cwd=image, check=True)
    in_image = [p.relative_to(image).as_posix() for p in image.rglob("*") if p.is_file()]
    assert "attnlab/course/exercises/lesson_04.py" in in_image
    assert [n for n in in_image if _teachers(n)] == []


# --------------------------------------------------------------------------- one results folder per student


def test_one_results_folder_per_student(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNLAB_RESULTS", raising=False)
    monkeypatch.delenv(class_setting.ENV, raising=False)
    # a student's fetched assignments (~/lesson_05, ~/lesson_12): one results folder beside them
    home = tmp_path / "home"
    for name in ("lesson_05", "lesson_12_zh"):
        (home / name).mkdir(parents=True)
    monkeypatch.chdir(home / "lesson_05")
    assert results.results_dir() == home / "results"
    results.save("lesson_05_patterns", {"share": 0.5}, model="m")
    assert (home / "lesson_05" / "results").is_symlink()  # travels with the submission
    assert (home / "lesson_05" / "results" / "lesson_05_patterns.json").is_file()
    monkeypatch.chdir(home / "lesson_12_zh")
    assert results.load("lesson_05_patterns", model="m") == {"share": 0.5}  # lesson 12 reads it, no re-run

    # graded runs: per student across assignments, never the teacher's checkout, never another student's
    folders = {}
    course, _first = _graded_course(tmp_path / "grader", "ann", "lesson_05")
    for student, assignment in (("ann", "lesson_05"), ("ann", "lesson_12"), ("bob", "lesson_05")):
        folder = course / class_setting.AUTOGRADED / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setattr(class_setting, "_FIRST_CWD", str(folder))
        monkeypatch.setattr(class_setting, "initial_environ", lambda: {})
        monkeypatch.setenv("ATTNLAB_RESULTS", str(ROOT / "results"))  # what the notebook may set: ignored
        folders[(student, assignment)] = results.results_dir()
    grader = course / class_setting.AUTOGRADED
    assert folders == {("ann", "lesson_05"): grader / "ann" / "results",
                       ("ann", "lesson_12"): grader / "ann" / "results",
                       ("bob", "lesson_05"): grader / "bob" / "results"}


def test_take_work_holds_the_colab_notebook(tmp_path, monkeypatch, capsys):
    """On Colab the open notebook lives in Drive or in the browser, not next to the kernel: the pack reads it
    through Colab's own API (here a stand-in for ``google.colab``) and says it holds it."""
    import types

    notebook = {"cells": [{"cell_type": "code", "source": "answer = 144"}], "metadata": {"colab": {
        "name": "05_reading_heatmaps.ipynb"}}, "nbformat": 4, "nbformat_minor": 5}
    downloads = []
    message = types.SimpleNamespace(blocking_request=lambda kind, request="", timeout_sec=0: {"ipynb": notebook}
                                    if kind == "get_ipynb" else None)
    colab = types.ModuleType("google.colab")
    colab._message = message
    colab.files = types.SimpleNamespace(download=downloads.append)
    google = types.ModuleType("google")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    monkeypatch.setenv("ATTNLAB_DOOR", "colab")
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "lesson_05_patterns.json").write_text("{}", encoding="utf-8")
    packed = take_work.offer()
    assert downloads == [str(packed)]
    assert "1 notebooks: 05_reading_heatmaps.ipynb" in capsys.readouterr().out
    with zipfile.ZipFile(packed) as archive:
        assert json.loads(archive.read("notebooks/05_reading_heatmaps.ipynb")) == notebook
    assert take_work.holds(packed) == {"results": 1, "notebooks": ["05_reading_heatmaps.ipynb"]}
