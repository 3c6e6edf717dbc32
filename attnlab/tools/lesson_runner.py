"""Run a lesson notebook headless, so that it saves its results for the running model.

Lesson 12 passes :func:`run_lesson` to :func:`attnlab.course.conclusions.gather`
to recompute the evidence a student has not produced yet.
"""

from __future__ import annotations

import os
from pathlib import Path

from attnlab.core.models import LoadedModel
from attnlab.course import results

#: the environment a re-run lesson inherits from this one
_ENVIRONMENT = ("ATTNLAB_MODEL", "ATTNLAB_RESULTS", "MPLBACKEND")


def notebooks_dir() -> Path | None:
    """The course's ``notebooks/`` folder, if this is a checkout of the course."""
    for candidate in (Path.cwd(), Path.cwd().parent, Path(__file__).resolve().parents[2]):
        folder = candidate if candidate.name == "notebooks" else candidate / "notebooks"
        if (folder / "00_tour.ipynb").exists():
            return folder
    return None


def model_setting(m: LoadedModel) -> str:
    """The ``ATTNLAB_MODEL`` value that makes a lesson load the same model as ``m``."""
    if m.source == "bundled":
        return "bundled"
    return m.path or m.name


def run_lesson(name: str, m: LoadedModel, *, timeout: int = 3600) -> None:
    """Execute ``notebooks/<name>.ipynb`` headless with the same model, run mode and
    results folder as this process, so that it saves its results for this run."""
    # nbformat and nbclient come with the course's "dev" extra; only re-running a lesson needs them
    import nbformat
    from nbclient import NotebookClient

    folder = notebooks_dir()
    if folder is None or not (folder / f"{name}.ipynb").exists():
        raise FileNotFoundError(f"lesson notebook {name}.ipynb not found: run it yourself first")
    book = nbformat.read(str(folder / f"{name}.ipynb"), as_version=4)
    before = {key: os.environ.get(key) for key in _ENVIRONMENT}
    os.environ["ATTNLAB_MODEL"] = model_setting(m)
    os.environ["ATTNLAB_RESULTS"] = str(results.results_dir().resolve())
    os.environ["MPLBACKEND"] = "Agg"
    try:
        NotebookClient(book, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
