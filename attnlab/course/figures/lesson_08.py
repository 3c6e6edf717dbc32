"""Figures of lesson 08: the article's mean maps of layers 1-4 and the fixedness map."""

from __future__ import annotations

from attnlab.core.streaming import MeanAttention, mean_attention
from attnlab.course.claims.averaging import ARTICLE_LAYERS, ARTICLE_QUERIES, FIXED_THRESHOLD
from attnlab.course.figures import FigureContext, figure
from attnlab.data.querygen import same_length_queries
from attnlab.viz.fixedness_plots import plot_fixedness, plot_mean_maps

LESSON = "08_layer_averaging.ipynb"


def shared_mean(ctx: FigureContext) -> MeanAttention:
    """Mean attention of every layer over same-length queries, computed once per build."""
    queries = lambda: same_length_queries(ctx.model, ctx.pick(ARTICLE_QUERIES, 200))  # noqa: E731
    return ctx.memo("mean08", lambda: mean_attention(ctx.model, queries(), progress=False))


@figure("mean_maps_layers_1_4", lesson=LESSON,
        caption="Mean attention maps of layers 1-4 x all heads over many same-length queries "
                "(the source article's figure, one colour scale)")
def mean_maps_layers_1_4(ctx: FigureContext):
    acc = shared_mean(ctx)
    return plot_mean_maps(acc, layers=range(min(ARTICLE_LAYERS, len(acc.layers))))


@figure("fixedness_map", lesson=LESSON,
        caption="Per-head fixedness (1 = every query gets the same map) beside the sharpness of the mean map")
def fixedness_map(ctx: FigureContext):
    return plot_fixedness(shared_mean(ctx), threshold=FIXED_THRESHOLD)
