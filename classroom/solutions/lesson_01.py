"""Lesson 01's worked solutions, for the teacher (the rules of this folder are in its README.md)."""

from __future__ import annotations

import math

import torch

from attnlab.core.checks import check_index
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.course.exercises.lesson_01 import _check_cell, _example_head
from attnlab.data.examples import example_for
from attnlab.scratch.self_attention import tiny_example


def solution_tiny_weight(m: LoadedModel | None = None, row: int = 0, col: int = 1) -> float:
    """Worked solution: dot products of row ``row`` with every key, /2, softmax."""
    row, col = _check_cell(row, col)
    ex = tiny_example()
    q = ex["x"][row] @ ex["w_q"]  # this token's query (4,)
    keys = ex["x"] @ ex["w_k"]  # every token's key (3, 4)
    scores = [float(q @ keys[j]) / math.sqrt(4) for j in range(3)]
    exps = [math.exp(s) for s in scores]
    return exps[col] / sum(exps)


def solution_strongest_key(m: LoadedModel, layer: int = 0, head: int = 0, query: int = 1) -> str:
    weights, tokens = _example_head(m, layer, head)
    query = check_index(query, len(tokens), "query token")
    return tokens[int(weights[query].argmax())]


def solution_diagonal_head(m: LoadedModel) -> tuple[int, int]:
    maps = attention(m, [example_for(m)])[0]  # (L, H, n, n)
    diag = maps.diagonal(dim1=-2, dim2=-1).mean(-1)  # (L, H)
    layer, head = divmod(int(diag.argmax()), diag.shape[1])
    return layer, head


def solution_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The teacher's solution: scores ``(..., T_q, T_k)``, scaled by ``sqrt(d_k)``, hidden keys at -inf,
    softmax over the keys, then the weighted values ``(..., T_q, d_v)``."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # a hidden key gets weight 0
    weights = torch.softmax(scores, dim=-1)  # each row sums to 1
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)

