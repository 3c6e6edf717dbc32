"""Execute lessons headless, each in a fresh kernel, timing it and watching its kernel's memory.

``python scripts/run_lessons.py`` (and ``bash scripts/course.sh run``) runs :func:`main`; the static
HTML pages (``scripts/course_html.py``) and the course's benchmark (``benchmarks/bench_course.py``)
call :func:`lessons` and :func:`run`. The edition is ``ATTNLAB_LANG``'s
(read by :func:`attnlab.core.language.normalise_language`): its lessons are
:func:`attnlab.core.language.lessons_folder`, its executed copies go into ``build/notebooks/``
or ``build/notebooks/zh/`` (:func:`attnlab.core.language.edition_folder`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import nbformat

from attnlab.core.language import _, edition_folder, environment_language, lessons_folder
from attnlab.core.models import course_root
from attnlab.tools.lesson_runner import lesson_kernel, rerun_if_wedged


def _peak_rss_mb(pid: int, stop: threading.Event, out: list[float]) -> None:
    peak = 0.0
    status = Path(f"/proc/{pid}/status")
    while not stop.is_set():
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except OSError:
            break
        stop.wait(0.5)
    out.append(peak)


#: run in the kernel before the lesson when forward time is counted: global module hooks that add up
#: the wall time of every outermost module call (a model's forward pass, also one that stops early)
FORWARD_CLOCK = """
import time as _clock_time
from torch.nn.modules import module as _clock_module
_forward_clock = {"depth": 0, "start": 0.0, "seconds": 0.0}
def _forward_clock_enter(_module, _args):
    if _forward_clock["depth"] == 0:
        _forward_clock["start"] = _clock_time.perf_counter()
    _forward_clock["depth"] += 1
def _forward_clock_leave(_module, _args, _output):
    _forward_clock["depth"] -= 1
    if _forward_clock["depth"] == 0:
        _forward_clock["seconds"] += _clock_time.perf_counter() - _forward_clock["start"]
_clock_module.register_module_forward_pre_hook(_forward_clock_enter)
_clock_module.register_module_forward_hook(_forward_clock_leave, always_call=True)
"""
#: prints the forward seconds so far
FORWARD_READ = 'print(_forward_clock["seconds"])'


def _execute_aside(client, cell, index: int) -> None:
    """Run ``cell`` in the lesson's kernel without it taking the place of the lesson's cell ``index``
    (nbclient stores the cell it executes in the notebook at that index)."""
    lesson_cell = client.nb.cells[index]
    try:
        client.execute_cell(cell, index)
    finally:
        client.nb.cells[index] = lesson_cell


def _forward_seconds_so_far(client, index: int) -> float:
    """The kernel's forward seconds so far, read by a cell of its own (not part of the lesson)."""
    probe = nbformat.v4.new_code_cell(FORWARD_READ)
    _execute_aside(client, probe, index)
    text = "".join(out.get("text", "") for out in probe.outputs if out.get("output_type") == "stream")
    return float(text.strip() or "nan")


