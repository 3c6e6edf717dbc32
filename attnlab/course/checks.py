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

from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS
from attnlab.core.language import N_, _
from attnlab.core.records import nan_for_none, to_plain
from attnlab.core.streaming import MeanAttention
from attnlab.course.cards import THRESHOLD_KEYS, Decider, card, deciding, numbers_text

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

    @property
    def decider(self) -> Decider | None:
        """The measured number held to a tolerance or bound, when the numbers name one."""
        value_keys = tuple(k for k, v in self.numbers.items() if isinstance(v, float) and k not in THRESHOLD_KEYS)
        return deciding(self.numbers, value_keys=value_keys)

    def what_would_change(self) -> str:
        """One line, in the reader's language, on what a different result would mean."""
        if self.passed:
            return _("A failure would point at a bug or at too few samples, not at a finding about the model.")
        return _("This points at a bug or at too few samples: look at the code behind these numbers, or measure more.")

    def __str__(self) -> str:
        result = _("passed") if self.passed else _("FAILED")
        return _("Check: {what}: {result} ({numbers})").format(what=_(self.what), result=result,
                                                              numbers=numbers_text(self.numbers))

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        """The check as a card in a notebook (see :mod:`attnlab.course.cards`)."""
        return card(kind=_("Check:"), statement=_(self.what), word=_("passed") if self.passed else _("FAILED"),
                    tone="good" if self.passed else "bad", numbers=self.numbers, change=self.what_would_change(),
                    decider=self.decider)


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


#: how far a reduced precision may move one cell of a mean map (lesson 08): a tenth of what a content key
#: gets in a uniform row of the course's 10-token queries
MEAN_MAP_BOUND = 0.01


def mean_map_precision_check(exact: MeanAttention, reduced: MeanAttention, reading: str = CONTENT_KEYS, *,
                             bound: float = MEAN_MAP_BOUND) -> Check:
    """Whether a reduced precision (bf16) gives the mean maps fp32 gives, over the same queries, in one reading.

    ``exact`` and ``reduced``: :class:`~attnlab.core.streaming.MeanAttention` of the same queries at fp32
    and at the reduced precision. ``reading``: ``"all keys"`` (the maps as computed) or ``"content keys"``
    (their :attr:`~attnlab.core.streaming.MeanAttention.content` sums: special keys left out, rows
    renormalised). Passes when no cell of any head's mean map ``[L', H, n, n_keys]`` moves by more than
    ``bound``; the largest move of a head's fixedness (the number lesson 08 labels heads by) is shown beside.
    """
    if reading not in (ALL_KEYS, CONTENT_KEYS):
        raise ValueError(f"reading must be {ALL_KEYS!r} or {CONTENT_KEYS!r}, got {reading!r}")
    if exact.count != reduced.count or exact.total.shape != reduced.total.shape:
        raise ValueError(f"exact ({exact.count} queries, maps {tuple(exact.total.shape)}) and reduced "
                         f"({reduced.count}, {tuple(reduced.total.shape)}) must average the same queries")
    if reading == CONTENT_KEYS:
        if exact.content is None or reduced.content is None:
            raise ValueError("the content-key reading needs accumulators that know their special keys")
        exact, reduced = exact.content, reduced.content
    moved = float((exact.mean - reduced.mean).abs().max())
    fixedness = np.abs(exact.fixedness().numpy() - reduced.fixedness().numpy())  # (L', H), NaN for uniform heads
    return Check.of(N_("the reduced precision moves no cell of a mean map by more than the bound"),
                    passed=moved <= bound, reading=reading, largest_move_of_a_cell=moved, bound=bound,
                    largest_move_of_fixedness=float(np.nanmax(fixedness)) if np.isfinite(fixedness).any()
                    else float("nan"), queries=int(exact.count))
