"""Reference results, and why a student's saved results differ from them.

The package ships the saved results of lessons 05-11 from one run on the
offline default (``multilingual-e5-small``): ``reference/smoke/`` from a smoke
run (``ATTNLAB_SMOKE=1``) and, when it has been produced, ``reference/full/``
from a full run. :func:`differences` compares a results folder (``results/``,
or ``ATTNLAB_RESULTS``) with the reference of the same run mode and lists
every verdict and every deciding number (a verdict's numbers) that differs,
each with the likely cause, read from what the two runs recorded: the model
and its shape, smoke mode, the precision and device, and the sizes (how many
queries, texts or inputs a study used)::

    from attnlab.course import reference
    found = reference.differences()          # [Difference, ...]; [] when everything matches
    print(reference.report(found))           # one line each, in the reader's language

Provenance of ``reference/smoke/``: ``python benchmarks/bench_course.py --smoke`` with
``ATTNLAB_OFFLINE=1`` on 2026-12-04, torch 2.13.0 on a 2-core x86_64 CPU with AVX512-BF16 (so the
lessons' "auto" precision chose bf16; every file records it), ``OMP_NUM_THREADS=1``. Its run times
are ``benchmarks/measured/course_smoke_offline.json``.

A number "differs" when it is more than ``rtol`` (relative) and ``atol``
(absolute) away from the reference's: seeded runs on the same model, mode and
precision repeat to far better than that, while another precision moves
means by about 1e-3.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from attnlab.core.language import N_, _
from attnlab.core.config import is_smoke
from attnlab.course.results import results_dir
from attnlab.course.verdicts import WORDS, shown

HERE = Path(__file__).resolve().parent
MODES = ("smoke", "full")
#: the lessons whose saved results are compared (what lesson 12 reads)
LESSONS = ("05_reading_heatmaps", "06_perturbation", "07_position_embeddings", "08_layer_averaging",
           "09_head_diversity", "10_how_many_heads", "11_pruning_heads")
#: top-level fields of a study that say how much data it used
SIZE_KEYS = ("n_inputs", "n_queries", "n_texts", "n_controls", "n_seeds", "n_sets")
RTOL, ATOL = 0.02, 1e-4

CAUSES = {
    "missing": N_("this lesson's result is not saved: run the lesson (in the same run mode) first"),
    "model": N_("another model ran ({yours}; the reference is {reference}): heads and verdicts belong to "
                "their model"),
    "smoke": N_("your run is in {yours} and the reference in {reference}: smoke mode uses small sizes, "
                "so its intervals are wide (lesson 08 says \"cannot tell\" for every head, lesson 10 cannot "
                "separate head counts)"),
    "precision": N_("your maps were read in {yours} and the reference's in {reference}: bf16 turns itself on "
                    "where the processor has it natively (AVX512-BF16 or AMX, GPUs); "
                    "ATTNLAB_PRECISION={reference} computes like the reference"),
    "device": N_("your run used {yours} and the reference {reference}: other kernels round differently"),
    "sizes": N_("the study used other sizes ({yours}; the reference: {reference})"),
    "unknown": N_("the runs recorded the same model, mode, precision, device and sizes: the numbers moved "
                  "by chance (another library version or thread count); a verdict near its line can flip"),
}


@dataclass(frozen=True)
class Difference:
    """One verdict or deciding number of a lesson's saved result that differs from the reference."""

    lesson: str  # result name, e.g. "08_layer_averaging"
    what: str  # the claim, or "claim: number name"
    yours: object
    reference: object
    cause: str  # a key of CAUSES
    detail: dict

    def explain(self) -> str:
        """The likely cause in the reader's language."""
        return _(CAUSES[self.cause]).format(**{k: _(str(v)) for k, v in self.detail.items()})


