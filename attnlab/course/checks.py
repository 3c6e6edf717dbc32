"""Checks of code and of mathematics: printed as checks, never as verdicts.

A :class:`~attnlab.course.verdicts.ClaimVerdict` is a claim about the data
that could come out either way. A theorem (``var(q . k) = d_k`` for random
unit-variance vectors) cannot: a measurement of it can only agree with it or
be too noisy. Such a measurement is a :class:`Check`: what was checked,
whether it passed, the measured numbers and the tolerance they were held to::

    from attnlab.course.checks import Check

    c = Check.of("var(q . k) is d_k within the tolerance", passed=err <= 0.1,
                 worst_relative_error=err, tolerance=0.1)
    print(c)   # Check: var(q . k) is d_k within the tolerance: passed (worst_relative_error = ..., ...)

``what`` is a constant string (translated when shown); numbers go in
``numbers``. A check that fails points at a bug or at too few samples, not at
a finding about the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnlab.core.language import N_, _, translated
from attnlab.core.records import nan_for_none, to_plain

PASSED = N_("passed")  # marked: a threshold table shows these words translated
FAILED = N_("failed")


@dataclass
class Check:
    """``what`` was checked, whether it ``passed``, and the ``numbers`` measured (tolerances included)."""

    what: str
    passed: bool
    numbers: dict = field(default_factory=dict)

    @classmethod
    def of(cls, what: str, *, passed: bool, **numbers) -> "Check":
        """The one way to build a check: the test computed from the measurement, and its numbers."""
        return cls(what, bool(passed), numbers)

    @property
    def verdict(self) -> str:
        """``"passed"`` or ``"failed"`` (so a check can fill a threshold table like a verdict)."""
        return PASSED if self.passed else FAILED

    def to_record(self) -> dict:
        return {"check": self.what, "passed": self.passed, "numbers": to_plain(self.numbers)}

    @classmethod
    def from_record(cls, data: dict) -> "Check":
        return cls(str(data["check"]), bool(data["passed"]), nan_for_none(dict(data.get("numbers", {}))))

    def __str__(self) -> str:
        nums = _(", ").join(f"{translated(k)} = {_fmt(v)}" for k, v in self.numbers.items())  # names shown translated
        result = _("passed") if self.passed else _("FAILED")
        return _("Check: {what}: {result} ({numbers})").format(what=_(self.what), result=result, numbers=nums)

    def __repr__(self) -> str:
        return str(self)


#: how far a reduced precision may move a head's mean similarity over the checked queries (lessons 06
#: and 07): a tenth of the change threshold that labels a head
PRECISION_BOUND = 0.01
#: queries measured a second time at fp32 for :func:`precision_check`
PRECISION_CHECK_QUERIES = 32


#: what a lesson computed at the chosen precision, as :func:`precision_note` says it
PRECISION_SUBJECTS = {"maps": N_("maps computed in {precision}"),
                      "ablations": N_("heads' removals measured in {precision}")}


def precision_note(precision: str, what: str = "maps") -> str:
    """One line saying at which precision a lesson computed ``what`` (a key of :data:`PRECISION_SUBJECTS`),
    and why (in the reader's language)."""
    why = _("(native bfloat16 here)") if precision == "bf16" else _("(exact: no native bfloat16 here)")
    return _(PRECISION_SUBJECTS[what]).format(precision=precision) + " " + why


def precision_check(exact: np.ndarray, reduced: np.ndarray, *, bound: float = PRECISION_BOUND) -> Check:
    """Whether a reduced precision (bf16) measures what fp32 does, on the same first queries.

    ``exact`` and ``reduced``: ``(N, ...)``, one measure per query (e.g. ``(N, L, H)``
    similarities; NaN where a query was skipped) at fp32 and at the reduced precision. Passes
    when no entry's mean over the queries moves by more than ``bound``; the largest single
    query's move is shown beside it."""
    exact, reduced = np.asarray(exact, dtype=float), np.asarray(reduced, dtype=float)
    if exact.shape != reduced.shape:
        raise ValueError(f"exact {exact.shape} and reduced {reduced.shape} must measure the same queries")
    moved = float(np.nanmax(np.abs(np.nanmean(exact, axis=0) - np.nanmean(reduced, axis=0))))
    worst = float(np.nanmax(np.abs(exact - reduced)))
    return Check.of(N_("the reduced precision moves no mean over the checked queries by more than the bound"),
                    passed=moved <= bound, largest_move_of_a_mean=moved, bound=bound,
                    largest_move_of_one_query=worst, queries=int(exact.shape[0]))


#: for single-head effects measured at a reduced precision: :func:`precision_check`'s bound as a share
#: of the spread (interquartile range) of the heads' mean effects, so that a head can move at most a
#: quarter of the way between the middle heads
ABLATION_PRECISION_SHARE = 0.25
#: how many of layer 1's heads a lesson measures once more in fp32 to check a reduced precision (their
#: change crosses every layer, so they collect the most rounding)
ABLATION_CHECK_HEADS = 4


def ablation_precision_bound(effects: np.ndarray) -> float:
    """:func:`precision_check`'s bound for single-head effects ``(N, L, H)`` (one per text and head):
    :data:`ABLATION_PRECISION_SHARE` of the interquartile range of the heads' means over the texts."""
    means = np.nanmean(np.asarray(effects, dtype=float), axis=0).ravel()  # (L * H,)
    low, high = np.nanpercentile(means, [25, 75])
    return float(ABLATION_PRECISION_SHARE * (high - low))


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, str):
        return translated(v)
    return str(v)
