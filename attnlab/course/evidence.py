"""Gathering the evidence for the source article's six conclusions: what lessons 05-11 and 13 saved.

Lesson 12 gathers the results that the lessons saved with
:mod:`attnlab.course.results` (for the model that is running, in the same run
mode) as typed records (:mod:`attnlab.course.lesson_results`, listed once in
:mod:`attnlab.course.registry`), and judges the
six conclusions with :mod:`attnlab.course.claims.conclusions`. A lesson whose
result is missing can be re-run headless by a ``runner`` the caller passes in
(the notebook passes :func:`attnlab.tools.lesson_runner.run_lesson`); without
one, missing evidence stays missing and its conclusions say "cannot tell".
"""

from __future__ import annotations

from dataclasses import field, make_dataclass
from typing import Callable, Optional

from tqdm.auto import tqdm

from attnlab.core.language import N_, _, speaking, translated
from attnlab.core.models import LoadedModel
from attnlab.course import results
from attnlab.course.claims import conclusions as claims
from attnlab.course.lesson_results import ConclusionsResult
from attnlab.course.registry import EVIDENCE, RERUN, LessonRecord
from attnlab.course.cards import TWIN_SAYS
from attnlab.course.twin_control import NO_TWIN, NOT_ABOUT, TWIN_NAME, TWIN_NUMBER, TWIN_VERDICT, against_twin
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, ClaimVerdict, shown

#: colour of each verdict word in lesson 12's summary figure
VERDICT_COLOURS = {HOLDS: "#2e7d32", FAILS: "#c62828", UNSURE: "#9e9e9e"}

#: re-runs one lesson (by saved-result name) so that it saves its result for ``m``
Runner = Callable[[str, LoadedModel], None]


def _table(self) -> str:
    """One line per lesson result: its name and where it came from."""
    return "\n".join(f"  {r.name:24s} {origin_word(self.origin.get(r.name, 'missing'))}" for r in RERUN)


#: made from the registry: adding a record to :data:`attnlab.course.registry.EVIDENCE` adds its field here
Evidence = make_dataclass(
    "Evidence",
    [(r.key, Optional[r.kind], field(default=None)) for r in EVIDENCE]
    + [("origin", dict[str, str], field(default_factory=dict))],
    namespace={"table": _table, "__module__": __name__,
               "__doc__": "Saved results of lessons 05-11 and 13 for one model and run mode (None: not available); "
                          "one field per record of attnlab.course.registry.EVIDENCE, named by its key, and origin: "
                          "result name -> \"saved\", \"recomputed\" or \"missing\"."})


#: where a lesson's result came from, as stored (English) and as shown
ORIGIN_WORDS = {"saved": N_("saved"), "recomputed": N_("recomputed"), "missing": N_("missing")}


def origin_word(origin: str) -> str:
    """``"saved"``, ``"recomputed"`` or ``"missing"`` in the reader's language; any other word unchanged."""
    return _(ORIGIN_WORDS[origin]) if origin in ORIGIN_WORDS else origin


def gather(m: LoadedModel, *, runner: Runner | None = None, progress: bool = True) -> Evidence:
    """Load each lesson's saved result for ``m``; with a ``runner``, re-run the lessons that are missing.

    Args:
        m: the running model (results of another model or run mode are not used).
        runner: ``runner(name, m)`` re-runs the lesson that saves ``name``
            (e.g. :func:`attnlab.tools.lesson_runner.run_lesson`); None only reads.
        progress: a progress bar over the lessons being re-run.
    """
    ev = Evidence()
    missing: list[LessonRecord] = []
    for record in EVIDENCE:
        found = results.load(record.name, record.kind, model=m)
        setattr(ev, record.key, found)
        if record.rerun:
            ev.origin[record.name] = "saved" if found is not None else "missing"
            if found is None:
                missing.append(record)
    if runner is None or not missing:
        return ev
    for record in tqdm(missing, desc=_("re-running lessons"), unit=_("lesson")) if progress else missing:
        try:
            runner(record.name, m)
        except Exception as exc:  # noqa: BLE001 - report, then judge with what we have
            print(_("could not re-run {name}: {error}: {message}").format(
                name=record.name, error=type(exc).__name__, message=str(exc)[:200]))
            continue
        found = results.load(record.name, record.kind, model=m)
        if found is not None:
            setattr(ev, record.key, found)
            ev.origin[record.name] = "recomputed"
    return ev


