"""How much a verdict depends on where its thresholds are drawn.

A threshold-based verdict is only as firm as the line it draws. Before
reporting one, a lesson prints the same claim decided at a few thresholds
around the default::

    from attnlab.course.claims.sensitivity import format_rows, sensitivity_rows, summary

    rows = sensitivity_rows(claims.verdict_few_heads_change, study,
                            {"threshold": [0.05, 0.1, 0.2]},
                            numbers=["share_changing_lexical"])
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

from attnlab.analysis.stats import measurements_reused
from attnlab.core.display_width import display_width, pad_left, pad_right
from attnlab.core.language import _, translated
from attnlab.course.verdicts import WORDS, ClaimVerdict, shown

Row = list[Any]


def sensitivity_rows(claim: Callable[..., ClaimVerdict], evidence: Any,
                     thresholds: Mapping[str, Sequence[float]], *,
                     numbers: Sequence[str] = ()) -> list[Row]:
    """The verdict of ``claim`` at each threshold setting.

    Args:
        claim: a claim function returning a :class:`ClaimVerdict`, e.g.
            :func:`attnlab.course.claims.perturbation.verdict_few_heads_change`
            (a :class:`~attnlab.course.checks.Check` fills a table the same way).
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
        raise ValueError("give at least one threshold to vary, e.g. {'tolerance': [0.05, 0.1]}")
    names = list(thresholds)
    for name in names:
        if len(thresholds[name]) == 0:
            raise ValueError(f"threshold {name!r} has no values to try")
    args = evidence if isinstance(evidence, tuple) else (evidence,)
    rows: list[Row] = [names + ["verdict"] + list(numbers)]
    with measurements_reused():  # the thresholds change, the intervals measured on the evidence do not
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
    """One line: whether the verdict is the same at every setting of the table."""
    seen = verdicts_seen(rows)
    if len(seen) == 1:
        return _("the verdict is the same at all {n} settings: {word}").format(n=len(rows) - 1, word=_word(seen[0]))
    return _("the verdict depends on the threshold: {words} over {n} settings").format(
        words=", ".join(_word(w) for w in seen), n=len(rows) - 1)


def format_rows(rows: Sequence[Row]) -> str:
    """Rows as an aligned plain-text table (first column left-aligned, the others right-aligned);
    the verdict column and the header's words in the reader's language."""
    text = [[_cell(v) for v in row] for row in rows]
    if text:
        text[0] = [translated(v) for v in text[0]]  # a header word the catalogue has is shown translated
    if rows and "verdict" in list(rows[0]):
        column = list(rows[0]).index("verdict")
        text[0][column] = _("verdict")
        for r in text[1:]:
            r[column] = _word(r[column])
    widths = [max(display_width(r[c]) for r in text) for c in range(len(text[0]))]  # columns, CJK counts 2
    lines = []
    for r in text:
        cells = [pad_right(r[0], widths[0])] + [pad_left(v, w) for v, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _word(word: str) -> str:
    """A table's verdict word as printed in the current language: a verdict (one of
    :data:`~attnlab.course.verdicts.WORDS`) through :func:`~attnlab.course.verdicts.shown`, a check's
    "passed" / "failed" through the catalogue."""
    return shown(word).lower() if word in WORDS else _(word)


def _short(value: Any) -> Any:
    return float(f"{value:.3g}") if isinstance(value, float) else value


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return "-" if value is None else str(value)
