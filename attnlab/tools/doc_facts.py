"""Facts the documents state once, read from where they are measured, and the spans that quote them.

:mod:`attnlab.tools.course_numbers` writes these into ``attnlab/core/numbers.json`` (:func:`gather_facts`) and
renders the inline spans that quote them (:func:`render_fact`):

* ``conversion``: how long the first load's conversion of the offline default takes and how large the folder
  it writes is, from ``benchmarks/measured/conversion.json`` (``python benchmarks/bench_conversion.py --json
  FILE``);
* ``reference_facts``: the numbers the teacher's guides quote from lessons 11 and 13 on the offline default,
  read from the full reference that ships in the package (the same records lesson 12 compares a student's run
  with), so the guides agree with what the lessons print;
* ``binder_gb``: the memory Binder gives a session (:data:`attnlab.core.measured.BINDER_GB`).

Inline span names handled here (``<!-- numbers:NAME -->text<!-- /numbers -->``):

* ``interval.PATH``: an estimate with its interval, ``0.77 [0.73, 0.81]``;
* ``estimate.PATH``: an estimate (or a plain number) to two decimals, ``0.77``;
* ``bounds.PATH``: an interval alone, ``[0.73, 0.81]``;
* ``percent.PATH``: a share as a whole percent, ``22%``;
* ``small.PATH``: a small number to two significant digits, ``0.0070``;
* ``minutes.PATH``: seconds as minutes to one decimal, ``49.2``.

``interval``, ``estimate`` and ``bounds`` take a number of decimals after them (``interval3.PATH``: three; two
without). ``PATH`` is a dotted path into the numbers (``reference_facts.13.raw_rho``).
``tests/test_one_answer_per_fact.py`` finds every statement of these facts in the READMEs and ``docs/`` and
checks each against this one source.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.core.measured import BINDER_GB
from attnlab.course.reference import DEFAULT_MODEL, reference_dir

#: the measured conversion of the offline default (``python benchmarks/bench_conversion.py --json FILE``)
CONVERSION = "benchmarks/measured/conversion.json"
#: span prefixes this module renders
DECIMAL_KINDS = ("interval", "estimate", "bounds")
PREFIXES = tuple(f"{kind}{digits}." for kind in DECIMAL_KINDS for digits in ("", "1", "2", "3", "4")) + (
    "percent.", "small.", "minutes.")


def _record(lesson: str) -> dict:
    """The data of lesson ``lesson``'s record in the offline default's full reference ({} when absent)."""
    folder = reference_dir("full", DEFAULT_MODEL)
    found = sorted(folder.glob(f"{lesson}_*.json"))
    if not found:
        return {}
    return json.loads(found[0].read_text(encoding="utf-8"))["data"]


def _interval(value: dict) -> dict:
    """An estimate with its interval, as the records save it (``estimate``, ``low``, ``high``)."""
    return {"estimate": float(value["estimate"]), "low": float(value["low"]), "high": float(value["high"])}


def pruning_facts(data: dict) -> dict:
    """What the guides quote from lesson 11's record: the "costs nothing" tolerance (a share of the mean
    ``1 - cos`` between two texts, and the share of their distance that share is), the heads that go together
    one at a time within it, and the heads removable alone."""
    numbers = data["verdict"]["numbers"]
    agreements = data["objective_agreements"]
    return {"split_half": {name: _interval(value) for name, value in data["split_half"].items()},
            "sentence_vs_token": _interval(agreements["sentence vs token"]),
            "sentence_vs_contrastive": _interval(agreements["sentence vs contrastive"]),
            "importance_vs_removal": data["spearman_importance_ablation"],
            "increase": {"estimate": numbers["loss increase"], "low": numbers["increase low"],
                         "high": numbers["increase high"]},
            "random_median": numbers["random orders, median increase"],
            "advantage": {"estimate": numbers["advantage over random"], "low": numbers["advantage low"],
                          "high": numbers["advantage high"]},
            "survivors": dict(data["survivor_overlap"]), "survivors_chance": data["overlap_chance"],
            "tolerance_share": numbers["allowed, share of that 1 - cos"],
            "distance_share": numbers["allowed, share of the distance between the unit vectors"],
            "tolerance": numbers["allowed increase"],
            "between_texts": numbers["distance between two texts"],
            "prunable_together": numbers["prunable together (importance order, one head at a time)"],
            "removable_alone": numbers["removable alone"]}


def limits_facts(data: dict) -> dict:
    """What the guides quote from lesson 13's record: each view's Spearman rho against the reference that
    keeps positions (and against deletion), the heads replaced together within the tolerance, the orders
    it is compared with, and the tolerance itself."""
    verdicts = data["verdicts"]
    together = verdicts["heads_replaceable_together"]["numbers"]
    order = verdicts["fixed_order_beats_random"]["numbers"]
    views = ("knockout", "raw", "norm", "value_zeroing", "rollout")
    facts = {f"{view}_rho": _interval(data["view_rho"][view]) for view in views}
    facts.update({f"{view}_rho_deleted": _interval(data["view_rho_deleted"][view]) for view in views})
    facts.update(scored_queries=data["scored_queries"], together=_interval(data["together_replaceable"]),
                 tolerance=float(data["together_tolerance"]), tolerance_share=together["tolerance_share"],
                 random_low=min(together["random_fractions"]), random_high=max(together["random_fractions"]),
                 reverse=max(together["reverse_fraction"]), all_replaced_cost=together["all_replaced_cost"],
                 between_texts=float(data["together_tolerance"]) / together["tolerance_share"],
                 order_difference={"estimate": order["difference"], "low": order["low"], "high": order["high"]})
    for claim, key in (("norm_beats_raw", "minus_raw"), ("rollout_beats_raw", "minus_raw"),
                       ("value_zeroing_best", "minus_raw"), ("value_zeroing_best", "minus_norm"),
                       ("value_zeroing_best", "minus_rollout")):
        estimate, low, high = verdicts[claim]["numbers"][key]  # paired difference of rho, its interval
        facts[f"{claim}_{key}"] = {"estimate": estimate, "low": low, "high": high}
    facts["all_replaced_share"] = facts["all_replaced_cost"] / facts["between_texts"]
    return facts


def reference_facts() -> dict:
    """lesson -> the numbers the guides quote from its record in the offline default's full reference."""
    found = {}
    pruning, limits = _record("11"), _record("13")
    if pruning:
        found["11"] = pruning_facts(pruning)
    if limits:
        found["13"] = limits_facts(limits)
    return found


