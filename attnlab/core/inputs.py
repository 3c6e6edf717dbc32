"""Model inputs: the one tokeniser call.

:func:`encode` tokenises a batch of texts, :func:`encode_ids` wraps token ids
made earlier; both give an :class:`Encoded` batch, ``(B, T)`` tensors on the
model's device, ready for :func:`attnlab.core.run.run` (which re-exports both).

This module sits below :mod:`attnlab.core.models`: it needs only what a loaded
model says about its tokenizer (:class:`ModelWithTokenizer`, which every
:class:`~attnlab.core.models.LoadedModel` is), so ``LoadedModel.encode`` can
call it without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import torch


class ModelWithTokenizer(Protocol):
    """What :func:`encode` reads of a model (a :class:`~attnlab.core.models.LoadedModel` has it all)."""

    tokenizer: Any
    model_type: str
    max_tokens: int

    @property
    def device(self) -> torch.device: ...


def uses_token_types(m: ModelWithTokenizer) -> bool:
    """Whether ``m`` takes ``token_type_ids`` (segments): every architecture here except DistilBERT."""
    return m.model_type != "distilbert"


@dataclass
class Encoded:
    """A batch of model inputs.

    Attributes:
        input_ids: ``(B, T)`` token ids, padded on the right.
        attention_mask: ``(B, T)``, 1 on real tokens, 0 on padding.
        token_type_ids: ``(B, T)`` segment ids, or None for a model without segments.
        lengths: ``(B,)`` real token count of each text, special tokens included (on the CPU).
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    token_type_ids: torch.Tensor | None
    lengths: torch.Tensor

    @property
    def inputs(self) -> dict[str, torch.Tensor]:
        """The keyword arguments of the model's forward."""
        out = {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        if self.token_type_ids is not None:
            out["token_type_ids"] = self.token_type_ids
        return out

    def __len__(self) -> int:
        return self.input_ids.shape[0]


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``t`` on ``device``; to a GPU through pinned host memory with a non-blocking copy."""
    if t.device == device:
        return t
    if device.type == "cuda" and t.device.type == "cpu":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def _assemble(m: ModelWithTokenizer, input_ids: torch.Tensor, attention_mask: torch.Tensor,
              token_type_ids: torch.Tensor | None, device: torch.device | None) -> Encoded:
    device = m.device if device is None else torch.device(device)
    if uses_token_types(m):
        token_type_ids = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids
    else:
        token_type_ids = None
    lengths = attention_mask.sum(dim=1)  # (B,), on the host: no device synchronisation to read it
    return Encoded(
        input_ids=to_device(input_ids, device),
        attention_mask=to_device(attention_mask, device),
        token_type_ids=None if token_type_ids is None else to_device(token_type_ids, device),
        lengths=lengths,
    )


def encode(
    m: ModelWithTokenizer,
    texts: Sequence[str],
    pairs: Sequence[str] | None = None,
    *,
    truncate: bool = False,
    device: torch.device | str | None = None,
) -> Encoded:
    """Tokenise a batch of texts (the package's one tokeniser call).

    Args:
        m: the loaded model (its tokenizer, limit and device).
        texts: ``B`` strings. No validation here: use
            :func:`attnlab.core.extract.check_texts` first.
        pairs: optional second segments, one per text.
        truncate: cut texts to the model's limit instead of keeping them whole.
        device: where the tensors go (default: the model's device).

    Returns:
        :class:`Encoded`, padded to the longest text, ``(B, T)`` tensors.
    """
    args = (list(texts), list(pairs)) if pairs is not None else (list(texts),)
    enc = m.tokenizer(
        *args, padding=True, truncation=truncate, max_length=m.max_tokens if truncate else None,
        return_tensors="pt",
    )
    return _assemble(m, enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids"), device)


def encode_ids(
    m: ModelWithTokenizer,
    ids: Sequence[Sequence[int]] | torch.Tensor,
    *,
    device: torch.device | str | None = None,
) -> Encoded:
    """Model inputs for token ids made earlier (pre-tokenised input; special tokens included).

    Args:
        ids: a ``(B, T)`` integer tensor, or ``B`` lists of ids; lists of different
            lengths are padded on the right with the tokenizer's pad id.

    Returns:
        :class:`Encoded`; segments are all 0.
    """
    if isinstance(ids, torch.Tensor):
        if ids.dim() != 2:
            raise ValueError(f"token ids must be a (B, T) tensor, got shape {tuple(ids.shape)}")
        input_ids = ids.long()
        mask = torch.ones_like(input_ids)
    else:
        rows = [list(r) for r in ids]
        if not rows:
            raise ValueError("no token ids: pass at least one row")
        width = max(len(r) for r in rows)
        if all(len(r) == width for r in rows):
            input_ids = torch.tensor(rows, dtype=torch.long)  # (B, T)
            mask = torch.ones_like(input_ids)
        else:
            pad = m.tokenizer.pad_token_id or 0
            input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros_like(input_ids)
            for i, r in enumerate(rows):
                input_ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
                mask[i, : len(r)] = 1
    return _assemble(m, input_ids, mask, None, device)
