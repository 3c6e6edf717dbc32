"""Figures of lesson 09: heads embedded by MDS, and the within-layer dispersion per layer."""

from __future__ import annotations

from attnlab.analysis.diversity import HeadDistances, depth_trend, head_distances, shuffled_baseline
from attnlab.course.figures import FigureContext, figure
from attnlab.data.querygen import same_length_queries
from attnlab.viz.diversity_plots import plot_dispersion, plot_mds

LESSON = "09_head_diversity.ipynb"


def shared_distances(ctx: FigureContext) -> HeadDistances:
    """Head distances over same-length queries, computed once per build."""
    queries = lambda: same_length_queries(ctx.model, ctx.pick(2000, 60))  # noqa: E731
    return ctx.memo("dist09", lambda: head_distances(ctx.model, queries(), progress=False))


@figure("head_mds", lesson=LESSON,
        caption="Every head as a point: 2-D MDS of Clark et al.'s Jensen-Shannon head distances, coloured by layer")
def head_mds(ctx: FigureContext):
    return plot_mds(shared_distances(ctx))


@figure("layer_dispersion", lesson=LESSON,
        caption="Mean distance between the heads of each layer, with bootstrap intervals over queries, "
                "beside heads dealt to layers at random")
def layer_dispersion(ctx: FigureContext):
    hd = shared_distances(ctx)
    return plot_dispersion(depth_trend(hd, n_boot=ctx.pick(1000, 200)),
                           shuffled_baseline(hd, n_perm=ctx.pick(2000, 200)))
