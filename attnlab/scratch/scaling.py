"""Why attention divides the scores by sqrt(d_k): measurements for lesson 02.

Three measurable facts (theorems on random vectors), each a small function:

1. :func:`dot_product_variance` -- for random vectors with independent
   unit-variance entries, ``var(q . k)`` grows like ``d_k``
   (:func:`variance_interval` adds a bootstrap interval over the pairs).
2. :func:`saturation_curve` -- without the ``1 / sqrt(d_k)`` factor the
   softmax saturates as ``d_k`` grows: entropy falls, the largest weight
   approaches 1.
3. the same curve's ``grad_norm`` -- a saturated softmax passes almost no
   gradient back (the Jacobian ``diag(p) - p p^T`` goes to zero).

:func:`model_scaling_stats` measures the same quantities on a real model's
actual queries and keys, layer by layer. This module holds the numbers only;
the checks of the theorems and the verdict on the model live in
:mod:`attnlab.course.claims.scaling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
from tqdm.auto import tqdm

from attnlab.analysis.stats import Interval, bootstrap, bootstrap_mean
from attnlab.core.checks import check_positive_int
from attnlab.core.distributions import entropy
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record
from attnlab.scratch.self_attention import hidden_states, split_heads


def dot_products(d_k: int, n_samples: int = 20_000, seed: int = 0) -> torch.Tensor:
    """``(n_samples,)`` dot products ``q . k`` of random pairs with i.i.d. N(0, 1) entries.

    Args:
        d_k: vector width.
        n_samples: number of (q, k) pairs drawn.
        seed: random seed (the result is reproducible).
    """
    d_k = check_positive_int(d_k, "d_k")
    if check_positive_int(n_samples, "n_samples") < 2:
        raise ValueError(_("need n_samples >= 2, got {n}").format(n=n_samples))
    gen = torch.Generator().manual_seed(seed)
    dots = []
    for start in range(0, n_samples, 2_000):  # chunks keep memory small for wide vectors
        n = min(2_000, n_samples - start)
        q = torch.randn(n, d_k, generator=gen, dtype=torch.float64)  # (n, d_k)
        k = torch.randn(n, d_k, generator=gen, dtype=torch.float64)  # (n, d_k)
        dots.append((q * k).sum(dim=-1))  # (n,): one dot product per pair
    return torch.cat(dots)  # (n_samples,)


def dot_product_variance(d_k: int, n_samples: int = 20_000, seed: int = 0) -> float:
    """Measured variance of ``q . k`` for ``q, k`` with i.i.d. N(0, 1) entries.

    Theory: each product ``q_i k_i`` has mean 0 and variance 1, and the
    ``d_k`` products are independent, so ``var(q . k) = d_k``.
    """
    return float(dot_products(d_k, n_samples, seed).var())


def variance_interval(d_k: int, n_samples: int = 20_000, seed: int = 0, *, n_boot: int = 1000,
                      level: float = 0.95) -> Interval:
    """:func:`dot_product_variance` with a bootstrap interval over the sampled pairs.

    The estimate equals ``dot_product_variance(d_k, n_samples, seed)``; the
    interval says how far another draw of as many pairs could land.
    """
    dots = dot_products(d_k, n_samples, seed).numpy()  # (n_samples,)
    return bootstrap(dots, lambda v: v.var(ddof=1), n_boot=n_boot, level=level, seed=seed)


def softmax_jacobian_norm(scores: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of d softmax(s) / d s for each row, by automatic differentiation.

    Args:
        scores: ``(N, n)`` score rows.

    Returns:
        ``(N,)``: how much a small change of the scores can move the weights.
        (Closed form ``diag(p) - p p^T``; zero when one weight is 1.)
    """
    if scores.ndim != 2:
        raise ValueError(_("scores must be (rows, keys), got shape {shape}").format(shape=tuple(scores.shape)))
    jac = torch.func.vmap(torch.func.jacrev(lambda s: torch.softmax(s, dim=-1)))(scores)  # (N, n, n)
    return jac.flatten(1).norm(dim=-1)  # (N,)


