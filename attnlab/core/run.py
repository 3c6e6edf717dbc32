"""One way to run the model: :func:`encode` turns texts (or token ids) into model
inputs, :func:`run` runs them and returns a :class:`Cache` of what was asked for.

Every forward pass of the package should go through these two functions, so
that a fix to tokenising, devices or hooks is made once:

* :func:`encode` is the one tokeniser call (it lives in :mod:`attnlab.core.inputs`,
  below :mod:`attnlab.core.models`, and is importable from here). It pads a batch, applies the
  segment rule (DistilBERT has no ``token_type_ids``; every other
  architecture gets the tokenizer's, or zeros), counts each text's tokens and
  puts the tensors on the model's device (pinned host memory and a
  non-blocking copy when that device is a GPU).
  :func:`encode_ids` does the same for token ids made earlier (pre-tokenised
  input: nothing is tokenised again).
* :func:`run` installs forward hooks that record the attention maps
  (``(B, H, T, T)``) and hidden states (``(B, T, d)``) of the layers asked
  for, plus any extra :class:`Hook` (head gates, position replacement, ...),
  runs the model, and removes every hook on the way out, also after an error.
  With ``stop_after_layer`` the pass ends once that layer has been recorded:
  the layers above it never run, and everything recorded is bit-identical to
  the full pass (the same operations in the same order).

Typical use::

    from attnlab.core.run import encode, run
    batch = encode(m, ["how do you play chess", "why is the sky blue"])
    cache = run(m, batch, keep=("maps",), layers=[0, 1], stop_after_layer=1)
    cache.stacked_maps()   # (B, 2, H, T, T)
"""

from __future__ import annotations

import contextlib
import re
import weakref
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import torch
import torch.utils.checkpoint

from attnlab.core.inputs import Encoded, encode, encode_ids  # noqa: F401 - the inputs half of "one way"
from attnlab.core.models import LoadedModel, NoAttentionError

#: what :func:`run` can keep
KEEPABLE = ("maps", "hidden", "output")

#: rows (texts times copies) a batched pass of copies aims at: on a 2-core CPU a pass over 8 texts
#: of bert-base's shape ran 3-4x fewer texts a second than one over 256
ROWS_PER_PASS = 256
#: the hidden width :data:`ROWS_PER_PASS` is for (the offline default's); a wider model takes
#: proportionally fewer rows a pass, so that a pass's activations stay the same size (bert-base's
#: 768: 128 rows; on one sweep of its shape a lower peak and less time, benchmarks/bench_memory_release.py)
ROWS_WIDTH = 384


