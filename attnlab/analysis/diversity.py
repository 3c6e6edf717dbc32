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
  Spearman correlation.
* :func:`depth_shape` reads the *shape* of the curve, which a slope cannot: how much of the
  lower layers' spread the upper layers keep, and how far the last layer climbs back above the
  layer whose heads are most alike (a U: heads converge in the middle and spread again at the
  top), with intervals from resampling texts.
* :func:`shuffled_baseline` is the trend's baseline: the heads dealt to
  layers at random (whole heads shuffled), so every "layer" is a random
  group of heads; the dispersion and slope such groups give show what no
  layer structure looks like, and where the observed slope falls among them.
* :func:`layer_clustering` compares distances within and between layers
  with a permutation test over the layer labels.

**Two readings.** Heads that all rest on the same special token ([SEP],
``<s>``: a sink) are "alike" on **all keys** whatever the rest of their rows
does. With ``content_keys=True``, :func:`head_distances` also measures the
distances on the **content keys** (special columns left out, rows
renormalised: :func:`attnlab.core.distributions.content_keys`) in the same
pass, as :attr:`HeadDistances.content`; every function below takes either.

The verdicts on the claims are :mod:`attnlab.course.claims.diversity`'s job.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

import numpy as np
import torch
from sklearn.manifold import MDS
from tqdm.auto import tqdm

from attnlab.analysis.stats import (
    Interval,
    bootstrap_mean,
    bootstrap_slope,
    correlation,
    draws_of,
    interval_from_samples,
    resample_counts,
    slope,
)
from attnlab.core.checks import check_positive_int
from attnlab.core.records import Record
from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS, smooth, special_mask, special_token_ids
from attnlab.core.fast import check_layers, encode_same_length, forward_maps
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.streaming import checked_token_ids, content_rows, text_batches

#: Clark et al.'s smoothing for head distances.
DISTANCE_EPS = 1e-3


