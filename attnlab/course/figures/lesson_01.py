"""Figures of lesson 01: one head of the example query."""

from __future__ import annotations

from attnlab.core.extract import Attention, attention
from attnlab.core.language import _
from attnlab.course.figures import FigureContext, figure
from attnlab.data.examples import example_for
from attnlab.scratch.self_attention import find_pattern_heads
from attnlab.viz.plot import head_label, plot_head

LESSON = "01_self_attention.ipynb"


def example_attention(ctx: FigureContext) -> Attention:
    """The example query's attention on ``ctx.model``, computed once per build."""
    return ctx.memo("example_att", lambda: attention(ctx.model, [example_for(ctx.model)]))


@figure("head_example", lesson=LESSON,
        caption="One head of the example query: the head with the strongest previous/next-token band, "
                "each row a query token's weights over the keys")
def head_example(ctx: FigureContext):
    att = example_attention(ctx)
    layer, head, score = find_pattern_heads(att[0])["band"]
    im = plot_head(att.head(0, layer, head), att.tokens[0], annotate=True,
                   title=_("{head}: band strength {score:.2f}").format(head=head_label(layer, head), score=score))
    return im.figure
