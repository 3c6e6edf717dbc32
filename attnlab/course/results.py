"""Saved results: what one lesson measures and a later lesson reads (lesson 12 reads 05-11).

One schema for every saved result. A file ``<results>/<name>.json`` holds::

    {"schema": 3, "name": ..., "kind": "PerturbationStudy", "model": ..., "n_layers": 12,
     "n_heads": 12, "precision": "fp32", "device": "cpu", "smoke": false, "non_finite": "null",
     "time": ..., "data": {...}}

``precision`` is what a lesson's ``"auto"`` precision chose on this machine (``bf16`` where it is
native, else ``fp32``, or ``ATTNLAB_PRECISION``) and ``device`` the model's device; both are null in
files saved before they were recorded, and :mod:`attnlab.course.reference` reads them to say why a
run differs from the reference.

``data`` is a study's :meth:`~attnlab.core.records.Record.to_record` (or a
plain dict of numbers). The folder is ``ATTNLAB_RESULTS`` when set, else
``results/`` at the top of the course checkout.

Schema 3 says how numbers that are not finite are kept (``"non_finite": "null"``):
strict JSON has no NaN or infinity, so every NaN, +inf and -inf in ``data``
is written as ``null`` and read back as NaN (``attnlab.core.records.nan_for_none``).
A model whose heads attend evenly has NaN fixedness by design, and its
results are saved and read like any other. (Schema 2 wrote the same ``null``
for NaN but could not write a NaN inside an interval; its files read alike.)

* :func:`save` writes atomically (a temporary file in the same folder, then
  ``os.replace``), so a reader never sees half a file; JSON is strict.
* :func:`load` gives None when the result is absent, was made by another model
  (name or layers x heads) or in another run mode; a damaged or malformed file
  is treated as absent, with a warning that says so.
* :func:`load_or_compute` is the one way to say "use the saved result, else
  compute it (and save it)".

Names are plain file names (letters, digits, ``_``, ``.``, ``-``), never paths.
"""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any, Callable, TypeVar

from attnlab.core import class_setting
from attnlab.core.language import _
from attnlab.core.atomic import write_text_atomic
from attnlab.core.config import is_smoke
from attnlab.core.models import LoadedModel, course_root
from attnlab.core.records import RecordError, to_plain
from attnlab.core.fast import choose_precision
from attnlab.course.work_pack import pack_at_save_point

SCHEMA = 3
#: how ``data`` writes a number that is not finite (NaN, +inf, -inf): JSON null, read back as NaN
NON_FINITE = "null"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")

T = TypeVar("T")


#: an nbgrader assignment folder: ``lesson_05`` (English) or ``lesson_05_zh`` (Chinese)
ASSIGNMENT_FOLDER = re.compile(r"^lesson_\d\d(_zh)?$")


def _link_results(assignment: Path) -> None:
    """``<assignment>/results`` as a link to ``../results``, so that the student's results travel with each
    submission (nbgrader copies what the link holds; ``attnlab class collect`` reads it); where links cannot
    be made, or a ``results`` is already there, nothing happens."""
    link = assignment / "results"
    if os.path.lexists(link):
        return
    try:
        (assignment.parent / "results").mkdir(exist_ok=True)
        os.symlink(Path("..") / "results", link, target_is_directory=True)
    except OSError:
        pass


def results_dir() -> Path:
    """Where this run's results go, one folder per student across lessons (lesson 12 reads what 05-11 saved):

    * in a graded run (:func:`attnlab.core.class_setting.graded_run`), ``<course>/autograded/<student>/results``:
      that student's graded runs of every assignment, never the teacher's checkout or another student's;
    * else ``ATTNLAB_RESULTS`` when set;
    * else, in an nbgrader assignment folder (``~/lesson_05``, fetched), ``results/`` beside it (``~/results``);
    * else ``results/`` at the top of the course, the nearest folder at or above the working folder that
      holds both ``attnlab/`` and ``notebooks/`` (English lessons run in ``notebooks/``, Chinese ones in
      ``notebooks/zh/``, the ``attnlab`` command at the top: all share one folder);
    * else ``results/`` in the working folder (an installed package with no checkout, e.g. on Colab)."""
    graded = class_setting.graded_run()
    if graded is not None:
        return graded.folder / "results"
    if os.environ.get("ATTNLAB_RESULTS"):
        return Path(os.environ["ATTNLAB_RESULTS"])
    here = Path.cwd()
    if ASSIGNMENT_FOLDER.match(here.name):
        _link_results(here)
        return here.parent / "results"
    root = course_root(here, installed=False)
    return (root if root is not None else here) / "results"


