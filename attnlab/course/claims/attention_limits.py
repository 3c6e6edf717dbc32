"""Lesson 13's claims: what attention weights do and do not tell, decided from the run.

Published claims, each tested on the running model:

1. :func:`verdict_sink_mass` -- in some layer more than half of the attention goes to the
   separator alone ([SEP] or ``</s>``; Clark et al. 2019: over half on [SEP] in BERT-base's
   layers 6-10); the combined share of both special tokens is reported beside it;
2. :func:`verdict_sink_no_op` -- attending to the sink is close to a no-op: zeroing
   the sink's value vectors moves the output less than zeroing a word's (Clark et al.);
3. :func:`verdict_norms_discount_sinks` -- norm-based weights remove at least half of
   the special tokens' share (Kobayashi et al. 2020);
4. :func:`verdict_raw_tracks_effect` -- raw attention ranks tokens by their effect on
   the output (the reading the source article relies on; Jain & Wallace 2019 doubt it);
5. :func:`verdict_norm_beats_raw` -- norm-based weights track that effect better than
   raw weights (Kobayashi et al.);
6. :func:`verdict_rollout_beats_raw` -- rollout tracks it better than raw weights
   (Abnar & Zuidema 2020);
7. :func:`verdict_value_zeroing_best` -- value zeroing as Mohebbi et al. (2023) define it
   tracks it better than every reading of the weights (raw, norm-based, rollout);
8. :func:`verdict_fixed_heads_cheap` -- among the heads of a layer, the more fixed a head,
   the less it costs to replace its map by its mean map (after Hassid et al. 2022);
9. :func:`verdict_mean_map_stands_in` -- a head's mean map stands in for its own map
   better than another query's map does (the control of 8);
10. :func:`verdict_heads_replaceable_together` -- at least half of the heads can become
    constant (mean) maps together at little cost (Hassid et al.: about half);
11. :func:`verdict_fixed_order_beats_random` -- replacing the most fixed heads first costs
    less than replacing heads in a random order (fixedness picks the replaceable heads).

The scoreboard claims (4-7) are decided against the leave-one-out effect that keeps every
token's position; the same numbers against deletion are reported beside each verdict.

Every test is an interval on one side of a named threshold; where the threshold
is a choice, ``*_sensitivity`` gives the verdict for a few other values (through
:func:`attnlab.course.claims.sensitivity.sensitivity_rows`). An interval resting on
fewer than :data:`attnlab.analysis.stats.MIN_UNITS` texts or queries gives "cannot tell".

**Against the untrained twin.** The same five measurements on the model's untrained twin, on the
same texts and queries, give every claim a second verdict; :func:`against_the_twin` passes each
pair through lesson 12's rule (:func:`attnlab.course.twin_control.against_twin`) with the claim's
direction (:data:`TOWARD_HOLDS`) and floor (:func:`twin_floor`): a "holds" stands only when the
model is beyond the twin by the floor toward holding. :func:`what_raw_attention_says` puts the
raw-attention claim, so checked, into one sentence for the lesson's text.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from attnlab.analysis.costs_nothing import SHARE_GRID
from attnlab.analysis.faithfulness import TRUTHS, VIEW_LABELS, VIEWS, Scoreboard
from attnlab.analysis.mean_map_replacement import TOLERANCE_SHARE, MapReplacement, TogetherCurves
from attnlab.analysis.sinks import SinkIntervention, SinkProfile
from attnlab.analysis.stats import ABOVE, BELOW, Interval, bootstrap_mean, too_few_units
from attnlab.core.language import N_, _, translated
from attnlab.course.claims import twin_checks
from attnlab.course.claims.sensitivity import sensitivity_rows
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, ClaimVerdict

#: Clark et al. (2019): over half of BERT-base's attention lands on [SEP] ...
CLARK_SEP_SHARE = 0.5
#: ... in its layers 6-10 (1-based, of 12).
CLARK_SEP_LAYERS = (6, 10)

#: "Most attention goes to the separator": a layer's share above this (interval).
SINK_SHARE = CLARK_SEP_SHARE
#: Norm-based weights "discount" the sinks when at least this share of their raw mass disappears.
NORM_REMOVES = 0.5
#: Raw attention "ranks tokens by their effect" when the mean Spearman rho is above this (interval).
TRACKING_RHO = 0.5
#: Hassid et al.: about half of the heads can be replaced together.
REPLACEABLE_SHARE = 0.5
#: p below which the within-layer permutation test calls a correlation real.
ALPHA = 0.05
#: Floors: a comparison holds only when its whole interval is beyond zero by the floor, and does not hold
#: when its whole interval is on the near side of the floor (no difference worth the name, or the wrong
#: way round); in between, "cannot tell".
#: A view "beats" another when its mean Spearman rho with the effect is higher by more than this: rho runs
#: from -1 to 1 over the 10-20 tokens of a query, where one pair of neighbours swapped moves it by about
#: 0.01-0.05; a model whose weights carry nothing ranks tokens alike in every view, within that.
FLOOR_BEATS_RHO = 0.05
#: "The more fixed, the cheaper": the within-layer rho of fixedness and cost must lie below minus this
#: (a rank correlation weaker than 0.1 among a layer's heads orders almost nothing).
FLOOR_CHEAP_RHO = 0.1
#: The sink is "close to a no-op" when zeroing it moves the output less than zeroing a word by more than
#: this share of the word's effect (a tenth: a random-weights model moves the output by every token about
#: alike, so its sink and its word differ by far less).
FLOOR_SINK_SHARE = 0.1
#: A mean map "stands in better" and the fixedness order "costs less" when the cost (1 - cos of the
#: sentence vectors) is lower by more than this share of the mean 1 - cos between two different texts:
#: 1%, a fifth of what counts as "little" (:data:`TOLERANCE_SHARE`); the trained offline default's
#: order advantage is about 12 times this floor.
FLOOR_COST_SHARE = 0.01
#: Thresholds of the sensitivity tables.
SINK_SHARE_GRID = (0.3, 0.4, 0.5, 0.6, 0.7)
NORM_REMOVES_GRID = (0.25, 0.5, 0.75)
TRACKING_RHO_GRID = (0.3, 0.5, 0.7, 0.9)
REPLACEABLE_SHARE_GRID = (0.25, 0.5, 0.75)
TOLERANCE_GRID = SHARE_GRID  # the shares of "costs nothing" shared with lesson 11
FLOOR_BEATS_GRID = (0.0, 0.025, 0.05, 0.1)
FLOOR_CHEAP_GRID = (0.0, 0.05, 0.1, 0.2)
FLOOR_SINK_GRID = (0.0, 0.05, 0.1, 0.25)
FLOOR_COST_GRID = (0.0, 0.005, 0.01, 0.02)

# the claims are passed around by name, so each is marked with N_ for the catalogue
CLAIM_SINK_MASS = N_("in some layer, more than half of the attention goes to the separator ([SEP] or </s>) alone")
CLAIM_SINK_NO_OP = N_("attending to the sink is close to a no-op: zeroing its value vectors in a layer moves the "
                       "output less than zeroing a word's, by more than a tenth of the word's effect")
CLAIM_NORMS = N_("norm-based weights remove at least half of the special tokens' share of the attention")
CLAIM_RAW_TRACKS = N_("raw attention (last layer) ranks tokens by how much leaving them out changes the output "
                       "(positions kept)")
CLAIM_NORM_BEATS = N_("norm-based weights rank tokens by their effect better than raw attention, by more than "
                       "0.05 in Spearman rho")
CLAIM_ROLLOUT_BEATS = N_("attention rollout ranks tokens by their effect better than raw attention, by more than "
                          "0.05 in Spearman rho")
CLAIM_VZ_BEST = N_("value zeroing (Mohebbi et al.) ranks tokens by their effect better than raw attention, "
                    "norm-based weights and rollout, by more than 0.05 in Spearman rho each")
CLAIM_FIXED_CHEAP = N_("among the heads of a layer, the more fixed a head, the less it costs to replace its map by "
                        "its mean map (a rank correlation below -0.1)")
CLAIM_MEAN_STANDS_IN = N_("a head's mean map stands in for its own map better than another query's map, by more "
                          "than 1% of the mean 1 - cos between two different texts")
CLAIM_TOGETHER = N_("at least half of the heads can be replaced by their mean maps together at little cost")
CLAIM_ORDER = N_("replacing the most fixed heads first costs less than replacing heads in a random order, by more "
                 "than 1% of the mean 1 - cos between two different texts")

#: Keys of :func:`verdicts`.
SINK_MASS = "sink_mass"
SINK_NO_OP = "sink_no_op"
NORMS_DISCOUNT_SINKS = "norms_discount_sinks"
RAW_TRACKS_EFFECT = "raw_tracks_effect"
NORM_BEATS_RAW = "norm_beats_raw"
ROLLOUT_BEATS_RAW = "rollout_beats_raw"
VALUE_ZEROING_BEST = "value_zeroing_best"
FIXED_HEADS_CHEAP = "fixed_heads_cheap"
MEAN_MAP_STANDS_IN = "mean_map_stands_in"
HEADS_TOGETHER = "heads_replaceable_together"
FIXED_ORDER_BEATS_RANDOM = "fixed_order_beats_random"
#: The readings of the weights that value zeroing is compared with.
READINGS = ("raw", "norm", "rollout")


def _decided(claim: str, intervals: Sequence[Interval], *, holds: bool, fails: bool, **numbers) -> ClaimVerdict:
    """:meth:`ClaimVerdict.decide`, unless an interval rests on too few units ("cannot tell", saying why)."""
    for interval in intervals:
        why = too_few_units(interval)
        if why is not None:
            return ClaimVerdict(claim, UNSURE, {**numbers, "missing": why})
    return ClaimVerdict.decide(claim, holds=holds, fails=fails, **numbers)


def _triple(interval: Interval) -> list[float]:
    """``[estimate, low, high]`` rounded for the verdict's numbers."""
    return [round(float(x), 4) for x in (interval.estimate, interval.low, interval.high)]


