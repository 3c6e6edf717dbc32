"""``attnlab class assignments DIR``: an nbgrader course folder from the lessons, solutions kept back.

nbgrader (0.9, JupyterLab 4) is how Jupyter hands out graded work: the teacher's *source*
notebooks hold the solutions between markers, ``nbgrader generate_assignment`` writes the
students' versions without them, hidden tests grade the submissions
(``nbgrader autograde``) and ``nbgrader generate_feedback`` returns HTML feedback. This
module writes the source side from the lessons::

    attnlab class assignments course/                    # every lesson, English and Chinese
    attnlab class assignments course/ --lessons 00 04 --lang zh

``DIR`` gets the course's ``nbgrader_config.py`` (from ``classroom/``) and, per lesson and
language, ``source/lesson_NN`` (English, from ``notebooks/``) or ``source/lesson_NN_zh``
(Chinese, from ``notebooks/zh/``), holding the lesson notebook and ``solutions_NN.py``, the
teacher's worked solutions (``classroom/solutions/lesson_NN.py``; the config keeps that
file out of every release). In the notebook each exercise becomes two cells:

* the student's answer cell (an nbgrader *solution* cell): the lesson's own cell, with the
  worked answer between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (for an answer, a
  call of the teacher's ``solution_<name>``; for a build-it-yourself function, the worked
  body, before the placeholder ``raise NotImplementedError``);
* a locked, graded cell (:data:`POINTS` per exercise) whose hidden test calls the course's
  own check, the one the student's cell calls, without saving an attempt: the check
  computes the right answer from the run being graded (its model, its numbers), never
  from a fixed value.

A lesson's notes for teachers (a markdown cell that starts with "Teachers:" or "给老师：")
are left out: the source folder itself is the teacher's. Nothing here runs a model or nbgrader.
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import importlib.util
import inspect
import json
import re
import shutil
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from attnlab.core.language import lessons_folder
from attnlab.core.models import course_root

#: points of one exercise's hidden test
POINTS = 1
LANGUAGES = ("en", "zh")
#: a teachers' note opens with one of these (English, Chinese)
TEACHER_NOTES = ("Teachers:", "给老师：")
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_TESTS, END_TESTS = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_CHECK_CALL = re.compile(r"\b(\w+)\.(check_\w+)\(")
_LESSON = re.compile(r"^(\d\d)_\w+\.ipynb$")


def classroom_folder() -> Path:
    """``classroom/`` of the course checkout this runs in (the teacher's source folder)."""
    root = course_root(Path.cwd(), installed=False) or course_root(Path(__file__).resolve().parent, installed=False)
    if root is None or not (root / "classroom" / "solutions").is_dir():
        raise ValueError("the teacher's source folder classroom/solutions is not here: run this in a checkout "
                         "of the course (git clone), where classroom/ holds the worked solutions")
    return root / "classroom"


def lesson_notebooks(language: str, root: Path) -> dict[str, Path]:
    """``{"00": notebooks/00_tour.ipynb, ...}`` (``notebooks/zh/`` for Chinese)."""
    folder = lessons_folder(root, language)
    return {m.group(1): p for p in sorted(folder.glob("*.ipynb")) if (m := _LESSON.match(p.name))}


def assignment_name(lesson: str, language: str) -> str:
    """``lesson_04`` (English) or ``lesson_04_zh`` (Chinese)."""
    return f"lesson_{lesson}" + ("_zh" if language == "zh" else "")


# --------------------------------------------------------------------------- one exercise cell


def _check_call(code: str) -> tuple[str, str, ast.Call] | None:
    """``(alias, checker, call)`` of the cell's ``<alias>.check_<name>(...)`` statement, if it has one."""
    if not _CHECK_CALL.search(code):
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:  # a cell with IPython's magics is no exercise
        return None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.attr.startswith("check_")):
            return node.func.value.id, node.func.attr, node
    return None


