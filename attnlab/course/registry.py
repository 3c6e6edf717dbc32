"""The lesson records, listed once: which lesson saves each, under which file, built by what, read by whom,
and measured at which sizes by ``attnlab report``.

Every module that walks the lesson records reads :data:`RECORDS` instead of a
list of its own: lesson 12's evidence (:mod:`attnlab.course.evidence`), the
report's parts (``attnlab report``, whose part for a record is the function named by its key in
:mod:`attnlab.course.report_parts`, at the sizes its row carries), the shipped reference
(:mod:`attnlab.course.reference`) and the tests. Adding a lesson record means
adding its type to :mod:`attnlab.course.lesson_results` (with its ``file_name``), its builder to
:mod:`attnlab.course.record_builders`, one row here, and (when lesson 12 reads it) the report's part of the
same name; lesson 12's evidence gets its field from the row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from attnlab.analysis.stats import MIN_UNITS
from attnlab.core.records import Record
from attnlab.course import attention_limits_result, lesson_results, record_builders
from attnlab.course.claims import averaging as averaging_claims


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
        what: what the report's part measures, in words ("" when the report has no part for it).
        sizes: every size knob of the report's part: ``(full run, smoke run)``; a sized part gives
            ``(minimum, maximum)`` for the units it draws.
    """

    key: str
    kind: type[Record]
    build: Callable[..., Record] | None
    readers: tuple[str, ...]
    conclusions: tuple[str, ...]
    rerun: bool = True
    what: str = ""
    sizes: Mapping[str, tuple] = field(default_factory=dict, hash=False)

    @property
    def name(self) -> str:
        """The saved file's name (without ``.json``), e.g. ``"08_layer_averaging"``."""
        return self.kind.file_name

    @property
    def lesson(self) -> str:
        """The lesson that saves it, e.g. ``"08"``."""
        return self.name[:2]


#: every lesson record a later lesson, the report or the reference reads, in lesson order
RECORDS: tuple[LessonRecord, ...] = (
    LessonRecord("patterns", lesson_results.HeadPatternsResult, record_builders.head_patterns, ("12",), ("1",),
                 what="head patterns over many inputs", sizes={"n_boot": (1000, 100)}),
    LessonRecord("perturbation", lesson_results.PerturbationResult, record_builders.perturbation, ("07", "11", "12"),
                 ("1", "6"), what="maps under lexical and syntactic damage",
                 sizes={"queries": ((100, 1000), (12, 48)), "n_boot": (1000, 100)}),
    LessonRecord("position", lesson_results.PositionResult, None, (), ()),
    LessonRecord("averaging", lesson_results.AveragingResult, record_builders.averaging, ("12",), ("1", "2"),
                 what="mean maps and fixedness",
                 sizes={"queries": ((MIN_UNITS * 1000, averaging_claims.COURSE_QUERIES), (MIN_UNITS * 25, 12 * 25)),
                        "shard": (1000, 25), "control": (2000, 100), "n_boot": (1000, 100),
                        "norm_queries": (64, 8)}),
    LessonRecord("diversity", lesson_results.DiversityResult, record_builders.diversity, ("12",), ("2",),
                 what="dispersion of heads against depth",
                 sizes={"texts": ((250, 2000), (12, 48)), "n_boot": (2000, 200)}),
    LessonRecord("head_count", lesson_results.HeadCountResult, record_builders.head_count, ("12",), ("3", "5"),
                 what="fewer heads: regrouping and training",
                 sizes={"texts": (500, 40), "seeds": ((0, 1, 2, 3, 4), (0, 1))}),
    LessonRecord("pruning", lesson_results.PruningResult, record_builders.pruning, ("12",), ("4", "6"),
                 what="ablation, covering and task probes",
                 sizes={"importance_texts": (128, 4), "eval_texts": (128, 4), "probe_texts": (128, 36),
                        "covering_sets": (20, 4)}),
    LessonRecord("attention_limits", lesson_results.AttentionLimitsResult, attention_limits_result.from_run,
                 ("12",), ("1",), rerun=False, what="sinks, the faithfulness scoreboard, mean maps",
                 sizes={"sink_texts": (300, 12), "intervene": (100, 6), "scored": (80, 6), "mean_queries": (2000, 60),
                        "replace": (32, 3), "orders": (5, 2)}),
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
