"""Lesson 11's claim: some heads can be pruned with almost no loss.

The source article leaves open whether its "boring" heads could simply be cut,
and points to Michel et al. 2019 ("Are Sixteen Heads Really Better than
One?") and Voita et al. 2019, who pruned many heads with little loss. Judged
on the pruning study of :mod:`attnlab.analysis.pruning`: the heads are ranked
on one set of texts and pruned on another, and the loss of the pruned model
is measured text by text, so it gets a bootstrap interval over texts. The control is
removing heads at random: the same share masked in random orders, on the same texts.

"Almost no loss" is the course's one tolerance for "costs nothing"
(:mod:`attnlab.analysis.costs_nothing`, shared with lesson 13): ``1 - cos`` at most 5%
of the mean ``1 - cos`` between two different texts' sentence vectors (a move of 22% of the
distance between them), measured on the evaluation texts, on the mean over texts, with the
sensitivity grid 2, 5, 10 and 20% of that ``1 - cos``.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.costs_nothing import SHARE_GRID
from attnlab.analysis.costs_nothing import TOLERANCE_SHARE as COSTS_NOTHING_SHARE
from attnlab.analysis.costs_nothing import CostsNothing
from attnlab.analysis.pruning import PruningStudy, loss_limit
from attnlab.analysis.stats import Interval, bootstrap_mean, too_few_units
from attnlab.core.language import N_, _
from attnlab.course.verdicts import ClaimVerdict

#: Michel et al. 2019: share of heads pruned "without noticeable loss", BERT fine-tuned on MNLI
MICHEL_BERT_FRACTION = 0.40
#: the same for their WMT translation Transformer
MICHEL_WMT_FRACTION = 0.20
#: the claim is about masking at least this share of the heads together
PRUNABLE_SHARE = 0.10
#: "almost no loss" for a representation objective: ``1 - cos`` with the full model rises by at most this
#: share of the mean 1 - cos between two different texts (:class:`~attnlab.analysis.costs_nothing.CostsNothing`)
TOLERANCE_SHARE = COSTS_NOTHING_SHARE
#: the shares of that distance, and of heads masked, of the sensitivity table
TOLERANCE_SHARES = SHARE_GRID
SHARES = (0.1, 0.2, 0.3)
#: the names of the verdict's parameters the sensitivity table varies: its header shows them translated
SENSITIVITY_PARAMETERS = (N_("share"), N_("tolerance"))

PRUNABLE_CLAIM = "some heads can be pruned with almost no loss"


def removable_alone(effects: np.ndarray, base_loss: float, tolerance: float, *, relative: bool = True) -> float:
    """Share of heads whose removal alone raises the loss by at most the tolerance.

    Args:
        effects: ``[layers, heads]`` single-head ablation effects, ``L(without head) - L``.
        base_loss: the unpruned loss.
        tolerance: loss increase allowed, relative to ``|base_loss|`` or (``relative=False``) absolute.
    """
    allowed = loss_limit(base_loss, tolerance, relative=relative) - base_loss
    return float(np.mean(np.asarray(effects, dtype=float) <= allowed))


def prunable_together(study: PruningStudy) -> float:
    """Share of heads that can be masked together in importance order within the tolerance:
    one-head resolution when the study has it, else the 10% grid."""
    if study.prunable_heads is not None:
        return study.prunable_heads / np.asarray(study.importance).size
    return float(study.prunable["importance"])


def grid_index(study: PruningStudy, share: float) -> int:
    """Index of the first fraction of the study's grid at or above ``share``."""
    fractions = np.asarray(study.fractions, dtype=float)
    above = np.nonzero(fractions >= share - 1e-9)[0]
    if len(above) == 0:
        raise ValueError(f"the study's fractions stop at {fractions[-1]:.0%}, below {share:.0%}")
    return int(above[0])


def increase_at(study: PruningStudy, share: float, *, seed: int = 0) -> Interval:
    """Mean loss increase over the unpruned model when ``share`` of the heads are masked in
    importance order, with a bootstrap interval over the evaluation texts."""
    per_text = np.asarray(study.per_text["importance"], dtype=float)  # (F, N)
    return bootstrap_mean(per_text[grid_index(study, share)] - per_text[0], seed=seed)


