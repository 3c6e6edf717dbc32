"""What removing or scrambling the position embeddings does to each head (lesson 07).

The interventions are :func:`attnlab.core.position.replace_positions`
(``"zero"``: the article's removal; ``"mean"`` and ``"shuffle"``: controls that
remove or scramble the order while keeping inputs like those of training).
Here are the measurements made with them:

* :func:`position_study` - for every text, head and intervention: how much the
  map changes, how much of the weight lands on [CLS]/[SEP], and how much
  weight moves at all (:class:`PositionStudy`).
* :func:`correlation_by_layer_over_queries` - a rank correlation across the
  heads of each layer between two per-head means over the same queries, with
  intervals from resampling the queries (heads of different layers are never
  pooled into one; :func:`pooled_correlation_over_queries` pools them, for
  reference only).
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
from tqdm.auto import tqdm

from attnlab.core.language import _
from attnlab.analysis.compare import similarity
from attnlab.analysis.stats import (
    Interval,
    bootstrap,
    bootstrap_correlation_of_means,
    bootstrap_mean,
)
from attnlab.core.checks import check_positive_int
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.core.position import REPLACEMENTS, no_position, replace_positions
from attnlab.core.run import encode, run
from attnlab.data.corpus import Query


def _texts(texts: Sequence[str | Query]) -> list[str]:
    out = [getattr(t, "text", t) for t in texts]
    if not out:
        raise ValueError("texts is empty: pass at least one text")
    return out


# --------------------------------------------------------------------------- per-head change


@dataclass
class PositionStudy:
    """Every head's map under each position intervention, compared with the normal map.

    Attributes:
        similarity: ``{how: [N, L, H]}`` - ``sim(normal, intervened)`` per text and
            head (see :func:`attnlab.analysis.compare.similarity`), for ``how`` in
            ``"zero"``, ``"mean"``, ``"shuffle"``.
        special_mass: ``{"normal" or how: [N, L, H]}`` - mean over query rows of the
            weight on [CLS] and [SEP].
        moved_mass: ``{how: [N, L, H]}`` - mean over query rows of the weight that
            moves (total variation distance between the two rows).
        texts: the N texts.
    """

    similarity: dict[str, np.ndarray]
    special_mass: dict[str, np.ndarray]
    moved_mass: dict[str, np.ndarray]
    texts: list[str]
    model_name: str = ""

    @property
    def n_texts(self) -> int:
        return len(self.texts)

    @property
    def interventions(self) -> list[str]:
        return list(self.similarity)

    def values(self, how: str) -> np.ndarray:
        """``[N, L, H]`` similarities under one intervention, one row per text."""
        return self._values(how)

    def _values(self, how: str) -> np.ndarray:
        if how not in self.similarity:
            raise ValueError(f"intervention {how!r} was not run; have {self.interventions}")
        return self.similarity[how]

    def change(self, how: str = "zero", **boot) -> Interval:
        """``1 - similarity`` per head (arrays ``[L, H]``) with a bootstrap interval over texts."""
        return bootstrap_mean(1.0 - self._values(how), **boot)

    def excess(self, how: str = "zero", control: str = "mean", **boot) -> Interval:
        """How much more ``how`` changes each head than ``control`` (arrays ``[L, H]``),
        paired by text, with a bootstrap interval over texts."""
        return bootstrap_mean(self._values(control) - self._values(how), **boot)

    def special_gain(self, how: str = "zero", **boot) -> Interval:
        """Weight on [CLS]/[SEP] under ``how`` minus normally (arrays ``[L, H]``)."""
        self._values(how)
        return bootstrap_mean(self.special_mass[how] - self.special_mass["normal"], **boot)

    def special_share_of_moved(self, how: str = "zero", **boot) -> Interval:
        """Of the weight that moves under ``how``, the share that lands on [CLS]/[SEP]
        (arrays ``[L, H]``): mean gain on the special tokens / mean moved weight. Near 1:
        the head falls back to the special tokens (a disruption, not a new pattern)."""
        self._values(how)
        gain = self.special_mass[how] - self.special_mass["normal"]  # (N, L, H)
        pairs = np.stack([gain, self.moved_mass[how]], axis=1)  # (N, 2, L, H)
        return bootstrap(pairs, lambda v: v[:, 0].mean(axis=0) / np.maximum(v[:, 1].mean(axis=0), 1e-12), **boot)


def _lengths(m: LoadedModel, texts: list[str]) -> list[int]:
    return [len(m.tokenizer(t)["input_ids"]) for t in texts]


def _special_columns(m: LoadedModel, tokens: list[str]) -> torch.Tensor:
    """``(n,)`` 1.0 where a token is [CLS]/[SEP]-like (a special token of the tokenizer)."""
    special = set(m.tokenizer.all_special_tokens)
    return torch.tensor([1.0 if t in special else 0.0 for t in tokens], dtype=torch.float64)


def position_study(m: LoadedModel, texts: Sequence[str | Query], *, interventions: Sequence[str] = REPLACEMENTS,
                   seed: int = 0, batch_size: int = 64, chunk: int = 64, progress: bool = False,
                   precision: str = "fp32") -> PositionStudy:
    """How much each head's map changes when the position embeddings are replaced.

    Texts are run in groups of one token length, so no padding enters the mean
    vector or the shuffle. The tokens are the same with and without the
    intervention, so the maps are compared position by position (position and
    token space coincide).

    Args:
        m: a loaded model.
        texts: the queries (strings or :class:`~attnlab.data.corpus.Query`).
        interventions: some of ``"zero"``, ``"mean"``, ``"shuffle"``.
        seed: the shuffle's seed.
        batch_size: texts per forward pass.
        chunk: texts of one length compared at a time (bounds memory: every map of a chunk
            is held in float64 with and without the intervention).
        precision: of the maps, as in :func:`attnlab.core.extract.attention` (``"fp32"``: exact).

    Returns:
        :class:`PositionStudy` with arrays ``[N, L, H]``.
    """
    texts = _texts(texts)
    batch_size = check_positive_int(batch_size, "batch_size")
    chunk = check_positive_int(chunk, "chunk")
    for how in interventions:
        if how not in REPLACEMENTS:
            raise ValueError(f"unknown intervention {how!r}; use some of {REPLACEMENTS}")
    n, shape = len(texts), (m.n_layers, m.n_heads)
    sims = {how: np.zeros((n,) + shape) for how in interventions}  # (N, L, H) each
    special = {how: np.zeros((n,) + shape) for how in ("normal", *interventions)}
    moved = {how: np.zeros((n,) + shape) for how in interventions}
    by_length: dict[int, list[int]] = {}
    for i, length in enumerate(_lengths(m, texts)):
        by_length.setdefault(length, []).append(i)
    rounds = [idx[s : s + chunk] for idx in by_length.values() for s in range(0, len(idx), chunk)]
    for idx in tqdm(rounds, desc=_("position study"), unit=_("round"), disable=not progress):
        group = [texts[i] for i in idx]
        normal = attention(m, group, batch_size=batch_size, precision=precision)
        a = torch.stack([normal[j] for j in range(len(idx))]).double()  # (J, L, H, n, n)
        cols = torch.stack([_special_columns(m, normal.tokens[j]) for j in range(len(idx))])  # (J, n)
        special["normal"][idx] = (a * cols[:, None, None, None, :]).sum(-1).mean(-1).numpy()  # (J, L, H)
        for how in interventions:
            with replace_positions(m, how, seed=seed):
                changed = attention(m, group, batch_size=batch_size, precision=precision)
            b = torch.stack([changed[j] for j in range(len(idx))]).double()  # (J, L, H, n, n)
            sims[how][idx] = similarity(a, b).numpy()
            special[how][idx] = (b * cols[:, None, None, None, :]).sum(-1).mean(-1).numpy()
            moved[how][idx] = (0.5 * (a - b).abs().sum(-1)).mean(-1).numpy()  # (J, L, H)
    return PositionStudy(sims, special, moved, texts, m.name)


def correlation_by_layer_over_queries(x, y, *, method: str = "spearman", n_boot: int = 2000,
                                      level: float = 0.95, seed: int = 0) -> Interval:
    """Per layer, the correlation across its heads of the mean over queries of ``x`` and of ``y``,
    with an interval from resampling the queries.

    The heads of a layer are all there is (nothing to sample); what is noisy is each
    head's two means, estimated from a sample of queries. So every resample draws the
    queries with replacement, the same draw for ``x`` and ``y`` (they are paired by
    query), recomputes every head's two means, then each layer's correlation
    (:func:`attnlab.analysis.stats.bootstrap_correlation_of_means`).

    Args:
        x, y: ``[N, L, H]`` per-query values over the same N queries in the same order,
            e.g. lesson 06's similarity under perturbation
            (:meth:`~attnlab.analysis.compare.PerturbationStudy.unchanged_per_query`) and
            the change without positions (``1 - study.values(how)``). NaN where a
            query has no value (a skipped perturbation): left out of that mean.

    Returns:
        :class:`~attnlab.analysis.stats.Interval` with arrays ``(L,)``; ``n`` = the queries.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 3:
        raise ValueError(f"x and y must both be [queries, layers, heads], got {x.shape} and {y.shape}")
    return bootstrap_correlation_of_means(x, y, method=method, n_boot=n_boot, level=level, seed=seed)


