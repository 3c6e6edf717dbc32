"""Lesson 04's figures: every head of one layer, on one colour scale with a colourbar.

Each function returns the figure it drew, so the lesson and the
``attnlab figures`` command share one drawing.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from attnlab.core.language import _
from attnlab.viz.plot import plot_layer_heads


def plot_layer_heads_with_scale(maps: "torch.Tensor | np.ndarray", tokens: Sequence[str], *, layer: int | None = None,
                                ncols: int = 4, title: str | None = None):
    """Every head of one layer (one panel each) on one shared colour scale, from 0
    to the largest weight of the layer, with a colourbar and the axes named
    ("key token" across, "query token" down).

    Args:
        maps: ``(H, n, n)``, one layer of one text (e.g. ``att[0][layer]``).
        tokens: the ``n`` tokens.
        layer: 0-based layer, for the ``"L1 H7"`` panel titles.

    Returns:
        The figure; its last axes is the colourbar.
    """
    a = maps.detach().cpu().numpy() if isinstance(maps, torch.Tensor) else np.asarray(maps)  # (H, n, n)
    top = float(a.max()) if a.size else 1.0
    fig = plot_layer_heads(a, tokens, layer=layer, ncols=ncols, vmax=top, title=title)
    panels = [ax for ax in fig.axes if ax.images]
    fig.colorbar(panels[0].images[0], ax=panels, shrink=0.8, label=_("attention weight"))
    fig.supxlabel(_("key token (the token looked at)"), fontsize=10)
    fig.supylabel(_("query token (the row's owner)"), fontsize=10)
    return fig
