"""Comparing attention maps before and after a perturbation.

Two maps of the same query, A (original) and B (perturbed), can be compared in
two ways, and the difference is the point of lesson 06:

* **position space** - A against B as they are: row ``i`` of A (the token at
  position ``i``) against row ``i`` of B (whatever token now sits there). A
  head whose pattern is tied to *positions* (attend to the previous position,
  to [CLS], ...) scores high here whatever the perturbation did.
* **token space** - A against B re-indexed by the perturbation's token
  permutation ``perm`` (``new_tokens[i] == old_tokens[perm[i]]``), so that the
  same *token* is compared with itself, wherever it moved. A head that follows
  the *content* (this character attends to that one) scores high here.

Similarity of two maps (the same definition everywhere in the course)::

    sim(A, B) = 1 - mean_i JS(A[i, :], B[i, :]) / ln 2

with JS the Jensen-Shannon divergence of row ``i`` in nats
(:func:`attnlab.core.distributions.js_divergence`). It is 1 for identical maps and
0 for maps whose rows have disjoint support. Every row counts, special tokens
([CLS], [SEP]) included; they never move.

:func:`perturbation_study` runs the experiment over many queries and keeps one
similarity per query, head, kind and space; :class:`PerturbationStudy` turns
those into means with bootstrap confidence intervals
(:class:`attnlab.analysis.stats.Interval`), sensitivity maps (``1 - similarity``),
head rankings and position/content-follower labels. The figures are in
:mod:`attnlab.viz.perturbation_plots`; the article's claim is judged in
:mod:`attnlab.course.claims.perturbation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from attnlab.analysis.perturb import (
    KINDS,
    PerturbationError,
    Perturbed,
    as_query,
    perturb,
    token_permutation,
    try_token_permutation,
)
from attnlab.analysis.stats import Interval, bootstrap_mean
from attnlab.core.checks import check_index, check_positive_int
from attnlab.core.distributions import js_divergence
from attnlab.core.extract import attention
from attnlab.core.models import LoadedModel
from attnlab.data.corpus import Query

LN2 = math.log(2.0)
SPACES = ("position", "token")


# --------------------------------------------------------------------------- map similarity


def _as_tensor(x) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.double()
    return torch.as_tensor(np.asarray(x, dtype=float))


def similarity(a, b) -> torch.Tensor:
    """``1 - mean row JS / ln 2`` of maps ``a`` and ``b`` ``[..., n, n] -> [...]``.

    Raises:
        ValueError: the shapes differ or the maps are not square.
    """
    a, b = _as_tensor(a), _as_tensor(b)
    if a.shape != b.shape:
        raise ValueError(f"maps must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"maps must be [..., n, n], got {tuple(a.shape)}")
    js = js_divergence(a, b)  # (..., n): one value per query row
    return 1.0 - js.mean(dim=-1) / LN2


def check_permutation(perm, n: int) -> np.ndarray:
    """Validate a permutation of ``range(n)`` and return it as an int array."""
    p = np.asarray(perm)
    if p.ndim != 1 or len(p) != n or sorted(p.tolist()) != list(range(n)):
        raise ValueError(f"perm must be a permutation of 0..{n - 1}, got {list(p)}")
    return p.astype(np.int64)


def reindex(maps, perm) -> torch.Tensor:
    """Express an original map in the perturbed text's order.

    Args:
        maps: ``[..., n, n]`` map(s) of the original text.
        perm: ``(n,)`` with ``new_tokens[i] == old_tokens[perm[i]]``.

    Returns:
        ``[..., n, n]`` with ``out[..., i, j] = maps[..., perm[i], perm[j]]``:
        what the original head did between the tokens that now sit at ``i`` and ``j``.
    """
    m = _as_tensor(maps)
    p = torch.as_tensor(check_permutation(perm, m.shape[-1]))
    return m[..., p, :][..., :, p]


def reindex_batch(maps: torch.Tensor, perms: torch.Tensor) -> torch.Tensor:
    """:func:`reindex` for a batch: ``maps [J, ..., n, n]``, ``perms [J, n]`` (one per map)."""
    j, n = perms.shape
    extra = maps.ndim - 3  # dims between the batch and the two token dims
    view = (j,) + (1,) * extra
    rows = perms.reshape(view + (n, 1)).expand(maps.shape)  # (J, ..., n, n)
    cols = perms.reshape(view + (1, n)).expand(maps.shape)
    return maps.gather(-2, rows).gather(-1, cols)


def compare_maps(original, perturbed, perm) -> tuple[torch.Tensor, torch.Tensor]:
    """Position-space and token-space similarity of two maps of the same query.

    Args:
        original: ``[..., n, n]`` (e.g. ``[L, H, n, n]``) maps of the original.
        perturbed: ``[..., n, n]`` maps of the perturbed text.
        perm: token permutation, ``new_tokens[i] == old_tokens[perm[i]]``.

    Returns:
        ``(position, token)``, each ``[...]`` (e.g. ``[L, H]``).
    """
    return similarity(original, perturbed), similarity(reindex(original, perm), perturbed)


# --------------------------------------------------------------------------- rankings


@dataclass(frozen=True)
class HeadScore:
    """One head's value with its interval ``[low, high]``; ``layer``/``head`` are 0-based."""

    layer: int
    head: int
    value: float
    low: float
    high: float

    @property
    def label(self) -> str:
        return f"L{self.layer + 1} H{self.head + 1}"

    def __str__(self) -> str:
        return f"{self.label}: {self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def top_heads(interval: Interval, k: int = 3, *, largest: bool = True) -> list[HeadScore]:
    """The ``k`` heads with the largest (or smallest) estimate of a per-head
    :class:`~attnlab.analysis.stats.Interval` (arrays ``[L, H]``), with their intervals."""
    k = check_positive_int(k, "k")
    estimate = np.asarray(interval.estimate, dtype=float)  # (L, H)
    if estimate.ndim != 2:
        raise ValueError(f"top_heads needs one interval per head ([layers, heads]), got shape {estimate.shape}")
    flat = estimate.ravel()  # (L * H,)
    order = np.argsort(-flat if largest else flat, kind="stable")[:k]
    n_heads = estimate.shape[-1]
    low, high = np.asarray(interval.low).ravel(), np.asarray(interval.high).ravel()
    return [HeadScore(int(i // n_heads), int(i % n_heads), float(flat[i]), float(low[i]), float(high[i]))
            for i in order]


def heads_report(values: Interval, layer: int, heads: Sequence[int], what: str) -> str:
    """One line per named (0-based) head of ``layer``: its value, interval and rank
    within the layer (1 = largest). ``values`` holds ``[L, H]`` arrays."""
    estimate = np.asarray(values.estimate, dtype=float)  # (L, H)
    layer = check_index(layer, estimate.shape[0], "layer")
    heads = [check_index(h, estimate.shape[1], "head") for h in heads]
    row = estimate[layer]  # (H,)
    ranks = (-row).argsort(kind="stable").argsort() + 1  # (H,): 1 = largest
    low, high = np.asarray(values.low)[layer], np.asarray(values.high)[layer]
    return "\n".join(
        f"  L{layer + 1} H{h + 1}: {what} {row[h]:.3f} [{low[h]:.3f}, {high[h]:.3f}], "
        f"rank {ranks[h]} of {len(row)} in its layer"
        for h in heads
    )


# --------------------------------------------------------------------------- the study


FOLLOWER_LABELS = ("position", "content", "neither")

#: Default margin of the follower labels: the whole interval of
#: ``position - token`` similarity must clear it (a mean row JS of 0.05 ln 2).
FOLLOWER_MARGIN = 0.05


@dataclass
class PerturbationStudy:
    """Per-query similarities of every head under each perturbation.

    Attributes:
        position, token: ``{kind: array [N, L, H]}`` similarity in each space;
            NaN where a query's perturbation was skipped.
        texts: the N original texts; ``perturbed``: ``{kind: [N texts]}``.
        skipped: ``(text, kind, reason)`` for every skipped pair.
    """

    position: dict[str, np.ndarray]
    token: dict[str, np.ndarray]
    texts: list[str]
    perturbed: dict[str, list[str]]
    skipped: list[tuple[str, str, str]] = field(default_factory=list)
    model_name: str = ""
    seed: int = 0

    @property
    def kinds(self) -> list[str]:
        return list(self.position)

    @property
    def n_queries(self) -> int:
        return len(self.texts)

    def values(self, kind: str, space: str = "position") -> np.ndarray:
        """``[N, L, H]`` similarities of one kind in one space."""
        if space not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, got {space!r}")
        table = self.position if space == "position" else self.token
        if kind not in table:
            raise ValueError(f"kind {kind!r} was not run; have {list(table)}")
        return table[kind]

    def similarity(self, kind: str, space: str = "position", **boot) -> Interval:
        """Mean similarity per head (arrays ``[L, H]``) with a bootstrap interval over queries."""
        return bootstrap_mean(self.values(kind, space), **boot)

    def sensitivity(self, kind: str, space: str = "position", **boot) -> Interval:
        """``1 - similarity`` per head (arrays ``[L, H]``): how much the head's map
        changes (0 = not at all), with a bootstrap interval over queries."""
        return bootstrap_mean(1.0 - self.values(kind, space), **boot)

    def unchanged(self) -> np.ndarray:
        """``[L, H]``: mean position-space similarity over the queries (skipped ones left
        out), averaged over the kinds that were run: how much each head keeps its map."""
        return np.mean([_mean_over_queries(self.values(k, "position")) for k in self.kinds], axis=0)

    def top_sensitive(self, kind: str, space: str = "position", k: int = 3, **boot) -> list[HeadScore]:
        """The ``k`` heads most changed by ``kind`` in ``space``, with intervals."""
        return top_heads(self.sensitivity(kind, space, **boot), k)

    def follower_gap(self, kind: str = "both", **boot) -> Interval:
        """``position similarity - token similarity`` per head (arrays ``[L, H]``):
        > 0 position-follower, < 0 content-follower."""
        return bootstrap_mean(self.values(kind, "position") - self.values(kind, "token"), **boot)

    def followers(self, kind: str = "both", margin: float = FOLLOWER_MARGIN, **boot) -> np.ndarray:
        """Label every head ``"position"``, ``"content"`` or ``"neither"``.

        A head is a position-follower when its whole interval of
        ``position - token`` similarity lies above ``margin``; a content-follower
        when it lies below ``-margin``; otherwise neither (e.g. heads that look
        at [CLS]/[SEP] or at themselves, identical in both spaces).

        Returns:
            ``[L, H]`` array of strings.
        """
        gap = self.follower_gap(kind, **boot)
        labels = np.full(np.shape(gap.estimate), "neither", dtype=object)  # (L, H)
        labels[gap.above(margin)] = "position"
        labels[gap.below(-margin)] = "content"
        return labels

    def follower_shares(self, kind: str = "both", margin: float = FOLLOWER_MARGIN, **boot) -> dict[str, float]:
        """Share of heads with each follower label."""
        labels = self.followers(kind, margin, **boot)
        return {lab: float(np.mean(labels == lab)) for lab in FOLLOWER_LABELS}


def _mean_over_queries(values: np.ndarray) -> np.ndarray:
    """``[N, L, H] -> [L, H]``: the mean over the queries that were not skipped (rows without NaN)."""
    kept = values[~np.isnan(values).any(axis=(1, 2))]  # (N', L, H)
    if kept.shape[0] == 0:
        raise ValueError("every query was skipped: nothing to average")
    return kept.mean(axis=0)


def _planned_pairs(m: LoadedModel, qs: list[Query], block: list[int], kinds: Sequence[str], seed: int,
                   new_texts: dict[str, list[str]], skipped: list[tuple[str, str, str]]):
    """The perturbed texts of one block of queries, and ``(query index, kind, perm)`` per pair."""
    jobs: list[tuple[int, str, np.ndarray]] = []
    texts: list[str] = []
    for i in block:
        for k in kinds:
            try:
                p = perturb(qs[i], k, seed)
            except PerturbationError as exc:
                skipped.append((qs[i].text, k, str(exc)))
                continue
            new_texts[k][i] = p.text
            perm, why = try_token_permutation(m, p)
            if perm is None:
                skipped.append((qs[i].text, k, why))
                continue
            jobs.append((i, k, perm))
            texts.append(p.text)
    return jobs, texts


def perturbation_study(
    m: LoadedModel,
    queries: Sequence[Query | str],
    *,
    kinds: Sequence[str] = KINDS,
    seed: int = 0,
    chunk: int = 128,
    batch_size: int = 64,
    progress: bool = False,
) -> PerturbationStudy:
    """Run the perturbation experiment over many queries.

    For each query: perturb it (seeded), get the token permutation (skipping,
    with the reason, a perturbation whose tokens do not line up), extract the
    attention of the original and of each perturbed text, and store the
    position- and token-space similarity of every head.

    Args:
        m: a loaded model.
        queries: :class:`~attnlab.data.corpus.Query` objects or strings (strings are
            segmented with :func:`attnlab.analysis.perturb.as_query` in ``m.language``).
        kinds: perturbations to run.
        seed: perturbation seed.
        chunk: queries per extraction round (bounds memory).
        batch_size: texts per forward pass.
        progress: show a progress bar.

    Returns:
        :class:`PerturbationStudy` with arrays ``[N, L, H]``.
    """
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"unknown kind {k!r}; use some of {KINDS}")
    chunk = check_positive_int(chunk, "chunk")
    batch_size = check_positive_int(batch_size, "batch_size")
    qs = [as_query(q, m.language) for q in queries]
    if not qs:
        raise ValueError("queries is empty: pass at least one query")
    n, shape = len(qs), (m.n_layers, m.n_heads)
    pos = {k: np.full((n,) + shape, np.nan) for k in kinds}  # (N, L, H) per kind
    tok = {k: np.full((n,) + shape, np.nan) for k in kinds}
    new_texts = {k: [""] * n for k in kinds}
    skipped: list[tuple[str, str, str]] = []

    starts = range(0, n, chunk)
    for s in tqdm(starts, desc="perturbation study", unit=f"x{chunk} queries", disable=not progress):
        block = list(range(s, min(n, s + chunk)))
        jobs, perturbed_texts = _planned_pairs(m, qs, block, kinds, seed, new_texts, skipped)
        # originals first, then one perturbed text per job
        att = attention(m, [qs[i].text for i in block] + perturbed_texts, batch_size=batch_size)
        # compare all pairs of one token length at once
        by_length: dict[int, list[int]] = {}
        for j, (i, _, _) in enumerate(jobs):
            by_length.setdefault(att.lengths[i - s], []).append(j)
        for js in by_length.values():
            a = torch.stack([att[jobs[j][0] - s] for j in js]).double()  # (J, L, H, n, n)
            b = torch.stack([att[len(block) + j] for j in js]).double()  # (J, L, H, n, n)
            perms = torch.as_tensor(np.stack([jobs[j][2] for j in js]))  # (J, n)
            p_sim = similarity(a, b).numpy()  # (J, L, H)
            t_sim = similarity(reindex_batch(a, perms), b).numpy()  # (J, L, H)
            for r, j in enumerate(js):
                i, k, _ = jobs[j]
                pos[k][i] = p_sim[r]
                tok[k][i] = t_sim[r]
    return PerturbationStudy(pos, tok, [q.text for q in qs], new_texts, skipped, m.name, seed)


# --------------------------------------------------------------------------- the example


@dataclass
class ExampleMaps:
    """Attention of the four example queries.

    Attributes:
        maps: ``{kind: [L, H, n, n]}`` for ``original``, ``lexical``, ``syntactic``, ``both``.
        tokens: ``{kind: tokens}``; ``texts``: ``{kind: text}``.
        perms: ``{kind: perm}`` token permutations (identity for the original).
        position, token: ``{kind: [L, H]}`` similarity to the original in each space.
    """

    maps: dict
    tokens: dict
    texts: dict
    perms: dict
    position: dict
    token: dict

    def sensitivity(self) -> np.ndarray:
        """``[L, H]``: position-space change averaged over the three perturbations."""
        return np.mean([1.0 - self.position[k] for k in self.position if k != "original"], axis=0)

    def chosen_layer(self) -> int:
        """The layer (0-based) whose heads differ most in how much they change:
        the largest spread (standard deviation over heads) of :meth:`sensitivity`.
        In that layer "most heads stay, a few change" is easiest to see or refute."""
        return int(np.argmax(self.sensitivity().std(axis=1)))


def example_maps(m: LoadedModel, perturbed: dict[str, Perturbed]) -> ExampleMaps:
    """Attention and similarities for a dict of :class:`~attnlab.analysis.perturb.Perturbed`
    (e.g. :func:`attnlab.analysis.perturb.example_perturbations`), ``"original"`` included."""
    if "original" not in perturbed:
        raise ValueError(f"perturbed needs an 'original' entry to compare with, got {list(perturbed)}")
    kinds = list(perturbed)
    att = attention(m, [perturbed[k].text for k in kinds])
    maps = {k: att[i] for i, k in enumerate(kinds)}  # {kind: (L, H, n, n)}
    perms = {k: token_permutation(m, perturbed[k]) for k in kinds}
    pos, tok = {}, {}
    for k in kinds:
        p, t = compare_maps(maps["original"], maps[k], perms[k])  # (L, H) each
        pos[k], tok[k] = p.numpy(), t.numpy()
    return ExampleMaps(maps, {k: att.tokens[i] for i, k in enumerate(kinds)},
                       {k: perturbed[k].text for k in kinds}, perms, pos, tok)
