"""Where lesson 12 finds the untrained twin's verdicts, and how it makes them when it finds none.

Every claim about the model is held against the same claim judged on the model's untrained
twin (:mod:`attnlab.course.twin_control`). Lesson 12 takes the twin's rows (the verdicts of
:func:`attnlab.course.conclusions.data_verdicts` on the twin) from the first of:

1. **the student's own report**: ``attnlab report`` saves them in the course's results folder
   (:data:`TWIN_RESULT`, for that model and run mode);
2. **the shipped reference twin** of that model, when the package ships one
   (``reference/twins/<model>.<mode>.json``: the offline default and MiniLM, made by
   ``attnlab report`` with its default shuffled twin);
3. **a reduced twin run** it makes here: the report's parts on the twin at smoke sizes
   (:func:`reduced_twin_rows`), a few minutes.

and says which (:class:`TwinRows`'s ``source``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from attnlab.core.config import is_smoke
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.core.records import RecordError
from attnlab.core.twins import untrained_twin
from attnlab.course import report_parts, results
from attnlab.course.conclusions import Evidence, data_verdicts
from attnlab.course.lesson_results import HeadCountResult
from attnlab.course.verdicts import ClaimVerdict

#: the saved result (in the course's results folder) that holds a report's twin rows
TWIN_RESULT = "untrained_twin"
#: the shipped reference twins
REFERENCE_DIR = Path(__file__).resolve().parent / "reference" / "twins"

SOURCES = {
    "report": N_("from your own report (attnlab report saved the untrained twin's verdicts in the results folder)"),
    "reference": N_("from the twin shipped with the course for this model ({file}): the same measurements on "
                    "its untrained twin, made by attnlab report"),
    "reduced": N_("from a reduced run made just now: the report's measurements at smoke sizes on the untrained "
                  "twin, so its intervals are wider than a full run's"),
    "none": N_("no untrained twin: none saved, none shipped for this model, and no run was allowed"),
}


@dataclass
class TwinRows:
    """The twin's rows (None when there are none), its name, and where they came from."""

    rows: dict[str, ClaimVerdict] | None
    name: str
    source: str
    file: str = ""

    @property
    def said(self) -> str:
        """Where the rows came from, in one sentence of the reader's language."""
        return _(SOURCES[self.source]).format(file=self.file)


def save_twin_rows(m: LoadedModel, rows: dict[str, ClaimVerdict], *, name: str, kind: str, precision: str) -> Path:
    """Save a twin's rows for ``m`` (its name, kind and precision beside) in the course's results folder."""
    data = {"name": name, "kind": kind, "precision": precision,
            "rows": {label: v.to_record() for label, v in rows.items()}}
    return results.save(TWIN_RESULT, data, model=m)


def rows_from(data: dict) -> dict[str, ClaimVerdict]:
    """The rows of a saved or shipped twin (``data["rows"]``: label -> verdict record)."""
    try:
        return {str(label): ClaimVerdict.from_record(v) for label, v in data["rows"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordError(f"an untrained twin's rows cannot be read: {exc}") from None


def file_stem(model_name: str) -> str:
    """A model name as a file name: ``"all-MiniLM-L6-v2 (bundled)"`` -> ``"all-MiniLM-L6-v2_bundled"``."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", model_name).strip("_")


def reference_file(m: LoadedModel, *, smoke: bool | None = None) -> Path:
    """Where the shipped twin of ``m`` in this run mode would be (it may not exist)."""
    mode = "smoke" if (is_smoke() if smoke is None else smoke) else "full"
    return REFERENCE_DIR / f"{file_stem(m.name)}.{mode}.json"


def saved_twin(m: LoadedModel) -> TwinRows | None:
    """The twin rows a report saved for ``m`` in this run mode, or None."""
    data = results.load(TWIN_RESULT, None, model=m)
    if not isinstance(data, dict):
        return None
    try:
        return TwinRows(rows_from(data), str(data.get("name", "")), "report")
    except RecordError:
        return None


def shipped_twin(m: LoadedModel) -> TwinRows | None:
    """The shipped reference twin of ``m`` in this run mode, or None."""
    path = reference_file(m)
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return TwinRows(rows_from(data), str(data.get("name", "")), "reference", path.name)


@contextmanager
def _smoke_sizes():
    before = os.environ.get("ATTNLAB_SMOKE")
    os.environ["ATTNLAB_SMOKE"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("ATTNLAB_SMOKE", None)
        else:
            os.environ["ATTNLAB_SMOKE"] = before


def reduced_twin_rows(m: LoadedModel, *, kind: str = "shuffled", progress: bool = True) -> TwinRows:
    """The report's measurements at smoke sizes on a shuffled copy of ``m`` (``m`` is left as it is),
    judged row by row. Lesson 13's part is left out; lesson 10's training half, which does not depend
    on the model, is not needed for any claim about the model and is skipped too."""
    twin = untrained_twin(m, kind=kind)
    ev = Evidence()
    parts = {"patterns": report_parts.patterns, "perturbation": report_parts.perturbation,
             "averaging": report_parts.averaging, "diversity": report_parts.diversity,
             "head_count": _regrouping_only, "pruning": report_parts.pruning_part}
    with _smoke_sizes():
        for part, measure in tqdm(parts.items(), desc=_("untrained twin"), disable=not progress):
            try:
                record, _stopping = measure(twin, progress=False)
            except Exception:  # noqa: BLE001 - the rows it feeds say "cannot tell", with the missing lesson
                continue
            setattr(ev, part, record)
        rows = data_verdicts(ev, safe=True)
    return TwinRows(rows, twin.name, "reduced")


def _regrouping_only(m: LoadedModel, *, progress: bool = False):
    """Lesson 10's regrouping on ``m`` with a stand-in training half (the twin's rows 5a/5b are never read)."""
    unmeasured = ClaimVerdict.missing(N_("not measured on the untrained twin"), N_("not needed"))
    stand_in = HeadCountResult(n_texts=0, regroup=[], collapse=unmeasured, head_counts=[], seeds=[], perplexity=[],
                               head_count=unmeasured)
    return report_parts.head_count(m, progress=progress, trained=stand_in)


def twin_rows_for(m: LoadedModel, *, allow_run: bool = True, progress: bool = True,
                  run: Callable[[LoadedModel], TwinRows] | None = None) -> TwinRows:
    """The twin rows lesson 12 uses for ``m``: the student's report, else the shipped reference, else a
    reduced run (when ``allow_run``; ``run`` replaces :func:`reduced_twin_rows`, e.g. in tests)."""
    for found in (saved_twin(m), shipped_twin(m)):
        if found is not None:
            return found
    if not allow_run:
        return TwinRows(None, "", "none")
    return (run or (lambda model: reduced_twin_rows(model, progress=progress)))(m)