#: one row per verdict of lesson 12 (from the one table of conclusions: conclusions 3, 4 and 5 are judged
#: in two readings each, conclusion 6 in two halves shown as one row)
LABELS = claims.SHOWN_LABELS
#: what each two-reading row reads the conclusion as
READINGS = {c.label: c.reading for c in claims.CONCLUSIONS if c.reading}


def row_titles(labels) -> list[str]:
    """Labels with their reading, for a figure or a table: ``"5a"`` -> ``"5a (fixed width)"``."""
    return [_("{label} ({reading})").format(label=label, reading=_(READINGS[label])) if label in READINGS
            else str(label) for label in labels]


#: how each row of :func:`data_verdicts` is judged from the evidence (conclusion 6 half by half)
JUDGES: dict[str, Callable[[Evidence], ClaimVerdict]] = {c.label: c.judged for c in claims.CONCLUSIONS}
#: the claim each row of :data:`JUDGES` states, for a row that cannot be judged at all
ROW_CLAIMS = {c.label: c.claim for c in claims.CONCLUSIONS}
#: rows whose claim is not about the model under test (lesson 10 trains its own small models)
NOT_ABOUT_THE_MODEL = tuple(c.label for c in claims.CONCLUSIONS if not c.about_model)
#: which way each row's deciding number moves toward "holds": +1 larger, -1 smaller
TOWARD_HOLDS = {c.label: c.toward for c in claims.CONCLUSIONS if c.about_model}


def data_verdicts(ev: Evidence, *, safe: bool = False) -> dict[str, ClaimVerdict]:
    """Each row's verdict from the data alone, before any untrained-twin control: :data:`LABELS`
    with conclusion 6's halves as ``"6a"`` and ``"6b"`` in place of ``"6"``.

    ``safe``: a row whose measurement cannot be judged on this model (an error) says "cannot tell"
    with the error, instead of raising (the report judges any model)."""
    rows = {}
    for label, judge in JUDGES.items():
        try:
            rows[label] = judge(ev)
        except Exception as exc:  # noqa: BLE001 - only with safe: cannot be measured on this model, say why
            if not safe:
                raise
            rows[label] = ClaimVerdict.missing(ROW_CLAIMS[label], N_(
                "cannot be measured on this model ({error}: {message})").format(
                error=type(exc).__name__, message=str(exc)[:200]))
    return rows


def against_twins(model: dict[str, ClaimVerdict], twin: dict[str, ClaimVerdict] | None, *,
                  twin_name: str = "") -> dict[str, ClaimVerdict]:
    """:func:`~attnlab.course.twin_control.against_twin` on every row of ``model`` (``twin`` keyed the same way;
    None: no twin), each with its direction toward "holds" and whether it is about the model from the one
    table of conclusions."""
    return {label: against_twin(label, v, None if twin is None else twin.get(label), twin_name=twin_name,
                                direction=claims.BY_LABEL[label].toward,
                                about_model=claims.BY_LABEL[label].about_model)
            for label, v in model.items()}


def checked_rows(rows: dict[str, ClaimVerdict], twin: dict[str, ClaimVerdict] | None, *,
                 twin_name: str = "") -> dict[str, ClaimVerdict]:
    """:data:`LABELS`' verdicts from :func:`data_verdicts`-shaped ``rows``: every claim about the model
    held against ``twin`` (the same rows judged on its untrained twin; None: no twin measured,
    :func:`against_twins`), conclusion 6 half by half, then combined."""
    checked = against_twins(rows, twin, twin_name=twin_name)
    six = claims.conclusion_6(None, None, parts=tuple(checked.pop(label) for label in claims.SIX_PARTS))
    return {label: six if label == "6" else checked[label] for label in LABELS}


