"""Head gating: switch attention heads off (or scale them) without touching weights.

Michel et al. (2019) write multi-head attention with one gate per head::

    MHA(x) = sum_h  xi_h * Att_h(x) W_O^h          (xi_h = 1 in the trained model)

Setting ``xi_h = 0`` removes head ``h``; the gradient ``dL/dxi_h`` measures how
much the loss leans on it (see :mod:`attnlab.analysis.importance`).

How it is done here, for every architecture and for transformers 4.x and 5.x
alike (5.x silently ignores ``head_mask``): a *forward pre-hook* on each
layer's attention output projection (``LayerParts.output``). The input of that
projection is the concatenated context vector ``(B, T, H * d_head)``; head
``h`` owns the slice ``[h * d_head, (h + 1) * d_head)``. The hook multiplies
each slice by its gate, so the projection sees ``xi_h * Att_h``.

ALBERT shares one projection module between all layers. The hook then counts
its calls: a pre-hook on the whole model resets the counter at the start of
each forward pass, and the k-th call of the shared module is layer k.

:func:`gate_hook_specs` gives these hooks as :class:`attnlab.core.run.Hook` specs
for one pass of :func:`attnlab.core.run.run` (``hooks=``). Two context managers
install the same specs for a ``with`` block:

* :func:`mask_heads` ``(m, [(layer, head), ...])`` zeros the listed heads;
* :func:`gate_heads` ``(m, gates)`` uses a ``[layers, heads]`` tensor of gate
  values (it may require grad: gradients flow into it), or ``[texts, layers, heads]``
  with one row of gates per text of the batch.

Both remove their hooks on exit, also when the body raises.

**What a removed head leaves behind** (``fill``). Zero-ablation replaces a head's
output by 0, a value the trained model never saw from that head; the later
layers may react to the unusual input rather than to the missing information.
Mean-ablation replaces it by the head's *mean* output over reference texts
(:func:`head_output_means`), which keeps the average input of the later layers
and removes only what varies from text to text. With ``fill`` (``[layers,
heads, d_head]``) the hook computes ``xi_h * Att_h + (1 - xi_h) * fill_h``:
gate 1 keeps the head, gate 0 puts its mean in its place.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator, Sequence

import torch

from attnlab.core.layer_hooks import layer_hook_specs
from attnlab.core.models import LoadedModel
from attnlab.core.run import Hook, installed


def check_head_list(m: LoadedModel, heads: Iterable[Sequence[int]]) -> list[tuple[int, int]]:
    """Validate ``[(layer, head), ...]`` (0-based) and return it as a list of int pairs.

    Raises:
        TypeError: ``heads`` is not a collection of pairs.
        ValueError: a layer or head index is out of range for this model.
    """
    if isinstance(heads, (str, bytes)) or (isinstance(heads, Sequence) and len(heads) == 2
                                           and all(isinstance(v, int) for v in heads)):
        raise TypeError(
            f"heads must be a list of (layer, head) pairs, e.g. [(0, 6)], got {heads!r}; "
            "for a single head write [(layer, head)]."
        )
    out = []
    for item in heads:
        try:
            layer, head = item
        except (TypeError, ValueError):
            raise TypeError(f"each entry of heads must be a (layer, head) pair, got {item!r}") from None
        out.append((m.check_layer(layer), m.check_head(head)))
    return out


def ones_gates(m: LoadedModel, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A ``[layers, heads]`` tensor of ones (every head on) on the model's device."""
    return torch.ones(m.n_layers, m.n_heads, dtype=dtype, device=m.device)


def gates_for(m: LoadedModel, masked: Iterable[Sequence[int]]) -> torch.Tensor:
    """``[layers, heads]`` gates: 0 for the listed ``(layer, head)`` pairs, 1 elsewhere."""
    gates = ones_gates(m)
    for layer, head in check_head_list(m, masked):
        gates[layer, head] = 0.0
    return gates


def _check_gates(m: LoadedModel, gates: torch.Tensor) -> torch.Tensor:
    if not isinstance(gates, torch.Tensor):
        gates = torch.as_tensor(gates, dtype=torch.float32)
    if tuple(gates.shape[-2:]) != (m.n_layers, m.n_heads) or gates.dim() not in (2, 3):
        raise ValueError(
            f"gates must have shape [layers, heads] = [{m.n_layers}, {m.n_heads}] for this model "
            f"(or [texts, layers, heads], one row of gates per text), got {list(gates.shape)}. "
            "Start from attnlab.core.gates.ones_gates(m)."
        )
    if not gates.is_floating_point():
        raise TypeError(f"gates must be a floating-point tensor, got {gates.dtype}")
    return gates


def _check_fill(m: LoadedModel, fill: torch.Tensor | None) -> torch.Tensor | None:
    if fill is None:
        return None
    fill = torch.as_tensor(fill)
    if tuple(fill.shape) != (m.n_layers, m.n_heads, m.head_dim):
        raise ValueError(f"fill must have shape [layers, heads, d_head] = [{m.n_layers}, {m.n_heads}, "
                         f"{m.head_dim}] (from head_output_means), got {list(fill.shape)}")
    return fill


