"""Figures of lesson 04: every head of the first and of the last layer (the
source article's two figures), for the example query."""

from __future__ import annotations

from attnlab.core.language import _
from attnlab.course.figures import FigureContext, figure
from attnlab.course.figures.lesson_01 import example_attention
from attnlab.viz.multi_head_plots import plot_layer_heads_with_scale

LESSON = "04_multi_head_splitting.ipynb"


def _layer_figure(ctx: FigureContext, layer: int):
    att = example_attention(ctx)
    return plot_layer_heads_with_scale(att[0][layer], att.tokens[0], layer=layer, ncols=4,
                                       title=_("{text}: every head of layer {layer}").format(text=att.texts[0],
                                                                                              layer=layer + 1))


@figure("first_layer_heads", lesson=LESSON,
        caption="Every head of the first layer for the example query, on one colour scale")
def first_layer(ctx: FigureContext):
    return _layer_figure(ctx, 0)


@figure("last_layer_heads", lesson=LESSON,
        caption="Every head of the last layer for the example query, on one colour scale")
def last_layer(ctx: FigureContext):
    return _layer_figure(ctx, ctx.model.n_layers - 1)
