"""How many students one machine serves at once: the sizing table of docs/classroom.md.

    python classroom/sizing.py            # prints the Markdown table

Each student's memory is the lesson's measured kernel peak (benchmarks/measured/course_peaks_*.json:
``python benchmarks/bench_course.py --cells --json FILE``, one full run per model) plus their Jupyter
server (SERVER_MB, measured: the resident memory of an idle ``jupyter lab`` server on the course's
environment). The machine keeps RESERVE_MB for the system, the hub and its proxy (a margin, not a
measurement). Students at once = (machine - reserve) / (peak + server), rounded down: the whole class
on the same lesson at the same time, the worst case of a live session. Each "students" cell gives
the offline default first, then bert-base-chinese's shape.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURED = {"offline default (multilingual-e5-small)": "course_peaks_offline.json",
            "bert-base-chinese's shape": "course_peaks_bert_base_shape.json"}
#: resident memory of an idle `jupyter lab` server (83 MB measured on the 2-core test machine, rounded up)
SERVER_MB = 90
#: kept for the operating system, the hub and the proxy
RESERVE_MB = 1024
MACHINES_GB = (16, 64, 256)


def students(machine_gb: int, peak_mb: float) -> int:
    """Students one machine of ``machine_gb`` serves at once when each kernel peaks at ``peak_mb``."""
    return int((machine_gb * 1024 - RESERVE_MB) // (peak_mb + SERVER_MB))


def table() -> str:
    peaks = {label: json.loads((ROOT / "benchmarks" / "measured" / name).read_text(encoding="utf-8"))["lessons"]
             for label, name in MEASURED.items()}
    labels = list(peaks)
    head = ["lesson"] + [f"kernel peak, MB: {label}" for label in labels] + \
        [f"students on {gb} GB" for gb in MACHINES_GB]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for lesson in sorted(peaks[labels[0]]):
        mb = [peaks[label][lesson]["peak_mb"] for label in labels]
        cells = [lesson] + [f"{v:,}" for v in mb] + \
            [f"{students(gb, mb[0])} / {students(gb, mb[1])}" for gb in MACHINES_GB]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
