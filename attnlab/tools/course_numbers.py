"""The course's times and expected numbers, from one generated file, and every document that quotes them.

    python scripts/course_numbers.py            # write attnlab/core/numbers.json, then every quoted number
    python scripts/course_numbers.py --check    # exit 1 (and say where) when a file is out of date

Sources (each records the model, mode, machine and date it was measured with):

* ``benchmarks/measured/course_*.json``: seconds and peak memory per lesson, written by
  ``python benchmarks/bench_course.py --json FILE``;
* ``attnlab/course/reference/smoke/``: the saved results of a smoke run on the offline default
  (the verdicts a smoke run should give);
* the offline default's conclusions (:func:`conclusions`, the one place they are read) and the full-size
  reports ``docs/reports/<model>/report.json`` that the ``reports`` table sets side by side;
* ``benchmarks/measured/ci_run.json``: how long ``bash .ci/run`` took on a fresh clone, read from its log
  by ``python scripts/course_numbers.py --ci-log LOG`` (:func:`read_ci_log`);
* ``benchmarks/measured/benchmarks.json``: the side-by-side benchmarks' runs the README quotes, and
  ``report_runs.json``: the report's times;
* the course's targets (:data:`attnlab.core.targets.TARGETS`, the table the benchmarks check against) and
  the settings the documents state (:func:`settings`, read from the constants that set them).

The one generated file is ``attnlab/core/numbers.json`` (package data: an installed course reads it through
:mod:`attnlab.core.measured`, and :mod:`attnlab.core.door` tells students its minutes and memory need).
From it this module writes:

* blocks between ``<!-- numbers:NAME -->`` + newline and ``<!-- /numbers -->`` (tables, paragraphs) and
  inline spans ``<!-- numbers:NAME -->text<!-- /numbers -->`` on one line (a time, a peak, a verdict) in
  :data:`DOCS` (READMEs, teacher's guides, install guides, classroom guides); an inline ``NAME`` is one of
  :data:`INLINE` or a dotted path into the numbers (``lessons.11.offline_peaks_peak_mb``: the unit follows
  the key's ending, ``_s`` or ``_mb``);
* the guides' lesson headings ``### NN · Title (X min; full run N s)``;
* every lesson header's spans ``lesson_time`` and ``lesson_memory`` (English notebook and its Chinese
  translation block; :func:`attnlab.tools.zh_edition.english_hash` leaves the spans' text out, so a new
  number does not make a translation stale), after which ``python scripts/zh_notebooks.py --build``
  rebuilds the Chinese notebooks.

:func:`problems` also lists a number written by hand outside the generated text that matches no generated
value (:func:`hand_written_drift`: a lesson's or the course's time, a kernel peak, a conclusion's verdict on
the offline default), every measured number (a quantity of time or memory) stated outside a span in the
READMEs, ``docs/``, the lessons' markdown and the scripts' strings, whether a typed copy of a generated value
or a number no source holds (:func:`copied_numbers`; what is not a measurement is :data:`NOT_A_MEASUREMENT`),
and a link to a heading that does not exist (:func:`broken_links`).
``tests/test_numbers.py`` (``expected_numbers_generated``) fails on any of these.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from attnlab.core.config import HUB_TIMEOUT_S
from attnlab.core.language import N_, _, speaking, translated
from attnlab.core.measured import NUMBERS_FILE, PEAK_TARGET_MB
from attnlab.core.targets import TARGETS
from attnlab.course.claims.conclusions import CONCLUSIONS as CONCLUSION_ROWS, LABEL_PATTERN
from attnlab.course.evidence import row_titles
from attnlab.course.reference import (
    CONCLUSIONS,
    DEFAULT_MODEL,
    conclusions_of,
    provenance,
    read_folder,
    reference_dir,
    reference_verdicts,
)
from attnlab.course.verdicts import WORDS, shown
from attnlab.tools.doc_facts import PREFIXES as FACT_PREFIXES, gather_facts, render_fact, value_at
from attnlab.tools.autograde import BUSY_WAIT_S, STALL_S
from attnlab.tools.install_torch import PROBE_SECONDS
from attnlab.tools.report import compare_table, read_report

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {  # key in numbers.json -> measured file (relative to the source tree)
    "offline_full": "benchmarks/measured/course_full_offline.json",
    "offline_smoke": "benchmarks/measured/course_smoke_offline.json",
    "minilm_full": "benchmarks/measured/course_full_minilm.json",
    "bert_base_shape_full": "benchmarks/measured/course_full_bert_base_shape.json",
    # every lesson's kernel peak after this round's memory changes (the README's peaks table)
    "offline_peaks": "benchmarks/measured/course_peaks_offline.json",
    "bert_base_shape_peaks": "benchmarks/measured/course_peaks_bert_base_shape.json",
    # the class server's setting (one thread, fp32): the CPU column of docs/classroom.md's sizing table
    "offline_full_1thread": "benchmarks/measured/course_full_offline_1thread.json",
}
REFERENCE = "attnlab/course/reference/smoke"
#: minutes and peak of ``attnlab report`` runs (the README's report times)
REPORT_RUNS = "benchmarks/measured/report_runs.json"
#: how long ``bash .ci/run`` took on a fresh clone (the READMEs' test time), written by ``--ci-log LOG``
CI_RUN = "benchmarks/measured/ci_run.json"
#: what one student costs the class server: an idle server's memory and the time to grade a submission
#: (``python benchmarks/bench_class_server.py --json FILE``)
CLASS_SERVER = "benchmarks/measured/class_server.json"
#: a class's autograding, one submission at a time and two at once (``python benchmarks/bench_grading.py --json
#: FILE``)
GRADING = "benchmarks/measured/grading.json"
#: the command that grades a class on every core (:mod:`attnlab.tools.autograde`)
GRADE_COMMAND = "attnlab class autograde lesson_NN"
#: runs of the side-by-side scripts in ``benchmarks/`` that the README quotes (the conversion, the word table's
#: three folders, the memory release, the head importance)
BENCHMARKS = "benchmarks/measured/benchmarks.json"
#: the full-size report whose parts' seconds the README quotes (``attnlab report`` on bert-base-chinese's shape)
PARTS_REPORT = ("bert_base_shape", "docs/reports/random-bert-base-chinese-shape")
#: the class server's sizing: machines (GB), what the system, the hub and its proxy keep (a margin, not a
#: measurement), and the class that the prose sizes for
MACHINES_GB = (16, 64, 256)
RESERVE_MB = 1024
CLASS_SIZE = 60
#: the full-size reports that the ``reports`` table sets side by side (``attnlab report --model M --out
#: docs/reports/NAME``)
REPORTS = ("multilingual-e5-small", "all-MiniLM-L6-v2")
DEFAULT_REPORT = "multilingual-e5-small"
#: the twin cell of a conclusion that is not about the model (conclusion 5)
NO_TWIN = N_("not about this model")
#: every document that quotes a number, by language (relative to the source tree)
DOCS = {"en": ["README.md", "docs/teaching.md", "docs/install.md", "docs/classroom.md"],
        "zh": ["README.zh-CN.md", "docs/teaching.zh-CN.md", "docs/install.zh-CN.md", "docs/classroom.zh-CN.md"]}
#: documents whose links to headings are checked (besides :data:`DOCS`)
LINKED = ["CHANGELOG.md"]

#: minutes of class time each lesson plans for (the lessons' own estimate, not a measurement)
CLASS_MINUTES = {"00": 10, "01": 25, "02": 25, "03": 25, "04": 30, "05": 35, "06": 35, "07": 35, "08": 50,
                 "09": 30, "10": 40, "11": 30, "12": 20, "13": 50}
#: lessons whose results lesson 12 reads (it re-runs the missing ones)
FEEDS_12 = ["05", "06", "07", "08", "09", "10", "11"]

BLOCK = re.compile(r"(<!-- numbers:(?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /numbers -->)", re.S)
INLINE = re.compile(r"(<!-- numbers:(?P<name>[a-z_0-9.\-]+) -->)(?P<body>[^\n]*?)(<!-- /numbers -->)")
HEADING = {"en": re.compile(r"^(### (?P<n>\d\d) · [^(\n]*?) \((?P<inside>\d+ min;[^)\n]*)\)", re.M),
           "zh": re.compile(r"^(### (?P<n>\d\d) · [^（\n]*?)（(?P<inside>\d+ 分钟；[^）\n]*)）", re.M)}


# ----------------------------------------------------------------------------- the generated file
def gather(root: Path = ROOT) -> dict:
    """attnlab/core/numbers.json's content, from the measured files, the reference results and the reports."""
    sources = {}
    for key, name in SOURCES.items():
        path = root / name
        if path.exists():
            run = json.loads(path.read_text(encoding="utf-8"))
            run["file"] = name
            sources[key] = run
    lessons = {}
    for n, minutes in CLASS_MINUTES.items():
        row: dict = {"class_minutes": minutes}
        for key, run in sources.items():
            measured = run["lessons"].get(n)
            if measured:
                row[f"{key}_s"] = _round_seconds(measured["seconds"])
                if "peak_mb" in measured:
                    row[f"{key}_peak_mb"] = int(round(measured["peak_mb"]))
        lessons[n] = row
    course: dict = {"class_minutes_total": sum(CLASS_MINUTES.values())}
    for key, run in sources.items():
        if set(run["lessons"]) != set(CLASS_MINUTES):
            continue  # a total only where every lesson was measured
        total = sum(_round_seconds(m["seconds"]) for m in run["lessons"].values())
        course[f"{key}_total_s"] = round(total, 1) if total != int(total) else int(total)
    full = sources.get("offline_full")
    if full:
        course["offline_full_earlier_totals_s"] = full.get("earlier_total_seconds", [])
        course["offline_full_feeds_12_s"] = sum(lessons[n]["offline_full_s"] for n in FEEDS_12)
        peak_lesson = max(full["lessons"], key=lambda n: full["lessons"][n]["peak_mb"])
        course["offline_full_highest_peak"] = {"lesson": peak_lesson,
                                               "peak_mb": full["lessons"][peak_lesson]["peak_mb"]}
    if "bert_base_shape_full" in sources:
        course["bert_base_shape_full_total_minutes"] = sources["bert_base_shape_full"].get("total_minutes")
    gathered = {"about": "Generated by python scripts/course_numbers.py; do not edit by hand. Every time, peak and "
                     "verdict quoted in the READMEs, the guides, the lessons' headers and the doors comes from here.",
            "sources": {key: {k: v for k, v in run.items() if k != "lessons"} for key, run in sources.items()},
            "lessons": lessons, "course": course, "door": door(lessons, course),
            "report_runs": json.loads((root / REPORT_RUNS).read_text(encoding="utf-8"))["runs"],
            "smoke_verdicts": smoke_verdicts(root), "conclusions": conclusions(root), "reports": reports(root),
            "ci": json.loads((root / CI_RUN).read_text(encoding="utf-8")),
            "class_server": class_server(root), "grading": grading(root), "targets": dict(TARGETS), "settings": settings(),
            "benchmarks": json.loads((root / BENCHMARKS).read_text(encoding="utf-8"))["runs"],
            "report_parts": report_parts(root), **gather_facts(root)}
    return {**gathered, "speed": speed(gathered)}