def pass_rows(m: LoadedModel | None = None) -> int:
    """:data:`ROWS_PER_PASS` rows for a model at most :data:`ROWS_WIDTH` wide, fewer for a wider one."""
    if m is None:
        return ROWS_PER_PASS
    return max(1, ROWS_PER_PASS * ROWS_WIDTH // max(ROWS_WIDTH, int(m.hidden_size)))


def copies_that_fit(rows: int, rows_per_pass: int | None = None, *, m: LoadedModel | None = None) -> int:
    """How many copies of a batch of ``rows`` texts make one pass of about ``rows_per_pass`` rows
    (default :func:`pass_rows` of ``m``), at least 1."""
    return max(1, (pass_rows(m) if rows_per_pass is None else rows_per_pass) // max(1, rows))


def repeat_batch(inputs: dict[str, torch.Tensor], copies: int) -> dict[str, torch.Tensor]:
    """Model inputs (``(B, T)`` each, or ``(B, T, d)`` hidden states) repeated ``copies`` times along
    the batch: copy ``j`` holds rows ``j * B .. (j + 1) * B - 1``."""
    return {k: v.repeat(copies, *[1] * (v.dim() - 1)) for k, v in inputs.items()}


#: reduced-precision modes of a forward pass (``"fp32"`` is exact)
PRECISIONS = ("fp32", "tf32", "bf16", "int8")

#: attention module path of every layer, per model (dropped with the model)
_PATHS: "weakref.WeakKeyDictionary[torch.nn.Module, list[str]]" = weakref.WeakKeyDictionary()


class _StopForward(Exception):
    """Raised inside a hook once everything asked for has been recorded."""


# --------------------------------------------------------------------------- where things are


def attention_module_paths(m: LoadedModel) -> list[str]:
    """Dotted module path of each layer's self-attention module (``n_layers`` entries).

    The self-attention module is the one that owns the layer's query
    projection (``query`` or ``q_lin``); its forward returns
    ``(context, probabilities)`` with probabilities ``(B, H, T, T)``. In
    ALBERT every layer names the same module.
    """
    cached = _PATHS.get(m.model)
    if cached is not None:
        return cached
    parts = m.layer_parts()
    paths: dict[int, str] = {}
    for name, module in m.model.named_modules():
        for attr in ("query", "q_lin"):
            child = getattr(module, attr, None)
            if child is None:
                continue
            for l, p in enumerate(parts):
                if p.query is child:
                    paths[l] = name
    if len(paths) != m.n_layers:
        raise RuntimeError(
            f"found the attention modules of {len(paths)} of {m.n_layers} layers of {m.name}; "
            "this architecture is not supported"
        )
    _PATHS[m.model] = out = [paths[l] for l in range(m.n_layers)]
    return out


def layer_module_paths(m: LoadedModel) -> list[str]:
    """Dotted path of each whole layer (attention + feed-forward): the nearest
    ancestor of its attention module whose name ends in a layer number."""
    out = []
    for path in attention_module_paths(m):
        parts = path.split(".")
        while parts and not re.fullmatch(r"\d+", parts[-1]):
            parts.pop()
        if not parts:
            raise RuntimeError(f"cannot find the layer that holds {path!r} in {m.name}")
        out.append(".".join(parts))
    return out


def embedding_module(m: LoadedModel) -> torch.nn.Module:
    """The module whose output is hidden state 0: the embeddings, or ALBERT's
    and ELECTRA's projection of them to the hidden size (``embedding_hidden_mapping_in``,
    ``embeddings_project``) where the embeddings are narrower than the layers."""
    found = None
    for module_name, module in m.model.named_modules():
        last = module_name.split(".")[-1]
        if last in ("embedding_hidden_mapping_in", "embeddings_project"):
            return module
        if last == "embeddings" and found is None:
            found = module
    if found is None:
        raise RuntimeError(f"no embeddings module found in {m.name}")
    return found


def layer_list(m: LoadedModel, root: torch.nn.Module | None = None) -> tuple[torch.nn.Module, str] | None:
    """``(parent, attribute)`` of the ``ModuleList`` that holds the layers in order, one
    module per layer (``encoder.layer`` in BERT, ``transformer.layer`` in DistilBERT), in
    ``root`` (``m.model``, or a copy of it with the same structure), or None where layers
    share modules (ALBERT) and a pass cannot start part-way."""
    paths = layer_module_paths(m)
    parents = {p.rsplit(".", 1)[0] for p in paths}
    if len(parents) != 1 or len(set(paths)) != m.n_layers:
        return None
    (parent_path,) = parents
    owner_path, _dot, attribute = parent_path.rpartition(".")
    root = m.model if root is None else root
    owner = root.get_submodule(owner_path) if owner_path else root
    layers = getattr(owner, attribute, None)
    if not isinstance(layers, torch.nn.ModuleList) or len(layers) != m.n_layers:
        return None
    return owner, attribute


@contextlib.contextmanager
def layers_from(m: LoadedModel, root: torch.nn.Module, start: int, hidden: torch.Tensor) -> Iterator[bool]:
    """Inside the block a pass of ``root`` (``m.model`` or a module holding it) begins at
    layer ``start`` with ``hidden`` ``(B, T, d)`` as that layer's input: the embeddings'
    output is replaced by ``hidden`` and layers ``0 .. start - 1`` are left out of the
    layer list, so they never run. Yields False (and changes nothing) where the model's
    layers share modules; the caller then runs the whole pass, which gives the same result.
    The layer list is put back on exit, also after an error."""
    found = layer_list(m, root) if start > 0 else None
    if found is None:
        yield False
        return
    owner, attribute = found
    whole = getattr(owner, attribute)
    embeddings = _same_module(root, m, embedding_module(m))
    handle = embeddings.register_forward_hook(lambda _module, _args, _output: hidden)
    setattr(owner, attribute, torch.nn.ModuleList(list(whole)[start:]))
    try:
        yield True
    finally:
        setattr(owner, attribute, whole)
        handle.remove()


@contextlib.contextmanager
def recompute_in_backward(m: LoadedModel) -> Iterator[bool]:
    """Inside the block a pass that records a graph keeps only each layer's input ``(B, T, d)``
    for the backward pass; the backward pass runs each layer again to get the rest
    (``torch.utils.checkpoint``). Gradients are the same; the graph of one layer at a time is
    held instead of all of them, for about one more forward pass of time.

    Yields False (and changes nothing) where layers share modules (ALBERT): the hooks that
    count a shared module's calls would count the second run as the next layer. Passes without
    gradients are untouched. The layers' own ``forward`` is put back on exit, also after an error.
    """
    found = layer_list(m)
    if found is None:
        yield False
        return
    owner, attribute = found
    layers = list(getattr(owner, attribute))
    for layer in layers:
        layer.forward = _recomputed(layer.forward)
    try:
        yield True
    finally:
        for layer in layers:
            del layer.forward  # the instance attribute; the class's forward shows again


def _recomputed(forward: Callable) -> Callable:
    def run_layer(*args, **kwargs):
        if not torch.is_grad_enabled():
            return forward(*args, **kwargs)
        return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)

    return run_layer


# --------------------------------------------------------------------------- hooks


@dataclass
class Hook:
    """An extra hook that :func:`run` installs for one pass and removes afterwards.

    Attributes:
        module: a dotted module path in ``m.model`` or the module itself.
        fn: the hook, with torch's signature: ``fn(module, args)`` for a
            pre-hook, ``fn(module, args, output)`` for a forward hook; it may
            return a replacement, like any torch hook.
        pre: a forward pre-hook (runs before the module) instead of a forward hook.
    """

    module: str | torch.nn.Module
    fn: Callable
    pre: bool = False


@contextlib.contextmanager
def installed(model: torch.nn.Module, hooks: Iterable[Hook]) -> Iterator[None]:
    """Install ``hooks`` on ``model`` for the ``with`` block; all are removed on exit, also after an error."""
    handles = []
    try:
        for h in hooks:
            module = model.get_submodule(h.module) if isinstance(h.module, str) else h.module
            handles.append(module.register_forward_pre_hook(h.fn) if h.pre else module.register_forward_hook(h.fn))
        yield
    finally:
        for handle in handles:
            handle.remove()


# --------------------------------------------------------------------------- the cache


@dataclass
class Cache:
    """What :func:`run` kept.

    Attributes:
        maps: layer -> attention probabilities ``(B, H, T, T)`` (as computed: float32, or bf16 under autocast).
        hidden: index -> hidden state ``(B, T, d)``: 0 is the embeddings' output,
            ``l + 1`` the output of layer ``l``.
        output: the model's output object (only for a full pass with ``"output"`` kept).
        stopped_after: the layer after which the pass ended, or None for a full pass.
    """

    maps: dict[int, torch.Tensor] = field(default_factory=dict)
    hidden: dict[int, torch.Tensor] = field(default_factory=dict)
    output: object = None
    stopped_after: int | None = None

    def stacked_maps(self, layers: Sequence[int] | None = None) -> torch.Tensor:
        """float32 ``(B, len(layers), H, T, T)`` of the kept layers (default: all kept, in order)."""
        layers = sorted(self.maps) if layers is None else list(layers)
        return torch.stack([self.maps[l].float() for l in layers], dim=1)


class _Recorder:
    """Counts calls of the attention modules and of the layers (ALBERT calls one module for every layer)."""

    def __init__(self, cache: Cache, map_layers: set[int], hidden_layers: set[int], stop: int | None,
                 stop_on_maps: bool) -> None:
        self.cache, self.map_layers, self.hidden_layers = cache, map_layers, hidden_layers
        self.stop, self.stop_on_maps = stop, stop_on_maps
        self.attention_calls = self.layer_calls = 0

    first = 0  #: the layer a pass starts at (see ``start_at`` of :func:`run`)

    def reset(self, _module, _args) -> None:
        self.attention_calls = self.layer_calls = self.first

    def on_attention(self, _module, _args, output) -> None:
        layer = self.attention_calls
        self.attention_calls += 1
        if layer in self.map_layers:
            self.cache.maps[layer] = output[1]  # (B, H, T, T), None when the kernel does not return them
        if self.stop_on_maps and layer == self.stop:
            self.cache.stopped_after = layer
            raise _StopForward

    def on_embeddings(self, _module, _args, output) -> None:
        if 0 in self.hidden_layers:
            self.cache.hidden[0] = output  # (B, T, d)

    def on_layer(self, _module, _args, output) -> None:
        layer = self.layer_calls
        self.layer_calls += 1
        if layer + 1 in self.hidden_layers:
            self.cache.hidden[layer + 1] = output[0] if isinstance(output, tuple) else output  # (B, T, d)
        if not self.stop_on_maps and layer == self.stop:
            self.cache.stopped_after = layer
            raise _StopForward


@contextlib.contextmanager
def precision_context(precision: str, device: torch.device) -> Iterator[None]:
    """bf16: autocast; tf32: TensorFloat-32 matrix products (on GPUs that have them); else nothing.
    Restores torch's settings on exit."""
    if precision == "bf16":
        with torch.autocast(device.type, dtype=torch.bfloat16):
            yield
    elif precision == "tf32":
        old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
               torch.get_float32_matmul_precision())
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old[:2]
            torch.set_float32_matmul_precision(old[2])
    else:
        yield