# --------------------------------------------------------------------------- sinks


def verdict_sink_mass(profile: SinkProfile, threshold: float = SINK_SHARE) -> ClaimVerdict:
    """Per layer, the mean raw share on the separator alone with a bootstrap interval over texts:
    holds when some layer's whole interval is above ``threshold``, does not hold when every
    layer's is below it. The intervals are 95% simultaneous over the layers (the verdict
    searches every layer, so one layer's own 95% interval is not enough). The combined
    share of both special tokens is reported beside it."""
    share = profile.per_layer("raw", "end", simultaneous=True)
    both = profile.per_layer("raw", "special", simultaneous=True)
    low, high = np.asarray(share.low), np.asarray(share.high)
    top = int(np.argmax(share.estimate))
    top_both = int(np.argmax(both.estimate))
    first, last = CLARK_SEP_LAYERS
    clark = [l - 1 for l in range(first, last + 1) if l <= low.size]
    return _decided(
        CLAIM_SINK_MASS, [share], holds=bool((low > threshold).any()), fails=bool((high < threshold).all()),
        threshold=threshold, separator=profile.end_token, top_layer=top + 1,
        top_share=float(np.asarray(share.estimate)[top]), top_low=float(low[top]), top_high=float(high[top]),
        layers_above=[int(l) + 1 for l in np.nonzero(low > threshold)[0]],
        clark_layers_share=float(np.mean(np.asarray(share.estimate)[clark])) if clark else float("nan"),
        special_top_layer=top_both + 1, special_top_share=float(np.asarray(both.estimate)[top_both]),
        special_layers_above=[int(l) + 1 for l in np.nonzero(np.asarray(both.low) > threshold)[0]],
        interval=N_("95% simultaneous over {n} layers").format(n=share.family), texts=share.n,
    )


