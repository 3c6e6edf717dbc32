"""Run a lesson notebook headless, so that it saves its results for the running model.

Lesson 12 passes :func:`run_lesson` to :func:`attnlab.course.evidence.gather`
to recompute the evidence a student has not produced yet. It runs the lesson of
the edition that is speaking (a Chinese lesson 12 re-runs Chinese lessons), from
the course checkout; where there is none (the package installed from git, as on
Colab), from a copy of the lessons of this version, fetched once with git into
attnlab's cache. If that cannot be fetched, the error says exactly what to run.

A kernel can wedge (ipykernel 7 sometimes stops answering an execute request, ipython/ipykernel#1554),
and nothing would notice before a cell's own limit of many minutes. In smoke runs every lesson's kernel
is watched (:class:`Watchdog`): a cell that has had no word from its kernel for :data:`WEDGE_SECONDS`,
in a kernel that does not answer on its control channel either (a busy kernel does), counts as a
wedge. The kernel is stopped, one line says so, and the lesson runs again from the top in a new kernel
(:func:`rerun_if_wedged`); a second wedge is an error that says what happened.

A cell's reply can also be missed by the client rather than lost by the kernel: nbclient answers an
output widget on the shell socket on which it is waiting for the cell's reply, and on a busy machine the
wake-up for that reply can be missed (jupyter/nbclient#312), so the run would wait for a reply that sits
in its socket. The client polls for it again every second (:mod:`attnlab.tools.kernel_replies`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from time import monotonic
from typing import Any, Callable, Iterator, TypeVar

import torch

from attnlab import _meta
from attnlab.core.config import is_smoke
from attnlab.core.language import _, current_language, lessons_folder
from attnlab.core.models import LoadedModel, course_root
from attnlab.core.multilingual import cache_root
from attnlab.course import results
from attnlab.tools import figure_texts
from attnlab.tools.kernel_replies import wait_in_slices

#: where the lessons of this version are fetched from when there is no checkout (a test points it
#: at a local copy); the default is the course's own repository
COURSE_GIT_ENV = "ATTNLAB_COURSE_GIT"
#: seconds a fetch of the lessons may take
FETCH_SECONDS = 120
#: in smoke runs, seconds a cell may go without a word from its kernel before the kernel is asked whether
#: it still answers (smoke cells take seconds); ``ATTNLAB_WEDGE_SECONDS`` sets another limit, also for
#: full runs, and 0 switches the watch off
WEDGE_SECONDS = 120
WEDGE_ENV = "ATTNLAB_WEDGE_SECONDS"
#: seconds a silent kernel has to answer on its control channel (at most the wedge limit)
ANSWER_SECONDS = 10

T = TypeVar("T")


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
    machine cannot pick the same ports and answer each other's requests. The manager is the asynchronous
    one nbclient expects: with a blocking one, nbclient's wait for a cell's output blocks its event loop,
    so neither the cell's time limit nor a kernel's death would ever be noticed."""
    from jupyter_client import AsyncKernelManager  # comes with nbclient (the "dev" extra)

    return AsyncKernelManager(kernel_name="python3", transport="ipc", ip=str(sockets / "kernel"))


class KernelWedged(RuntimeError):
    """A lesson's kernel stopped answering: a cell had no word from it for the wedge limit, and it did
    not answer on its control channel either. The message says which cell and for how long."""


def wedge_limit() -> float | None:
    """Seconds a cell may go without a word from its kernel before the kernel is asked whether it still
    answers: ``ATTNLAB_WEDGE_SECONDS`` when set (0: never), else :data:`WEDGE_SECONDS` in smoke runs and
    None (no watch) in full runs, whose cells can be silent for long."""
    value = os.environ.get(WEDGE_ENV, "").strip()
    if value:
        try:
            seconds = float(value)
        except ValueError:
            raise ValueError(f"{WEDGE_ENV}={value!r} is not a number of seconds (0: no watch)") from None
        return seconds if seconds > 0 else None
    return float(WEDGE_SECONDS) if is_smoke() else None


