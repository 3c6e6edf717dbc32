"""Fixedness per head and per layer, with intervals over queries.

Reads the sums of :class:`attnlab.core.streaming.MeanAttention` (mean map and
mean row entropy, see :meth:`~attnlab.core.streaming.MeanAttention.fixedness`)
and measures, from query shards:

* each head's fixedness ``[L, H]`` and the sharpness of its mean map;
* the mean fixedness of every layer with a bootstrap interval over shards;
* the slope of that per-layer fixedness against depth, with its interval;
* how often, over the resamples, the last layer is the most fixed one.

Only numbers live here; what they say about the source article's claims is
:mod:`attnlab.course.claims.averaging`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnlab.analysis.stats import Interval, correlation, interval_from_samples, resample_counts, slope
from attnlab.core.streaming import MeanAttention, fixedness_from_sums, merge_all


def bootstrap_fixedness(shards: Sequence[MeanAttention], n_boot: int = 500, seed: int = 0) -> torch.Tensor:
    """Fixedness ``[n_boot, L, H]`` of resamples of the shards (drawn with replacement).

    A resample weights each shard by how often it was drawn
    (:func:`attnlab.analysis.stats.resample_counts`); the weighted sums are the
    sums of the resampled queries, so fixedness follows exactly.
    """
    total = torch.stack([s.total for s in shards])  # (S, L, H, n, n)
    ent = torch.stack([s.entropy_total for s in shards])  # (S, L, H, n)
    count = torch.tensor([float(s.count) for s in shards], dtype=torch.float64)  # (S,)
    weights = torch.from_numpy(resample_counts(len(shards), n_boot, seed)).double()  # (B, S)
    return fixedness_from_sums(torch.einsum("bs,s...->b...", weights, total),  # (B, L, H, n, n)
                               torch.einsum("bs,s...->b...", weights, ent),  # (B, L, H, n)
                               weights @ count)  # (B,) -> (B, L, H)


@dataclass
class FixednessReport:
    """Fixedness of every head and its trend with depth, measured over query shards.

    Arrays are numpy; layers and heads 0-based (printed 1-based).

    Attributes:
        layers: the model layers of the first axis.
        fixedness: ``[L, H]``, 1 = every query gets the same map.
        sharpness: ``[L, H]``, how far each mean map is from uniform (0 = flat).
        per_layer: fixedness averaged over each layer's heads, ``[L]``, with a
            bootstrap interval over shards.
        slope: least-squares slope of ``per_layer`` against the layer index,
            with its bootstrap interval (same resamples).
        depth_rho: Spearman correlation of ``per_layer`` with depth (NaN below 3 layers).
        sharp_fixed_rho: Spearman correlation over heads of sharpness and fixedness.
        last_is_most_fixed_share: share of resamples in which the last layer
            has the highest per-layer fixedness.
        count: queries; n_shards: shards they were split into (1: no interval).
    """

    layers: list[int]
    fixedness: np.ndarray  # (L, H)
    sharpness: np.ndarray  # (L, H)
    per_layer: Interval  # (L,)
    slope: Interval
    depth_rho: float
    sharp_fixed_rho: float
    last_is_most_fixed_share: float
    count: int
    n_shards: int

    def heads_at_least(self, threshold: float) -> list[tuple[int, int]]:
        """``(layer, head)`` (0-based model layers) whose fixedness is at least ``threshold``."""
        return [(self.layers[l], int(h)) for l, h in zip(*np.nonzero(self.fixedness >= threshold))]

    def summary(self) -> str:
        """The numbers in a few lines (layers 1-based)."""
        per_layer = ", ".join(
            f"L{l + 1} {x:.3f} [{lo:.3f}, {hi:.3f}]"
            for l, x, lo, hi in zip(self.layers, self.per_layer.estimate, self.per_layer.low, self.per_layer.high)
        )
        return (
            f"{self.count} queries in {self.n_shards} shards.\n"
            f"Mean fixedness per layer ({self.per_layer.level:.0%} interval over shards): {per_layer}\n"
            f"Slope against depth {self.slope.estimate:+.4f} per layer [{self.slope.low:+.4f}, "
            f"{self.slope.high:+.4f}], Spearman rho with depth {self.depth_rho:+.2f}; the last layer is "
            f"the most fixed in {self.last_is_most_fixed_share:.0%} of resamples.\n"
            f"Spearman rho of sharpness and fixedness over heads: {self.sharp_fixed_rho:+.2f}"
        )


def fixedness_report(shards: Sequence[MeanAttention] | MeanAttention, *, n_boot: int = 500,
                     seed: int = 0) -> FixednessReport:
    """Fixedness per head and per layer, with intervals from resampling query shards.

    Args:
        shards: the output of :func:`attnlab.core.streaming.sharded_mean_attention`,
            or one accumulator (then every interval collapses to its point).
        n_boot: bootstrap resamples of the shards.
        seed: seed of the resampling.
    """
    parts = [shards] if isinstance(shards, MeanAttention) else list(shards)
    whole = merge_all(parts)
    fixed = whole.fixedness().numpy()  # (L, H)
    sharp = whole.sharpness().numpy()  # (L, H)
    depth = np.asarray(whole.layers, dtype=float)  # (L,)
    per_layer = fixed.mean(axis=1)  # (L,)
    boots = bootstrap_fixedness(parts, n_boot, seed).numpy() if len(parts) > 1 else fixed[None]  # (B, L, H)
    boot_layer = boots.mean(axis=2)  # (B, L)
    has_depth = len(depth) > 1
    boot_slopes = slope(depth, boot_layer) if has_depth else np.zeros(len(boot_layer))  # (B,)
    return FixednessReport(
        layers=list(whole.layers), fixedness=fixed, sharpness=sharp,
        per_layer=interval_from_samples(per_layer, boot_layer, n=len(parts)),
        slope=interval_from_samples(slope(depth, per_layer) if has_depth else 0.0, boot_slopes, n=len(parts)),
        depth_rho=correlation(depth, per_layer) if len(depth) > 2 else float("nan"),
        sharp_fixed_rho=correlation(sharp, fixed),
        last_is_most_fixed_share=float((boot_layer.argmax(axis=1) == len(depth) - 1).mean()),
        count=whole.count, n_shards=len(parts),
    )
