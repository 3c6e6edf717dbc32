"""Figures of lesson 03: LSTM versus self-attention, measured on this machine."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "03_why_self_attention.ipynb"


@figure("lstm_vs_attention_timing", lesson=LESSON,
        caption="Forward time of an LSTM and a self-attention layer of equal width (128) against "
                "sequence length, batch 16, one CPU thread")
def timing(ctx: FigureContext):
    import matplotlib.pyplot as plt

    from attnlab.viz.plot import plot_curves
    from attnlab.scratch.recurrence import time_layers

    lengths = ctx.pick([16, 32, 64, 128, 256, 512], [16, 64, 256])
    t = time_layers(lengths, width=128, repeats=ctx.pick(5, 2))
    _, ax = plt.subplots(figsize=(5, 3.6))
    plot_curves(lengths, {k: [s * 1000 for s in v] for k, v in t.seconds.items()}, xlabel="sequence length n",
                ylabel="ms per forward pass", logx=True, logy=True, ax=ax, title="wall time (width d = 128)")
    ax.axvline(128, color="grey", ls=":", lw=1)
    return ax.figure


@figure("first_token_dependence", lesson=LESSON,
        caption="How much the last output depends on the first token (its Jacobian norm relative to the "
                "average token), for random LSTM, bidirectional LSTM and self-attention layers")
def first_token(ctx: FigureContext):
    import matplotlib.pyplot as plt

    from attnlab.viz.plot import plot_curves
    from attnlab.scratch.recurrence import first_token_influence

    lengths = ctx.pick([4, 8, 16, 32, 64], [4, 16])
    inf = first_token_influence(lengths, seeds=ctx.pick((0, 1, 2, 3, 4), (0, 1)))
    floor = 1e-30  # an LSTM's share underflows to 0 for long inputs; keep it on the log axis
    _, ax = plt.subplots(figsize=(5, 3.6))
    plot_curves(lengths, {k: [max(v, floor) for v in vals] for k, vals in inf.share.items()},
                xlabel="sequence length n", ylabel="first token's share of the gradient", logx=True, logy=True,
                ax=ax, title="dependence of the last output on the first token")
    return ax.figure
