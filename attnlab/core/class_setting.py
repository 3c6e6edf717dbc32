"""The class setting: one model, one precision and one run mode for every student of a class.

A teacher fixes them once in a small JSON file::

    {"schema": 1, "kind": "attnlab-class", "name": "attention-2027",
     "model": "multilingual-e5-small", "precision": "fp32", "mode": "full"}

and installs it where every student's Python finds it: the file named by
``ATTNLAB_CLASS`` (one environment variable, the same on every door), else
``<sys.prefix>/etc/attnlab/class.json`` (the class server installs it there, in the
environment the students share and cannot write). While a class setting is in force,
``load_model("auto")`` loads its model (from disk: the class's model is installed once,
nothing downloads), ``"auto"`` precision is its precision, and its mode decides smoke or
full sizes whatever ``ATTNLAB_SMOKE`` says. Each lesson's header prints it
(:func:`attnlab.core.config.mode_line`), each saved attempt records it, and
``attnlab class collect`` flags work done under another setting.

A file that is missing, damaged or names an unknown precision or mode stops with one
sentence (:class:`ClassSettingError`): a class must not run half on another model.

**Graded runs.** ``nbgrader autograde`` runs each submission in
``<course>/autograded/<student>/<assignment>/`` (:func:`graded_run` finds it from the kernel's
first working folder, or from ``ATTNLAB_GRADED_COURSE``, which the course's ``nbgrader_config.py``
sets for the grader). There the class file is read from the environment the kernel *started*
with (:func:`initial_environ`), a relative ``ATTNLAB_CLASS`` is taken from the course folder, and
``<course>/class.json`` is the class file when none is named: what a notebook sets in
``os.environ`` changes nothing. A graded run that asks for another model than the class's gets the
class's model, and every graded item of that run scores 0 with a sentence saying why
(:func:`other_models_asked`).

**One student's numbers.** Under a class setting the lessons' random samples (queries, texts)
depend on the student (:func:`student`, :func:`student_seed`): a classmate's numbers, or the
published ones, are not this student's answers.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from attnlab.core.language import _

ENV = "ATTNLAB_CLASS"
#: the nbgrader course folder of a grader (set by the course's ``nbgrader_config.py`` when it autogrades)
GRADED_ENV = "ATTNLAB_GRADED_COURSE"
#: the student a graded run grades, for the lessons it starts
GRADED_STUDENT_ENV = "ATTNLAB_GRADED_STUDENT"
#: who the student is, where neither the hub nor the grader says (a laptop, Colab)
STUDENT_ENV = "ATTNLAB_STUDENT"
#: the class file a course folder keeps (``attnlab class assignments DIR --class FILE`` copies it there)
COURSE_FILE = "class.json"
#: the folder nbgrader runs each submission in, under the course folder
AUTOGRADED = "autograded"
KIND = "attnlab-class"
SCHEMA = 1
PRECISIONS = ("fp32", "bf16")
MODES = ("full", "smoke")


class ClassSettingError(ValueError):
    """The class setting file cannot be used; the message is one sentence saying why and what to do."""


@dataclass(frozen=True)
class ClassSetting:
    """What a class fixes: ``model`` (a name ``load_model`` accepts), ``precision`` and ``mode``."""

    model: str
    precision: str = "fp32"
    mode: str = "full"
    name: str = ""
    source: str = ""

    @property
    def smoke(self) -> bool:
        return self.mode == "smoke"

    def describe(self) -> str:
        """``"attention-2027: multilingual-e5-small, fp32, full mode"``."""
        label = f"{self.name}: " if self.name else ""
        return f"{label}{self.model}, {self.precision}, {self.mode} mode"

    def as_record(self) -> dict[str, str]:
        """What a saved attempt records of the setting it ran under."""
        return {"model": self.model, "precision": self.precision, "mode": self.mode}


def default_file() -> Path:
    """Where a class server installs the setting: ``<sys.prefix>/etc/attnlab/class.json``."""
    return Path(sys.prefix) / "etc" / "attnlab" / "class.json"


#: the environment and working folder this process had when the module was first imported (where
#: ``/proc/self/environ`` cannot be read)
_FIRST_ENVIRON = dict(os.environ)
_FIRST_CWD = os.getcwd()


def initial_environ() -> dict[str, str]:
    """The environment this process started with: ``/proc/self/environ`` where the system keeps it (a
    notebook's later ``os.environ[...] = ...`` does not show there), else the environment as first seen."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return dict(_FIRST_ENVIRON)
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {key.decode(errors="replace"): value.decode(errors="replace") for key, value in pairs}


@dataclass(frozen=True)
class GradedRun:
    """A submission being autograded: the nbgrader ``course`` folder, the ``student`` and the ``assignment``
    (both empty when the kernel's folder is not ``<course>/autograded/<student>/<assignment>``)."""

    course: Path
    student: str = ""
    assignment: str = ""

    @property
    def folder(self) -> Path:
        """``<course>/autograded/<student>``: this student's graded runs of every assignment."""
        return self.course / AUTOGRADED / (self.student or "_unknown")


def _is_course(folder: Path) -> bool:
    return (folder / "nbgrader_config.py").is_file() or (folder / "gradebook.db").is_file()


def graded_run(start: str | Path | None = None) -> GradedRun | None:
    """The submission this process grades, or None when it is no graded run.

    A graded run is a kernel that started in ``<course>/autograded/<student>/<assignment>/`` of an nbgrader
    course folder (one with ``nbgrader_config.py`` or ``gradebook.db``), or one whose starting environment
    names the course (:data:`GRADED_ENV`). ``start``: the folder to read (default: the folder this
    process started in)."""
    here = Path(start if start is not None else _FIRST_CWD).resolve()
    started = initial_environ()
    named = started.get(GRADED_ENV, "").strip()
    if len(here.parents) >= 3 and here.parent.parent.name == AUTOGRADED and _is_course(here.parents[2]):
        course = here.parents[2]
        if not named or Path(named).resolve() == course:
            # a lesson this run starts (lesson 12 re-running one) grades the same submission
            os.environ.update({GRADED_ENV: str(course), GRADED_STUDENT_ENV: here.parent.name})
            return GradedRun(course, here.parent.name, here.name)
    if named:
        return GradedRun(Path(named).resolve(), started.get(GRADED_STUDENT_ENV, "").strip())
    return None


def setting_file() -> Path | None:
    """The file in force: ``ATTNLAB_CLASS`` when set (it must exist), else :func:`default_file` if present.

    In a graded run (:func:`graded_run`) ``ATTNLAB_CLASS`` is read from the environment the kernel
    started with, relative to the course folder, else the course's ``class.json``."""
    graded = graded_run()
    if graded is not None:
        named = initial_environ().get(ENV, "").strip()
        if named:
            path = Path(named).expanduser()
            return path if path.is_absolute() else graded.course / path
        if (graded.course / COURSE_FILE).is_file():
            return graded.course / COURSE_FILE
        return default_file() if default_file().is_file() else None
    named = os.environ.get(ENV, "").strip()
    if named:
        return Path(named).expanduser()
    return default_file() if default_file().is_file() else None


def parse(text: str, source: str = "") -> ClassSetting:
    """A class setting from the file's text; :class:`ClassSettingError` when it is not one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClassSettingError(f"the class setting {source} is not JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("schema") != SCHEMA:
        raise ClassSettingError(f"the class setting {source} is not a class file "
                                f"(it needs \"kind\": \"{KIND}\" and \"schema\": {SCHEMA})")
    model = data.get("model")
    if not isinstance(model, str) or not model.strip() or model.strip() == "auto":
        raise ClassSettingError(f"the class setting {source} names no model: set \"model\" to a model name or folder")
    precision, mode = data.get("precision", "fp32"), data.get("mode", "full")
    if precision not in PRECISIONS:
        raise ClassSettingError(f"the class setting {source} asks for precision {precision!r}; use one of {PRECISIONS}")
    if mode not in MODES:
        raise ClassSettingError(f"the class setting {source} asks for mode {mode!r}; use one of {MODES}")
    return ClassSetting(model=model.strip(), precision=precision, mode=mode, name=str(data.get("name", "")),
                        source=source)


def current() -> ClassSetting | None:
    """The class setting in force, or None when this machine has none."""
    path = setting_file()
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClassSettingError(f"{ENV}={path} cannot be read ({exc.strerror or exc}); "
                                f"fix the path or unset {ENV}") from exc
    return parse(text, str(path))


def write(path: str | Path, model: str, precision: str = "fp32", mode: str = "full", name: str = "") -> Path:
    """Write a class setting file (checked by reading it back) and return its path."""
    text = json.dumps({"schema": SCHEMA, "kind": KIND, "name": name, "model": model, "precision": precision,
                       "mode": mode}, indent=1, ensure_ascii=False)
    parse(text, str(path))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    return out


# --------------------------------------------------------------------------- the student and their numbers

_SAFE = re.compile(r"[^A-Za-z0-9_.@-]+")


def student() -> str:
    """Who is working: the submission's student in a graded run; else ``ATTNLAB_STUDENT``, the hub's user
    (``JUPYTERHUB_USER``, nbgrader's student id on the class server), or the system user."""
    graded = graded_run()
    if graded is not None:
        return graded.student
    for name in (os.environ.get(STUDENT_ENV, ""), os.environ.get("JUPYTERHUB_USER", "")):
        if name.strip():
            return _SAFE.sub("_", name.strip())
    try:
        return _SAFE.sub("_", getpass.getuser())
    except (OSError, KeyError):  # no user name on this machine (a container without one)
        return ""


def student_seed(seed: int) -> int:
    """The seed a lesson's random sample uses: ``seed`` itself without a class setting; under one, a number
    drawn from the class's name, :func:`student` and ``seed``, the same every time for that student."""
    setting = current()
    if setting is None:
        return seed
    key = f"{setting.name}\0{student()}\0{seed}".encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


# --------------------------------------------------------------------------- graded runs ask for one model

_ASKED: list[str] = []


def graded_model(name: str) -> str:
    """The model a graded run loads when a notebook asks for ``name``: the class's (``"auto"``) when this is
    a graded run under a class setting and ``name`` is another; the request is kept for
    :func:`other_models_asked`, and one sentence says so. Elsewhere ``name`` itself."""
    if name == "auto" or graded_run() is None or current() is None:
        return name
    _ASKED.append(name)
    print(_("attnlab: this graded run asks for the model {name!r}; graded work runs on the class's model only, "
            "so the class's is loaded and this notebook's graded items score 0.").format(name=name))
    return "auto"


def other_models_asked() -> list[str]:
    """The models a notebook asked for in this graded run other than the class's (see :func:`graded_model`)."""
    return list(_ASKED)
