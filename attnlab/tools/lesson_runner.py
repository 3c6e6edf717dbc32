"""Run a lesson notebook headless, so that it saves its results for the running model.

Lesson 12 passes :func:`run_lesson` to :func:`attnlab.course.evidence.gather`
to recompute the evidence a student has not produced yet. It runs the lesson of
the edition that is speaking (a Chinese lesson 12 re-runs Chinese lessons), from
the course checkout; where there is none (the package installed from git, as on
Colab), from a copy of the lessons of this version, fetched once with git into
attnlab's cache. If that cannot be fetched, the error says exactly what to run.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import torch

from attnlab import _meta
from attnlab.core.language import _, current_language, lessons_folder
from attnlab.core.models import LoadedModel, course_root
from attnlab.core.multilingual import cache_root
from attnlab.course import results
from attnlab.tools import figure_texts

#: where the lessons of this version are fetched from when there is no checkout (a test points it
#: at a local copy); the default is the course's own repository
COURSE_GIT_ENV = "ATTNLAB_COURSE_GIT"
#: seconds a fetch of the lessons may take
FETCH_SECONDS = 120


def notebooks_dir(lang: str | None = None) -> Path | None:
    """The lessons of the edition ``lang`` (default: the language speaking now): ``notebooks/`` or
    ``notebooks/zh/`` of the course checkout, else of a copy fetched earlier; None if neither."""
    lang = lang or current_language()
    for root in (course_root(), fetched_course()):
        if root is None:
            continue
        folder = lessons_folder(root, lang)
        if (folder / "00_tour.ipynb").exists():
            return folder
    return None


def fetched_course() -> Path | None:
    """The copy of this version's lessons in attnlab's cache, if one was fetched."""
    copy = cache_root() / f"course-{_meta.TAG}"
    return copy if (copy / "notebooks" / "00_tour.ipynb").exists() else None


def fetch_command(target: Path) -> list[str]:
    """The git command that fetches this version's lessons into ``target``."""
    url = os.environ.get(COURSE_GIT_ENV, "").strip() or _meta.GIT_URL
    return ["git", "clone", "--quiet", "--depth", "1", "--branch", _meta.TAG, url, str(target)]


def fetch_course() -> Path:
    """Fetch this version's lessons with git into attnlab's cache (once) and return the copy.

    Raises:
        FileNotFoundError: git is missing or the fetch failed; the message says what to run.
    """
    found = fetched_course()
    if found is not None:
        return found
    copy = cache_root() / f"course-{_meta.TAG}"
    work = Path(tempfile.mkdtemp(prefix="course-", dir=_made(cache_root())))
    command = fetch_command(work / "course")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_SECONDS)
        failure = done.stderr.strip().splitlines()[-1] if done.returncode else ""
    except (OSError, subprocess.TimeoutExpired) as exc:
        failure = str(exc) or type(exc).__name__
    try:
        if failure or not (work / "course" / "notebooks" / "00_tour.ipynb").exists():
            raise FileNotFoundError(_(
                "There is no copy of the course's lessons here, and fetching them failed ({failure}). "
                "Run this in a cell, then run this cell again: !{command}").format(
                    failure=failure or _("no lessons in what was fetched"),
                    command=" ".join(fetch_command(copy))))
        if not copy.exists():
            os.replace(work / "course", copy)  # whole or not at all
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return copy


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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
    lessons would otherwise keep every finished lesson's kernel, and its memory, until it ends. The
    kernel is stopped at once, not asked to exit: every cell has finished and what a lesson saves is
    written by the cell that saves it, so nothing waits for the second or so a kernel that has
    imported torch and transformers spends tearing its modules down.
    """
    from nbclient import NotebookClient

    sockets = Path(tempfile.mkdtemp(prefix="attnlab-kernel-"))
    client = NotebookClient(book, km=local_kernel(sockets), timeout=timeout, kernel_name="python3",
                            shutdown_kernel="immediate", resources={"metadata": {"path": str(folder)}})
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


@contextlib.contextmanager
def model_set_aside(m: LoadedModel) -> Iterator[None]:
    """Inside the ``with`` block, ``m``'s weights are on disk, not in memory; after it, back as they were.

    Lesson 12 re-runs a lesson in a kernel of its own while its own kernel keeps the model: on Binder's
    2 GB the two together would not fit, so the weights wait in a temporary file (one kernel's model
    in memory at a time). Every parameter keeps its identity (hooks, gates and models that share the
    encoder still see it); only its data leaves and comes back, bit for bit.
    """
    params = dict(m.model.named_parameters())  # a parameter shared by two modules appears once
    with tempfile.TemporaryDirectory(prefix="weights-", dir=_made(cache_root())) as tmp:
        path = Path(tmp) / "weights.pt"
        torch.save({name: p.detach() for name, p in params.items()}, path)
        for p in params.values():
            p.data = torch.empty(0, dtype=p.dtype, device=p.device)
        gc.collect()
        try:
            yield
        finally:
            saved = torch.load(path, weights_only=True, map_location=m.device)
            for name, p in params.items():
                p.data = saved[name]


def run_lesson(name: str, m: LoadedModel, *, timeout: int = 3600) -> None:
    """Execute lesson ``name`` (of the edition speaking now) headless with the same model, run mode,
    language and results folder as this process, so that it saves its results for this run."""
    # nbformat and nbclient come with the course's "dev" extra; only re-running a lesson needs them
    import nbformat

    folder = notebooks_dir()
    if folder is None and course_root() is None:
        fetch_course()  # no checkout (as on Colab): this version's lessons, fetched once
        folder = notebooks_dir()
    if folder is None or not (folder / f"{name}.ipynb").exists():
        raise FileNotFoundError(_("lesson notebook {name}.ipynb not found: run it yourself first").format(name=name))
    book = nbformat.read(str(folder / f"{name}.ipynb"), as_version=4)
    with environment(ATTNLAB_MODEL=model_setting(m), ATTNLAB_RESULTS=str(results.results_dir().resolve()),
                     ATTNLAB_LANG=current_language(), MPLBACKEND="Agg"), model_set_aside(m):
        execute_notebook(book, folder, timeout=timeout)


def execute_recording(notebook: str | Path, texts: str | Path, *, timeout: int = 900):
    """Execute ``notebook`` headless in its own folder, with a first cell that records every
    figure's texts into ``texts``; returns the executed notebook (the hook cell removed)."""
    import nbformat

    notebook = Path(notebook)
    book = nbformat.read(str(notebook), as_version=4)
    hook = nbformat.v4.new_code_cell(figure_texts.hook_source(texts))
    hook["id"] = figure_texts.HOOK_ID
    book.cells.insert(0, hook)
    execute_notebook(book, notebook.parent, timeout=timeout)
    book.cells = [c for c in book.cells if c.id != figure_texts.HOOK_ID]
    return book
