"""A claim about what training produced, held against the same measurement on an untrained twin.

A verdict of lesson 12 says something about what the model *learned* only when a model that
learned nothing (:func:`attnlab.core.twins.untrained_twin`: the weights shuffled within each
tensor, the scale kept) does not give it too. :func:`against_twin` applies that control to one
verdict:

* the claim is not about the model under test (5a/5b: lesson 10 trains its own small models):
  the verdict stands, and says so;
* the data's verdict is "cannot tell": it stays "cannot tell";
* the twin reaches the **same** verdict: "cannot tell", because an untrained model gives the same;
* otherwise the verdict stands only when the model's deciding number is beyond the twin's by the
  claim's **floor** (its ``numbers["floor"]``, in the deciding number's units), on the side of the
  verdict (:data:`TOWARD_HOLDS`), with an interval for ``model - twin`` that counts the noise of
  both runs (the two intervals' half-widths added in quadrature, each side on its own); else "cannot
  tell".

The twin's verdict, its deciding number and the difference are added to the verdict's numbers,
so every card shows them beside the model's.
"""

from __future__ import annotations

import math

from attnlab.analysis.stats import Interval
from attnlab.core.language import N_
from attnlab.course.cards import TWIN_NUMBER, TWIN_VERDICT
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, ClaimVerdict

#: rows whose claim is not about the model under test (lesson 10 trains its own small models)
NOT_ABOUT_THE_MODEL = ("5a", "5b")
#: which way the deciding number moves toward "holds": +1 larger, -1 smaller, 0 either way
#: (a two-sided rule such as "within a margin": the difference must then clear the floor either way)
TOWARD_HOLDS = {"1": +1, "2": -1, "3a": +1, "3b": +1, "4a": -1, "4b": +1, "6a": -1, "6b": -1}

DIFFERENCE = N_("model minus untrained twin")
TWIN_NAME = N_("untrained twin")
FLOOR = N_("floor")
SAME = N_("an untrained model gives the same: the twin with its weights shuffled within each tensor reaches "
          "this verdict too, so it says nothing about what training produced")
NOT_BEYOND = N_("not beyond the untrained twin by the floor: the model's number minus the twin's, "
                "{difference}, does not clear {floor} on the side of its verdict")
NOT_ABOUT = N_("not about this model: lesson 10 trains its own small models, so no untrained twin applies")
NO_TWIN = N_("not measured: this verdict is not checked against an untrained model")


def deciding_interval(verdict: ClaimVerdict) -> Interval | None:
    """The verdict's deciding number and interval (:attr:`ClaimVerdict.decider`), or None when it has none."""
    d = verdict.decider
    if d is None or not all(math.isfinite(x) for x in (d.estimate, d.low, d.high)):
        return None
    return Interval(d.estimate, d.low, d.high, 0.95, 0)


def difference(model: Interval, twin: Interval) -> Interval:
    """``model - twin`` with an interval that counts both runs' noise: each side's half-width is the
    quadrature sum of the model's half-width on that side and the twin's on the opposite side."""
    estimate = model.estimate - twin.estimate
    below = math.hypot(model.estimate - model.low, twin.high - twin.estimate)
    above = math.hypot(model.high - model.estimate, twin.estimate - twin.low)
    return Interval(estimate, estimate - below, estimate + above, 0.95, 0)


def beyond(diff: Interval, verdict: str, direction: int, floor: float) -> bool:
    """Whether ``diff`` (model minus twin) clears ``floor`` on the side of ``verdict``."""
    clears_up, clears_down = diff.low > floor, diff.high < -floor
    if direction == 0:
        return clears_up or clears_down
    toward = clears_up if direction > 0 else clears_down
    away = clears_down if direction > 0 else clears_up
    return toward if verdict == HOLDS else away


def _interval_text(x: Interval) -> str:
    return f"{x.estimate:+.3g} [{x.low:+.3g}, {x.high:+.3g}]"


def against_twin(label: str, model: ClaimVerdict, twin: ClaimVerdict | None, *,
                 twin_name: str = "", direction: int | None = None, floor: float | None = None) -> ClaimVerdict:
    """``model``'s verdict after the untrained-twin control (see the module's docstring).

    Args:
        label: the row of lesson 12 (``"1"``, ``"2"``, ``"3a"`` ... ``"6a"``, ``"6b"``).
        model: the verdict on the trained model.
        twin: the same claim judged on the untrained twin (None: no twin measured).
        twin_name: which twin, shown with the numbers.
        direction: which way the deciding number moves toward "holds" (+1 larger, -1 smaller, 0 either
            way); None: :data:`TOWARD_HOLDS` of ``label``.
        floor: how far beyond the twin the model must be, in the deciding number's units; None: the
            verdict's ``numbers["floor"]`` (0 when it has none).
    """
    numbers = dict(model.numbers)
    if label in NOT_ABOUT_THE_MODEL:
        return ClaimVerdict(model.claim, model.verdict, {**numbers, TWIN_NAME: NOT_ABOUT})
    if twin is None:
        return ClaimVerdict(model.claim, model.verdict, {**numbers, TWIN_NAME: NO_TWIN})
    mine, theirs = deciding_interval(model), deciding_interval(twin)
    numbers[TWIN_NAME] = twin_name or TWIN_NAME
    numbers[TWIN_VERDICT] = twin.verdict
    numbers[TWIN_NUMBER] = _interval_text(theirs) if theirs is not None else "-"
    if model.verdict == UNSURE:
        return ClaimVerdict(model.claim, UNSURE, numbers)
    if twin.verdict == model.verdict:
        return ClaimVerdict(model.claim, UNSURE, {**numbers, "why": SAME})
    if mine is None or theirs is None:
        return ClaimVerdict(model.claim, model.verdict, numbers)
    floor = float(numbers.get(FLOOR, 0.0) or 0.0) if floor is None else float(floor)
    direction = TOWARD_HOLDS.get(label, 0) if direction is None else int(direction)
    diff = difference(mine, theirs)
    numbers[DIFFERENCE] = _interval_text(diff)
    numbers.setdefault(FLOOR, floor)
    if beyond(diff, model.verdict, direction, floor):
        return ClaimVerdict(model.claim, model.verdict, numbers)
    why = NOT_BEYOND.format(difference=_interval_text(diff), floor=f"{floor:.3g}")
    return ClaimVerdict(model.claim, UNSURE, {**numbers, "why": why})


def against_twins(model: dict[str, ClaimVerdict], twin: dict[str, ClaimVerdict] | None, *,
                  twin_name: str = "") -> dict[str, ClaimVerdict]:
    """:func:`against_twin` on every row of ``model`` (``twin`` keyed the same way; None: no twin)."""
    return {label: against_twin(label, v, None if twin is None else twin.get(label), twin_name=twin_name)
            for label, v in model.items()}
