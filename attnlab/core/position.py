"""Removing the absolute position embeddings, and what that does to each head.

A BERT-family model builds its input as ``LayerNorm(word + position + segment)``
(ALBERT and ELECTRA then project it to the hidden size). :func:`no_position`
removes the position term, as if every position vector were zero, by a
forward hook that replaces the output of ``embeddings.position_embeddings``
with zeros. No weight is touched, so leaving the ``with`` block (normally or
through an exception) restores the model exactly: the hook is removed and the
parameters were never changed.

Why a hook and not ``position_ids``: RoBERTa's positions start after its
``padding_idx`` and its padding row is a real vector in some checkpoints; a
hook on the embedding's *output* is the same for every architecture.

Without positions, self-attention cannot tell where a token is: the model
becomes *permutation-equivariant* (permute the input tokens, the outputs are
permuted the same way). :func:`equivariance_gap` measures that.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

from attnlab.core.models import LoadedModel


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


def _zeros(module: torch.nn.Module, inputs, output: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(output)


@contextlib.contextmanager
def no_position(m: LoadedModel | torch.nn.Module) -> Iterator[None]:
    """Run ``m`` without its absolute position embeddings inside a ``with`` block.

    The position term of the embedding sum becomes zero; word and segment
    embeddings, the LayerNorm and every later layer are unchanged. The model is
    restored on exit, also after an exception: no weight is modified and the
    hook is removed.

    Example::

        with al.no_position(m):
            att = al.attention(m, ["how do you play chess"])
    """
    handle = position_embedding_module(m).register_forward_hook(_zeros)
    try:
        yield m
    finally:
        handle.remove()
