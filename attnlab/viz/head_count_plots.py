"""Figures of lesson 10: regrouped heads, where their attention goes, and training with 1-32 heads."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from attnlab.analysis.regroup import DESTINATIONS, FIRST_SPECIAL, LAST_SPECIAL, GroupSummary
from attnlab.core.checks import check_index
from attnlab.core.extract import Attention
from attnlab.core.language import N_, _, ngettext
from attnlab.viz.fonts import cjk_font_for


def plot_regrouped(regrouped: Mapping[int, Attention], text_index: int = 0, layer: int = 0, *, cell: float = 1.1):
    """One layer of one text, one row per ``h'``: the ``h'`` maps side by side.

    Args:
        regrouped: ``{h': Attention}`` from :func:`attnlab.analysis.regroup.regroup_all`
            (each tensor ``[texts, layers, h', T, T]``).
        text_index: which text (0-based).
        layer: 0-based layer (titles are 1-based).

    Returns:
        The figure.
    """
    counts = sorted(regrouped, reverse=True)
    first = regrouped[counts[0]]
    text_index = check_index(text_index, len(first.texts), "text")
    layer = check_index(layer, first.tensor.shape[1], "layer")
    width = max(counts)
    n_tokens = first.lengths[text_index]
    cjk_font_for([first.texts[text_index]])
    fig, axes = plt.subplots(len(counts), width, figsize=(cell * width + 1.2, cell * len(counts) + 0.8), squeeze=False)
    for r, g in enumerate(counts):
        maps = regrouped[g][text_index][layer]  # (h', n, n)
        for c in range(width):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if c >= g:
                ax.axis("off")
                continue
            image = ax.imshow(maps[c].numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto")
            if c == 0:
                ax.set_ylabel(ngettext("{n} head\nquery", "{n} heads\nquery", g).format(n=g), fontsize=8)
            if r == len(counts) - 1 or c >= regrouped[counts[r + 1]].tensor.shape[2]:
                ax.set_xlabel(_("key"), fontsize=7)
    fig.suptitle(_("Layer {layer}, '{text}' ({n} tokens): the same Q and K cut into fewer, wider heads "
                   "(rows: queries, columns: keys)").format(layer=layer + 1, text=first.texts[text_index], n=n_tokens),
                 fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.93, 1))
    bar = fig.colorbar(image, ax=axes.ravel().tolist(), fraction=0.02, pad=0.01)
    bar.set_label(_("attention weight"), fontsize=8)
    return fig


def destination_shown(name: str, ends: tuple[str, str] | None) -> str:
    """One of :data:`~attnlab.analysis.regroup.DESTINATIONS` as a legend shows it: the special tokens
    by the model's own names (``ends``), or by their place when those are not known."""
    places = (FIRST_SPECIAL, LAST_SPECIAL)
    if name not in places or not ends:
        return _(name)
    return ends[places.index(name)]


def plot_summaries(summaries: Mapping[int, GroupSummary], *, ends: tuple[str, str] | None = None, ax=None):
    """Where attention goes (self, previous, next, the first and the last special token, other), the
    entropy ratio and the confidence, against the number of heads h' after regrouping.

    ``ends``: the two special tokens as the model shows them (``LoadedModel.end_tokens``, e.g.
    ``("<s>", "</s>")``); without them the legend says "first special token" and "last special token".

    Returns:
        The axes.
    """
    if ax is None:
        _fig, ax = plt.subplots(figsize=(8.0, 3.8))
    counts = sorted(summaries)
    for name in DESTINATIONS:
        ax.plot(counts, [summaries[g].mass(name) for g in counts], marker="o", label=destination_shown(name, ends))
    ax.plot(counts, [summaries[g].entropy_ratio for g in counts], marker="s", linestyle="--", color="black",
            label=_("entropy / uniform"))
    ax.plot(counts, [summaries[g].confidence for g in counts], marker="^", linestyle=":", color="grey",
            label=_("confidence (largest weight)"))
    _log2_axis(ax, counts)
    ax.set_xlabel(_("heads after regrouping (h')"))
    ax.set_ylabel(_("share of attention weight\n(mean over texts, layers, heads, rows)"))
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)  # beside the lines
    ax.set_title(_("Where attention goes as heads are merged"))
    return ax


def plot_head_count(perplexities: Mapping[str, Mapping[int, Sequence[float]]], *, best_possible: float | None = None,
                    head_sizes: Mapping[str, str] | None = None, reference: Mapping[int, float] | None = None,
                    reference_title: str = "", reference_label: str = "", axes=None):
    """This run's validation perplexity per head count, one line per design, and beside it a reference curve.

    Args:
        perplexities: design name -> ``{heads: per-seed perplexities}`` (e.g.
            ``{"fixed width": ..., "fixed head size": ...}``).
        best_possible: the task's best possible perplexity (a dotted line).
        head_sizes: design name -> a short note for the legend (e.g. ``"d_k = 64 / h"``).
        reference: ``{heads: perplexity}`` of a published run (e.g. Vaswani et
            al.'s Table 3 row (A), a translation model); None draws one panel.
        reference_title, reference_label: title and y label of the reference panel.

    Each design is drawn as its mean over seeds with the seed range as bars,
    and every seed as a dot.

    Returns:
        The figure.
    """
    if axes is None:
        _fig, axes = plt.subplots(1, 2 if reference else 1, figsize=(11 if reference else 6, 3.8), squeeze=False)
        axes = axes[0]
    ax = axes[0]
    all_heads: set[int] = set()
    for i, (design, by_heads) in enumerate(perplexities.items()):
        hs = sorted(by_heads)
        all_heads.update(hs)
        values = [np.asarray(by_heads[h], dtype=float) for h in hs]
        means = np.array([v.mean() for v in values])
        shift = 1.0 + 0.04 * (i - (len(perplexities) - 1) / 2)  # side by side on the log axis
        x = [h * shift for h in hs]
        note = f" ({head_sizes[design]})" if head_sizes and design in head_sizes else ""
        ax.errorbar(x, means, yerr=[means - [v.min() for v in values], [v.max() for v in values] - means],
                    marker="o", capsize=4, color=f"C{i}", label=_("{design}{note}: mean, bars = seed range").format(design=_(design), note=note))
        for xi, v in zip(x, values):
            ax.scatter([xi] * len(v), v, color=f"C{i}", s=9, alpha=0.5, zorder=3)
    if best_possible is not None:
        ax.axhline(best_possible, color="green", linestyle=":", label=_("best possible"))
    _log2_axis(ax, sorted(all_heads))
    ax.set_xlabel(_("heads h"))
    ax.set_ylabel(_("validation perplexity (lower is better)"))
    ax.set_title(_("This run: tiny transformers, lookup language"))
    ax.legend(fontsize=7)
    if reference:
        ref = axes[1]
        vh = sorted(reference)
        ref.plot(vh, [reference[h] for h in vh], marker="s", color="C3")
        _log2_axis(ref, vh)
        ref.set_xlabel(_("heads h"))
        ref.set_ylabel(reference_label or _("perplexity"))
        ref.set_title(reference_title, fontsize=9)
    ax.figure.tight_layout()
    return ax.figure


def _log2_axis(ax, ticks) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks))
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
