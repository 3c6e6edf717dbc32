"""Lesson 08's and lesson 13's claims held against the untrained twin, through lesson 12's one rule.

A lesson measures its claims on the trained model and, on the same texts or queries, on its
untrained twin (:func:`attnlab.core.twins.shuffled_for_a_while`: the weights shuffled within
each tensor, put back afterwards). Each claim is then passed through
:func:`attnlab.course.twin_control.against_twin` with its own direction toward "holds" and its
own floor (in its deciding number's units), which the lesson's claims module names:
:data:`attnlab.course.claims.attention_limits.TOWARD_HOLDS` and
:func:`~attnlab.course.claims.attention_limits.twin_floor` for lesson 13,
:data:`attnlab.course.claims.averaging.TOWARD_HOLDS` and
:func:`~attnlab.course.claims.averaging.twin_floor` for lesson 08.

:func:`floor_table` decides every claim again with its floor scaled by :data:`FLOOR_SCALES`:
a word that flips between neighbouring scales rests on where the floor is drawn.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from attnlab.core.language import N_, _
from attnlab.core.twins import DEFAULT_SEED
from attnlab.course.claims.sensitivity import format_rows
from attnlab.course.twin_control import against_twin
from attnlab.course.verdicts import ClaimVerdict, shown

#: The floors' sensitivity grid: every claim's floor times each of these (0: any difference from the twin).
FLOOR_SCALES = (0.0, 0.5, 1.0, 2.0)
#: The twin's name as the lessons show it (the one that :func:`attnlab.core.twins.shuffled_for_a_while` makes).
SHUFFLED_TWIN = N_("the untrained twin: the same model, each weight tensor shuffled within itself (seed {seed})")
CLAIM_COLUMN, FLOOR_COLUMN, SCALE_COLUMN = N_("claim"), N_("floor"), N_("{scale} x floor")

#: ``floor(key, model_verdict)``: how far beyond the twin the model must be, in the deciding number's units
FloorRule = Callable[[str, ClaimVerdict], float]


def checked(model: Mapping[str, ClaimVerdict], twin: Mapping[str, ClaimVerdict] | None, *, lesson: str,
            toward: Mapping[str, int], floor: FloorRule, twin_name: str = "",
            scale: float = 1.0) -> dict[str, ClaimVerdict]:
    """Every verdict of ``model`` after the untrained-twin control (``twin`` keyed the same way; None:
    no twin measured, each verdict then says so).

    Args:
        model: claim key -> the verdict on the trained model.
        twin: claim key -> the same claim judged on the twin, on the same texts or queries.
        lesson: the lesson's number, which names each row (``"13"`` -> ``"13 sink_mass"``).
        toward: claim key -> +1 when a larger deciding number is toward "holds", -1 when a smaller one is.
        floor: the claim's floor against the twin, from its key and the model's verdict.
        twin_name: which twin, shown with the numbers.
        scale: the floor is multiplied by this (1: the claim's own floor; see :func:`floor_table`).
    """
    return {key: against_twin(f"{lesson} {key}", verdict, None if twin is None else twin.get(key),
                              twin_name=twin_name, direction=toward[key], floor=scale * floor(key, verdict))
            for key, verdict in model.items()}


def floor_table(model: Mapping[str, ClaimVerdict], twin: Mapping[str, ClaimVerdict], *, lesson: str,
                toward: Mapping[str, int], floor: FloorRule,
                scales: Sequence[float] = FLOOR_SCALES) -> list[list]:
    """Rows ``[claim key, floor at scale 1, word at each scale...]`` after a header
    ``["claim", "floor", 0.0, 0.5, ...]`` (the scales): how each checked word moves with the floor."""
    words = {s: checked(model, twin, lesson=lesson, toward=toward, floor=floor, scale=s) for s in scales}
    rows: list[list] = [[CLAIM_COLUMN, FLOOR_COLUMN, *[float(s) for s in scales]]]
    for key, verdict in model.items():
        rows.append([key, round(float(floor(key, verdict)), 4), *[words[s][key].verdict for s in scales]])
    return rows


def twin_label(seed: int = DEFAULT_SEED) -> str:
    """The shuffled twin's name in the reader's language (:data:`SHUFFLED_TWIN`)."""
    return _(SHUFFLED_TWIN).format(seed=seed)


def format_floor_table(rows: list[list]) -> str:
    """A :func:`floor_table` as aligned text, the header and the verdict words in the reader's language."""
    header = [_(CLAIM_COLUMN), _(FLOOR_COLUMN)]
    header += [_(SCALE_COLUMN).format(scale=f"{scale:g}") for scale in rows[0][2:]]
    return format_rows([header] + [row[:2] + [shown(word).lower() for word in row[2:]] for row in rows[1:]])
