"""What removing the position embeddings does to each head (the study of lesson 07).

The intervention itself is :func:`attnlab.core.position.no_position`; here are
the measurements made with it:

* :func:`position_study` - how much every head's map changes without
  positions, one similarity per text and head (:class:`PositionStudy`).
* :func:`output_vectors`, :func:`output_similarity` - the model's last-layer
  output vectors with and without positions.
* :func:`equivariance_gap` - whether reordering the input only reorders the
  outputs (it does, exactly, once positions are gone).

The figures are in :mod:`attnlab.viz.position_plots`; the article's argument is
judged in :mod:`attnlab.course.claims.position`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnlab.analysis.compare import similarity
from attnlab.analysis.stats import Interval, bootstrap_mean
from attnlab.core.checks import check_positive_int
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.core.position import no_position
from attnlab.data.corpus import Query


def _texts(texts: Sequence[str | Query]) -> list[str]:
    out = [getattr(t, "text", t) for t in texts]
    if not out:
        raise ValueError("texts is empty: pass at least one text")
    return out


# --------------------------------------------------------------------------- per-head change


@dataclass
class PositionStudy:
    """Similarity of every head's map with and without position embeddings.

    Attributes:
        similarity: ``[N, L, H]`` - ``sim(with, without)`` per text and head
            (see :func:`attnlab.analysis.compare.similarity`).
        texts: the N texts.
    """

    similarity: np.ndarray
    texts: list[str]
    model_name: str = ""

    @property
    def n_texts(self) -> int:
        return len(self.texts)

    def change(self, **boot) -> Interval:
        """``1 - similarity`` per head (arrays ``[L, H]``) with a bootstrap interval over texts."""
        return bootstrap_mean(1.0 - self.similarity, **boot)


def position_study(m: LoadedModel, texts: Sequence[str | Query], *, batch_size: int = 64,
                   progress: bool = False) -> PositionStudy:
    """How much each head's map changes when the position embeddings are removed.

    The tokens are the same with and without positions, so the maps are
    compared position by position (position and token space coincide).

    Args:
        m: a loaded model.
        texts: the queries (strings or :class:`~attnlab.data.corpus.Query`).
        batch_size: texts per forward pass.

    Returns:
        :class:`PositionStudy` with ``similarity`` ``[N, L, H]``.
    """
    texts = _texts(texts)
    batch_size = check_positive_int(batch_size, "batch_size")
    with_pos = attention(m, texts, batch_size=batch_size, progress=progress)
    with no_position(m):
        without = attention(m, texts, batch_size=batch_size, progress=progress)
    sims = [similarity(with_pos[i], without[i]).numpy() for i in range(len(texts))]  # N x (L, H)
    return PositionStudy(np.stack(sims), texts, m.name)  # (N, L, H)


def with_and_without(m: LoadedModel, text: str) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """``(with [L, H, n, n], without [L, H, n, n], tokens)``: one text's maps with
    and without position embeddings."""
    att = attention(m, [text])
    with no_position(m):
        att0 = attention(m, [text])
    return att[0], att0[0], att.tokens[0]


# --------------------------------------------------------------------------- outputs


def output_vectors(m: LoadedModel, text: str) -> torch.Tensor:
    """The last layer's output vectors ``[n, d]`` of one text (special tokens included)."""
    inputs = m.encode([text])
    with torch.no_grad():
        out = m.model(**inputs)
    return out.last_hidden_state[0].float()  # (n, d)


def output_similarity(m: LoadedModel, texts: Sequence[str | Query]) -> np.ndarray:
    """Cosine similarity of each text's output vectors with vs without positions.

    Returns:
        ``(N,)``: per text, the mean over tokens of the cosine between the two
        output vectors of each token.
    """
    out = []
    for t in _texts(texts):
        h = output_vectors(m, t)  # (n, d)
        with no_position(m):
            h0 = output_vectors(m, t)  # (n, d)
        out.append(torch.nn.functional.cosine_similarity(h, h0, dim=-1).mean().item())
    return np.asarray(out)


def equivariance_gap(m: LoadedModel, original: str, permuted: str, perm) -> float:
    """Largest difference between the permuted text's output vectors and the
    original's output vectors permuted the same way.

    Zero (up to rounding) means the model only saw a bag of tokens: the output
    of each token does not depend on where it stands.

    Args:
        perm: token permutation, ``new_tokens[i] == old_tokens[perm[i]]``.
    """
    h_old = output_vectors(m, original)  # (n, d)
    h_new = output_vectors(m, permuted)  # (n, d)
    if h_old.shape != h_new.shape:
        raise ValueError(f"the texts have {h_old.shape[0]} and {h_new.shape[0]} tokens: not a permutation")
    p = torch.as_tensor(np.asarray(perm), dtype=torch.long)  # (n,)
    return float((h_new - h_old[p]).abs().max())
