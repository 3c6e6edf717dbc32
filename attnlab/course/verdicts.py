"""Computed verdicts on the source article's claims.

Every lesson ends with verdicts of one form: the claim, one of three words,
and the numbers that decided it. The words are computed from the run, never
typed in: ``"holds"``, ``"does not hold"`` or ``"cannot tell"`` (the data
cannot separate the two, e.g. differences within the noise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

HOLDS = "holds"
FAILS = "does not hold"
UNSURE = "cannot tell"
WORDS = (HOLDS, FAILS, UNSURE)


@dataclass
class ClaimVerdict:
    """A computed verdict: ``claim``, ``verdict`` (one of :data:`WORDS`) and ``numbers``."""

    claim: str
    verdict: str
    numbers: dict

    def __post_init__(self) -> None:
        if self.verdict not in WORDS:
            raise ValueError(f"verdict must be one of {WORDS}, got {self.verdict!r}")

    def __str__(self) -> str:
        nums = ", ".join(f"{k} = {_fmt(v)}" for k, v in self.numbers.items())
        return f"Claim: {self.claim}\nVerdict for this model: {self.verdict.upper()} ({nums})"

    def __repr__(self) -> str:
        return str(self)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def from_tests(holds: bool, fails: bool) -> str:
    """``"holds"`` if ``holds``, else ``"does not hold"`` if ``fails``, else ``"cannot tell"``."""
    return HOLDS if holds else (FAILS if fails else UNSURE)


def combine(parts: Iterable[str]) -> str:
    """Verdict of a claim made of parts that must all hold: any part that does not
    hold sinks it; otherwise any "cannot tell" makes the whole "cannot tell"."""
    parts = list(parts)
    if any(p == FAILS for p in parts):
        return FAILS
    if parts and all(p == HOLDS for p in parts):
        return HOLDS
    return UNSURE