def all_conclusions(ev: Evidence, twin: dict[str, ClaimVerdict] | None = None, *,
                    twin_name: str = "") -> dict[str, ClaimVerdict]:
    """The verdicts in the article's order, keyed by :data:`LABELS`.

    3a is the article's picture (onto the token itself), 3b the general
    collapse onto one token; 4a the ensemble picture (weak heads whose effects add up), 4b
    compensation (heads that cover for one another); 5a varies the heads at a fixed width (Vaswani et
    al.'s design), 5b at a fixed head size. Lesson 13's mean-map replacement
    is cited under conclusion 1 when it has saved its result.

    ``twin``: :func:`data_verdicts` of the same measurements on the model's untrained twin
    (:func:`attnlab.core.twins.untrained_twin`); every claim about the model is held against it
    (:func:`checked_rows`). Without it, each verdict says that no twin was measured.
    """
    return checked_rows(data_verdicts(ev), twin, twin_name=twin_name)


#: where a verdict's deciding number and interval sit in its ``numbers``: the shared keys first,
#: then the names lesson 10's claims use
DECIDING_KEYS = (("estimate", "low", "high"), ("change", "change low", "change high"),
                 ("mass change", "mass change low", "mass change high"))
#: the parts of a combined verdict (conclusion 6), each with its own deciding number
PART_PREFIXES = ("", "6a: ", "6b: ")


def deciding_number(verdict: ClaimVerdict) -> str:
    """The number and interval a verdict was decided on, as one short line for a figure or table.

    Read from ``verdict.numbers`` (keys :data:`DECIDING_KEYS`, and for a combined verdict
    the same keys of each part); a verdict without such a number shows why it could not
    decide (``"missing"`` or ``"why"``), or nothing.
    """
    numbers = verdict.numbers
    parts = []
    for prefix in PART_PREFIXES:
        for keys in DECIDING_KEYS:
            est, low, high = (numbers.get(prefix + k) for k in keys)
            if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (est, low, high)):
                measure = numbers.get(prefix + "measure", keys[0])
                text = f"{translated(str(measure))} {est:.3g} {_exact_count(numbers, prefix) or f'[{low:.3g}, {high:.3g}]'}"
                # "6a: ..." and "; " through the catalogue: full-width punctuation in Chinese
                parts.append(_("{part}: {text}").format(part=prefix.rstrip(": "), text=text) if prefix else text)
                break
    if parts:
        text = parts[0]
        for part in parts[1:]:  # every separator through the catalogue, however many parts
            text = _("{first}; {second}").format(first=text, second=part)
        return text
    for key in ("why", "missing", "6a: why", "6b: missing"):
        if key in numbers:
            return translated(str(numbers[key]))
    return ""


def _exact_count(numbers: dict, prefix: str) -> str:
    """For a counted share (:func:`attnlab.course.claims.conclusions.counted_share`), what replaces the
    interval: the count, the unsure heads' range, and the range its sensitivity table gives; "" for an
    estimate."""
    if prefix + claims.COUNTED not in numbers:
        return ""
    heads, unsure = numbers[prefix + claims.COUNTED], numbers.get(prefix + claims.UNSURE_HEADS, 0)
    if prefix + claims.EXACT in numbers or not unsure:
        text = _("counted: {heads} heads, no label unsure").format(heads=heads)
    else:
        text = _("counted: {heads} heads; up to {high:.3g} counting in the unsure heads ({unsure})").format(
            heads=heads, high=numbers[prefix + "high"], unsure=unsure)
    moved = numbers.get(prefix + claims.thresholds_key())
    if moved is not None:
        low, high = claims.SENSITIVITY_THRESHOLDS[0], claims.SENSITIVITY_THRESHOLDS[-1]
        text = _("{counted}; {range} as lesson 08's label thresholds move from {low} to {high}").format(
            counted=text, range=moved, low=low, high=high)
    return _("({text})").format(text=text)


