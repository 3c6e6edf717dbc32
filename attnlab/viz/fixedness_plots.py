"""Lesson 08's figures: mean attention maps over many queries, and each head's fixedness."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import torch

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
                           suptitle=f"Mean attention over {acc.count:,} queries of {acc.length} tokens "
                                    "(rows: layers, columns: heads; one colour scale)")


def plot_fixedness(acc: MeanAttention, *, threshold: float | None = None):
    """Heatmap of fixedness ``[L', H]`` (numbers in the cells) beside the sharpness of each mean map.

    Args:
        acc: the accumulated mean.
        threshold: when given, cells with fixedness at least this are starred.
    """
    fixed, sharp = acc.fixedness().numpy(), acc.sharpness().numpy()  # (L', H) each
    n_layers, n_heads = fixed.shape
    fig, axes = plt.subplots(1, 2, figsize=(2 * (0.5 * n_heads + 1.5), 0.45 * n_layers + 1.6))
    panels = ((axes[0], fixed, "fixedness (1 = same map for every query)", "magma", threshold),
              (axes[1], sharp, "sharpness of the mean map (0 = flat)", "viridis", None))
    for ax, values, title, cmap, star_from in panels:
        im = ax.imshow(values, cmap=cmap, vmin=0, vmax=1, aspect="auto")
        for l in range(n_layers):
            for h in range(n_heads):
                mark = "*" if star_from is not None and values[l, h] >= star_from else ""
                ax.text(h, l, f"{values[l, h]:.2f}{mark}", ha="center", va="center", fontsize=6,
                        color="white" if values[l, h] < 0.6 else "black")
        ax.set_xticks(range(n_heads), [str(h + 1) for h in range(n_heads)])
        ax.set_yticks(range(n_layers), [str(l + 1) for l in acc.layers])
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
    starred = f"; * = fixedness >= {threshold}" if threshold is not None else ""
    fig.suptitle(f"{acc.count:,} queries{starred}", fontsize=9)
    fig.tight_layout()
    return fig
