"""Primitive measures on attention rows (probability distributions).

Shared by the head statistics, the perturbation comparisons and the head
distances, so every lesson measures with the same definitions. All functions
work on the last dimension and broadcast over the others; natural logs (nats).
"""

from __future__ import annotations

import torch


def smooth(p: torch.Tensor, eps: float, n: torch.Tensor | int | None = None) -> torch.Tensor:
    """``(1 - eps) * p + eps / n`` (Clark et al. 2019 use eps = 1e-4 for entropy,
    1e-3 for head distances), so that no probability is exactly zero.

    Args:
        p: rows ``[..., n]`` summing to 1.
        n: row length(s) for the uniform part; defaults to ``p.shape[-1]``. A
            tensor broadcasting to ``[..., 1]`` handles padded rows of different
            real lengths (the caller must then zero the padding columns again).
    """
    if n is None:
        n = p.shape[-1]
    return (1.0 - eps) * p + eps / n


def entropy(p: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats of each row ``[..., n] -> [...]``; 0 log 0 = 0."""
    p = p.double() if p.dtype == torch.float16 else p
    return -(torch.where(p > 0, p * torch.log(p), torch.zeros_like(p))).sum(dim=-1)


def kl_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) in nats per row ``[..., n] -> [...]``; terms with p = 0 count 0."""
    ratio = torch.where(p > 0, p / q.clamp_min(1e-30), torch.ones_like(p))
    return (torch.where(p > 0, p * torch.log(ratio), torch.zeros_like(p))).sum(dim=-1)


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence in nats per row ``[..., n] -> [...]``.

    Symmetric, 0 for identical rows, at most ``ln 2`` for rows with disjoint support.
    """
    m = 0.5 * (p + q)
    return 0.5 * kl_divergence(p, m) + 0.5 * kl_divergence(q, m)
