"""Peak memory and time of one head-ablation sweep, with freed memory returned to the system and without.

    python benchmarks/bench_memory_release.py                    # the offline default
    python benchmarks/bench_memory_release.py --random-bert-base # bert-base-chinese's shape (random weights)
    python benchmarks/bench_memory_release.py --model DIR --layers 3

Each setting runs in a fresh process, one after the other: load the model, sweep every head of
the first ``--layers`` layers on 128 texts (lesson 11's sweep, at the precision the lesson
chooses), then report the process's peak resident memory (VmHWM) and the sweep's seconds. The
"as glibc ships" run sets ``ATTNLAB_SAVE_MEMORY=0``, the other ``=1`` (see :mod:`attnlab.core.memory`);
``--thresholds`` tries other mmap thresholds, ``--rows-per-pass`` other numbers of rows (texts
times copies) a batched pass takes, with the allocator as it ships. The last
lines print the ratios of the two, measured side by side in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sweep(model: str, layers: int, threshold: int | None, rows: int | None) -> None:
    """Child process: one sweep, then one line of JSON (peak MB, seconds)."""
    sys.path.insert(0, str(ROOT))
    import attnlab as al
    from attnlab.core import memory
    from attnlab.core import run as core_run

    if threshold is not None:
        memory.return_freed_memory(threshold)  # before load_model sets the default
    if rows is not None:  # this many rows a pass whatever the model's width
        core_run.ROWS_PER_PASS, core_run.ROWS_WIDTH = rows, 1 << 30
    from attnlab.analysis import importance
    from attnlab.core.fast import choose_precision
    from attnlab.data import corpus

    m = al.load_model(model, verbose=False)
    objective = importance.make_objective(m, corpus.texts(m.language, 128, seed=1), kind="sentence", batch_size=64)
    start = time.perf_counter()
    importance.ablation_per_text(m, objective, layers=list(range(min(layers, m.n_layers))),
                                 precision=choose_precision(m)[0])
    seconds = time.perf_counter() - start
    peak = int([line for line in open("/proc/self/status") if line.startswith("VmHWM")][0].split()[1]) // 1024
    print(json.dumps({"peak_mb": peak, "seconds": seconds}))


def measure(model: str, layers: int, keep: bool, threshold: int | None = None, rows: int | None = None) -> dict:
    env = {**os.environ, "ATTNLAB_OFFLINE": "1", "ATTNLAB_SAVE_MEMORY": "0" if keep else "1"}
    extra = ([] if threshold is None else ["--threshold", str(threshold)]) + ([] if rows is None else ["--rows", str(rows)])
    out = subprocess.run([sys.executable, __file__, "--child", model, "--layers", str(layers)] + extra, env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="auto", help="a model folder or name (default: auto, offline)")
    ap.add_argument("--random-bert-base", action="store_true", help="a random model of bert-base-chinese's shape")
    ap.add_argument("--layers", type=int, default=2, help="sweep the heads of this many layers (default 2)")
    ap.add_argument("--thresholds", metavar="MB", type=float, nargs="*", default=[],
                    help="also try these thresholds, in MB (the package uses %(const)s)" % {"const": "1"})
    ap.add_argument("--rows-per-pass", type=int, nargs="*", default=[], metavar="N",
                    help="also compare these rows a pass (glibc's allocator as it ships; the package scales 256 rows "
                         "by 384 / hidden width)")
    ap.add_argument("--threshold", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child", metavar="MODEL", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sweep(args.child, args.layers, args.threshold, args.rows)
        return
    if not sys.platform.startswith("linux"):
        raise SystemExit("this benchmark reads /proc and measures glibc's allocator: Linux only")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        model = args.model
        if args.random_bert_base:
            sys.path.insert(0, str(ROOT))
            from attnlab.tools.testing import save_bert_base_chinese_shaped
            model = str(save_bert_base_chinese_shaped(Path(tmp) / "model"))
        print(f"model {model}; heads of {args.layers} layer(s) swept on 128 texts; {os.cpu_count()} CPU(s)")
        shipped = measure(model, args.layers, keep=True)
        runs = {"freed memory returned": measure(model, args.layers, keep=False)}
        for mb in args.thresholds:
            runs[f"threshold {mb:g} MB"] = measure(model, args.layers, keep=False, threshold=int(mb * (1 << 20)))
        for rows in args.rows_per_pass:
            runs[f"{rows} rows a pass"] = measure(model, args.layers, keep=True, rows=rows)
    for label, r in {"as glibc ships": shipped, **runs}.items():
        print(f"{label:22s} peak {r['peak_mb']:6d} MB   sweep {r['seconds']:6.1f} s")
    for label, r in runs.items():
        print(f"{label}: peak {r['peak_mb'] / shipped['peak_mb']:.2f}x ({r['peak_mb'] - shipped['peak_mb']:+d} MB), "
              f"time {r['seconds'] / shipped['seconds']:.2f}x of glibc's own")


if __name__ == "__main__":
    main()
