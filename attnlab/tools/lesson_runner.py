"""Run a lesson notebook headless, so that it saves its results for the running model.

Lesson 12 passes :func:`run_lesson` to :func:`attnlab.course.conclusions.gather`
to recompute the evidence a student has not produced yet.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from attnlab.core.models import LoadedModel
from attnlab.course import results

#: the environment a re-run lesson inherits from this one


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


def local_kernel(sockets: Path):
    """A kernel manager whose kernel talks over local IPC sockets in the folder ``sockets``, not TCP
    ports: nothing listens on the network, and kernels started at the same moment by other runs on the
    machine cannot pick the same ports and answer each other's requests."""
    from jupyter_client import KernelManager  # comes with nbclient (the "dev" extra)

    return KernelManager(kernel_name="python3", transport="ipc", ip=str(sockets / "kernel"))


@contextlib.contextmanager
def lesson_kernel(book, folder: Path, *, timeout: int = 900) -> Iterator:
    """A started ``nbclient.NotebookClient`` for ``book`` (an nbformat notebook, filled with outputs
    in place) on a fresh local kernel whose working folder is ``folder``.

    On the way out, also after an error or an interruption, the kernel is shut down and its socket
    folder removed: nbclient leaves running a kernel whose manager it was handed, so a run of many
    lessons would otherwise keep every finished lesson's kernel, and its memory, until it ends.
    """
    from nbclient import NotebookClient

    sockets = Path(tempfile.mkdtemp(prefix="attnlab-kernel-"))
    client = NotebookClient(book, km=local_kernel(sockets), timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})
    try:
        with client.setup_kernel(cleanup_kc=True):
            yield client
    finally:
        shutil.rmtree(sockets, ignore_errors=True)


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set these environment variables inside the ``with`` block, and put back what was there after it."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def execute_notebook(book, folder: Path, *, timeout: int = 900) -> None:
    """Run every cell of ``book`` (an nbformat notebook, filled with outputs in place) in a fresh local
    kernel whose working folder is ``folder`` (:func:`lesson_kernel`: the kernel ends with the run)."""
    with lesson_kernel(book, folder, timeout=timeout) as client:
        client.execute()


def run_lesson(name: str, m: LoadedModel, *, timeout: int = 3600) -> None:
    """Execute ``notebooks/<name>.ipynb`` headless with the same model, run mode and
    results folder as this process, so that it saves its results for this run."""
    # nbformat and nbclient come with the course's "dev" extra; only re-running a lesson needs them
    import nbformat

    folder = notebooks_dir()
    if folder is None or not (folder / f"{name}.ipynb").exists():
        raise FileNotFoundError(f"lesson notebook {name}.ipynb not found: run it yourself first")
    book = nbformat.read(str(folder / f"{name}.ipynb"), as_version=4)
    with environment(ATTNLAB_MODEL=model_setting(m), ATTNLAB_RESULTS=str(results.results_dir().resolve()),
                     MPLBACKEND="Agg"):
        execute_notebook(book, folder, timeout=timeout)