class Watchdog:
    """Watches the cells a kernel runs and stops the kernel when it has wedged.

    A cell is wedged when its kernel has said nothing about it (no message on IOPub: not the busy status
    and the echo of the code that start every cell, no output, no widget update) for ``limit`` seconds,
    and either never said anything about it (the request was not picked up), or does not answer a
    ``kernel_info_request`` on its control channel within ``answer`` seconds, or answers one on its
    **shell** channel (it is idle, so the cell's end was lost on the way: the client would wait forever).
    A kernel busy with a long silent cell answers on its control channel, from a thread of its own, and
    not on its shell channel, whose queue the running cell holds. The kernel process is then killed, so nbclient
    stops waiting (``DeadKernelError``), and :attr:`wedged` says which cell it was.
    """

    def __init__(self, km: Any, limit: float, answer: float | None = None) -> None:
        self.km, self.limit = km, limit
        self.answer = min(ANSWER_SECONDS, limit) if answer is None else answer
        self.wedged: int | None = None  # the index of the cell that wedged its kernel
        self._cell: int | None = None  # the cell running now, None between cells
        self._last = 0.0  # monotonic time of the last word about it (or of sending it)
        self._started = False  # whether the kernel said anything about it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="kernel-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.answer + 2)

    # called by the client, on its own thread
    def cell_sent(self, cell_index: int, **_ignored: Any) -> None:
        self._last, self._started, self._cell = monotonic(), False, cell_index

    def heard(self) -> None:
        self._last, self._started = monotonic(), True

    def cell_done(self, **_ignored: Any) -> None:
        self._cell = None

    # the watch, on a thread of its own
    def _watch(self) -> None:
        while not self._stop.wait(min(1.0, self.limit / 4)):
            cell = self._cell
            if cell is None or monotonic() - self._last < self.limit:
                continue
            if self._started and self._answers("control") and not self._answers("shell"):
                self._last = monotonic()  # busy with the cell, not wedged: the clock starts again
                continue
            if self._stop.wait(1.0):  # a cell that ended just as it was asked sends its end in this second
                return
            if self._cell == cell and monotonic() - self._last >= self.limit:
                self.wedged = cell
                self._kill()
                return

    def _answers(self, channel: str) -> bool:
        """Whether the kernel answers a ``kernel_info_request`` on ``channel`` in time (a client of the watch's
        own: sockets are used by one thread only). On ``"control"`` a kernel answers from a thread of its own,
        busy or not; on ``"shell"`` only when it is idle, since a running cell holds the shell's queue."""
        probe = self.km.blocking_client()
        probe.start_channels(shell=channel == "shell", iopub=False, stdin=False, hb=False,
                             control=channel == "control")
        stream = probe.shell_channel if channel == "shell" else probe.control_channel
        try:
            request = probe.session.msg("kernel_info_request")
            stream.send(request)
            deadline = monotonic() + self.answer
            while (left := deadline - monotonic()) > 0:
                try:
                    reply = stream.get_msg(timeout=left)
                except Exception:  # noqa: BLE001 - queue.Empty: no answer in time
                    return False
                if reply.get("parent_header", {}).get("msg_id") == request["header"]["msg_id"]:
                    return True
            return False
        finally:
            probe.stop_channels()

    def _kill(self) -> None:
        process = getattr(self.km.provisioner, "process", None)
        if process is not None:
            process.kill()
        else:
            self.km.kill_kernel()


@functools.cache
def _watched_client() -> type:
    """``nbclient.NotebookClient`` telling its :class:`Watchdog` of every message about the running cell."""
    from nbclient import NotebookClient

    class WatchedClient(NotebookClient):
        watchdog: Watchdog | None = None

        def process_message(self, msg: dict, cell: Any, cell_index: int) -> Any:
            if self.watchdog is not None:
                self.watchdog.heard()
            return super().process_message(msg, cell, cell_index)

    return WatchedClient


