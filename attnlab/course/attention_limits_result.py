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
from attnlab.analysis.mean_map_replacement import MapReplacement
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
        removed_share: share of the special tokens' raw mass that norm-based weights remove.
        sink_effect, control_effect: mean cosine distance of the sentence representation when
            the sink's (a random word's) value vectors are zeroed in one layer.
        view_rho: view -> mean Spearman rho with the leave-one-out effect (interval over queries).
        view_ranking: views from best to worst.
        scored_queries: queries on the scoreboard.
        papa_layers: layers whose heads were replaced by their mean map.
        papa_cost, papa_control: ``(L, H)`` mean cost of the mean map / another query's map.
        papa_fixedness: ``(L, H)`` fixedness of each replaced head.
        papa_rho: Spearman rho over heads of fixedness and cost (interval over heads).
        papa_saving: mean-map cost minus control cost (interval over texts).
        mean_queries: queries behind the mean maps.
        verdicts: the claims of :mod:`attnlab.course.claims.attention_limits`, by key.
        sensitivity: claim key -> {threshold: verdict word}.
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
    verdicts: dict[str, ClaimVerdict] = field(default_factory=dict)
    sensitivity: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_run(cls, profile: SinkProfile, intervention: SinkIntervention, board: Scoreboard,
                 replacement: MapReplacement) -> "AttentionLimitsResult":
        """The record of one run of the lesson's four measurements (verdicts computed here)."""
        tables = {
            claims.SINK_MASS: claims.sink_mass_sensitivity(profile),
            claims.NORMS_DISCOUNT_SINKS: claims.norms_sensitivity(profile),
            claims.RAW_TRACKS_EFFECT: claims.tracking_sensitivity(board),
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
            verdicts=claims.verdicts(profile, intervention, board, replacement),
            sensitivity={key: {f"{t:g}": word for t, word in table.items()} for key, table in tables.items()},
        )
