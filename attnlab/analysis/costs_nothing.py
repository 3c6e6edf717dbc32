"""One tolerance for "costs nothing": a share of the distance between two different texts.

Lessons 11 (pruning heads) and 13 (replacing maps by their mean) both ask when a change
of the model "costs nothing": when it moves a text's sentence vector (the mean of the
last hidden states over its tokens) by a distance ``1 - cos`` that does not matter. An
absolute number such as 0.01 means little on its own: on one encoder every pair of
texts is 0.02 apart, on another 0.6. So the tolerance is stated in units a reader can
picture:

    tolerance = share x (mean distance 1 - cos between the sentence vectors of two different texts)

computed per model on the texts at hand. With the default share of 5%, a change "costs
nothing" when it moves a text by at most a twentieth of the way to an unrelated text.
:data:`SHARE_GRID` (2, 5, 10, 20%) is the sensitivity table every verdict built on it
reports.

:func:`distance_to_others` gives, for each text, its mean distance to every *other*
text; their mean is the mean over all pairs (:func:`mean_text_distance`), computed
from the Gram matrix of the unit vectors in one product instead of a double loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnlab.analysis.interventions import sentence_vectors
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.run import encode

#: "costs nothing": at most this share of the mean distance between two different texts
TOLERANCE_SHARE = 0.05
#: the shares of every sensitivity table built on it
SHARE_GRID = (0.02, 0.05, 0.1, 0.2)


def distance_to_others(vectors) -> np.ndarray:
    """``(N,)``: each text's mean distance ``1 - cos`` to the N - 1 other texts' vectors.

    Args:
        vectors: ``(N, d)`` sentence vectors, N >= 2 (any non-zero length).
    """
    v = torch.as_tensor(np.asarray(vectors, dtype=np.float64))
    if v.ndim != 2 or v.shape[0] < 2:
        raise ValueError(f"need vectors [N, d] with N >= 2, got shape {tuple(v.shape)}")
    unit = v / v.norm(dim=1, keepdim=True).clamp_min(1e-300)  # (N, d)
    cos_sum = unit @ unit.sum(dim=0)  # (N,): sum over all j of cos(i, j), the diagonal (1) included
    n = v.shape[0]
    return (1.0 - (cos_sum - 1.0) / (n - 1)).numpy()


def mean_text_distance(vectors) -> float:
    """The mean of ``1 - cos`` over all pairs of different texts (``i != j``)."""
    return float(distance_to_others(vectors).mean())


@dataclass(frozen=True)
class CostsNothing:
    """The tolerance of "costs nothing" for one model and one set of texts.

    Attributes:
        distance: mean ``1 - cos`` between the sentence vectors of two different texts.
        share: the share of it that "costs nothing" (default :data:`TOLERANCE_SHARE`).
        n_texts: the texts the distance was measured on.
    """

    distance: float
    share: float = TOLERANCE_SHARE
    n_texts: int = 0

    @property
    def tolerance(self) -> float:
        """``share x distance``: the largest ``1 - cos`` that still costs nothing."""
        return self.at(self.share)

    def at(self, share: float) -> float:
        """The tolerance for another ``share`` (for sensitivity tables)."""
        return float(share) * self.distance

    def grid(self, shares: Sequence[float] = SHARE_GRID) -> dict[float, float]:
        """``{share: tolerance}`` for every share of the grid."""
        return {float(s): self.at(s) for s in shares}

    def describe(self) -> str:
        """One line: the tolerance, and what it is a share of."""
        return _("costs nothing: 1 - cos at most {tol:.5f} = {share:.0%} of the mean distance between two "
                 "different texts ({distance:.4f}, {n} texts)").format(
            tol=self.tolerance, share=self.share, distance=self.distance, n=self.n_texts)


def costs_nothing(vectors, share: float = TOLERANCE_SHARE) -> CostsNothing:
    """The tolerance from ``(N, d)`` sentence vectors of the texts at hand."""
    v = np.asarray(vectors, dtype=float)
    return CostsNothing(mean_text_distance(v), float(share), int(v.shape[0]))


def text_vectors(m: LoadedModel, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
    """``(N, d)``: the full model's sentence vectors of ``texts`` (mean of the last hidden
    states over each text's real tokens, :func:`attnlab.analysis.interventions.sentence_vectors`)."""
    texts = list(texts)
    with torch.no_grad():
        parts = [sentence_vectors(m, encode(m, texts[s:s + batch_size]).inputs).double().cpu()
                 for s in range(0, len(texts), batch_size)]
    return torch.cat(parts).numpy()


def for_texts(m: LoadedModel, texts: Sequence[str], share: float = TOLERANCE_SHARE, *,
              batch_size: int = 64) -> CostsNothing:
    """The tolerance of "costs nothing" for model ``m`` on ``texts``."""
    return costs_nothing(text_vectors(m, texts, batch_size=batch_size), share)
