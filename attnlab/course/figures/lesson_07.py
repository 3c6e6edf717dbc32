"""Figures of lesson 07: heads with and without position embeddings, and the correlation
between "unchanged under perturbation" and "changed without positions"."""

from __future__ import annotations

from attnlab.analysis.compare import example_maps
from attnlab.analysis.perturb import example_perturbations
from attnlab.analysis.position import position_study, with_and_without
from attnlab.analysis.stats import bootstrap_correlation
from attnlab.data.corpus import queries
from attnlab.data.examples import example_for
from attnlab.viz.position_plots import plot_correlation, plot_with_without

from . import FigureContext, figure
from .lesson_06 import shared_study

LESSON = "07_position_embeddings.ipynb"


@figure("no_position_example", lesson=LESSON,
        caption="Every head of one layer for the example query, with and without position embeddings")
def no_position_example(ctx: FigureContext):
    m = ctx.model
    layer = example_maps(m, example_perturbations(m.language)).chosen_layer()
    text = example_for(m)
    with_maps, without_maps, _ = with_and_without(m, text)
    return plot_with_without(with_maps, without_maps, layer, text=text)


@figure("position_correlation", lesson=LESSON,
        caption="One point per head: similarity under perturbation against change without position "
                "embeddings, with the rank correlation and its bootstrap interval")
def position_correlation(ctx: FigureContext):
    m = ctx.model
    unchanged = shared_study(ctx).unchanged()  # (L, H)
    change = 1.0 - position_study(m, queries(m.language, ctx.pick(1000, 30))).similarity.mean(axis=0)  # (L, H)
    return plot_correlation(unchanged, change, bootstrap_correlation(unchanged, change, n_boot=500))
