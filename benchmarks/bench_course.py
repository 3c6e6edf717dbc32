"""Seconds and peak memory of every lesson, in full mode (or the lessons named).

    python benchmarks/bench_course.py              # every lesson, full mode (about half an hour on 2 cores)
    python benchmarks/bench_course.py 08 11        # only lessons whose names start with these
    python benchmarks/bench_course.py --smoke 08   # the quick pass, to try the script
    python benchmarks/bench_course.py --model DIR  # the course on any model folder (ATTNLAB_MODEL=DIR)
    python benchmarks/bench_course.py --random-bert-base   # on a random bert-base-chinese-shaped model

``--random-bert-base`` builds a randomly initialised model with the article
model's full shape (12 x 12, hidden 768, 21,128-entry vocabulary; about 400 MB,
built in a temporary folder and deleted afterwards): speed does not depend on
the weights, so it times the course on the article's model without the model
hub. The results folder is a temporary one too, so the runs neither use nor
change the course's own saved results.

Each lesson runs headless in its own kernel (:mod:`attnlab.tools.run_lessons` does
the running and measures the kernel's peak resident memory); this prints one
line per lesson, the total, and how each compares with the course's targets
(:data:`attnlab.core.targets.TARGETS`: each lesson's time, each kernel's peak, so that a
lesson fits Binder's memory, and the whole course's time), and the cell at which each kernel
reached its peak.
Under a lesson over its time target it names its slowest cells, and for each
lesson, and each of those cells, the share of the time spent inside the
model's forward passes (global module hooks in the lesson's kernel add up the
wall time of every outermost module call), so that one can see where the time
goes; the last lines say which lessons remain over target and why. In smoke
mode every lesson has one target of its own, on any model (``smoke_lesson_s``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from attnlab.core.language import edition_folder, environment_language, language_option
from attnlab.core.targets import TARGETS
from attnlab.tools import run_lessons

ROOT = Path(__file__).resolve().parents[1]

#: the course's targets on a 2-core CPU with the offline default (full mode)
LESSON_SECONDS, COURSE_SECONDS = TARGETS["lesson_minutes"] * 60, TARGETS["course_minutes"] * 60
LESSON_MB = TARGETS["peak_mb"]
#: the smoke-mode target of every lesson, on any model (the tests run the lessons in smoke mode)
SMOKE_SECONDS = TARGETS["smoke_lesson_s"]
#: how many of an over-target lesson's slowest cells are named
SLOWEST_CELLS = 4


@contextlib.contextmanager
def model_folder(args: argparse.Namespace) -> Iterator[str | None]:
    """The folder the lessons load (``--model``, or a random bert-base-chinese-shaped one), or None (``auto``)."""
    if args.model:
        folder = Path(args.model).expanduser().resolve()
        if not (folder / "config.json").is_file():
            raise SystemExit(f"{folder} is not a saved model (no config.json)")
        yield str(folder)
        return
    if not args.random_bert_base:
        yield None
        return
    sys.path.insert(0, str(ROOT))
    from attnlab.tools.testing import save_bert_base_chinese_shaped

    with tempfile.TemporaryDirectory(prefix="bert-base-chinese-shaped-") as tmp:
        print("building a random bert-base-chinese-shaped model (12 x 12, hidden 768, 21,128 entries) ...",
              flush=True)
        yield str(save_bert_base_chinese_shaped(Path(tmp) / "model"))


@contextlib.contextmanager
def results_folder(args: argparse.Namespace) -> Iterator[str]:
    """``--results DIR`` (kept, so that a later run, e.g. of lesson 12, reads what this one saved),
    or a temporary folder deleted afterwards."""
    if args.results:
        folder = Path(args.results).expanduser().resolve()
        folder.mkdir(parents=True, exist_ok=True)
        yield str(folder)
        return
    with tempfile.TemporaryDirectory(prefix="attnlab-bench-results-") as tmp:
        yield tmp


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lessons", nargs="*", help="lesson name prefixes, e.g. 08 11 (default: all)")
    ap.add_argument("--smoke", action="store_true", help="smoke mode instead of full mode")
    ap.add_argument("--results", metavar="DIR",
                    help="with --model or --random-bert-base: keep the lessons' results in DIR (default: a "
                         "temporary folder), so that a later run of lesson 12 reads them instead of re-running")
    ap.add_argument("--cells", action="store_true", help="name every lesson's slowest cells, not only those over target")
    ap.add_argument("--json", metavar="FILE",
                    help="also write the measurements to FILE (what scripts/course_numbers.py reads)")
    ap.add_argument("--lang", type=language_option, default=None,
                    help="the edition to run (default: ATTNLAB_LANG, else en)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--model", metavar="DIR", help="run the course on this model folder (ATTNLAB_MODEL=DIR)")
    which.add_argument("--random-bert-base", action="store_true",
                       help="run it on a random model shaped like bert-base-chinese, built in a temporary folder")
    args = ap.parse_args(argv)
    with model_folder(args) as folder:
        if folder is None:
            return run_course(args)
        from attnlab.tools.lesson_runner import environment

        with results_folder(args) as results, environment(ATTNLAB_MODEL=folder, ATTNLAB_RESULTS=results):
            print(f"model: {folder}; results: {results}")
            return run_course(args)


def _rises(peaks: dict[str, float]) -> list[tuple[str, float]]:
    """Each cell with the rise of the kernel's high-water mark during it (MB), largest first."""
    out, before = [], 0.0
    for cell, mb in peaks.items():
        if mb == mb:  # skip NaN (no /proc)
            out.append((cell, mb - before))
            before = mb
    return sorted(out, key=lambda item: -item[1])