@dataclass
class SaturationCurve(Record):
    """Softmax statistics of random scores, one value per ``d_k``.

    Attributes:
        d_ks: the widths measured.
        scaled: whether scores were divided by sqrt(d_k).
        entropy: mean row entropy in nats (uniform = ``log(n_keys)``).
        max_weight: mean of each row's largest weight (1 = fully saturated).
        grad_norm: mean Frobenius norm of the softmax Jacobian.
        score_std: standard deviation of the scores fed to the softmax.
        n_keys: keys per row.
        intervals: measure name (``"entropy"``, ``"max_weight"``, ``"grad_norm"``)
            -> one bootstrap :class:`~attnlab.analysis.stats.Interval` of the
            mean over rows per ``d_k`` (empty for curves built by hand).
    """

    d_ks: list[int]
    scaled: bool
    entropy: list[float] = field(default_factory=list)
    max_weight: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    score_std: list[float] = field(default_factory=list)
    n_keys: int = 0
    intervals: dict[str, list[Interval]] = field(default_factory=dict)

    def bounds(self, measure: str) -> tuple[list[float], list[float]]:
        """``(lows, highs)`` of ``measure`` per ``d_k``: its intervals, or the
        values themselves when the curve has no intervals."""
        values = getattr(self, measure)
        if measure not in self.intervals:
            return list(values), list(values)
        ivs = self.intervals[measure]
        return [float(iv.low) for iv in ivs], [float(iv.high) for iv in ivs]


def saturation_curve(
    d_ks: Sequence[int], *, scaled: bool, n_keys: int = 16, n_rows: int = 500, seed: int = 0
) -> SaturationCurve:
    """Softmax of ``q . k_j`` for random unit-variance ``q`` and ``n_keys`` keys.

    For each ``d_k``: draw ``n_rows`` queries and ``n_keys`` keys per query,
    compute the scores (divided by ``sqrt(d_k)`` when ``scaled``), and
    measure entropy, largest weight and the softmax Jacobian norm, each the
    mean over rows with a bootstrap interval (rows are the resampled units).
    """
    if check_positive_int(n_keys, "n_keys") < 2:
        raise ValueError(_("n_keys must be at least 2"))
    n_rows = check_positive_int(n_rows, "n_rows")
    curve = SaturationCurve(list(d_ks), scaled, n_keys=n_keys)
    gen = torch.Generator().manual_seed(seed)
    for d_k in d_ks:
        q = torch.randn(n_rows, 1, d_k, generator=gen)  # (N, 1, d_k)
        k = torch.randn(n_rows, n_keys, d_k, generator=gen)  # (N, n, d_k)
        scores = (q * k).sum(-1)  # (N, n)
        if scaled:
            scores = scores / math.sqrt(d_k)
        p = torch.softmax(scores, dim=-1)  # (N, n)
        per_row = {"entropy": entropy(p), "max_weight": p.max(dim=-1).values,
                   "grad_norm": softmax_jacobian_norm(scores)}  # each (N,)
        for name, values in per_row.items():
            getattr(curve, name).append(float(values.mean()))
            curve.intervals.setdefault(name, []).append(bootstrap_mean(values.double().numpy(), seed=seed))
        curve.score_std.append(float(scores.std()))
    return curve


