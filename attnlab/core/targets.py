"""The course's speed and memory targets: the one table the benchmarks check against and the documents quote.

A target is a promise, not a measurement: ``benchmarks/bench_course.py`` compares each run with
:data:`TARGETS`, ``python scripts/course_numbers.py`` copies the table into ``attnlab/core/numbers.json``
(``targets``), and the READMEs and guides show each as a generated span (``<!-- numbers:targets.NAME -->``).
A key's ending gives its unit: ``_s`` seconds, ``_minutes`` minutes, ``_mb`` MB.
"""

from __future__ import annotations

#: name -> value, all on a 2-core CPU with the offline default unless the name says otherwise
TARGETS: dict[str, int] = {
    # one lesson in full mode (benchmarks/bench_course.py)
    "lesson_minutes": 5,
    # all 14 lessons in full mode, one after another (benchmarks/bench_course.py)
    "course_minutes": 15,
    # one lesson in smoke mode, on any model (benchmarks/bench_course.py --smoke; what the tests run)
    "smoke_lesson_s": 60,
    # a lesson's kernel peak: Binder gives 2 GB, JupyterLab and the system take the rest
    "peak_mb": 1800,
    # attnlab report --model multilingual-e5-small --twin none, wall clock
    "report_minutes": 10,
    # attnlab report --model multilingual-e5-small with its untrained twin (the default), wall clock
    "report_twin_minutes": 15,
    # attnlab report --twin none on a random model of bert-base-chinese's shape, wall clock
    "report_bert_base_shape_minutes": 25,
}