def verdict_sink_no_op(intervention: SinkIntervention, floor: float = FLOOR_SINK_SHARE) -> ClaimVerdict:
    """Sink effect minus control effect, averaged over layers, with an interval over texts: holds
    when it lies below ``-floor`` times the word's (control's) mean effect, does not hold when it lies
    above that (:data:`FLOOR_SINK_SHARE`: the sink must move the output less than a word by a tenth of
    the word's effect). Without a sink (the special tokens get no more attention than the control
    word) there is nothing to test."""
    sink_mass, control_mass = float(intervention.sink_mass.mean()), float(intervention.control_mass.mean())
    if sink_mass <= control_mass:
        return ClaimVerdict.missing(CLAIM_SINK_NO_OP, "the special tokens get no more attention than a word here")
    diff = intervention.overall_difference()
    control = float(intervention.control_effect.mean())
    line = -floor * control  # in the difference's units (1 - cos of the output)
    return _decided(
        CLAIM_SINK_NO_OP, [diff], holds=diff.below(line), fails=diff.above(line),
        estimate=float(diff.estimate), measure=N_("sink effect minus a word's effect (1 - cos of the output)"),
        sink_effect=float(intervention.sink_effect.mean()), control_effect=control,
        difference=float(diff.estimate), low=float(diff.low), high=float(diff.high),
        **{N_("floor"): -line, N_("floor share"): floor},
        sink_mass=sink_mass, control_mass=control_mass, texts=diff.n,
    )