def summary_line(verdict: ClaimVerdict) -> str:
    """One line for a figure panel or a report row: the deciding number (:func:`deciding_number`), then for
    a "cannot tell" its reason (:meth:`~attnlab.course.verdicts.ClaimVerdict.reason`, for conclusion 6 each
    half's), and for a "does not hold" what the untrained twin says, in the reader's language."""
    number = deciding_number(verdict)
    reasons = [reason for reason in _part_reasons(verdict) if reason]
    if number and any(number in reason for reason in reasons):
        number = ""  # the evidence is missing: its reason already names what to run, once
    notes = [reason for reason in reasons if reason != number]
    said = verdict.numbers.get(TWIN_SAYS)
    if verdict.verdict == FAILS and said:
        notes.append(translated(str(said)))
    text = number
    for note in notes:
        text = _("{first}; {second}").format(first=text.rstrip(".。"), second=note) if text else note  # no ".;"
    return text


def _part_reasons(verdict: ClaimVerdict) -> list[str]:
    """The reason of a "cannot tell", or of each half that cannot tell in conclusion 6."""
    if verdict.verdict != UNSURE:
        return []
    if not any(key.startswith("6a: ") for key in verdict.numbers):
        return [verdict.reason()]
    reasons = []
    for prefix in PART_PREFIXES[1:]:
        part = {k[len(prefix):]: v for k, v in verdict.numbers.items() if k.startswith(prefix)}
        if verdict.numbers.get(HALF_WORDS[prefix]) == UNSURE:
            reason = ClaimVerdict(verdict.claim, UNSURE, part).reason()
            reasons.append(_("{part}: {text}").format(part=prefix.rstrip(": "), text=reason))
    return reasons


#: the key under which conclusion 6 keeps each half's word
HALF_WORDS = {"6a: ": "not useless (6a)", "6b: ": "depends on the task (6b)"}


#: what the twin column says for a row without a twin's number
TWIN_CELL_WORDS = {NOT_ABOUT: N_("not about this model"), NO_TWIN: N_("not measured")}


def twin_cell(verdict: ClaimVerdict) -> str:
    """The untrained twin's verdict and deciding number for a table's twin column (for conclusion 6, each
    half's), in the reader's language; what the column says when no twin applies."""
    parts = []
    for prefix in PART_PREFIXES:
        word = verdict.numbers.get(prefix + TWIN_VERDICT)
        if word is None:
            continue
        text = f"{shown(str(word))} {verdict.numbers.get(prefix + TWIN_NUMBER, '')}".strip()
        parts.append(_("{part}: {text}").format(part=prefix.rstrip(": "), text=text) if prefix else text)
    if parts:
        text = parts[0]
        for part in parts[1:]:
            text = _("{first}; {second}").format(first=text, second=part)
        return text
    for prefix in PART_PREFIXES:
        said = verdict.numbers.get(prefix + TWIN_NAME)
        if said in TWIN_CELL_WORDS:
            return _(TWIN_CELL_WORDS[said])
    return ""


def claim_rows(verdicts: dict[str, ClaimVerdict]) -> dict[str, dict]:
    """Each verdict's record with its deciding number, reason and untrained twin's cell (in English, as
    records keep their words), by label."""
    with speaking("en"):
        return {label: {**v.to_record(), "deciding": deciding_number(v), "reason": v.reason(), "twin": twin_cell(v)}
                for label, v in verdicts.items()}


def conclusions_record(verdicts: dict[str, ClaimVerdict], origin: dict[str, str]) -> ConclusionsResult:
    """The conclusions as lesson 12 and ``attnlab report`` save them: the verdicts keyed by :data:`LABELS`
    (from :func:`all_conclusions` or :func:`checked_rows`), where each lesson's evidence came from
    (result name -> ``"saved"``, ``"recomputed"`` or ``"missing"``), and :func:`claim_rows`."""
    return ConclusionsResult(verdicts=list(verdicts.values()), evidence_origin=dict(origin), labels=list(verdicts),
                             claims=claim_rows(verdicts))
