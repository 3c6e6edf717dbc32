"""Lesson 03's figures: LSTM against self-attention, timed and differentiated.

Each function draws a measurement from :mod:`attnlab.scratch.recurrence` and
returns the axes, so the lesson and the ``attnlab figures`` command share one drawing.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.language import N_, _
from attnlab.scratch.recurrence import Influence, Timing
from attnlab.viz.plot import plot_curves

#: how a legend names each kind of layer (model names stay names; the rest is translated)
KIND_NAMES = {"lstm": "LSTM", "bilstm": "BiLSTM", "attention": N_("self-attention")}

#: An LSTM's first-token share underflows to 0 for long inputs; it is drawn at this floor on the log axis.
SHARE_FLOOR = 1e-30


def kind_name(kind: str) -> str:
    """The legend's name of a layer kind (``"lstm"`` -> ``LSTM``, ``"attention"`` -> self-attention, translated)."""
    return _(KIND_NAMES[kind]) if kind in KIND_NAMES else kind


def plot_timing(timing: Timing, *, ax=None, title: str | None = None):
    """Milliseconds per forward pass against the sequence length ``n`` (log-log), one
    line per layer kind through the medians, bars from the fastest to the slowest
    repeat, and a dotted vertical line at ``n = d`` (the layers' width).

    Returns:
        The axes.
    """
    kinds = {kind_name(k): k for k in timing.seconds}
    ax = plot_curves(timing.lengths, {kind_name(k): [1000 * s for s in v] for k, v in timing.seconds.items()},
                     xlabel=_("sequence length n"), ylabel=_("ms per forward pass (median)"), logx=True, logy=True,
                     ax=ax, title=title or _("wall time, width d = {width}").format(width=timing.width))
    for line in list(ax.get_lines()):
        kind = kinds.get(line.get_label())
        if kind in timing.samples:
            ms = 1000 * timing.repeats(kind)  # (R, K)
            mid = np.asarray(line.get_ydata(), dtype=float)
            ax.errorbar(timing.lengths, mid, yerr=[mid - ms.min(axis=0), ms.max(axis=0) - mid], fmt="none",
                        ecolor=line.get_color(), elinewidth=1, capsize=3)
    ax.axvline(timing.width, color="grey", ls=":", lw=1)
    return ax


def plot_first_token_share(influence: Influence, *, ax=None, title: str | None = None):
    """The first token's share of the last output's gradient against ``n`` (log-log), one
    line per layer kind; shares of exactly 0 are drawn at :data:`SHARE_FLOOR`.

    Returns:
        The axes.
    """
    series = {kind_name(k): [max(v, SHARE_FLOOR) for v in vals] for k, vals in influence.share.items()}
    ax = plot_curves(influence.lengths, series, xlabel=_("sequence length n"),
                     ylabel=_("first token's share of the gradient"), logx=True, logy=True, ax=ax,
                     title=title or _("dependence of the last output on the first token ({seeds} seeds)").format(
                         seeds=len(influence.seeds)))
    if any(v <= 0 for vals in influence.share.values() for v in vals):
        ax.axhline(SHARE_FLOOR, color="grey", ls=":", lw=1, label=_("0 (underflow), drawn at {floor:g}").format(floor=SHARE_FLOOR))
        ax.legend(fontsize=8)
    return ax
