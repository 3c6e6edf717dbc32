"""Hooks by layer: change a layer's value vectors or its heads' context before the heads are mixed.

Two places inside every layer's attention (see
:meth:`attnlab.core.models.LoadedModel.layer_parts`):

* the output of the value projection, ``V`` ``(B, T, H * d_head)`` (head ``h``
  owns the slice ``[h * d_head, (h + 1) * d_head)``);
* the input of the output projection, the context ``A @ V`` ``(B, T, H * d_head)``
  of every head before the heads are mixed.

:func:`layer_hook_specs` turns a function ``fn(layer, tensor)`` for either place
into :class:`attnlab.core.run.Hook` specs for :func:`attnlab.core.run.run`
(``hooks=[...]``); :func:`layer_hooks` installs the same specs for a ``with``
block. ALBERT shares its modules between layers: the hooks count their calls,
reset by a pre-hook on the whole model, so the k-th call is layer k (as in
:mod:`attnlab.core.gates`).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import torch

from attnlab.core.models import LoadedModel
from attnlab.core.run import Hook, installed

#: ``fn(layer, tensor)`` -> a replacement of the same shape, or None to leave it
LayerFn = Callable[[int, torch.Tensor], torch.Tensor | None]


def layer_hook_specs(m: LoadedModel, *, value: LayerFn | None = None,
                     context: LayerFn | None = None) -> list[Hook]:
    """Hook specs that call ``value(layer, V)`` on every layer's value output and
    ``context(layer, C)`` on every layer's context (the output projection's input).

    ``V`` and ``C`` are ``(B, T, H * d_head)``; a function returns a replacement of the
    same shape, or None to leave it. Install them with :func:`attnlab.core.run.run`
    (``hooks=``) or :func:`layer_hooks`; use a fresh list for each installation.
    """
    parts = m.layer_parts()
    counters: list[dict[int, int]] = []
    specs: list[Hook] = []

    def attach(modules: list[torch.nn.Module], fn: LayerFn, pre: bool) -> None:
        layers_of: dict[int, list[int]] = {}
        module_of: dict[int, torch.nn.Module] = {}
        for layer, module in enumerate(modules):
            layers_of.setdefault(id(module), []).append(layer)
            module_of[id(module)] = module
        calls = {key: 0 for key in layers_of}
        counters.append(calls)
        for key, module in module_of.items():
            make = _pre_hook if pre else _post_hook
            specs.append(Hook(module, make(fn, layers_of[key], calls, key), pre=pre))

    def reset(_module, _args) -> None:
        for calls in counters:
            for key in calls:
                calls[key] = 0

    specs.append(Hook(m.model, reset, pre=True))
    if value is not None:
        attach([p.value for p in parts], value, pre=False)
    if context is not None:
        attach([p.output for p in parts], context, pre=True)
    return specs


@contextlib.contextmanager
def layer_hooks(m: LoadedModel, *, value: LayerFn | None = None, context: LayerFn | None = None) -> Iterator[None]:
    """:func:`layer_hook_specs` installed on ``m.model`` inside the ``with`` block (removed on exit,
    also after an exception)."""
    with installed(m.model, layer_hook_specs(m, value=value, context=context)):
        yield


def _layer_of(layers: list[int], calls: dict[int, int], key: int) -> int:
    layer = layers[calls[key] % len(layers)]
    calls[key] += 1
    return layer


def _post_hook(fn: LayerFn, layers: list[int], calls: dict[int, int], key: int):
    def hook(_module, _args, output):
        return fn(_layer_of(layers, calls, key), output)

    return hook


def _pre_hook(fn: LayerFn, layers: list[int], calls: dict[int, int], key: int):
    def hook(_module, args):
        new = fn(_layer_of(layers, calls, key), args[0])
        return None if new is None else (new, *args[1:])

    return hook