def pooled_correlation_over_queries(x, y, *, method: str = "spearman", n_boot: int = 2000, level: float = 0.95,
                                    seed: int = 0) -> Interval:
    """One correlation over all heads of all layers together (``x``, ``y``: ``[N, L, H]``), with an
    interval from resampling the queries. For reference only: across layers it mostly
    compares layers, which differ in both measures for reasons of their own."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 3:
        raise ValueError(f"x and y must both be [queries, layers, heads], got {x.shape} and {y.shape}")
    n = x.shape[0]
    pooled = bootstrap_correlation_of_means(x.reshape(n, 1, -1), y.reshape(n, 1, -1), method=method,
                                            n_boot=n_boot, level=level, seed=seed)
    return Interval(float(pooled.estimate[0]), float(pooled.low[0]), float(pooled.high[0]), level, pooled.n)


def with_and_without(m: LoadedModel, text: str, how: str = "zero") -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """``(normal [L, H, n, n], intervened [L, H, n, n], tokens)``: one text's maps
    normally and under the position intervention ``how``."""
    att = attention(m, [text])
    with replace_positions(m, how):
        att0 = attention(m, [text])
    return att[0], att0[0], att.tokens[0]


# --------------------------------------------------------------------------- outputs


def output_vectors(m: LoadedModel, text: str) -> torch.Tensor:
    """The last layer's output vectors ``[n, d]`` of one text (special tokens included)."""
    out = run(m, encode(m, [text]), keep=("output",)).output
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