def run(
    m: LoadedModel,
    batch: Encoded | dict[str, torch.Tensor],
    *,
    keep: Sequence[str] = ("maps",),
    layers: Sequence[int] | None = None,
    stop_after_layer: int | None = None,
    hooks: Sequence[Hook] = (),
    model: torch.nn.Module | None = None,
    precision: str = "fp32",
    grad: bool = False,
    start_at: tuple[int, torch.Tensor] | None = None,
) -> Cache:
    """Run ``m`` on one batch and return what was asked for.

    Args:
        m: the loaded model.
        batch: from :func:`encode` / :func:`encode_ids` (or a dict of model inputs).
        keep: any of ``"maps"`` (attention probabilities), ``"hidden"``
            (hidden states) and ``"output"`` (the model's output object; needs a full pass).
        layers: 0-based layers whose maps / hidden states to keep (``None``: all).
            Hidden state ``l + 1`` is layer ``l``'s output; hidden state 0 (the
            embeddings) is kept with ``layers=None``.
        stop_after_layer: end the pass once this layer's kept values are recorded
            (default: the deepest layer kept when ``"output"`` is not kept, else
            run to the end).
        hooks: extra :class:`Hook` objects, installed for this pass only.
        model: the module to run instead of ``m.model``: a copy with the same structure (an
            int8 copy), or a module that contains ``m.model`` itself (the masked-LM model of
            :func:`attnlab.core.models.load_masked_lm`), whose maps and hidden states are
            then recorded on ``m.model`` inside it.
        precision: ``"fp32"``, ``"tf32"`` or ``"bf16"`` (autocast); the int8 copy comes via ``model``.
        grad: keep the autograd graph (default: inference mode, no graph).
        start_at: ``(layer, hidden)``: begin the pass at ``layer`` with ``hidden`` ``(B, T, d)``
            as its input (hidden state ``layer`` of an earlier pass on the same batch, from
            ``keep=("hidden",)``), so the layers below never run. Where nothing below
            ``layer`` is changed by ``hooks`` the result is bit-identical to the whole pass,
            which is what runs on models whose layers share modules (ALBERT).

    Returns:
        :class:`Cache`.

    Raises:
        NoAttentionError: maps were asked for but the model did not return them (not eager attention).
    """
    bad = [k for k in keep if k not in KEEPABLE]
    if bad:
        raise ValueError(f"keep must name some of {KEEPABLE}, got {bad}")
    chosen = list(range(m.n_layers)) if layers is None else sorted({m.check_layer(l) for l in layers})
    want_maps, want_hidden, want_output = "maps" in keep, "hidden" in keep, "output" in keep
    if stop_after_layer is None and not want_output and (want_maps or want_hidden) and chosen:
        stop_after_layer = max(chosen)
    if stop_after_layer is not None:
        stop_after_layer = m.check_layer(stop_after_layer)
        if want_output:
            raise ValueError("keep='output' needs the full pass: leave stop_after_layer=None")
    inputs = batch.inputs if isinstance(batch, Encoded) else batch
    model = m.model if model is None else model
    root = m.model if model is not m.model and _contains(model, m.model) else model  # where the layers are
    cache = Cache()
    hidden_layers = ({0} if layers is None else set()) | {l + 1 for l in chosen} if want_hidden else set()
    rec = _Recorder(cache, set(chosen) if want_maps else set(), hidden_layers, stop_after_layer,
                    stop_on_maps=not want_hidden)
    own = [Hook(model, rec.reset, pre=True)]
    if want_maps or (stop_after_layer is not None and not want_hidden):
        own += [Hook(root.get_submodule(p), rec.on_attention) for p in dict.fromkeys(attention_module_paths(m))]
    if want_hidden:
        own += [Hook(root.get_submodule(p), rec.on_layer) for p in dict.fromkeys(layer_module_paths(m))]
        if 0 in hidden_layers:
            own.append(Hook(_same_module(root, m, embedding_module(m)), rec.on_embeddings))
    grad_mode = contextlib.nullcontext() if grad else torch.inference_mode()
    start, hidden_in = (0, None) if start_at is None else (m.check_layer(start_at[0]), start_at[1])
    if start and tuple(hidden_in.shape[:2]) != tuple(inputs["attention_mask"].shape):
        raise ValueError(f"start_at's hidden state is {tuple(hidden_in.shape)}, but the batch is "
                         f"{tuple(inputs['attention_mask'].shape)} (batch, tokens)")
    skipping = layers_from(m, root, start, hidden_in) if start else contextlib.nullcontext(False)
    with installed(model, own + list(hooks)), skipping as skipped, grad_mode, precision_context(precision, m.device):
        rec.first = start if skipped else 0
        try:
            out = model(**inputs)
        except _StopForward:
            out = None
    if want_output:
        cache.output = out
    if want_maps:
        missing = [l for l in chosen if cache.maps.get(l) is None and l >= rec.first]  # below a start: never ran
        if missing:
            raise NoAttentionError(
                f"no attention probabilities were recorded for layers {missing} of {m.name}; "
                "the model must use eager attention (load it with attnlab.load_model)."
            )
    return cache


