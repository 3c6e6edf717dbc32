"""Checked exercises: each lesson ends with a few, each with a checker.

A checker takes the student's answer, computes the right answer *from the
model that is running* (so answers cannot be copied from another model or
another run), and returns a :class:`Feedback` that prints as a short right /
wrong line with a hint. Worked solutions are not in the package: they live in
the teacher's source folder (``classroom/solutions/``), from which ``attnlab class
assignments`` writes nbgrader's source notebooks.

Every checker is wrapped by :func:`exercise`: each answer (not the placeholder
``None``) is saved as an attempt (:mod:`attnlab.course.attempts`), a wrong one
gets a hint but not the expected value until the third attempt, or at once
when the teacher's solutions are on (``ATTNLAB_SOLUTIONS=1``, or
``attnlab.course.attempts.show_solutions()``); under a class setting, never: there a
:class:`Feedback` does not even hold the expected value (``.expected`` is always None), so
no student can read it off the object.

One module per lesson: ``attnlab.course.exercises.lesson_02`` and so on. Shared
building blocks are here.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import numpy as np

from attnlab.core import class_setting
from attnlab.core.config import is_smoke, pick
from attnlab.core.fast import choose_precision
from attnlab.core.language import _
from attnlab.core.memo import memo
from attnlab.core.models import LoadedModel
from attnlab.course import attempts
from attnlab.data.querygen import same_length_queries


T = TypeVar("T")


def per_model(m: LoadedModel, name: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per model, run mode and ``name`` (:func:`attnlab.core.memo.memo`);
    later calls reuse it.

    Checkers use it for the evidence a lesson computes in bulk (a mean over
    many queries, head distances) when the student's own result is not given.
    """
    return memo(m, "exercise", name, compute)


def per_model_over_queries(m: LoadedModel, name: str, measure: Callable[..., T], full: int, smoke: int) -> T:
    """``measure(m, queries, progress=False)`` once per model, run mode and ``name`` (:func:`per_model`),
    over ``full`` same-length queries (``smoke`` in smoke mode): a lesson's bulk evidence for a checker
    whose notebook passes none."""
    return per_model(m, name, lambda: measure(m, same_length_queries(m, pick(full, smoke)), progress=False))


#: What every checker says when the answer is still the placeholder ``None`` (English; shown translated).
NOT_YET = "not answered yet: replace None with your answer and run the cell again."


def not_yet() -> str:
    """:data:`NOT_YET` in the reader's language."""
    return _("not answered yet: replace None with your answer and run the cell again.")


@dataclass
class Feedback:
    """Outcome of checking one answer: right or not, a message with a hint, the expected value
    (kept for the teacher, not printed), and ``shown_answer``, the line that reveals it when
    :func:`exercise` decides it may be shown."""

    correct: bool
    message: str
    expected: Any = None
    shown_answer: str = ""
    attempted: bool = True  # False: nothing to check yet (a function still to write), so no attempt is saved

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "expected" and value is not None and class_setting.current() is not None:
            value = None  # under a class setting the answer stays with the grader: never on the object
        object.__setattr__(self, name, value)

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        text = (_("✅ right: ") if self.correct else _("❌ not yet: ")) + _(self.message)
        return text + (" " + self.shown_answer if self.shown_answer else "")

    def _repr_markdown_(self) -> str:  # nice in notebooks
        return str(self)

    def __repr__(self) -> str:
        return str(self)


def check_number(answer: Any, expected: float, *, rel: float = 0.02, abs_tol: float = 1e-6,
                 hint: str = "", what: str = "your number") -> Feedback:
    """Right when ``answer`` is within ``rel`` (relative) or ``abs_tol`` of ``expected``."""
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return Feedback(False, _("{what} should be a number, got {answer!r}. {hint}").format(
            what=what, answer=answer, hint=hint).strip(), expected)
    if np.isfinite(value) and abs(value - expected) <= max(abs_tol, rel * abs(expected)):
        return Feedback(True, _("{what} = {value:.4g} matches {expected:.4g}.").format(
            what=what, value=value, expected=expected), expected)
    if not np.isfinite(value):
        return Feedback(False, _("{what} should be a finite number, got {answer!r}. {hint}").format(
            what=what, answer=answer, hint=hint).strip(), expected)
    side = _("{what} = {value:.4g} is too high. {hint}") if value > expected else _("{what} = {value:.4g} is too low. {hint}")
    return Feedback(False, side.format(what=what, value=value, hint=hint).strip(), expected)


def check_choice(answer: Any, expected: Any, *, hint: str = "", what: str = "your answer") -> Feedback:
    """Right when ``answer`` equals ``expected`` (strings compared case-insensitively)."""
    norm = lambda v: v.strip().lower() if isinstance(v, str) else v  # noqa: E731
    if norm(answer) == norm(expected):
        return Feedback(True, _("{what} {answer!r} is correct.").format(what=what, answer=answer), expected)
    return Feedback(False, _("{what} {answer!r} is not it. {hint}").format(what=what, answer=answer,
                                                                            hint=hint).strip(), expected)


