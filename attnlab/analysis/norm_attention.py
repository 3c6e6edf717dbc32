"""Norm-based attention (Kobayashi et al. 2020): weight times the size of what is moved.

An attention weight ``alpha_ij`` says how much of token ``j``'s *value* head
``h`` mixes into token ``i``. But the value can be large or tiny. What head
``h`` really adds to token ``i`` from token ``j`` is the vector

    alpha_ij^h f_h(x_j),    f_h(x) = (x W_V + b_V)[head h's slice] @ W_O[head h's rows]

(the value of ``x`` restricted to head ``h``, carried through that head's block
of the output projection, so every head's term lives in the model's ``d``-wide
space and the terms of all heads add up to the layer's attention output minus
the output bias). Its length ``||alpha_ij^h f_h(x_j)||`` is the norm-based
weight of head ``h``; ``||sum_h alpha_ij^h f_h(x_j)||`` is the layer's.

Kobayashi et al. found that [CLS], [SEP] and punctuation get large weights
but have small ``||f(x)||``: much of the "attention to [SEP]" moves almost
nothing. :func:`norm_special_weight` measures how much, head by head: the
share of each row's norm-based weight that falls on the special keys (its
complement is the head's norm-based *content mass*).

Shapes: ``N`` texts, ``L`` layers, ``H`` heads, ``T`` tokens (the longest
text; zeros outside each text), ``d`` model width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnlab.core.checks import check_positive_int
from attnlab.core.distributions import special_mask, special_token_ids
from attnlab.core.extract import check_texts
from attnlab.core.fast import check_layers
from attnlab.core.models import LayerParts, LoadedModel
from attnlab.core.run import encode, run


def transformed_values(m: LoadedModel, parts: LayerParts, hidden: torch.Tensor) -> torch.Tensor:
    """``f_h(x_j)`` of every head and token: ``(B, H, T, d)`` from the layer input ``hidden`` ``(B, T, d)``.

    ``f_h(x) = (x W_V + b_V)_h W_O^h``: head ``h``'s slice of the value, times the
    ``d_head`` columns of the output projection that this slice meets (no output bias).
    """
    values = parts.value(hidden)  # (B, T, H * d_head)
    per_head = values.view(*values.shape[:2], m.n_heads, m.head_dim)  # (B, T, H, d_head)
    w_out = parts.output.weight.view(parts.output.out_features, m.n_heads, m.head_dim)  # (d, H, d_head)
    return torch.einsum("bthe,dhe->bhtd", per_head, w_out)  # (B, H, T, d)


@dataclass
class NormAttention:
    """Raw and norm-based attention of a list of texts.

    Attributes:
        weights: raw attention ``(N, L, H, T, T)``; rows are queries.
        per_head: ``||alpha_ij^h f_h(x_j)||`` ``(N, L, H, T, T)``.
        combined: ``||sum_h alpha_ij^h f_h(x_j)||`` ``(N, L, T, T)``: the whole layer.
        value_norms: ``||f_h(x_j)||`` ``(N, L, H, T)``.
        tokens: the tokens of each text; lengths: tokens per text.
    """

    weights: torch.Tensor
    per_head: torch.Tensor
    combined: torch.Tensor
    value_norms: torch.Tensor
    tokens: list[list[str]]
    lengths: list[int]

    def __len__(self) -> int:
        return self.weights.shape[0]

    def text(self, i: int) -> "NormAttention":
        """Text ``i`` alone, padding trimmed (``N = 1``, ``T = lengths[i]``)."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"text index {i} out of range for {len(self)} texts")
        n = self.lengths[i]
        return NormAttention(
            weights=self.weights[i : i + 1, :, :, :n, :n], per_head=self.per_head[i : i + 1, :, :, :n, :n],
            combined=self.combined[i : i + 1, :, :n, :n], value_norms=self.value_norms[i : i + 1, :, :, :n],
            tokens=[self.tokens[i]], lengths=[n],
        )