def pairwise_head_js(maps: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence between every pair of heads, per text.

    Args:
        maps: attention ``(B, K, n, m)`` for ``K`` heads (all layers flattened; ``m = n`` keys, or fewer
            for the content-key reading),
            rows summing to 1, *not* yet smoothed.

    Returns:
        float64 ``(B, K, K)``: for each text, the divergence of the smoothed
        rows of head ``a`` and head ``b`` summed over the ``n`` query rows;
        symmetric with a zero diagonal.
    """
    p = smooth(maps.double(), DISTANCE_EPS)  # (B, K, n, n), every entry > 0
    b, k = p.shape[:2]
    neg_entropy = (p * p.log()).sum(dim=-1)  # (B, K, n): sum of p log p of each row, computed once
    out = torch.zeros(b, k, k, dtype=torch.float64)
    for a in range(k - 1):
        # JS(p, q) = H((p + q) / 2) - (H(p) + H(q)) / 2: one logarithm per pair instead of three
        mix = 0.5 * (p[:, a : a + 1] + p[:, a + 1 :])  # (B, K-a-1, n, n)
        d = 0.5 * (neg_entropy[:, a : a + 1] + neg_entropy[:, a + 1 :]) - (mix * mix.log()).sum(dim=-1)
        out[:, a, a + 1 :] = d.sum(dim=-1)  # (B, K-a-1): summed over the query rows
        out[:, a + 1 :, a] = out[:, a, a + 1 :]
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
        reading: ``ALL_KEYS`` or ``CONTENT_KEYS`` (rows renormalised over the non-special keys).
        content: the same distances on the content keys (None unless asked for).
    """

    distance: torch.Tensor
    per_text: torch.Tensor
    layers: list[int]
    n_heads: int
    reading: str = ALL_KEYS
    content: "HeadDistances | None" = None

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
    content_keys: bool = False,
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
        content_keys: also measure the distances on the content keys, from the same
            forward passes (:attr:`HeadDistances.content`).

    Returns:
        :class:`HeadDistances`.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of strings, not one string: wrap it in a list")
    batch_size = check_positive_int(batch_size, "batch_size")
    chosen = check_layers(m, layers)
    total_dist: torch.Tensor | None = None
    per_text: list[torch.Tensor] = []
    content_total: torch.Tensor | None = None
    content_per_text: list[torch.Tensor] = []
    special: torch.Tensor | None = None  # (n,) the special key positions, from the first text
    length = None
    seen = 0
    with tqdm(unit=_(" queries"), desc=_("head distances"), disable=not progress) as bar:
        for chunk in text_batches(texts, batch_size):
            ids = checked_token_ids(m, chunk, seen)
            for k, row in enumerate(ids):
                if length is None:
                    length = len(row)
                elif len(row) != length:
                    raise ValueError(
                        f"text {seen + k} ({chunk[k]!r}) has {len(row)} tokens, the first text {length}: "
                        "head distances here need texts of one token length"
                    )
            maps = forward_maps(m, encode_same_length(m, ids), chosen, precision=precision)  # (B, L', H, n, n)
            b, l, h, n, _n = maps.shape
            dist = pairwise_head_js(maps.reshape(b, l * h, n, n))  # (B, K, K)
            total_dist = dist.sum(dim=0) if total_dist is None else total_dist + dist.sum(dim=0)
            per_text.append(layer_dispersion(dist, l, h))  # (B, L')
            if content_keys:
                if special is None:
                    special = special_mask(ids[0], special_token_ids(m.tokenizer))  # (n,)
                rows = content_rows(maps, special.to(maps.device))  # (B, L', H, n, n_content)
                c_dist = pairwise_head_js(rows.reshape(b, l * h, n, -1))  # (B, K, K)
                content_total = c_dist.sum(dim=0) if content_total is None else content_total + c_dist.sum(dim=0)
                content_per_text.append(layer_dispersion(c_dist, l, h))
            seen += b
            bar.update(b)
    if total_dist is None:
        raise ValueError("texts is empty: pass at least two texts of one token length")
    hd = HeadDistances(total_dist / seen, torch.cat(per_text), chosen, m.n_heads)
    if content_keys:
        hd.content = HeadDistances(content_total / seen, torch.cat(content_per_text), chosen, m.n_heads,
                                   reading=CONTENT_KEYS)
    return hd


# --------------------------------------------------------------------------- the depth trend


@dataclass
class DepthTrend:
    """Within-layer dispersion against depth, with bootstrap intervals over texts.

    Attributes:
        layers: 0-based layers.
        dispersion: ``[layers]`` mean within-layer distance, with its
            percentile bootstrap interval over texts.
        slope: least-squares slope of dispersion per layer of depth, with its
            bootstrap interval (negative: heads of deeper layers are closer).
        spearman: Spearman rank correlation of dispersion with depth.
        n_boot: bootstrap resamples.
    """

    layers: list[int]
    dispersion: Interval  # (L,)
    slope: Interval
    spearman: float
    n_boot: int

    @property
    def n_texts(self) -> int:
        return self.dispersion.n

    def summary(self) -> str:
        """The numbers in a few lines (layers 1-based)."""
        d = self.dispersion
        per_layer = ", ".join(f"L{l + 1} {x:.3f} [{lo:.3f}, {hi:.3f}]"
                              for l, x, lo, hi in zip(self.layers, d.estimate, d.low, d.high))
        return (
            _("Slope of within-layer dispersion {slope} per layer ({level} interval [{low}, {high}]), "
              "Spearman rho with depth {rho}; {n_texts} texts, {n_boot} resamples.").format(
                slope=f"{self.slope.estimate:+.4f}", level=f"{self.slope.level:.0%}",
                low=f"{self.slope.low:+.4f}", high=f"{self.slope.high:+.4f}", rho=f"{self.spearman:+.2f}",
                n_texts=self.n_texts, n_boot=self.n_boot)
            + "\n" + _("Dispersion per layer: {per_layer}").format(per_layer=per_layer)
        )


def depth_trend(hd: HeadDistances, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> DepthTrend:
    """Bootstrap (over texts) the within-layer dispersion and its slope against depth."""
    if len(hd.layers) < 3:
        raise ValueError("a trend with depth needs at least 3 layers")
    per_text = hd.per_text.numpy()  # (N, L)
    if per_text.shape[0] < 2:
        raise ValueError("bootstrap intervals need at least 2 texts")
    depth = np.asarray(hd.layers, dtype=float)  # (L,)
    dispersion = bootstrap_mean(per_text, n_boot=n_boot, level=level, seed=seed)  # (L,)
    return DepthTrend(
        layers=list(hd.layers), dispersion=dispersion,
        slope=bootstrap_slope(depth, per_text, n_boot=n_boot, level=level, seed=seed),
        spearman=correlation(depth, dispersion.estimate), n_boot=n_boot,
    )


# --------------------------------------------------------------------------- the shape of the curve


def thirds(n_layers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (0-based, along the layers measured) of the lower, middle and upper third of
    ``n_layers`` layers; when the layers do not split evenly the lower thirds take one more
    (12 layers: 4, 4, 4; 13: 5, 4, 4; 3: one each)."""
    if n_layers < 3:
        raise ValueError("thirds of the depth need at least 3 layers")
    lower, middle, upper = np.array_split(np.arange(n_layers), 3)
    return lower, middle, upper


def shape_numbers(curve: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The two numbers of :class:`DepthShape` for dispersion curves.

    Args:
        curve: ``(..., L)`` within-layer dispersion of each layer (one curve per leading index).

    Returns:
        ``(upper_share, rebound, least)``, each ``(...)``: the upper third's mean dispersion over the
        lower third's; the last layer's dispersion above the least diverse layer's, over the lower
        third's; and the position of the least diverse layer. NaN where the lower third's heads do
        not differ at all (nothing to keep a share of).
    """
    curve = np.asarray(curve, dtype=float)
    lower, _middle, upper = thirds(curve.shape[-1])
    low = curve[..., lower].mean(axis=-1)  # (...)
    scale = np.where(low > 0, low, np.nan)
    upper_share = curve[..., upper].mean(axis=-1) / scale
    rebound = (curve[..., -1] - curve.min(axis=-1)) / scale
    return upper_share, rebound, np.argmin(curve, axis=-1)


@dataclass
class DepthShape(Record):
    """The shape of the dispersion curve against depth, with percentile intervals over texts.

    A straight slope cannot tell a curve that keeps falling to the top from a U (heads alike in the
    middle layers, diverse again in the last ones): both can have the same negative slope. Two
    numbers, both in shares of the **lower third's** dispersion (the layers the article calls
    diverse):

    Attributes:
        layers: 0-based layers of the curve.
        upper_share: the upper third's mean dispersion over the lower third's (1: the upper layers
            are as diverse as the lower ones; 0: their heads are identical).
        rebound: the last layer's dispersion minus the least diverse layer's, over the lower third's
            (0: the last layer is the least diverse, the curve falls to the top; large: a U).
        least_layer: the 0-based layer with the least diverse heads, on all texts.
        n_boot: resamples of the texts.
    """

    layers: list[int]
    upper_share: Interval
    rebound: Interval
    least_layer: int
    n_boot: int

    @property
    def n_texts(self) -> int:
        return self.rebound.n

    def summary(self) -> str:
        """The two numbers in one line (layers 1-based)."""
        u, r = self.upper_share, self.rebound
        return _("The upper third of the layers keeps {share} [{share_low}, {share_high}] of the lower third's "
                 "dispersion; the last layer lies {rebound} [{rebound_low}, {rebound_high}] of it above the least "
                 "diverse layer (layer {least}); {n_texts} texts, {n_boot} resamples.").format(
            share=f"{u.estimate:.3f}", share_low=f"{u.low:.3f}", share_high=f"{u.high:.3f}",
            rebound=f"{r.estimate:.3f}", rebound_low=f"{r.low:.3f}", rebound_high=f"{r.high:.3f}",
            least=self.least_layer + 1, n_texts=self.n_texts, n_boot=self.n_boot)


def depth_shape(hd: HeadDistances, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> DepthShape:
    """:class:`DepthShape` of ``hd``'s within-layer dispersion, with intervals from resampling the texts.

    Each resample draws the texts with replacement, averages their dispersion per layer and
    measures the curve of the means again (:func:`shape_numbers`), the least diverse layer
    included: which layer that is may change from resample to resample. The heads are not
    resampled: they are the whole population of the model, and the texts carry the noise. Both
    intervals keep their resamples in memory, so that an untrained twin measured on the same texts
    with the same seed is differenced resample by resample
    (:func:`attnlab.analysis.stats.paired_difference`).
    """
    if len(hd.layers) < 3:
        raise ValueError("the shape of the curve needs at least 3 layers")
    per_text = hd.per_text.double().numpy()  # (N, L)
    n = per_text.shape[0]
    if n < 2:
        raise ValueError("bootstrap intervals need at least 2 texts")
    share, rebound, least = shape_numbers(per_text.mean(axis=0))
    means = resample_counts(n, n_boot, seed) @ per_text / n  # (B, L): the mean curve of each resample
    boot_share, boot_rebound, _least = shape_numbers(means)  # (B,) each
    draws = draws_of("counts", np.ones(n, dtype=bool), seed, n_boot)  # every text, drawn by resample_counts

    def kept(estimate: float, boots: np.ndarray) -> Interval:  # the resamples kept in memory, for pairing
        return replace(interval_from_samples(estimate, boots, level=level, n=n), samples=boots, draws=draws)

    return DepthShape(
        layers=list(hd.layers),
        upper_share=kept(float(share), boot_share),
        rebound=kept(float(rebound), boot_rebound),
        least_layer=int(hd.layers[int(least)]), n_boot=n_boot,
    )


# --------------------------------------------------------------------------- the baseline: no layer structure


@dataclass
class ShuffledBaseline:
    """Within-layer dispersion and its slope when heads are dealt to layers at random.

    Attributes:
        dispersion: ``[layers]`` mean over shuffles of each pseudo-layer's
            dispersion, with the middle ``level`` band of the shuffles.
        slope: the slopes of the shuffles: their mean (about 0) and middle band.
        observed_slope: the slope with the true layers (from the mean distance matrix).
        p_value: share of shuffles whose slope is at most the observed one (the
            observed labelling counts, so never 0): small = a fall with depth that
            random groups of heads rarely show.
        n_perm: shuffles.
    """

    dispersion: Interval  # (L,)
    slope: Interval
    observed_slope: float
    p_value: float
    n_perm: int

    def summary(self) -> str:
        s = self.slope
        return _("heads dealt to layers at random ({n_perm} shuffles): dispersion about {mean} in every "
                 "layer, slope {slope} [{low}, {high}]; observed slope {observed}, share of shuffles at or "
                 "below it p = {p}").format(
            n_perm=self.n_perm, mean=f"{float(np.mean(self.dispersion.estimate)):.3f}", slope=f"{s.estimate:+.4f}",
            low=f"{s.low:+.4f}", high=f"{s.high:+.4f}", observed=f"{self.observed_slope:+.4f}",
            p=f"{self.p_value:.3g}")


def shuffled_baseline(hd: HeadDistances, *, n_perm: int = 2000, level: float = 0.95, seed: int = 0,
                      chunk: int = 100) -> ShuffledBaseline:
    """Dispersion per layer and its slope against depth over random deals of the heads to layers.

    Each shuffle permutes the ``K`` heads (rows and columns of ``hd.distance``
    together), cuts them into groups of ``n_heads`` in layer order and measures
    each group's dispersion, exactly as :func:`layer_dispersion` does for the
    true layers.
    """
    n_perm = check_positive_int(n_perm, "n_perm")
    d = hd.distance.double()  # (K, K)
    k, n_layers = d.shape[0], len(hd.layers)
    depth = np.asarray(hd.layers, dtype=float)  # (L,)
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for start in range(0, n_perm, chunk):
        perms = torch.stack([torch.randperm(k, generator=gen) for _shuffle in range(min(chunk, n_perm - start))])  # (P, K)
        shuffled = d[perms[:, :, None], perms[:, None, :]]  # (P, K, K)
        rows.append(layer_dispersion(shuffled, n_layers, hd.n_heads).numpy())  # (P, L)
    null = np.concatenate(rows)  # (n_perm, L)
    null_slopes = slope(depth, null)  # (n_perm,)
    observed = slope(depth, layer_dispersion(d, n_layers, hd.n_heads).numpy())
    p = float(((null_slopes <= observed + 1e-12).sum() + 1) / (n_perm + 1))
    return ShuffledBaseline(
        dispersion=interval_from_samples(null.mean(axis=0), null, level=level, n=n_perm),
        slope=interval_from_samples(float(null_slopes.mean()), null_slopes, level=level, n=n_perm),
        observed_slope=float(observed), p_value=p, n_perm=n_perm,
    )


# --------------------------------------------------------------------------- do heads of a layer cluster?


@dataclass
class LayerClustering:
    """Clark et al.'s observation, measured: mean distance between heads of one layer and
    between heads of different layers, with a permutation test over the layer labels.

    Attributes:
        within, between: mean distance over head pairs of the same / different layers.
        p_value: share of label permutations whose within-layer mean is at most the
            observed one (the observed labelling counts, so never 0).
        n_perm: permutations.
    """

    within: float
    between: float
    p_value: float
    n_perm: int

    @property
    def ratio(self) -> float:
        return self.within / self.between

    def summary(self) -> str:
        return _("mean distance within a layer {within}, between layers {between} (ratio {ratio}, "
                 "permutation p = {p} over {n_perm} shuffles)").format(
            within=f"{self.within:.3f}", between=f"{self.between:.3f}", ratio=f"{self.ratio:.2f}",
            p=f"{self.p_value:.3g}", n_perm=self.n_perm)


def layer_clustering(hd: HeadDistances, n_perm: int = 2000, seed: int = 0) -> LayerClustering:
    """Within- vs between-layer mean distance, with a permutation test over layer labels.

    Shuffling whole heads between layers (not single pairs) keeps each head's
    distances together, so the test respects that the pairs of one head are
    not independent; that is why it is not
    :func:`attnlab.analysis.stats.permutation_test` over pair distances.
    """
    d = hd.distance.numpy()  # (K, K)
    k = d.shape[0]
    labels = np.repeat(np.arange(len(hd.layers)), hd.n_heads)  # (K,) layer of each head
    off = ~np.eye(k, dtype=bool)

    def within_between(lab: np.ndarray) -> tuple[float, float]:
        same = (lab[:, None] == lab[None, :]) & off  # (K, K)
        return float(d[same].mean()), float(d[~same & off].mean())

    within, between = within_between(labels)
    rng = np.random.default_rng(seed)
    null = np.array([within_between(rng.permutation(labels))[0] for _perm in range(n_perm)])  # (P,)
    p = float(((null <= within + 1e-12).sum() + 1) / (n_perm + 1))
    return LayerClustering(within, between, p, n_perm)
