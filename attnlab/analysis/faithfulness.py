"""A faithfulness scoreboard: which reading of attention tracks what the model does?

For each query, every non-special token gets a score from four *views*:

* ``raw``: the attention it receives in the last layer, heads averaged, averaged
  over all query rows;
* ``norm``: the same with the last layer's norm-based weights
  ``||sum_h alpha_ij^h f_h(x_j)||`` (Kobayashi et al. 2020), each row rescaled to 1;
* ``rollout``: the column of the rollout after the last layer (Abnar & Zuidema
  2020), averaged over rows;
* ``value_zeroing``: zero the token's value vectors in every layer and head and
  measure how far the other tokens' final representations move (mean cosine
  distance; after Mohebbi et al. 2023, who do it layer by layer).

Each view is compared with the token's **effect**: remove the token from the
input (leave one token out) and measure the cosine distance of the sentence
representation (the mean of the last hidden states). The Spearman correlation
of scores and effects, per query, says how well a view ranks tokens by what
they do; the mean over queries gets a bootstrap interval over queries.

Only numbers here; the verdicts are in :mod:`attnlab.course.claims.attention_limits`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from attnlab.analysis.interventions import cosine_distance, sentence_vectors, zero_values
from attnlab.analysis.norm_attention import norm_attention, row_shares
from attnlab.analysis.rollout import rollout
from attnlab.analysis.stats import Interval, bootstrap_mean, correlation
from attnlab.core.extract import check_texts
from attnlab.core.models import LoadedModel

#: The views, in the order of the scoreboard.
VIEWS = ("raw", "norm", "rollout", "value_zeroing")
VIEW_LABELS = {"raw": "raw attention", "norm": "norm-based", "rollout": "rollout", "value_zeroing": "value zeroing"}
#: Fewest non-special tokens a query needs (a rank correlation needs 3 values).
MIN_TOKENS = 3


@dataclass
class QueryScores:
    """One query's tokens (non-special), each view's score and each token's effect."""

    text: str
    tokens: list[str]
    positions: list[int]
    scores: dict[str, np.ndarray]  # view -> (k,)
    effect: np.ndarray  # (k,): cosine distance of the sentence representation without the token


@dataclass
class Scoreboard:
    """Spearman correlation between each view's scores and the leave-one-out effect, per query.

    Attributes:
        rho: view -> ``(N,)``, NaN where a view or the effect is constant within a query.
        queries: the scores behind each correlation.
        skipped: texts with fewer than :data:`MIN_TOKENS` non-special tokens.
    """

    rho: dict[str, np.ndarray]
    queries: list[QueryScores] = field(default_factory=list)
    skipped: int = 0

    def interval(self, view: str, *, seed: int = 0) -> Interval:
        """Mean Spearman rho of one view with its bootstrap interval over queries."""
        return bootstrap_mean(self.rho[_check_view(view)], seed=seed)

    def intervals(self, *, seed: int = 0) -> dict[str, Interval]:
        return {view: self.interval(view, seed=seed) for view in VIEWS}

    def paired(self, a: str, b: str, *, seed: int = 0) -> Interval:
        """Mean over queries of ``rho_a - rho_b`` (the same queries), with its interval."""
        return bootstrap_mean(self.rho[_check_view(a)] - self.rho[_check_view(b)], seed=seed)

    def ranking(self) -> list[str]:
        """Views from the best mean rho to the worst."""
        return sorted(VIEWS, key=lambda v: -float(np.nanmean(self.rho[v])))


def _check_view(view: str) -> str:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    return view


def leave_one_out(m: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[int]) -> np.ndarray:
    """``(k,)``: cosine distance of the sentence representation when each listed token is removed.

    Args:
        inputs: one text's encoding, ``(1, T)`` tensors without padding.
        positions: the token positions to remove, one at a time.
    """
    base = sentence_vectors(m, inputs)  # (1, d)
    keep = [[t for t in range(inputs["input_ids"].shape[1]) if t != j] for j in positions]  # k x (T - 1)
    index = torch.tensor(keep, device=inputs["input_ids"].device)  # (k, T - 1)
    shorter = {name: value[0][index] for name, value in inputs.items()}  # (k, T - 1) each
    return cosine_distance(sentence_vectors(m, shorter), base).cpu().numpy()


def value_zeroing(m: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[int]) -> np.ndarray:
    """``(k,)``: for each listed token, zero its value vectors in every layer and head and return
    the mean cosine distance of the *other* tokens' last hidden states from the unchanged run."""
    k, t = len(positions), inputs["input_ids"].shape[1]
    copies = {name: value.expand(k, -1) for name, value in inputs.items()}  # (k, T)
    chosen = torch.zeros(k, t, dtype=torch.bool)  # (k, T): copy r zeroes token positions[r]
    chosen[torch.arange(k), torch.tensor(list(positions))] = True
    with torch.no_grad():
        base = m.model(**inputs).last_hidden_state  # (1, T, d)
        with zero_values(m, chosen):
            changed = m.model(**copies).last_hidden_state  # (k, T, d)
    distance = cosine_distance(changed, base.expand(k, -1, -1))  # (k, T)
    others = (~chosen).float()  # (k, T)
    return ((distance * others).sum(dim=1) / others.sum(dim=1)).cpu().numpy()


def query_scores(m: LoadedModel, text: str) -> QueryScores | None:
    """Every view's score and the leave-one-out effect of each non-special token of ``text``
    (None when it has fewer than :data:`MIN_TOKENS` of them)."""
    inputs = m.encode([text])
    tokens = m.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    positions = [j for j, tok in enumerate(tokens) if tok not in m.special_tokens]
    if len(positions) < MIN_TOKENS:
        return None
    na = norm_attention(m, [text])
    last = na.weights[0, -1]  # (H, T, T)
    received = {
        "raw": last.mean(dim=0).mean(dim=0),  # (T,): heads, then query rows averaged
        "norm": row_shares(na.combined[0, -1]).mean(dim=0),  # (T,)
        "rollout": rollout(na.weights[0])[-1].mean(dim=0),  # (T,)
    }
    scores = {view: values[positions].numpy() for view, values in received.items()}
    scores["value_zeroing"] = value_zeroing(m, inputs, positions)
    effect = leave_one_out(m, inputs, positions)
    return QueryScores(text=text, tokens=[tokens[j] for j in positions], positions=positions,
                       scores=scores, effect=effect)


def scoreboard(m: LoadedModel, texts: Sequence[str] | str) -> Scoreboard:
    """The faithfulness scoreboard of ``texts`` (see the module docstring)."""
    texts, _ = check_texts(m, texts)
    queries, skipped = [], 0
    for text in texts:
        q = query_scores(m, text)
        if q is None:
            skipped += 1
        else:
            queries.append(q)
    if not queries:
        raise ValueError(f"no text has {MIN_TOKENS} or more non-special tokens: use longer texts")
    rho = {view: np.array([correlation(q.scores[view], q.effect) for q in queries]) for view in VIEWS}
    return Scoreboard(rho=rho, queries=queries, skipped=skipped)
