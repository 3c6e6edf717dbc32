"""Matplotlib figures of attention maps.

Code indices are 0-based; titles use the source article's 1-based "layer 1,
head 7" (see :func:`head_label`). Every function takes an optional ``ax`` and
returns the matplotlib objects it drew, so lessons can compose figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from .fonts import use_cjk_font


def head_label(layer: int, head: int) -> str:
    """1-based label for a 0-based (layer, head): ``head_label(0, 6) == "L1 H7"``."""
    return f"L{layer + 1} H{head + 1}"


def _as_numpy(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().float().numpy()
    return np.asarray(a, dtype=float)


def _needs_cjk(labels: Sequence[str]) -> bool:
    return any(any(ord(ch) > 0x2E80 for ch in str(t)) for t in labels)


def plot_head(
    weights,
    tokens: Sequence[str],
    *,
    ax=None,
    title: str | None = None,
    vmin: float | None = 0.0,
    vmax: float | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    annotate: bool = False,
    key_tokens: Sequence[str] | None = None,
):
    """Heatmap of one head: rows are query tokens, columns the tokens they attend to.

    Args:
        weights: ``[n, n]`` attention (rows sum to 1), tensor or array.
        tokens: ``n`` labels for the rows (and the columns, unless ``key_tokens``).
        ax: axes to draw into (a new figure when None).
        vmin, vmax: colour scale; ``vmax=None`` uses the map's maximum. Pass
            ``vmax=1`` to compare maps on one scale.
        annotate: write each weight in its cell (small maps only).

    Returns:
        The ``AxesImage``.
    """
    import matplotlib.pyplot as plt

    w = _as_numpy(weights)
    if w.ndim != 2 or w.shape[0] != len(tokens):
        raise ValueError(f"weights must be [n, n] with n = len(tokens) = {len(tokens)}, got {w.shape}")
    cols = list(key_tokens) if key_tokens is not None else list(tokens)
    if _needs_cjk(list(tokens) + cols):
        use_cjk_font()
    if ax is None:
        size = max(3.0, 0.45 * len(tokens) + 1.5)
        _, ax = plt.subplots(figsize=(size + (1.0 if colorbar else 0.0), size))
    im = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=90, fontsize=9)
    ax.set_yticks(range(len(tokens)))
    ax.set_yticklabels(tokens, fontsize=9)
    ax.set_xlabel("attended-to token (key)")
    ax.set_ylabel("query token")
    if title:
        ax.set_title(title)
    if annotate:
        hi = w.max() if w.size else 1.0
        for r in range(w.shape[0]):
            for c in range(w.shape[1]):
                ax.text(c, r, f"{w[r, c]:.2f}", ha="center", va="center", fontsize=7,
                        color="black" if w[r, c] > 0.6 * hi else "white")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


def plot_heads_grid(
    maps,
    tokens: Sequence[str],
    *,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    cell: float = 1.6,
    vmax: float | None = None,
    show_labels: bool | None = None,
    suptitle: str | None = None,
    cmap: str = "viridis",
):
    """Grid of heatmaps: one row per layer, one column per head.

    Args:
        maps: ``[layers, heads, n, n]`` for one text (e.g. ``att[i]``).
        tokens: the ``n`` token labels.
        layers, heads: 0-based subsets to draw (all by default).
        vmax: shared colour maximum; None gives each cell its own scale.
        show_labels: token labels on the outer axes (default: when n <= 14).

    Returns:
        The figure.
    """
    import matplotlib.pyplot as plt

    a = _as_numpy(maps)
    if a.ndim != 4:
        raise ValueError(f"maps must be [layers, heads, n, n], got shape {a.shape}")
    layers = list(range(a.shape[0])) if layers is None else list(layers)
    heads = list(range(a.shape[1])) if heads is None else list(heads)
    for l in layers:
        if not 0 <= l < a.shape[0]:
            raise ValueError(f"layer {l} out of range 0..{a.shape[0] - 1}")
    for h in heads:
        if not 0 <= h < a.shape[1]:
            raise ValueError(f"head {h} out of range 0..{a.shape[1] - 1}")
    if show_labels is None:
        show_labels = len(tokens) <= 14
    if show_labels and _needs_cjk(tokens):
        use_cjk_font()
    fig, axes = plt.subplots(
        len(layers), len(heads), figsize=(cell * len(heads) + 0.6, cell * len(layers) + 0.6),
        squeeze=False,
    )
    for r, l in enumerate(layers):
        for c, h in enumerate(heads):
            ax = axes[r, c]
            ax.imshow(a[l, h], cmap=cmap, vmin=0, vmax=vmax, aspect="auto")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"head {h + 1}", fontsize=9)
            if c == 0:
                ax.set_ylabel(f"layer {l + 1}", fontsize=9)
            if show_labels and r == len(layers) - 1:
                ax.set_xticks(range(len(tokens)))
                ax.set_xticklabels(tokens, rotation=90, fontsize=6)
            if show_labels and c == 0:
                ax.set_yticks(range(len(tokens)))
                ax.set_yticklabels(tokens, fontsize=6)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def save_figure(fig, path: str | Path, formats: Sequence[str] = ("png", "svg"), dpi: int = 130) -> list[Path]:
    """Save ``fig`` as ``path`` with each suffix in ``formats``; return the paths."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        out = path.with_suffix("." + fmt)
        fig.savefig(out, dpi=dpi, bbox_inches="tight")
        written.append(out)
    return written
