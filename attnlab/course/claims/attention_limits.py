"""Lesson 13's claims: what attention weights do and do not tell, decided from the run.

Published claims, each tested on the running model:

1. :func:`verdict_sink_mass` -- in some layer most attention goes to the special
   tokens (Clark et al. 2019: over half on [SEP] in BERT-base's layers 6-10);
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
7. :func:`verdict_value_zeroing_best` -- value zeroing tracks it better than every
   other view (Mohebbi et al. 2023);
8. :func:`verdict_fixed_heads_cheap` -- the more fixed a head, the less it costs to
   replace its map by its mean map (after Hassid et al. 2022);
9. :func:`verdict_mean_map_stands_in` -- a head's mean map stands in for its own map
   better than another query's map does (the control of 8).

Every test is an interval on one side of a named threshold; where the threshold
is a choice, ``*_sensitivity`` gives the verdict for a few other values (through
:func:`attnlab.course.claims.sensitivity.sensitivity_rows`).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from attnlab.analysis.faithfulness import VIEW_LABELS, VIEWS, Scoreboard
from attnlab.analysis.mean_map_replacement import MapReplacement
from attnlab.analysis.sinks import SinkIntervention, SinkProfile
from attnlab.analysis.stats import bootstrap_mean
from attnlab.course.claims.sensitivity import sensitivity_rows
from attnlab.course.verdicts import ClaimVerdict

#: Clark et al. (2019): over half of BERT-base's attention lands on [SEP] ...
CLARK_SEP_SHARE = 0.5
#: ... in its layers 6-10 (1-based, of 12).
CLARK_SEP_LAYERS = (6, 10)

#: "Most attention goes to the special tokens": a layer's share above this (interval).
SINK_SHARE = CLARK_SEP_SHARE
#: Norm-based weights "discount" the sinks when at least this share of their raw mass disappears.
NORM_REMOVES = 0.5
#: Raw attention "ranks tokens by their effect" when the mean Spearman rho is above this (interval).
TRACKING_RHO = 0.5
#: Thresholds of the sensitivity tables.
SINK_SHARE_GRID = (0.3, 0.4, 0.5, 0.6, 0.7)
NORM_REMOVES_GRID = (0.25, 0.5, 0.75)
TRACKING_RHO_GRID = (0.3, 0.5, 0.7, 0.9)

CLAIM_SINK_MASS = "in some layer, most of the attention goes to the special tokens ([CLS]/[SEP] or <s>/</s>)"
CLAIM_SINK_NO_OP = ("attending to the sink is close to a no-op: zeroing its value vectors in a layer moves the "
                    "output less than zeroing a word's")
CLAIM_NORMS = "norm-based weights remove at least half of the special tokens' share of the attention"
CLAIM_RAW_TRACKS = "raw attention (last layer) ranks tokens by how much removing them changes the output"
CLAIM_NORM_BEATS = "norm-based weights rank tokens by their effect better than raw attention"
CLAIM_ROLLOUT_BEATS = "attention rollout ranks tokens by their effect better than raw attention"
CLAIM_VZ_BEST = "value zeroing ranks tokens by their effect better than every other view"
CLAIM_FIXED_CHEAP = "the more fixed a head, the less it costs to replace its map by its mean map"
CLAIM_MEAN_STANDS_IN = "a head's mean map stands in for its own map better than another query's map"

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


# --------------------------------------------------------------------------- sinks


def verdict_sink_mass(profile: SinkProfile, threshold: float = SINK_SHARE) -> ClaimVerdict:
    """Per layer, the mean raw share on the special tokens with a bootstrap interval over texts:
    holds when some layer's whole interval is above ``threshold``, does not hold when every
    layer's is below it."""
    share = profile.per_layer("raw", "special")
    low, high = np.asarray(share.low), np.asarray(share.high)
    top = int(np.argmax(share.estimate))
    return ClaimVerdict.decide(
        CLAIM_SINK_MASS, holds=bool((low > threshold).any()), fails=bool((high < threshold).all()),
        threshold=threshold, top_layer=top + 1, top_share=float(np.asarray(share.estimate)[top]),
        top_low=float(low[top]), top_high=float(high[top]),
        layers_above=[int(l) + 1 for l in np.nonzero(low > threshold)[0]], texts=share.n,
    )