def advantage_over_random(study: PruningStudy, share: float, *, seed: int = 0) -> Interval:
    """How much less the loss rises when ``share`` of the heads are masked in importance order
    than in a random order: on each evaluation text, the median over the random orders minus
    the importance order's loss, with a bootstrap interval over texts (positive: the ranking
    found heads that matter less than heads picked at random)."""
    i = grid_index(study, share)
    ranked = np.asarray(study.per_text["importance"], dtype=float)[i]  # (N,)
    random = np.median(np.asarray(study.per_text["random"], dtype=float)[:, i, :], axis=0)  # (N,)
    return bootstrap_mean(random - ranked, seed=seed)


def verdict_some_heads_prunable(study: PruningStudy, effects: np.ndarray | None = None, *,
                                tolerance: float | None = None, share: float = PRUNABLE_SHARE,
                                costs: CostsNothing | None = None) -> ClaimVerdict:
    """Some heads, picked by their importance, can be removed together with almost no loss.

    Masks ``share`` of the heads (the grid point at or above it) in importance order and
    takes the loss increase on each evaluation text, and the same texts' losses with random
    orders (the control: masking *any* heads). Holds when the whole bootstrap interval of
    the mean increase lies below the allowed increase (``tolerance``, default the study's:
    absolute for a representation objective, relative to the unpruned loss otherwise)
    **and** the interval of the advantage over random orders (:func:`advantage_over_random`)
    lies above 0 (the heads chosen matter less than heads picked at random). Does not hold
    when the increase lies above the allowed one, or the ranking does clearly worse than
    random; otherwise "cannot tell" (for instance when random orders do as well: then the
    share is too small to tell which heads are prunable). ``effects`` (single-head ablation)
    adds the share of heads removable alone; ``costs`` (the tolerance's scale, the mean
    distance between two different texts) adds the allowed increase as a share of it.
    """
    if study.per_text.get("importance") is None:
        return ClaimVerdict.missing(PRUNABLE_CLAIM, "the study has no per-text losses (use a representation "
                                                    "objective, 'sentence' or 'token')")
    if study.per_text.get("random") is None:
        return ClaimVerdict.missing(PRUNABLE_CLAIM, _("the study kept no per-text losses of its random orders "
                                                      "(run lesson 11 again)"))
    tolerance = study.tolerance if tolerance is None else float(tolerance)
    allowed = loss_limit(study.base_loss, tolerance, relative=study.relative) - study.base_loss
    rise = increase_at(study, share)
    advantage = advantage_over_random(study, share)
    i = grid_index(study, share)
    low, random_median, high = study.random_band()
    numbers = {
        "estimate": rise.estimate, "low": rise.low, "high": rise.high, "measure": N_("loss increase"),
        N_("heads masked together"): float(study.fractions[i]),
        N_("loss increase"): rise.estimate, N_("increase low"): rise.low, N_("increase high"): rise.high,
        N_("allowed increase"): allowed,
        N_("random orders, median increase"): float(random_median[i] - study.base_loss),
        N_("random band low"): float(low[i] - study.base_loss),
        N_("random band high"): float(high[i] - study.base_loss),
        N_("advantage over random"): advantage.estimate, N_("advantage low"): advantage.low,
        N_("advantage high"): advantage.high,
        N_("prunable together (importance order, one head at a time)"): round(prunable_together(study), 3),
        N_("grid, random order (median)"): study.prunable["random"],
        N_("Michel et al. BERT"): MICHEL_BERT_FRACTION,
    }
    if costs is not None:
        numbers[N_("distance between two texts")] = costs.distance
        share_of_cos = allowed / costs.distance if costs.distance > 0 else float("nan")
        numbers[N_("allowed, share of that 1 - cos")] = share_of_cos
        numbers[N_("allowed, share of the distance between the unit vectors")] = (
            costs.chord_share(share_of_cos) if share_of_cos >= 0 else float("nan"))
    if effects is not None:
        numbers["removable alone"] = round(removable_alone(effects, study.base_loss, tolerance,
                                                           relative=study.relative), 3)
    why = too_few_units(rise)
    if why is not None:
        return ClaimVerdict.decide(PRUNABLE_CLAIM, holds=False, fails=False, why=why, **numbers)
    holds = rise.below(allowed) and advantage.above(0.0)
    fails = rise.above(allowed) or advantage.below(0.0)
    return ClaimVerdict.decide(PRUNABLE_CLAIM, holds=holds, fails=fails, **numbers)
