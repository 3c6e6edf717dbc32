"""Make the reference results the package ships (``attnlab/course/reference/<mode>/<model>/``).

    python scripts/make_references.py --mode full --model offline    # the offline default, full mode
    python scripts/make_references.py --mode full --model bundled    # the bundled MiniLM
    python scripts/make_references.py --mode smoke --model offline   # smoke mode (what the tests compare)
    python scripts/make_references.py --mode full --model offline --from DIR   # ship a run already made
    python scripts/make_references.py ... --from DIR --timings A.json B.json  # with its bench_course --json files

Runs lessons 05-11, 13 and 12 (12 reads 13's record) headless, each in a fresh kernel
(:func:`attnlab.tools.run_lessons.run`), with ``ATTNLAB_OFFLINE=1`` and a fresh results folder; then
replaces the model's reference folder with their saved records (:func:`attnlab.course.reference.slim`:
every verdict with its numbers and the sizes, not the large arrays) and a ``provenance.json`` (the command,
date, machine, whether its CPU computes bf16 natively, which decides the lessons' "auto" precision,
torch, threads, commit, each lesson's seconds and peak). ``--from DIR`` skips the run and ships the
records a run of those lessons (in that order, in one results folder) left in ``DIR``, and ``--timings``
adds the seconds and peaks that ``benchmarks/bench_course.py --json`` wrote for that run. A full run takes
as long as the course's full run on that model (``course.*_full_total_s`` in ``attnlab/core/numbers.json``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attnlab.core.language import edition_folder  # noqa: E402
from attnlab.course import reference  # noqa: E402
from attnlab.tools import run_lessons  # noqa: E402

#: --model -> ATTNLAB_MODEL
MODELS = {"offline": None, "bundled": "bundled"}
#: --model -> the model's name in its records
RECORDED = {"offline": reference.DEFAULT_MODEL, "bundled": reference.model_name("bundled")}
#: the lessons run, in order
ORDER = [name[:2] for name in reference.COMPARED]


def cpu() -> dict:
    """The processor's name (``lscpu``'s "Model name") and whether it computes bf16 natively."""
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="ignore") if Path("/proc/cpuinfo").exists() else ""
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("flags", "").split())
    return {"cpu": f"{fields.get('model name', platform.processor() or '?')}, {os.cpu_count()} cores",
            "bf16_flags": sorted(flags & {"avx512_bf16", "amx_bf16"}),
            "native_bf16": bool(flags & {"avx512_bf16", "amx_bf16"})}


def commit() -> str:
    """The checkout's commit (with ``+changes`` when its working tree differs), or "?"."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "attnlab", "notebooks"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return rev + ("+changes" if dirty else "")


def run(results: Path, smoke: bool, model: str | None) -> dict[str, dict]:
    """Run the lessons into ``results``; each one's seconds and peak MB."""
    os.environ.update(ATTNLAB_OFFLINE="1", ATTNLAB_RESULTS=str(results), ATTNLAB_SMOKE="1" if smoke else "0")
    os.environ.pop("ATTNLAB_MODEL", None) if model is None else os.environ.update(ATTNLAB_MODEL=model)
    os.environ.pop("MPLBACKEND", None)
    books = {book.name[:2]: book for book in run_lessons.lessons(ORDER, "en", ROOT)}
    measured = {}
    for key in ORDER:
        seconds, peak = run_lessons.run(books[key], edition_folder(ROOT / "build" / "notebooks", "en"))
        print(f"{books[key].name:34s} {seconds:8.1f} s {peak:7.0f} MB", flush=True)
        measured[key] = {"seconds": round(seconds, 1), "peak_mb": round(peak)}
    return measured


def ship(results: Path, mode: str, model: str, measured: dict, argv: list[str]) -> Path:
    """Replace the reference folder of ``model`` (its records' name) and ``mode`` with the records in ``results``."""
    import torch

    records = reference.read_folder(results)
    missing = [name for name in reference.COMPARED if name not in records]
    if missing:
        raise SystemExit(f"{results} lacks the saved results of {', '.join(missing)}: run those lessons first")
    if reference.run_mode(records) != mode or {r.get("model") for r in records.values()} != {model}:
        raise SystemExit(f"the results in {results} are not all of one {mode} run on {model}")
    target = reference.reference_dir(mode, model)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in reference.COMPARED:  # the verdicts, their numbers and the sizes, not the large arrays
        text = json.dumps(reference.slim(records[name]), indent=1, ensure_ascii=False)
        (target / f"{name}.json").write_text(text + "\n", encoding="utf-8")
    record = {"model": model, "mode": mode, "precision": sorted({r.get("precision") for r in records.values()}),
              "command": "python scripts/make_references.py " + " ".join(argv),
              "date": datetime.date.today().isoformat(), **cpu(), "torch": torch.__version__,
              "threads": os.environ.get("OMP_NUM_THREADS", "unset"), "commit": commit(), "lessons": measured}
    (target / reference.PROVENANCE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=reference.MODES, required=True)
    parser.add_argument("--model", choices=sorted(MODELS), required=True,
                        help="offline: the offline default (multilingual-e5-small); bundled: the bundled MiniLM")
    parser.add_argument("--from", dest="source", metavar="DIR", help="ship the records already in DIR (no run)")
    parser.add_argument("--timings", nargs="+", metavar="FILE", default=[],
                        help="with --from: the run's benchmarks/bench_course.py --json files")
    args = parser.parse_args(argv)
    if args.source:
        source = Path(args.source).expanduser().resolve()
        if not source.is_dir():
            parser.error(f"{source} is not a folder")
        measured = {key: {"seconds": m["seconds"], "peak_mb": m["peak_mb"]} for name in args.timings
                    for key, m in json.loads(Path(name).read_text(encoding="utf-8"))["lessons"].items()}
        print(f"wrote {ship(source, args.mode, RECORDED[args.model], measured, argv).relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory(prefix="attnlab-reference-") as tmp:
        measured = run(Path(tmp), args.mode == "smoke", MODELS[args.model])
        print(f"wrote {ship(Path(tmp), args.mode, RECORDED[args.model], measured, argv).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
