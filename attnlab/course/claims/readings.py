"""Which reading of the attention rows a verdict is decided on, and the other shown beside it.

Two readings of every attention-pattern measure (:data:`attnlab.core.distributions.KEY_READINGS`):

* **all keys**: the rows as the model computed them, weight on [CLS]/[SEP], ``<s>``/``</s>``
  included. Most heads of a trained encoder rest much of every row on one of them (a sink,
  lesson 13), the same for every text, so this reading counts that weight as "pattern".
* **content keys**: the rows with the special tokens' columns left out and renormalised. It
  answers the article's question: does the part of the row that reads the text follow a fixed
  pattern, or the content?

A verdict decided on one reading puts, among its numbers, ``"reading"`` (the one used),
``"why this reading"`` and the other reading's decision and estimate
(:func:`with_other_reading`), so every printed verdict says which it used and shows the other.
"""

from __future__ import annotations

from typing import Callable

from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS, KEY_READINGS
from attnlab.core.language import N_
from attnlab.course.verdicts import ClaimVerdict

#: why each reading decides where it does (shown in a verdict's numbers; marked for the catalogue)
WHY = {
    CONTENT_KEYS: N_("the article asks whether the part of a row that reads the text follows a fixed pattern; "
                     "weight on special tokens is the same for every text and would count as pattern"),
    ALL_KEYS: N_("the article's own picture: the maps as the model computed them, special tokens included"),
}
#: keys of the numbers added by :func:`with_other_reading`
READING = N_("reading")
WHY_READING = N_("why this reading")
#: the other reading's numbers shown beside a verdict (marked for the catalogue)
BESIDE = {
    ALL_KEYS: {"verdict": N_("all keys: verdict"), "estimate": N_("all keys: estimate"),
               "low": N_("all keys: low"), "high": N_("all keys: high")},
    CONTENT_KEYS: {"verdict": N_("content keys: verdict"), "estimate": N_("content keys: estimate"),
                   "low": N_("content keys: low"), "high": N_("content keys: high")},
}


def other(reading: str) -> str:
    """The other reading of :data:`~attnlab.core.distributions.KEY_READINGS`."""
    if reading not in KEY_READINGS:
        raise ValueError(f"reading must be one of {KEY_READINGS}, got {reading!r}")
    return CONTENT_KEYS if reading == ALL_KEYS else ALL_KEYS


def with_other_reading(decided: ClaimVerdict, reading: str, beside: ClaimVerdict | None) -> ClaimVerdict:
    """``decided`` (a verdict on ``reading``) with the reading named, why, and ``beside`` (the same
    claim on the other reading: its word and estimate) among its numbers. The word is
    ``decided``'s: the other reading is shown, never decides."""
    numbers = {READING: reading, WHY_READING: WHY[reading], **decided.numbers}
    keys = BESIDE[other(reading)]
    if beside is None:
        numbers[keys["verdict"]] = N_("not measured")
    else:
        numbers[keys["verdict"]] = beside.verdict
        for key in ("estimate", "low", "high"):
            if key in beside.numbers:
                numbers[keys[key]] = beside.numbers[key]
    return ClaimVerdict(decided.claim, decided.verdict, numbers)


def on_both(decide: Callable[[object], ClaimVerdict], first, second, reading: str) -> ClaimVerdict:
    """``decide(first)`` as the verdict on ``reading``, with ``decide(second)`` (the other reading's
    data, or None) shown beside it."""
    return with_other_reading(decide(first), reading, decide(second) if second is not None else None)
