"""Lesson 13's saved result: what attention weights do not tell, as later lessons read it.

Saved by the notebook with::

    results.save("13_attention_limits", AttentionLimitsResult.from_run(...), model=m)

and read (lesson 12 cites the mean-map replacement under the article's first
conclusion) with ``results.load("13_attention_limits", AttentionLimitsResult, model=m)``.
Arrays are ``[layers, heads]`` over ``papa_layers`` (0-based) unless a field says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnlab.analysis.faithfulness import Scoreboard
from attnlab.analysis.mean_map_replacement import MapReplacement, TogetherCurves
from attnlab.analysis.sinks import SinkIntervention, SinkProfile
from attnlab.analysis.stats import Interval
from attnlab.core.records import Record
from attnlab.course.claims import attention_limits as claims
from attnlab.course.verdicts import ClaimVerdict

#: The name the notebook saves under.
RESULT_NAME = "13_attention_limits"


@dataclass
class AttentionLimitsResult(Record):
    """Lesson 13: sinks, norm-based attention, the faithfulness scoreboard and mean-map replacement.

    Attributes:
        sink_texts: texts behind the sink measurements.
        special_share_raw, special_share_norm: ``(L,)`` share of attention on [CLS]/[SEP]
            (or <s>/</s>) per layer, raw and norm-based, with intervals over texts.
        separator_share_raw: ``(L,)`` share on the separator alone ([SEP] or </s>), raw.
        removed_share: share of the special tokens' raw mass that norm-based weights remove.
        sink_effect, control_effect: mean cosine distance of the sentence representation when
            the sink's (a random word's) value vectors are zeroed in one layer.
        view_rho: view -> mean Spearman rho with the leave-one-out effect that keeps positions
            (interval over queries).
        view_rho_deleted: the same against deleting the token.
        view_ranking, view_ranking_deleted: views from best to worst under each ground truth.
        scored_queries: queries on the scoreboard (the same for every view).
        papa_layers: layers whose heads were replaced by their mean map.
        papa_cost, papa_control: ``(L, H)`` mean cost of the mean map / another query's map.
        papa_fixedness: ``(L, H)`` fixedness of each replaced head.
        papa_rho: Spearman rho over all heads of fixedness and cost (interval over texts).
        papa_within_rho: the same within layers, averaged (interval over texts).
        papa_saving: mean-map cost minus control cost (interval over texts).
        papa_labels: ``(L, H)`` "cheap" / "costly" / "cannot tell" per head replaced alone.
        together_fractions: ``(F,)`` fractions of heads replaced together.
        together_fixed_first, together_reverse: ``(F,)`` mean cost, most / least fixed first.
        together_random_low, together_random_high: ``(F,)`` band of the random orders.
        together_replaceable: fraction replaceable together within the tolerance (interval over texts).
        together_tolerance: that tolerance (cosine distance).
        mean_queries: queries behind the mean maps.
        verdicts: the claims of :mod:`attnlab.course.claims.attention_limits`, by key.
        sensitivity: claim key -> {threshold: verdict word} (for the comparisons decided beyond a floor,
            {floor: verdict word}: :func:`attnlab.course.claims.attention_limits.floor_sensitivity`).
    """

    sink_texts: int
    special_share_raw: Interval
    special_share_norm: Interval
    removed_share: float
    sink_effect: float
    control_effect: float
    view_rho: dict[str, Interval]
    view_ranking: list[str]
    scored_queries: int
    papa_layers: list[int]
    papa_cost: np.ndarray
    papa_control: np.ndarray
    papa_fixedness: np.ndarray
    papa_rho: Interval
    papa_saving: Interval
    mean_queries: int
    separator_share_raw: Interval | None = None
    view_rho_deleted: dict[str, Interval] = field(default_factory=dict)
    view_ranking_deleted: list[str] = field(default_factory=list)
    papa_within_rho: Interval | None = None
    papa_labels: list[list[str]] = field(default_factory=list)
    together_fractions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_fixed_first: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_reverse: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_random_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_random_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_replaceable: Interval | None = None
    together_tolerance: float = float("nan")
    verdicts: dict[str, ClaimVerdict] = field(default_factory=dict)
    sensitivity: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_run(cls, profile: SinkProfile, intervention: SinkIntervention, board: Scoreboard,
                 replacement: MapReplacement, together: TogetherCurves) -> "AttentionLimitsResult":
        """The record of one run of the lesson's five measurements (verdicts computed here)."""
        tables = {
            claims.SINK_MASS: claims.sink_mass_sensitivity(profile),
            claims.NORMS_DISCOUNT_SINKS: claims.norms_sensitivity(profile),
            claims.RAW_TRACKS_EFFECT: claims.tracking_sensitivity(board),
            **claims.floor_sensitivity(intervention, board, replacement, together),
        }
        return cls(
            sink_texts=profile.n_texts,
            special_share_raw=profile.per_layer("raw", "special"),
            special_share_norm=profile.per_layer("norm", "special"),
            removed_share=float(claims.removed_share_per_text(profile).mean()),
            sink_effect=float(intervention.sink_effect.mean()),
            control_effect=float(intervention.control_effect.mean()),
            view_rho=board.intervals(),
            view_ranking=board.ranking(),
            scored_queries=len(board.queries),
            papa_layers=list(replacement.layers),
            papa_cost=replacement.mean_cost,
            papa_control=replacement.mean_control,
            papa_fixedness=replacement.fixedness,
            papa_rho=replacement.fixedness_cost_correlation(),
            papa_saving=replacement.saving(),
            mean_queries=replacement.mean_count,
            separator_share_raw=profile.per_layer("raw", "end"),
            view_rho_deleted=board.intervals("deleted"),
            view_ranking_deleted=board.ranking("deleted"),
            papa_within_rho=replacement.within_layer_rho(),
            papa_labels=claims.replacement_head_labels(replacement).tolist(),
            together_fractions=together.fractions,
            together_fixed_first=together.fixed_first.mean(axis=0),
            together_reverse=together.reverse.mean(axis=0),
            together_random_low=together.random_band()[0],
            together_random_high=together.random_band()[1],
            together_replaceable=together.replaceable(),
            together_tolerance=together.tolerance(),
            verdicts=claims.verdicts(profile, intervention, board, replacement, together),
            sensitivity={key: {f"{t:g}": word for t, word in table.items()} for key, table in tables.items()},
        )