def speed(numbers: dict) -> dict:
    """Where students and teachers wait, each against its target (:data:`attnlab.core.targets.TARGETS`), read
    from what ``numbers`` already holds: the offline default's full report with its untrained twins (its own
    seconds, in minutes), each lesson at one thread (the class server's setting, full mode; only the lessons
    measured so), and the full course on two cores. CI's total is ``ci.total_s``."""
    report = numbers["reports"].get("multilingual-e5-small", {})
    one_thread = {n: row["offline_full_1thread_s"] for n, row in numbers["lessons"].items()
                  if "offline_full_1thread_s" in row}
    out: dict = {"one_thread_s": one_thread, "course_two_cores_s": numbers["course"].get("offline_full_total_s")}
    if report.get("seconds") is not None:
        out["report_with_twins_min"] = round(report["seconds"] / 60, 1)
    return out


def _seconds_setting(seconds: float) -> float | int:
    """A setting in seconds as the numbers keep it: whole seconds as an int."""
    return int(seconds) if float(seconds).is_integer() else seconds


def settings() -> dict:
    """The course's own settings that the documents state, read from the constants that set them: how long
    ``auto`` waits for the model hub, how long the set-up waits for PyTorch's CPU index, and how long a class's
    grader waits for another's lock on the gradebook, and how long it lets a grader do nothing."""
    return {"hub_timeout_s": _seconds_setting(HUB_TIMEOUT_S), "torch_probe_s": _seconds_setting(PROBE_SECONDS),
            "grading_lock_wait_s": _seconds_setting(BUSY_WAIT_S), "grading_stall_s": _seconds_setting(STALL_S)}


def report_parts(root: Path = ROOT) -> dict:
    """Seconds of each part of the full-size report :data:`PARTS_REPORT` names (``PART_s``, rounded), and
    ``rest_s``: every part but the four longest together. Empty where the report is missing."""
    key, folder = PARTS_REPORT
    path = root / folder / "report.json"
    if not path.is_file():
        return {}
    parts = json.loads(path.read_text(encoding="utf-8"))["data"]["settings"]["parts"]
    seconds = sorted(((p["seconds"], name) for name, p in parts.items()), reverse=True)
    found = {f"{name}_s": int(round(s)) for s, name in seconds}
    found["rest_s"] = int(round(sum(s for s, _name in seconds[4:])))
    return {key: found}


def class_server(root: Path = ROOT) -> dict:
    """The class server's measured costs (an idle student server's memory, grading time), with the sizing's
    fixed margins; empty measurements where :data:`CLASS_SERVER` is missing."""
    path = root / CLASS_SERVER
    measured = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return {"machines_gb": list(MACHINES_GB), "reserve_mb": RESERVE_MB, "class_size": CLASS_SIZE,
            "server_mb": measured.get("server_mb"), "grading": measured.get("grading"),
            "machine": measured.get("machine"), "date": measured.get("date"), "file": CLASS_SERVER}


def _machine_words(machine: dict, busy: bool) -> dict[str, str]:
    """How the grading benchmark's machine is described, in each language."""
    fast = [name for name, has in (("AMX", machine.get("amx")), ("AVX512-BF16", machine.get("avx512_bf16"))) if has]
    en = f"{machine['cores']}-core {machine['arch']} CPU ({machine['model']})"
    zh = f"{machine['cores']} 核 {machine['arch']} 处理器（{machine['model']}"
    en += f" with {' and '.join(fast)}" if fast else " without AMX or AVX512-BF16"
    zh += f"，支持 {'、'.join(fast)}）" if fast else "，不支持 AMX 和 AVX512-BF16）"
    return {"en": en + (", busy (shared with other work)" if busy else ", quiet"),
            "zh": zh + ("，繁忙（与别的任务共用）" if busy else "，空闲")}


def grading(root: Path = ROOT) -> dict:
    """A class's autograding as :data:`GRADING` measured it: per lesson the seconds a submission takes one at a
    time and two at once (the run's wall time over its submissions), the minutes for a class of
    :data:`CLASS_SIZE` each way, the longest graded cell against nbgrader's cell limit, and whether the
    machine was busy; empty where the file is missing."""
    path = root / GRADING
    if not path.exists():
        return {}
    measured = json.loads(path.read_text(encoding="utf-8"))
    lessons = {}
    for n, row in measured["lessons"].items():
        one, two = row["jobs_1"]["per_submission_s"], row["jobs_2"]["per_submission_s"]
        lessons[n] = {"mode": row["mode"], "one_at_a_time_s": one, "two_at_once_s": two,
                      "class_one_at_a_time_minutes": int(round(one * CLASS_SIZE / 60)),
                      "class_two_at_once_minutes": int(round(two * CLASS_SIZE / 60)),
                      "longest_cell_s": row.get("longest_cell_s"),
                      "busy": bool(row["jobs_1"]["busy"] or row["jobs_2"]["busy"])}
        if "reran_earlier_lessons" in row:
            lessons[n]["reran_earlier_lessons"] = row["reran_earlier_lessons"]
            lessons[n]["feeds_mode"] = row["mode"]
    busy = any(row["busy"] for row in lessons.values())
    timeout = _seconds_setting(measured["cell_timeout_s"])
    return {"file": GRADING, "date": measured["date"], "machine": _machine_words(measured["machine"], busy),
            "cores": measured["machine"]["cores"], "busy": busy, "class_size": CLASS_SIZE, "cell_timeout_s": timeout,
            "command": GRADE_COMMAND, "lessons": lessons,
            "within_cell_limit": all(r["longest_cell_s"] is not None and r["longest_cell_s"] < timeout
                                     for r in lessons.values())}


# ----------------------------------------------------------------------------- the test time
#: key -> (the line .ci/run prints, as a reader knows it; the pattern that reads it)
_CI_LINES = {"setup_s": ("CI set-up finished in N s", re.compile(r"^CI set-up finished in (\d+) s$", re.M)),
             "total_s": ("CI finished in N s", re.compile(r"^CI finished in (\d+) s$", re.M))}
_PYTEST_SUMMARY = re.compile(r"^=+ (?P<counts>[^=]*?) in (?P<seconds>[\d.]+)s(?: \([\d:]+\))? =+$", re.M)


def read_ci_log(text: str) -> dict:
    """The set-up, test and total seconds and the tests' counts of one ``bash .ci/run`` log.

    Raises:
        ValueError: the log is not of a finished run that passed (a line is missing, or a test failed).
    """
    found: dict = {}
    for key, (line, pattern) in _CI_LINES.items():
        m = pattern.search(text)
        if m is None:
            raise ValueError(f"the log has no line '{line}': not a finished CI run")
        found[key] = int(m.group(1))
    summaries = list(_PYTEST_SUMMARY.finditer(text))
    if not summaries:
        raise ValueError("the log has no pytest summary line ('== N passed ... in S s ==')")
    summary = summaries[-1]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary.group("counts"))}
    if counts.get("failed") or counts.get("error") or counts.get("errors"):
        raise ValueError(f"the run did not pass: {summary.group('counts')}")
    found.update(tests_s=_round_seconds(float(summary.group("seconds"))), passed=counts.get("passed", 0),
                 skipped=counts.get("skipped", 0))
    return found


def record_ci_run(log: Path, machine: str, root: Path = ROOT) -> dict:
    """Read ``log`` (:func:`read_ci_log`) and write it with ``machine`` and today's date to :data:`CI_RUN`."""
    run = {"what": "bash .ci/run on a fresh clone, set-up included, two test workers", "machine": machine,
           "date": datetime.date.today().isoformat(), **read_ci_log(log.read_text(encoding="utf-8"))}
    (root / CI_RUN).write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return run


def door(lessons: dict, course: dict) -> dict:
    """What :mod:`attnlab.core.door` tells students: the whole course's minutes on a 2-core CPU per model, and
    a lesson's memory need (the highest kernel peak on the offline default), with the kernels' target."""
    minutes = {"multilingual-e5-small": round(course["offline_full_total_s"] / 60),
               "bert-base-chinese": course.get("bert_base_shape_full_total_minutes")}
    peaks = [row["offline_peaks_peak_mb"] for row in lessons.values() if "offline_peaks_peak_mb" in row]
    bert = [row["bert_base_shape_peaks_peak_mb"] for row in lessons.values() if "bert_base_shape_peaks_peak_mb" in row]
    return {"course_minutes_on_cpu": {k: v for k, v in minutes.items() if v}, "lesson_needs_mb": max(peaks),
            "bert_base_shape_needs_mb": max(bert, default=None), "peak_target_mb": PEAK_TARGET_MB}