def removed_share_per_text(profile: SinkProfile) -> np.ndarray:
    """``(N,)``: per text, ``1 - sum_l norm share / sum_l raw share`` of the special tokens."""
    raw = profile.special("raw").sum(axis=1)
    return 1.0 - profile.special("norm").sum(axis=1) / np.maximum(raw, 1e-12)


def verdict_norms_discount_sinks(profile: SinkProfile, threshold: float = NORM_REMOVES) -> ClaimVerdict:
    """The share of the special tokens' raw mass that norm-based weights remove, with an interval
    over texts: holds when it lies above ``threshold``, does not hold when below."""
    removed = bootstrap_mean(removed_share_per_text(profile))
    return _decided(
        CLAIM_NORMS, [removed], holds=removed.above(threshold), fails=removed.below(threshold), threshold=threshold,
        removed=float(removed.estimate), low=float(removed.low), high=float(removed.high),
        raw_share=float(profile.special("raw").mean()), norm_share=float(profile.special("norm").mean()),
        texts=removed.n,
    )


# --------------------------------------------------------------------------- the scoreboard


def verdict_raw_tracks_effect(board: Scoreboard, threshold: float = TRACKING_RHO) -> ClaimVerdict:
    """Mean Spearman rho of raw attention and the leave-one-out effect (positions kept), interval
    over queries: holds when it lies above ``threshold``, does not hold when below. The rho against
    deletion is reported beside it."""
    rho = board.interval("raw")
    return _decided(
        CLAIM_RAW_TRACKS, [rho], holds=rho.above(threshold), fails=rho.below(threshold), threshold=threshold,
        mean_rho=float(rho.estimate), low=float(rho.low), high=float(rho.high),
        rho_deleted=_triple(board.interval("raw", "deleted")), queries=rho.n,
    )


def _beats(claim: str, board: Scoreboard, view: str, others: Sequence[str], floor: float) -> ClaimVerdict:
    """``view`` beats each of ``others`` (leave one out, positions kept) by the floor: every paired
    interval of ``rho_view - rho_other`` above ``floor`` holds; any wholly below ``floor`` does not
    hold (no gain worth the name, or a loss). The deciding number is the smallest paired difference
    (the comparison nearest to failing); the paired differences against deletion are reported beside them."""
    pairs = {other: board.paired(view, other) for other in others}
    numbers = {f"minus_{other}": _triple(p) for other, p in pairs.items()}  # [estimate, low, high]
    numbers.update({f"minus_{other}_deleted": _triple(board.paired(view, other, "deleted")) for other in others})
    nearest = min(pairs.values(), key=lambda p: float(p.low))
    rho = board.interval(view)
    return _decided(
        claim, [rho], holds=all(p.above(floor) for p in pairs.values()),
        fails=any(p.below(floor) for p in pairs.values()),
        estimate=float(nearest.estimate), low=float(nearest.low), high=float(nearest.high),
        measure=N_("Spearman rho of this view minus the other's (the closest comparison)"), **{N_("floor"): floor},
        mean_rho=float(rho.estimate), ranking=[VIEW_LABELS[v] for v in board.ranking()],
        ranking_deleted=[VIEW_LABELS[v] for v in board.ranking("deleted")], queries=rho.n, **numbers,
    )


def verdict_norm_beats_raw(board: Scoreboard, floor: float = FLOOR_BEATS_RHO) -> ClaimVerdict:
    """Paired difference of rho (norm-based minus raw) over queries, interval above / below ``floor``."""
    return _beats(CLAIM_NORM_BEATS, board, "norm", ["raw"], floor)


def verdict_rollout_beats_raw(board: Scoreboard, floor: float = FLOOR_BEATS_RHO) -> ClaimVerdict:
    """Paired difference of rho (rollout minus raw) over queries, interval above / below ``floor``."""
    return _beats(CLAIM_ROLLOUT_BEATS, board, "rollout", ["raw"], floor)


def verdict_value_zeroing_best(board: Scoreboard, floor: float = FLOOR_BEATS_RHO) -> ClaimVerdict:
    """Mohebbi's value zeroing minus each reading of the weights (raw, norm-based, rollout): holds
    when every paired interval is above ``floor``, does not hold when one is below it, else cannot tell.
    (The whole-model knockout is an intervention of its own, not a reading: it is on the board but
    not in this comparison.)"""
    return _beats(CLAIM_VZ_BEST, board, "value_zeroing", list(READINGS), floor)


