"""Lesson 06's follower labels, three-way: position / content / cannot tell.

Each head's label comes from its own interval over queries of ``position
similarity - token similarity`` under one kind of damage
(:meth:`attnlab.analysis.compare.PerturbationStudy.followers`): "position"
when the whole interval lies above the margin, "content" when it lies below
minus the margin, and otherwise "cannot tell": these queries do not place the
head (it is the same in both spaces, or too noisy). Both readings of the rows
can be labelled (``keys``: all keys, or the content keys with the special
tokens left out; there each row of a map counts by its content mass, so a
row resting 99% on a special token counts a hundredth:
:func:`attnlab.analysis.compare.content_similarity`). The share of
content-followers, with its interval over queries, is
:meth:`~attnlab.analysis.compare.PerturbationStudy.follower_share`.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.compare import CONTENT, FOLLOWER_MARGIN, NEITHER, POSITION, PerturbationStudy
from attnlab.core.distributions import ALL_KEYS
from attnlab.course.verdicts import UNSURE

#: The three labels.
FOLLOWER_WORDS = (POSITION, CONTENT, UNSURE)


def follower_labels(study: PerturbationStudy, kind: str = "both", margin: float = FOLLOWER_MARGIN,
                    keys: str = ALL_KEYS, **boot) -> np.ndarray:
    """``[L, H]``: ``"position"``, ``"content"`` or ``"cannot tell"`` from each head's interval over queries."""
    labels = study.followers(kind, margin, keys, **boot)  # (L, H): position / content / neither
    return np.where(labels == NEITHER, UNSURE, labels).astype(object)


def label_counts(labels: np.ndarray) -> dict[str, int]:
    """``{label: heads}`` over :data:`FOLLOWER_WORDS` (zeros included)."""
    flat = np.asarray(labels, dtype=object).ravel().tolist()
    return {word: flat.count(word) for word in FOLLOWER_WORDS}