#: whose random samples a result was computed on: the course's own (the published seeds) ...
COURSE_SAMPLE = "course"


def sample() -> str:
    """... or, under a class setting, the student's own (:func:`attnlab.core.class_setting.student_seed`):
    ``"student <name>"``, so a comparison with the reference can say why the numbers differ."""
    return COURSE_SAMPLE if class_setting.current() is None else f"student {class_setting.student()}"


def check_name(name: str) -> str:
    """``name`` if it is a plain result name, else a ValueError (no paths, no ``..``)."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name or len(name) > 120:
        raise ValueError(
            f"result name {name!r} is not allowed: use letters, digits, '_', '.' and '-' only "
            "(a name, not a path)"
        )
    return name


def path_of(name: str, folder: str | Path | None = None) -> Path:
    """Where the result ``name`` is saved: in ``folder``, else in :func:`results_dir`."""
    return (Path(folder) if folder is not None else results_dir()) / f"{check_name(name)}.json"


def _model_fields(model: LoadedModel | str | None) -> dict:
    if isinstance(model, LoadedModel):
        return {"model": model.name, "n_layers": model.n_layers, "n_heads": model.n_heads}
    return {"model": model or "", "n_layers": None, "n_heads": None}


def _run_fields(model: LoadedModel | str | None) -> dict:
    """The precision lessons choose on their own ("auto") and the device of this run (None when unknown)."""
    if not isinstance(model, LoadedModel):
        return {"precision": None, "device": None}

    return {"precision": choose_precision(model)[0], "device": str(model.device)}


def save(name: str, result: Any, *, model: LoadedModel | str = "", folder: str | Path | None = None) -> Path:
    """Save ``result`` (a study with ``to_record()``, or a dict of numbers and arrays) as ``name``
    (in ``folder`` when given, else in :func:`results_dir`)."""
    path = path_of(name, folder)
    kind = type(result).__name__ if hasattr(result, "to_record") else "dict"
    record = {"schema": SCHEMA, "name": name, "kind": kind, **_model_fields(model), **_run_fields(model),
              "smoke": is_smoke(), "sample": sample(), "non_finite": NON_FINITE, "time": time.time(),
              "data": to_plain(result)}
    write_text_atomic(path, json.dumps(record, indent=1, ensure_ascii=False, allow_nan=False))
    pack_at_save_point(results_dir())
    return path


def _read(path: Path) -> dict | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        warnings.warn(f"{path} is damaged ({type(exc).__name__}); it is ignored and will be recomputed",
                      stacklevel=3)
        return None
    if not isinstance(record, dict) or not isinstance(record.get("data"), (dict, list)):
        warnings.warn(f"{path} is not a saved attnlab result; it is ignored and will be recomputed", stacklevel=3)
        return None
    return record


def _matches(record: dict, model: LoadedModel | str | None) -> bool:
    if record.get("smoke") != is_smoke():
        return False
    if model is None:
        return True
    want = _model_fields(model)
    if record.get("model") != want["model"]:
        return False
    for key in ("n_layers", "n_heads"):
        if want[key] is not None and record.get(key) not in (None, want[key]):
            return False
    return True


def load(name: str, kind: type[T] | None = None, *, model: LoadedModel | str | None = None,
         folder: str | Path | None = None) -> T | dict | None:
    """The saved result ``name``, or None when absent, made by another model or run mode, or damaged.

    Args:
        kind: the study class (``Cls.from_record``) to rebuild; None gives the plain dict.
        model: the running model (name and shape are compared) or just its name;
            None accepts any model.
        folder: where to look (default: :func:`results_dir`).
    """
    path = path_of(name, folder)
    if not path.exists():
        return None
    record = _read(path)
    if record is None or not _matches(record, model):
        return None
    if kind is None:
        return record["data"]
    try:
        return kind.from_record(record["data"])
    except (RecordError, KeyError, TypeError, ValueError) as exc:
        warnings.warn(f"{path} does not hold a {kind.__name__} ({exc}); it is ignored and will be recomputed",
                      stacklevel=2)
        return None


def load_or_compute(name: str, kind: type[T], m: LoadedModel, compute: Callable[[], T], *,
                    verbose: bool = True) -> T:
    """The saved ``name`` when it fits ``m`` and this run mode; else ``compute()``, saved for next time."""
    found = load(name, kind, model=m)
    if found is not None:
        if verbose:
            print(_("using the saved result {name!r} ({path})").format(name=name, path=path_of(name)))
        return found
    result = compute()
    save(name, result, model=m)
    return result


def clear(name: str) -> bool:
    """Delete the saved result ``name``; True if there was one."""
    path = path_of(name)
    if path.exists():
        path.unlink()
        return True
    return False