def ranking_change(board: Scoreboard) -> dict[str, dict[str, object]]:
    """View -> ``{"masked": [estimate, low, high], "deleted": [...], "rank_masked": r, "rank_deleted": r,
    "difference": [...]}``: each view's rho under both ground truths (ranks 1-based) and the paired
    difference masked minus deleted over the same queries."""
    ranks = {truth: {v: i + 1 for i, v in enumerate(board.ranking(truth))} for truth in ("masked", "deleted")}
    out = {}
    for view in VIEWS:
        diff = bootstrap_mean(board.rho["masked"][view] - board.rho["deleted"][view])
        out[view] = {"masked": _triple(board.interval(view, "masked")),
                     "deleted": _triple(board.interval(view, "deleted")),
                     "rank_masked": ranks["masked"][view], "rank_deleted": ranks["deleted"][view],
                     "difference": _triple(diff)}
    return out


# --------------------------------------------------------------------------- mean maps, one head at a time


def verdict_fixed_heads_cheap(replacement: MapReplacement, alpha: float = ALPHA,
                              floor: float = FLOOR_CHEAP_RHO) -> ClaimVerdict:
    """The mean over layers of the within-layer Spearman rho of fixedness and one-at-a-time cost,
    with an interval from resampling texts and a permutation test that shuffles fixedness among the
    heads of each layer: holds when the interval lies below ``-floor`` and p < ``alpha``; does not hold
    when the interval lies above ``-floor`` (:data:`FLOOR_CHEAP_RHO`). The rho over all heads (depth
    left in) is reported beside it."""
    within = replacement.within_layer_rho()
    observed, p = replacement.within_layer_permutation()
    overall = replacement.fixedness_cost_correlation()
    if not np.isfinite(float(within.estimate)):
        return ClaimVerdict.missing(CLAIM_FIXED_CHEAP, "no layer has heads whose fixedness and cost both vary")
    return _decided(
        CLAIM_FIXED_CHEAP, [within], holds=bool(within.below(-floor)) and p < alpha, fails=within.above(-floor),
        estimate=float(within.estimate), measure=N_("within-layer Spearman rho of fixedness and replacement cost"),
        **{N_("floor"): floor},
        within_layer_rho=float(within.estimate), low=float(within.low), high=float(within.high),
        permutation_p=p, alpha=alpha, all_heads_rho=_triple(overall),
        per_layer_rho=[round(float(r), 3) for r in replacement.within_layer_correlations()],
        layers=[l + 1 for l in replacement.layers], texts=within.n, mean_queries=replacement.mean_count,
    )


def cost_floor(reference: np.ndarray, share: float = FLOOR_COST_SHARE) -> float:
    """A cost floor in ``1 - cos`` units: ``share`` of the mean distance between two different texts
    (``reference``, per text); 0 when no reference was measured."""
    reference = np.asarray(reference, dtype=float)
    return float(share * reference.mean()) if reference.size else 0.0


def _below_cost_floor(claim: str, interval: Interval, reference: np.ndarray, floor: float, measure: str, /,
                      **numbers) -> ClaimVerdict:
    """A cost difference (``interval``, over texts) against minus the cost floor: holds when it lies below
    minus the floor (``floor`` of the mean distance between two different texts, ``reference`` per
    text, :func:`cost_floor`), does not hold when it lies above that. ``numbers`` follow the floor's."""
    line = -cost_floor(reference, floor)
    return _decided(
        claim, [interval], holds=interval.below(line), fails=interval.above(line),
        estimate=float(interval.estimate), measure=measure,
        **{N_("floor"): -line, N_("floor share"): floor}, **numbers,
    )


def verdict_mean_map_stands_in(replacement: MapReplacement, floor: float = FLOOR_COST_SHARE) -> ClaimVerdict:
    """Cost with the mean map minus cost with another query's map, averaged over heads, interval
    over texts, against the cost floor as :func:`_below_cost_floor` decides."""
    saving = replacement.saving()
    return _below_cost_floor(
        CLAIM_MEAN_STANDS_IN, saving, replacement.reference, floor,
        N_("cost with the mean map minus with another query's map (1 - cos)"),
        mean_map_cost=float(replacement.cost.mean()), other_query_cost=float(replacement.control.mean()),
        difference=float(saving.estimate), low=float(saving.low), high=float(saving.high), texts=saving.n,
    )


def head_label_counts(replacement: MapReplacement, share: float = TOLERANCE_SHARE) -> dict[str, int]:
    """How many heads are "cheap", "costly" and "cannot tell" when replaced alone (each head's
    interval over texts against the tolerance)."""
    labels = replacement_head_labels(replacement, share)
    return {word: int((labels == word).sum()) for word in (N_("cheap"), N_("costly"), UNSURE)}


