"""The lesson records, listed once: which lesson saves each, under which file, built by what, read by whom.

Every module that walks the lesson records reads :data:`RECORDS` instead of a
list of its own: lesson 12's evidence (:mod:`attnlab.course.evidence`), the
report's parts (``attnlab report``), the shipped reference
(:mod:`attnlab.course.reference`) and the tests. Adding a lesson record means
adding its type to :mod:`attnlab.course.lesson_results` (with its file name in
``RESULT_NAMES``), its builder to :mod:`attnlab.course.record_builders`, and one
line here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from attnlab.core.records import Record
from attnlab.course import attention_limits_result, lesson_results, record_builders


@dataclass(frozen=True)
class LessonRecord:
    """One lesson's saved record.

    Attributes:
        key: its field of lesson 12's evidence and its part of ``attnlab report``.
        kind: the record type.
        build: the builder the lesson's saving cell and the report call (None: no conclusion or report reads it,
            the lesson builds it in its own cell).
        readers: the lessons that read the saved file ("12": lesson 12's conclusions).
        conclusions: the rows of lesson 12 it decides or is cited under ("1" ... "6").
        rerun: lesson 12 re-runs the lesson when its file is missing (lesson 13's is only cited: read, never re-run).
    """

    key: str
    kind: type[Record]
    build: Callable[..., Record] | None
    readers: tuple[str, ...]
    conclusions: tuple[str, ...]
    rerun: bool = True

    @property
    def name(self) -> str:
        """The saved file's name (without ``.json``), e.g. ``"08_layer_averaging"``."""
        return lesson_results.RESULT_NAMES[self.kind]

    @property
    def lesson(self) -> str:
        """The lesson that saves it, e.g. ``"08"``."""
        return self.name[:2]


#: every lesson record a later lesson, the report or the reference reads, in lesson order
RECORDS: tuple[LessonRecord, ...] = (
    LessonRecord("patterns", lesson_results.HeadPatternsResult, record_builders.head_patterns, ("12",), ("1",)),
    LessonRecord("perturbation", lesson_results.PerturbationResult, record_builders.perturbation, ("07", "11", "12"),
                 ("1", "6")),
    LessonRecord("position", lesson_results.PositionResult, None, (), ()),
    LessonRecord("averaging", lesson_results.AveragingResult, record_builders.averaging, ("12",), ("1", "2")),
    LessonRecord("diversity", lesson_results.DiversityResult, record_builders.diversity, ("12",), ("2",)),
    LessonRecord("head_count", lesson_results.HeadCountResult, record_builders.head_count, ("12",), ("3", "5")),
    LessonRecord("pruning", lesson_results.PruningResult, record_builders.pruning, ("12",), ("4", "6")),
    LessonRecord("attention_limits", lesson_results.AttentionLimitsResult, attention_limits_result.from_run,
                 ("12",), ("1",), rerun=False),
)
#: the records lesson 12 judges the conclusions from (its evidence), and those it re-runs when missing
EVIDENCE: tuple[LessonRecord, ...] = tuple(r for r in RECORDS if "12" in r.readers)
RERUN: tuple[LessonRecord, ...] = tuple(r for r in EVIDENCE if r.rerun)
#: the saved names of the lessons before lesson 12 (the reference compares them, then lessons 13 and 12)
EARLIER_NAMES: tuple[str, ...] = tuple(r.name for r in RECORDS if int(r.lesson) < 12)


def by_key(key: str) -> LessonRecord:
    """The record whose evidence field (and report part) is ``key``."""
    for record in RECORDS:
        if record.key == key:
            return record
    raise KeyError(f"no lesson record {key!r}: one of {', '.join(r.key for r in RECORDS)}")