def check_array(answer: Any, expected: Any, *, atol: float = 1e-4, hint: str = "", what: str = "your array") -> Feedback:
    """Right when the arrays have the same shape and match within ``atol``."""
    a = np.asarray(answer, dtype=float)
    e = np.asarray(expected, dtype=float)
    if a.shape != e.shape:
        return Feedback(False, _("{what} has shape {shape}, expected {expected}. {hint}").format(
            what=what, shape=a.shape, expected=e.shape, hint=hint).strip(), e)
    err = float(np.max(np.abs(a - e))) if a.size else 0.0
    if err <= atol:
        return Feedback(True, _("{what} matches (largest difference {err:.2e}).").format(what=what, err=err), e)
    return Feedback(False, _("{what} differs by up to {err:.3g}. {hint}").format(what=what, err=err,
                                                                                  hint=hint).strip(), e)


def check_head(answer: Any, expected: tuple[int, int], *, hint: str = "", what: str = "your head") -> Feedback:
    """Right when ``answer`` is the 0-based ``(layer, head)`` pair ``expected``."""
    if answer is None:
        return Feedback(False, not_yet())
    try:
        pair = (int(answer[0]), int(answer[1]))
    except (TypeError, ValueError, IndexError):
        return Feedback(False, _("give a pair (layer, head) of 0-based ints, got {answer!r}").format(answer=answer))
    return check_choice(pair, (int(expected[0]), int(expected[1])), hint=hint, what=what)


def shown_expected(expected: Any) -> str:
    """The expected value as a student reads it: floats to 4 significant digits."""
    if isinstance(expected, (float, np.floating)):
        return f"{float(expected):.4g}"
    if isinstance(expected, np.ndarray):
        return np.array2string(expected, precision=4, threshold=20)
    return repr(expected)


def run_setting(m: Any) -> dict[str, str]:
    """The model, precision and mode (``full`` or ``smoke``) an answer was checked under."""
    precision = choose_precision(m)[0] if isinstance(m, LoadedModel) else ""
    return {"model": str(getattr(m, "name", "") or ""), "precision": precision,
            "mode": "smoke" if is_smoke() else "full"}


def exercise(checker: Callable[..., Feedback]) -> Callable[..., Feedback]:
    """Wrap a lesson's ``check_*`` function: save each attempt (:func:`attnlab.course.attempts.record`)
    and reveal the expected value of a wrong answer only after :data:`~attnlab.course.attempts.REVEAL_AFTER`
    attempts or with the teacher's solutions on. The placeholder ``None`` is not an attempt."""
    signature = inspect.signature(checker)
    ident = attempts.exercise_id(checker.__module__, checker.__name__)

    @functools.wraps(checker)
    def checked(*args, **kwargs) -> Feedback:
        feedback = checker(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        answer = bound.arguments.get("answer")
        if answer is None or not feedback.attempted or class_setting.graded_run() is not None:
            return feedback  # a graded run's grade is nbgrader's: it saves no attempt
        try:
            attempt = attempts.record(ident, answer, feedback.correct, **run_setting(bound.arguments.get("m")))
        except OSError as exc:  # a results folder that cannot be written: the check still counts for the student
            warnings.warn(f"the attempt could not be saved in {attempts.attempts_dir()} ({exc})", stacklevel=2)
            return feedback
        if feedback.correct or feedback.expected is None or feedback.shown_answer:
            return feedback
        if attempts.reveals(attempt["attempt"]):
            feedback.shown_answer = _("The expected answer: {expected}.").format(
                expected=shown_expected(feedback.expected))
        elif class_setting.current() is None:  # in a class nothing is revealed, so nothing is promised
            feedback.shown_answer = _("(attempt {n}: the answer is shown at attempt {reveal})").format(
                n=attempt["attempt"], reveal=attempts.REVEAL_AFTER)
        return feedback

    checked.exercise_id = ident  # type: ignore[attr-defined]
    return checked


def graded(check: Callable[[], Feedback]) -> Feedback:
    """What a graded (hidden) test cell runs: ``check()``, the course's own check of the student's answer,
    unless this graded run asked for another model than the class's: then 0, with the sentence why
    (:func:`attnlab.core.class_setting.other_models_asked`)."""
    asked = class_setting.other_models_asked()
    if asked:
        setting = class_setting.current()
        return Feedback(False, _("this notebook loads the model {asked!r}, not the class's {model}: graded work "
                                 "counts on the class's model only, so this item scores 0.").format(
            asked=asked[0], model=setting.model if setting is not None else "?"))
    return check()
