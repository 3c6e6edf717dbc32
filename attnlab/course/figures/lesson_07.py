"""Figures of lesson 07: heads with and without position embeddings, every head under the
removal and its controls, and the link between "unchanged under perturbation" and
"changed without positions", layer by layer."""

from __future__ import annotations

from attnlab.analysis.compare import example_maps
from attnlab.analysis.perturb import example_perturbations
from attnlab.analysis.position import PositionStudy, correlation_by_layer, position_study, with_and_without
from attnlab.analysis.stats import bootstrap_correlation
from attnlab.course.claims.position import STRONG
from attnlab.data.corpus import queries
from attnlab.data.examples import example_for
from attnlab.viz.position_plots import plot_controls, plot_correlation, plot_with_without

from . import FigureContext, figure
from .lesson_06 import shared_study

LESSON = "07_position_embeddings.ipynb"


def _position_study(ctx: FigureContext) -> PositionStudy:
    m = ctx.model
    return ctx.memo("study07", lambda: position_study(m, queries(m.language, ctx.pick(1000, 30))))


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
                "the moved weight that lands on [CLS]/[SEP]")
def position_controls(ctx: FigureContext):
    return plot_controls(_position_study(ctx), n_boot=200)


@figure("position_correlation", lesson=LESSON,
        caption="Similarity under perturbation against change with positions zeroed: one point per head, and the "
                "rank correlation within each layer with its bootstrap interval (pooled only for reference)")
def position_correlation(ctx: FigureContext):
    unchanged = shared_study(ctx).unchanged()  # (L, H)
    change = _position_study(ctx).change("zero", n_boot=200).estimate  # (L, H)
    return plot_correlation(unchanged, change, correlation_by_layer(unchanged, change, n_boot=500),
                            bootstrap_correlation(unchanged, change, n_boot=500), strong=STRONG)
