"""Removing (or scrambling) the absolute position embeddings of a model.

A BERT-family model builds its input as ``LayerNorm(word + position + segment)``
(ALBERT and ELECTRA then project it to the hidden size). :func:`replace_positions`
swaps the position term for something else inside a ``with`` block, by a
forward hook on ``embeddings.position_embeddings`` that rewrites the module's
output ``[B or 1, T, d]`` (:func:`position_hook_specs` gives the same hook for
one pass of :func:`attnlab.core.run.run`):

* ``"zero"`` - every position vector becomes zero (:func:`no_position`, the
  source article's intervention). The model never saw such inputs in training.
* ``"mean"`` - every position gets the same vector: the mean of the input's
  ``T`` position vectors. No order information is left, but the part the
  position vectors share (most of their length for short inputs) stays as in
  training: a control for "zero", whose inputs the model never saw.
* ``"shuffle"`` - the input's ``T`` position vectors in a seeded random order
  (never the identity when ``T > 1``): every vector is a real one, only the
  order is wrong.

``"mean"`` and ``"shuffle"`` are taken over the ``T`` positions of the batch the
hook sees, so run texts of one token length per forward pass (no padding), as
:func:`attnlab.analysis.position.position_study` does.

No weight is touched, so leaving the ``with`` block (normally or through an
exception) restores the model exactly: the hook is removed and the parameters
were never changed.

Why a hook and not ``position_ids``: RoBERTa's positions start after its
``padding_idx`` and its padding row is a real vector in some checkpoints; a
hook on the embedding's *output* is the same for every architecture.

Without positions, self-attention cannot tell where a token is: the model
becomes *permutation-equivariant* (permute the input tokens, the outputs are
permuted the same way). :func:`attnlab.analysis.position.equivariance_gap` measures that.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

from attnlab.core.models import LoadedModel
from attnlab.core.run import Hook, installed


def _torch_model(m: LoadedModel | torch.nn.Module) -> torch.nn.Module:
    return m.model if hasattr(m, "model") and isinstance(m.model, torch.nn.Module) else m


def position_embedding_module(m: LoadedModel | torch.nn.Module) -> torch.nn.Embedding:
    """The absolute position-embedding table of a BERT-family model.

    Args:
        m: a :class:`~attnlab.core.models.LoadedModel` or a transformers model.

    Raises:
        ValueError: the model has no absolute position embeddings (relative or
            rotary positions), so there is nothing to remove.
    """
    model = _torch_model(m)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"expected a LoadedModel or a torch module, got {type(m).__name__}")
    kind = getattr(getattr(model, "config", None), "position_embedding_type", "absolute")
    base = getattr(model, "base_model", model)
    emb = getattr(getattr(base, "embeddings", None), "position_embeddings", None)
    if kind != "absolute" or not isinstance(emb, torch.nn.Embedding):
        raise ValueError(
            f"{type(model).__name__} has no absolute position-embedding table "
            f"(position_embedding_type={kind!r}); no_position works for BERT, RoBERTa, "
            "DistilBERT, ALBERT and ELECTRA models with absolute positions."
        )
    return emb


#: The replacements :func:`replace_positions` knows.
REPLACEMENTS = ("zero", "mean", "shuffle")


def _zeros(output: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(output)


def _mean_vector(output: torch.Tensor) -> torch.Tensor:
    """``[B, T, d] -> [B, T, d]``: every position gets the mean of the ``T`` vectors."""
    return output.mean(dim=-2, keepdim=True).expand_as(output)


def shuffled_order(length: int, seed: int = 0) -> torch.Tensor:
    """The seeded order ``(T,)`` in which ``"shuffle"`` hands out ``T`` position vectors:
    position ``i`` receives the vector of position ``order[i]``. Never the identity for ``T > 1``."""
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(length))
    order = torch.randperm(length, generator=g)
    if length > 1 and torch.equal(order, torch.arange(length)):
        order = torch.roll(order, 1)
    return order


def _replacement(how: str, seed: int):
    if how == "zero":
        return _zeros
    if how == "mean":
        return _mean_vector
    return lambda output: output[..., shuffled_order(output.shape[-2], seed).to(output.device), :]


def position_hook_specs(m: LoadedModel | torch.nn.Module, how: str = "zero", *, seed: int = 0) -> list[Hook]:
    """The hook that replaces the position term, as a spec for :func:`attnlab.core.run.run`
    (``hooks=``) or :func:`replace_positions`: a forward hook on the position-embedding
    table that rewrites its output ``[B or 1, T, d]`` (``how`` and ``seed`` as there)."""
    if how not in REPLACEMENTS:
        raise ValueError(f"how must be one of {REPLACEMENTS}, got {how!r}")
    replace = _replacement(how, seed)
    return [Hook(position_embedding_module(m), lambda module, inputs, output: replace(output))]


@contextlib.contextmanager
def replace_positions(m: LoadedModel | torch.nn.Module, how: str = "zero", *, seed: int = 0) -> Iterator[None]:
    """Run ``m`` with its position term replaced inside a ``with`` block.

    Args:
        m: a :class:`~attnlab.core.models.LoadedModel` or a transformers model.
        how: ``"zero"``, ``"mean"`` or ``"shuffle"`` (see the module documentation).
        seed: the shuffle's seed (the same seed and length give the same order).

    The model is restored on exit, also after an exception: no weight is
    modified and the hook (:func:`position_hook_specs`) is removed.
    """
    specs = position_hook_specs(m, how, seed=seed)
    with installed(_torch_model(m), specs):
        yield m


@contextlib.contextmanager
def no_position(m: LoadedModel | torch.nn.Module) -> Iterator[None]:
    """Run ``m`` without its absolute position embeddings inside a ``with`` block.

    The position term of the embedding sum becomes zero; word and segment
    embeddings, the LayerNorm and every later layer are unchanged. The model is
    restored on exit, also after an exception: no weight is modified and the
    hook is removed. The same as ``replace_positions(m, "zero")``.

    Example::

        with al.no_position(m):
            att = al.attention(m, ["how do you play chess"])
    """
    with replace_positions(m, "zero"):
        yield m