@contextlib.contextmanager
def lesson_kernel(book, folder: Path, *, timeout: int = 900, wedge_seconds: float | None = None) -> Iterator:
    """A started ``nbclient.NotebookClient`` for ``book`` (an nbformat notebook, filled with outputs
    in place) on a fresh local kernel whose working folder is ``folder``.

    ``wedge_seconds``: the :class:`Watchdog`'s limit (None: :func:`wedge_limit`; 0: no watch). A kernel
    it stops makes the ``with`` block end in :class:`KernelWedged`.

    On the way out, also after an error or an interruption, the kernel is shut down and its socket
    folder removed: nbclient leaves running a kernel whose manager it was handed, so a run of many
    lessons would otherwise keep every finished lesson's kernel, and its memory, until it ends. The
    kernel is stopped at once, not asked to exit: every cell has finished and what a lesson saves is
    written by the cell that saves it, so nothing waits for the second or so a kernel that has
    imported torch and transformers spends tearing its modules down.
    """
    from nbclient.exceptions import DeadKernelError

    limit = wedge_limit() if wedge_seconds is None else (wedge_seconds or None)
    sockets = Path(tempfile.mkdtemp(prefix="attnlab-kernel-"))
    km = local_kernel(sockets)
    watchdog = Watchdog(km, limit) if limit else None
    hooks = {"on_cell_execute": watchdog.cell_sent, "on_cell_executed": watchdog.cell_done,
             "on_cell_error": watchdog.cell_done} if watchdog else {}
    client = _watched_client()(book, km=km, timeout=timeout, kernel_name="python3", shutdown_kernel="immediate",
                               resources={"metadata": {"path": str(folder)}}, **hooks)
    client.watchdog = watchdog
    try:
        with client.setup_kernel(cleanup_kc=True):
            wait_in_slices(client.kc.shell_channel)
            if watchdog:
                watchdog.start()
            try:
                yield client
            except DeadKernelError:
                if watchdog is None or watchdog.wedged is None:
                    raise
                raise KernelWedged(_("the kernel stopped answering in cell {cell} (nothing from it about the cell "
                                     "for {seconds:.0f} s, and not busy with it when asked)").format(cell=watchdog.wedged + 1,
                                                                          seconds=watchdog.limit)) from None
            finally:
                if watchdog:
                    watchdog.stop()
    finally:
        shutil.rmtree(sockets, ignore_errors=True)


def rerun_if_wedged(run: Callable[[], T], lesson: str) -> T:
    """``run()``, a run of ``lesson`` in a fresh kernel; when its kernel wedged (:class:`KernelWedged`), one
    line says so and the lesson runs again from the top in a new kernel, once.

    Raises:
        KernelWedged: the kernel wedged the second time too; the message names the lesson and says what
            to do.
    """
    try:
        return run()
    except KernelWedged as first:
        print(_("{lesson}: {what}; the kernel was stopped and the lesson runs again from the top in a new "
                "kernel").format(lesson=lesson, what=first), flush=True)
    try:
        return run()
    except KernelWedged as second:
        raise KernelWedged(_("{lesson}: {what}, for the second time in a row, so the lesson was not finished. "
                             "Run it again; if it happens every time, the kernel hangs on this machine "
                             "(ipython/ipykernel#1554): try another version of ipykernel").format(lesson=lesson, what=second)) from None


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


def execute_notebook(book, folder: Path, *, timeout: int = 900, wedge_seconds: float | None = None,
                     name: str = "") -> None:
    """Run every cell of ``book`` (an nbformat notebook, filled with outputs in place) in a fresh local
    kernel whose working folder is ``folder`` (:func:`lesson_kernel`: the kernel ends with the run). A
    kernel that wedges is stopped and the notebook run again from the top, once (:func:`rerun_if_wedged`;
    ``wedge_seconds`` as :func:`lesson_kernel` reads it; ``name``: the notebook, as the line names it)."""

    def run_once() -> None:
        with lesson_kernel(book, folder, timeout=timeout, wedge_seconds=wedge_seconds) as client:
            client.execute()

    rerun_if_wedged(run_once, name or _("the notebook"))


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
        execute_notebook(book, folder, timeout=timeout, name=name)


def execute_recording(notebook: str | Path, texts: str | Path, *, timeout: int = 900):
    """Execute ``notebook`` headless in its own folder, with a first cell that records every
    figure's texts into ``texts``; returns the executed notebook (the hook cell removed)."""
    import nbformat

    notebook = Path(notebook)
    book = nbformat.read(str(notebook), as_version=4)
    hook = nbformat.v4.new_code_cell(figure_texts.hook_source(texts))
    hook["id"] = figure_texts.HOOK_ID
    book.cells.insert(0, hook)
    execute_notebook(book, notebook.parent, timeout=timeout, name=notebook.stem)
    book.cells = [c for c in book.cells if c.id != figure_texts.HOOK_ID]
    return book