def replacement_head_labels(replacement: MapReplacement, share: float = TOLERANCE_SHARE) -> np.ndarray:
    """``(L, H)`` words: "cheap" (cost interval below the tolerance), "costly" (above it) or
    "cannot tell" (it straddles the tolerance), each head replaced alone."""
    sides = replacement.head_sides(share)
    words = np.full(sides.shape, UNSURE, dtype=object)
    words[sides == BELOW] = "cheap"
    words[sides == ABOVE] = "costly"
    return words


# --------------------------------------------------------------------------- mean maps, heads together


def verdict_heads_replaceable_together(together: TogetherCurves, threshold: float = REPLACEABLE_SHARE,
                                       tolerance: float = TOLERANCE_SHARE) -> ClaimVerdict:
    """The largest fraction of heads replaceable together (most fixed first) within ``tolerance``
    times the distance between different texts, interval from resampling texts: holds when it lies
    at or above ``threshold``, does not hold when it lies below. Random and reverse orders beside it."""
    fraction = together.replaceable("fixed_first", tolerance)
    random = together.random_replaceable(tolerance)
    return _decided(
        CLAIM_TOGETHER, [fraction], holds=float(fraction.low) >= threshold, fails=float(fraction.high) < threshold,
        threshold=threshold, tolerance_share=tolerance, tolerance=together.tolerance(tolerance),
        fraction=float(fraction.estimate), low=float(fraction.low), high=float(fraction.high),
        heads=int(together.counts[-1]), reverse_fraction=_triple(together.replaceable("reverse", tolerance)),
        random_fractions=[round(float(f), 3) for f in random],
        all_replaced_cost=float(together.fixed_first[:, -1].mean()), texts=fraction.n,
    )


def verdict_fixed_order_beats_random(together: TogetherCurves, floor: float = FLOOR_COST_SHARE) -> ClaimVerdict:
    """Per text, the mean cost over the curve in fixedness order minus the random orders', interval
    over texts, against the cost floor as :func:`_below_cost_floor` decides."""
    advantage = together.order_advantage()
    return _below_cost_floor(
        CLAIM_ORDER, advantage, together.reference, floor,
        N_("mean cost in fixedness order minus in random orders (1 - cos)"),
        difference=float(advantage.estimate), low=float(advantage.low), high=float(advantage.high),
        fixed_first_mean_cost=float(together.fixed_first.mean()), random_mean_cost=float(together.random.mean()),
        reverse_mean_cost=float(together.reverse.mean()), random_orders=int(together.random.shape[0]),
        texts=advantage.n,
    )


# --------------------------------------------------------------------------- all of them


def _table(claim: Callable[..., ClaimVerdict], evidence: object, thresholds: Sequence[float],
           name: str = "threshold") -> dict[float, str]:
    """``{threshold: verdict word}`` from :func:`attnlab.course.claims.sensitivity.sensitivity_rows`."""
    rows = sensitivity_rows(claim, evidence, {name: [float(t) for t in thresholds]})
    return {float(row[0]): row[1] for row in rows[1:]}


def sink_mass_sensitivity(profile: SinkProfile, thresholds: Sequence[float] = SINK_SHARE_GRID) -> dict[float, str]:
    """:func:`verdict_sink_mass` at each threshold."""
    return _table(verdict_sink_mass, profile, thresholds)


def norms_sensitivity(profile: SinkProfile, thresholds: Sequence[float] = NORM_REMOVES_GRID) -> dict[float, str]:
    """:func:`verdict_norms_discount_sinks` at each threshold."""
    return _table(verdict_norms_discount_sinks, profile, thresholds)


def tracking_sensitivity(board: Scoreboard, thresholds: Sequence[float] = TRACKING_RHO_GRID) -> dict[float, str]:
    """:func:`verdict_raw_tracks_effect` at each threshold."""
    return _table(verdict_raw_tracks_effect, board, thresholds)


def together_sensitivity(together: TogetherCurves, thresholds: Sequence[float] = REPLACEABLE_SHARE_GRID,
                         tolerances: Sequence[float] = TOLERANCE_GRID) -> list[list]:
    """:func:`verdict_heads_replaceable_together` at every share threshold and tolerance: rows
    ``[threshold, tolerance, verdict, fraction, low, high]`` after a header."""
    return sensitivity_rows(verdict_heads_replaceable_together, together,
                            {"threshold": [float(t) for t in thresholds],
                             "tolerance": [float(t) for t in tolerances]},
                            numbers=["fraction", "low", "high"])


