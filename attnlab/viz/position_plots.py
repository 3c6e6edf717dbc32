"""Figures of lesson 07: one layer's heads with and without position embeddings,
every head's change under the removal and its controls, and "unchanged under
perturbation" against "changed without positions", layer by layer.

The numbers come from :mod:`attnlab.analysis.position`; layers and heads are
labelled 1-based like the article.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from attnlab.analysis.compare import similarity
from attnlab.analysis.position import PositionStudy
from attnlab.analysis.stats import Interval
from attnlab.core.checks import check_index
from attnlab.core.language import N_, _
from attnlab.viz.fonts import cjk_font_for
from attnlab.viz.plot import ends_shown, plot_layer_head_map, quoted, tick_rotation

#: How each intervention is named in titles.
NAMES = {"zero": N_("positions zeroed"), "mean": N_("mean position vector"), "shuffle": N_("positions shuffled")}


def plot_with_without(with_maps: torch.Tensor, without_maps: torch.Tensor, layer: int, *, text: str = "",
                      tokens: Sequence[str] | None = None, how: str = "zero", cell: float = 1.45) -> Figure:
    """Every head of one layer: with position embeddings (top row) and under the
    intervention ``how`` (bottom), each column titled with the similarity of the two maps.

    Args:
        with_maps, without_maps: ``[L, H, n, n]`` of one text (e.g. from
            :func:`attnlab.analysis.position.with_and_without`).
        layer: 0-based layer.
        text: the text, for the title.
        tokens: the ``n`` tokens, written on the first column's axes.
        how: the intervention, for the row label.

    Returns:
        The figure.
    """
    if with_maps.shape != without_maps.shape or with_maps.ndim != 4:
        raise ValueError(f"need two [L, H, n, n] maps of one shape, got {tuple(with_maps.shape)} "
                         f"and {tuple(without_maps.shape)}")
    layer = check_index(layer, with_maps.shape[0], "layer")
    n = with_maps.shape[-1]
    if tokens is not None and len(tokens) != n:
        raise ValueError(f"tokens has {len(tokens)} labels for maps of {n} tokens")
    sims = similarity(with_maps[layer], without_maps[layer]).numpy()  # (H,)
    cjk_font_for([text, *(tokens or [])])
    heads = with_maps.shape[1]
    fig, axes = plt.subplots(2, heads, figsize=(cell * heads + 2.4, cell * 2 + 1.6), squeeze=False,
                             layout="constrained")
    rows = ((with_maps, _("with positions")), (without_maps, _(NAMES.get(how, how))))
    for h in range(heads):
        for r, (maps, name) in enumerate(rows):
            ax = axes[r, h]
            ax.imshow(maps[layer, h].numpy(), vmin=0, vmax=1, cmap="viridis")
            show = tokens is not None and h == 0
            ax.set_xticks(range(n) if show else [])
            ax.set_yticks(range(n) if show else [])
            if show:
                ax.set_xticklabels(tokens, rotation=tick_rotation(tokens), fontsize=5)
                ax.set_yticklabels(tokens, fontsize=5)
            if r == 0:
                ax.set_title(_("H{head}\nsim {sim:.2f}").format(head=h + 1, sim=sims[h]), fontsize=7)
            if h == 0:
                ax.set_ylabel(name, fontsize=8)
    fig.colorbar(axes[0, 0].images[0], ax=list(axes.ravel()), fraction=0.025, pad=0.02, label=_("attention weight"))
    shown = _(", {text}").format(text=quoted(text)) if text else ""
    fig.suptitle(_("Layer {layer}{text}: with positions and {how}").format(layer=layer + 1, text=shown, how=_(NAMES.get(how, how))),
                 fontsize=9)
    return fig


def plot_controls(study: PositionStudy, *, ends: tuple[str, str] | None = None, **boot) -> Figure:
    """Per-head change (1 - similarity) under each intervention on one colour
    scale, and the share of the moved weight that lands on the special tokens at
    the two ends when the positions are zeroed. ``ends``: those tokens as the model
    shows them (``LoadedModel.end_tokens``); without them the title names no token.
    Returns the figure."""
    hows = study.interventions
    changes = {how: study.change(how, **boot).estimate for how in hows}  # (L, H) each
    top = max(0.05, max(float(np.nanmax(v)) for v in changes.values()))
    fig, axes = plt.subplots(1, len(hows) + 1, figsize=(4.0 * (len(hows) + 1) + 1.0, 3.6), squeeze=False,
                             layout="constrained")
    for ax, how in zip(axes[0], hows):
        plot_layer_head_map(changes[how], ax=ax, vmin=0, vmax=top, title=_(NAMES.get(how, how)), fontsize=6,
                            colorbar=False)
    fig.colorbar(axes[0, 0].images[0], ax=list(axes[0, :len(hows)]), fraction=0.03, pad=0.02,
                 label=_("change of the map (1 - similarity)"))
    if "zero" in hows:
        share = study.special_share_of_moved("zero", **boot).estimate  # (L, H)
        plot_layer_head_map(np.clip(share, -1, 1), ax=axes[0, -1], cmap="PuOr_r", vmin=-1, vmax=1, fontsize=6,
                            title=_("positions zeroed: moved weight\nthat lands on {ends}").format(ends=ends_shown(ends)),
                            label=_("share of the moved weight (< 0: leaves them)"))
    else:
        axes[0, -1].axis("off")
    fig.suptitle(_("What each head does without its positions, {n} input texts").format(n=study.n_texts), fontsize=10)
    return fig


def plot_correlation(unchanged, changed, per_layer: Interval, pooled: Interval | None = None, *,
                     method: str = "spearman", strong: float | None = None, what: str = "positions zeroed") -> Figure:
    """Left: one point per head, similarity under perturbation (x) against change
    under the intervention (y), coloured by layer. Right: the correlation across
    the heads of each layer with its interval (the pooled one, over all heads,
    only as a dashed reference).

    Args:
        unchanged, changed: ``[L, H]`` per-head values.
        per_layer: correlation per layer, arrays ``(L,)``, its interval from
            resampling the ``per_layer.n`` queries (from
            :func:`attnlab.analysis.position.correlation_by_layer_over_queries`).
        pooled: the correlation over all heads together, for reference (e.g. from
            :func:`attnlab.analysis.position.pooled_correlation_over_queries`).
        strong: a threshold line to draw (e.g. the claim's).
        what: the intervention, for the axis label.

    Returns:
        The figure.
    """
    x, y = np.asarray(unchanged, dtype=float), np.asarray(changed, dtype=float)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"unchanged and changed need one [L, H] shape, got {x.shape} and {y.shape}")
    layers = np.repeat(np.arange(x.shape[0]), x.shape[1])  # (L * H,)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4), layout="constrained")
    sc = left.scatter(x.ravel(), y.ravel(), c=layers + 1, cmap="viridis", s=22)
    fig.colorbar(sc, ax=left, label=_("layer"))
    left.set_xlabel(_("unchanged under perturbation (position-space similarity)"))
    left.set_ylabel(_("change with {what} (1 - similarity)").format(what=_(what)))
    left.set_title(_("one point per head"), fontsize=9)
    r = np.asarray(per_layer.estimate, dtype=float)
    low, high = np.asarray(per_layer.low, dtype=float), np.asarray(per_layer.high, dtype=float)
    ticks = np.arange(1, r.size + 1)
    right.errorbar(ticks, r, yerr=[r - low, high - r], fmt="o", capsize=3, color="tab:blue",
                   label=_("within each layer ({level:.0%} interval over {n} queries)").format(
                       level=per_layer.level, n=per_layer.n))
    right.axhline(0.0, color="grey", linewidth=0.8)
    if strong is not None:
        right.axhline(strong, color="tab:green", linestyle=":", label=_("strong = {strong:g}").format(strong=strong))
    if pooled is not None:
        right.axhline(float(pooled.estimate), color="tab:red", linestyle="--",
                      label=_("pooled over all {heads} heads: {r:.2f} [{low:.2f}, {high:.2f}]").format(
                          heads=x.size, r=float(pooled.estimate), low=float(pooled.low), high=float(pooled.high)))
    right.set_xticks(ticks)
    right.set_xlabel(_("layer"))
    right.set_ylabel(_("{method} correlation across the layer's heads").format(method=method))
    right.set_ylim(-1.05, 1.05)
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    right.set_title(_("the link, layer by layer"), fontsize=9)
    return fig