def conversion(root: Path) -> dict:
    """The measured first conversion of the offline default ({} until it is measured)."""
    path = root / CONVERSION
    if not path.is_file():
        return {}
    run = json.loads(path.read_text(encoding="utf-8"))
    seconds = float(run["seconds"])
    return {"seconds_s": max(1, int(round(seconds))),  # "about N s": whole seconds
            "folder_mb": int(round(run["folder_mb"])), "machine": run["machine"], "date": run["date"],
            "file": CONVERSION}


def gather_facts(root: Path) -> dict:
    """The entries this module adds to ``numbers.json``."""
    return {"conversion": conversion(root), "reference_facts": reference_facts(), "binder_gb": BINDER_GB}


def value_at(numbers: dict, path: str):
    """The entry of the numbers at a dotted path (``lessons.11.offline_peaks_peak_mb``)."""
    value: object = numbers
    for key in path.split("."):
        value = value[key]  # type: ignore[index]
    return value


def _fixed(x: float, digits: int = 2) -> str:
    text = f"{x:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text


def render_fact(name: str, numbers: dict, lang: str) -> str:
    """The text of an inline span whose name starts with one of :data:`PREFIXES`."""
    kind, path = name.split(".", 1)
    value = value_at(numbers, path)
    digits = int(kind[-1]) if kind[-1].isdigit() else 2
    if kind.startswith("interval"):
        return (f"{_fixed(value['estimate'], digits)} [{_fixed(value['low'], digits)}, "
                f"{_fixed(value['high'], digits)}]")
    if kind.startswith("bounds"):
        return f"[{_fixed(value['low'], digits)}, {_fixed(value['high'], digits)}]"
    if kind.startswith("estimate"):
        return _fixed(value["estimate"] if isinstance(value, dict) else value, digits)
    if kind == "percent":
        return f"{round(100 * value)}%"
    if kind == "small":
        return f"{value:.2g}" if value >= 0.01 else f"{value:.4f}"
    if kind == "minutes":
        return f"{value / 60:.1f}"
    raise ValueError(f"unknown span {name!r}")