def _contains(model: torch.nn.Module, part: torch.nn.Module) -> bool:
    """Whether ``part`` is one of ``model``'s submodules (the module itself, not a copy)."""
    return any(mod is part for mod in model.modules())


def _same_module(model: torch.nn.Module, m: LoadedModel, module: torch.nn.Module) -> torch.nn.Module:
    """``module`` of ``m.model``, or the module at the same path in ``model`` (a copy)."""
    if model is m.model:
        return module
    for name, mod in m.model.named_modules():
        if mod is module:
            return model.get_submodule(name)
    return module


def layer_input(m: LoadedModel, batch: Encoded | dict[str, torch.Tensor], layer: int, *,
                model: torch.nn.Module | None = None) -> torch.Tensor:
    """``(B, T, d)``: hidden state ``layer`` of the unchanged model on ``batch``, the input of
    ``layer``, from a pass that stops below it; hand it to ``run(..., start_at=(layer, it))``
    for passes that change nothing below ``layer``. ``model``: as in :func:`run`."""
    layer = m.check_layer(layer)
    if layer == 0:
        return run(m, batch, keep=("hidden",), layers=None, stop_after_layer=0, model=model).hidden[0]
    return run(m, batch, keep=("hidden",), layers=[layer - 1], model=model).hidden[layer]
