"""Lesson 07's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

import numpy as np
import torch

from attnlab.core.models import LoadedModel
from attnlab.core.run import encode
from attnlab.course.exercises import lesson_07 as checks
from attnlab.data.examples import example_for

# where a solution is the check's own computation of the answer, it is that function
solution_order_matters = checks._expected_order_matters
solution_most_position_dependent_head = checks._expected_most_position_dependent_head


def solution_embedding_without_positions(m: LoadedModel, text: str | None = None) -> np.ndarray:
    """Worked solution: ``LayerNorm(word + segment)`` for ``text`` (default: the example), ``[n, e]``."""
    text = text or example_for(m)
    emb = m.model.base_model.embeddings
    enc = encode(m, [text]).inputs
    with torch.no_grad():
        x = emb.word_embeddings(enc["input_ids"])  # (1, n, e)
        if "token_type_ids" in enc and getattr(emb, "token_type_embeddings", None) is not None:
            x = x + emb.token_type_embeddings(enc["token_type_ids"])  # (1, n, e)
        return emb.LayerNorm(x)[0].numpy()  # (n, e)
