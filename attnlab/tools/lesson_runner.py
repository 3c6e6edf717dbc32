"""Run a lesson notebook headless, so that it saves its results for the running model.

Lesson 12 passes :func:`run_lesson` to :func:`attnlab.course.conclusions.gather`
to recompute the evidence a student has not produced yet.
"""

from __future__ import annotations

import os
import tempfile
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


def local_kernel():
    """A kernel manager whose kernel talks over local IPC sockets, not TCP ports: nothing listens on the
    network, and kernels started at the same moment by other runs on the machine cannot pick the same
    ports and answer each other's requests."""
    from jupyter_client import KernelManager  # comes with nbclient (the "dev" extra)

    sockets = Path(tempfile.mkdtemp(prefix="attnlab-kernel-")) / "kernel"
    return KernelManager(kernel_name="python3", transport="ipc", ip=str(sockets))


def execute_notebook(book, folder: Path, *, timeout: int = 900) -> None:
    """Run every cell of ``book`` (an nbformat notebook, filled with outputs in place) in a fresh local
    kernel whose working folder is ``folder``."""
    from nbclient import NotebookClient

    NotebookClient(book, km=local_kernel(), timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()


def run_lesson(name: str, m: LoadedModel, *, timeout: int = 3600) -> None:
    """Execute ``notebooks/<name>.ipynb`` headless with the same model, run mode and
    results folder as this process, so that it saves its results for this run."""
    # nbformat and nbclient come with the course's "dev" extra; only re-running a lesson needs them
    import nbformat

    folder = notebooks_dir()
    if folder is None or not (folder / f"{name}.ipynb").exists():
        raise FileNotFoundError(f"lesson notebook {name}.ipynb not found: run it yourself first")
    book = nbformat.read(str(folder / f"{name}.ipynb"), as_version=4)
    before = {key: os.environ.get(key) for key in _ENVIRONMENT}
    os.environ["ATTNLAB_MODEL"] = model_setting(m)
    os.environ["ATTNLAB_RESULTS"] = str(results.results_dir().resolve())
    os.environ["MPLBACKEND"] = "Agg"
    try:
        execute_notebook(book, folder, timeout=timeout)
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