def _arguments(call: ast.Call, checker: Callable, code: str) -> dict[str, str]:
    """The call's arguments as ``{parameter: source text}``, bound to the checker's signature."""
    args = [ast.get_source_segment(code, a) for a in call.args]
    kwargs = {k.arg: ast.get_source_segment(code, k.value) for k in call.keywords}
    bound = inspect.signature(checker).bind_partial(*args, **kwargs)
    return dict(bound.arguments)


def solution_call(name: str, solution: Callable, arguments: dict[str, str]) -> str:
    """``solution_<name>(m=m, layer=0)``: the check's arguments the solution takes, by name."""
    wanted = [p for p in inspect.signature(solution).parameters if p in arguments and p != "answer"]
    return f"{name}(" + ", ".join(f"{p}={arguments[p]}" for p in wanted) + ")"


def _worked_body(solution: Callable, indent: str) -> list[str]:
    """The body of a worked build-it-yourself solution (its docstring left out), at ``indent``, with the
    modules it uses imported first."""
    source = textwrap.dedent(inspect.getsource(solution))
    fn = ast.parse(source).body[0]
    body = fn.body[1:] if isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) else fn.body
    block = textwrap.dedent("\n".join(source.splitlines()[body[0].lineno - 1: body[-1].end_lineno])).splitlines()
    used = {n.id for statement in body for n in ast.walk(statement) if isinstance(n, ast.Name)}
    imports = [f"import {module}" for module in ("math", "torch") if module in used]
    return [indent + line if line else line for line in imports + block]


def answer_cell(code: str, lesson: str, solutions: ModuleType, checker: Callable, call: ast.Call) -> str:
    """The source version of an answer cell: the worked answer between the markers after ``answer = None``."""
    name = "solution_" + call.func.attr[len("check_"):]  # type: ignore[attr-defined]
    solution = getattr(solutions, name, None)
    if solution is None:
        raise ValueError(f"classroom/solutions/lesson_{lesson}.py has no {name}")
    region = [BEGIN, f"from solutions_{lesson} import {name}",
              "answer = " + solution_call(name, solution, _arguments(call, checker, code)), END]
    lines = code.rstrip("\n").splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(r"\s*answer\s*=\s*None\b", line))
    return "\n".join(lines[:at + 1] + region + lines[at + 1:])


def build_it_cell(code: str, solutions: ModuleType) -> str:
    """The source version of a build-it-yourself cell: each ``my_<f>``'s worked body between the markers,
    before its ``raise NotImplementedError``."""
    out, current = [], None
    for line in code.rstrip("\n").splitlines():
        started = re.match(r"def (my_\w+)\(", line)
        if started:
            current = started.group(1)
        raised = re.match(r"(\s+)raise NotImplementedError\b", line)
        if raised and current:
            name = "solution_" + current[len("my_"):]
            solution = getattr(solutions, name, None)
            if solution is None:
                raise ValueError(f"the teacher's solutions have no {name} for {current}")
            indent = raised.group(1)
            out += [indent + BEGIN] + _worked_body(solution, indent) + [indent + END]
        out.append(line)
    return "\n".join(out)


def test_cell(alias: str, checker: str, call_text: str, lesson: str) -> str:
    """The graded cell: the course's own check of the answer, hidden from the students."""
    unrecorded = call_text.replace(f"{alias}.{checker}(", f"{alias}.{checker}.__wrapped__(", 1)
    return "\n".join([
        f"# Graded: exercise {lesson}.{checker[len('check_'):]}, checked on this run's own model and numbers.",
        BEGIN_TESTS,
        f"_feedback = {unrecorded}",
        "assert _feedback.correct, str(_feedback)",
        END_TESTS])


# --------------------------------------------------------------------------- one notebook


def _nbgrader(kind: str, grade_id: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"grade_id": grade_id, "schema_version": 3, "task": False}
    if kind == "answer":
        meta.update(grade=False, solution=True, locked=False)
    else:
        meta.update(grade=True, solution=False, locked=True, points=POINTS)
    return {"nbgrader": meta}


def _code_cell(source: str, metadata: dict[str, Any], cell_id: str) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "id": cell_id, "metadata": metadata,
            "outputs": [], "source": source.splitlines(keepends=True)}


