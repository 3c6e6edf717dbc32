"""The course's measured times and memory peaks, as they ship with the package.

``attnlab/core/numbers.json`` is the one generated file of the course's expected numbers: every lesson's
seconds and kernel peak per model, the whole course's totals, the verdicts a smoke run and the full-size
reports give. ``python scripts/course_numbers.py`` (:mod:`attnlab.tools.course_numbers`) writes it from the
benchmark files and the reports, then writes every document and lesson header that quotes it. It is package
data, so an installed course (Colab installs no ``docs/``) reads the same numbers: :mod:`attnlab.core.door`
tells students the course's minutes and a lesson's memory need from here.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from attnlab.core.targets import TARGETS

#: the generated file (package data)
NUMBERS_FILE = Path(__file__).with_name("numbers.json")
#: the memory Binder (mybinder.org) gives a session, in GB: the one statement the documents quote
BINDER_GB = 2
#: a lesson's kernel must stay under this (Binder gives BINDER_GB; the rest is JupyterLab's and the system's;
#: the course's targets, :data:`attnlab.core.targets.TARGETS`)
PEAK_TARGET_MB = TARGETS["peak_mb"]
#: bytes in one of the benchmark's MB (peaks are read from the kernel's VmHWM, in KiB / 1024)
MB = 1 << 20


@functools.cache
def numbers() -> dict:
    """The content of :data:`NUMBERS_FILE` (read once)."""
    return json.loads(NUMBERS_FILE.read_text(encoding="utf-8"))


def door_numbers() -> dict:
    """What the doors quote: ``course_minutes_on_cpu`` (model name -> whole course in full mode on a
    2-core CPU, in minutes) and ``lesson_needs_mb`` (the highest kernel peak of a lesson on the offline
    default)."""
    return numbers()["door"]


def course_minutes_on_cpu() -> dict[str, int]:
    """Model name -> the whole course's full-mode minutes on a 2-core CPU, as measured."""
    return dict(door_numbers()["course_minutes_on_cpu"])


def lesson_needs_bytes() -> int:
    """Memory a lesson's kernel may need (the highest measured peak on the offline default), in bytes."""
    return int(door_numbers()["lesson_needs_mb"]) * MB
