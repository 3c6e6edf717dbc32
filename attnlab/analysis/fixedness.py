"""Fixedness per head and per layer, with intervals over queries.

Reads the sums of :class:`attnlab.core.streaming.MeanAttention` (mean map and
mean row entropy, see :meth:`~attnlab.core.streaming.MeanAttention.fixedness`)
and measures, from query shards:

* each head's fixedness ``[L, H]`` and the sharpness of its mean map;
* the mean fixedness of every layer with a bootstrap interval over shards;
* the slope of that per-layer fixedness against depth, with its interval;
* how often, over the resamples, the last layer is the most fixed one;
* beside a **control** run (random vocabulary pieces, no content at all):
  the control's fixedness and the difference real - control per head, with
  an interval from resampling both runs' shards;
* how the fixedness settles as more queries are averaged
  (:func:`fixedness_curve`).

Only numbers live here; what they say about the source article's claims is
:mod:`attnlab.course.claims.averaging`'s job.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from attnlab.analysis.stats import Interval, correlation, interval_from_samples, resample_counts, slope
from attnlab.core.models import LoadedModel
from attnlab.core.streaming import MeanAttention, fixedness_from_sums, mean_attention, merge_all


#: bootstrap resamples computed together in :func:`bootstrap_fixedness`
RESAMPLES_AT_ONCE = 50


def bootstrap_fixedness(shards: Sequence[MeanAttention], n_boot: int = 500, seed: int = 0) -> torch.Tensor:
    """Fixedness ``[n_boot, L, H]`` of resamples of the shards (drawn with replacement).

    A resample weights each shard by how often it was drawn
    (:func:`attnlab.analysis.stats.resample_counts`); the weighted sums are the
    sums of the resampled queries, so fixedness follows exactly. Resamples are
    handled :data:`RESAMPLES_AT_ONCE` at a time, so memory does not grow with
    ``n_boot`` (1,000 resampled maps of a 12 x 12 model are 230 MB each step).
    """
    total = torch.stack([s.total for s in shards])  # (S, L, H, n, n)
    ent = torch.stack([s.entropy_total for s in shards])  # (S, L, H, n)
    count = torch.tensor([float(s.count) for s in shards], dtype=torch.float64)  # (S,)
    weights = torch.from_numpy(resample_counts(len(shards), n_boot, seed)).double()  # (B, S)
    return torch.cat([fixedness_from_sums(torch.einsum("bs,s...->b...", w, total),  # (b, L, H, n, n)
                                          torch.einsum("bs,s...->b...", w, ent),  # (b, L, H, n)
                                          w @ count)  # (b,) -> (b, L, H)
                      for w in weights.split(RESAMPLES_AT_ONCE)])  # (B, L, H)


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
        model_name: the model that made the maps.
        head_boots: ``[B, L, H]`` fixedness of each bootstrap resample (``[1, L, H]``
            with one shard), kept to ask other questions of the same resamples.
        control: fixedness ``[L, H]`` of the control run (None without one).
        control_per_layer: the control's per-layer fixedness ``[L]`` with its interval.
        difference: real minus control fixedness ``[L, H]``, with an interval from
            resampling the shards of both runs independently.
        control_count: strings in the control run.
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
    model_name: str = ""
    head_boots: np.ndarray | None = None  # (B, L, H)
    control: np.ndarray | None = None  # (L, H)
    control_per_layer: Interval | None = None  # (L,)
    difference: Interval | None = None  # (L, H)
    control_count: int = 0

    def share_most_fixed(self, layer: int, among: Sequence[int] | None = None) -> float:
        """Share of resamples in which model layer ``layer`` has the highest per-layer
        fixedness among the model layers ``among`` (default: all averaged layers)."""
        among = list(self.layers) if among is None else list(among)
        if layer not in among or any(l not in self.layers for l in among):
            raise ValueError(f"layers {among} (with {layer}) must all be among the averaged layers {self.layers}")
        rows = [self.layers.index(l) for l in among]
        boots = self.head_boots if self.head_boots is not None else self.fixedness[None]  # (B, L, H)
        per_layer = boots[:, rows].mean(axis=2)  # (B, len(among))
        return float((per_layer.argmax(axis=1) == among.index(layer)).mean())

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
            + (self._control_summary() if self.control is not None else "")
        )

    def _control_summary(self) -> str:
        c = self.control_per_layer
        per_layer = ", ".join(f"L{l + 1} {x:.3f}" for l, x in zip(self.layers, c.estimate))
        below = int((np.asarray(self.difference.high) < 0).sum())
        return (f"\nControl ({self.control_count} strings of random vocabulary pieces), mean fixedness per "
                f"layer: {per_layer}\nHeads whose interval of real - control lies wholly below 0: "
                f"{below} of {self.fixedness.size}")


def fixedness_report(shards: Sequence[MeanAttention] | MeanAttention, *, n_boot: int = 500,
                     seed: int = 0, control: Sequence[MeanAttention] | MeanAttention | None = None) -> FixednessReport:
    """Fixedness per head and per layer, with intervals from resampling query shards.

    Args:
        shards: the output of :func:`attnlab.core.streaming.sharded_mean_attention`,
            or one accumulator (then every interval collapses to its point).
        n_boot: bootstrap resamples of the shards.
        seed: seed of the resampling.
        control: shards of the control run (same model, layers and length),
            e.g. over :func:`attnlab.data.querygen.random_token_queries`.
    """
    parts = _as_parts(shards)
    whole = merge_all(parts)
    fixed = whole.fixedness().numpy()  # (L, H)
    sharp = whole.sharpness().numpy()  # (L, H)
    depth = np.asarray(whole.layers, dtype=float)  # (L,)
    per_layer = fixed.mean(axis=1)  # (L,)
    boots = _boots(parts, n_boot, seed)  # (B, L, H)
    boot_layer = boots.mean(axis=2)  # (B, L)
    has_depth = len(depth) > 1
    boot_slopes = slope(depth, boot_layer) if has_depth else np.zeros(len(boot_layer))  # (B,)
    report = FixednessReport(
        layers=list(whole.layers), fixedness=fixed, sharpness=sharp,
        per_layer=interval_from_samples(per_layer, boot_layer, n=len(parts)),
        slope=interval_from_samples(slope(depth, per_layer) if has_depth else 0.0, boot_slopes, n=len(parts)),
        depth_rho=correlation(depth, per_layer) if len(depth) > 2 else float("nan"),
        sharp_fixed_rho=correlation(sharp, fixed),
        last_is_most_fixed_share=float((boot_layer.argmax(axis=1) == len(depth) - 1).mean()),
        count=whole.count, n_shards=len(parts), model_name=whole.model_name, head_boots=boots,
    )
    if control is not None:
        _add_control(report, _as_parts(control), n_boot, seed)
    return report


def _as_parts(shards: Sequence[MeanAttention] | MeanAttention) -> list[MeanAttention]:
    return [shards] if isinstance(shards, MeanAttention) else list(shards)


def _boots(parts: list[MeanAttention], n_boot: int, seed: int) -> np.ndarray:
    """``[B, L, H]`` resampled fixedness; ``[1, L, H]`` (the point) for a single shard."""
    if len(parts) > 1:
        return bootstrap_fixedness(parts, n_boot, seed).numpy()
    return merge_all(parts).fixedness().numpy()[None]


def _add_control(report: FixednessReport, parts: list[MeanAttention], n_boot: int, seed: int) -> None:
    """Fill the control fields of ``report`` from the control run's shards."""
    whole = merge_all(parts)
    if whole.layers != report.layers:
        raise ValueError(f"the control averaged layers {whole.layers}, the real run {report.layers}")
    control = whole.fixedness().numpy()  # (L, H)
    boots = _boots(parts, n_boot, seed + 1)  # (B', L, H): resampled independently of the real run
    real_boots = report.head_boots  # (B, L, H)
    k = min(len(boots), len(real_boots))
    if len(boots) == 1 or len(real_boots) == 1:  # one side without resamples: the other side's spread only
        diff_boots = real_boots - boots if len(boots) == 1 else report.fixedness[None] - boots
    else:
        diff_boots = real_boots[:k] - boots[:k]  # (k, L, H)
    report.control = control
    report.control_per_layer = interval_from_samples(control.mean(axis=1), boots.mean(axis=2), n=len(parts))
    report.difference = interval_from_samples(report.fixedness - control, diff_boots, n=min(len(parts), report.n_shards))
    report.control_count = whole.count


