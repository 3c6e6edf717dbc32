"""Figures of lesson 03: LSTM versus self-attention, measured on this machine."""

from __future__ import annotations

from attnlab.core.language import _
from attnlab.course.figures import FigureContext, figure
from attnlab.scratch.recurrence import first_token_influence, time_layers
from attnlab.viz.recurrence_plots import plot_first_token_share, plot_timing

LESSON = "03_why_self_attention.ipynb"


@figure("lstm_vs_attention_timing", lesson=LESSON,
        caption="Forward time of an LSTM and a self-attention layer of equal width (128) against "
                "sequence length, batch 16, one CPU thread: medians of 15 repeats, bars from the fastest "
                "to the slowest repeat")
def timing(ctx: FigureContext):
    lengths = ctx.pick([16, 32, 64, 128, 256, 512], [16, 64, 256])
    t = time_layers(lengths, width=128, repeats=ctx.pick(15, 3))
    return plot_timing(t, title=_("wall time (width d = 128)")).figure


@figure("first_token_dependence", lesson=LESSON,
        caption="How much the last output depends on the first token (its Jacobian norm relative to the "
                "average token), for untrained LSTM, bidirectional LSTM and self-attention layers, n = 4 to 128")
def first_token(ctx: FigureContext):
    lengths = ctx.pick([4, 8, 16, 32, 64, 128], [4, 16])
    inf = first_token_influence(lengths, seeds=ctx.pick((0, 1, 2, 3, 4), (0, 1)))
    return plot_first_token_share(inf, title=_("dependence of the last output on the first token "
                                               "(untrained layers)")).figure
