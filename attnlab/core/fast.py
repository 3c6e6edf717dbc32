"""A fast forward pass that returns only the attention maps a caller asks for.

Averaging maps over 100,000 queries is a throughput problem, so this module
does three things the general :func:`attnlab.attention` does not:

1. **Hooks instead of ``output_attentions``.** A forward hook on each layer's
   self-attention module records the probabilities that the eager attention
   computes anyway (``(B, H, T, T)``), only for the requested layers.
2. **Truncated depth.** When the deepest requested layer has been recorded,
   the hook raises an internal exception that ends the forward pass: the rest
   of that layer and all the layers above it never run. Everything before it
   runs exactly as in the full model, so the recorded maps are *bit-identical*
   to the full model's (tested). Works for all five architectures, including
   ALBERT, whose layers share one attention module (the hook counts calls).
3. **Opt-in reduced precision.** ``"int8"``: a copy of the model whose
   ``nn.Linear`` layers are dynamically quantised to int8
   (``torch.ao.quantization.quantize_dynamic``; weights int8, activations
   quantised per batch). ``"bf16"``: bfloat16 autocast of the fp32 model.
   ``"tf32"``: fp32 weights with TensorFloat-32 matrix products (10-bit
   mantissa inputs, fp32 sums) on GPUs that have them; on a CPU it is fp32.
   All three change the numbers slightly; :func:`attnlab.core.streaming.mean_attention`
   measures by how much against fp32 and reports it. ``"fp32"`` is exact and
   the default. ``"auto"`` (:func:`choose_precision`) takes bf16 only where
   the hardware runs it natively (a CUDA GPU with bf16, or a CPU with
   AVX512-BF16 / AMX): on an AVX2-only CPU bf16 is emulated and about 6x
   *slower* than fp32, so ``"auto"`` keeps fp32 there.

Typical use::

    from attnlab.core.fast import encode_same_length, forward_maps
    inputs = encode_same_length(m, ids)              # (B, T) tensors, no padding
    maps = forward_maps(m, inputs, layers=[0, 1, 2, 3])   # (B, 4, H, T, T)
"""

from __future__ import annotations

import copy
import numbers
import os
import warnings
import weakref
from pathlib import Path
from typing import Iterable, Sequence

import torch

from attnlab.core import class_setting
from attnlab.core.models import LoadedModel
from attnlab.core.run import attention_module_paths, encode_ids, run

#: the precisions of :func:`forward_maps`; reduced ones are opt-in and report their deviation
PRECISIONS = ("fp32", "tf32", "int8", "bf16")

#: per-model cache of int8 copies, dropped with the model
_INT8_COPIES: "weakref.WeakKeyDictionary[torch.nn.Module, torch.nn.Module]" = weakref.WeakKeyDictionary()


# --------------------------------------------------------------------------- where the maps are


def check_layers(m: LoadedModel, layers: Sequence[int] | int | None) -> list[int]:
    """Validate a selection of 0-based layers; ``None`` means all, an int ``k`` means ``0..k-1``.

    Integers may be numpy integers (``np.int64`` from ``argmax``); bools are refused.

    Returns:
        The layers as a sorted list without duplicates.

    Raises:
        TypeError: neither None, an int nor a sequence of ints.
        ValueError: a count outside ``1..n_layers``, an index out of range, an empty list.
    """
    if layers is None:
        return list(range(m.n_layers))
    if isinstance(layers, bool):
        raise TypeError("layers must be None, an int or a list of 0-based layer indices, got a bool")
    if isinstance(layers, numbers.Integral):
        count = int(layers)
        if not 1 <= count <= m.n_layers:
            raise ValueError(
                f"layers={count} asks for the first {count} layers, but an int here counts layers "
                f"from the first: use 1..{m.n_layers} (this model has {m.n_layers}), or a list of "
                "0-based indices such as [0, 1, 2, 3]."
            )
        return list(range(count))
    if isinstance(layers, str) or not isinstance(layers, Iterable):
        raise TypeError(f"layers must be None, an int or a list of 0-based layer indices, got {layers!r}")
    chosen = sorted({m.check_layer(l) for l in layers})
    if not chosen:
        raise ValueError("layers is empty: pass None for all layers, or e.g. [0, 1, 2, 3]")
    return chosen


