"""Figures of lesson 08: the article's mean maps of layers 1-4 and the fixedness map."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "08_layer_averaging.ipynb"


def shared_mean(ctx: FigureContext):
    """Mean attention of every layer over same-length queries, computed once per build."""
    from attnlab.core.streaming import mean_attention
    from attnlab.data.querygen import same_length_queries

    queries = lambda: same_length_queries(ctx.model, ctx.pick(100_000, 200))  # noqa: E731
    return ctx.memo("mean08", lambda: mean_attention(ctx.model, queries(), progress=False))


@figure("mean_maps_layers_1_4", lesson=LESSON,
        caption="Mean attention maps of layers 1-4 x all heads over many same-length queries "
                "(the source article's figure, one colour scale)")
def mean_maps_layers_1_4(ctx: FigureContext):
    from attnlab.analysis.fixedness import plot_mean_maps

    acc = shared_mean(ctx)
    return plot_mean_maps(acc, layers=range(min(4, len(acc.layers))))


@figure("fixedness_map", lesson=LESSON,
        caption="Per-head fixedness (1 = every query gets the same map) beside the sharpness of the mean map")
def fixedness_map(ctx: FigureContext):
    from attnlab.analysis.fixedness import plot_fixedness

    return plot_fixedness(shared_mean(ctx))
