"""Interventions inside attention: zero value vectors, replace attention maps.

Reading attention weights says where a head *looks*; an intervention says
what the model *needs*. Two context managers change one part of the forward
pass and put the model back on exit, also when the body raises (no weight is
touched; the hooks are removed in a ``finally``):

* :func:`zero_values` sets the value vectors of chosen tokens to zero, in
  chosen layers and heads. The attention weights are unchanged; whatever a
  query row gave to those tokens now brings nothing back. This is the "value
  zeroing" of Mohebbi et al. (2023) and the sink test of lesson 13.
* :func:`replace_maps` makes chosen heads use another attention map (a mean
  map, another query's map) instead of their own: the head's output becomes
  ``M @ V_h`` (Hassid et al. 2022 replace maps by constant averages).

How, for every architecture: :mod:`attnlab.core.layer_hooks` changes each layer's
value vectors ``V`` ``(B, T, H * d_head)`` and the context ``A @ V`` of every head
before the heads are mixed. :func:`zero_values_hooks` and :func:`replace_maps_hooks`
give the same changes as hook specs for one pass of :func:`attnlab.core.run.run`
(``hooks=[...]``). Every pass runs through :func:`attnlab.core.run.run`.

The maps :func:`attnlab.core.run.run` keeps are the model's own, computed before any
replacement.

Shapes: ``B`` texts, ``T`` tokens, ``L`` layers, ``H`` heads, ``d`` width.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator, Mapping

import torch

from attnlab.core.layer_hooks import layer_hook_specs
from attnlab.core.models import LoadedModel
from attnlab.core.run import Hook, installed, run


# --------------------------------------------------------------------------- value zeroing


def _check_layers(m: LoadedModel, layers: Iterable[int] | None) -> set[int]:
    return set(range(m.n_layers)) if layers is None else {m.check_layer(l) for l in layers}


def _head_mask(m: LoadedModel, heads: Iterable[int] | None) -> torch.Tensor:
    mask = torch.zeros(m.n_heads, dtype=torch.bool)  # (H,): True where the intervention applies
    for h in range(m.n_heads) if heads is None else heads:
        mask[m.check_head(h)] = True
    return mask


@contextlib.contextmanager
def zero_values(m: LoadedModel, positions: torch.Tensor, *, layers: Iterable[int] | None = None,
                heads: Iterable[int] | None = None) -> Iterator[None]:
    """Zero the value vectors of chosen tokens inside the ``with`` block (the hooks of
    :func:`zero_values_hooks`, removed on exit, also after an exception).

    Example::

        where = torch.zeros_like(batch.input_ids, dtype=torch.bool)
        where[:, -1] = True                       # the last token, [SEP] or </s>
        with zero_values(m, where, layers=[3]):
            out = run(m, batch, keep=("output",)).output
    """
    with installed(m.model, zero_values_hooks(m, positions, layers=layers, heads=heads)):
        yield


def zero_values_hooks(m: LoadedModel, positions: torch.Tensor, *, layers: Iterable[int] | None = None,
                      heads: Iterable[int] | None = None) -> list[Hook]:
    """Hook specs (for ``run(..., hooks=...)``) that zero the value vectors of chosen tokens.

    Args:
        m: the loaded model.
        positions: ``(B, T)`` bool, True for the tokens (of each text of the batch that
            the next forward pass runs) whose value vectors become 0, bias included; or
            ``(L, B, T)`` bool with one such mask per layer of the model (then ``layers``
            must be None: each layer zeroes its own tokens, so one batch can hold copies
            that are changed in different layers).
        layers: 0-based layers where this happens (default: every layer).
        heads: 0-based heads where this happens (default: every head).
    """
    positions = torch.as_tensor(positions)
    if positions.dtype != torch.bool or positions.dim() not in (2, 3):
        raise ValueError(f"positions must be a (batch, tokens) or (layers, batch, tokens) bool tensor, got "
                         f"{positions.dtype} {tuple(positions.shape)}")
    if positions.dim() == 3:
        if layers is not None:
            raise ValueError("per-layer positions (layers, batch, tokens) already say where: leave layers=None")
        if positions.shape[0] != m.n_layers:
            raise ValueError(f"per-layer positions need one mask per layer ({m.n_layers}), got {positions.shape[0]}")
        per_layer = positions
    else:
        per_layer = positions[None].expand(m.n_layers, -1, -1)  # (L, B, T)
    chosen = _check_layers(m, layers)
    heads_on = _head_mask(m, heads)
    d_head = m.head_dim

    def on_value(layer: int, v: torch.Tensor) -> torch.Tensor | None:
        if layer not in chosen:
            return None
        where = per_layer[layer]  # (B, T)
        if tuple(v.shape[:2]) != tuple(where.shape):
            raise ValueError(f"positions are {tuple(where.shape)} but the batch is {tuple(v.shape[:2])} "
                             "(batch, tokens): build them from the inputs of this forward pass")
        hit = where.to(v.device)[:, :, None] & heads_on.to(v.device)[None, None, :]  # (B, T, H)
        keep = (~hit).to(v.dtype)  # (B, T, H)
        per_head = v.view(*v.shape[:2], -1, d_head)  # (B, T, H, d_head)
        return (per_head * keep[..., None]).view(v.shape)

    return layer_hook_specs(m, value=on_value)


# --------------------------------------------------------------------------- map replacement


@contextlib.contextmanager
def replace_maps(m: LoadedModel, maps: Mapping[tuple[int, int], torch.Tensor]) -> Iterator[None]:
    """Make each listed head use the given attention map instead of its own, inside the ``with``
    block (the hooks of :func:`replace_maps_hooks`, removed on exit, also after an exception)."""
    with installed(m.model, replace_maps_hooks(m, maps)):
        yield


def replace_maps_hooks(m: LoadedModel, maps: Mapping[tuple[int, int], torch.Tensor]) -> list[Hook]:
    """Hook specs (for ``run(..., hooks=...)``) that make each listed head use the given map.

    Head ``h`` of layer ``l`` normally outputs ``A @ V_h``; inside the block it outputs
    ``M @ V_h`` with ``M = maps[(l, h)]``. Nothing else changes: the other heads, the
    residual stream and every later layer run as usual (on the changed input).

    Args:
        m: the loaded model.
        maps: ``{(layer, head): M}`` with ``M`` ``(T, T)`` (the same map for every text) or
            ``(B, T, T)`` (one per text); rows are queries. Or ``{(layer, head): (M, rows)}``
            with ``M`` ``(R, T, T)`` for the ``R`` texts ``rows`` of the batch only (the other
            texts keep the head's own map): copies of a batch, each with other heads replaced,
            run in one pass. The texts must all have ``T`` tokens (no padding: a replaced map
            would otherwise reach padding tokens).
    """
    by_layer: dict[int, dict[int, tuple[torch.Tensor, torch.Tensor | None]]] = {}
    for key, value in maps.items():
        layer, head = key
        amap, rows = value if isinstance(value, tuple) else (value, None)
        by_layer.setdefault(m.check_layer(layer), {})[m.check_head(head)] = (
            torch.as_tensor(amap), None if rows is None else torch.as_tensor(rows, dtype=torch.long))
    d_head = m.head_dim
    values: dict[int, torch.Tensor] = {}

    def on_value(layer: int, v: torch.Tensor) -> None:
        if layer in by_layer:
            values[layer] = v  # (B, T, H * d_head), kept for the context hook of this layer
        return None

    def on_context(layer: int, context: torch.Tensor) -> torch.Tensor | None:
        if layer not in by_layer:
            return None
        v = values.pop(layer).view(*context.shape[:2], -1, d_head)  # (B, T, H, d_head)
        out = context.view(*context.shape[:2], -1, d_head).clone()  # (B, T, H, d_head)
        for head, (amap, rows) in by_layer[layer].items():
            amap = amap.to(device=v.device, dtype=v.dtype)
            if amap.shape[-1] != v.shape[1] or amap.shape[-2] != v.shape[1]:
                raise ValueError(f"the map for layer {layer}, head {head} is {tuple(amap.shape)} but the texts "
                                 f"have {v.shape[1]} tokens")
            if rows is not None:  # only these texts of the batch: (R, T, T) maps
                rows = rows.to(v.device)
                out[rows, :, head] = torch.einsum("bij,bjd->bid", amap, v[rows, :, head])  # (R, T, d_head)
            elif amap.dim() == 2:
                out[:, :, head] = torch.einsum("ij,bjd->bid", amap, v[:, :, head])  # (B, T, d_head)
            else:
                out[:, :, head] = torch.einsum("bij,bjd->bid", amap, v[:, :, head])  # (B, T, d_head)
        return out.view(context.shape)

    return layer_hook_specs(m, value=on_value, context=on_context)


# --------------------------------------------------------------------------- measuring a change


def last_hidden(m: LoadedModel, inputs: dict[str, torch.Tensor],
                start_at: tuple[int, torch.Tensor] | None = None) -> torch.Tensor:
    """``(B, T, d)``: the last layer's output of one pass of :func:`attnlab.core.run.run`
    (without gradients; the hooks of the context managers above see it). ``start_at``
    ``(layer, hidden)`` begins the pass at ``layer`` (see :func:`run`)."""
    return run(m, inputs, keep=("output",), start_at=start_at).output.last_hidden_state


def pooled(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B, d)``: the mean of ``hidden`` ``(B, T, d)`` over the tokens where ``mask`` ``(B, T)`` is 1."""
    weights = mask.to(hidden.dtype)[..., None]  # (B, T, 1)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1)


def sentence_vectors(m: LoadedModel, inputs: dict[str, torch.Tensor],
                     start_at: tuple[int, torch.Tensor] | None = None) -> torch.Tensor:
    """``(B, d)``: the mean of the last hidden states over each text's real tokens (the
    sentence representation of sentence-embedding models such as MiniLM). ``start_at``:
    as in :func:`last_hidden`."""
    return pooled(last_hidden(m, inputs, start_at), inputs["attention_mask"])  # (B, d)


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``1 - cos(a, b)`` along the last axis, computed in float64: 0 for the same direction, up to 2.

    (In float32 a distance of 1e-6 carries an error of the same size and can come out negative.)
    """
    a, b = a.double(), b.double()
    cos = (a * b).sum(dim=-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-300)
    return (1.0 - cos).clamp_min(0.0)
