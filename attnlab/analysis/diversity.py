"""How different are the heads from each other, layer by layer?

Clark et al. (2019) measure the distance between two heads as the
Jensen-Shannon divergence between their attention rows, for the same query
token of the same text, after smoothing each row as ``0.999 * a + 0.001 / n``,
summed over rows and texts. They embed the 144 x 144 distances in 2-D with
multidimensional scaling and see heads of one layer lie close together. The
source article reads that plot as "heads within a layer become more alike
with depth"; :func:`depth_trend` measures that claim.

* :func:`head_distances` streams texts batch by batch (never holding all
  maps) and returns :class:`HeadDistances`: the mean distance matrix (sum
  over rows, mean over texts) and, per text, the *within-layer dispersion*
  (mean distance among the heads of one layer), kept for bootstrapping.
* :meth:`HeadDistances.mds` embeds the heads with scikit-learn's metric MDS
  on the precomputed distances.
* :func:`depth_trend` bootstraps texts to give intervals for the dispersion
  of each layer and for the slope of dispersion against depth, plus the
  Spearman correlation, and a verdict.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import torch

from attnlab.core.distributions import js_divergence, smooth
from attnlab.core.models import LoadedModel

#: Clark et al.'s smoothing for head distances.
DISTANCE_EPS = 1e-3


def pairwise_head_js(maps: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence between every pair of heads, per text.

    Args:
        maps: attention ``(B, K, n, n)`` for ``K`` heads (all layers flattened),
            rows summing to 1, *not* yet smoothed.

    Returns:
        float64 ``(B, K, K)``: for each text, the divergence of the smoothed
        rows of head ``a`` and head ``b`` summed over the ``n`` query rows;
        symmetric with a zero diagonal.
    """
    p = smooth(maps.float(), DISTANCE_EPS)  # (B, K, n, n)
    b, k = p.shape[:2]
    out = torch.zeros(b, k, k, dtype=torch.float64)
    for a in range(k - 1):
        d = js_divergence(p[:, a : a + 1], p[:, a + 1 :]).sum(dim=-1)  # (B, K-a-1): summed over rows
        out[:, a, a + 1 :] = d.double()
        out[:, a + 1 :, a] = d.double()
    return out


def layer_dispersion(dist: torch.Tensor, n_layers: int, n_heads: int) -> torch.Tensor:
    """Mean distance among the heads of each layer.

    Args:
        dist: ``(..., K, K)`` with ``K = n_layers * n_heads`` (layer-major).

    Returns:
        ``(..., n_layers)``: for each layer, the mean over its
        ``n_heads * (n_heads - 1) / 2`` head pairs.
    """
    blocks = dist.reshape(*dist.shape[:-2], n_layers, n_heads, n_layers, n_heads)
    idx = torch.arange(n_layers)
    within = blocks[..., idx, :, idx, :]  # (n_layers, ..., H, H) after advanced indexing
    within = within.movedim(0, -3)  # (..., n_layers, H, H)
    pairs = n_heads * (n_heads - 1)
    return within.sum(dim=(-2, -1)) / pairs  # diagonal is 0, each pair counted twice


@dataclass
class HeadDistances:
    """Head-to-head distances over a set of texts.

    Attributes:
        distance: float64 ``[K, K]``, ``K = layers * heads`` (layer-major:
            index ``l * heads + h``): JS divergence summed over query rows,
            averaged over texts.
        per_text: float64 ``[N, layers]``, each text's within-layer dispersion.
        layers: the 0-based model layers covered.
        n_heads: heads per layer.
    """

    distance: torch.Tensor
    per_text: torch.Tensor
    layers: list[int]
    n_heads: int

    @property
    def count(self) -> int:
        return int(self.per_text.shape[0])

    def dispersion(self) -> np.ndarray:
        """``[layers]``: mean within-layer distance (equal to the per-text average)."""
        return self.per_text.mean(dim=0).numpy()

    def labels(self) -> list[tuple[int, int]]:
        """``(layer, head)`` (0-based) of each row of :attr:`distance`."""
        return [(l, h) for l in self.layers for h in range(self.n_heads)]

    def mds(self, seed: int = 0) -> np.ndarray:
        """2-D metric MDS of the heads on the precomputed distances: ``[K, 2]``."""
        from sklearn.manifold import MDS

        kwargs = dict(n_components=2, dissimilarity="precomputed", random_state=seed, n_init=4)
        try:
            mds = MDS(metric=True, normalized_stress="auto", **kwargs)
        except TypeError:  # older scikit-learn
            mds = MDS(metric=True, **kwargs)
        d = self.distance.numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # scikit-learn's announced default changes
            return mds.fit_transform(0.5 * (d + d.T))