def reference_dir(mode: str) -> Path:
    """The folder of the reference results of ``mode`` (``"smoke"`` or ``"full"``)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return HERE / mode


def read_folder(folder: Path | str) -> dict[str, dict]:
    """``{result name: saved record}`` of the compared lessons found in ``folder`` (damaged files are skipped)."""
    found = {}
    for name in LESSONS:
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


def reference_verdicts(mode: str) -> dict[tuple[str, str], str]:
    """``{(lesson, claim): verdict word}`` of the reference run of ``mode``."""
    return {(name, claim): v["verdict"] for name, record in read_folder(reference_dir(mode)).items()
            for claim, v in verdicts_of(record["data"]).items()}


def _run_facts(record: dict) -> dict:
    data = record.get("data", {})
    return {"model": f"{record.get('model')} ({record.get('n_layers')} x {record.get('n_heads')})",
            "smoke": "smoke mode" if record.get("smoke") else "full mode",
            "precision": record.get("precision"), "device": record.get("device"),
            "sizes": ", ".join(f"{k} {data[k]}" for k in SIZE_KEYS if isinstance(data.get(k), (int, float)))}


def likely_cause(yours: dict, reference: dict) -> tuple[str, dict]:
    """The first recorded difference between two runs, in order of how much it moves results."""
    a, b = _run_facts(yours), _run_facts(reference)
    for key in ("model", "smoke", "precision", "device", "sizes"):
        if a[key] is not None and b[key] is not None and a[key] != b[key]:
            return key, {"yours": a[key], "reference": b[key]}
    return "unknown", {}


def _differ(x: float, y: float, rtol: float, atol: float) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) != math.isnan(y)
    return abs(x - y) > atol + rtol * abs(y)


def compare(yours: dict[str, dict], reference: dict[str, dict], *, rtol: float = RTOL,
            atol: float = ATOL) -> list[Difference]:
    """Every verdict and deciding number of ``yours`` that differs from ``reference`` (both from :func:`read_folder`)."""
    found: list[Difference] = []
    for name in sorted(reference):
        if name not in yours:
            found.append(Difference(name, "", None, None, "missing", {}))
            continue
        cause, detail = likely_cause(yours[name], reference[name])
        mine, ref = verdicts_of(yours[name]["data"]), verdicts_of(reference[name]["data"])
        for claim, r in ref.items():
            y = mine.get(claim)
            if y is None:
                found.append(Difference(name, claim, None, r["verdict"], cause, detail))
                continue
            if y["verdict"] != r["verdict"]:
                found.append(Difference(name, claim, y["verdict"], r["verdict"], cause, detail))
            y_numbers, r_numbers = deciding_numbers(y["numbers"]), deciding_numbers(r["numbers"])
            for key, value in r_numbers.items():
                if key in y_numbers and _differ(y_numbers[key], value, rtol, atol):
                    found.append(Difference(name, f"{claim}: {key}", y_numbers[key], value, cause, detail))
    return found


def differences(results: Path | str | None = None, mode: str | None = None, **tolerances) -> list[Difference]:
    """What differs between a results folder (default: the course's) and the reference of its run mode.

    Args:
        results: the student's results folder (default :func:`attnlab.course.results.results_dir`).
        mode: ``"smoke"`` or ``"full"``; default: the mode of the student's saved results (else the
            current run mode).
    """

    yours = read_folder(results if results is not None else results_dir())
    if mode is None:
        modes = {bool(r.get("smoke")) for r in yours.values()}
        smoke = modes.pop() if len(modes) == 1 else is_smoke()
        mode = "smoke" if smoke else "full"
    reference = read_folder(reference_dir(mode))
    if not reference:
        raise FileNotFoundError(f"no reference results of a {mode} run ship with this version of attnlab")
    return compare(yours, reference, **tolerances)


def compare_with_reference(results: Path | str | None = None, mode: str | None = None) -> str:
    """:func:`differences` as text for the reader (lesson 12's last cell), also when no reference of
    the run mode ships (the full run's reference may not be produced yet)."""
    try:
        return report(differences(results, mode))
    except FileNotFoundError:

        wanted = mode or ("smoke" if is_smoke() else "full")
        return _("No reference results of a {mode} run ship with this version of attnlab, so there is nothing "
                 "to compare with: run in smoke mode (ATTNLAB_SMOKE=1) to compare with the smoke reference."
                 ).format(mode=_(f"{wanted} mode"))


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
            claim, _sep, number = d.what.partition(": ")
            what = _(claim) + (f": {number}" if number else "")
            if d.yours is None:
                lines.append("  " + _("{what}: not in your results (reference: {reference})").format(
                    what=what, reference=_fmt(d.reference)))
            else:
                lines.append("  " + _("{what}: yours {yours}, reference {reference}").format(
                    what=what, yours=_fmt(d.yours), reference=_fmt(d.reference)))
        lines.append("  " + _("likely cause: {cause}").format(cause=mine[0].explain()))
    return "\n".join(lines)


def _fmt(value: object) -> str:

    if isinstance(value, str) and value in WORDS:
        return shown(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
