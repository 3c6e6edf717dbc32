"""Figures of lesson 10: regrouped heads, where their attention goes, and training with 1-32 heads."""

from __future__ import annotations

import math
from typing import Mapping

import matplotlib.pyplot as plt

from attnlab.analysis.regroup import GroupSummary
from attnlab.core.checks import check_index
from attnlab.core.extract import Attention
from attnlab.scratch.head_count_training import HeadCountStudy


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
            ax.imshow(maps[c].numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto")
            if c == 0:
                ax.set_ylabel(f"{g} head{'s' if g > 1 else ''}", fontsize=8)
    fig.suptitle(f"Layer {layer + 1}, '{first.texts[text_index]}' ({n_tokens} tokens): "
                 "the same Q and K cut into fewer, wider heads", fontsize=9)
    fig.tight_layout()
    return fig


def plot_summaries(summaries: Mapping[int, GroupSummary], *, ax=None):
    """Self, [CLS], [SEP] mass, entropy ratio and confidence against the number of heads h'.

    Returns:
        The axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.5))
    counts = sorted(summaries)
    series = {"self": "self_mass", "[CLS]": "cls_mass", "[SEP]": "sep_mass",
              "entropy / uniform": "entropy_ratio", "confidence": "confidence"}
    for label, name in series.items():
        dashed = name in ("entropy_ratio", "confidence")
        ax.plot(counts, [getattr(summaries[g], name) for g in counts], marker="o", label=label,
                linestyle="--" if dashed else "-")
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts)
    ax.set_xticklabels([str(g) for g in counts])
    ax.set_xlabel("heads after regrouping (h')")
    ax.set_ylabel("mean over layers, heads, rows")
    ax.legend(fontsize=8)
    ax.set_title("Where attention goes as heads are merged")
    return ax


def plot_head_count(study: HeadCountStudy, *, reference: Mapping[int, float] | None = None,
                    reference_title: str = "", reference_label: str = "", axes=None):
    """This run's perplexity per h (mean, seed range, each seed), and beside it a reference curve.

    Args:
        study: from :func:`attnlab.scratch.head_count_training.head_count_study`.
        reference: ``{heads: perplexity}`` of a published run (e.g. Vaswani et
            al.'s Table 3 row (A), a translation model); None draws one panel.
        reference_title, reference_label: title and y label of the reference panel.

    Returns:
        The figure.
    """
    if axes is None:
        _, axes = plt.subplots(1, 2 if reference else 1, figsize=(10 if reference else 5.5, 3.6), squeeze=False)
        axes = axes[0]
    ax = axes[0]
    s = study.summary()
    hs = list(s)
    means = [s[h]["ppl_mean"] for h in hs]
    ax.errorbar(hs, means, yerr=[[s[h]["ppl_mean"] - s[h]["ppl_min"] for h in hs],
                                 [s[h]["ppl_max"] - s[h]["ppl_mean"] for h in hs]],
                marker="o", capsize=4, label="mean (bars: seed range)")
    for h in hs:
        ax.scatter([h] * len(study.perplexities(h)), study.perplexities(h), color="grey", s=10, zorder=3)
    ax.axhline(math.exp(study.language.best_loss()), color="green", linestyle=":", label="best possible")
    _log2_axis(ax, hs)
    ax.set_xlabel(f"heads h (d_model = {study.config.d_model}, d_k = d_model / h)")
    ax.set_ylabel("validation perplexity")
    ax.set_title("This run: tiny transformer, lookup language")
    ax.legend(fontsize=8)
    if reference:
        ref = axes[1]
        vh = sorted(reference)
        ref.plot(vh, [reference[h] for h in vh], marker="s", color="C1")
        _log2_axis(ref, vh)
        ref.set_xlabel("heads h")
        ref.set_ylabel(reference_label or "perplexity")
        ref.set_title(reference_title)
    ax.figure.tight_layout()
    return ax.figure


def _log2_axis(ax, ticks) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks))
    ax.set_xticklabels([str(t) for t in ticks])
