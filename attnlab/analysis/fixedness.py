"""Fixedness: how much every query of one length gets the same map, per head.

Reads the sums of :class:`attnlab.core.streaming.MeanAttention` (mean map and
mean row entropy) and turns them into a per-head score, intervals over query
shards and the article's layer-by-layer reading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from attnlab.core.streaming import MeanAttention, _fixedness_from_sums, merge_all


def bootstrap_fixedness(shards: Sequence[MeanAttention], n_boot: int = 500, seed: int = 0) -> torch.Tensor:
    """Fixedness ``[n_boot, L, H]`` of resamples of the shards (with replacement)."""
    total = torch.stack([s.total for s in shards])  # (S, L, H, n, n)
    ent = torch.stack([s.entropy_total for s in shards])  # (S, L, H, n)
    count = torch.tensor([float(s.count) for s in shards], dtype=torch.float64)  # (S,)
    gen = torch.Generator().manual_seed(seed)
    s = len(shards)
    out = []
    for _ in range(n_boot):
        w = torch.bincount(torch.randint(0, s, (s,), generator=gen), minlength=s).double()  # (S,)
        out.append(_fixedness_from_sums(torch.einsum("s,s...->...", w, total),
                                        torch.einsum("s,s...->...", w, ent), (w * count).sum()))
    return torch.stack(out)


# --------------------------------------------------------------------------- lesson 08: the article's reading

#: A head counts as "fixed" when the information its attended positions carry about
#: the query is at most 10% of the possible maximum (ln n).
FIXED_THRESHOLD = 0.9

#: A mean map counts as "flat" (the article's washed-out look) when its sharpness is below this.
FLAT_THRESHOLD = 0.25

#: The source article's head groups in layers 1-4 (0-based head indices).
ARTICLE_FIXED_HEADS = (0, 2, 3, 4, 10, 11)
ARTICLE_VARYING_HEADS = (1, 6, 7, 8, 9)


def _verdict(holds: bool, fails: bool) -> str:
    return "holds" if holds else ("does not hold" if fails else "cannot tell")


@dataclass
class FixednessReport:
    """The source article's claims about mean maps, measured (see :func:`fixedness_report`).

    Arrays are numpy; layers and heads 0-based in code, printed 1-based.
    """

    layers: list[int]
    fixedness: "np.ndarray"  # (L, H)
    sharpness: "np.ndarray"  # (L, H)
    per_layer: "np.ndarray"  # (L,)
    per_layer_low: "np.ndarray"
    per_layer_high: "np.ndarray"
    slope: float
    slope_low: float
    slope_high: float
    depth_rho: float
    sharp_fixed_rho: float
    sharp_fixed_p: float
    flat_but_fixed: list[tuple[int, int]]
    n_flat: int
    flat_varying_share: float
    group_diff: float
    group_p: float
    last_is_most_fixed_share: float
    count: int
    n_shards: int
    threshold: float = FIXED_THRESHOLD

    def fixed_heads(self) -> list[tuple[int, int]]:
        """``(layer, head)`` 0-based with fixedness >= threshold."""
        import numpy as np

        return [(self.layers[l], int(h)) for l, h in zip(*np.nonzero(self.fixedness >= self.threshold))]

    def verdicts(self) -> dict[str, str]:
        last = self.fixedness[-1]
        return {
            "flat mean map = varying head": _verdict(self.n_flat > 0 and self.flat_varying_share >= 2 / 3,
                                                     self.n_flat > 0 and self.flat_varying_share <= 1 / 3),
            "heads 1,3,4,5,11,12 fixed, 2,7,8,9,10 vary": _verdict(self.group_diff > 0 and self.group_p < 0.05,
                                                                  self.group_diff <= 0 or self.group_p >= 0.2),
            "patterns more fixed with depth": _verdict(self.slope_low > 0, self.slope_high < 0),
            "last layer: all heads fixed": _verdict(
                bool((last >= self.threshold).all()) and self.last_is_most_fixed_share >= 0.95,
                bool((last < self.threshold).any()) or self.last_is_most_fixed_share <= 0.05),
        }

    def summary(self) -> str:
        v = self.verdicts()
        per_layer = ", ".join(f"L{l + 1} {x:.3f} [{lo:.3f}, {hi:.3f}]" for l, x, lo, hi in
                              zip(self.layers, self.per_layer, self.per_layer_low, self.per_layer_high))
        last = self.fixedness[-1]
        flat = ", ".join(f"L{l + 1} H{h + 1}" for l, h in self.flat_but_fixed[:8]) or "none"
        lines = [
            f"{self.count} queries in {self.n_shards} shards; fixed = fixedness >= {self.threshold}.",
            f"1. 'a flat mean map means a varying (content) head': {v['flat mean map = varying head']} "
            f"({self.n_flat} heads have a flat mean map (sharpness < {FLAT_THRESHOLD}), of which "
            f"{self.flat_varying_share:.0%} vary; flat-looking but fixed: {flat}. A sharp mean map always "
            f"means a fixed head. Spearman rho of sharpness and fixedness over heads {self.sharp_fixed_rho:+.2f}).",
            f"2. 'heads 1,3,4,5,11,12 fixed, 2,7,8,9,10 vary' (layers 1-4): "
            f"{v['heads 1,3,4,5,11,12 fixed, 2,7,8,9,10 vary']} (mean fixedness of the article's fixed group "
            f"minus its varying group {self.group_diff:+.3f}, permutation p={self.group_p:.2g}; head numbers "
            "only mean the same thing in bert-base-chinese).",
            f"3. 'patterns get more fixed with depth': {v['patterns more fixed with depth']} (slope "
            f"{self.slope:+.4f} per layer, 95% CI [{self.slope_low:+.4f}, {self.slope_high:+.4f}], Spearman "
            f"rho {self.depth_rho:+.2f}). Per layer: {per_layer}.",
            f"4. 'in the last layer all heads are fixed': {v['last layer: all heads fixed']} "
            f"({int((last >= self.threshold).sum())}/{len(last)} heads >= {self.threshold}, least fixed "
            f"{last.min():.3f}; the last layer is the most fixed layer in {self.last_is_most_fixed_share:.0%} "
            "of bootstrap resamples).",
        ]
        return "\n".join(lines)


def fixedness_report(shards: Sequence[MeanAttention] | MeanAttention, *, n_boot: int = 500, seed: int = 0,
                     threshold: float = FIXED_THRESHOLD) -> FixednessReport:
    """Measure the source article's four claims about mean maps.

    Args:
        shards: the output of :func:`sharded_mean_attention` (intervals come
            from resampling shards), or one accumulator (no intervals over
            queries: the interval collapses to the point).
        n_boot: bootstrap resamples of the shards.
    """
    import numpy as np
    from scipy.stats import spearmanr

    parts = [shards] if isinstance(shards, MeanAttention) else list(shards)
    whole = merge_all(parts)
    fixed = whole.fixedness().numpy()  # (L, H)
    sharp = whole.sharpness().numpy()
    depth = np.asarray(whole.layers, dtype=float)
    per_layer = fixed.mean(axis=1)
    boots = bootstrap_fixedness(parts, n_boot, seed).numpy() if len(parts) > 1 else fixed[None]
    boot_layer = boots.mean(axis=2)  # (B, L)
    slopes = _slopes(depth, boot_layer) if len(depth) > 1 else np.zeros(len(boot_layer))
    rho_sf, p_sf = spearmanr(sharp.ravel(), fixed.ravel())
    depth_rho = spearmanr(depth, per_layer)[0] if len(depth) > 2 else float("nan")
    flat = sharp < FLAT_THRESHOLD
    flat_but_fixed = [(whole.layers[l], int(h)) for l, h in zip(*np.nonzero(flat & (fixed >= threshold)))]
    n_flat = int(flat.sum())
    diff, p_group = _article_groups(fixed[:4])
    return FixednessReport(
        layers=list(whole.layers), fixedness=fixed, sharpness=sharp, per_layer=per_layer,
        per_layer_low=np.quantile(boot_layer, 0.025, axis=0), per_layer_high=np.quantile(boot_layer, 0.975, axis=0),
        slope=float(_slopes(depth, per_layer[None])[0]) if len(depth) > 1 else 0.0,
        slope_low=float(np.quantile(slopes, 0.025)), slope_high=float(np.quantile(slopes, 0.975)),
        depth_rho=float(depth_rho), sharp_fixed_rho=float(rho_sf), sharp_fixed_p=float(p_sf),
        flat_but_fixed=flat_but_fixed, n_flat=n_flat,
        flat_varying_share=float((fixed[flat] < threshold).mean()) if n_flat else float("nan"), group_diff=diff, group_p=p_group,
        last_is_most_fixed_share=float((boot_layer.argmax(axis=1) == len(depth) - 1).mean()),
        count=whole.count, n_shards=len(parts), threshold=threshold,
    )


def _slopes(x, y):
    import numpy as np

    xc = x - x.mean()
    return ((y - y.mean(axis=-1, keepdims=True)) * xc).sum(axis=-1) / (xc * xc).sum()


def _article_groups(fixed_first_layers, n_perm: int = 5000, seed: int = 0) -> tuple[float, float]:
    """Mean fixedness (over layers 1-4) of the article's fixed heads minus its varying heads,
    and a one-sided permutation p-value over head labels; NaN when the model has < 12 heads."""
    import numpy as np

    if fixed_first_layers.shape[1] < 12:
        return float("nan"), float("nan")
    per_head = fixed_first_layers.mean(axis=0)  # (H,)
    heads = np.array(ARTICLE_FIXED_HEADS + ARTICLE_VARYING_HEADS)
    values = per_head[heads]
    k = len(ARTICLE_FIXED_HEADS)
    diff = values[:k].mean() - values[k:].mean()
    rng = np.random.default_rng(seed)
    perms = np.array([rng.permutation(values) for _ in range(n_perm)])
    null = perms[:, :k].mean(axis=1) - perms[:, k:].mean(axis=1)
    return float(diff), float((null >= diff).mean())


# --------------------------------------------------------------------------- plots


def position_labels(acc: MeanAttention) -> list[str]:
    """Axis labels of a mean map: the first and last special tokens, positions 1..n-2 between."""
    first = acc.tokens[0] if acc.tokens else "[CLS]"
    last = acc.tokens[-1] if acc.tokens else "[SEP]"
    return [first] + [str(i) for i in range(1, acc.length - 1)] + [last]


def plot_mean_maps(acc: MeanAttention, *, layers: Sequence[int] | None = None, heads: Sequence[int] | None = None,
                   cell: float = 1.2):
    """The article's figure: mean maps, one row per layer, one column per head, one colour scale.

    Args:
        layers: positions along ``acc.layers`` to draw (0-based; default all).
    """
    from attnlab.viz.plot import plot_heads_grid

    mean = acc.mean.float()  # (L, H, n, n)
    vmax = float(torch.quantile(mean.flatten()[:: max(1, mean.numel() // 200_000)], 0.99))  # a few cells near 1 would wash out the rest
    fig = plot_heads_grid(mean, position_labels(acc), layers=layers, heads=heads, cell=cell, vmax=vmax,
                          suptitle=f"Mean attention over {acc.count:,} queries of {acc.length} tokens "
                                   "(rows: layers, columns: heads; one colour scale)")
    return fig


def plot_fixedness(acc: MeanAttention, *, threshold: float = FIXED_THRESHOLD):
    """Heatmap of fixedness ``[layers, heads]`` (numbers in the cells) beside sharpness of the mean map."""
    import matplotlib.pyplot as plt

    fixed, sharp = acc.fixedness().numpy(), acc.sharpness().numpy()
    n_layers, n_heads = fixed.shape
    fig, axes = plt.subplots(1, 2, figsize=(2 * (0.5 * n_heads + 1.5), 0.45 * n_layers + 1.6))
    for ax, values, title, cmap in ((axes[0], fixed, "fixedness (1 = same map for every query)", "magma"),
                                    (axes[1], sharp, "sharpness of the mean map (0 = flat)", "viridis")):
        im = ax.imshow(values, cmap=cmap, vmin=0, vmax=1, aspect="auto")
        for l in range(n_layers):
            for h in range(n_heads):
                mark = "*" if ax is axes[0] and values[l, h] >= threshold else ""
                ax.text(h, l, f"{values[l, h]:.2f}{mark}", ha="center", va="center", fontsize=6,
                        color="white" if values[l, h] < 0.6 else "black")
        ax.set_xticks(range(n_heads), [str(h + 1) for h in range(n_heads)])
        ax.set_yticks(range(n_layers), [str(l + 1) for l in acc.layers])
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(f"{acc.count:,} queries; * = fixedness >= {threshold}", fontsize=9)
    fig.tight_layout()
    return fig