def _high_water_mb(pid: int | None) -> float:
    """The kernel's peak resident memory so far (VmHWM, MB), NaN where /proc cannot tell."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, TypeError):
        pass
    return float("nan")


def lessons(prefixes: list[str], lang: str | None = None, root: Path | None = None) -> list[Path]:
    """The lessons of an edition (default: ``ATTNLAB_LANG``'s) in the course folder ``root`` (default:
    this checkout) whose names start with one of ``prefixes`` (all when empty), in order."""
    books = sorted(lessons_folder(root or _root(), lang or environment_language()).glob("[0-9][0-9]_*.ipynb"))
    return [b for b in books if not prefixes or any(b.name.startswith(p) for p in prefixes)]


def _root() -> Path:
    root = course_root()
    if root is None:
        raise FileNotFoundError(_("There is no course checkout here: run the lessons from the course's folder."))
    return root


def run(path: Path, out_dir: Path, cell_seconds: dict[str, float] | None = None,
        forward_seconds: dict[str, float] | None = None,
        cell_peaks: dict[str, float] | None = None) -> tuple[float, float]:
    """Execute ``path`` in a fresh kernel; return its wall seconds and its kernel's peak memory (MB).

    ``cell_seconds``, when given, is filled with each code cell's wall seconds by cell id;
    ``forward_seconds`` with the seconds each cell spent inside torch modules' forward calls
    (:data:`FORWARD_CLOCK`; about a microsecond of overhead per module call); ``cell_peaks`` with
    the kernel's peak memory (MB) at the end of each code cell, so the cell that raised it shows.
    A kernel that wedges (smoke runs: :func:`attnlab.tools.lesson_runner.wedge_limit`) is stopped and the
    lesson run again from the top in a new kernel, once; the time is that of the run that finished.
    """
    return rerun_if_wedged(lambda: _run_once(path, out_dir, cell_seconds, forward_seconds, cell_peaks), path.stem)


def _run_once(path: Path, out_dir: Path, cell_seconds: dict[str, float] | None,
              forward_seconds: dict[str, float] | None, cell_peaks: dict[str, float] | None) -> tuple[float, float]:
    """:func:`run` in one kernel (a wedged one ends it in :class:`~attnlab.tools.lesson_runner.KernelWedged`)."""
    book = nbformat.read(str(path), as_version=4)
    start = time.time()
    peak: list[float] = []
    with lesson_kernel(book, path.parent, timeout=3600) as client:  # the kernel ends with the lesson
        pid = client.km.provisioner.process.pid if client.km.provisioner else None
        stop = threading.Event()
        watcher = threading.Thread(target=_peak_rss_mb, args=(pid, stop, peak), daemon=True) if pid else None
        if watcher:
            watcher.start()
        try:
            if forward_seconds is not None:
                _execute_aside(client, nbformat.v4.new_code_cell(FORWARD_CLOCK), 0)
            before = 0.0
            for index, cell in enumerate(book.cells):
                cell_start = time.time()
                client.execute_cell(cell, index)
                if cell.cell_type != "code":
                    continue
                if cell_seconds is not None:
                    cell_seconds[cell.get("id", str(index))] = time.time() - cell_start
                if cell_peaks is not None:
                    cell_peaks[cell.get("id", str(index))] = _high_water_mb(pid)
                if forward_seconds is not None:
                    so_far = _forward_seconds_so_far(client, index)
                    forward_seconds[cell.get("id", str(index))], before = so_far - before, so_far
        finally:
            stop.set()
            if watcher:
                watcher.join(2)
    out_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(book, str(out_dir / path.name))
    return time.time() - start, (peak[0] if peak else float("nan"))


def main(prefixes: list[str]) -> int:
    """Run the lessons of the speaking edition whose names start with ``prefixes`` (all when empty) into
    ``build/notebooks/`` (``zh/`` for Chinese), printing each one's wall time and peak memory."""
    try:
        lang, root = environment_language(), _root()
    except (ValueError, FileNotFoundError) as exc:  # ATTNLAB_LANG names no language; no checkout here
        print(f"attnlab: {exc}", file=sys.stderr)
        return 2
    os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend keeps figures in the outputs
    books = lessons(prefixes, lang, root)
    out_dir = edition_folder(root / "build" / "notebooks", lang)
    mode = "smoke" if os.environ.get("ATTNLAB_SMOKE") == "1" else "full"
    total = 0.0
    where = lessons_folder(root, lang).relative_to(root).as_posix()
    print(f"running {len(books)} lesson(s) of {where}/ in {mode} mode")
    for book in books:
        seconds, peak = run(book, out_dir)
        total += seconds
        print(f"{book.name:34s} {seconds:8.1f} s   peak memory {peak:7.0f} MB", flush=True)
    print(f"{'total':34s} {total:8.1f} s   executed copies in {out_dir.relative_to(root)}/")
    return 0
