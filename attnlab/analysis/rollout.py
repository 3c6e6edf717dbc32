"""Attention rollout (Abnar & Zuidema 2020): following attention through the layers.

A layer's map says how token ``i`` mixes the *previous layer's* tokens, which
were already mixtures. Rollout multiplies the maps to ask how much each input
token ends up in each position of layer ``l``:

    A_hat_l = rownorm(0.5 * mean_h A_l + 0.5 * I)      (heads averaged; rows sum to 1)
    R_0 = A_hat_0,   R_l = A_hat_l @ R_{l-1}

**The assumption**: the residual connection carries each token's own vector
past the attention with the same weight as everything attention mixes in,
hence "0.5 identity". Nothing in the model says so: the residual stream and
the attention output have different sizes, and the feed-forward layers and
LayerNorms between the maps are ignored. Rollout is a model of the flow, not
a measurement of it.

Shapes: ``L`` layers, ``H`` heads, ``T`` tokens; rows are queries.
"""

from __future__ import annotations

from typing import Sequence

import torch

from attnlab.core.checks import check_fraction
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel

#: Abnar & Zuidema's weight of the residual (identity) term.
RESIDUAL = 0.5


def residual_maps(maps: torch.Tensor, residual: float = RESIDUAL) -> torch.Tensor:
    """``A_hat`` ``(L, T, T)`` from maps ``(L, H, T, T)`` (heads averaged) or ``(L, T, T)``.

    ``A_hat = rownorm((1 - residual) * A + residual * I)``.
    """
    residual = check_fraction(residual, "residual")
    if maps.dim() == 4:
        maps = maps.mean(dim=1)  # (L, T, T)
    if maps.dim() != 3 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must be (layers, heads, T, T) or (layers, T, T), got {tuple(maps.shape)}")
    eye = torch.eye(maps.shape[-1], dtype=maps.dtype, device=maps.device)  # (T, T)
    mixed = (1.0 - residual) * maps + residual * eye  # (L, T, T)
    return mixed / mixed.sum(dim=-1, keepdim=True)


def rollout(maps: torch.Tensor, residual: float = RESIDUAL) -> torch.Tensor:
    """The rollout after every layer: ``(L, T, T)``, ``[l]`` = ``A_hat_l @ ... @ A_hat_0``.

    Args:
        maps: one text's attention ``(L, H, T, T)`` (or heads already averaged, ``(L, T, T)``).
        residual: weight of the identity term (0.5 in the paper; 0 multiplies the raw maps).
    """
    steps = residual_maps(maps, residual)  # (L, T, T)
    flows = [steps[0]]
    for step in steps[1:]:
        flows.append(step @ flows[-1])  # (T, T): layer l's positions x input tokens
    return torch.stack(flows)


def attention_rollout(m: LoadedModel, texts: Sequence[str] | str, residual: float = RESIDUAL) -> list[torch.Tensor]:
    """The rollout of each text: a list of ``(L, T_i, T_i)`` tensors (no padding)."""
    att = attention(m, texts)
    return [rollout(att[i], residual) for i in range(len(att))]