def head_distances(
    m: LoadedModel,
    texts: Iterable[str],
    *,
    layers: Sequence[int] | int | None = None,
    batch_size: int = 32,
    progress: bool = True,
    precision: str = "fp32",
) -> HeadDistances:
    """Clark et al.'s head distances over texts of one token length, streamed.

    Args:
        m: the loaded model.
        texts: any iterable of strings of one token length (as for
            :func:`attnlab.mean_attention`).
        layers: 0-based layers to include (``None``: all).
        batch_size: texts per forward pass.
        progress: tqdm progress bar.
        precision: forwarded to the fast forward pass.

    Returns:
        :class:`HeadDistances`.
    """
    from attnlab.core.streaming import _chunks, _token_ids
    from attnlab.core.fast import check_layers, encode_same_length, forward_maps

    chosen = check_layers(m, layers)
    from tqdm.auto import tqdm

    total_dist: torch.Tensor | None = None
    per_text: list[torch.Tensor] = []
    length = None
    seen = 0
    with tqdm(unit="queries", desc="head distances", disable=not progress) as bar:
        for chunk in _chunks(texts, batch_size):
            ids = _token_ids(m, chunk, seen)
            for k, row in enumerate(ids):
                if length is None:
                    length = len(row)
                elif len(row) != length:
                    raise ValueError(
                        f"text {seen + k} ({chunk[k]!r}) has {len(row)} tokens, the first text {length}: "
                        "head distances here need texts of one token length"
                    )
            maps = forward_maps(m, encode_same_length(m, ids), chosen, precision=precision)  # (B, L', H, n, n)
            b, l, h, n, _ = maps.shape
            dist = pairwise_head_js(maps.reshape(b, l * h, n, n))  # (B, K, K)
            total_dist = dist.sum(dim=0) if total_dist is None else total_dist + dist.sum(dim=0)
            per_text.append(layer_dispersion(dist, l, h))  # (B, L')
            seen += b
            bar.update(b)
    if total_dist is None:
        raise ValueError("texts is empty: pass at least two texts of one token length")
    return HeadDistances(total_dist / seen, torch.cat(per_text), chosen, m.n_heads)


# --------------------------------------------------------------------------- the depth claim


@dataclass
class DepthTrend:
    """Within-layer dispersion against depth, with bootstrap intervals over texts.

    Attributes:
        layers: 0-based layers.
        dispersion: ``[layers]`` point estimates.
        low, high: ``[layers]`` percentile bootstrap interval (``level``).
        slope: least-squares slope of dispersion per layer of depth.
        slope_low, slope_high: its bootstrap interval.
        spearman: Spearman rank correlation of dispersion with depth.
        spearman_p: its p-value (scipy; with few layers, read it with care).
        level: the interval's coverage, e.g. 0.95.
        n_texts, n_boot: texts and bootstrap resamples.
    """

    layers: list[int]
    dispersion: np.ndarray
    low: np.ndarray
    high: np.ndarray
    slope: float
    slope_low: float
    slope_high: float
    spearman: float
    spearman_p: float
    level: float
    n_texts: int
    n_boot: int

    def verdict(self) -> str:
        """"holds" when the slope's interval lies below 0 (heads of deeper layers are
        closer), "does not hold" when it lies above 0, else "cannot tell"."""
        if self.slope_high < 0:
            return "holds"
        if self.slope_low > 0:
            return "does not hold"
        return "cannot tell"

    def summary(self) -> str:
        per_layer = ", ".join(
            f"L{l + 1} {d:.3f} [{lo:.3f}, {hi:.3f}]"
            for l, d, lo, hi in zip(self.layers, self.dispersion, self.low, self.high)
        )
        return (
            f"'heads within a layer become more alike with depth': {self.verdict()} for this model. "
            f"Slope {self.slope:+.4f} per layer ({self.level:.0%} CI [{self.slope_low:+.4f}, "
            f"{self.slope_high:+.4f}]), Spearman rho {self.spearman:+.2f} (p={self.spearman_p:.3g}), "
            f"{self.n_texts} texts, {self.n_boot} resamples. Dispersion per layer: {per_layer}"
        )