def source_notebook(notebook: dict[str, Any], lesson: str, solutions: ModuleType) -> tuple[dict[str, Any], int]:
    """The teacher's source version of a lesson notebook and its number of graded exercises."""
    checks = importlib.import_module(f"attnlab.course.exercises.lesson_{lesson}")
    out = copy.deepcopy(notebook)
    cells, graded = [], 0
    for cell in out["cells"]:
        code = "".join(cell["source"])
        found = _check_call(code) if cell["cell_type"] == "code" else None
        checker = getattr(checks, found[1], None) if found else None
        if found is None or not hasattr(checker, "exercise_id"):
            if not (cell["cell_type"] == "markdown" and code.lstrip().startswith(TEACHER_NOTES)):
                cells.append(cell)
            continue
        alias, name, call = found
        ident = name[len("check_"):]
        wrapped = checker.__wrapped__  # type: ignore[union-attr]
        if "answer = None" in code:
            source = answer_cell(code, lesson, solutions, wrapped, call)
        else:
            source = build_it_cell(code, solutions)
        cell["source"] = source.splitlines(keepends=True)
        cell["metadata"].update(_nbgrader("answer", f"answer_{lesson}_{ident}"))
        cells.append(cell)
        cells.append(_code_cell(test_cell(alias, name, ast.get_source_segment(code, call), lesson),
                                _nbgrader("test", f"test_{lesson}_{ident}"), f"{cell.get('id', 'x')}-graded"))
        graded += 1
    out["cells"] = cells
    return out, graded


def _load_solutions(path: Path, lesson: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"solutions_{lesson}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def write_course(out: str | Path, lessons: list[str] | None = None, languages: tuple[str, ...] = LANGUAGES,
                 classroom: Path | None = None) -> dict[str, int]:
    """Write the nbgrader course folder ``out`` (see the module's docstring) and return
    ``{assignment: graded exercises}``. An existing assignment's source is replaced; nothing else is touched."""
    classroom = classroom or classroom_folder()
    root = classroom.parent
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(classroom / "nbgrader_config.py", out / "nbgrader_config.py")
    written = {}
    for language in languages:
        notebooks = lesson_notebooks(language, root)
        unknown = sorted(set(lessons or []) - set(notebooks))
        if unknown:
            raise ValueError(f"no lesson {', '.join(unknown)}: the lessons are {', '.join(notebooks)}")
        for lesson in lessons or list(notebooks):
            solutions_file = classroom / "solutions" / f"lesson_{lesson}.py"
            solutions = _load_solutions(solutions_file, lesson)
            notebook = json.loads(notebooks[lesson].read_text(encoding="utf-8"))
            source, graded = source_notebook(notebook, lesson, solutions)
            folder = out / "source" / assignment_name(lesson, language)
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            (folder / notebooks[lesson].name).write_text(json.dumps(source, indent=1, ensure_ascii=False) + "\n",
                                                         encoding="utf-8")
            shutil.copyfile(solutions_file, folder / f"solutions_{lesson}.py")
            written[assignment_name(lesson, language)] = graded
    return written


def _assignments_cmd(args: argparse.Namespace) -> int:
    languages = LANGUAGES if args.lang == "both" else (args.lang,)
    written = write_course(args.folder, args.lessons, languages)
    for name, graded in written.items():
        print(f"{args.folder}/source/{name}: {graded} graded exercises")
    print(f"next: cd {args.folder} && nbgrader generate_assignment lesson_00 (the students' version, in release/)")
    return 0


def add_class_cli(sub: Any) -> None:
    """Register ``attnlab class assignments`` under ``attnlab class``."""
    a = sub.add_parser("assignments", help="write an nbgrader course folder from the lessons (solutions kept back)")
    a.add_argument("folder", help="the nbgrader course folder to write (source/ and nbgrader_config.py)")
    a.add_argument("--lessons", nargs="*", default=None, help="two-digit lesson numbers (default: every lesson)")
    a.add_argument("--lang", choices=("en", "zh", "both"), default="both", help="which edition (default: both)")
    a.set_defaults(func=_assignments_cmd)
