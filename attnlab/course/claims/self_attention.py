"""Lesson 01's claim: the three classic shapes of an attention matrix show up in
real heads (a diagonal, a vertical stripe, an off-diagonal band).

The scores come from :func:`attnlab.scratch.self_attention.pattern_scores`:
the share of a head's attention that sits in the shape (mean weight on the
diagonal, the largest column mean, the mean weight on the next/previous token).
"""

from __future__ import annotations

from attnlab.course.verdicts import ClaimVerdict

#: A head shows a shape "clearly" when more than this share of its attention sits in it.
CLEAR_SHAPE = 0.5

SHAPES = ("diagonal", "vertical", "band")


def claim_pattern_head(shape: str) -> str:
    """The claim sentence for one shape."""
    return f"a head with a clear {shape} pattern exists for this query"


def verdict_pattern_head(shape: str, score: float, layer: int, head: int,
                         threshold: float = CLEAR_SHAPE) -> ClaimVerdict:
    """Holds when the strongest head of ``shape`` (0-based ``layer``, ``head``) puts more
    than ``threshold`` of its attention in that shape; does not hold otherwise.

    Args:
        shape: one of :data:`SHAPES`.
        score: that head's score (see :func:`~attnlab.scratch.self_attention.find_pattern_heads`).
    """
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    score = float(score)
    return ClaimVerdict.decide(claim_pattern_head(shape), holds=score > threshold, fails=score <= threshold,
                               layer_index=int(layer), head_index=int(head), score=score, threshold=threshold)
