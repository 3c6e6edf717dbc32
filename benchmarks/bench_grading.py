"""How long a class's autograding takes, one submission at a time and two at once, side by side in one run.

    python benchmarks/bench_grading.py --json benchmarks/measured/grading.json
    python benchmarks/bench_grading.py --json /tmp/grading.json --full 00 --smoke --submissions 2   # quicker

For each lesson, an nbgrader course (``attnlab class assignments``) under a class setting on the offline
default (fp32, the mode given) gets ``--submissions`` submissions (the released notebook unanswered: the
whole lesson re-runs, as for every submission), graded by ``attnlab class autograde`` twice, with ``--force``:
``--jobs 1`` then ``--jobs 2``. Each kernel gets the threads the command gives it (the cores over the jobs).
A submission's time is the run's wall time over the submissions; a class of sixty is sixty times that.

Lesson 12 reads each student's graded lessons 05-11 (docs/classroom.md, "Grade the lessons in order"): its
course first grades lessons 05-11 for the same students (``--smoke`` lessons run in smoke mode, so these
records are smoke-mode records), then lesson 12 is timed, and its longest cell (nbclient's execution times in
the graded notebook) is compared with the cell limit ``classroom/nbgrader_config.py`` sets
(``Execute.timeout``). A timed run in which a kernel stopped answering (the command grades that submission
again) is kept in the record and made again.

The machine is described (``lscpu``'s model name, the cores, whether it has AMX and AVX512-BF16), and each
timed run records how busy the machine was with other work just before it (the share of the CPUs other
processes used over :data:`SAMPLE_S` seconds): a run is marked ``busy`` above :data:`BUSY_SHARE`.
``python scripts/course_numbers.py`` reads the file into ``attnlab/core/numbers.json`` (``grading``).
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnlab.core import class_setting  # noqa: E402
from attnlab.tools import autograde  # noqa: E402
from attnlab.tools.assignments import write_course  # noqa: E402

#: seconds the CPUs are watched before each timed run
SAMPLE_S = 3.0
#: share of the CPUs used by other processes above which a run is marked busy
BUSY_SHARE = 0.15
#: the lessons whose records lesson 12 reads
FEEDS_12 = ["05", "06", "07", "08", "09", "10", "11"]
CLASS_SIZE = 60


def machine() -> dict:
    """lscpu's model name, the cores this process may use, and the fast-bf16 instructions the CPU has."""
    flags, model = set(), platform.processor() or platform.machine()
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            key, _sep, value = line.partition(":")
            if key.strip() == "Model name":
                model = value.strip()
            elif key.strip() == "Flags":
                flags = set(value.split())
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"model": model, "cores": autograde.cores(), "arch": platform.machine(),
            "amx": "amx_bf16" in flags, "avx512_bf16": "avx512_bf16" in flags}


def _cpu_jiffies() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields), idle


def others_share(seconds: float = SAMPLE_S) -> float | None:
    """Share of every CPU busy over ``seconds`` while this benchmark waits (so: other work), or None."""
    try:
        total0, idle0 = _cpu_jiffies()
        time.sleep(seconds)
        total1, idle1 = _cpu_jiffies()
    except OSError:
        return None
    return round(1 - (idle1 - idle0) / max(1, total1 - total0), 2)


def cell_timeout() -> float:
    """nbgrader's cell limit as the course's ``classroom/nbgrader_config.py`` sets it (``Execute.timeout``)."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "classroom")).load_config()
    return float(config.Execute.timeout)


def _stamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def longest_cell(notebook: Path) -> tuple[float | None, int | None]:
    """Seconds of the graded notebook's longest cell and its index, from nbclient's ``execution`` times."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    best: tuple[float | None, int | None] = (None, None)
    for i, cell in enumerate(nb["cells"]):
        times = cell.get("metadata", {}).get("execution", {})
        start, end = times.get("iopub.status.busy"), times.get("shell.execute_reply")
        if start and end:
            seconds = _stamp(end) - _stamp(start)
            if best[0] is None or seconds > best[0]:
                best = (round(seconds, 1), i)
    return best


def make_course(folder: Path, lessons: list[str], mode: str, students: list[str]) -> Path:
    """A course of ``lessons`` (English) under a class setting on the offline default (fp32, ``mode``), with
    each student's unanswered submission of each lesson."""
    write_course(folder, lessons, ("en",))
    class_setting.write(folder / class_setting.COURSE_FILE, "multilingual-e5-small", precision="fp32", mode=mode,
                        name="grading-benchmark")
    for lesson in lessons:
        name = f"lesson_{lesson}"
        subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", name, "--force"], cwd=folder,
                       check=True, capture_output=True)
        for student in students:
            shutil.copytree(folder / "release" / name, folder / "submitted" / student / name)
    return folder


