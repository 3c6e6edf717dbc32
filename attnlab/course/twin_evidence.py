"""Where lesson 12 finds the untrained twin's evidence, and how it makes it when it finds none.

Every claim about the model is held against the same claim judged on the model's untrained
twin (:mod:`attnlab.course.twin_control`). The twin's *evidence* (the records the report's parts
measure on it, :class:`~attnlab.course.evidence.Evidence`) is kept, not its verdicts, so that
the twin is always judged by the same rules as the model. Lesson 12 takes it from the first of:

1. **the student's own report**: ``attnlab report`` saves it in the course's results folder
   (:data:`TWIN_RESULT`, for that model and run mode);
2. **the shipped reference twin** of that model, when the package ships one
   (``reference/twins/<model>.<mode>.json``: the offline default and MiniLM, made by
   ``attnlab report`` with its default shuffled twin);
3. **a reduced twin run** it makes here: the report's parts on the twin at smoke sizes
   (:func:`reduced_twin`), a few minutes.

and says which (:class:`TwinEvidence`'s ``source``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import nullcontext
from functools import partial
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from attnlab.core.config import is_smoke, smoke_mode
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.core.records import RecordError, to_plain
from attnlab.core.twins import TWIN_SEEDS, shuffled_for_a_while, untrained_twin
from attnlab.course import report_parts, results
from attnlab.course.evidence import Evidence, data_verdicts
from attnlab.course.lesson_results import HeadCountResult
from attnlab.course.registry import RERUN, by_key
from attnlab.course.twin_control import pooled_twin_rows
from attnlab.course.verdicts import ClaimVerdict

#: the saved result (in the course's results folder) that holds a report's twin rows
TWIN_RESULT = "untrained_twin"
#: the shipped reference twins
REFERENCE_DIR = Path(__file__).resolve().parent / "reference" / "twins"

SOURCES = {
    "report": N_("from your own report (attnlab report saved the untrained twin's measurements in the results folder)"),
    "reference": N_("from the twin shipped with the course for this model ({file}): the same measurements on "
                    "its untrained twin, made by attnlab report"),
    "reference-smaller": N_("from the twin shipped with the course for this model at smoke sizes ({file}), as "
                            "none ships at full size: the report's measurements at smoke sizes on its untrained "
                            "twin, so its intervals are wider than a full run's"),
    "reduced": N_("from a reduced run made just now: the report's measurements at smoke sizes on the untrained "
                  "twin, so its intervals are wider than a full run's"),
    "none": N_("no untrained twin: none saved, none shipped for this model, and no run was allowed"),
}


@dataclass
class TwinEvidence:
    """The twin's evidence (None when there is none), its name, and where it came from; ``more`` holds the
    evidence of the twin's further shuffle seeds (the first seed's is ``evidence``)."""

    evidence: Evidence | None
    name: str
    source: str
    file: str = ""
    more: list[Evidence] = field(default_factory=list)

    @property
    def seeds(self) -> list[Evidence]:
        """Every seed's evidence, the first seed's first (empty when there is none)."""
        return [] if self.evidence is None else [self.evidence, *self.more]

    @property
    def rows(self) -> dict[str, ClaimVerdict] | None:
        """The twin's rows judged by today's rules (:func:`~attnlab.course.evidence.data_verdicts`), each pooled
        over the shuffle seeds (:func:`~attnlab.course.twin_control.pooled_twin`: the seeds' spread inside
        the interval)."""
        if self.evidence is None:
            return None
        return pooled_twin_rows([data_verdicts(ev, safe=True) for ev in self.seeds])

    @property
    def said(self) -> str:
        """Where the evidence came from, in one sentence of the reader's language."""
        return _(SOURCES[self.source]).format(file=self.file)


def _records(ev: Evidence) -> dict:
    return {r.key: to_plain(getattr(ev, r.key)) for r in RERUN if getattr(ev, r.key) is not None}


def twin_record(ev: Evidence | list[Evidence], *, name: str, kind: str, precision: str) -> dict:
    """A twin's evidence as saved: its name, kind and precision, each lesson's record by field for the first
    shuffle seed (``records``) and for each further seed (``more_seeds``)."""
    seeds = [ev] if isinstance(ev, Evidence) else list(ev)
    return {"name": name, "kind": kind, "precision": precision, "records": _records(seeds[0]),
            "more_seeds": [_records(e) for e in seeds[1:]]}


def save_twin(m: LoadedModel, ev: Evidence | list[Evidence], *, name: str, kind: str, precision: str) -> Path:
    """Save a twin's evidence (one seed's, or a list of seeds') for ``m`` in the course's results folder
    (where lesson 12 looks first)."""
    return results.save(TWIN_RESULT, twin_record(ev, name=name, kind=kind, precision=precision), model=m)


def _evidence_of(records: dict) -> Evidence:
    ev = Evidence()
    for key, record in records.items():
        setattr(ev, key, by_key(key).kind.from_record(record))
    return ev


def evidence_from(data: dict) -> list[Evidence]:
    """The evidence of a saved or shipped twin, one per shuffle seed (``data["records"]`` and
    ``data["more_seeds"]``: field -> record)."""
    try:
        return [_evidence_of(data["records"]), *(_evidence_of(r) for r in data.get("more_seeds", []))]
    except (KeyError, TypeError, ValueError, AttributeError, RecordError) as exc:
        raise RecordError(f"an untrained twin's records cannot be read: {exc}") from None


