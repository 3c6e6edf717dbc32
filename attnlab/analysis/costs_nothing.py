"""One tolerance for "costs nothing": a share of the distance between two different texts, in plain units.

Lessons 11 (pruning heads) and 13 (replacing maps by their mean) both ask when a change
of the model "costs nothing": when it moves a text's sentence vector (the mean of the
last hidden states over its tokens) by a distance ``1 - cos`` that does not matter. An
absolute number such as 0.01 means little on its own: on one encoder every pair of
texts is 0.02 apart, on another 0.6. So the tolerance is stated in units a reader can
picture:

    tolerance = share x (mean distance 1 - cos between the sentence vectors of two different texts)

computed per model on the texts at hand. :data:`SHARE_GRID` (2, 5, 10, 20%) is the
sensitivity table every verdict built on it reports.

**In plain units.** ``1 - cos`` is not a distance a reader can picture: for unit vectors it
is half the squared distance between them (``1 - cos = chord^2 / 2``), so a share of it is
not the same share of the way. A move whose ``1 - cos`` is ``share`` times the mean ``1 - cos``
between two texts is ``sqrt(share)`` times the root-mean-square distance between their unit
vectors (:meth:`CostsNothing.chord_share`): 5% of the ``1 - cos`` is **22% of the distance**,
10% is 32%, 20% is 45%. The verdicts built on it compare a **mean over texts** with the
tolerance (an interval over texts), not every text on its own, and say so.

:func:`distance_to_others` gives, for each text, its mean distance to every *other*
text; their mean is the mean over all pairs (:func:`mean_text_distance`), computed
from the Gram matrix of the unit vectors in one product instead of a double loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnlab.analysis.interventions import sentence_vectors
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.run import encode

#: "costs nothing": at most this share of the mean 1 - cos between two different texts (5%: 22% of the distance)
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

    @staticmethod
    def chord_share(share: float) -> float:
        """The share of the root-mean-square distance between two texts' unit vectors that a move
        of ``share`` x their mean ``1 - cos`` covers: ``sqrt(share)`` (``1 - cos = chord^2 / 2``)."""
        return math.sqrt(float(share))

    @property
    def rms_chord(self) -> float:
        """The root-mean-square distance between two different texts' unit vectors, ``sqrt(2 x distance)``."""
        return math.sqrt(2.0 * self.distance)

    @property
    def degrees(self) -> float:
        """The angle of a move at the tolerance, in degrees: ``arccos(1 - tolerance)``."""
        return math.degrees(math.acos(max(-1.0, 1.0 - self.tolerance)))

    def describe(self) -> str:
        """One line: the tolerance, what it is a share of, in ``1 - cos`` and in distance, and that it
        applies to the mean over texts."""
        return _("costs nothing: on average over the texts, 1 - cos at most {tol:.5f} ({share:.0%} of the mean "
                 "1 - cos between two different texts, {distance:.4f}, {n} texts): a move of {chord:.0%} of the "
                 "distance between their unit vectors, {degrees:.1f} degrees").format(
            tol=self.tolerance, share=self.share, distance=self.distance, n=self.n_texts,
            chord=self.chord_share(self.share), degrees=self.degrees)


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