def floor_sensitivity(intervention: SinkIntervention, board: Scoreboard, replacement: MapReplacement,
                      together: TogetherCurves) -> dict[str, dict[float, str]]:
    """Claim key -> ``{floor: verdict word}`` for every comparison decided beyond a floor (the grids
    ``FLOOR_*_GRID`` around each default: rho for the scoreboard and the within-layer correlation,
    shares of the word's effect for the sink, shares of the distance between two texts for costs)."""
    return {
        SINK_NO_OP: _table(verdict_sink_no_op, intervention, FLOOR_SINK_GRID, "floor"),
        NORM_BEATS_RAW: _table(verdict_norm_beats_raw, board, FLOOR_BEATS_GRID, "floor"),
        ROLLOUT_BEATS_RAW: _table(verdict_rollout_beats_raw, board, FLOOR_BEATS_GRID, "floor"),
        VALUE_ZEROING_BEST: _table(verdict_value_zeroing_best, board, FLOOR_BEATS_GRID, "floor"),
        FIXED_HEADS_CHEAP: _table(verdict_fixed_heads_cheap, replacement, FLOOR_CHEAP_GRID, "floor"),
        MEAN_MAP_STANDS_IN: _table(verdict_mean_map_stands_in, replacement, FLOOR_COST_GRID, "floor"),
        FIXED_ORDER_BEATS_RANDOM: _table(verdict_fixed_order_beats_random, together, FLOOR_COST_GRID, "floor"),
    }


def verdicts(profile: SinkProfile, intervention: SinkIntervention, board: Scoreboard,
             replacement: MapReplacement, together: TogetherCurves) -> dict[str, ClaimVerdict]:
    """All eleven claims, keyed by the constants above."""
    return {
        SINK_MASS: verdict_sink_mass(profile),
        SINK_NO_OP: verdict_sink_no_op(intervention),
        NORMS_DISCOUNT_SINKS: verdict_norms_discount_sinks(profile),
        RAW_TRACKS_EFFECT: verdict_raw_tracks_effect(board),
        NORM_BEATS_RAW: verdict_norm_beats_raw(board),
        ROLLOUT_BEATS_RAW: verdict_rollout_beats_raw(board),
        VALUE_ZEROING_BEST: verdict_value_zeroing_best(board),
        FIXED_HEADS_CHEAP: verdict_fixed_heads_cheap(replacement),
        MEAN_MAP_STANDS_IN: verdict_mean_map_stands_in(replacement),
        HEADS_TOGETHER: verdict_heads_replaceable_together(together),
        FIXED_ORDER_BEATS_RANDOM: verdict_fixed_order_beats_random(together),
    }


# --------------------------------------------------------------------------- against the untrained twin


#: Which way each claim's deciding number moves toward "holds" (+1 larger, -1 smaller).
TOWARD_HOLDS = {
    SINK_MASS: +1, SINK_NO_OP: -1, NORMS_DISCOUNT_SINKS: +1, RAW_TRACKS_EFFECT: +1, NORM_BEATS_RAW: +1,
    ROLLOUT_BEATS_RAW: +1, VALUE_ZEROING_BEST: +1, FIXED_HEADS_CHEAP: -1, MEAN_MAP_STANDS_IN: -1,
    HEADS_TOGETHER: +1, FIXED_ORDER_BEATS_RANDOM: -1,
}
#: Floors against the twin, in each deciding number's units. A share of a layer's attention (the sink) or
#: of the special tokens' mass (the norms) must exceed the twin's by five points: a twentieth of the whole,
#: below which two shares of attention say the same thing.
TWIN_FLOOR_SHARE = 0.05
#: Raw attention's mean rho with the effect must exceed the twin's by the scoreboard's own floor
#: (:data:`FLOOR_BEATS_RHO`: about one pair of neighbouring tokens swapped in a 10-20-token query).
TWIN_FLOOR_RHO = FLOOR_BEATS_RHO
#: The fraction of heads replaceable together must exceed the twin's by a tenth of the heads: more than
#: one layer's heads (a twelfth) in a 12-layer model.
TWIN_FLOOR_HEADS = 0.1
#: The claims decided against a line at a threshold, with their floor against the twin; every other claim
#: (a comparison decided beyond its own floor: the sink's no-op, the scoreboard's "beats", fixed heads
#: cheap, the mean maps, the order) must beat its twin by that same floor (its ``numbers["floor"]``): as
#: much as the claim asks beyond no difference at all.
TWIN_FLOORS = {SINK_MASS: TWIN_FLOOR_SHARE, NORMS_DISCOUNT_SINKS: TWIN_FLOOR_SHARE, RAW_TRACKS_EFFECT: TWIN_FLOOR_RHO,
               HEADS_TOGETHER: TWIN_FLOOR_HEADS}
