"""The report's untrained twin, part by part: lesson 11's part measured in full (before) and only as far as
conclusion 4 decides (after), side by side on the same twin in one run.

``attnlab report`` measures every part that feeds a conclusion on three shuffled twins of the model
(:func:`attnlab.tools.report.measure_twin`). On the twin, lesson 11's covering study now skips what only
describes (its LayerNorm null and nineteen of its twenty random sets of each size,
:func:`attnlab.analysis.covering.covering_study` with ``describe=False``); the pairs of heads, every head
alone and every head together, which conclusion 4 decides on, are the same passes. This script measures
the part both ways on one shuffled twin, in alternating order, ``--repeat`` times, checks that conclusions
4a and 4b read the same deciding numbers both ways, and prints the seconds and their ratio.

    python benchmarks/bench_twin_parts.py                    # print
    python benchmarks/bench_twin_parts.py --json benchmarks/measured/twin_parts.json --machine "..."

Full size (``ATTNLAB_SMOKE=0``) unless ``ATTNLAB_SMOKE=1``; the offline default unless ``--model``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path

import attnlab as al
from attnlab.core.config import is_smoke
from attnlab.core.fast import choose_precision
from attnlab.core.twins import shuffled_for_a_while
from attnlab.course import report_parts
from attnlab.course.claims import conclusions as claims


def timed_part(m: al.LoadedModel, *, describe: bool, precision: str) -> tuple[float, dict[str, float]]:
    """Lesson 11's report part on ``m``: (seconds, conclusion 4a's and 4b's deciding numbers)."""
    start = time.perf_counter()
    record, _stopping = report_parts.pruning(m, precision=precision, describe=describe)
    seconds = time.perf_counter() - start
    return seconds, {"4a": claims.conclusion_4a(record).numbers.get("estimate"),
                     "4b": claims.conclusion_4b(record).numbers.get("estimate")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="auto", help="the model whose twin is measured (default: the offline default)")
    ap.add_argument("--seed", type=int, default=0, help="the twin's shuffle seed")
    ap.add_argument("--repeat", type=int, default=1, help="pairs of runs (before, after), alternating")
    ap.add_argument("--json", type=Path, metavar="FILE", help="write the seconds and the ratio to FILE")
    ap.add_argument("--machine", default="2-core CPU", help="the machine, in words (with --json)")
    args = ap.parse_args(argv)
    m = al.load_model(args.model)
    precision, _why = choose_precision(m, "auto")
    runs = {"before": [], "after": []}
    numbers = {}
    with shuffled_for_a_while(m, seed=args.seed) as twin:
        for i in range(args.repeat):
            order = [("before", True), ("after", False)] if i % 2 == 0 else [("after", False), ("before", True)]
            for name, describe in order:
                seconds, numbers[name] = timed_part(twin, describe=describe, precision=precision)
                runs[name].append(seconds)
                print(f"{name:>6} (describe={describe}): {seconds:.1f} s", flush=True)
    before, after = statistics.median(runs["before"]), statistics.median(runs["after"])
    same = all(abs(numbers["before"][k] - numbers["after"][k]) <= 1e-9 for k in ("4a", "4b"))
    print(f"lesson 11's part on the twin: before {before:.1f} s, after {after:.1f} s, ratio {before / after:.2f}; "
          f"conclusion 4's deciding numbers {'the same' if same else 'DIFFER'} both ways")
    if args.json is not None:
        record = {"what": "lesson 11's report part on one shuffled twin, in full (before) and as far as conclusion 4 "
                          "decides (after) (python benchmarks/bench_twin_parts.py)",
                  "model": m.name, "precision": precision, "smoke": is_smoke(), "seed": args.seed,
                  "before_s": round(before, 1), "after_s": round(after, 1), "ratio": round(before / after, 2),
                  "runs": {k: [round(s, 1) for s in v] for k, v in runs.items()}, "same_deciding_numbers": same,
                  "machine": args.machine, "date": datetime.date.today().isoformat()}
        args.json.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