# --------------------------------------------------------------------------- more queries, steadier answer


@dataclass
class FixednessCurve:
    """Fixedness after the first ``counts[k]`` queries of a run (nested prefixes).

    Attributes:
        counts: queries averaged at each point, increasing.
        fixedness: ``[K, L, H]``, each head's fixedness after ``counts[k]`` queries.
        layers: the model layers of the second axis.
    """

    counts: list[int]
    fixedness: np.ndarray  # (K, L, H)
    layers: list[int]

    def per_layer(self) -> np.ndarray:
        """``[K, L]``: mean fixedness of each layer's heads at each count."""
        return self.fixedness.mean(axis=2)


def leading_pieces(m: LoadedModel, texts: Iterator[str], bounds: Sequence[int], **kwargs) -> list[MeanAttention]:
    """Accumulators of texts ``1..bounds[0]``, ``bounds[0]+1..bounds[1]``, ... read from the iterator ``texts``.

    The iterator is left after text ``bounds[-1]``, so the rest of the run
    (e.g. :func:`attnlab.core.streaming.sharded_mean_attention`) continues
    where the pieces stop. Merged, the pieces are the first shard; kept apart,
    they are the first points of :func:`fixedness_curve`. Keyword arguments go
    to :func:`attnlab.core.streaming.mean_attention`.
    """
    if list(bounds) != sorted(set(bounds)) or not bounds or bounds[0] < 2:
        raise ValueError(f"bounds must increase from at least 2 (a piece needs a variance), got {list(bounds)}")
    pieces, done = [], 0
    for bound in bounds:
        chunk = list(itertools.islice(texts, bound - done))
        if len(chunk) < bound - done:
            raise ValueError(f"the texts ran out after {done + len(chunk)} of the first {bound}")
        pieces.append(mean_attention(m, chunk, progress=False, **kwargs))
        done = bound
    return pieces


