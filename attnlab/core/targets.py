"""The course's speed and memory targets: the one table the benchmarks check against and the documents quote.

A target is a promise, not a measurement: ``benchmarks/bench_course.py`` compares each run with
:data:`TARGETS`, ``python scripts/course_numbers.py`` copies the table into ``attnlab/core/numbers.json``
(``targets``), and the READMEs and guides show each as a generated span (``<!-- numbers:targets.NAME -->``).
A key's ending gives its unit: ``_s`` seconds, ``_minutes`` minutes, ``_mb`` MB.
"""

from __future__ import annotations

#: name -> value; on a 2-core CPU with the offline default in full mode unless the comment says otherwise
TARGETS: dict[str, int] = {
    # one lesson (benchmarks/bench_course.py)
    "lesson_minutes": 5,
    # one lesson at the class server's settings: one thread, fp32 where the CPU has no fast bf16
    "lesson_one_core_minutes": 5,
    # all 14 lessons, one after another (benchmarks/bench_course.py)
    "course_minutes": 10,
    # one lesson in smoke mode, on any model (benchmarks/bench_course.py --smoke; what the tests run)
    "smoke_lesson_s": 60,
    # a lesson's kernel peak: Binder gives 2 GB, JupyterLab and the system take the rest
    "peak_mb": 1800,
    # attnlab report --model multilingual-e5-small --twin none, wall clock
    "report_minutes": 10,
    # attnlab report on the offline default with its untrained twins (the default), wall clock
    "report_twin_minutes": 15,
    # attnlab report --twin none on a random model of bert-base-chinese's shape, wall clock
    "report_bert_base_shape_minutes": 25,
    # bash .ci/run on a fresh clone, its set-up included
    "ci_minutes": 15,
}
