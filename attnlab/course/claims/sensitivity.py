"""How much a verdict depends on where its thresholds are drawn.

A threshold-based verdict is only as firm as the line it draws. Before
reporting one, a lesson prints the same claim decided at a few thresholds
around the default::

    from attnlab.course.claims.sensitivity import format_rows, sensitivity_rows, summary

    rows = sensitivity_rows(claims.verdict_variance, (d_ks, intervals),
                            {"tolerance": [0.02, 0.05, 0.1, 0.2]},
                            numbers=["worst_relative_error"])
    print(format_rows(rows))
    print(summary(rows))

:func:`sensitivity_rows` calls the claim function once per setting (every
combination of the values given, in order) with the thresholds as keyword
arguments, and returns plain rows: a header first, then one row per setting
with the threshold values, the verdict word and the chosen numbers of the
verdict. :func:`format_rows` turns rows into an aligned plain-text table.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping, Sequence

from attnlab.core.language import _
from attnlab.course.verdicts import WORDS, ClaimVerdict

Row = list[Any]


def sensitivity_rows(claim: Callable[..., ClaimVerdict], evidence: Any,
                     thresholds: Mapping[str, Sequence[float]], *,
                     numbers: Sequence[str] = ()) -> list[Row]:
    """The verdict of ``claim`` at each threshold setting.

    Args:
        claim: a claim function returning a :class:`ClaimVerdict`, e.g.
            :func:`attnlab.course.claims.scaling.verdict_variance`.
        evidence: its positional arguments, as a tuple (a single argument that
            is not a tuple may be passed on its own).
        thresholds: keyword name of a threshold -> the values to try. With
            several names every combination is tried (keep each list short).
        numbers: names of entries of the verdict's ``numbers`` to show beside
            the verdict (floats are rounded to 3 significant digits).

    Returns:
        ``[header, row, ...]``: header ``[*threshold names, "verdict", *numbers]``,
        one row per setting in the order given.
    """
    if not thresholds:
        raise ValueError(_("give at least one threshold to vary, e.g. {example}").format(
            example="{'tolerance': [0.05, 0.1]}"))
    names = list(thresholds)
    for name in names:
        if len(thresholds[name]) == 0:
            raise ValueError(_("threshold {name!r} has no values to try").format(name=name))
    args = evidence if isinstance(evidence, tuple) else (evidence,)
    rows: list[Row] = [names + ["verdict"] + list(numbers)]
    for values in itertools.product(*(thresholds[n] for n in names)):
        v = claim(*args, **dict(zip(names, values)))
        rows.append(list(values) + [v.verdict] + [_short(v.numbers.get(k)) for k in numbers])
    return rows


def verdicts_seen(rows: Sequence[Row]) -> list[str]:
    """The distinct verdict words of a table from :func:`sensitivity_rows`, in order of appearance."""
    column = list(rows[0]).index("verdict")
    seen: list[str] = []
    for row in rows[1:]:
        if row[column] not in seen:
            seen.append(row[column])
    return seen


def summary(rows: Sequence[Row]) -> str:
    """One line, in the current language: whether the verdict is the same at every setting of the table."""
    seen = [_shown(word) for word in verdicts_seen(rows)]
    if len(seen) == 1:
        return _("the verdict is the same at all {n} settings: {verdict}").format(n=len(rows) - 1, verdict=seen[0])
    return _("the verdict depends on the threshold: {verdicts} over {n} settings").format(
        verdicts=", ".join(seen), n=len(rows) - 1)


def format_rows(rows: Sequence[Row]) -> str:
    """Rows as an aligned plain-text table (first column left-aligned, the others right-aligned).

    The verdict column (its header and its words) is shown in the current language.
    """
    column = list(rows[0]).index("verdict") if "verdict" in list(rows[0]) else None
    text = [[_cell(v) for v in row] for row in rows]
    if column is not None:
        text[0][column] = _("verdict")
        for r in text[1:]:
            r[column] = _shown(r[column])
    widths = [max(len(r[c]) for r in text) for c in range(len(text[0]))]
    lines = []
    for r in text:
        cells = [r[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _shown(word: str) -> str:
    """A verdict word as stored (one of :data:`~attnlab.course.verdicts.WORDS`) as printed, in the
    current language: the catalogue translates the stored words themselves."""
    return _(word) if word in WORDS else word


def _short(value: Any) -> Any:
    return float(f"{value:.3g}") if isinstance(value, float) else value


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return "-" if value is None else str(value)
