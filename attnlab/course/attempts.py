"""A student's attempts at the exercises, kept in the results folder for the teacher to collect.

Every checked answer (not the placeholder ``None``) is one attempt, saved in
``<results>/exercises/<exercise>.json`` (the results folder is
:func:`attnlab.course.results.results_dir`)::

    {"schema": 1, "kind": "attnlab-exercise-attempts", "exercise": "04.head_width",
     "attempts": [{"attempt": 1, "answer": 12, "right": false, "time": "2026-12-04T09:30:00Z",
                   "model": "all-MiniLM-L6-v2", "precision": "fp32", "mode": "full"}, ...]}

Each write replaces the whole file atomically (:mod:`attnlab.core.atomic`); a damaged
file is kept beside it (``.damaged-<time>``), never overwritten, and a new one is started.
A student zips the ``results/exercises`` folder (or the whole ``results`` folder) and
uploads it; ``attnlab class collect`` merges a class's uploads.

A wrong answer gets a hint, not the expected value; the value is shown after
:data:`REVEAL_AFTER` attempts, or at once with the teacher's solutions switched on
(``ATTNLAB_SOLUTIONS=1`` in the environment, or :func:`show_solutions`), for a student
working alone. Under a class setting (:mod:`attnlab.core.class_setting`) nothing is
revealed and the switch does nothing: the class's graded answers are kept by nbgrader,
and the ``right`` flags here are the student's own record, not a grade.
"""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any

from attnlab.core import class_setting
from attnlab.core.atomic import write_text_atomic
from attnlab.core.records import to_plain
from attnlab.course.results import results_dir
from attnlab.course.work_pack import pack_at_save_point

SCHEMA = 1
KIND = "attnlab-exercise-attempts"
FOLDER = "exercises"
#: wrong attempts after which a checker shows the expected value
REVEAL_AFTER = 3
#: the environment variable that shows the teacher's solutions (``1``, ``true`` or ``yes``)
SOLUTIONS_ENV = "ATTNLAB_SOLUTIONS"
#: an answer longer than this (as JSON) is saved as its text, cut to this length
MAX_ANSWER_CHARS = 2000
EXERCISE_ID = re.compile(r"^[0-9]{2}\.[a-z0-9_]{1,80}$")

_switch: dict[str, bool | None] = {"solutions": None}


def show_solutions(on: bool = True) -> None:
    """Switch the teacher's solutions on (or off): a wrong answer then shows the expected value at once,
    and build-it-yourself exercises print their worked solution. Overrides :data:`SOLUTIONS_ENV`."""
    _switch["solutions"] = bool(on)


def solutions_shown() -> bool:
    """Whether the teacher's solutions are on: :func:`show_solutions`, else ``ATTNLAB_SOLUTIONS``;
    never under a class setting."""
    if class_setting.current() is not None:
        return False
    if _switch["solutions"] is not None:
        return bool(_switch["solutions"])
    return os.environ.get(SOLUTIONS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def exercise_id(module: str, checker: str) -> str:
    """``"04.head_width"`` for ``check_head_width`` of ``attnlab.course.exercises.lesson_04``."""
    lesson = module.rsplit("_", 1)[-1]
    name = checker[len("check_"):] if checker.startswith("check_") else checker
    ident = f"{lesson}.{name}"
    if not EXERCISE_ID.match(ident):
        raise ValueError(f"{ident!r} is not an exercise id (two-digit lesson, '.', a lower-case name)")
    return ident


def attempts_dir() -> Path:
    """Where the attempts are saved: ``<results>/exercises``."""
    return results_dir() / FOLDER


def path_of(exercise: str) -> Path:
    if not EXERCISE_ID.match(exercise):
        raise ValueError(f"{exercise!r} is not an exercise id")
    return attempts_dir() / f"{exercise}.json"


def plain_answer(answer: Any) -> Any:
    """``answer`` as JSON: numbers, strings, lists stay; anything else (a function, a tensor too large)
    is kept as its text, at most :data:`MAX_ANSWER_CHARS` long."""
    if callable(answer):
        return f"<function {getattr(answer, '__name__', type(answer).__name__)}>"
    if isinstance(answer, (tuple, list)) and any(callable(a) for a in answer):
        return [plain_answer(a) for a in answer]
    try:
        plain = to_plain(answer)
        text = json.dumps(plain, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError):
        plain, text = repr(answer), repr(answer)
    if len(text) > MAX_ANSWER_CHARS:
        return text[:MAX_ANSWER_CHARS]
    return plain


def valid(record: Any) -> bool:
    """Whether ``record`` is an attempts file's content: the kind, the schema, an exercise id, and
    attempts each with a positive ``attempt`` number and a boolean ``right``."""
    if not isinstance(record, dict) or record.get("kind") != KIND or record.get("schema") != SCHEMA:
        return False
    if not isinstance(record.get("exercise"), str) or not EXERCISE_ID.match(record["exercise"]):
        return False
    attempts = record.get("attempts")
    return isinstance(attempts, list) and all(
        isinstance(a, dict) and isinstance(a.get("attempt"), int) and not isinstance(a.get("attempt"), bool)
        and a["attempt"] >= 1 and isinstance(a.get("right"), bool) for a in attempts)


def read(exercise: str) -> list[dict]:
    """The attempts saved for ``exercise`` (empty when there are none). A damaged file is moved aside
    (``<file>.damaged-<time>``) with a warning, never lost."""
    path = path_of(exercise)
    if not path.exists():
        return []
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        record = None
    if valid(record) and record["exercise"] == exercise:
        return list(record["attempts"])
    aside = path.with_name(f"{path.name}.damaged-{int(time.time())}")
    os.replace(path, aside)
    warnings.warn(f"{path} was damaged; it is kept as {aside.name} and a new one is started", stacklevel=2)
    return []


def reveals(attempt: int) -> bool:
    """Whether a wrong answer at ``attempt`` shows the expected value: from :data:`REVEAL_AFTER` on, or at once
    with the teacher's solutions on; never under a class setting."""
    if class_setting.current() is not None:
        return False
    return attempt >= REVEAL_AFTER or solutions_shown()


def record(exercise: str, answer: Any, right: bool, model: str = "", precision: str = "", mode: str = "") -> dict:
    """Save one attempt at ``exercise`` and return it (with its ``attempt`` number, 1 for the first), with the
    ``model``, ``precision`` and ``mode`` (``full`` or ``smoke``) it ran under."""
    attempts = read(exercise)
    attempt = {"attempt": len(attempts) + 1, "answer": plain_answer(answer), "right": bool(right),
               "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "model": str(model or ""),
               "precision": str(precision or ""), "mode": str(mode or "")}
    content = {"schema": SCHEMA, "kind": KIND, "exercise": exercise, "attempts": attempts + [attempt]}
    write_text_atomic(path_of(exercise), json.dumps(content, indent=1, ensure_ascii=False))
    pack_at_save_point(results_dir())  # a save point: on Colab and Binder the work is packed again
    return attempt
