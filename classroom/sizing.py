"""How many students one machine serves at once: the sizing table of docs/classroom.md.

    python classroom/sizing.py            # prints the Markdown table and what it means (--lang zh: in Chinese)

The table and its prose are generated from attnlab/core/numbers.json like every number of the
course's documents (:func:`attnlab.tools.course_numbers._sizing_table` and ``_sizing_prose``; the
guides' ``<!-- numbers:sizing -->`` blocks), from the measured kernel peaks
(benchmarks/measured/course_peaks_*.json), one idle student server's memory and one submission's
grading time (benchmarks/measured/class_server.json, ``python benchmarks/bench_class_server.py``).
What was not measured says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnlab.core.measured import NUMBERS_FILE  # noqa: E402
from attnlab.tools.course_numbers import render_block  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the class server's sizing table")
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    lang = parser.parse_args().lang
    numbers = json.loads(Path(NUMBERS_FILE).read_text(encoding="utf-8"))
    print(render_block("sizing", numbers, lang))
    print(render_block("sizing_prose", numbers, lang))
