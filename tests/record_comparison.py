"""Comparing two saved lesson records field by field (tests/test_notebooks.py, tests/test_record_builders.py).

A lesson's notebook saves what ``attnlab report`` saves and may save more: the fields a builder fills only
from the lesson's own objects ("lesson only" in :mod:`attnlab.course.record_builders`, left at their default
by the report) and the extra keys of a dictionary (lesson 11's other objectives). :func:`contained` compares
everything the report's record holds with the notebook's; :func:`differences` compares two values whole.
"""

from __future__ import annotations

import dataclasses
import math

from attnlab.core.records import Record, to_plain

ATOL, RTOL = 1e-6, 1e-6


def plain(value: object) -> object:
    """A record or value as it is saved (non-finite numbers as None, as in the saved file)."""
    return to_plain(value)


def differences(a: object, b: object, where: str = "") -> list[str]:
    """Where two saved values differ (floats within ``ATOL`` / ``RTOL``, NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a.keys() ^ b.keys())}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: lengths {len(a)} and {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and (
                (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)):
            return []
        return [f"{where}: {a!r} and {b!r}"]
    return [] if a == b else [f"{where}: {a!r} and {b!r}"]


def within(part: object, whole: object, where: str = "") -> list[str]:
    """Where ``part`` is not found in ``whole``: every key of a dictionary of ``part`` must be in ``whole``'s
    with a value within it (``whole`` may have more keys); anything else is compared by :func:`differences`."""
    if isinstance(part, dict) and isinstance(whole, dict):
        missing = sorted(set(part) - set(whole))
        if missing:
            return [f"{where}: keys {missing} missing"]
        return [d for k in part for d in within(part[k], whole[k], f"{where}.{k}")]
    if isinstance(part, list) and isinstance(whole, list) and len(part) == len(whole):
        return [d for i, (x, y) in enumerate(zip(part, whole)) for d in within(x, y, f"{where}[{i}]")]
    return differences(part, whole, where)


def left_out(record: Record, f: dataclasses.Field) -> bool:
    """Whether ``record`` leaves field ``f`` empty: None, or its default (a lesson-only field)."""
    value = getattr(record, f.name)
    if value is None:
        return True
    if f.default is not dataclasses.MISSING:
        return plain(value) == plain(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return plain(value) == plain(f.default_factory())
    return False


def contained(report: Record, notebook: Record) -> list[str]:
    """Where the notebook's record differs from the report's: every field the report fills (not
    :func:`left_out`) must be :func:`within` the notebook's."""
    if type(report) is not type(notebook):
        return [f": types {type(report).__name__} and {type(notebook).__name__}"]
    return [d for f in dataclasses.fields(report) if not left_out(report, f)
            for d in within(plain(getattr(report, f.name)), plain(getattr(notebook, f.name)), f".{f.name}")]
