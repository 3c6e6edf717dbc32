"""Primitive measures on attention rows (probability distributions).

Shared by the head statistics, the perturbation comparisons and the head
distances, so every lesson measures with the same definitions. All functions
work on the last dimension and broadcast over the others; natural logs (nats).
"""

from __future__ import annotations

import torch

from attnlab.core.language import N_


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


# --------------------------------------------------------------------------- two readings of a row

#: The two readings of an attention row. "all keys": the row as the model computed it, weight on
#: the special tokens ([CLS], [SEP], ``<s>``, ``</s>``, padding) included. "content keys": the row
#: with the special tokens' columns left out and the rest renormalised to sum to 1, i.e. how the
#: part of the row that reads the text is spread over the text (:func:`content_keys`).
ALL_KEYS = N_("all keys")
CONTENT_KEYS = N_("content keys")
KEY_READINGS = (ALL_KEYS, CONTENT_KEYS)


def special_token_ids(tokenizer) -> set[int]:
    """The ids that count as special keys: the tokenizer's CLS, SEP, BOS (``<s>``), EOS (``</s>``) and
    padding ids (those it has). ``[UNK]`` and ``[MASK]`` stand for text and are not among them."""
    names = ("cls_token_id", "sep_token_id", "bos_token_id", "eos_token_id", "pad_token_id")
    return {int(i) for i in (getattr(tokenizer, name, None) for name in names) if i is not None}


def special_mask(ids, special_ids: set[int]) -> torch.Tensor:
    """``[..., n]`` booleans: which of the token ids ``ids`` ``[..., n]`` are special keys."""
    ids = torch.as_tensor(ids)
    return torch.isin(ids, torch.tensor(sorted(special_ids), dtype=ids.dtype))


def _check_mask(p: torch.Tensor, special) -> torch.Tensor:
    special = torch.as_tensor(special, dtype=torch.bool, device=p.device)
    if special.shape[-1] != p.shape[-1]:
        raise ValueError(f"the special-key mask has {special.shape[-1]} keys, the rows {p.shape[-1]}")
    return special


def special_weight(p: torch.Tensor, special) -> torch.Tensor:
    """``[..., n] -> [...]``: the weight each row puts on the special keys ``special`` (booleans ``[n]``,
    or broadcasting to ``[..., n]``)."""
    special = _check_mask(p, special)
    return (p * special.to(p.dtype)).sum(dim=-1)


def content_keys(p: torch.Tensor, special) -> torch.Tensor:
    """The content-key reading of rows ``p`` ``[..., n]``: the columns of the non-special keys only,
    renormalised to sum to 1, ``[..., n_content]``.

    Args:
        p: attention rows ``[..., n]`` summing to 1.
        special: booleans ``[n]``, True at the special keys (one text, or texts of one length whose
            special tokens sit at the same places: :func:`special_mask`).

    Returns:
        ``[..., n_content]`` with ``n_content = n - special.sum()``. A row with **no weight at all**
        on the content keys (every bit of it on special tokens) says nothing about the text: its
        content reading is undefined and comes back as NaN in every cell, so that no average
        counts it silently (callers decide: :class:`attnlab.core.streaming.MeanAttention` counts
        such a row as uniform over the content keys, a row that prefers no token).

    Raises:
        ValueError: the mask has another length than the rows, or every key is special.
    """
    special = _check_mask(p, special)
    if special.dim() != 1:
        raise ValueError("content_keys needs one mask [n] for all rows (texts of one length)")
    if bool(special.all()):
        raise ValueError("every key is special: there is no content to read")
    kept = p[..., ~special]  # (..., n_content)
    mass = kept.sum(dim=-1, keepdim=True)  # (..., 1)
    return torch.where(mass > 0, kept / mass.clamp_min(torch.finfo(kept.dtype).tiny), torch.nan)
