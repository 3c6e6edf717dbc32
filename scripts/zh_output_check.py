"""Run the Chinese lessons and list every English prose line they print or draw (full mode by default).

    python scripts/zh_output_check.py              # all 14 Chinese lessons, full mode
    python scripts/zh_output_check.py 10 11        # only lessons whose names start with these
    ATTNLAB_SMOKE=1 python scripts/zh_output_check.py 05   # the quick pass
    python scripts/zh_output_check.py --results DIR         # keep the lessons' saved results in DIR
    python scripts/zh_output_check.py --words 3             # the lesson tests' reading (three words in a row)

The tests run every Chinese lesson in smoke mode and fail on an English line; smoke mode
does not reach the long-run branches (lesson 10's full sweep, lesson 08's timings), so this
runs the same collectors on full-mode outputs: each lesson's printed lines, rich outputs and
every figure's texts (titles, ticks, legends), read by :func:`attnlab.tools.english_prose.is_prose`
(names of models and code identifiers excepted, as in the tests), with issue 54's measure: a line
with two English words in a row is English (``--words``; the tests read three). The executed notebooks and
figure texts are kept in ``build/notebooks/zh/`` for a reader to look at. Lessons run in
order, so lesson 12 reads what lessons 05-11 saved (in ``--results``, default a temporary
folder). Exit status 1 when any line is found.

The last recorded runs (what they found, each lesson's seconds, the machine) are in
``benchmarks/measured/zh_output_check.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from attnlab.core.language import edition_folder
from attnlab.tools import english_prose, figure_texts, lesson_runner, run_lessons

ROOT = Path(__file__).resolve().parents[1]
OUT = edition_folder(ROOT / "build" / "notebooks", "zh")


def check(notebook: Path, run: int) -> list[str]:
    """Execute one Chinese lesson; its lines with ``run`` English words in a row, as ``"cell: line"``."""
    OUT.mkdir(parents=True, exist_ok=True)
    texts = OUT / f"{notebook.stem}.figure-texts.jsonl"
    texts.unlink(missing_ok=True)
    book = lesson_runner.execute_recording(notebook, texts, timeout=3600)
    nbformat.write(book, str(OUT / notebook.name))
    lines = figure_texts.reader_lines(book, figure_texts.read(texts))
    return [f"{where}: {line.strip()[:160]}" for where, line in lines if english_prose.is_prose(line, run)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lessons", nargs="*", help="lesson name prefixes (default: all)")
    ap.add_argument("--results", metavar="DIR", help="the lessons' results folder (default: a temporary one)")
    ap.add_argument("--words", type=int, default=2, metavar="N",
                    help="English words in a row that make a line English (default 2)")
    args = ap.parse_args()
    notebooks = run_lessons.lessons(args.lessons, "zh", ROOT)
    os.environ.pop("MPLBACKEND", None)  # the inline backend, as in Jupyter
    os.environ.pop("ATTNLAB_LANG", None)  # each lesson's own first cells switch the language
    mode = "smoke" if os.environ.get("ATTNLAB_SMOKE") == "1" else "full"
    with tempfile.TemporaryDirectory(prefix="zh-results-") as tmp:
        os.environ["ATTNLAB_RESULTS"] = args.results or tmp
        print(f"{len(notebooks)} Chinese lesson(s), {mode} mode; results in {os.environ['ATTNLAB_RESULTS']}")
        found = 0
        for notebook in notebooks:
            start = time.time()
            english = check(notebook, args.words)
            found += len(english)
            print(f"{notebook.stem:32s} {time.time() - start:6.0f} s  {len(english)} English line(s)", flush=True)
            for line in english:
                print("    " + line)
    print(f"{found} English prose line(s) in {len(notebooks)} lesson(s); executed copies in {OUT.relative_to(ROOT)}/")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