def decades(total: int) -> list[int]:
    """10, 100, 1,000, ... below ``total``, then ``total``: the counts of the curve."""
    out, c = [], 10
    while c < total:
        out.append(c)
        c *= 10
    return out + [total]


def fixedness_curve(parts: Sequence[MeanAttention], counts: Sequence[int]) -> FixednessCurve:
    """Fixedness of every head after the first ``counts`` queries of ``parts`` (in order).

    ``parts`` are consecutive accumulators of one stream (e.g. the first 10
    queries, the next 90, the next 900, then shards of 1,000); every count must
    fall on a boundary between parts, so each point is exact.

    Raises:
        ValueError: a count that is not a cumulative count of the parts.
    """
    running = None
    reached: dict[int, np.ndarray] = {}
    for part in parts:
        running = part if running is None else running.merge(part)
        if running.count in counts:
            reached[running.count] = running.fixedness().numpy()
    missing = [c for c in counts if c not in reached]
    if missing:
        bounds = list(itertools.accumulate(p.count for p in parts))
        raise ValueError(f"counts {missing} do not fall between parts (cumulative counts: {bounds[:8]}...)")
    ordered = sorted(set(counts))
    return FixednessCurve(ordered, np.stack([reached[c] for c in ordered]), list(parts[0].layers))