# --------------------------------------------------------------------------- inputs


def encode_same_length(m: LoadedModel, ids: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
    """Model inputs for token-id lists that all have the same length (no padding).

    A thin alias of :func:`attnlab.core.run.encode_ids` (the one place that builds inputs).

    Args:
        ids: ``B`` lists of ``T`` token ids each (special tokens included).

    Returns:
        ``input_ids``, ``attention_mask`` (all ones) and, except for
        DistilBERT, ``token_type_ids`` (all zeros); each ``(B, T)``.
    """
    return encode_ids(m, ids).inputs


# --------------------------------------------------------------------------- reduced precision


def model_for(m: LoadedModel, precision: str = "fp32") -> torch.nn.Module:
    """The module that runs at ``precision``: the model itself for fp32/bf16,
    a cached int8 dynamically quantised copy for ``"int8"``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "int8":
        return m.model
    cached = _INT8_COPIES.get(m.model)
    if cached is None:
        if m.device.type != "cpu":
            raise ValueError("precision='int8' (dynamic quantisation) runs on CPU only; use 'bf16' on a GPU")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch announces the move of this API to torchao
            cached = torch.ao.quantization.quantize_dynamic(
                copy.deepcopy(m.model), {torch.nn.Linear}, dtype=torch.qint8
            )
        cached.eval()
        _INT8_COPIES[m.model] = cached
    return cached


def forget_copies(model: torch.nn.Module) -> None:
    """Drop the cached reduced-precision copies of ``model`` (after its weights changed in place)."""
    _INT8_COPIES.pop(model, None)


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="ignore")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def native_bf16(device: torch.device) -> bool:
    """True when ``device`` computes bfloat16 natively (not emulated)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return bool({"avx512_bf16", "amx_bf16"} & _cpu_flags())
    return False


def choose_precision(m: LoadedModel, precision: str = "auto") -> tuple[str, str]:
    """``(precision, why)``: ``"auto"`` becomes ``"bf16"`` where it is native, else ``"fp32"``;
    any other value is checked and returned as asked. ``ATTNLAB_PRECISION`` (e.g. ``fp32``, for the
    same numbers on every machine) decides ``"auto"`` when it is set, and a class setting before it."""
    setting = class_setting.current()
    if precision == "auto" and setting is not None:
        return setting.precision, f"the class setting {setting.source}"
    if precision == "auto" and os.environ.get("ATTNLAB_PRECISION"):
        chosen = os.environ["ATTNLAB_PRECISION"].strip().lower()
        if chosen not in PRECISIONS:
            raise ValueError(f"ATTNLAB_PRECISION must be one of {PRECISIONS}, got {chosen!r}")
        return chosen, "ATTNLAB_PRECISION"
    if precision == "auto":
        if native_bf16(m.device):
            return "bf16", f"{m.device.type} runs bfloat16 natively"
        return "fp32", (f"{m.device.type} has no native bfloat16 (it would be emulated and slower), "
                        "so the exact fp32 is used")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be 'auto' or one of {PRECISIONS}, got {precision!r}")
    return precision, "asked for"


def forward_maps(
    m: LoadedModel,
    inputs: dict[str, torch.Tensor],
    layers: Sequence[int] | None = None,
    *,
    precision: str = "fp32",
) -> torch.Tensor:
    """Attention maps of the chosen layers for one batch, stopping after the deepest.

    Args:
        m: the loaded model.
        inputs: model inputs, e.g. from :func:`encode_same_length` (``(B, T)`` each).
        layers: 0-based layers to record (sorted); ``None`` for all.
        precision: ``"fp32"`` (exact), ``"tf32"``, ``"int8"`` or ``"bf16"``.

    Returns:
        float32 ``(B, len(layers), H, T, T)``.

    Raises:
        NoAttentionError: the model does not return attention probabilities (not eager attention).
    """
    layers = check_layers(m, layers)
    cache = run(m, inputs, keep=("maps",), layers=layers, model=model_for(m, precision),
                precision="fp32" if precision == "int8" else precision)
    return cache.stacked_maps(layers)  # (B, L', H, T, T)
