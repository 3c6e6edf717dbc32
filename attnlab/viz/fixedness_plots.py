"""Lesson 08's figures: mean attention maps over many queries, each head's fixedness beside the
control's, how the answer settles with more queries, and a threshold slider."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from attnlab.core.language import _
from attnlab.analysis.fixedness import FixednessReport
from attnlab.core.streaming import MeanAttention
from attnlab.viz.plot import plot_heads_grid


def position_labels(acc: MeanAttention) -> list[str]:
    """Axis labels of a mean map: the first and last special tokens, positions 1..n-2 between.

    (The tokens in between differ from query to query, so only their position is shown.)
    """
    first = acc.tokens[0] if acc.tokens else "[CLS]"
    last = acc.tokens[-1] if acc.tokens else "[SEP]"
    return [first] + [str(i) for i in range(1, acc.length - 1)] + [last]


def plot_mean_maps(acc: MeanAttention, *, layers: Sequence[int] | None = None, heads: Sequence[int] | None = None,
                   cell: float = 1.2):
    """The article's figure: mean maps, one row per layer, one column per head, one colour scale.

    Args:
        acc: the accumulated mean (``acc.mean`` is ``[L', H, n, n]``).
        layers: positions along ``acc.layers`` to draw (0-based; default all).
        heads: 0-based heads to draw (default all).
        cell: inches per map.
    """
    mean = acc.mean.float()  # (L', H, n, n)
    # the colour scale stops at the 99th percentile: a few cells near 1 would wash out the rest
    sample = mean.flatten()[:: max(1, mean.numel() // 200_000)]
    vmax = float(torch.quantile(sample, 0.99))
    return plot_heads_grid(mean, position_labels(acc), layers=layers, heads=heads, cell=cell, vmax=vmax,
                           suptitle=_("Mean attention over {count:,} input texts of {length} tokens "
                                      "(rows: layers, columns: heads; one colour scale)").format(
                               count=acc.count, length=acc.length))


def fitted_range(*arrays: np.ndarray, step: float = 0.05) -> tuple[float, float]:
    """A colour range fitted to the data: the smallest value rounded down to ``step``, the
    largest rounded up (so 0.72..1.0 is drawn on 0.70..1.00, not on 0..1)."""
    values = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])
    values = values[np.isfinite(values)]
    low = math.floor(values.min() / step) * step
    high = math.ceil(values.max() / step) * step
    return (low, high) if high > low else (low - step, high + step)


def _heatmap(fig, ax, values: np.ndarray, layers: Sequence[int], title: str, *, cmap: str, vmin: float,
             vmax: float, marks: np.ndarray | None = None, fmt: str = "{:.2f}"):
    """One ``[L, H]`` heatmap with the value in each cell (``*`` where ``marks``); returns its colourbar."""
    n_layers, n_heads = values.shape
    im = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    middle = 0.5 * (vmin + vmax)
    for l in range(n_layers):
        for h in range(n_heads):
            star = "*" if marks is not None and marks[l, h] else ""
            dark = values[l, h] < middle if cmap != "RdBu" else abs(values[l, h] - middle) > 0.35 * (vmax - vmin)
            ax.text(h, l, fmt.format(values[l, h]) + star, ha="center", va="center", fontsize=5.5,
                    color="white" if dark else "black")
    ax.set_xticks(range(n_heads), [str(h + 1) for h in range(n_heads)])
    ax.set_yticks(range(n_layers), [str(l + 1) for l in layers])
    ax.set_xlabel(_("head"))
    ax.set_ylabel(_("layer"))
    ax.set_title(title, fontsize=9)
    return fig.colorbar(im, ax=ax, shrink=0.85)


def _mark_level(cbar, value: float, style: str) -> None:
    """A line across the colourbar at ``value`` (cyan, so it shows on every colour of the map)."""
    cbar.ax.axhline(value, color="cyan", lw=2.0, ls=style)


def plot_fixedness(report: FixednessReport, *, threshold: float | None = None, fixed: np.ndarray | None = None,
                   below_control: np.ndarray | None = None):
    """Each head's fixedness on real queries, on the control, their difference, and the sharpness.

    The fixedness panels share a colour scale fitted to the data range; the
    colourbar marks the threshold (solid) and the control's mean level (dashed).

    Args:
        report: from :func:`attnlab.analysis.fixedness.fixedness_report` (with or without a control).
        threshold: the "fixed" threshold to mark on the colourbar.
        fixed: ``[L, H]`` booleans, heads labelled fixed (starred); e.g. from
            :func:`attnlab.course.claims.averaging.fixed_mask`. Fixedness is the share of a
            row's information the mean map explains (NaN, shown "nan": uniform rows).
        below_control: ``[L, H]`` booleans, heads clearly less fixed than on the control (starred
            in the difference panel).
    """
    real, sharp = report.fixedness, report.sharpness  # (L, H) each
    has_control = report.control is not None
    n_layers, n_heads = real.shape
    size = (0.55 * n_heads + 1.8, 0.42 * n_layers + 1.4)
    rows = 2 if has_control else 1
    fig, axes = plt.subplots(rows, 2, figsize=(2 * size[0], rows * size[1]), squeeze=False)
    arrays = (real, report.control) if has_control else (real,)
    low, high = fitted_range(*arrays, *([threshold] if threshold is not None else []))
    high = min(high, 1.0)  # a share is at most 1 (rounding can put a value a hair above)
    cbar = _heatmap(fig, axes[0, 0], real, report.layers, _("fixedness on {n} real queries").format(n=f"{report.count:,}"),
                    cmap="magma", vmin=low, vmax=high, marks=fixed)
    if has_control:
        cbar_c = _heatmap(fig, axes[0, 1], report.control, report.layers,
                          _("fixedness on {n} strings of random tokens (control)").format(n=f"{report.control_count:,}"),
                          cmap="magma", vmin=low, vmax=high)
        level = float(np.nanmean(report.control))
        for bar in (cbar, cbar_c):
            _mark_level(bar, level, "--")
        diff = np.asarray(report.difference.estimate)
        span = max(0.05, float(np.nanmax(np.abs(diff))))
        _heatmap(fig, axes[1, 0], diff, report.layers, _("real - control (< 0: less fixed on real queries)"),
                 cmap="RdBu", vmin=-span, vmax=span, marks=below_control, fmt="{:+.2f}")
        sharp_ax = axes[1, 1]
    else:
        sharp_ax = axes[0, 1]
    marks = []
    if threshold is not None:
        _mark_level(cbar, threshold, "-")
        marks.append(_("solid: threshold {threshold}").format(threshold=f"{threshold:g}"))
    if has_control:
        marks.append(_("dashed: control mean {level}").format(level=f"{level:.3f}"))
        cbar_c.set_label(marks[-1], fontsize=7)
    if marks:
        cbar.set_label("; ".join(marks), fontsize=7)
    _heatmap(fig, sharp_ax, sharp, report.layers, _("sharpness of the mean map (0 = flat)"), cmap="viridis",
             vmin=0.0, vmax=1.0)
    notes = []
    if fixed is not None:
        notes.append(_("* top left: labelled fixed"))
    if below_control is not None and has_control:
        notes.append(_("* bottom left: clearly below the control"))
    fig.suptitle(_("Fixedness per head (colour scale fitted to the data)")
                 + (f"; {', '.join(notes)}" if notes else ""),
                 fontsize=9)
    fig.tight_layout()
    return fig


def plot_fixedness_curve(counts: Sequence[int], per_layer: np.ndarray, fixed_share: Sequence[float],
                         layers: Sequence[int], *, control_per_layer: Sequence[float] | None = None):
    """How the answer settles as more queries are averaged.

    Args:
        counts: queries averaged at each point (log axis).
        per_layer: ``[K, L]`` mean fixedness of each layer at each count.
        fixed_share: ``[K]`` share of heads called fixed at each count.
        layers: 0-based model layers of ``per_layer``'s columns.
        control_per_layer: ``[L]`` the control's level per layer (dotted lines), if any.
    """
    per_layer = np.asarray(per_layer, dtype=float)
    colours = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(layers)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for i, layer in enumerate(layers):
        left.plot(counts, per_layer[:, i], "o-", color=colours[i], ms=3, label=_("layer {number}").format(number=layer + 1))
        if control_per_layer is not None:
            left.axhline(control_per_layer[i], color=colours[i], ls=":", lw=1)
    left.set_xscale("log")
    left.set_xlabel(_("queries averaged"))
    left.set_ylabel(_("mean fixedness of the layer"))
    left.set_title(_("per-layer fixedness") + (_(" (dotted: control)") if control_per_layer is not None else ""),
                   fontsize=9)
    left.legend(fontsize=7, frameon=False, ncol=3, loc="best")
    right.plot(counts, fixed_share, "o-", color="black", ms=3)
    right.set_xscale("log")
    right.set_ylim(-0.02, 1.02)
    right.set_xlabel(_("queries averaged"))
    right.set_ylabel(_("share of heads called fixed"))
    right.set_title(_("share of fixed heads"), fontsize=9)
    fig.tight_layout()
    return fig


def plot_fixed_at(fixedness: np.ndarray, fixed: np.ndarray, layers: Sequence[int], threshold: float):
    """Which heads are called fixed at one threshold: filled cells fixed, empty cells varying."""
    n_layers, n_heads = fixed.shape
    fig, ax = plt.subplots(figsize=(0.45 * n_heads + 1.5, 0.4 * n_layers + 1.2))
    ax.imshow(fixed, cmap="Greys", vmin=0, vmax=1.6, aspect="auto")
    for l in range(n_layers):
        for h in range(n_heads):
            ax.text(h, l, f"{fixedness[l, h]:.2f}", ha="center", va="center", fontsize=6)
    ax.set_xticks(range(n_heads), [str(h + 1) for h in range(n_heads)])
    ax.set_yticks(range(n_layers), [str(l + 1) for l in layers])
    ax.set_xlabel(_("head"))
    ax.set_ylabel(_("layer"))
    ax.set_title(_("threshold {threshold}: {n} of {total} heads fixed (grey)").format(
        threshold=f"{threshold:.3f}", n=int(fixed.sum()), total=fixed.size), fontsize=9)
    fig.tight_layout()
    return fig


def threshold_slider(fixedness: np.ndarray, mask_at: Callable[[float], np.ndarray], layers: Sequence[int], *,
                     start: float = 0.9, low: float = 0.8, high: float = 1.0, step: float = 0.005) -> Any:
    """An ipywidgets slider that redraws :func:`plot_fixed_at` at the chosen threshold.

    Args:
        fixedness: ``[L, H]`` values written in the cells.
        mask_at: threshold -> ``[L, H]`` booleans (the rule that calls a head fixed).
        layers: 0-based model layers of the rows.

    Returns:
        The widget box, or None when ipywidgets is not installed (the notebook
        prints a table instead). In a headless run it is built and drawn once.
    """
    try:  # optional front-end package (the course extra): only needed for the slider
        import ipywidgets as W
        from IPython.display import display
    except ImportError:
        return None
    slider = W.FloatSlider(value=start, min=low, max=high, step=step, description=_("threshold"),
                           readout_format=".3f", continuous_update=False)
    out = W.Output()

    def redraw(_change: Any = None) -> None:
        with out:
            out.clear_output(wait=True)
            fig = plot_fixed_at(fixedness, mask_at(slider.value), layers, slider.value)
            display(fig)
            plt.close(fig)

    slider.observe(redraw, names="value")
    redraw()
    return W.VBox([slider, out])