def verdict_sink_no_op(intervention: SinkIntervention) -> ClaimVerdict:
    """Sink effect minus control effect, averaged over layers, with an interval over texts: holds
    when it lies below 0, does not hold when above 0. Without a sink (the special tokens get no
    more attention than the control word) there is nothing to test."""
    sink_mass, control_mass = float(intervention.sink_mass.mean()), float(intervention.control_mass.mean())
    if sink_mass <= control_mass:
        return ClaimVerdict.missing(CLAIM_SINK_NO_OP, "the special tokens get no more attention than a word here")
    diff = intervention.overall_difference()
    return ClaimVerdict.decide(
        CLAIM_SINK_NO_OP, holds=diff.below(0.0), fails=diff.above(0.0),
        sink_effect=float(intervention.sink_effect.mean()), control_effect=float(intervention.control_effect.mean()),
        difference=float(diff.estimate), low=float(diff.low), high=float(diff.high),
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
    return ClaimVerdict.decide(
        CLAIM_NORMS, holds=removed.above(threshold), fails=removed.below(threshold), threshold=threshold,
        removed=float(removed.estimate), low=float(removed.low), high=float(removed.high),
        raw_share=float(profile.special("raw").mean()), norm_share=float(profile.special("norm").mean()),
        texts=removed.n,
    )


# --------------------------------------------------------------------------- the scoreboard


def verdict_raw_tracks_effect(board: Scoreboard, threshold: float = TRACKING_RHO) -> ClaimVerdict:
    """Mean Spearman rho of raw attention and the leave-one-out effect, interval over queries:
    holds when it lies above ``threshold``, does not hold when below."""
    rho = board.interval("raw")
    return ClaimVerdict.decide(
        CLAIM_RAW_TRACKS, holds=rho.above(threshold), fails=rho.below(threshold), threshold=threshold,
        mean_rho=float(rho.estimate), low=float(rho.low), high=float(rho.high), queries=rho.n,
    )


def _beats(claim: str, board: Scoreboard, view: str, others: Sequence[str]) -> ClaimVerdict:
    """``view`` beats each of ``others``: every paired interval of ``rho_view - rho_other`` above 0
    holds; any below 0 does not hold."""
    pairs = {other: board.paired(view, other) for other in others}
    numbers = {f"minus_{other}": [round(float(x), 4) for x in (p.estimate, p.low, p.high)]  # [estimate, low, high]
               for other, p in pairs.items()}
    rho = board.interval(view)
    return ClaimVerdict.decide(
        claim, holds=all(p.above(0.0) for p in pairs.values()), fails=any(p.below(0.0) for p in pairs.values()),
        mean_rho=float(rho.estimate), ranking=[VIEW_LABELS[v] for v in board.ranking()], queries=rho.n, **numbers,
    )


def verdict_norm_beats_raw(board: Scoreboard) -> ClaimVerdict:
    """Paired difference of rho (norm-based minus raw) over queries, interval above / below 0."""
    return _beats(CLAIM_NORM_BEATS, board, "norm", ["raw"])


def verdict_rollout_beats_raw(board: Scoreboard) -> ClaimVerdict:
    """Paired difference of rho (rollout minus raw) over queries, interval above / below 0."""
    return _beats(CLAIM_ROLLOUT_BEATS, board, "rollout", ["raw"])


def verdict_value_zeroing_best(board: Scoreboard) -> ClaimVerdict:
    """Value zeroing minus each other view: holds when every paired interval is above 0, does not
    hold when one is below 0 (another view is better), else cannot tell."""
    return _beats(CLAIM_VZ_BEST, board, "value_zeroing", [v for v in VIEWS if v != "value_zeroing"])


# --------------------------------------------------------------------------- mean maps


def verdict_fixed_heads_cheap(replacement: MapReplacement) -> ClaimVerdict:
    """Spearman rho over heads of fixedness and replacement cost, interval from resampling heads:
    holds when it lies below 0, does not hold when above 0."""
    rho = replacement.fixedness_cost_correlation()
    within = replacement.within_layer_correlations()  # (L,): the same, layer by layer
    return ClaimVerdict.decide(
        CLAIM_FIXED_CHEAP, holds=rho.below(0.0), fails=rho.above(0.0),
        spearman_rho=float(rho.estimate), low=float(rho.low), high=float(rho.high), heads=rho.n,
        within_layer_rho=float(np.nanmean(within)) if np.isfinite(within).any() else float("nan"),
        layers=[l + 1 for l in replacement.layers], mean_queries=replacement.mean_count,
    )


def verdict_mean_map_stands_in(replacement: MapReplacement) -> ClaimVerdict:
    """Cost with the mean map minus cost with another query's map, averaged over heads, interval
    over texts: holds when below 0, does not hold when above 0."""
    saving = replacement.saving()
    return ClaimVerdict.decide(
        CLAIM_MEAN_STANDS_IN, holds=saving.below(0.0), fails=saving.above(0.0),
        mean_map_cost=float(replacement.cost.mean()), other_query_cost=float(replacement.control.mean()),
        difference=float(saving.estimate), low=float(saving.low), high=float(saving.high), texts=saving.n,
    )


# --------------------------------------------------------------------------- all of them


def _table(claim: Callable[..., ClaimVerdict], evidence: object, thresholds: Sequence[float]) -> dict[float, str]:
    """``{threshold: verdict word}`` from :func:`attnlab.course.claims.sensitivity.sensitivity_rows`."""
    rows = sensitivity_rows(claim, evidence, {"threshold": [float(t) for t in thresholds]})
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


def verdicts(profile: SinkProfile, intervention: SinkIntervention, board: Scoreboard,
             replacement: MapReplacement) -> dict[str, ClaimVerdict]:
    """All nine claims, keyed by the constants above."""
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
    }
