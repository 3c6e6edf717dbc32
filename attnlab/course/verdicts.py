"""Computed verdicts on the source article's claims: one type, built one way.

Every claim of the course ends in a :class:`ClaimVerdict`: the claim, one of
three words, and the numbers that decided it. The words are computed from
the run, never typed in:

* ``"holds"``: the data support the claim beyond its noise (an interval on
  the right side of the threshold, a permutation test passed);
* ``"does not hold"``: the data support the opposite;
* ``"cannot tell"``: neither, e.g. an interval that straddles the threshold,
  or evidence that is missing.

Build one with :meth:`ClaimVerdict.decide` (or :meth:`ClaimVerdict.missing`).
Checks of the code or of mathematics (rows sum to 1) are not verdicts.

Records keep the English words; what is printed is in the reader's language
(``al.set_language("zh")``: 成立 / 不成立 / 无法判断, and the claim translated
from the catalogue).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from attnlab.analysis.stats import Interval
from attnlab.core.language import _
from attnlab.core.records import nan_for_none, to_plain
from attnlab.course.cards import (
    DECIDED_ON,
    TWIN_NUMBER,
    TWIN_SAYS,
    TWIN_VERDICT,
    Decider,
    card,
    deciding,
    numbers_text,
    value_text,
)
from attnlab.course.cards import label as label_of

HOLDS = "holds"
FAILS = "does not hold"
UNSURE = "cannot tell"
WORDS = (HOLDS, FAILS, UNSURE)

#: the key of a verdict's numbers that says which kind of reason a "cannot tell" has, when it is not
#: the data's own (an interval across a line, or a ``why`` the judge gave)
BECAUSE = "because"
#: ... the evidence is missing (``numbers["missing"]`` says what to run): more evidence decides
BECAUSE_MISSING = "missing"
#: ... an untrained model gives as much (``numbers["why"]`` gives both numbers): more data on this
#: model does not turn it into "holds"
BECAUSE_TWIN = "twin"
#: ... a counted number lies within the claim's floor of its line (``numbers["why"]`` says so): it is
#: not an estimate, so more data of the same kind does not move it
BECAUSE_SETTLED = "settled"


def from_tests(holds: bool, fails: bool) -> str:
    """The verdict word: ``"holds"`` if ``holds``, else ``"does not hold"`` if ``fails``, else ``"cannot tell"``."""
    if holds and fails:
        raise ValueError("a claim cannot both hold and fail: the two tests overlap")
    return HOLDS if holds else (FAILS if fails else UNSURE)


def shown(verdict: str) -> str:
    """The verdict word as printed, in the current language: ``"HOLDS"`` or ``"成立"`` and so on."""
    labels = {HOLDS: _("HOLDS"), FAILS: _("DOES NOT HOLD"), UNSURE: _("CANNOT TELL")}
    if verdict not in labels:
        raise ValueError(f"verdict must be one of {WORDS}, got {verdict!r}")
    return labels[verdict]


def word_from(text: str) -> str:
    """The verdict word (one of :data:`WORDS`) that ``text`` names: an English word in any case,
    or the word as :func:`shown` prints it in the current language; else ``text`` unchanged."""
    cleaned = text.strip()
    for word in WORDS:
        if cleaned.lower() == word or cleaned == shown(word) or cleaned.lower() == shown(word).lower():
            return word
    return text


def combine(parts: Iterable[str]) -> str:
    """Verdict of a claim made of parts that must all hold: any part that does not
    hold sinks it; otherwise any "cannot tell" makes the whole "cannot tell"."""
    parts = list(parts)
    for p in parts:
        if p not in WORDS:
            raise ValueError(f"verdict must be one of {WORDS}, got {p!r}")
    if any(p == FAILS for p in parts):
        return FAILS
    if parts and all(p == HOLDS for p in parts):
        return HOLDS
    return UNSURE


@dataclass
class ClaimVerdict:
    """A computed verdict: ``claim``, ``verdict`` (one of :data:`WORDS`) and the ``numbers`` behind it."""

    claim: str
    verdict: str
    numbers: dict = field(default_factory=dict)
    #: the deciding number's bootstrap intervals with their resamples, in memory only (never in a
    #: record): one for a verdict on one model, one per shuffle seed for a pooled untrained twin, so
    #: that the twin control can difference them on the same resampled texts
    #: (:func:`attnlab.analysis.stats.paired_difference`)
    resampled: tuple = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.verdict not in WORDS:
            raise ValueError(f"verdict must be one of {WORDS}, got {self.verdict!r}")

    @classmethod
    def decide(cls, claim: str, *, holds: bool, fails: bool, decided_on: str | None = None,
               resampled: "Interval | None" = None, **numbers) -> "ClaimVerdict":
        """The one way to build a verdict: two tests computed from the data, and their numbers.

        ``holds`` and ``fails`` must not both be true; when neither is, the
        verdict is ``"cannot tell"``. ``decided_on`` names the deciding number among ``numbers``
        (its ends ``"<name> low"`` / ``"<name> high"``); a verdict with ``estimate``, ``low`` and
        ``high`` is decided on ``"estimate"`` unless it says otherwise. ``resampled``: the deciding
        number's bootstrap interval, when it kept its resamples (:attr:`resampled`).
        """
        if decided_on is None and all(k in numbers for k in ("estimate", "low", "high")):
            decided_on = "estimate"
        if decided_on is not None:
            if decided_on not in numbers:
                raise ValueError(f"the deciding number {decided_on!r} is not among the verdict's numbers")
            numbers = {DECIDED_ON: decided_on, **numbers}
        kept = (resampled,) if resampled is not None and resampled.samples is not None else ()
        return cls(claim, from_tests(bool(holds), bool(fails)), numbers, resampled=kept)

    @classmethod
    def missing(cls, claim: str, why: str) -> "ClaimVerdict":
        """``"cannot tell"`` because the evidence is not there (``why`` says what is missing)."""
        return cls(claim, UNSURE, {"missing": why})

    @property
    def holds(self) -> bool:
        return self.verdict == HOLDS

    @property
    def shown_word(self) -> str:
        """The verdict word as printed in the reader's language ("HOLDS", "成立", ...)."""
        return shown(self.verdict)

    @property
    def shown_claim(self) -> str:
        """The claim in the reader's language (as written when the catalogue has no translation)."""
        return _(self.claim)

    def to_record(self) -> dict:
        return {"claim": self.claim, "verdict": self.verdict, "numbers": to_plain(self.numbers)}

    @classmethod
    def from_record(cls, data: dict) -> "ClaimVerdict":
        return cls(str(data["claim"]), str(data["verdict"]), nan_for_none(dict(data.get("numbers", {}))))

    @property
    def decider(self) -> Decider | None:
        """The number that decided the verdict, with its interval and threshold(s), when the numbers name one."""
        return deciding(self.numbers)

    @property
    def because(self) -> str | None:
        """The kind of reason a "cannot tell" has: :data:`BECAUSE_MISSING` (the evidence is missing),
        :data:`BECAUSE_TWIN` (an untrained model gives as much), :data:`BECAUSE_SETTLED` (a count within
        the floor of its line), ``"why"`` (the judge said why the data cannot decide), ``"interval"`` (the interval reaches a line); None for another word."""
        if self.verdict != UNSURE:
            return None
        said = self.numbers.get(BECAUSE)
        if said in (BECAUSE_MISSING, BECAUSE_TWIN, BECAUSE_SETTLED):
            return said
        if "missing" in self.numbers:
            return BECAUSE_MISSING
        return "why" if "why" in self.numbers else "interval"

    def reason(self) -> str:
        """Why the verdict "cannot tell", in one line of the reader's language (empty for another word):
        the evidence is missing (and what to run), an untrained model gives as much (with both numbers),
        the judge's own reason, or the interval that reaches a line."""
        kind = self.because
        if kind is None:
            return ""
        if kind == BECAUSE_MISSING:
            return _("The evidence is missing: {what}").format(what=value_text(self.numbers.get("missing", "")))
        if kind == BECAUSE_TWIN:
            return value_text(self.numbers.get("why", ""))  # the twin's sentence says it: "an untrained model gives ..."
        if kind in ("why", BECAUSE_SETTLED):
            return _("The data cannot decide: {why}").format(why=value_text(self.numbers["why"]))
        d = self.decider
        near = d.nearest() if d is not None else None
        if near is None:
            return _("The numbers do not decide: the details show them.")
        return _("The interval [{low}, {high}] reaches the line at {threshold}.").format(
            low=f"{d.low:.3g}", high=f"{d.high:.3g}", threshold=f"{near[1]:.3g}")

    def what_would_change(self) -> str:
        """One line, in the reader's language, on what would change this verdict. "It waits for evidence"
        only where more evidence could decide (a missing lesson or twin, too few units); never for a
        "cannot tell" that an untrained model's equal number gives."""
        kind = self.because
        if kind == BECAUSE_TWIN:
            return _("It would hold only if the model's number beat the untrained twin's by the claim's floor; "
                     "more data on this model alone does not change that an untrained model gives as much.")
        if kind == BECAUSE_SETTLED:
            return _("More data of the same kind would not decide it: the number is counted, not estimated, and "
                     "lies within the claim's floor of its line.")
        if kind in (BECAUSE_MISSING, "why"):
            why = self.numbers.get("missing", self.numbers.get("why"))
            return _("It waits for evidence: {why}").format(why=value_text(why))
        d = self.decider
        near = d.nearest() if d is not None else None
        if near is None:
            return {HOLDS: _("It would change if its tests came out the other way on more data or on another "
                             "model; the details show the numbers they used."),
                    FAILS: _("It would change if its tests came out the other way on more data or on another "
                             "model; the details show the numbers they used."),
                    UNSURE: _("More queries, texts or seeds could narrow the numbers enough to decide; "
                              "the details show them.")}[self.verdict]
        values = {"low": f"{d.low:.3g}", "high": f"{d.high:.3g}", "threshold": f"{near[1]:.3g}"}
        if not d.has_interval:
            return _("It would change if {what} ({value}) moved to the other side of {threshold}.").format(
                what=label_of(d.key), value=f"{d.estimate:.3g}", threshold=values["threshold"])
        return {HOLDS: _("It would no longer hold if more data moved the interval [{low}, {high}] across {threshold}."),
                FAILS: _("It would change if more data moved the interval [{low}, {high}] back across {threshold}."),
                UNSURE: _("The interval [{low}, {high}] reaches {threshold} or another threshold: more queries, "
                          "texts or seeds would narrow it until it falls on one side.")}[self.verdict].format(**values)

    def __str__(self) -> str:
        return _("Claim: {claim}\nVerdict for this model: {verdict} ({numbers})").format(
            claim=_(self.claim), verdict=shown(self.verdict), numbers=numbers_text(self.numbers))

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        """The verdict as a card in a notebook (see :mod:`attnlab.course.cards`)."""
        tone = {HOLDS: "good", FAILS: "bad", UNSURE: "unsure"}[self.verdict]
        twin_word = self.numbers.get(TWIN_VERDICT)
        twin = (_("untrained twin: {word} {number}").format(word=shown(twin_word),
                                                            number=self.numbers.get(TWIN_NUMBER, ""))
                if twin_word in WORDS else "")
        if twin and self.numbers.get(TWIN_SAYS):
            twin = _("{first}; {second}").format(first=twin, second=value_text(self.numbers[TWIN_SAYS]))
        return card(kind=_("Claim:"), statement=self.shown_claim, word=self.shown_word, tone=tone,
                    numbers=self.numbers, change=self.what_would_change(), decider=self.decider, twin=twin,
                    reason=self.reason())