def conclusions(root: Path = ROOT) -> dict:
    """The offline default's answer to each conclusion, the one the documents state: label -> verdict,
    deciding number and its untrained twin's cell, with the run's settings.

    Read from the full reference that ships in the package (lesson 12's saved record of the offline default
    in full mode, :mod:`attnlab.course.reference`): the answer a student's own full run is compared with.
    This function is the one place the documents' conclusions are read."""
    record = read_folder(reference_dir("full", DEFAULT_MODEL)).get(CONCLUSIONS)
    if record is None:
        return {}
    data = record["data"]
    deciding = conclusions_of(record)
    claims, twin_name = {}, None
    for label, verdict in zip(data["labels"], data["verdicts"]):
        numbers = verdict.get("numbers") or {}
        parts = ("6a: ", "6b: ") if str(label) == "6" else ("",)
        cells = []
        for part in parts:
            word = numbers.get(f"{part}untrained twin's verdict")
            if word is None:  # no twin applies (conclusion 5)
                cells.append({"part": part, "note": NO_TWIN})
                continue
            twin_name = numbers.get(f"{part}untrained twin", twin_name)
            cells.append({"part": part, "verdict": word,
                          "number": numbers.get(f"{part}untrained twin's deciding number", "-")})
        measure = numbers.get("measure")
        number = deciding[str(label)][1]
        if measure and number.startswith("estimate "):
            number = f"{measure} {number.removeprefix('estimate ')}"
        claims[str(label)] = {"verdict": verdict["verdict"], "deciding": number, "twin": cells}
    facts = provenance("full", DEFAULT_MODEL)
    return {"model": record["model"], "precision": record["precision"], "smoke": record["smoke"],
            "source": "the full reference (attnlab/course/reference/full/)", "date": facts.get("date"),
            "twin": twin_name, "claims": claims}


def reports(root: Path = ROOT) -> dict:
    """model folder -> its full-size report's settings (model, precision, twin, seconds) and every claim's
    verdict, deciding number and untrained twin's cell, as the report wrote them (English)."""
    found = {}
    for name in REPORTS:
        folder = root / "docs" / "reports" / name
        if not (folder / "report.json").is_file():
            continue
        data = read_report(folder)
        settings = data["settings"]
        found[name] = {"model": settings["model"], "precision": settings.get("precision"),
                       "smoke": settings.get("smoke"), "seconds": round(float(settings.get("seconds", 0.0)), 1),
                       "twin": (settings.get("twin") or {}).get("name"),
                       "claims": {label: {"verdict": c["verdict"], "deciding": c.get("deciding", ""),
                                          "twin": c.get("twin", "")} for label, c in data["claims"].items()}}
    return found


def _round_seconds(seconds: float) -> float | int:
    if seconds >= 20 or float(seconds).is_integer():
        return int(round(seconds))
    return round(float(seconds), 1)


