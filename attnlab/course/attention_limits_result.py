"""Lesson 13's saved result built from a run: what attention weights do not tell, as later lessons read it.

Saved by the notebook with::

    results.save(AttentionLimitsResult.file_name, attention_limits_result.from_run(...), model=m)

and read (lesson 12 cites the mean-map replacement under the article's first
conclusion) with ``results.load(AttentionLimitsResult.file_name, AttentionLimitsResult, model=m)``. The record itself,
plain data, is :class:`attnlab.course.lesson_results.AttentionLimitsResult` (below the claims);
:func:`from_run` builds it and asks :mod:`attnlab.course.claims.attention_limits` for its verdicts.
"""

from __future__ import annotations

from attnlab.analysis.faithfulness import Scoreboard
from attnlab.analysis.mean_map_replacement import MapReplacement, TogetherCurves
from attnlab.analysis.sinks import SinkIntervention, SinkProfile
from attnlab.course.claims import attention_limits as claims
from attnlab.course.lesson_results import AttentionLimitsResult

__all__ = ["AttentionLimitsResult", "from_run"]


def from_run(profile: SinkProfile, intervention: SinkIntervention, board: Scoreboard,
             replacement: MapReplacement, together: TogetherCurves) -> AttentionLimitsResult:
    """The record of one run of the lesson's five measurements (verdicts computed here)."""
    tables = {
        claims.SINK_MASS: claims.sink_mass_sensitivity(profile),
        claims.NORMS_DISCOUNT_SINKS: claims.norms_sensitivity(profile),
        claims.RAW_TRACKS_EFFECT: claims.tracking_sensitivity(board),
        **claims.floor_sensitivity(intervention, board, replacement, together),
    }
    return AttentionLimitsResult(
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
