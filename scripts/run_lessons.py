"""Execute every lesson headless, saving executed copies (with outputs) to build/notebooks/.

    python scripts/run_lessons.py                 # all lessons, full mode
    ATTNLAB_SMOKE=1 python scripts/run_lessons.py # quick pass
    python scripts/run_lessons.py 06 07           # only lessons whose names start with these
    ATTNLAB_LANG=zh python scripts/run_lessons.py # the Chinese edition (notebooks/zh/ into build/notebooks/zh/)

Prints each lesson's wall time and the peak memory (RSS) of its kernel, and
the total. The committed notebooks stay without outputs. The work is done by
:mod:`attnlab.tools.run_lessons`.
"""

from __future__ import annotations

import sys

from attnlab.tools.run_lessons import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