def smoke_verdicts(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """lesson -> claim -> verdict word, from the reference results of a smoke run (empty when absent)."""
    found: dict[str, dict[str, str]] = {}
    if (root / REFERENCE).is_dir():
        for (name, claim), word in sorted(reference_verdicts("smoke").items()):
            found.setdefault(name[:2], {})[claim] = word
    return found


# ----------------------------------------------------------------------------- rendering
def _s(value, lang: str) -> str:
    if value is None:
        return "-"
    text = f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"
    if isinstance(value, float) and round(value, 1) != value:  # a measurement to the hundredth (1.05 s)
        text = f"{value:,.2f}"
    return text


def seconds_text(value, lang: str) -> str:
    if value is None:
        return "not measured" if lang == "en" else "未测"
    return f"{_s(value, lang)} s" if lang == "en" else f"{_s(value, lang)} 秒"


def heading_inside(numbers: dict, n: str, lang: str) -> str:
    """The parenthesis of a guide's lesson heading."""
    row = numbers["lessons"][n]
    full = row.get("offline_full_s")
    if lang == "en":
        text = f"{row['class_minutes']} min; full run {seconds_text(full, lang)}"
        if n == "12":
            feeds = numbers["course"]["offline_full_feeds_12_s"]
            text += (f" when 05-11 saved their results, about {round(feeds / 60)} minutes when it must re-run them")
        return text
    text = f"{row['class_minutes']} 分钟；完整运行 {seconds_text(full, lang)}"
    if n == "12":
        feeds = numbers["course"]["offline_full_feeds_12_s"]
        text += f"，前提是 05 到 11 课的结果都已保存；需要重跑它们时约 {round(feeds / 60)} 分钟"
    return text


def _load(numbers: dict, key: str, lang: str) -> str:
    """``quiet`` or ``busy``: how loaded the machine of a source was (its record says)."""
    quiet = "quiet" in numbers["sources"].get(key, {}).get("machine", "")
    if lang == "en":
        return "quiet machine" if quiet else "busy machine"
    return "空闲机器" if quiet else "繁忙机器"


def estimate_text(numbers: dict, n: str, lang: str) -> str:
    """A lesson header's estimated time, after its label."""
    row = numbers["lessons"][n]
    full, smoke = row.get("offline_full_s"), row.get("offline_smoke_s")
    if lang == "en":
        text = (f"{row['class_minutes']} minutes in class; computing on a 2-core CPU with the offline default: "
                f"full run {seconds_text(full, lang)} ({_load(numbers, 'offline_full', lang)}), "
                f"smoke mode {seconds_text(smoke, lang)} ({_load(numbers, 'offline_smoke', lang)})")
        if n == "12":
            text += "; plus the time to re-run any lesson whose results are missing"
        return text
    text = (f"课堂 {row['class_minutes']} 分钟；双核 CPU、离线默认模型上的计算：完整运行 {seconds_text(full, lang)}"
            f"（{_load(numbers, 'offline_full', lang)}），smoke 模式 {seconds_text(smoke, lang)}"
            f"（{_load(numbers, 'offline_smoke', lang)}）")
    if n == "12":
        text += "；另加重跑缺少结果的各课的时间"
    return text


def render_block(name: str, numbers: dict, lang: str) -> str:
    """The text of the block ``name`` (ends with a newline)."""
    return {"times": _times_table, "sources": _sources_list, "smoke_verdicts": _smoke_table,
            "measured": _measured, "smoke_total": _smoke_total, "peaks": _peaks_table,
            "reports": _reports_table, "conclusions": _conclusions_table, "sizing": _sizing_table,
            "sizing_prose": _sizing_prose, "grading": _grading_block}[name](numbers, lang)


# ----------------------------------------------------------------------------- the class server's sizing
NOT_MEASURED = {"en": "not yet measured", "zh": "尚未测量"}


def students_at_once(numbers: dict, machine_gb: int, peak_mb: float) -> int | None:
    """Students one machine serves at once when each kernel peaks at ``peak_mb`` beside its measured
    server: (machine - reserve) / (peak + server), rounded down; None while the server is not measured."""
    server = numbers["class_server"]
    if server["server_mb"] is None:
        return None
    return int((machine_gb * 1024 - server["reserve_mb"]) // (peak_mb + server["server_mb"]))


def grading_seconds(numbers: dict, lesson: str) -> tuple[float, float | None, str] | None:
    """Measured seconds to grade one submission of ``lesson``: ``(one at a time, two at once, mode)`` from
    :data:`GRADING` where it measured the lesson, else ``(seconds, None, mode)`` from the class server's
    benchmark (one submission, one thread), else None."""
    row = (numbers.get("grading") or {}).get("lessons", {}).get(lesson)
    if row:
        return row["one_at_a_time_s"], row["two_at_once_s"], row["mode"]
    grading = numbers["class_server"].get("grading") or {}
    return (grading["seconds"], None, grading["mode"]) if grading.get("lesson") == lesson else None


def _mode_words(mode: str, lang: str) -> str:
    if lang == "en":
        return f" ({mode})"
    return "（smoke 模式）" if mode == "smoke" else "（完整模式）"


def _class_grading(graded: tuple[float, float | None, str], size: int, lang: str) -> str:
    """The sizing table's cell: ``size`` submissions one at a time, and two at once where measured."""
    one, two, mode = graded
    text = _minutes(one * size, lang)
    if two is not None:
        text += (f" one at a time, {_minutes(two * size, lang)} two at once" if lang == "en"
                 else f"（逐份）、{_minutes(two * size, lang)}（两份同时）")
    return text + _mode_words(mode, lang)


def _minutes(seconds: float, lang: str) -> str:
    return f"{seconds / 60:,.0f} min" if lang == "en" else f"{seconds / 60:,.0f} 分钟"


def _sizing_table(numbers: dict, lang: str) -> str:
    """Per lesson: kernel peaks, students one machine serves at once, one-thread seconds, grading time."""
    server = numbers["class_server"]
    gbs, size = server["machines_gb"], server["class_size"]
    unknown = NOT_MEASURED[lang]
    if lang == "en":
        head = (["lesson", "kernel peak, MB (offline default / bert-base-chinese's shape)"]
                + [f"students at once on {gb} GB" for gb in gbs]
                + ["one thread, smoke (s)", "one thread, full (s)", "grading one submission (s)",
                   f"grading {size} submissions"])
    else:
        head = (["课", "内核内存峰值，MB（离线默认模型 / bert-base-chinese 形状）"]
                + [f"{gb} GB 机器同时容纳的学生数" for gb in gbs]
                + ["单线程，smoke 模式（秒）", "单线程，完整运行（秒）", "评一份提交（秒）", f"评 {size} 份提交"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n, row in numbers["lessons"].items():
        peaks = [row.get("offline_peaks_peak_mb"), row.get("bert_base_shape_peaks_peak_mb")]
        fits = []
        for gb in gbs:
            counts = [students_at_once(numbers, gb, p) if p else None for p in peaks]
            fits.append(" / ".join(unknown if c is None else str(c) for c in counts))
        graded = grading_seconds(numbers, n)
        smoke = row.get("offline_smoke_s")
        cells = ([n, " / ".join(_s(p, lang) for p in peaks)] + fits
                 + [_s(smoke, lang) if smoke is not None else unknown,
                    _s(row["offline_full_1thread_s"], lang) if "offline_full_1thread_s" in row else unknown,
                    (_s(graded[0], lang) + _mode_words(graded[2], lang)) if graded is not None else unknown,
                    _class_grading(graded, size, lang) if graded is not None else unknown])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _sizing_prose(numbers: dict, lang: str) -> str:
    """What the sizing table means for a class, from the same numbers as the table."""
    server = numbers["class_server"]
    size, reserve = server["class_size"], server["reserve_mb"]
    smoke_src = numbers["sources"].get("offline_smoke", {})
    if server["server_mb"] is None:
        return ("Each student's server is not yet measured, so the table cannot count students yet.\n" if lang == "en"
                else "每个学生的服务器尚未测量，所以表格还算不出学生数。\n")
    fitting = {gb: [n for n, row in numbers["lessons"].items()
                    if (students_at_once(numbers, gb, row["offline_peaks_peak_mb"]) or 0) >= size]
               for gb in server["machines_gb"]}
    lessons = list(numbers["lessons"])
    graded = server.get("grading") or {}
    one_thread = [n for n, row in numbers["lessons"].items() if "offline_full_1thread_s" in row]
    full_src = numbers["sources"].get("offline_full_1thread", {})
    target_min = numbers["targets"]["lesson_one_core_minutes"]
    over = [n for n in one_thread if numbers["lessons"][n]["offline_full_1thread_s"] > target_min * 60]

    def which(found: list[str]) -> str:
        if found == lessons:
            return "every lesson" if lang == "en" else "每一课"
        if not found:
            return "no lesson" if lang == "en" else "没有一课"
        if lang == "en":
            return "lessons " + listed(found, lang)
        return "第 " + ("、".join(found[:-1]) + " 和 " + found[-1] if len(found) > 1 else found[0]) + " 课"

    if lang == "en":
        text = (f"Each student's Jupyter server measured {server['server_mb']:,.0f} MB idle on a {server['machine']} "
                f"on {server['date']} (`{server['file']}`), and the machine keeps {reserve / 1024:g} GB for the system, "
                f"the hub and the proxy (a margin, not a measurement). Students at once = (machine − "
                f"{reserve / 1024:g} GB) / (kernel peak + {server['server_mb']:,.0f} MB): the whole class on the same "
                f"lesson at the same moment, the worst case of a live session. With the offline default, a class of "
                f"{size} fits at once on a 64 GB machine in {which(fitting[64])}, and on a 256 GB machine in "
                f"{which(fitting[256])}; for the rest, two sessions, or the lesson as homework spread over a week.\n\n"
                f"The CPU decides the waiting, not the fitting: the hub gives each kernel one thread (fp32 under the "
                f"class setting). The smoke column ran at one thread on a {smoke_src.get('machine', '')} on "
                f"{smoke_src.get('date', '')}; ")
        if one_thread:
            text += (f"the full column ran {which(one_thread)} at one thread in fp32 on a {full_src.get('machine', '')} "
                     f"on {full_src.get('date', '')}" + (", and " if one_thread != lessons else ". "))
        if one_thread != lessons:
            text += (f"full runs at one thread of {'the other lessons' if one_thread else 'every lesson'} are "
                     f"{NOT_MEASURED[lang]} (the full-run times in teaching.md ran on two threads). ")
        text += f"The target is every lesson within {target_min} minutes at one thread"
        late = (f"lesson {over[0]} takes" if len(over) == 1 else f"lessons {listed(over, lang)} take") if over else ""
        text += (f": {late} longer." if over else (": every lesson measured keeps it." if one_thread else "."))
        if numbers.get("grading"):
            text += (f" The grading columns come from `{numbers['grading']['file']}` (see [Grading a class on "
                     "every core](#grading-a-class-on-every-core)); the other lessons' grading is "
                     f"{NOT_MEASURED[lang]}, and takes at least each lesson's run per submission.")
        elif graded:
            text += (f" Grading re-runs every submission, one after another: lesson {graded['lesson']} in "
                     f"{graded['mode']} mode took {graded['seconds']:,.1f} s a submission at one thread, so "
                     f"{_minutes(graded['seconds'] * size, lang)} for {size}; full-mode grading is "
                     f"{NOT_MEASURED[lang]}, and takes at least each lesson's one-thread run per submission.")
        return text + "\n"
    text = (f"每个学生的 Jupyter 服务器空闲时实测占 {server['server_mb']:,.0f} MB，测于 {server['date']}，机器为 "
            f"{described(server['machine'], lang)}（`{server['file']}`）；机器还要为系统、Hub 和代理留出 {reserve / 1024:g} GB（这是余量，"
            f"不是测量值）。同时容纳的学生数 =（机器内存 − {reserve / 1024:g} GB）/（内核内存峰值 + "
            f"{server['server_mb']:,.0f} MB），即全班同一时刻上同一课，这是现场上课最坏的情况。用离线默认模型时，"
            f"{size} 人的班级在 64 GB 的机器上能同时上{which(fitting[64])}，在 256 GB 的机器上能同时上"
            f"{which(fitting[256])}；其余的课可以分两场上，或者作为作业分散在一周里完成。\n\n"
            f"决定等待时间的是 CPU，而不是内存：Hub 给每个内核一个线程（班级设置下为 fp32）。smoke 一栏是 {smoke_src.get('date', '')} "
            f"在单线程下测的，机器为 {described(smoke_src.get('machine', ''), lang)}；")
    if one_thread:
        text += (f"完整运行一栏中，{which(one_thread)}是 {full_src.get('date', '')} 在单线程、fp32 下测的，机器为 "
                 f"{described(full_src.get('machine', ''), lang)}" + ("；" if one_thread != lessons else "。"))
    if one_thread != lessons:
        text += (f"{'其余各课' if one_thread else '各课'}单线程的完整运行{NOT_MEASURED[lang]}"
                 "（teaching.zh-CN.md 里的完整运行用时是双线程测的）。")
    text += f"目标是单线程下每课不超过 {target_min} 分钟"
    text += (f"，{which(over)}超出了这一目标。" if over else ("，测过的各课都在目标之内。" if one_thread else "。"))
    if numbers.get("grading"):
        text += (f"评分两栏来自 `{numbers['grading']['file']}`（见[用所有核给全班评分](#用所有核给全班评分)）；其余各课的评分"
                 f"{NOT_MEASURED[lang]}，每份提交至少要花这一课运行一遍的时间。")
    elif graded:
        text += (f"评分要把每份提交依次重新运行一遍：第 {graded['lesson']} 课在 smoke 模式、单线程下评一份提交用了 "
                 f"{graded['seconds']:,.1f} 秒，{size} 份共约 {_minutes(graded['seconds'] * size, lang)}；完整模式的评分"
                 f"{NOT_MEASURED[lang]}，每份提交至少要花这一课单线程运行一遍的时间。")
    return text + "\n"


def _grading_block(numbers: dict, lang: str) -> str:
    """The measured grading of a class: per lesson one submission one at a time and two at once, a class of
    sixty each way, the longest graded cell, and lesson 12 against nbgrader's cell limit."""
    g = numbers.get("grading") or {}
    if not g:
        return ("Grading a class is not yet measured.\n" if lang == "en" else "全班评分的用时尚未测量。\n")
    size, limit = g["class_size"], g["cell_timeout_s"]
    if lang == "en":
        head = ["lesson", "mode", "one submission, one at a time (s)", "one submission, two at once (s)",
                f"{size} submissions, one at a time", f"{size} submissions, two at once", "longest cell (s)"]
    else:
        head = ["课", "模式", "一份提交，逐份评（秒）", "一份提交，两份同时评（秒）", f"{size} 份，逐份评",
                f"{size} 份，两份同时评", "最长的单元格（秒）"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n, row in g["lessons"].items():
        mode = row["mode"] if lang == "en" else ("smoke 模式" if row["mode"] == "smoke" else "完整模式")
        lines.append("| " + " | ".join([n, mode, _s(row["one_at_a_time_s"], lang), _s(row["two_at_once_s"], lang),
                                        _minutes(row["one_at_a_time_s"] * size, lang),
                                        _minutes(row["two_at_once_s"] * size, lang),
                                        _s(row["longest_cell_s"], lang)]) + " |")
    twelve = g["lessons"].get("12")
    if lang == "en":
        text = (f"\nMeasured by `python benchmarks/bench_grading.py` on a {g['machine']['en']} on {g['date']} "
                f"(`{g['file']}`): the same unanswered submissions graded by `{g['command']} --force`, with `--jobs 1` "
                "and then `--jobs 2` (each kernel gets the cores over the jobs in threads, the offline default in fp32); "
                "a submission's time is the run's wall time over its submissions, and a class is "
                f"{size} times that.")
        if g["busy"]:
            text += (" The machine was busy with other work, and two graders at once also take a larger share of it "
                     "from that work than one does, so the gain from one to two may be larger here than on a quiet "
                     "machine.")
        if twelve:
            reran = "re-ran one of them" if twelve.get("reran_earlier_lessons") else "re-ran none of them"
            within = "within" if twelve["longest_cell_s"] is not None and twelve["longest_cell_s"] < limit else "over"
            text += (f" Lesson 12 was graded after the same students' lessons 05-11 ({twelve['mode']} mode), read "
                     f"their records and {reran}: its longest cell took {seconds_text(twelve['longest_cell_s'], lang)}, "
                     f"{within} nbgrader's cell limit of {seconds_text(limit, lang)} (`Execute.timeout` in "
                     "`classroom/nbgrader_config.py`).")
        return "\n".join(lines) + "\n" + text + "\n"
    text = (f"\n由 `python benchmarks/bench_grading.py` 于 {g['date']} 测得，机器为 {g['machine']['zh']}"
            f"（`{g['file']}`）：同一批未作答的提交，用 `{g['command']} --force` 先以 `--jobs 1`、再以 `--jobs 2` 评分"
            "（每个内核的线程数为核数除以同时评的份数，离线默认模型，fp32）；一份提交的用时是整次运行的墙钟时间除以提交份数，"
            f"全班的用时是它的 {size} 倍。")
    if g["busy"]:
        text += "测量时机器正忙于别的任务，而同时运行两个评分进程会比一个从别的任务那里多分到一些 CPU，所以这里从一份到两份的提速可能比空闲的机器上更大。"
    if twelve:
        reran = "重跑了其中一课" if twelve.get("reran_earlier_lessons") else "没有重跑其中任何一课"
        within = "没有超过" if twelve["longest_cell_s"] is not None and twelve["longest_cell_s"] < limit else "超过了"
        text += (f"第 12 课是在同一批学生的第 05-11 课评完之后评的（{mode_zh(twelve['mode'])}），读取了它们的记录，"
                 f"{reran}：最长的单元格用了 {seconds_text(twelve['longest_cell_s'], lang)}，{within} nbgrader 的单元格时限 "
                 f"{seconds_text(limit, lang)}（`classroom/nbgrader_config.py` 里的 `Execute.timeout`）。")
    return "\n".join(lines) + "\n" + text + "\n"


def mode_zh(mode: str) -> str:
    """A run mode in Chinese."""
    return "smoke 模式" if mode == "smoke" else "完整模式"


def _in_language(lang: str, make):
    """``make()`` with the course's language set to ``lang`` (restored afterwards)."""
    with speaking(lang):
        return make()


def _reports_table(numbers: dict, lang: str) -> str:
    """The full-size reports of the offline models side by side, each with its untrained twin's column
    (``attnlab report --compare`` on :data:`REPORTS`)."""
    folders = [ROOT / "docs" / "reports" / name for name in numbers.get("reports", {})]
    return _in_language(lang, lambda: compare_table(folders)) if folders else ""


def _conclusions_table(numbers: dict, lang: str) -> str:
    """The offline default's verdict on each conclusion and its untrained twin's, from the full reference."""
    claims = numbers.get("conclusions", {}).get("claims", {})
    if not claims:
        return ""

    def table() -> str:
        head = ("| conclusion | verdict on the offline default | its untrained twin |\n|---|---|---|\n" if lang == "en"
                else "| 结论 | 离线默认模型上的判断 | 它的未训练对照模型 |\n|---|---|---|\n")
        rows = [f"| {title} | **{shown(c['verdict'])}** | {_twin_cell(c['twin'])} |"
                for title, c in zip(row_titles(list(claims)), claims.values())]
        return head + "\n".join(rows) + "\n"

    return _in_language(lang, table)


def _twin_cell(parts: list[dict]) -> str:
    """The untrained twin's verdict and deciding number (each half of conclusion 6 apart), in the course's language."""
    return "; ".join(part["part"] + (_(part["note"]) if "note" in part else f"{shown(part['verdict'])} {part['number']}")
                     for part in parts)


def _peaks_table(numbers: dict, lang: str) -> str:
    """Every lesson's kernel peak (and seconds) on the offline default and on bert-base-chinese's shape."""
    keys = ("offline_peaks", "bert_base_shape_peaks")
    if lang == "en":
        lines = ["| lesson | offline default: peak (MB) | seconds | bert-base-chinese shape: peak (MB) | seconds |"]
    else:
        lines = ["| 课 | 离线默认模型：内存峰值（MB） | 秒 | bert-base-chinese 形状：内存峰值（MB） | 秒 |"]
    lines.append("|---|---|---|---|---|")
    highest = {key: 0 for key in keys}
    for n, row in numbers["lessons"].items():
        cells = [n]
        for key in keys:
            peak = row.get(f"{key}_peak_mb")
            highest[key] = max(highest[key], peak or 0)
            cells += [_s(peak, lang), _s(row.get(f"{key}_s"), lang)]
        lines.append("| " + " | ".join(cells) + " |")
    sources, course = numbers["sources"], numbers["course"]
    if lang == "en":
        notes = [f"{'offline default' if key == 'offline_peaks' else 'bert-base-chinese shape'}: highest "
                 f"{highest[key]:,} MB ({'under' if highest[key] < PEAK_TARGET_MB else 'over'} the "
                 f"{PEAK_TARGET_MB:,} MB target), {sources[key]['machine']}, {sources[key]['date']}, "
                 f"{course[f'{key}_total_s'] / 60:.0f} minutes in all"
                 for key in keys if key in sources]
        return ("\n".join(lines) + "\n\n" + "; ".join(notes) + ". This table measures memory; its seconds are "
                "those of these runs. The times to plan with are the full runs' in the [teacher's guide]"
                "(docs/teaching.md#times-and-where-they-come-from).\n")
    notes = [f"{'离线默认模型' if key == 'offline_peaks' else 'bert-base-chinese 形状'}：最高 {highest[key]:,} MB"
             f"（{'低于' if highest[key] < PEAK_TARGET_MB else '高于'} {PEAK_TARGET_MB:,} MB 的目标），"
             f"{described(sources[key]['machine'], lang)}，{sources[key]['date']}，"
             f"共 {course[f'{key}_total_s'] / 60:.0f} 分钟" for key in keys if key in sources]
    return ("\n".join(lines) + "\n\n" + "；".join(notes) + "。这张表测的是内存；其中的秒数是这两次运行各自的用时。"
            "安排课时请用[教师手册](docs/teaching.zh-CN.md#用时及其出处)里完整运行的用时。\n")


def _times_table(numbers: dict, lang: str) -> str:
    head = ("| lesson | class | offline default, full (s) | its peak (MB) | offline default, smoke (s) | "
            "MiniLM, full (s) | bert-base-chinese shape, full (s) |" if lang == "en" else
            "| 课 | 课堂 | 离线默认模型，完整运行（秒） | 内存峰值（MB） | 离线默认模型，smoke 模式（秒） | "
            "MiniLM，完整运行（秒） | bert-base-chinese 形状，完整运行（秒） |")
    lines = [head, "|---|---|---|---|---|---|---|"]
    minutes = "min" if lang == "en" else "分钟"
    for n, row in numbers["lessons"].items():
        cells = [n, f"{row['class_minutes']} {minutes}"] + [
            _s(row.get(key), lang) for key in ("offline_full_s", "offline_full_peak_mb", "offline_smoke_s",
                                               "minilm_full_s", "bert_base_shape_full_s")]
        lines.append("| " + " | ".join(cells) + " |")
    course = numbers["course"]
    total = "all 14" if lang == "en" else "14 课合计"
    lines.append("| " + " | ".join([total, f"{sum(r['class_minutes'] for r in numbers['lessons'].values())} {minutes}",
                                    _s(course.get("offline_full_total_s"), lang), "-",
                                    _s(course.get("offline_smoke_total_s"), lang), "-",
                                    (f"about {course.get('bert_base_shape_full_total_minutes')} min" if lang == "en"
                                     else f"约 {course.get('bert_base_shape_full_total_minutes')} 分钟")]) + " |")
    return "\n".join(lines) + "\n"


#: how the Chinese documents say a source's model and machine (numbers.json records them in English),
#: applied in order; a description with a part not listed here stays English and the edition's test fails
ZH_DESCRIPTIONS = (
    (r"^(\d+)-core (\S+(?: \S+)?) CPU with ([^\s,]+)", r"\1 核 \2 处理器（支持 \3）"),
    (r"^(\d+)-core CPU", r"\1 核处理器"),
    (r", quiet: nothing else running", "，空闲：没有别的任务在运行"),
    (r", quiet", "，空闲"),
    (r", busy \(shared with other work\)", "，繁忙（与别的任务共用）"),
    (r", busy: another full run beside it \(lessons (\d\d)-(\d\d): (\d+) threads each; (\d\d)-(\d\d): (\d+) thread each, "
     r"(OMP_NUM_THREADS=\d+)\)", r"，繁忙：旁边还有一次完整运行（第 \1 到 \2 课各 \3 个线程；第 \4 到 \5 课各 \6 个线程，\7）"),
    (r", (\d+) threads", r"，\1 个线程"),
    (r", (OMP_NUM_THREADS=\d+)", r"，\1"),
    (r" \(the offline default\)", "（离线默认模型）"),
    (r" \(bundled\)", "（随包模型）"),
    (r"^a random model with bert-base-chinese's shape \((.+)\)$", r"与 bert-base-chinese 形状相同的随机模型（`\1`）"),
)


def described(text: str, lang: str) -> str:
    """A source's model or machine description in ``lang`` (English as recorded; Chinese through
    :data:`ZH_DESCRIPTIONS`)."""
    if lang == "en":
        return text
    for pattern, chinese in ZH_DESCRIPTIONS:
        text = re.sub(pattern, chinese, text)
    return text


def _sources_list(numbers: dict, lang: str) -> str:
    names = {"offline_full": ("offline default, full", "离线默认模型，完整运行"),
             "offline_smoke": ("offline default, smoke", "离线默认模型，smoke 模式"),
             "minilm_full": ("MiniLM, full", "MiniLM，完整运行"),
             "bert_base_shape_full": ("bert-base-chinese shape, full", "bert-base-chinese 形状，完整运行"),
             "offline_peaks": ("offline default, kernel peaks (README)", "离线默认模型，内核内存峰值（README）"),
             "bert_base_shape_peaks": ("bert-base-chinese shape, kernel peaks (README)",
                                       "bert-base-chinese 形状，内核内存峰值（README）"),
             "offline_full_1thread": ("offline default, full, one thread and fp32 (the class server's setting)",
                                      "离线默认模型，完整运行，单线程、fp32（班级服务器的设置）")}
    lines = []
    for key, src in numbers["sources"].items():
        label = names[key][0 if lang == "en" else 1]
        if lang == "en":
            lines.append(f"- **{label}**: {src['model']}, {src['machine']}, {src['date']} (`{src['file']}`).")
        else:
            lines.append(f"- **{label}**：{described(src['model'], lang)}，{described(src['machine'], lang)}，"
                         f"{src['date']}（`{src['file']}`）。")
    return "\n".join(lines) + "\n"


def _smoke_table(numbers: dict, lang: str) -> str:
    head = "| lesson | claim | smoke verdict |" if lang == "en" else "| 课 | 论断 | smoke 模式的判断 |"
    lines = [head, "|---|---|---|"]
    with speaking(lang):
        for n, claims in numbers["smoke_verdicts"].items():
            for claim, word in claims.items():
                lines.append(f"| {n} | {translated(claim)} | {shown(word)} |")
    return "\n".join(lines) + "\n"


def _measured(numbers: dict, lang: str) -> str:
    row = numbers["lessons"]
    course = numbers["course"]
    total = course["offline_full_total_s"]
    peak = course["offline_full_highest_peak"]
    longest = sorted(row, key=lambda n: -row[n]["offline_full_s"])[:4]
    earlier = course.get("offline_full_earlier_totals_s", [])
    if lang == "en":
        long_text = ", ".join(f"lesson {n} ({seconds_text(row[n]['offline_full_s'], lang)})" for n in longest)
        return (f"All 14 lessons took **{seconds_text(total, lang)} ({total / 60:.1f} minutes)** in full mode on a "
                f"quiet machine (`python benchmarks/bench_course.py`); the highest kernel peak was "
                f"{peak['peak_mb']:,} MB (lesson {peak['lesson']}), so the course fits Binder's 2 GB. The long ones "
                f"are {long_text}. Full runs of earlier versions on 2-core machines took "
                + listed([seconds_text(t, lang) for t in earlier], lang) + ". In smoke mode all 14 took "
                f"{seconds_text(course.get('offline_smoke_total_s'), lang)} on a busy 2-core machine. "
                "Every lesson's time, per model, is in the\n"
                "[teacher's guide](docs/teaching.md#times-and-where-they-come-from) (all from "
                "`attnlab/core/numbers.json`).\n")
    long_text = "、".join(f"第 {n} 课（{seconds_text(row[n]['offline_full_s'], lang)}）" for n in longest)
    return (f"在空闲机器上，完整模式下 14 课一共用了 **{seconds_text(total, lang)}（{total / 60:.1f} 分钟）**"
            f"（`python benchmarks/bench_course.py`）；内核内存峰值最高 {peak['peak_mb']:,} MB（第 {peak['lesson']} 课），"
            f"可以在 Binder 的 2 GB 内存里运行。耗时长的是{long_text}。在双核机器上，较早版本的各次完整运行分别用时 "
            + listed([seconds_text(t, lang) for t in earlier], lang)
            + f"。smoke 模式下 14 课在一台繁忙的双核机器上共用 {seconds_text(course.get('offline_smoke_total_s'), lang)}。"
            "每一课在各个模型上的用时见[教师手册](docs/teaching.zh-CN.md#用时及其出处)（都取自 `attnlab/core/numbers.json`）。\n")


def listed(items: list[str], lang: str) -> str:
    """``a, b and c`` (``a、b 和 c`` in Chinese)."""
    if len(items) < 2:
        return "".join(items)
    comma, conjunction = (", ", " and ") if lang == "en" else ("、", "和 ")
    return comma.join(items[:-1]) + conjunction + items[-1]


def _smoke_total(numbers: dict, lang: str) -> str:
    total = numbers["course"].get("offline_smoke_total_s")
    if lang == "en":
        return (f"The smoke pass of all 14 lessons took {seconds_text(total, lang)} on a busy 2-core CPU with the "
                "offline default (a quiet machine is faster; see [the times](#times-and-where-they-come-from)).\n")
    return (f"在一台繁忙的双核 CPU 上，用离线默认模型以 smoke 模式跑完 14 课用了 {seconds_text(total, lang)}"
            "（空闲机器更快；见[用时及其出处](#用时及其出处)）。\n")


# ----------------------------------------------------------------------------- inline spans
def _about_minutes(minutes: int | None, lang: str) -> str:
    return f"about {minutes} minutes" if lang == "en" else f"约 {minutes} 分钟"


def _class_total(numbers: dict, lang: str, lesson: str | None) -> str:
    total = numbers["course"]["class_minutes_total"]
    if lang == "en":
        return f"{total} minutes (about {total / 60:.1f} hours)"
    return f"{total} 分钟（约 {total / 60:.1f} 小时）"


def _lesson_memory(numbers: dict, lang: str, lesson: str | None) -> str:
    row = numbers["lessons"][lesson]
    peak, bert = row["offline_peaks_peak_mb"], row.get("bert_base_shape_peaks_peak_mb")
    if lang == "en":
        return f"{peak:,} MB" + (f" ({bert:,} MB on bert-base-chinese)" if bert else "")
    return f"{peak:,} MB" + (f"（用 bert-base-chinese 时 {bert:,} MB）" if bert else "")


def _verdict(numbers: dict, label: str, lang: str) -> str:
    """The offline default's verdict on conclusion ``label``, as prose writes it (lower case in English)."""
    word = numbers["conclusions"]["claims"][label]["verdict"]
    text = _in_language(lang, lambda: shown(word))
    return text.lower() if lang == "en" else text


#: inline span name -> its text (numbers, language, the lesson of a header or None)
INLINE_TEXT: dict[str, Callable[[dict, str, str | None], str]] = {
    "course_minutes": lambda numbers, lang, lesson: _about_minutes(
        numbers["door"]["course_minutes_on_cpu"]["multilingual-e5-small"], lang),
    "bert_minutes": lambda numbers, lang, lesson: _about_minutes(
        numbers["door"]["course_minutes_on_cpu"]["bert-base-chinese"], lang),
    "class_total": _class_total,
    "peak_target": lambda numbers, lang, lesson: f"{numbers['door']['peak_target_mb']:,} MB",
    "lesson_time": lambda numbers, lang, lesson: estimate_text(numbers, lesson, lang),
    "lesson_memory": _lesson_memory,
}


def render_inline(name: str, numbers: dict, lang: str, lesson: str | None = None) -> str:
    """The text of the inline span ``name``: one of :data:`INLINE_TEXT`, ``verdict.LABEL`` (the offline
    default's verdict on a conclusion) or a dotted path into the numbers (``lessons.11.offline_peaks_peak_mb``;
    the key's ending gives the unit: ``_s`` seconds, ``_minutes`` minutes, ``_mb`` MB)."""
    if name in INLINE_TEXT:
        return INLINE_TEXT[name](numbers, lang, lesson)
    if name.startswith("verdict."):
        return _verdict(numbers, name.split(".", 1)[1], lang)
    if name.startswith(FACT_PREFIXES):  # numbers.json's facts with their own format (attnlab.tools.doc_facts)
        return render_fact(name, numbers, lang)
    value = value_at(numbers, name)
    if isinstance(value, str):  # words recorded with the numbers (the machine a time was measured on)
        return value
    if name.endswith(("_s", ".seconds")):
        return seconds_text(value, lang)
    if name.endswith("_minutes"):
        return f"{_s(value, lang)} minutes" if lang == "en" else f"{_s(value, lang)} 分钟"
    if name.endswith("_mb"):
        return f"{_s(value, lang)} MB"
    return _s(value, lang)


# ----------------------------------------------------------------------------- applying to files
def render_markdown(text: str, numbers: dict, lang: str, lesson: str | None = None) -> str:
    """``text`` with every numbers block and inline span and (in a guide) every lesson heading rewritten."""
    text = BLOCK.sub(lambda m: m.group(1) + render_block(m.group("name"), numbers, lang) + m.group(4), text)
    text = INLINE.sub(lambda m: m.group(1) + render_inline(m.group("name"), numbers, lang, lesson) + m.group(4),
                      text)
    pattern = HEADING[lang]
    open_, close = (" (", ")") if lang == "en" else ("（", "）")
    return pattern.sub(lambda m: m.group(1) + open_ + heading_inside(numbers, m.group("n"), lang) + close, text)


def header_cell(nb: dict) -> dict:
    """A lesson's header: its first markdown cell."""
    return next(cell for cell in nb["cells"] if cell["cell_type"] == "markdown")


def numbered_cells(nb: dict) -> list[dict]:
    """A lesson's markdown cells that the numbers write: its header and every cell with a numbers span."""
    header = header_cell(nb)
    return [cell for cell in nb["cells"] if cell is header
            or (cell["cell_type"] == "markdown" and "<!-- numbers:" in "".join(cell["source"]))]


def _translation_block(text: str, cell_id: str) -> re.Match | None:
    return re.search(r"(<!-- cell: " + re.escape(cell_id) + r" \| en: [0-9a-f]+ -->\n)(.*?)(?=\n<!-- cell: |\Z)",
                     text, re.S)


def planned(numbers: dict, root: Path = ROOT) -> dict[Path, str]:
    """Every file under ``root`` this module writes, with the content it should have."""
    out: dict[Path, str] = {}
    for lang, names in DOCS.items():
        for name in names:
            out[root / name] = render_markdown((root / name).read_text(encoding="utf-8"), numbers, lang)
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        n = path.name[:2]
        nb = json.loads(path.read_text(encoding="utf-8"))
        tr = root / "notebooks" / "zh" / "translations" / f"{path.stem}.md"
        text = tr.read_text(encoding="utf-8")
        changed = False
        for cell in numbered_cells(nb):
            source = "".join(cell["source"])
            rendered = render_markdown(source, numbers, "en", n)
            if rendered != source:
                cell["source"] = rendered.splitlines(keepends=True)
                changed = True
            found = _translation_block(text, cell["id"])
            if found is None:
                raise ValueError(f"{tr.name} has no block for {cell['id']}")
            block = render_markdown(found.group(2), numbers, "zh", n)
            text = text[:found.start(2)] + block + text[found.end(2):]
        if changed:
            out[path] = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        out[tr] = text
    out[root / NUMBERS_FILE.relative_to(ROOT)] = json.dumps(numbers, indent=2, ensure_ascii=False) + "\n"
    return out


# ----------------------------------------------------------------------------- numbers typed by hand
_NUMBER = r"(?P<v>\d[\d,]*(?:\.\d+)?)"
HAND_WRITTEN = {
    "en": re.compile(r"\b[Ll]essons? (?P<n>\d\d)\b[^.;:\n(]{0,40}?[ (]" + _NUMBER + r" ?(?P<u>s|seconds|minutes)\b"),
    "zh": re.compile(r"第 ?(?P<n>\d\d) ?课[^。；：\n（]{0,30}?" + _NUMBER + r" ?(?P<u>秒|分钟)"),
}
COURSE_TOTAL = {
    "en": re.compile(r"\b(?:smoke (?:mode|pass|run)s?|all 1[34](?: lessons)?)\b[^.;:\n(]{0,40}?[ (]" + _NUMBER
                     + r" ?(?P<u>s|seconds|minutes)\b", re.I),
    "zh": re.compile(r"(?:冒烟|smoke|(?<!第 )(?<!第)1[34] 课)[^。；：\n（]{0,30}?" + _NUMBER + r" ?(?P<u>秒|分钟)"),
}
#: "about N minutes" anywhere: a course's or a lesson's time (a session's idle limit is not one)
ABOUT_MINUTES = {"en": re.compile(r"(?<!idle )\babout " + _NUMBER + r" (?:minutes|min)\b(?! idle)"),
                 "zh": re.compile(r"(?<!空闲)(?<!标签页)约 ?" + _NUMBER + r" ?分钟(?!就会结束|后结束)")}
#: how long the tests took ("`bash .ci/run` (set-up included) took 1,029 s", "测试本身 934 秒")
TEST_TIME = {"en": re.compile(r"(?:\.ci/run|test command|the suite|tests? passed)\b[^.;\n]{0,60}?[ (]" + _NUMBER
                              + r" ?(?P<u>s|seconds|minutes)\b"),
             "zh": re.compile(r"(?:\.ci/run|测试)[^。；\n]{0,40}?" + _NUMBER + r" ?(?P<u>秒|分钟)")}
#: a kernel's or a run's peak memory
PEAK = {"en": re.compile(r"\bpeak(?:s|ed)?\b(?: [a-z]+){0,3}? \(?" + _NUMBER + r" ?(?P<u>MB|GB)\b"),
        "zh": re.compile(r"峰值[^\d+。；，\n]{0,6}" + _NUMBER + r" ?(?P<u>MB|GB)")}
#: a verdict next to a conclusion's id ("conclusion 6 holds", "**4b cannot tell**", "结论 6 成立")
_ANY_ROW = LABEL_PATTERN  # a row of lesson 12 or one of its parts, from the one table of conclusions
_LETTERED_ROW = "(?:" + "|".join(re.escape(c.label) for c in CONCLUSION_ROWS if not c.label.isdigit()) + ")"
VERDICT = {"en": re.compile(r"(?:\b[Cc]onclusion |\bC)(?P<id>" + _ANY_ROW + r")\*{0,2},? (?:now |still |no longer )?"
                            r"(?P<v>holds|does not hold|cannot tell)\b"
                            r"|(?<![\w.])(?P<id2>" + _LETTERED_ROW + r")\*{0,2} (?P<v2>holds|does not hold|cannot tell)\b"),
           "zh": re.compile(r"结论 ?(?P<id>" + _ANY_ROW + r")[^。；，\n]{0,6}?(?P<v>不成立|成立|无法判断)"
                            r"|\*\*(?P<id2>" + _LETTERED_ROW + r") ?(?P<v2>不成立|成立|无法判断)")}


def course_values(numbers: dict) -> set[float]:
    """Every whole-course time recorded (seconds, and the same in whole or tenths of minutes)."""
    course = numbers["course"]
    seconds = [v for k, v in course.items() if k.endswith("_total_s") and v is not None]
    seconds += list(course.get("offline_full_earlier_totals_s", []))
    values = {float(v) for v in seconds} | {float(round(v / 60)) for v in seconds}
    values |= {round(v / 60, 1) for v in seconds}
    values |= {float(v) for v in numbers["door"]["course_minutes_on_cpu"].values()}
    values.add(float(round(course["offline_full_feeds_12_s"] / 60)))
    return values


def known_values(numbers: dict, n: str) -> set[float]:
    """Every time (seconds, and minutes as minutes) recorded for lesson ``n``."""
    row = numbers["lessons"].get(n, {})
    values = {float(v) for k, v in row.items() if k.endswith("_s") and v is not None}
    values |= {float(round(v / 60)) for k, v in row.items() if k.endswith("_s") and v is not None}
    return values | {float(row.get("class_minutes", -1))}


def peak_values(numbers: dict) -> set[float]:
    """Every peak recorded, in MB (and in GB to one decimal)."""
    mb = {float(v) for row in numbers["lessons"].values() for k, v in row.items() if k.endswith("_peak_mb")}
    mb |= {float(numbers["door"]["peak_target_mb"]), float(numbers["course"]["offline_full_highest_peak"]["peak_mb"])}
    mb |= {float(run["peak_mb"]) for run in numbers["report_runs"].values() if run.get("peak_mb") is not None}
    mb.add(2048.0)  # Binder's 2 GB, the limit the peaks are held to
    return mb | {round(v / 1000, 1) for v in mb} | {round(v / 1024, 1) for v in mb}


def minute_values(numbers: dict) -> set[float]:
    """Every time in whole minutes the numbers give: the course's, a lesson's (a minute or more), a class
    plan's."""
    course = numbers["course"]
    seconds = [v for k, v in course.items() if k.endswith("_total_s") and v is not None]
    seconds.append(course["offline_full_feeds_12_s"])
    seconds += [v for row in numbers["lessons"].values() for k, v in row.items() if k.endswith("_s") and v >= 60]
    values = {float(round(v / 60)) for v in seconds}
    values |= {float(v) for v in numbers["door"]["course_minutes_on_cpu"].values()}
    values |= {float(row["class_minutes"]) for row in numbers["lessons"].values()}
    return values | {float(course["class_minutes_total"])}


def ci_time_values(numbers: dict) -> set[float]:
    """The recorded CI run's set-up, test and total times, in seconds and in whole minutes."""
    seconds = [numbers["ci"][key] for key in ("setup_s", "tests_s", "total_s")]
    return {float(v) for v in seconds} | {float(round(v / 60)) for v in seconds}


def _verdict_words(lang: str) -> dict[str, str]:
    """Verdict as prose writes it -> the verdict word the reports record."""
    return {(_in_language(lang, lambda w=w: shown(w)).lower() if lang == "en" else
             _in_language(lang, lambda w=w: shown(w))): w for w in WORDS}


def hand_written_drift(text: str, numbers: dict, lang: str) -> list[str]:
    """Numbers written by hand outside the generated text that match no generated value: a lesson's or the
    course's time, "about N minutes", the tests' time, a peak, a conclusion's verdict other than the offline
    default's."""
    outside = INLINE.sub("", BLOCK.sub("", text))
    # (pattern, the values it may quote, how a finding is named)
    kinds = ((HAND_WRITTEN, lambda m: known_values(numbers, m.group("n")), lambda m: f"lesson {m.group('n')}"),
             (COURSE_TOTAL, lambda m: course_values(numbers), lambda m: "the course"),
             (ABOUT_MINUTES, lambda m: minute_values(numbers), lambda m: "a time"),
             (TEST_TIME, lambda m: ci_time_values(numbers), lambda m: "the tests' time"),
             (PEAK, lambda m: peak_values(numbers), lambda m: "a peak"))
    found = [f"{named(m)}: {m.group(0)!r}" for patterns, values, named in kinds for m in patterns[lang].finditer(outside)
             if float(m.group("v").replace(",", "")) not in values(m)]
    words, claims = _verdict_words(lang), numbers["conclusions"]["claims"]
    for m in VERDICT[lang].finditer(outside):
        label, said = (m.group("id"), m.group("v")) if m.group("id") else (m.group("id2"), m.group("v2"))
        parts = [label] if label in claims else [k for k in claims if k.startswith(label)]
        if not parts or any(words[said] != claims[k]["verdict"] for k in parts):
            found.append(f"conclusion {label}: {m.group(0)!r}")
    return found


# ----------------------------------------------------------------------------- every measured number a span
#: a measured number: a quantity with a unit of time or memory (a lesson's seconds, a kernel's peak, a report's
#: minutes, a benchmark's memory). Numbers without such a unit (lesson numbers, years, head and layer counts,
#: query counts, shares, the deciding numbers of verdicts) state no cost of running the course and are not
#: read here. "s" needs a space before it, so that a format ("{x:34s}") is not read as seconds.
MEASURED = re.compile(r"(?<![A-Za-z0-9_.,+-])[+-]?(?P<v>\d[\d,]*(?:\.\d+)?)(?:-\d[\d,]*(?:\.\d+)?)?"
                      r"(?P<u>(?: |&nbsp;)(?:s|ms|min)|(?:\s|&nbsp;)(?:seconds?|minutes?|hours?)|(?: ?)(?:KB|MB|GB|TB|KiB|MiB|GiB)"
                      r"|(?: ?)(?:秒|分钟|小时))(?![A-Za-z0-9_/])")
#: the numbers with a unit of time or memory that are not measurements of the course, each kind with its
#: reason: what others set (a host's memory and its times, a machine one buys), a class's timetable, and
#: arithmetic a sentence shows. A kind is matched on the words around the number, never on a file or a line.
NOT_A_MEASUREMENT: dict[str, re.Pattern] = {
    # mybinder.org's memory per session (and the same limits in the course's own Binder image)
    "a host's memory": re.compile(r"Binder(?:'s| session has(?: about)?| gives a session| 的| 会话有)?\s*\d(?:-\d)? ?GB"
                                  r"|same \d GB(?: and \d CPU)? limits|同样的 \d GB"),
    # a machine's size (what one buys or rents), not what the course uses on it
    "a machine's size": re.compile(r"(?<![\d.])\d+ ?GB(?: (?:of )?(?:RAM|memory|machines?|laptops?|or less|or more)| 的机器| 内存| 以上"
                                   r"| 机器)|(?:container of|机器内存(?:为|是)?) \d+ ?GB(?![\d.])"
                                   r"|内存(?:不超过|不足)? ?\d+ ?GB(?![\d.])"),
    # how long a host keeps an idle session or takes to build its image (Colab, Binder, JupyterHub's culling)
    "a host's own times": re.compile(r"\d+ (?:minutes|hours) (?:idle|without an open)|idle (?:for )?(?:about )?\d+ minutes"
                                     r"|空闲 ?(?:约 ?)?\d+ ?分钟|最长 ?\d+ ?小时|约 ?\d+ ?分钟后结束|\(\d+ hours at most\)"
                                     r"|launched \(\d+-\d+\s+minutes\)|构建镜像（\d+-\d+ 分钟）"),
    # a class's timetable: how long a class meets, chosen by the school, and how a lesson plan splits its time
    # (a half day with its breaks, each block's minutes: the plan's choice, shorter than the lessons it covers)
    "a timetable": re.compile(r"(?:meets?|sessions? of)[^.\n]{0,30}?\d+(?:-\d+)?\s+minutes|\d+ minutes \(one session\)"
                              r"|每次 (?:\d+ 到 )?\d+ ?分钟|\d+ ?分钟(?:（一次课）|和半天)"
                              r"|Half a day \(about \d+(?:\.\d+)? hours with breaks\)|半天（含休息约 \d+(?:\.\d+)? 小时）"
                              r"|^\| \d \(\d+ min\) \||^\| 第.段（\d+ 分钟） \|", re.M),
    # arithmetic the sentence shows (sizes times four bytes), not a run's measurement
    "arithmetic shown": re.compile(r"x \d+ x \d+ would take \d[\d.]* GB|× \d+ 的注意力图需要 \d[\d.]* GB"),
}


def generated_values(numbers: object) -> set[float]:
    """Every number in ``numbers`` (nested), with each time also in minutes and each size also in GB."""
    found: set[float] = set()
    stack = [numbers]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            v = float(item)
            found |= {v, float(round(v / 60)), round(v / 60, 1), round(v / 1000, 1), round(v / 1024, 1)}
    return found


def _blank(match: re.Match) -> str:
    """The match with every character but newlines made a space (a generated part, kept out of the reading but
    not out of the line count)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def outside_generated(text: str, lang: str) -> str:
    """``text`` with every generated block, inline span and lesson heading's parenthesis blanked out."""
    text = BLOCK.sub(_blank, text)
    text = INLINE.sub(_blank, text)
    return HEADING[lang].sub(lambda m: m.group(1) + " " * (m.end() - m.end(1)), text)


def _not_measured(text: str, start: int, end: int) -> bool:
    """Whether the number at ``text[start:end]`` is one of :data:`NOT_A_MEASUREMENT`'s kinds."""
    for pattern in NOT_A_MEASUREMENT.values():
        for m in pattern.finditer(text, max(0, start - 40), min(len(text), end + 40)):
            if m.start() <= start and end <= m.end() or start <= m.start() < end:
                return True
    return False


def measured_in(text: str, values: set[float]) -> list[tuple[int, str, str]]:
    """Every measured number (:data:`MEASURED`) in ``text`` that is not one of :data:`NOT_A_MEASUREMENT`'s kinds, as
    (line, kind, text): kind ``a copy of a generated value`` when it equals a generated value (or its minutes,
    its GB), else ``a measured number with no source``. ``text`` has its generated parts blanked out already
    (:func:`outside_generated`)."""
    found = []
    for m in MEASURED.finditer(text):
        if _not_measured(text, m.start(), m.end()):
            continue
        kind = ("a copy of a generated value" if float(m.group("v").replace(",", "")) in values
                else "a measured number with no source")
        found.append((text.count("\n", 0, m.start()) + 1, kind, m.group(0).replace("&nbsp;", " ")))
    return found


def _said(line: int, kind: str, number: str) -> str:
    return f"line {line}: {kind}: {number!r}"


def markdown_numbers(path: Path, numbers: dict, lang: str) -> list[str]:
    """:func:`measured_in` of a markdown document, as ``line N: KIND: 'TEXT'``."""
    text = outside_generated(path.read_text(encoding="utf-8"), lang)
    return [_said(*found) for found in measured_in(text, generated_values(numbers))]


def notebook_numbers(path: Path, numbers: dict) -> list[str]:
    """:func:`measured_in` of every markdown cell of a notebook, each finding named by its cell."""
    values = generated_values(numbers)
    found = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            text = outside_generated("".join(cell["source"]), "en")
            found += [f"cell {cell.get('id')}, {_said(*f)}" for f in measured_in(text, values)]
    return found


def script_numbers(path: Path, numbers: dict) -> list[str]:
    """:func:`measured_in` of every string in a Python script (its docstrings, messages and f-strings' text):
    a script reads a number from its constant or from the numbers, it never types one."""
    values = generated_values(numbers)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [_said(node.lineno + line - 1, kind, number) for line, kind, number in measured_in(node.value, values)]
    return found


def stated_in(root: Path = ROOT) -> dict[str, tuple[str, Path]]:
    """Every file that states numbers to a reader, which :func:`copied_numbers` reads: :data:`DOCS`, every guide
    in ``docs/``, every lesson's markdown (the Chinese edition through its translations) and every script's
    strings (``CHANGELOG.md`` is history: it keeps the numbers each round measured at the time). Relative
    name -> (kind, path); kinds: ``en``/``zh`` (markdown in that language), ``notebook``, ``script``."""
    files: dict[str, tuple[str, Path]] = {}
    for lang, names in DOCS.items():
        for name in names:
            files[name] = (lang, root / name)
    for path in sorted((root / "docs").glob("*.md")):
        files.setdefault(path.relative_to(root).as_posix(), ("zh" if path.name.endswith(".zh-CN.md") else "en", path))
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        files[path.relative_to(root).as_posix()] = ("notebook", path)
    for path in sorted((root / "notebooks" / "zh" / "translations").glob("*.md")):
        files[path.relative_to(root).as_posix()] = ("zh", path)
    for path in sorted((root / "scripts").glob("*.py")):
        files[path.relative_to(root).as_posix()] = ("script", path)
    return {name: (kind, path) for name, (kind, path) in files.items() if path.is_file()}


def copied_numbers(numbers: dict, root: Path = ROOT) -> list[str]:
    """Every measured number stated outside a generated span, in every file of :func:`stated_in`: a typed copy
    of a generated value, or a measured number with no source. ``NAME: line N: KIND: 'TEXT'``."""
    found = []
    for name, (kind, path) in stated_in(root).items():
        if kind == "notebook":
            found += [f"{name}: {d}" for d in notebook_numbers(path, numbers)]
        elif kind == "script":
            found += [f"{name}: {d}" for d in script_numbers(path, numbers)]
        else:
            found += [f"{name}: {d}" for d in markdown_numbers(path, numbers, kind)]
    return found


_LINK = re.compile(r"\]\((?P<file>[^)#\s]*\.md)?#(?P<anchor>[^)\s]+)\)")


def anchors(text: str) -> set[str]:
    """The anchors of a markdown file's headings, as GitHub makes them."""
    found = set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower().replace("`", "")).replace(" ", "-")
        found.add(slug)
    return found


def broken_links(path: Path) -> list[str]:
    """Links in ``path`` to a heading (``file.md#anchor`` or ``#anchor``) that does not exist."""
    text = path.read_text(encoding="utf-8")
    bad = []
    for m in _LINK.finditer(text):
        target = (path.parent / m.group("file")) if m.group("file") else path
        if not target.is_file() or m.group("anchor") not in anchors(target.read_text(encoding="utf-8")):
            bad.append(f"broken link {m.group(0)[1:]!r}")
    return bad


def problems(numbers: dict, root: Path = ROOT) -> list[str]:
    """Every file under ``root`` out of date with ``numbers``, every number typed by hand that matches no
    generated value, and every link to a heading that does not exist."""
    found = [f"out of date: {path.relative_to(root).as_posix()} (run python scripts/course_numbers.py)"
             for path, text in planned(numbers, root).items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    for lang, names in DOCS.items():
        for name in names:
            found += [f"{name}: {d}" for d in hand_written_drift((root / name).read_text(encoding="utf-8"),
                                                                   numbers, lang)]
    for name in DOCS["en"] + DOCS["zh"] + LINKED:
        found += [f"{name}: {d}" for d in broken_links(root / name)]
    return found + copied_numbers(numbers, root)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a file is out of date")
    ap.add_argument("--ci-log", type=Path, metavar="LOG",
                    help=f"first record the times of a passed `bash .ci/run` log in {CI_RUN}")
    ap.add_argument("--machine", default="a quiet 2-core Intel Xeon (AVX-512, AMX)",
                    help="the machine the CI log was made on, in words (with --ci-log)")
    args = ap.parse_args(argv)
    if args.ci_log is not None:
        try:
            run = record_ci_run(args.ci_log, args.machine)
        except (OSError, ValueError) as exc:
            print(f"--ci-log {args.ci_log}: {exc}", file=sys.stderr)
            return 2
        print(f"recorded {CI_RUN}: {run['total_s']} s in all, {run['passed']} tests passed")
    numbers = gather()
    if args.check:
        found = problems(numbers)
        print("\n".join(found) or "every quoted time and expected number agrees with attnlab/core/numbers.json")
        return 1 if found else 0
    stale = []
    for path, text in planned(numbers).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
            path.write_text(text, encoding="utf-8")
    for r in [p.relative_to(ROOT).as_posix() for p in stale]:
        print(f"wrote {r}")
    if any(p.suffix == ".md" and "translations" in p.parts for p in stale):
        subprocess.run([sys.executable, str(ROOT / "scripts" / "zh_notebooks.py"), "--build"], cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
