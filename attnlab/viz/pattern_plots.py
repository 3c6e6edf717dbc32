"""Figures of lesson 05: the head taxonomy, label counts per layer, the pattern zoo.

The labels themselves come from :func:`attnlab.analysis.taxonomy.classify_heads`.
Axis labels are 1-based like the article ("layer 1, head 7").
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from attnlab.core.language import N_, _
from attnlab.analysis.taxonomy import LABELS, HeadLabels, pick_examples, sample_texts
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.data.examples import example_for
from attnlab.viz.offline_views import HEAD_COLORS, plot_line_view
from attnlab.viz.plot import plot_head, quoted

#: One colour per label (colour-blind friendly where possible).
COLORS = {
    "self": "#4c72b0",
    "previous": "#55a868",
    "next": "#8dd3a0",
    "vertical": "#c44e52",
    "block": "#8172b2",
    "broad": "#cccccc",
    "heterogeneous": "#dd8452",
}
#: the label names, marked for the catalogue: legends and cells show them in the reader's language
SHOWN_LABELS = (N_("self"), N_("previous"), N_("next"), N_("vertical"), N_("block"), N_("broad"),
                N_("heterogeneous"))


def cell_code(label: str) -> str:
    """The short code a taxonomy cell shows: the label's first two letters (``"se"`` for self), or in a
    language that translates the label, its first character (自 for 自己)."""
    shown = _(label)
    return shown[:1] if shown != label else label[:2]


def plot_taxonomy(labels: HeadLabels, ax=None, *, title: str | None = None, annotate: bool = True) -> Figure:
    """Layers x heads grid coloured by label (1-based axis labels), each cell with its label's short code
    (:func:`cell_code`), and a legend beside the grid.

    Returns:
        The figure.
    """
    n_layers, n_heads = labels.shape
    index = np.vectorize(LABELS.index)(labels.labels)  # (L, H): label number of each head
    if ax is None:
        _fig, ax = plt.subplots(figsize=(0.55 * n_heads + 3.2, 0.45 * n_layers + 1.4))
    cmap = ListedColormap([COLORS[n] for n in LABELS])
    ax.imshow(index, cmap=cmap, vmin=-0.5, vmax=len(LABELS) - 0.5, aspect="auto")
    ax.set_xticks(range(n_heads), [str(h + 1) for h in range(n_heads)])
    ax.set_yticks(range(n_layers), [str(l + 1) for l in range(n_layers)])
    ax.set_xlabel(_("head (1-based)"))
    ax.set_ylabel(_("layer (1-based)"))
    ax.set_xticks(np.arange(-0.5, n_heads), minor=True)
    ax.set_yticks(np.arange(-0.5, n_layers), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    if annotate:
        for l in range(n_layers):
            for h in range(n_heads):
                ax.text(h, l, cell_code(labels.labels[l, h]), ha="center", va="center", fontsize=7)
    present = [n for n in LABELS if (labels.labels == n).any()]
    ax.legend(handles=[Patch(color=COLORS[n], label=_("{label} ({n})").format(
                  label=_(n), n=int((labels.labels == n).sum()))) for n in present],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
    ax.set_title(title or _("Head taxonomy"))
    ax.figure.tight_layout()
    return ax.figure


def plot_counts_by_layer(labels: HeadLabels, ax=None, *, title: str | None = None) -> Figure:
    """Stacked bars: how many heads of each label sit in each layer. Returns the figure."""
    n_layers = labels.shape[0]
    if ax is None:
        _fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * n_layers + 2.5), 3.2))
    bottom = np.zeros(n_layers)  # (L,)
    x = np.arange(1, n_layers + 1)
    for name, per_layer in labels.counts_by_layer().items():
        if per_layer.sum() == 0:
            continue
        ax.bar(x, per_layer, bottom=bottom, color=COLORS[name], label=_(name), edgecolor="white")
        bottom += per_layer
    ax.set_xticks(x)
    ax.set_xlabel(_("layer (1-based)"))
    ax.set_ylabel(_("heads"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
    ax.set_title(title or _("Head labels by layer"))
    ax.figure.tight_layout()
    return ax.figure


def plot_pattern_zoo(m: LoadedModel, labels: HeadLabels, text: str | None = None,
                     pair: tuple[str, str] | None = None) -> Figure:
    """One column per pattern found in ``m``: its clearest head
    (:func:`attnlab.analysis.taxonomy.pick_examples`) as a heatmap (top) and as
    a line view (bottom), on a real input.

    Args:
        m: the loaded model.
        labels: from :func:`attnlab.analysis.taxonomy.classify_heads` on ``m``'s statistics.
        text: the input for every pattern but ``block`` (default: the course example).
        pair: the sentence pair for ``block`` (default: two sample sentences).

    Returns:
        The figure.
    """
    examples = pick_examples(labels)
    if not examples:
        raise ValueError("no labelled heads to show")
    text = text or example_for(m)
    pair = pair or tuple(sample_texts(m.language, 2))
    single = attention(m, [text])
    paired = attention(m, [pair[0]], pairs=[pair[1]]) if "block" in examples else None
    k = len(examples)
    fig, axes = plt.subplots(2, k, figsize=(3.1 * k, 7.4), squeeze=False,
                             gridspec_kw={"height_ratios": [1, 1.15]})
    for c, (name, (l, h)) in enumerate(examples.items()):
        att = paired if name == "block" else single
        tokens = att.tokens[0]
        plot_head(att.head(0, l, h), tokens, ax=axes[0, c], vmax=1.0, colorbar=False,
                  title=_("{label}: layer {layer}, head {head}").format(label=_(name), layer=l + 1, head=h + 1))
        axes[0, c].set_xlabel("")
        axes[0, c].set_ylabel("")
        axes[0, c].tick_params(labelsize=7)
        plot_line_view(att[0], tokens, l, [h], ax=axes[1, c], title=textwrap.fill(labels.reason(l, h), 44))
        axes[1, c].title.set_fontsize(7)
    fig.suptitle(_("Pattern zoo of {model}: the clearest head of each type (heatmap, line view)").format(model=m.name))
    fig.tight_layout()
    return fig


def plot_example_lines(m: LoadedModel, labels: HeadLabels, text: str | None = None) -> Figure:
    """Line view of the example query for the layer with the most distinct
    patterns: one head of each label found there (up to four), in head colours.
    Returns the figure."""
    text = text or example_for(m)
    variety = [len(set(row)) for row in labels.labels]  # distinct labels per layer
    layer = int(np.argmax(variety))
    chosen: dict[str, int] = {}
    for h, name in enumerate(labels.labels[layer]):
        if name not in chosen and len(chosen) < 4:
            chosen[str(name)] = h
    att = attention(m, [text])
    heads = list(chosen.values())
    fig, ax = plt.subplots(figsize=(5.4, 0.34 * len(att.tokens[0]) + 1.2))
    plot_line_view(att[0], att.tokens[0], layer, heads, ax=ax,
                   title=_("{text}: layer {layer}, one head per pattern").format(text=quoted(text), layer=layer + 1))
    ax.legend(handles=[Line2D([], [], color=HEAD_COLORS[h % len(HEAD_COLORS)], lw=2, label=_("H{head}: {label}").format(head=h + 1, label=_(name)))
                       for name, h in chosen.items()],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
