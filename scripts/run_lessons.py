"""Execute every lesson headless, saving executed copies (with outputs) to build/notebooks/.

    python scripts/run_lessons.py                 # all lessons, full mode
    ATTNLAB_SMOKE=1 python scripts/run_lessons.py # quick pass
    python scripts/run_lessons.py 06 07           # only lessons whose names start with these
    ATTNLAB_LANG=zh python scripts/run_lessons.py # the Chinese edition (notebooks/zh/ into build/notebooks/zh/)

Prints each lesson's wall time and the peak memory (RSS) of its kernel, and
the total. The committed notebooks stay without outputs.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import nbformat

from attnlab.tools.lesson_runner import lesson_kernel

ROOT = Path(__file__).resolve().parents[1]


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


def edition(lang: str | None = None) -> str:
    """``"zh"`` for the Chinese edition (``ATTNLAB_LANG=zh``), else ``"en"``."""
    lang = (lang if lang is not None else os.environ.get("ATTNLAB_LANG", "en")).strip().lower()
    return "zh" if lang.startswith(("zh", "cn")) else "en"


def lesson_folder(lang: str | None = None) -> Path:
    """Where the lessons of an edition are: ``notebooks/`` or ``notebooks/zh/``."""
    return ROOT / "notebooks" / "zh" if edition(lang) == "zh" else ROOT / "notebooks"


def lessons(prefixes: list[str], lang: str | None = None) -> list[Path]:
    """The lessons of an edition whose names start with one of ``prefixes`` (all when empty), in order."""
    books = sorted(lesson_folder(lang).glob("[0-9][0-9]_*.ipynb"))
    return [b for b in books if not prefixes or any(b.name.startswith(p) for p in prefixes)]


def run(path: Path, out_dir: Path, cell_seconds: dict[str, float] | None = None,
        forward_seconds: dict[str, float] | None = None,
        cell_peaks: dict[str, float] | None = None) -> tuple[float, float]:
    """Execute ``path`` in a fresh kernel; return its wall seconds and its kernel's peak memory (MB).

    ``cell_seconds``, when given, is filled with each code cell's wall seconds by cell id;
    ``forward_seconds`` with the seconds each cell spent inside torch modules' forward calls
    (:data:`FORWARD_CLOCK`; about a microsecond of overhead per module call); ``cell_peaks`` with
    the kernel's peak memory (MB) at the end of each code cell, so the cell that raised it shows.
    """
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
    os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend keeps figures in the outputs
    books = lessons(prefixes)
    out_dir = ROOT / "build" / "notebooks" / ("zh" if edition() == "zh" else "")
    mode = "smoke" if os.environ.get("ATTNLAB_SMOKE") == "1" else "full"
    total = 0.0
    where = books[0].parent.relative_to(ROOT) if books else lesson_folder().relative_to(ROOT)
    print(f"running {len(books)} lesson(s) of {where}/ in {mode} mode")
    for book in books:
        seconds, peak = run(book, out_dir)
        total += seconds
        print(f"{book.name:34s} {seconds:8.1f} s   peak memory {peak:7.0f} MB", flush=True)
    print(f"{'total':34s} {total:8.1f} s   executed copies in {out_dir.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
