"""Untrained twins of a model: the same architecture, the same scale, the learning gone.

A reading of attention says something about *training* only when it differs on a model
that learned nothing (the model-parameter randomisation test of Adebayo et al., 2018,
"Sanity Checks for Saliency Maps"). This module builds such a model from a loaded one:

* ``"shuffled"`` (the default): every weight tensor of the encoder's layers has its
  entries shuffled among themselves (one random permutation per tensor). Each tensor
  keeps its exact set of values, so its scale, its mean and its spread are the trained
  model's, while every learned arrangement is gone. The embeddings (token, position and
  segment) and every LayerNorm are kept as trained, so the inputs and the normalisation
  are those of the trained model;
* ``"fresh"``: the same tensors drawn anew by the architecture's own initialisation
  (``AutoModel.from_config``), the embeddings and LayerNorms again kept.

The twin is a :class:`~attnlab.core.models.LoadedModel` of its own (its own name, so its
saved results never mix with the trained model's), with the trained model's tokenizer.
"""

from __future__ import annotations

import copy
import dataclasses
from contextlib import contextmanager
from typing import Iterator

import torch

from attnlab.core import fast
from attnlab.core.models import LoadedModel

#: the kinds of untrained twin
KINDS = ("shuffled", "fresh")
#: the seed of the shuffles when none is given
DEFAULT_SEED = 0
#: the shuffle seeds a claim's twin is measured on, so that the spread between untrained twins (one seed's
#: twin is one draw of a model that learned nothing) is counted in the twin's interval
TWIN_SEEDS = (0, 1, 2)


def kept_parameters(model: torch.nn.Module) -> set[str]:
    """Names of the parameters a twin keeps as trained: those of the embeddings module and of
    every LayerNorm (found by module type, so names that do not say "LayerNorm" are found too)."""
    kept: set[str] = set()
    embeddings = getattr(model, "embeddings", None)
    for module_name, module in model.named_modules():
        is_embedding = embeddings is not None and module is embeddings
        if is_embedding or isinstance(module, (torch.nn.LayerNorm, torch.nn.Embedding)):
            prefix = f"{module_name}." if module_name else ""
            kept.update(prefix + name for name, _p in module.named_parameters())
    return kept


def changed_parameters(model: torch.nn.Module) -> list[str]:
    """Names of the parameters a twin changes: every parameter not in :func:`kept_parameters`."""
    kept = kept_parameters(model)
    return [name for name, _p in model.named_parameters() if name not in kept]


def shuffle_within_tensors(model: torch.nn.Module, names: list[str], *, seed: int = DEFAULT_SEED) -> None:
    """Shuffle the entries of each named parameter among themselves, in place (one permutation each)."""
    generator = torch.Generator().manual_seed(int(seed))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in names:
            p = params[name]
            flat = p.detach().reshape(-1)  # (numel,)
            order = torch.randperm(flat.numel(), generator=generator).to(flat.device)
            p.copy_(flat[order].reshape(p.shape))


def unshuffle_within_tensors(model: torch.nn.Module, names: list[str], *, seed: int = DEFAULT_SEED) -> None:
    """Undo :func:`shuffle_within_tensors` with the same ``names`` and ``seed``, in place: the same
    permutations are drawn again, one tensor at a time, and each entry goes back where it came from."""
    generator = torch.Generator().manual_seed(int(seed))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in names:
            p = params[name]
            shuffled = p.detach().reshape(-1).clone()  # (numel,)
            order = torch.randperm(shuffled.numel(), generator=generator).to(shuffled.device)
            back = torch.empty_like(shuffled)
            back[order] = shuffled  # shuffled[i] came from back[order[i]]
            p.copy_(back.reshape(p.shape))


def initialise_afresh(model: torch.nn.Module, names: list[str], *, seed: int = DEFAULT_SEED) -> None:
    """Replace each named parameter, in place, by the architecture's own fresh initialisation."""
    from transformers import AutoModel

    torch.manual_seed(int(seed))
    fresh = AutoModel.from_config(model.config, attn_implementation="eager")
    new = dict(fresh.named_parameters())
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in names:
            params[name].copy_(new[name].to(params[name].dtype))
    del fresh


def twin_name(name: str, kind: str = "shuffled", seed: int = DEFAULT_SEED) -> str:
    """The name a twin of ``name`` runs under: ``"multilingual-e5-small (untrained twin: shuffled, seed 0)"``."""
    return f"{name} (untrained twin: {kind}, seed {seed})"


def twins_name(name: str, kind: str, seeds: tuple[int, ...]) -> str:
    """The name of several twins pooled over their seeds: ``"... (untrained twin: shuffled, seeds 0, 1, 2)"``."""
    if len(seeds) == 1:
        return twin_name(name, kind, seeds[0])
    return f"{name} (untrained twin: {kind}, seeds {', '.join(str(s) for s in seeds)})"


def untrained_twin(m: LoadedModel, *, kind: str = "shuffled", seed: int = DEFAULT_SEED,
                   in_place: bool = False) -> LoadedModel:
    """An untrained twin of ``m`` (see the module's docstring).

    Args:
        m: the trained model.
        kind: ``"shuffled"`` (entries shuffled within each tensor) or ``"fresh"`` (a fresh
            initialisation from the model's configuration).
        seed: the shuffles' (or the initialisation's) seed.
        in_place: change ``m``'s own torch module instead of a copy (saves a model's memory
            when ``m`` is not needed afterwards; ``m`` itself must then not be used again).

    Returns:
        A new :class:`LoadedModel` named :func:`twin_name`, in eval mode, on ``m``'s device.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    model = m.model if in_place else copy.deepcopy(m.model)
    fast.forget_copies(m.model)  # a cached quantised copy would still hold the trained weights
    names = changed_parameters(model)
    if kind == "shuffled":
        shuffle_within_tensors(model, names, seed=seed)
    else:
        initialise_afresh(model, names, seed=seed)
    model.eval()
    return dataclasses.replace(m, model=model, name=twin_name(m.name, kind, seed), source="untrained twin",
                               reason="")


@contextmanager
def shuffled_for_a_while(m: LoadedModel, *, seed: int = DEFAULT_SEED) -> Iterator[LoadedModel]:
    """The shuffled twin of ``m`` made in ``m``'s own weights (no second copy of the model in memory),
    put back exactly as trained when the ``with`` block ends, also on an error::

        with shuffled_for_a_while(m) as twin:
            ...  # measure the twin; m must not be used inside the block
        # m is the trained model again, bit for bit
    """
    names = changed_parameters(m.model)
    twin = untrained_twin(m, kind="shuffled", seed=seed, in_place=True)
    try:
        yield twin
    finally:
        unshuffle_within_tensors(m.model, names, seed=seed)
        fast.forget_copies(m.model)  # a quantised copy made from the twin's weights
