"""Lesson 11's claim: some heads can be pruned with almost no loss.

The source article leaves open whether its "boring" heads could simply be cut,
and points to Michel et al. 2019 ("Are Sixteen Heads Really Better than
One?") and Voita et al. 2019, who pruned many heads with little loss. Judged
on the pruning study of :mod:`attnlab.analysis.pruning` and the single-head
ablation of :mod:`attnlab.analysis.importance`.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.pruning import PruningStudy
from attnlab.course.verdicts import ClaimVerdict

#: Michel et al. 2019: share of heads pruned "without noticeable loss", BERT fine-tuned on MNLI
MICHEL_BERT_FRACTION = 0.40
#: the same for their WMT translation Transformer
MICHEL_WMT_FRACTION = 0.20
#: the claim holds when at least this share of heads can be masked together within the tolerance
PRUNABLE_SHARE = 0.10

PRUNABLE_CLAIM = "some heads can be pruned with almost no loss"


def removable_alone(effects: np.ndarray, base_loss: float, tolerance: float) -> float:
    """Share of heads whose removal alone raises the loss by at most ``tolerance`` (relative).

    Args:
        effects: ``[layers, heads]`` single-head ablation effects, ``L(without head) - L``.
        base_loss: the unpruned loss.
        tolerance: relative loss increase allowed (0.01 = 1%).
    """
    return float(np.mean(np.asarray(effects, dtype=float) <= tolerance * abs(base_loss)))


def prunable_together(study: PruningStudy) -> float:
    """Share of heads that can be masked together in importance order within the tolerance:
    one-head resolution when the study has it, else the 10% grid."""
    if study.prunable_heads is not None:
        return study.prunable_heads / np.asarray(study.importance).size
    return float(study.prunable["importance"])


def verdict_some_heads_prunable(study: PruningStudy, effects: np.ndarray | None = None) -> ClaimVerdict:
    """Some heads can be removed with almost no loss.

    Holds when at least :data:`PRUNABLE_SHARE` of the heads can be masked
    *together* in importance order with the loss rising by at most
    ``study.tolerance``; does not hold when not a single head can go, together
    or (with ``effects``, the single-head ablation) alone; "cannot tell" in between.
    """
    together = prunable_together(study)
    alone = None if effects is None else removable_alone(effects, study.base_loss, study.tolerance)
    holds = together >= PRUNABLE_SHARE - 1e-9
    fails = together == 0 and not alone
    numbers = {
        "prunable together (importance order)": round(together, 3),
        "grid, importance order": study.prunable["importance"],
        "grid, random order (median)": study.prunable["random"],
        "grid, reverse order": study.prunable["reverse"],
        "tolerance (relative loss increase)": study.tolerance,
        "Michel et al. BERT": MICHEL_BERT_FRACTION,
    }
    if alone is not None:
        numbers["removable alone"] = round(alone, 3)
    return ClaimVerdict.decide(PRUNABLE_CLAIM, holds=holds, fails=fails, **numbers)
