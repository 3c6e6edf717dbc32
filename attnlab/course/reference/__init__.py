"""Reference results, and why a student's saved results differ from them.

The package ships the saved results of one run of lessons 05-11, 13 and 12 (in that order:
lesson 12 reads 13's record) for each model that runs offline, in each run mode:
``reference/<mode>/<model>/`` with ``<mode>`` ``full`` or ``smoke`` and ``<model>`` the offline default
(``multilingual-e5-small``) or the bundled MiniLM (``all-MiniLM-L6-v2_bundled``), each with a
``provenance.json`` (command, date, machine, whether its CPU has bf16, torch, threads, commit, seconds).
``python scripts/make_references.py`` makes them. :func:`differences` compares a results folder
(``results/``, or ``ATTNLAB_RESULTS``) with the reference of the same model and run mode and lists every
verdict and deciding number (a verdict's numbers) that differs, each with the first setting the two runs
recorded differently (:data:`CAUSE_ORDER`: model, precision, smoke mode, sizes, device; else another
CPU's last bits) and whether your number is inside the reference's interval (the verdict's own interval
fields)::

    from attnlab.course import reference
    found = reference.differences()          # [Difference, ...]; [] when everything matches
    print(reference.report(found))           # one line each, in the reader's language
    reference.full_conclusions("multilingual-e5-small")   # lesson 12's verdicts in the full reference

Provenance (each folder's ``provenance.json`` has the details, with each lesson's seconds and peak): all
four were run on 2026-12-05 from commit b893f18 with ``ATTNLAB_OFFLINE=1`` and ``OMP_NUM_THREADS=1``,
torch 2.13.0, on a busy 2-core x86_64 "Intel(R) Xeon(R) Processor" (``lscpu``) whose flags include
``avx512_bf16`` and ``amx_bf16``, so the lessons' "auto" precision chose bf16 (every record says so;
``ATTNLAB_PRECISION=bf16`` computes like them elsewhere, emulated where the CPU lacks bf16). The smoke
references: ``python scripts/make_references.py --mode smoke --model offline`` (and ``--model bundled``).
The full ones: ``python benchmarks/bench_course.py --json A.json 05 06 07 08 09 10 11 13``, then ``... 12``,
into one ``ATTNLAB_RESULTS`` folder (with ``ATTNLAB_MODEL=bundled`` for MiniLM; 2,054 s on the offline
default and 1,412 s on MiniLM, the two side by side), shipped with ``python scripts/make_references.py
--mode full --model offline --from DIR --timings A.json B.json``.

A number "differs" when it is more than ``rtol`` (relative) and ``atol``
(absolute) away from the reference's: seeded runs on the same model, mode and
precision repeat to far better than that, while another precision moves
means by about 1e-3.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from attnlab.core.config import is_smoke
from attnlab.core.language import N_, _
from attnlab.core.models import MULTILINGUAL
from attnlab.course.cards import deciding, label
from attnlab.course.lesson_results import AttentionLimitsResult, ConclusionsResult
from attnlab.course.registry import EARLIER_NAMES
from attnlab.course.results import COURSE_SAMPLE, results_dir
from attnlab.course.twin_evidence import file_stem
from attnlab.course.verdicts import WORDS, shown

HERE = Path(__file__).resolve().parent
MODES = ("smoke", "full")
#: the lessons whose saved results lesson 12 reads, then lesson 13's and lesson 12's own
LESSONS = EARLIER_NAMES
LIMITS, CONCLUSIONS = AttentionLimitsResult.file_name, ConclusionsResult.file_name
COMPARED = (*LESSONS, LIMITS, CONCLUSIONS)
#: the models a reference is made for, as their records name them (``load_model``'s name after the arrow)
MODELS = {MULTILINGUAL: MULTILINGUAL, "all-MiniLM-L6-v2 (bundled)": "bundled"}
DEFAULT_MODEL = MULTILINGUAL
PROVENANCE = "provenance.json"
#: top-level fields of a study that say how much data it used
SIZE_KEYS = ("n_inputs", "n_queries", "n_texts", "n_controls", "n_seeds", "n_sets")
#: the settings compared, first the one that moves results most; "cpu" when all are the same
CAUSE_ORDER = ("model", "sample", "precision", "smoke", "sizes", "device")
RTOL, ATOL = 0.02, 1e-4
#: a study's field longer than this (characters of JSON) and holding no verdict is not shipped
SMALL = 2000

CAUSES = {
    "missing": N_("this lesson's result is not saved: run the lesson (in the same run mode) first"),
    "model": N_("another model ran ({yours}; the reference is {reference}): heads and verdicts belong to "
                "their model"),
    "smoke": N_("your run is in {yours} and the reference in {reference}: smoke mode uses small sizes, "
                "so its intervals are wide (lesson 08 says \"cannot tell\" for every head, lesson 10 cannot "
                "separate head counts)"),
    "precision": N_("your maps were read in {yours} and the reference's in {reference}: \"auto\" chooses bf16 "
                    "where the processor has it natively (AVX512-BF16 or AMX, GPUs), else fp32; "
                    "ATTNLAB_PRECISION={reference} computes like the reference (bf16 without native support "
                    "is emulated, and slower)"),
    "device": N_("your run used {yours} and the reference {reference}: other kernels round differently"),
    "sample": N_("your queries were drawn for you ({yours}) and the reference's are the course's: a class "
                 "setting gives each student a sample of their own, so numbers differ and a verdict near its "
                 "line can flip"),
    "sizes": N_("the study used other sizes ({yours}; the reference: {reference})"),
    "cpu": N_("the runs recorded the same model, precision, mode, sizes and device: the last bits differ on "
              "another processor (the reference ran on {cpu}), library version or thread count; a verdict "
              "near its line can flip"),
}


@dataclass(frozen=True)
class Difference:
    """One verdict or deciding number of a lesson's saved result that differs from the reference.

    ``inside``: whether your deciding number lies inside the reference verdict's interval (None when
    the verdict has no interval or you have no number)."""

    lesson: str  # result name, e.g. "08_layer_averaging"
    what: str  # the claim, or "claim: number name"
    yours: object
    reference: object
    cause: str  # a key of CAUSES
    detail: dict
    inside: bool | None = None
    number: str = ""  # the deciding number's name when ``what`` is "claim: number name"; "" for a verdict

    @property
    def claim(self) -> str:
        """The claim alone (a claim's own text may hold ": ")."""
        return self.what.removesuffix(f": {self.number}") if self.number else self.what

    def explain(self) -> str:
        """The likely cause in the reader's language."""
        return _(CAUSES[self.cause]).format(**{k: _(str(v)) for k, v in self.detail.items()})


def model_name(model: str) -> str:
    """A model as its records name it: ``"bundled"`` -> ``"all-MiniLM-L6-v2 (bundled)"``; others unchanged."""
    return {short: name for name, short in MODELS.items()}.get(model, model)


def reference_dir(mode: str, model: str = DEFAULT_MODEL) -> Path:
    """The folder of the reference results of ``model`` (its records' name, or ``"bundled"``) in ``mode``
    (``"smoke"`` or ``"full"``); it exists only for the models in :data:`MODELS`."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return HERE / mode / file_stem(model_name(model))


def provenance(mode: str, model: str = DEFAULT_MODEL) -> dict:
    """What the reference run of ``model`` in ``mode`` recorded about itself ({} when none ships)."""
    try:
        return json.loads((reference_dir(mode, model) / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def read_folder(folder: Path | str) -> dict[str, dict]:
    """``{result name: saved record}`` of the compared lessons found in ``folder`` (damaged files are skipped)."""
    found = {}
    for name in COMPARED:
        path = Path(folder) / f"{name}.json"
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(record, dict) and isinstance(record.get("data"), dict):
            found[name] = record
    return found


def verdicts_of(data: object, path: str = "") -> dict[str, dict]:
    """Every saved verdict in a study's data: ``{claim: {"verdict": word, "numbers": {...}}}``."""
    found: dict[str, dict] = {}
    if isinstance(data, dict):
        if isinstance(data.get("claim"), str) and isinstance(data.get("verdict"), str):
            found[data["claim"]] = {"verdict": data["verdict"], "numbers": data.get("numbers") or {}}
            return found
        for key, value in data.items():
            found.update(verdicts_of(value, f"{path}.{key}"))
    elif isinstance(data, list):
        for value in data:
            found.update(verdicts_of(value, path))
    return found


def deciding_numbers(numbers: object, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of a verdict's numbers, by dotted name (intervals give ``name.0``, ``name.1``...)."""
    out: dict[str, float] = {}
    if isinstance(numbers, bool):
        return out
    if isinstance(numbers, (int, float)) or numbers is None:
        out[prefix] = float("nan") if numbers is None else float(numbers)
    elif isinstance(numbers, dict):
        for key, value in numbers.items():
            out.update(deciding_numbers(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(numbers, list) and len(numbers) <= 4:
        for i, value in enumerate(numbers):
            out.update(deciding_numbers(value, f"{prefix}.{i}"))
    return out


def _has_verdict(value: object) -> bool:
    return bool(verdicts_of(value))


def _slim(value: object) -> object:
    """``value`` with only the branches that hold a verdict (a verdict is kept whole)."""
    if isinstance(value, dict) and not (isinstance(value.get("claim"), str) and isinstance(value.get("verdict"), str)):
        return {k: _slim(v) for k, v in value.items() if _has_verdict(v)}
    if isinstance(value, list):
        return [_slim(v) for v in value if _has_verdict(v)]
    return value


def slim(record: dict, *, small: int = SMALL) -> dict:
    """A saved record as a reference ships it: what the run recorded about itself, every verdict with its
    numbers, and the study's small fields (sizes, settings, lesson 12's labels; at most ``small`` characters
    of JSON each), without the large arrays the verdicts were computed from."""
    data = record["data"]
    kept = {k: _slim(v) if _has_verdict(v) else v for k, v in data.items()
            if _has_verdict(v) or len(json.dumps(v)) <= small}
    return {**record, "data": kept}


def reference_verdicts(mode: str, model: str = DEFAULT_MODEL) -> dict[tuple[str, str], str]:
    """``{(lesson, claim): verdict word}`` of the reference run of ``model`` in ``mode``."""
    return {(name, claim): v["verdict"] for name, record in read_folder(reference_dir(mode, model)).items()
            for claim, v in verdicts_of(record["data"]).items()}


def deciding_text(numbers: dict) -> str:
    """A verdict's deciding number as text, e.g. ``"estimate 0.171 [0.0812, 0.262]"`` ("" when none)."""
    d = deciding(numbers)
    if d is None:
        return ""
    text = f"{d.key} {d.estimate:.3g}"
    return text + (f" [{d.low:.3g}, {d.high:.3g}]" if d.has_interval else "")


def conclusions_of(record: dict) -> dict[str, tuple[str, str]]:
    """``{conclusion label: (verdict word, deciding number text)}`` of a saved lesson-12 record."""
    data = record.get("data", {})
    verdicts, labels = data.get("verdicts") or [], data.get("labels") or []
    return {str(label): (v["verdict"], deciding_text(v.get("numbers") or {}))
            for label, v in zip(labels, verdicts)}


def full_conclusions(model: str = DEFAULT_MODEL) -> dict[str, tuple[str, str]]:
    """Lesson 12's conclusions in the full reference of ``model``: ``{label: (verdict word, deciding number
    text)}``, e.g. ``{"1": ("holds", "share 0.91 [0.88, 0.94]"), "3a": ...}``; the one answer the docs give.

    Raises:
        FileNotFoundError: no full reference of lesson 12 ships for ``model``.
    """
    record = read_folder(reference_dir("full", model)).get(CONCLUSIONS)
    if record is None:
        raise FileNotFoundError(f"no full reference of lesson 12 on {model_name(model)} ships with this "
                                "version of attnlab")
    return conclusions_of(record)


def _run_facts(record: dict) -> dict:
    data = record.get("data", {})
    return {"model": f"{record.get('model')} ({record.get('n_layers')} x {record.get('n_heads')})",
            "sample": record.get("sample") or COURSE_SAMPLE,
            "smoke": "smoke mode" if record.get("smoke") else "full mode",
            "precision": record.get("precision"), "device": record.get("device"),
            "sizes": ", ".join(f"{k} {data[k]}" for k in SIZE_KEYS if isinstance(data.get(k), (int, float)))}


def likely_cause(yours: dict, reference: dict, cpu: str = "?") -> tuple[str, dict]:
    """The first setting the two runs recorded differently, in :data:`CAUSE_ORDER`; else ``"cpu"`` (another
    processor's last bits; ``cpu`` names the reference's)."""
    a, b = _run_facts(yours), _run_facts(reference)
    for key in CAUSE_ORDER:
        if a[key] is not None and b[key] is not None and a[key] != b[key]:
            return key, {"yours": a[key], "reference": b[key]}
    return "cpu", {"cpu": cpu}


def _differ(x: float, y: float, rtol: float, atol: float) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) != math.isnan(y)
    return abs(x - y) > atol + rtol * abs(y)


def inside_interval(yours: dict, reference: dict) -> bool | None:
    """Whether the deciding number of ``yours`` (a verdict's numbers) lies in the interval of the
    reference's (its own interval fields); None when the reference has no interval or yours no number."""
    ref, mine = deciding(reference), deciding(yours)
    if ref is None or not ref.has_interval or mine is None or mine.key != ref.key:
        return None
    return ref.low <= mine.estimate <= ref.high


def compare(yours: dict[str, dict], reference: dict[str, dict], *, rtol: float = RTOL,
            atol: float = ATOL, cpu: str = "?") -> list[Difference]:
    """Every verdict and deciding number of ``yours`` that differs from ``reference`` (both from
    :func:`read_folder`); ``cpu`` names the reference's processor."""
    found: list[Difference] = []
    for name in sorted(reference):
        if name not in yours:
            found.append(Difference(name, "", None, None, "missing", {}))
            continue
        cause, detail = likely_cause(yours[name], reference[name], cpu)
        mine, ref = verdicts_of(yours[name]["data"]), verdicts_of(reference[name]["data"])
        for claim, r in ref.items():
            y = mine.get(claim)
            if y is None:
                found.append(Difference(name, claim, None, r["verdict"], cause, detail))
                continue
            inside = inside_interval(y["numbers"], r["numbers"])
            if y["verdict"] != r["verdict"]:
                found.append(Difference(name, claim, y["verdict"], r["verdict"], cause, detail, inside))
            y_numbers, r_numbers = deciding_numbers(y["numbers"]), deciding_numbers(r["numbers"])
            for key, value in r_numbers.items():
                if key in y_numbers and _differ(y_numbers[key], value, rtol, atol):
                    found.append(Difference(name, f"{claim}: {key}", y_numbers[key], value, cause, detail, inside,
                                            number=key))
    return found


def run_mode(records: dict[str, dict]) -> str:
    """``"smoke"`` or ``"full"``: the mode of saved results (else the current run mode)."""
    modes = {bool(r.get("smoke")) for r in records.values()}
    smoke = modes.pop() if len(modes) == 1 else is_smoke()
    return "smoke" if smoke else "full"


def run_model(records: dict[str, dict]) -> str:
    """The model most of the saved results were run on (the offline default when there are none)."""
    counts = Counter(str(r.get("model")) for r in records.values() if r.get("model"))
    return counts.most_common(1)[0][0] if counts else DEFAULT_MODEL


def differences(results: Path | str | None = None, mode: str | None = None, model: str | None = None,
                **tolerances) -> list[Difference]:
    """What differs between a results folder (default: the course's) and the reference of its model and mode.

    Args:
        results: the student's results folder (default :func:`attnlab.course.results.results_dir`).
        mode: ``"smoke"`` or ``"full"``; default: the mode of the student's saved results (else the
            current run mode).
        model: the reference's model; default: the model of the student's saved results.

    Raises:
        FileNotFoundError: no reference of that model and mode ships (its message says which do).
    """
    yours = read_folder(results if results is not None else results_dir())
    mode, model = mode or run_mode(yours), model or run_model(yours)
    reference = read_folder(reference_dir(mode, model))
    if not reference:
        raise FileNotFoundError(no_reference(mode, model))
    return compare(yours, reference, cpu=provenance(mode, model).get("cpu", "?"), **tolerances)


def no_reference(mode: str, model: str) -> str:
    """The sentence saying that no reference of ``model`` in ``mode`` ships, and which ones do."""
    shipped = [f"{name} ({_(f'{m} mode')})" for name in MODELS for m in MODES if read_folder(reference_dir(m, name))]
    return _("No reference results of {model} in {mode} ship with this version of attnlab, so there is nothing "
             "to compare with; references ship for: {shipped}.").format(
        model=model_name(model), mode=_(f"{mode} mode"), shipped=", ".join(shipped) or "-")


def compare_with_reference(results: Path | str | None = None, mode: str | None = None) -> str:
    """:func:`differences` as text for the reader (lesson 12's last cell), also when no reference of
    the model and run mode ships."""
    try:
        return report(differences(results, mode))
    except FileNotFoundError as exc:
        return str(exc)


def report(found: list[Difference]) -> str:
    """The differences as lines in the reader's language, grouped by lesson, each with its likely cause."""
    if not found:
        return _("Your saved results match the reference: the same verdicts and deciding numbers.")
    lines = [_("Differences from the reference results: {n}").format(n=len(found))]
    for lesson in dict.fromkeys(d.lesson for d in found):
        mine = [d for d in found if d.lesson == lesson]
        lines.append(f"{lesson}:")
        for d in mine:
            if d.cause == "missing":
                continue
            what = _(d.claim) + (f": {number_label(d.number)}" if d.number else "")
            if d.yours is None:
                line = _("{what}: not in your results (reference: {reference})").format(
                    what=what, reference=_fmt(d.reference))
            else:
                line = _("{what}: yours {yours}, reference {reference}").format(
                    what=what, yours=_fmt(d.yours), reference=_fmt(d.reference))
            if d.inside is not None:
                line += " " + (_("(inside the reference's interval)") if d.inside
                               else _("(outside the reference's interval)"))
            lines.append("  " + line)
        lines.append("  " + _("likely cause: {cause}").format(cause=mine[0].explain()))
    return "\n".join(lines)


def number_label(name: str) -> str:
    """A deciding number's dotted name (:func:`deciding_numbers`) in the reader's language, part by part:
    ``"cross-tab 08 x 06.fixed.cannot tell"`` -> each part's label, joined by dots again."""
    return ".".join(label(part) for part in name.split("."))


def _fmt(value: object) -> str:
    if isinstance(value, str) and value in WORDS:
        return shown(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
