"""Figures of lesson 07: heads with and without position embeddings, and the correlation
between "unchanged under perturbation" and "changed without positions"."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "07_position_embeddings.ipynb"


@figure("no_position_example", lesson=LESSON,
        caption="Every head of one layer for the example query, with and without position embeddings")
def no_position_example(ctx: FigureContext):
    from attnlab.analysis.compare import example_maps
    from attnlab.data.examples import example_for
    from attnlab.analysis.perturb import example_perturbations
    from attnlab.analysis.position import plot_with_without

    m = ctx.model
    layer = example_maps(m, example_perturbations(m.language)).chosen_layer()
    return plot_with_without(m, example_for(m), layer)


@figure("position_correlation", lesson=LESSON,
        caption="One point per head: similarity under perturbation against change without position "
                "embeddings, with the rank correlation and its bootstrap interval")
def position_correlation(ctx: FigureContext):
    import numpy as np

    from attnlab.data.corpus import queries
    from attnlab.analysis.position import head_correlation, plot_correlation, position_change
    from .lesson_06 import shared_study

    m = ctx.model
    study = shared_study(ctx)
    unchanged = np.mean([study.similarity(k, n_boot=50).mean for k in study.kinds], axis=0)
    change = position_change(m, queries(m.language, ctx.pick(1000, 30))).change(n_boot=50).mean
    return plot_correlation(unchanged, change, head_correlation(unchanged, change, n_boot=500))
