"""Figures of lesson 09: heads embedded by MDS, and the within-layer dispersion per layer."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "09_head_diversity.ipynb"


def shared_distances(ctx: FigureContext):
    """Head distances over same-length queries, computed once per build."""
    from attnlab.analysis.diversity import head_distances
    from attnlab.data.querygen import same_length_queries

    queries = lambda: same_length_queries(ctx.model, ctx.pick(2000, 60))  # noqa: E731
    return ctx.memo("dist09", lambda: head_distances(ctx.model, queries(), progress=False))


@figure("head_mds", lesson=LESSON,
        caption="Every head as a point: 2-D MDS of Clark et al.'s Jensen-Shannon head distances, coloured by layer")
def head_mds(ctx: FigureContext):
    from attnlab.analysis.diversity import plot_mds

    return plot_mds(shared_distances(ctx))


@figure("layer_dispersion", lesson=LESSON,
        caption="Mean distance between the heads of each layer, with bootstrap intervals over queries")
def layer_dispersion(ctx: FigureContext):
    from attnlab.analysis.diversity import depth_trend, plot_dispersion

    return plot_dispersion(depth_trend(shared_distances(ctx), n_boot=ctx.pick(1000, 200)))
