"""Lesson 01's claim: the three classic shapes of an attention matrix show up in
real heads (a diagonal, a vertical stripe, an off-diagonal band).

The scores come from :func:`attnlab.scratch.self_attention.pattern_scores`:
the share of a head's attention that sits in the shape (mean weight on the
diagonal, the largest column mean, the mean weight on the next/previous token).

The control is :func:`attnlab.scratch.self_attention.pattern_chance`: the best
score over all heads after each row's weights were put on the keys in a random
order. Sharp rows alone can then still put weight on the diagonal or in one
column by luck (more so in a short text); a shape only counts when the
strongest head beats that.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from attnlab.core.language import _
from attnlab.course.verdicts import ClaimVerdict

#: A head shows a shape "clearly" when more than this share of its attention sits in it.
CLEAR_SHAPE = 0.5
#: ... and when its score beats this quantile of the best scores of the shuffled control.
CHANCE_QUANTILE = 0.95

SHAPES = ("diagonal", "vertical", "band")

CLAIM_DIAGONAL = "a head with a clear diagonal pattern exists for this query"
CLAIM_VERTICAL = "a head with a clear vertical pattern exists for this query"
CLAIM_BAND = "a head with a clear band pattern exists for this query"
#: shape -> its claim (constant sentences, so each is translated as a whole)
CLAIMS = {"diagonal": CLAIM_DIAGONAL, "vertical": CLAIM_VERTICAL, "band": CLAIM_BAND}


def claim_pattern_head(shape: str) -> str:
    """The claim sentence for one shape (one of :data:`SHAPES`)."""
    if shape not in CLAIMS:
        raise ValueError(_("shape must be one of {shapes}, got {shape!r}").format(shapes=SHAPES, shape=shape))
    return CLAIMS[shape]


def verdict_pattern_head(shape: str, score: float, layer: int, head: int, chance: Sequence[float] | None = None,
                         threshold: float = CLEAR_SHAPE) -> ClaimVerdict:
    """Whether the strongest head of ``shape`` (0-based ``layer``, ``head``) shows it clearly.

    Holds when its score is above ``threshold`` and above the
    :data:`CHANCE_QUANTILE` quantile of the ``chance`` scores; does not hold when
    the score is at most ``threshold``; cannot tell when it passes the threshold
    but not the control (sharp rows could put that much there by luck), or when
    no control was run.

    Args:
        shape: one of :data:`SHAPES`.
        score: that head's score (see :func:`~attnlab.scratch.self_attention.find_pattern_heads`).
        chance: the best score of the shape in each shuffled copy of the maps
            (:func:`~attnlab.scratch.self_attention.pattern_chance`).
    """
    if shape not in SHAPES:
        raise ValueError(_("shape must be one of {shapes}, got {shape!r}").format(shapes=SHAPES, shape=shape))
    score = float(score)
    if chance is None or len(chance) == 0:
        beyond_chance, chance_level = False, float("nan")
    else:
        chance_level = float(np.quantile(np.asarray(chance, dtype=float), CHANCE_QUANTILE))
        beyond_chance = score > chance_level
    return ClaimVerdict.decide(claim_pattern_head(shape), holds=score > threshold and beyond_chance,
                               fails=score <= threshold, layer_index=int(layer), head_index=int(head),
                               score=score, threshold=threshold, chance_level=chance_level,
                               shuffles=0 if chance is None else len(chance))