def _slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slope of each row of ``y`` ``[..., L]`` against ``x`` ``[L]``."""
    xc = x - x.mean()
    return ((y - y.mean(axis=-1, keepdims=True)) * xc).sum(axis=-1) / (xc * xc).sum()


def depth_trend(hd: HeadDistances, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> DepthTrend:
    """Bootstrap (over texts) the within-layer dispersion and its trend with depth."""
    from scipy.stats import spearmanr

    if len(hd.layers) < 3:
        raise ValueError("a trend with depth needs at least 3 layers")
    per_text = hd.per_text.numpy()  # (N, L)
    n = per_text.shape[0]
    if n < 2:
        raise ValueError("bootstrap intervals need at least 2 texts")
    rng = np.random.default_rng(seed)
    boots = np.stack([per_text[rng.integers(0, n, n)].mean(axis=0) for _ in range(n_boot)])  # (n_boot, L)
    depth = np.asarray(hd.layers, dtype=float)
    point = per_text.mean(axis=0)
    slopes = _slope(depth, boots)
    alpha = (1 - level) / 2
    rho, p = spearmanr(depth, point)
    return DepthTrend(
        layers=list(hd.layers), dispersion=point,
        low=np.quantile(boots, alpha, axis=0), high=np.quantile(boots, 1 - alpha, axis=0),
        slope=float(_slope(depth, point)), slope_low=float(np.quantile(slopes, alpha)),
        slope_high=float(np.quantile(slopes, 1 - alpha)),
        spearman=float(rho), spearman_p=float(p) if not math.isnan(p) else float("nan"),
        level=level, n_texts=n, n_boot=n_boot,
    )


# --------------------------------------------------------------------------- do heads of a layer cluster?


@dataclass
class LayerClustering:
    """Clark et al.'s observation: heads of one layer are closer to each other than to other layers' heads."""

    within: float
    between: float
    p_value: float
    n_perm: int = 2000

    @property
    def ratio(self) -> float:
        return self.within / self.between

    def verdict(self) -> str:
        if self.within < self.between and self.p_value < 0.05:
            return "holds"
        if self.within >= self.between:
            return "does not hold"
        return "cannot tell"

    def summary(self) -> str:
        return (f"'heads of the same layer cluster' (Clark et al.): {self.verdict()} - mean distance within a "
                f"layer {self.within:.3f}, between layers {self.between:.3f} (ratio {self.ratio:.2f}, "
                f"permutation p{_p_text(self.p_value, self.n_perm)})")


def layer_clustering(hd: HeadDistances, n_perm: int = 2000, seed: int = 0) -> LayerClustering:
    """Within- vs between-layer mean distance, with a permutation test over layer labels."""
    d = hd.distance.numpy()
    k = d.shape[0]
    labels = np.repeat(np.arange(len(hd.layers)), hd.n_heads)
    off = ~np.eye(k, dtype=bool)

    def within_between(lab: np.ndarray) -> tuple[float, float]:
        same = (lab[:, None] == lab[None, :]) & off
        return float(d[same].mean()), float(d[~same & off].mean())

    within, between = within_between(labels)
    rng = np.random.default_rng(seed)
    null = np.array([within_between(rng.permutation(labels))[0] for _ in range(n_perm)])
    return LayerClustering(within, between, float((null <= within).mean()), n_perm)


def _p_text(p: float, n_perm: int) -> str:
    """``=0.03`` or, when no permutation did as well, ``<1/n_perm``."""
    return f"<{1 / n_perm:.1g}" if p == 0 else f"={p:.3g}"


# --------------------------------------------------------------------------- plots


def plot_mds(hd: HeadDistances, xy: np.ndarray | None = None, *, seed: int = 0):
    """Clark et al.'s picture: every head as a point (2-D MDS), coloured by layer."""
    import matplotlib.pyplot as plt

    xy = hd.mds(seed) if xy is None else xy
    colours = plt.get_cmap("viridis")(np.linspace(0, 1, len(hd.layers)))
    fig, ax = plt.subplots(figsize=(6.2, 5.2))
    for i, layer in enumerate(hd.layers):
        rows = slice(i * hd.n_heads, (i + 1) * hd.n_heads)
        ax.scatter(xy[rows, 0], xy[rows, 1], color=colours[i], label=f"layer {layer + 1}", s=28,
                   edgecolor="black", linewidth=0.3)
    ax.legend(fontsize=7, ncol=2, frameon=False)
    ax.set_title(f"Heads embedded by MDS of their JS distances ({hd.count} queries)", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    return fig


def plot_dispersion(trend: DepthTrend):
    """Within-layer dispersion per layer with its bootstrap interval, and the fitted slope."""
    import matplotlib.pyplot as plt

    x = np.asarray(trend.layers) + 1
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.errorbar(x, trend.dispersion, yerr=[trend.dispersion - trend.low, trend.high - trend.dispersion],
                fmt="o-", capsize=3, label=f"dispersion ({trend.level:.0%} bootstrap interval)")
    fit = trend.dispersion.mean() + trend.slope * (x - x.mean())
    ax.plot(x, fit, "--", color="grey", label=f"slope {trend.slope:+.3f} per layer")
    ax.set_xlabel("layer")
    ax.set_ylabel("mean JS distance between heads of the layer")
    ax.set_xticks(x)
    ax.set_title(f"Do heads of a layer become more alike with depth? {trend.verdict()}", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