def equivariance_gap(m: LoadedModel, text: str, perm) -> float:
    """Largest difference between the outputs of ``text``'s tokens put in another
    order and its original outputs put in that same order.

    The tokens themselves are permuted (``input_ids[perm]``), not the text, so
    this works for any tokenizer: a word-piece tokenizer may cut rearranged
    *text* into other pieces. Zero (up to rounding) means the model only saw a
    bag of tokens: the output of each token does not depend on where it stands.

    Args:
        perm: token permutation ``[n]`` of ``text``'s tokens (special tokens
            included), ``new_tokens[i] == old_tokens[perm[i]]``.
    """
    inputs = encode(m, [text]).inputs  # each (1, n)
    n = inputs["input_ids"].shape[1]
    p = torch.as_tensor(np.asarray(perm), dtype=torch.long)  # (n,)
    if p.shape != (n,) or sorted(p.tolist()) != list(range(n)):
        raise ValueError(f"perm must be a permutation of the text's {n} tokens, got {np.asarray(perm).tolist()}")
    moved = {k: v[:, p.to(v.device)] for k, v in inputs.items()}  # the same tokens, reordered
    h_old = run(m, inputs, keep=("output",)).output.last_hidden_state[0].float().cpu()  # (n, d)
    h_new = run(m, moved, keep=("output",)).output.last_hidden_state[0].float().cpu()  # (n, d)
    return float((h_new - h_old[p]).abs().max())


def content_reversal(m: LoadedModel, text: str) -> np.ndarray:
    """The permutation ``[n]`` that reverses ``text``'s tokens between the first and the last
    (special) token: a reordering every tokenizer allows."""
    n = len(m.tokenizer(text)["input_ids"])
    return np.array([0] + list(range(n - 2, 0, -1)) + [n - 1])