def _peak_cell(peaks: dict[str, float]) -> str:
    """The cell during which the kernel's high-water mark rose the most, with that rise (MB)."""
    rises = _rises(peaks)
    return f"{rises[0][0]} (+{rises[0][1]:.0f} MB)" if rises and rises[0][1] > 0 else "-"


def run_course(args: argparse.Namespace) -> int:
    """Run the chosen lessons one by one and print their seconds, peaks and the targets."""
    if args.smoke:
        os.environ["ATTNLAB_SMOKE"] = "1"
    else:
        os.environ.pop("ATTNLAB_SMOKE", None)
    os.environ.pop("MPLBACKEND", None)
    if args.lang:
        os.environ["ATTNLAB_LANG"] = args.lang
    books = run_lessons.lessons(args.lessons)
    if not books:
        print(f"no lesson starts with {args.lessons}", file=sys.stderr)
        return 2
    mode = "smoke" if args.smoke else "full"
    limit = SMOKE_SECONDS if args.smoke else LESSON_SECONDS
    print(f"{len(books)} lesson(s), {mode} mode, {os.cpu_count()} CPU(s)")
    print(f"{'lesson':34s} {'seconds':>8s} {'peak MB':>8s} {'forward':>8s}  peak reached in")
    total, over, why = 0.0, [], []
    measured: dict[str, dict[str, float]] = {}
    for book in books:
        cells: dict[str, float] = {}
        forward: dict[str, float] = {}
        peaks: dict[str, float] = {}
        out = edition_folder(ROOT / "build" / "notebooks", environment_language())
        seconds, peak = run_lessons.run(book, out, cells, forward, peaks)
        peak_cell = _peak_cell(peaks)
        total += seconds
        in_model = sum(forward.values())
        too_slow, too_big = seconds > limit, not args.smoke and peak > LESSON_MB
        flag = "  over target" if too_slow or too_big else ""
        if flag:
            over.append(book.name)
        print(f"{book.name:34s} {seconds:8.1f} {peak:8.0f} {in_model / seconds:8.0%}  {peak_cell}{flag}", flush=True)
        measured[book.name[:2]] = {"seconds": round(seconds, 1), "peak_mb": round(peak),
                                   "forward_share": round(in_model / max(seconds, 1e-9), 2), "peak_cell": peak_cell}
        if args.cells:
            print("    memory rises: " + ", ".join(f"{cell} +{mb:.0f} MB" for cell, mb in _rises(peaks)[:SLOWEST_CELLS]
                                                   if mb > 0), flush=True)
        if too_slow or args.cells:
            slowest = sorted(cells.items(), key=lambda item: -item[1])[:SLOWEST_CELLS]
            print("    slowest cells: " + ", ".join(f"{cell} {s:.0f} s ({forward.get(cell, 0.0) / max(s, 1e-9):.0%} "
                                                     "forward)" for cell, s in slowest), flush=True)
        if too_slow:
            why.append(f"{book.name[:2]}: {seconds:.0f} s, {seconds - limit:.0f} s over; {in_model:.0f} s "
                       f"({in_model / seconds:.0%}) inside the model's forward passes, "
                       + ", ".join(f"{cell} {forward.get(cell, 0.0):.0f} of {s:.0f} s"
                                   for cell, s in sorted(cells.items(), key=lambda item: -item[1])[:2]))
        if too_big:
            why.append(f"{book.name[:2]}: peak {peak:.0f} MB, {peak - LESSON_MB:.0f} MB over")
    print(f"{'total':34s} {total:8.1f}")
    print("forward: the share of the lesson's time inside torch modules' forward calls (the model's arithmetic)")
    targets = (f"targets: each lesson <= {limit} s" + ("" if args.smoke else f" and {LESSON_MB} MB")
               + f" ({len(over)} over: {', '.join(over) or 'none'})")
    if not args.smoke and not args.lessons:
        targets += f"; the course <= {COURSE_SECONDS} s ({'met' if total <= COURSE_SECONDS else 'not met'})"
    print(targets)
    for line in why:
        print("  " + line)
    if args.json:
        write_measurements(Path(args.json), mode, measured)
    return 0


def write_measurements(path: Path, mode: str, measured: dict[str, dict[str, float]]) -> None:
    """Save one run's seconds and peaks per lesson with the model, mode, machine and date they come from."""
    import datetime
    import json
    import platform

    record = {
        "mode": mode,
        "model": os.environ.get("ATTNLAB_MODEL") or "auto (offline default: multilingual-e5-small)",
        "machine": f"{os.cpu_count()}-core {platform.machine()} CPU ({platform.processor() or platform.system()})",
        "date": datetime.date.today().isoformat(),
        "lessons": measured,
        "total_seconds": round(sum(m["seconds"] for m in measured.values()), 1),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"measurements saved to {path}")


if __name__ == "__main__":
    raise SystemExit(main())