def _graded_once(course: Path, assignments: list[str], jobs: int, n: int) -> dict:
    busy = others_share()
    start = time.monotonic()
    outcomes = autograde.autograde(course, assignments, jobs=jobs, force=True, create=True,
                                   say=lambda line: print("   ", line, flush=True))
    wall = time.monotonic() - start
    failed = [f"{o.student} {o.assignment}: {o.reason}" for o in outcomes if o.status != "graded"]
    if failed:
        raise RuntimeError("grading failed: " + "; ".join(failed))
    return {"jobs": jobs, "submissions": n, "wall_s": round(wall, 1), "per_submission_s": round(wall / n, 1),
            "each_s": sorted(o.seconds for o in outcomes), "stalls": sum(o.stalls for o in outcomes),
            "others_cpu_share_before": busy, "busy": busy is None or busy > BUSY_SHARE}


def timed_grading(course: Path, assignments: list[str], jobs: int, n: int) -> dict:
    """One ``attnlab class autograde`` run with ``--force``: wall seconds, seconds per submission, and how
    busy the machine was just before. A run in which a kernel stopped answering (the command graded that
    submission again) is kept under ``stalled_runs`` and the run made again, twice at most."""
    stalled = []
    for _ in range(3):
        run = _graded_once(course, assignments, jobs, n)
        if not run["stalls"]:
            break
        stalled.append(run)
    return {**run, "stalled_runs": stalled} if stalled else run


def bench_lesson(work: Path, lesson: str, mode: str, students: list[str]) -> dict:
    """Lesson ``lesson`` graded with one job, then two (lesson 12 after each student's lessons 05-11)."""
    feeds = FEEDS_12 if lesson == "12" else []
    course = make_course(work / f"course_{lesson}", feeds + [lesson], mode, students)
    row: dict = {"mode": mode}
    if feeds:
        print(f"lesson 12: grading lessons 05-11 first, {len(students)} students", flush=True)
        row["feeds"] = timed_grading(course, [f"lesson_{n}" for n in feeds], 2, len(students) * len(feeds))
    for jobs in (1, 2):
        print(f"lesson {lesson} ({mode}), {len(students)} submissions, {jobs} at once", flush=True)
        row[f"jobs_{jobs}"] = timed_grading(course, [f"lesson_{lesson}"], jobs, len(students))
    graded = sorted((course / "autograded").glob(f"*/lesson_{lesson}/*.ipynb"))
    cells = [longest_cell(p) for p in graded]
    longest = max((c for c in cells if c[0] is not None), default=(None, None))
    row["longest_cell_s"], row["longest_cell_index"] = longest
    if lesson == "12":
        rerun = [p for p in graded if any(w in p.read_text(encoding="utf-8") for w in ("re-running lessons", "recomputed"))]
        row["reran_earlier_lessons"] = bool(rerun)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True, help="the file to write")
    parser.add_argument("--full", nargs="*", default=["00", "04"], help="lessons graded in full mode")
    parser.add_argument("--smoke", nargs="*", default=["12"],
                        help="lessons graded in smoke mode (lesson 12 with smoke-mode records of 05-11)")
    parser.add_argument("--submissions", type=int, default=2, help="submissions per lesson (default 2)")
    args = parser.parse_args()
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # the command gives each kernel cores // jobs
        os.environ.pop(name, None)
    os.environ["ATTNLAB_OFFLINE"] = "1"
    os.environ.pop(class_setting.ENV, None)
    students = [f"student{i}" for i in range(args.submissions)]
    record = {"about": "python benchmarks/bench_grading.py --json FILE", "machine": machine(),
              "date": datetime.date.today().isoformat(), "cell_timeout_s": cell_timeout(), "class_size": CLASS_SIZE,
              "what": "attnlab class autograde lesson_NN --force, --jobs 1 then --jobs 2, on the same submissions "
                      "(the released notebook unanswered), offline default, fp32; per submission = wall / submissions",
              "lessons": {}}
    with tempfile.TemporaryDirectory(prefix="attnlab-grading-bench-") as tmp:
        for mode, lessons in (("full", args.full), ("smoke", args.smoke)):
            for lesson in lessons:
                record["lessons"][lesson] = bench_lesson(Path(tmp), lesson, mode, students)
                row = record["lessons"][lesson]
                print(f"lesson {lesson} ({mode}): {row['jobs_1']['per_submission_s']} s a submission one at a time, "
                      f"{row['jobs_2']['per_submission_s']} s with two at once; longest cell {row['longest_cell_s']} s",
                      flush=True)
                Path(args.json).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    record["busy"] = any(r[k]["busy"] for r in record["lessons"].values() for k in ("jobs_1", "jobs_2"))
    Path(args.json).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
