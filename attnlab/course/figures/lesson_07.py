"""Figures of lesson 07: heads with and without position embeddings, every head under the
removal and its controls, and the link between "unchanged under perturbation" and
"changed without positions", layer by layer."""

from __future__ import annotations

import numpy as np

from attnlab.analysis.compare import example_maps
from attnlab.analysis.perturb import example_perturbations
from attnlab.analysis.position import (
    PositionStudy,
    correlation_by_layer_over_queries,
    pooled_correlation_over_queries,
    position_study,
    with_and_without,
)
from attnlab.core.language import _
from attnlab.course.claims.position import STRONG
from attnlab.data.examples import example_for
from attnlab.viz.position_plots import plot_controls, plot_correlation, plot_with_without

from . import FigureContext, figure
from .lesson_06 import shared_study

LESSON = "07_position_embeddings.ipynb"


def _position_study(ctx: FigureContext) -> PositionStudy:
    return ctx.over_queries("study07", position_study)


@figure("no_position_example", lesson=LESSON,
        caption="Every head of one layer for the example query, with and without position embeddings, with tokens")
def no_position_example(ctx: FigureContext):
    m = ctx.model
    layer = example_maps(m, example_perturbations(m.language)).chosen_layer()
    text = example_for(m)
    with_maps, without_maps, tokens = with_and_without(m, text)
    return plot_with_without(with_maps, without_maps, layer, text=text, tokens=tokens)


@figure("position_controls", lesson=LESSON,
        caption="Per-head change with positions zeroed, replaced by their mean, or shuffled, and the share of "
                "the moved weight that lands on the special tokens at both ends")
def position_controls(ctx: FigureContext):
    return plot_controls(_position_study(ctx), ends=ctx.model.end_tokens, n_boot=200)


@figure("position_correlation", lesson=LESSON,
        caption="Similarity under perturbation against change with positions zeroed: one point per head, and the "
                "rank correlation within each layer with its interval from resampling the queries (pooled only "
                "for reference)")
def position_correlation(ctx: FigureContext):
    study06, study07 = shared_study(ctx), _position_study(ctx)
    if study06.texts != study07.texts:
        raise ValueError(_("lessons 06 and 07 must measure the same queries, in the same order"))
    unchanged = study06.unchanged_per_query()  # (N, L, H)
    change = 1.0 - study07.values("zero")  # (N, L, H)
    return plot_correlation(np.nanmean(unchanged, axis=0), change.mean(axis=0),
                            correlation_by_layer_over_queries(unchanged, change, n_boot=500),
                            pooled_correlation_over_queries(unchanged, change, n_boot=500), strong=STRONG)