@dataclass
class ModelScalingStats(Record):
    """Per-layer statistics of a real model's attention scores (lists over layers).

    ``raw_var``: variance of ``q . k`` (unscaled) over real query-key pairs;
    ``scaled_var``: the same after dividing by sqrt(d_h); ``entropy_*``,
    ``max_weight_*``, ``grad_norm_*``: softmax statistics with the model's
    scaling (``scaled``) and without it (``unscaled``, i.e. scores multiplied
    back by sqrt(d_h)); ``q_var``/``k_var``: mean per-feature variance of q and k;
    ``grad_norm_change``: per layer, one value per text: the text's mean Jacobian
    norm without the division minus with it (below 0: less gradient without it).
    """

    head_dim: int
    n_texts: int
    raw_var: list[float] = field(default_factory=list)
    scaled_var: list[float] = field(default_factory=list)
    q_var: list[float] = field(default_factory=list)
    k_var: list[float] = field(default_factory=list)
    entropy_scaled: list[float] = field(default_factory=list)
    entropy_unscaled: list[float] = field(default_factory=list)
    max_weight_scaled: list[float] = field(default_factory=list)
    max_weight_unscaled: list[float] = field(default_factory=list)
    grad_norm_scaled: list[float] = field(default_factory=list)
    grad_norm_unscaled: list[float] = field(default_factory=list)
    grad_norm_change: list[list[float]] = field(default_factory=list)


def model_scaling_stats(m: LoadedModel, texts: Sequence[str], *, progress: bool = False) -> ModelScalingStats:
    """The lesson-02 statistics on the model's actual queries and keys.

    Texts run one at a time (no padding, so every score is a real query-key
    pair). For each layer and text the per-head q and k are recomputed with
    :func:`attnlab.scratch.self_attention.recompute_layer_attention`'s code path.
    """
    texts = list(texts)
    stats = ModelScalingStats(head_dim=m.head_dim, n_texts=len(texts))
    parts = m.layer_parts()
    per_layer: list[dict[str, list]] = [dict() for _layer in range(m.n_layers)]
    iterator = tqdm(texts, desc=_("texts"), unit=_("text")) if progress else texts
    sqrt_d = math.sqrt(m.head_dim)
    for text in iterator:
        hs, _inputs, _attentions = hidden_states(m, [text])
        for layer in range(m.n_layers):
            x = hs[layer]  # (1, n, d)
            with torch.no_grad():
                q = split_heads(parts[layer].query(x), m.n_heads)[0]  # (H, n, d_h)
                k = split_heads(parts[layer].key(x), m.n_heads)[0]  # (H, n, d_h)
            raw = q @ k.transpose(-2, -1)  # (H, n, n)
            rows_scaled = (raw / sqrt_d).flatten(0, 1)  # (H*n, n)
            rows_unscaled = raw.flatten(0, 1)  # (H*n, n)
            acc = per_layer[layer]
            acc.setdefault("raw", []).append(raw.flatten())
            acc.setdefault("q", []).append(q.var(dim=1).mean().reshape(1))
            acc.setdefault("k", []).append(k.var(dim=1).mean().reshape(1))
            for tag, rows in (("scaled", rows_scaled), ("unscaled", rows_unscaled)):
                p = torch.softmax(rows, dim=-1)
                acc.setdefault("ent_" + tag, []).append(entropy(p))
                acc.setdefault("max_" + tag, []).append(p.max(dim=-1).values)
                acc.setdefault("grad_" + tag, []).append(softmax_jacobian_norm(rows))
    for acc in per_layer:
        stats.grad_norm_change.append([float(u.mean() - s.mean())
                                       for u, s in zip(acc["grad_unscaled"], acc["grad_scaled"])])
        raw = torch.cat(acc["raw"])
        stats.raw_var.append(float(raw.var()))
        stats.scaled_var.append(float((raw / sqrt_d).var()))
        stats.q_var.append(float(torch.cat(acc["q"]).mean()))
        stats.k_var.append(float(torch.cat(acc["k"]).mean()))
        for tag in ("scaled", "unscaled"):
            getattr(stats, "entropy_" + tag).append(float(torch.cat(acc["ent_" + tag]).mean()))
            getattr(stats, "max_weight_" + tag).append(float(torch.cat(acc["max_" + tag]).mean()))
            getattr(stats, "grad_norm_" + tag).append(float(torch.cat(acc["grad_" + tag]).mean()))
    return stats