#: The lesson's number in each checked row's label.
LESSON = "13"


def twin_floor(key: str, verdict: ClaimVerdict) -> float:
    """How far beyond its untrained twin the model must be for claim ``key`` to hold, in the deciding
    number's units: :data:`TWIN_FLOORS`, else the verdict's own floor (``numbers["floor"]``; 0 for a
    verdict without one, e.g. one that cannot tell for want of evidence)."""
    if key in TWIN_FLOORS:
        return TWIN_FLOORS[key]
    value = verdict.numbers.get(N_("floor"), 0.0)
    return abs(float(value)) if isinstance(value, (int, float)) and np.isfinite(value) else 0.0


def against_the_twin(model: dict[str, ClaimVerdict], twin: dict[str, ClaimVerdict] | None, *,
                     twin_name: str = "", scale: float = 1.0) -> dict[str, ClaimVerdict]:
    """Every claim of :func:`verdicts` after the untrained-twin control (``twin``: the same claims on the
    twin, measured on the same texts and queries; ``scale`` multiplies every floor)."""
    return twin_checks.checked(model, twin, lesson=LESSON, toward=TOWARD_HOLDS, floor=twin_floor,
                               twin_name=twin_name, scale=scale)


def twin_floor_table(model: dict[str, ClaimVerdict], twin: dict[str, ClaimVerdict],
                     scales: Sequence[float] = twin_checks.FLOOR_SCALES) -> list[list]:
    """:func:`against_the_twin` with every floor scaled by each of ``scales``: rows ``[claim, floor,
    word at each scale...]`` after a header (:func:`attnlab.course.claims.twin_checks.floor_table`)."""
    return twin_checks.floor_table(model, twin, lesson=LESSON, toward=TOWARD_HOLDS, floor=twin_floor, scales=scales)


RAW_HOLDS = N_("Raw attention of the last layer ranks tokens like the effect of leaving them out at rho {model} on "
               "this model, and at {twin} on its untrained twin, on the same queries: above {threshold} and beyond "
               "the twin by more than {floor}. Here the weights do say, roughly, how much a token matters, and "
               "training made them say it.")
RAW_FAILS = N_("Raw attention of the last layer ranks tokens like the effect of leaving them out at rho {model} on "
               "this model ({twin} on its untrained twin, on the same queries): below {threshold}, so here the "
               "weights do not say how much a token matters.")
RAW_SAME = N_("Raw attention of the last layer ranks tokens like the effect of leaving them out at rho {model} on "
              "this model, above {threshold}; but its untrained twin gives {twin} on the same queries, not less by "
              "{floor}: the ranking comes with the architecture, not from training.")
RAW_UNSURE = N_("Raw attention of the last layer ranks tokens like the effect of leaving them out at rho {model} on "
                "this model ({twin} on its untrained twin, on the same queries): the interval reaches {threshold}, "
                "so this run cannot tell whether the weights say how much a token matters.")
RAW_MISSING = N_("Raw attention of the last layer ranks tokens like the effect of leaving them out at rho {model} on "
                 "this model ({twin} on its untrained twin, on the same queries), but no verdict rests on it here: "
                 "{why}.")


def what_raw_attention_says(model_board: Scoreboard, twin_board: Scoreboard, model: ClaimVerdict,
                            checked: ClaimVerdict, threshold: float = TRACKING_RHO) -> str:
    """One sentence, in the reader's language, on what raw attention says about leaving tokens out:
    the model's and the twin's mean rho (leave one out, positions kept, the same queries) with their
    intervals. ``model`` is the raw-tracking claim on the model, ``checked`` the same claim after
    :func:`against_the_twin`; together they pick the sentence."""
    values = {"model": str(model_board.interval("raw")), "twin": str(twin_board.interval("raw")),
              "threshold": f"{threshold:g}", "floor": f"{TWIN_FLOORS[RAW_TRACKS_EFFECT]:g}"}
    if checked.verdict == HOLDS:
        template = RAW_HOLDS
    elif checked.verdict == FAILS:
        template = RAW_FAILS
    elif model.verdict == HOLDS:
        template = RAW_SAME
    elif model.numbers.get("missing"):
        template, values["why"] = RAW_MISSING, translated(model.numbers["missing"])
    else:
        template = RAW_UNSURE
    return _(template).format(**values)