def _twin_evidence(data: dict, source: str, file: str = "") -> TwinEvidence:
    first, *more = evidence_from(data)
    return TwinEvidence(first, str(data.get("name", "")), source, file, more)


def file_stem(model_name: str) -> str:
    """A model name as a file name: ``"all-MiniLM-L6-v2 (bundled)"`` -> ``"all-MiniLM-L6-v2_bundled"``."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", model_name).strip("_")


def reference_file(m: LoadedModel, *, smoke: bool | None = None) -> Path:
    """Where the shipped twin of ``m`` in this run mode would be (it may not exist)."""
    mode = "smoke" if (is_smoke() if smoke is None else smoke) else "full"
    return REFERENCE_DIR / f"{file_stem(m.name)}.{mode}.json"


def saved_twin(m: LoadedModel) -> TwinEvidence | None:
    """The twin evidence a report saved for ``m`` in this run mode, or None."""
    data = results.load(TWIN_RESULT, None, model=m)
    if not isinstance(data, dict):
        return None
    try:
        return _twin_evidence(data, "report")
    except RecordError:
        return None


def shipped_twin(m: LoadedModel, *, smoke: bool | None = None) -> TwinEvidence | None:
    """The shipped reference twin of ``m`` in this run mode (``smoke``: in that mode instead), or None.
    A smoke-size twin read in a full run says so (source ``"reference-smaller"``): it is what a reduced
    run would measure, made when the course was released."""
    path = reference_file(m, smoke=smoke)
    if not path.is_file():
        return None
    smaller = bool(smoke) and not is_smoke()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        return _twin_evidence(data, "reference-smaller" if smaller else "reference", path.name)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, RecordError):
        return None  # a shipped file of an older schema: measure a reduced twin instead




def reduced_twin(m: LoadedModel, *, kind: str = "shuffled", seeds: tuple[int, ...] = TWIN_SEEDS,
                 progress: bool = True) -> TwinEvidence:
    """The report's measurements at smoke sizes on the untrained twin of ``m``, once per shuffle seed
    (``m`` is as trained afterwards). Lesson 13's part is left out (it decides no conclusion), and so is
    lesson 10's training half, which does not depend on the model (no twin applies to conclusion 5)."""
    measured = [_reduced_seed(m, kind=kind, seed=seed, progress=progress) for seed in seeds]
    (first, name), more = measured[0], [ev for ev, _name in measured[1:]]
    return TwinEvidence(first, name, "reduced", more=more)


def _reduced_seed(m: LoadedModel, *, kind: str, seed: int, progress: bool) -> tuple[Evidence, str]:
    """One seed of :func:`reduced_twin`: the evidence and the twin's name."""
    ev = Evidence()
    parts = {"patterns": report_parts.patterns, "perturbation": report_parts.perturbation,
             "averaging": report_parts.averaging, "diversity": report_parts.diversity,
             "head_count": _regrouping_only, "pruning": partial(report_parts.pruning, describe=False)}
    # the shuffled twin is made in m's own weights and put back afterwards: no second model in memory
    making = (shuffled_for_a_while(m, seed=seed) if kind == "shuffled"
              else nullcontext(untrained_twin(m, kind=kind, seed=seed)))
    with making as twin, smoke_mode(True):
        for part, measure in tqdm(parts.items(), desc=_("untrained twin"), disable=not progress):
            try:
                record, _stopping = measure(twin, progress=False)
            except Exception:  # noqa: BLE001 - the rows it feeds say "cannot tell", with the missing lesson
                continue
            setattr(ev, part, record)
    return ev, twin.name


def _regrouping_only(m: LoadedModel, *, progress: bool = False) -> tuple[HeadCountResult, None]:
    """Lesson 10's regrouping on ``m`` with an empty training half (no twin applies to conclusion 5)."""
    unmeasured = ClaimVerdict.missing(N_("not measured on the untrained twin"), N_("not needed"))
    stand_in = HeadCountResult(n_texts=0, regroup=[], collapse=unmeasured, head_counts=[], seeds=[], perplexity=[],
                               head_count=unmeasured)
    return report_parts.head_count(m, progress=progress, trained=stand_in)


def twin_for(m: LoadedModel, *, allow_run: bool = True, progress: bool = True,
             run: Callable[[LoadedModel], TwinEvidence] | None = None) -> TwinEvidence:
    """The twin evidence lesson 12 uses for ``m``: the student's report, else the shipped reference of this run
    mode, else (in a full run) the shipped smoke-size one, which is what a reduced run would measure, else a
    reduced run (when ``allow_run``; ``run`` replaces :func:`reduced_twin`, e.g. in tests)."""
    for find in (saved_twin, shipped_twin, lambda model: None if is_smoke() else shipped_twin(model, smoke=True)):
        found = find(m)
        if found is not None:
            return found
    if not allow_run:
        return TwinEvidence(None, "", "none")
    return (run or (lambda model: reduced_twin(model, progress=progress)))(m)