def norm_attention(m: LoadedModel, texts: Sequence[str] | str, *, batch_size: int = 16) -> NormAttention:
    """Raw and norm-based attention of every layer and head for each text.

    Args:
        m: the loaded model.
        texts: one text or a list.
        batch_size: texts per forward pass.

    Returns:
        :class:`NormAttention`; padding rows and columns are zero.
    """
    texts, _ = check_texts(m, texts)
    batch_size = check_positive_int(batch_size, "batch_size")
    n_max = max(len(ids) for ids in m.tokenizer(texts)["input_ids"])
    n = len(texts)
    shape = (n, m.n_layers, m.n_heads, n_max, n_max)
    out = NormAttention(weights=torch.zeros(shape), per_head=torch.zeros(shape),
                        combined=torch.zeros(n, m.n_layers, n_max, n_max),
                        value_norms=torch.zeros(n, m.n_layers, m.n_heads, n_max), tokens=[], lengths=[])
    parts = m.layer_parts()
    for start in range(0, n, batch_size):
        inputs = encode(m, texts[start : start + batch_size]).inputs
        cache = run(m, inputs, keep=("maps", "hidden"))  # maps (B, H, T, T) and layer inputs (B, T, d)
        with torch.no_grad():
            mask = inputs["attention_mask"].float()  # (B, T)
            t = mask.shape[1]
            rows = slice(start, start + mask.shape[0])
            for layer in range(m.n_layers):
                alpha = cache.maps[layer].float() * mask[:, None, :, None]  # (B, H, T, T), padding rows 0
                f = transformed_values(m, parts[layer], cache.hidden[layer]).float()  # (B, H, T, d)
                f_norm = f.norm(dim=-1) * mask[:, None, :]  # (B, H, T)
                moved = torch.einsum("bhij,bhjd->bijd", alpha, f)  # (B, T, T, d): summed over heads
                out.weights[rows, layer, :, :t, :t] = alpha
                out.per_head[rows, layer, :, :t, :t] = alpha * f_norm[:, :, None, :]
                out.combined[rows, layer, :t, :t] = moved.norm(dim=-1) * mask[:, :, None] * mask[:, None, :]
                out.value_norms[rows, layer, :, :t] = f_norm
        for ids, m_row in zip(inputs["input_ids"], inputs["attention_mask"]):
            k = int(m_row.sum())
            out.tokens.append(m.tokenizer.convert_ids_to_tokens(ids[:k].tolist()))
            out.lengths.append(k)
    return out


def row_shares(maps: torch.Tensor) -> torch.Tensor:
    """``maps`` ``(..., T, T)`` with each row divided by its sum (all-zero rows stay zero)."""
    total = maps.sum(dim=-1, keepdim=True)  # (..., T, 1)
    return maps / total.clamp_min(1e-12)


def special_keys(m: LoadedModel, norm: NormAttention) -> torch.Tensor:
    """``(N, T)`` booleans: the special keys ([CLS]/[SEP], ``<s>``/``</s>``) of each text of ``norm``
    (False on padding)."""
    mask = torch.zeros(len(norm), norm.weights.shape[-1], dtype=torch.bool)
    for i, tokens in enumerate(norm.tokens):
        ids = m.tokenizer.convert_tokens_to_ids(tokens)
        mask[i, : len(ids)] = special_mask(ids, special_token_ids(m.tokenizer))
    return mask


def special_share(per_head: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """``(L, H)``: the share of each row's weight that falls on the special keys, averaged over the
    rows of each text, then over texts.

    Args:
        per_head: non-negative weights ``(N, L, H, T, T)`` (rows are queries): the norm-based
            ``||alpha_ij^h f_h(x_j)||`` of :class:`NormAttention`, or the raw weights.
        special: ``(N, T)`` booleans, True at the special keys of each text.

    Rows with no weight at all (padding) are left out of the means.
    """
    on_special = (per_head * special[:, None, None, None, :]).sum(dim=-1)  # (N, L, H, T)
    total = per_head.sum(dim=-1)  # (N, L, H, T)
    share = torch.where(total > 0, on_special / total.clamp_min(1e-30), torch.nan)  # (N, L, H, T)
    return share.nanmean(dim=-1).nanmean(dim=0)  # (L, H)


def norm_special_weight(m: LoadedModel, texts: Sequence[str] | str, *, layers: Sequence[int] | None = None,
                        batch_size: int = 16) -> np.ndarray:
    """``(L', H)``: each head's norm-based weight on the special keys (Kobayashi et al. 2020).

    For every query row ``i`` the share ``sum_{j special} alpha_ij ||f_h(x_j)|| / sum_j alpha_ij ||f_h(x_j)||``,
    averaged over the rows of each text, then over texts. It is the norm-based counterpart of
    :meth:`attnlab.core.streaming.MeanAttention.special_weight` (the same average of the raw weights);
    ``1 -`` it is the head's norm-based content mass: the share of what the head moves that
    comes from the text.

    Args:
        m: the loaded model.
        texts: one text or a list.
        layers: the 0-based layers to keep, the rows of the result (default: all).
        batch_size: texts per forward pass.
    """
    chosen = check_layers(m, layers)
    norm = norm_attention(m, texts, batch_size=batch_size)
    share = special_share(norm.per_head, special_keys(m, norm))  # (L, H)
    return share[chosen].double().numpy()