def gate_hook_specs(m: LoadedModel, gates: torch.Tensor, fill: torch.Tensor | None = None) -> list[Hook]:
    """Hook specs that scale every head's output by ``gates[layer, head]``, for
    :func:`attnlab.core.run.run` (``hooks=``) or :func:`gate_heads`.

    Each is a pre-hook on a layer's output projection (see the module docstring),
    built with :func:`attnlab.core.layer_hooks.layer_hook_specs` (which counts the
    calls of ALBERT's shared module). ``gates`` (``[layers, heads]``, floating) is
    used as it is, not copied: gradients flow into it, and changing its values
    changes the next pass. Use a fresh list for each installation.

    ``fill``: None (a gate of 0 leaves 0) or ``[layers, heads, d_head]`` (a gate of 0
    leaves the head's mean output, :func:`head_output_means`; see the module docstring).
    ``gates`` may also be ``[texts, layers, heads]``: one row of gates per text of the
    batch (the batch must then have exactly that many texts), so that one pass can
    run the same text with different heads masked.
    """
    gates = _check_gates(m, gates)
    fill = _check_fill(m, fill)
    n_heads, d_head = m.n_heads, m.head_dim

    def scale(layer: int, context: torch.Tensor) -> torch.Tensor:
        shape = context.shape  # (B, T, H * d_head)
        per_head = context.view(*shape[:-1], n_heads, d_head)  # (B, T, H, d_head)
        if gates.dim() == 3:  # one row of gates per text
            g = gates[:, layer].to(dtype=context.dtype, device=context.device)[:, None, :, None]  # (B, 1, H, 1)
        else:
            g = gates[layer].to(dtype=context.dtype, device=context.device)[:, None]  # (H, 1)
        out = per_head * g  # (B, T, H, d_head)
        if fill is not None:
            out = out + (1.0 - g) * fill[layer].to(dtype=context.dtype, device=context.device)  # (H, d_head)
        return out.reshape(shape)  # (B, T, H * d_head)

    return layer_hook_specs(m, context=scale)


@contextlib.contextmanager
def gate_heads(m: LoadedModel, gates: torch.Tensor, fill: torch.Tensor | None = None) -> Iterator[torch.Tensor]:
    """Scale every head's output by ``gates[layer, head]`` inside the ``with`` block.

    Args:
        m: the loaded model.
        gates: ``[layers, heads]`` floating tensor. It is used as it is, not
            copied: with ``requires_grad=True`` a backward pass fills
            ``gates.grad`` with ``dL/dxi``. Changing its values inside the block
            changes the next forward pass.
        fill: what a gate of 0 leaves: None for 0, or ``[layers, heads, d_head]``
            mean outputs (:func:`head_output_means`).

    Yields:
        ``gates``.

    :func:`gate_hook_specs` installed on ``m.model`` for the block; removed on
    exit, also when the body raises.
    """
    gates = _check_gates(m, gates)
    with installed(m.model, gate_hook_specs(m, gates, fill)):
        yield gates


@contextlib.contextmanager
def mask_heads(m: LoadedModel, heads: Iterable[Sequence[int]],
               fill: torch.Tensor | None = None) -> Iterator[torch.Tensor]:
    """Switch off the listed heads inside the ``with`` block.

    Each listed head's output (its slice of the context vector, before the
    output projection) is multiplied by 0 (zero-ablation), or replaced by its mean
    output when ``fill`` (``[layers, heads, d_head]``, :func:`head_output_means`) is
    given (mean-ablation); the other heads are untouched.

    Args:
        m: the loaded model.
        heads: 0-based ``(layer, head)`` pairs, e.g. ``[(0, 6), (0, 8)]`` for
            the article's "layer 1, heads 7 and 9". An empty list masks nothing.

    Yields:
        The ``[layers, heads]`` gate tensor in use (0 = masked).

    Example::

        with al.mask_heads(m, [(0, 6)]):
            att = al.attention(m, ["how do you play chess"])
    """
    gates = gates_for(m, heads)
    with gate_heads(m, gates, fill) as g:
        yield g


def head_output_means(m: LoadedModel, texts: Sequence[str], *, batch_size: int = 32) -> torch.Tensor:
    """``[layers, heads, d_head]``: every head's output (its slice of the context vector, the
    output projection's input) averaged over every real token of ``texts`` (padding left out).

    The ``fill`` of mean-ablation (:func:`mask_heads`): what the later layers receive from a
    head on average over these reference texts.
    """
    texts = list(texts)
    if not texts:
        raise ValueError("head_output_means needs at least one reference text")
    total = torch.zeros(m.n_layers, m.n_heads * m.head_dim, dtype=torch.float64)
    count = 0.0
    for start in range(0, len(texts), batch_size):
        enc = m.encode(texts[start:start + batch_size])
        keep = enc["attention_mask"].to(torch.float64)  # (B, T)
        seen: dict[int, torch.Tensor] = {}

        def record(layer: int, context: torch.Tensor) -> None:
            seen[layer] = torch.einsum("btd,bt->d", context.detach().to(torch.float64).cpu(), keep.cpu())  # (H*d,)

        with torch.no_grad(), installed(m.model, layer_hook_specs(m, context=record)):
            m.model(**enc)
        for layer, summed in seen.items():
            total[layer] += summed
        count += float(keep.sum())
    return (total / count).view(m.n_layers, m.n_heads, m.head_dim).to(torch.float32)
