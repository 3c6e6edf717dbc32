"""Exercises of lesson 07 (removing position embeddings).

1. :func:`check_embedding_without_positions` - recompute the embedding output
   without the position term by hand.
2. :func:`check_order_matters` - does word order still matter without positions?
3. :func:`check_most_position_dependent_head` - which head changes most when
   positions are removed?
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnlab.analysis.perturb import example_perturbations, try_token_permutation
from attnlab.analysis.position import PositionStudy, content_reversal, equivariance_gap, position_study
from attnlab.core.models import LoadedModel
from attnlab.core.position import no_position
from attnlab.core.run import encode
from attnlab.data.corpus import texts as corpus_texts
from attnlab.data.examples import example_for

from . import NOT_YET as _NOT_YET, Feedback, check_array, check_choice, check_head, exercise

#: Largest output difference (after undoing the permutation) still counted as "the same outputs".
SAME_OUTPUTS = 1e-4


@exercise
def check_embedding_without_positions(m: LoadedModel, answer: Any, text: str | None = None) -> Feedback:
    """``answer``: ``[n, e]`` embedding output of ``text`` without the position term."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    text = text or example_for(m)
    emb = m.model.base_model.embeddings
    enc = encode(m, [text]).inputs
    kwargs = {"input_ids": enc["input_ids"]}
    if "token_type_ids" in enc:
        kwargs["token_type_ids"] = enc["token_type_ids"]
    with no_position(m), torch.no_grad():
        expected = emb(**kwargs)[0].numpy()  # (n, e): the model's own embedding module, positions zeroed
    return check_array(answer, expected, atol=1e-4, what="your embedding output",
                       hint="word_embeddings(ids) + token_type_embeddings(types), then the embedding LayerNorm.")


def _expected_order_matters(m: LoadedModel) -> bool:
    """The answer the check expects: False when the reordered example's outputs (its syntactic move)
    are the original's, permuted (largest gap at most :data:`SAME_OUTPUTS`), True otherwise."""
    p = example_perturbations(m.language)["syntactic"]
    perm, _ = try_token_permutation(m, p)
    perm = perm if perm is not None else content_reversal(m, p.source.text)
    with no_position(m):
        gap = equivariance_gap(m, p.source.text, perm)
    return bool(gap > SAME_OUTPUTS)


@exercise
def check_order_matters(m: LoadedModel, answer: Any) -> Feedback:
    """``answer``: True or False - without position embeddings, does a reordered query
    give different token outputs (beyond moving them along)?"""
    if answer is None:
        return Feedback(False, _NOT_YET)
    if not isinstance(answer, (bool, np.bool_)):
        return Feedback(False, f"answer True or False, got {answer!r}")
    return check_choice(bool(answer), _expected_order_matters(m), what="your answer",
                        hint="Compare equivariance_gap with and without no_position.")


def _expected_most_position_dependent_head(m: LoadedModel, study: PositionStudy | None = None,
                                           n: int = 30) -> tuple[int, int]:
    """The answer the check expects: 0-based (layer, head) with the largest change when the positions are zeroed."""
    if study is None:
        study = position_study(m, corpus_texts(m.language, n), interventions=("zero",))
    change = 1.0 - study.similarity["zero"].mean(axis=0)  # (L, H)
    layer, head = np.unravel_index(int(np.argmax(change)), change.shape)
    return (int(layer), int(head))


@exercise
def check_most_position_dependent_head(m: LoadedModel, answer: Any, study: PositionStudy | None = None) -> Feedback:
    """``answer``: 0-based ``(layer, head)`` whose map changes most without positions."""
    if answer is None:
        return Feedback(False, _NOT_YET)
    return check_head(answer, _expected_most_position_dependent_head(m, study),
                      hint="np.unravel_index(argmax) of study.change('zero').estimate.")
