"""Comparing attention maps before and after a perturbation.

Two maps of the same query, A (original) and B (perturbed), can be compared in
two ways, and the difference is the point of lesson 06:

* **position space** - A against B as they are: row ``i`` of A (the token at
  position ``i``) against row ``i`` of B (whatever token now sits there). A
  head whose pattern is tied to *positions* (attend to the previous position,
  to [CLS], ...) scores high here whatever the perturbation did.
* **token space** - A against B re-indexed by the perturbation's permutation
  ``perm`` (``new_tokens[i] == old_tokens[perm[i]]``; of units when words are
  merged, see below), so that the same *token* is compared with itself,
  wherever it moved. A head that follows
  the *content* (this character attends to that one) scores high here.

Similarity of two maps (the same definition everywhere in the course)::

    sim(A, B) = 1 - mean_i JS(A[i, :], B[i, :]) / ln 2

with JS the Jensen-Shannon divergence of row ``i`` in nats
(:func:`attnlab.core.distributions.js_divergence`). It is 1 for identical maps and
0 for maps whose rows have disjoint support. Every row counts, special tokens
([CLS], [SEP]) included; they never move.

**Two readings.** :func:`similarity` reads **all keys**: weight on [CLS]/[SEP],
``<s>``/``</s>`` included. Since ``JS <= ln 2 * TV``, a head with 90% of every
row on ``<s>`` can never lose more than 0.1 of it, however the other 10% moves:
"few heads change" would partly say "many heads rest on a sink".
:func:`content_similarity` reads the **content keys**: the special columns left
out and each row renormalised (:func:`attnlab.core.distributions.content_keys`),
so it measures how the part of a row that reads the text moves. The study keeps
both (``keys=`` of :meth:`PerturbationStudy.values` and of the follower labels).

Maps are compared **unit by unit** (:func:`group_maps`): characters for
Chinese, words for English. Attention to a unit sums the columns of the pieces
that cover it, attention from a unit averages their rows, so that a respelled
English word (new pieces, maybe more of them) is still compared with the word
it was, and a multilingual model whose pieces span several Chinese characters
(``▁王 者 荣耀 怎么 玩``) is compared character by character: a piece's column
mass is split equally over the characters it covers, and a bare ``▁`` piece
counts with the character after it. With one token per unit (a character-level
Chinese tokenizer, most English words) this changes nothing.

:func:`perturbation_study` runs the experiment over many queries and keeps one
similarity per query, head, kind and space, and how far the perturbation moved
the tokens (:attr:`attnlab.analysis.perturb.UnitAlignment.displacement`);
:func:`displacement_control` compares two kinds at equal displacement; :class:`PerturbationStudy` turns
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
    UnitAlignment,
    as_query,
    from_texts,
    perturb,
    try_unit_alignment,
    unit_alignment,
)
from attnlab.analysis.stats import (
    Interval,
    bootstrap,
    bootstrap_mean,
    bootstrap_samples,
    bootstrap_share_above,
    interval_from_samples,
    simultaneous_from_samples,
)
from attnlab.core.checks import check_index, check_positive_int
from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS, KEY_READINGS, js_divergence, special_token_ids
from attnlab.core.extract import attention, to_word_level
from attnlab.core.language import _, translated
from attnlab.core.models import LoadedModel
from attnlab.data.corpus import Query

LN2 = math.log(2.0)
SPACES = ("position", "token")


def kind_word(word: str) -> str:
    """A kind of damage (``"original"``, ``"lexical"``, ``"syntactic"``, ``"both"``), a space
    (``"position"``, ``"token"``) or a reading of the article's layer (``"last"``, ``"chosen"``)
    in the reader's language, as the lessons print it and the figures draw it; any other word unchanged."""
    words = {"original": _("original"), "lexical": _("lexical"), "syntactic": _("syntactic"), "both": _("both"),
             "position": _("position"), "token": _("token"), "last": _("last"), "chosen": _("chosen")}
    return words.get(word, word)


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


def content_similarity(a, b, special) -> torch.Tensor:
    """:func:`similarity` on the **content keys**: ``[..., n, n] -> [...]``.

    The special keys' columns (``special``: booleans ``[n]``, or broadcasting to ``[..., n]``) are
    left out of both maps and every row renormalised over the rest
    (:func:`attnlab.core.distributions.content_keys`), then ``1 - mean row JS / ln 2``, the mean
    **weighted by each row's content mass** (its weight on the content keys, averaged over the two
    maps): renormalised, a row with 99% on [CLS] and 1% on one word looks as sharp as a row that
    reads the text, so unweighted it would count as much; weighted, it counts a hundredth. A row
    with no weight on any content key in either map says nothing about the content and is left out
    (NaN when every row is).
    """
    a, b = _as_tensor(a), _as_tensor(b)
    if a.shape != b.shape:
        raise ValueError(f"maps must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"maps must be [..., n, n], got {tuple(a.shape)}")
    keep = ~torch.as_tensor(special, dtype=torch.bool)
    if keep.shape[-1] != a.shape[-1]:
        raise ValueError(f"special marks {keep.shape[-1]} keys, the maps have {a.shape[-1]}")
    keep = keep.unsqueeze(-2).to(a.dtype)  # (..., 1, n): one mask for every row of a map
    a, b = a * keep, b * keep  # (..., n, n): special columns zeroed
    mass_a, mass_b = a.sum(dim=-1), b.sum(dim=-1)  # (..., n)
    a = a / mass_a.clamp_min(1e-300).unsqueeze(-1)
    b = b / mass_b.clamp_min(1e-300).unsqueeze(-1)
    js = js_divergence(a, b)  # (..., n): zero columns add nothing
    weight = torch.where((mass_a > 0) & (mass_b > 0), (mass_a + mass_b) / 2, 0.0)  # (..., n): row content mass
    total = weight.sum(dim=-1)  # (...,)
    mean_js = (weight * torch.nan_to_num(js)).sum(dim=-1) / total.clamp_min(1e-300)
    return torch.where(total > 0, 1.0 - mean_js / LN2, torch.nan)


def special_groups(m: LoadedModel, tokens: Sequence[str], groups: Sequence[Sequence[int]]) -> np.ndarray:
    """``[G]`` booleans: the groups of :func:`group_maps` that are one special token ([CLS]/[SEP],
    ``<s>``/``</s>``, padding: :func:`attnlab.core.distributions.special_token_ids`)."""
    names = set(m.tokenizer.convert_ids_to_tokens(sorted(special_token_ids(m.tokenizer))))
    return np.array([len(g) == 1 and tokens[g[0]] in names for g in groups], dtype=bool)


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


def group_maps(maps, groups: Sequence[Sequence[int]]) -> torch.Tensor:
    """Pool token maps into unit maps: ``[..., n, n] -> [..., G, G]``.

    The rule (:func:`attnlab.core.extract.to_word_level`): attention *to* a unit
    is the SUM of the columns of the pieces that cover it, attention *from* a
    unit is the MEAN of their rows. A piece that covers several units (an
    XLM-R piece such as ``荣耀`` covers the characters 荣 and 耀) is in each of
    their groups and its column mass is split equally over them, so
    ``out[..., a, :]`` still sums to 1; a bare ``▁`` piece is in the group of the
    unit after it (:func:`attnlab.analysis.perturb.unit_alignment`). With one
    token per group, in order (a character-level tokenizer), the maps come back
    unchanged.

    Args:
        maps: ``[..., n, n]`` attention maps.
        groups: token positions of each group; every token is in at least one
            group, every group is non-empty.
    """
    m = _as_tensor(maps)
    n = m.shape[-1]
    covered = {t for g in groups for t in g}
    if covered != set(range(n)) or any(len(g) == 0 for g in groups):
        raise ValueError(f"groups must cover each of the {n} tokens, each group non-empty; got {list(groups)}")
    if all(len(g) == 1 for g in groups) and [g[0] for g in groups] == list(range(n)):
        return m  # one token per group, in order: nothing to merge
    return to_word_level(m, [list(g) for g in groups])  # (..., G, G)


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


def query_halves(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint random halves of ``range(n)`` (sizes ``n // 2`` and ``n - n // 2``), fixed by ``seed``."""
    if n < 2:
        raise ValueError(f"splitting needs at least 2 units, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2:])


def top_heads_held_out(per_query, k: int = 3, *, largest: bool = True, seed: int = 0, **boot) -> list[HeadScore]:
    """The ``k`` top heads chosen on one half of the queries and scored on the other.

    Ranking and scoring on the same queries favours heads whose values happen to be
    high on those queries (the winner's curse): the top head's value is biased up.
    Here the heads are ranked by their mean over one random half of the queries
    (:func:`query_halves`), and each chosen head's value and interval come from the
    other half only.

    Args:
        per_query: ``[N, L, H]`` one value per query and head (NaN rows are left out).
        boot: passed to :func:`~attnlab.analysis.stats.bootstrap_mean` on the scoring half.

    Returns:
        :class:`HeadScore` list in the order chosen on the first half, with held-out values.
    """
    values = np.asarray(per_query, dtype=float)
    if values.ndim != 3:
        raise ValueError(f"per_query must be [queries, layers, heads], got shape {values.shape}")
    values = values[~np.isnan(values).any(axis=(1, 2))]  # (N', L, H)
    choose, score = query_halves(values.shape[0], seed)
    chosen_on = values[choose].mean(axis=0)  # (L, H)
    picked = top_heads(Interval(chosen_on, chosen_on, chosen_on), k, largest=largest)
    held_out = bootstrap_mean(values[score], seed=seed, **boot)  # (L, H) on the other half
    low, high, est = (np.asarray(x) for x in (held_out.low, held_out.high, held_out.estimate))
    return [HeadScore(p.layer, p.head, float(est[p.layer, p.head]), float(low[p.layer, p.head]),
                      float(high[p.layer, p.head])) for p in picked]


def heads_report(values: Interval, layer: int, heads: Sequence[int], what: str) -> str:
    """One line per named (0-based) head of ``layer``: its value, interval and rank
    within the layer (1 = largest). ``values`` holds ``[L, H]`` arrays; ``what`` names the value
    (shown in the reader's language when the catalogue has it)."""
    estimate = np.asarray(values.estimate, dtype=float)  # (L, H)
    layer = check_index(layer, estimate.shape[0], "layer")
    heads = [check_index(h, estimate.shape[1], "head") for h in heads]
    row = estimate[layer]  # (H,)
    ranks = (-row).argsort(kind="stable").argsort() + 1  # (H,): 1 = largest
    low, high = np.asarray(values.low)[layer], np.asarray(values.high)[layer]
    line = _("  {head}: {what} {value:.3f} [{low:.3f}, {high:.3f}], rank {rank} of {n} in its layer")
    return "\n".join(
        line.format(head=f"L{layer + 1} H{h + 1}", what=translated(what), value=row[h], low=low[h], high=high[h],
                    rank=ranks[h], n=len(row))
        for h in heads
    )


# --------------------------------------------------------------------------- the study


#: The follower labels from each head's interval over queries (see :meth:`PerturbationStudy.followers`);
#: "neither": the interval reaches into the band, so these queries cannot place the head (the course
#: shows it as "cannot tell": :mod:`attnlab.course.claims.followers`).
POSITION, CONTENT, NEITHER = "position", "content", "neither"
FOLLOWER_LABELS = (POSITION, CONTENT, NEITHER)

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
        displacement: ``{kind: array [N]}`` mean distance the units moved, in
            token positions (NaN where skipped).
        content_position, content_token: the same similarities on the **content keys**
            (:func:`content_similarity`); empty in studies made before them.
    """

    position: dict[str, np.ndarray]
    token: dict[str, np.ndarray]
    texts: list[str]
    perturbed: dict[str, list[str]]
    skipped: list[tuple[str, str, str]] = field(default_factory=list)
    model_name: str = ""
    seed: int = 0
    displacement: dict[str, np.ndarray] = field(default_factory=dict)
    content_position: dict[str, np.ndarray] = field(default_factory=dict)
    content_token: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def kinds(self) -> list[str]:
        return list(self.position)

    @property
    def n_queries(self) -> int:
        return len(self.texts)

    def values(self, kind: str, space: str = "position", keys: str = ALL_KEYS) -> np.ndarray:
        """``[N, L, H]`` similarities of one kind in one space, on all keys or on the content keys."""
        if space not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, got {space!r}")
        if keys not in KEY_READINGS:
            raise ValueError(f"keys must be one of {KEY_READINGS}, got {keys!r}")
        if keys == CONTENT_KEYS:
            table = self.content_position if space == "position" else self.content_token
            if not table:
                raise ValueError("this study has no content-key similarities (made before them): run it again")
        else:
            table = self.position if space == "position" else self.token
        if kind not in table:
            raise ValueError(f"kind {kind!r} was not run; have {list(table)}")
        return table[kind]

    def similarity(self, kind: str, space: str = "position", keys: str = ALL_KEYS, **boot) -> Interval:
        """Mean similarity per head (arrays ``[L, H]``) with a bootstrap interval over queries."""
        return bootstrap_mean(self.values(kind, space, keys), **boot)

    def sensitivity(self, kind: str, space: str = "position", keys: str = ALL_KEYS, **boot) -> Interval:
        """``1 - similarity`` per head (arrays ``[L, H]``): how much the head's map
        changes (0 = not at all), with a bootstrap interval over queries."""
        return bootstrap_mean(1.0 - self.values(kind, space, keys), **boot)

    def unchanged(self) -> np.ndarray:
        """``[L, H]``: mean position-space similarity over the queries (skipped ones left
        out), averaged over the kinds that were run: how much each head keeps its map."""
        return np.mean([_mean_over_queries(self.values(k, "position")) for k in self.kinds], axis=0)

    def unchanged_per_query(self) -> np.ndarray:
        """``[N, L, H]``: per query, the position-space similarity averaged over the kinds run
        on that query (a kind skipped for it is left out; NaN where every kind was).

        The per-query form of :meth:`unchanged`, for intervals over queries. Its mean over
        the queries equals :meth:`unchanged` when no pair was skipped; otherwise each query
        weighs the same, where :meth:`unchanged` weighs each kind the same."""
        stack = np.stack([self.values(k, "position") for k in self.kinds])  # (K, N, L, H)
        finite = np.isfinite(stack)
        count = finite.sum(axis=0)  # (N, L, H): kinds run on each query
        total = np.where(finite, stack, 0.0).sum(axis=0)
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)

    def follower_gap_per_query(self, kind: str = "both", keys: str = ALL_KEYS) -> np.ndarray:
        """``[N, L, H]``: per query, ``position similarity - token similarity`` (NaN where skipped);
        its mean over queries is :meth:`follower_gap`'s estimate."""
        return self.values(kind, "position", keys) - self.values(kind, "token", keys)

    def top_sensitive(self, kind: str, space: str = "position", k: int = 3, **boot) -> list[HeadScore]:
        """The ``k`` heads most changed by ``kind`` in ``space``, with intervals."""
        return top_heads(self.sensitivity(kind, space, **boot), k)

    def follower_gap(self, kind: str = "both", keys: str = ALL_KEYS, **boot) -> Interval:
        """``position similarity - token similarity`` per head (arrays ``[L, H]``):
        > 0 position-follower, < 0 content-follower."""
        return bootstrap_mean(self.follower_gap_per_query(kind, keys), **boot)

    def followers(self, kind: str = "both", margin: float = FOLLOWER_MARGIN, keys: str = ALL_KEYS,
                  **boot) -> np.ndarray:
        """Label every head ``"position"``, ``"content"`` or ``"neither"``, from its interval over queries.

        A head is a position-follower when its whole interval of
        ``position - token`` similarity lies above ``margin``; a content-follower
        when it lies below ``-margin``; otherwise neither: these queries cannot
        place it (the interval reaches into ``[-margin, margin]``: e.g. heads that look
        at [CLS]/[SEP] or at themselves, identical in both spaces, or heads too
        noisy to place). ``keys=CONTENT_KEYS`` labels the part of each row that
        reads the text (:func:`content_similarity`).

        Returns:
            ``[L, H]`` array of strings.
        """
        gap = self.follower_gap(kind, keys, **boot)
        labels = np.full(np.shape(gap.estimate), NEITHER, dtype=object)  # (L, H)
        labels[gap.above(margin)] = POSITION
        labels[gap.below(-margin)] = CONTENT
        return labels

    def follower_shares(self, kind: str = "both", margin: float = FOLLOWER_MARGIN, keys: str = ALL_KEYS,
                        **boot) -> dict[str, float]:
        """Share of heads with each follower label (:meth:`followers`)."""
        labels = self.followers(kind, margin, keys, **boot)
        return {lab: float(np.mean(labels == lab)) for lab in FOLLOWER_LABELS}

    def follower_share(self, label: str = CONTENT, kind: str = "both", margin: float = FOLLOWER_MARGIN,
                       keys: str = ALL_KEYS, **boot) -> Interval:
        """Share of heads following ``label`` (``"content"`` or ``"position"``), with an interval
        over **queries**: the estimate is the share of heads whose mean gap lies beyond the margin
        on the side of ``label``; each resample of the queries labels every head anew. (The heads
        are the whole population and are never resampled.) :meth:`followers` counts, beside it,
        how many heads each label gets from their own intervals."""
        gap = self.follower_gap_per_query(kind, keys)  # (N, L, H)
        if label == CONTENT:
            return bootstrap_share_above(-gap, margin, **boot)
        if label == POSITION:
            return bootstrap_share_above(gap, margin, **boot)
        raise ValueError(f"label must be {CONTENT!r} or {POSITION!r}, got {label!r}")


def _mean_over_queries(values: np.ndarray) -> np.ndarray:
    """``[N, L, H] -> [L, H]``: the mean over the queries that were not skipped (rows without NaN)."""
    kept = values[~np.isnan(values).any(axis=(1, 2))]  # (N', L, H)
    if kept.shape[0] == 0:
        raise ValueError("every query was skipped: nothing to average")
    return kept.mean(axis=0)


def _planned_pairs(m: LoadedModel, qs: list[Query], block: list[int], kinds: Sequence[str], seed: int,
                   new_texts: dict[str, list[str]], skipped: list[tuple[str, str, str]]):
    """The perturbed texts of one block of queries, and ``(query index, kind, alignment)`` per pair."""
    jobs: list[tuple[int, str, UnitAlignment]] = []
    texts: list[str] = []
    for i in block:
        for k in kinds:
            try:
                p = perturb(qs[i], k, seed)
            except PerturbationError as exc:
                skipped.append((qs[i].text, k, str(exc)))
                continue
            new_texts[k][i] = p.text
            aligned, why = try_unit_alignment(m, p)
            if aligned is None:
                skipped.append((qs[i].text, k, why))
                continue
            jobs.append((i, k, aligned))
            texts.append(p.text)
    return jobs, texts


def perturbation_study(
    m: LoadedModel,
    queries: Sequence[Query | str],
    *,
    kinds: Sequence[str] = KINDS,
    seed: int = 0,
    chunk: int = 32,
    batch_size: int = 64,
    progress: bool = False,
    precision: str = "fp32",
) -> PerturbationStudy:
    """Run the perturbation experiment over many queries.

    For each query: perturb it (seeded), line its tokens up with the
    original's unit by unit (skipping, with the reason, a pair that cannot be
    lined up), extract the attention of the original and of each perturbed
    text, merge each unit's word pieces (:func:`group_maps`) and store the
    position- and token-space similarity of every head, and the displacement.

    Args:
        m: a loaded model.
        queries: :class:`~attnlab.data.corpus.Query` objects or strings (strings are
            segmented with :func:`attnlab.analysis.perturb.as_query` in ``m.language``).
        kinds: perturbations to run.
        seed: perturbation seed.
        chunk: queries per extraction round (bounds memory: on multilingual-e5-small, 1,000 queries
            peaked 600 MB above the loaded model with 128 a round, 360 MB with 32, which was no slower).
        batch_size: texts per forward pass.
        progress: show a progress bar.
        precision: of the maps, as in :func:`attnlab.core.extract.attention` (``"fp32"``: exact).

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
    pos_c = {k: np.full((n,) + shape, np.nan) for k in kinds}  # (N, L, H) per kind, content keys
    tok_c = {k: np.full((n,) + shape, np.nan) for k in kinds}
    moved = {k: np.full(n, np.nan) for k in kinds}  # (N,) per kind
    new_texts = {k: [""] * n for k in kinds}
    skipped: list[tuple[str, str, str]] = []

    starts = range(0, n, chunk)
    for s in tqdm(starts, desc=_("perturbation study"), unit=_("×{chunk} queries").format(chunk=chunk), disable=not progress):
        block = list(range(s, min(n, s + chunk)))
        jobs, perturbed_texts = _planned_pairs(m, qs, block, kinds, seed, new_texts, skipped)
        # originals first, then one perturbed text per job
        att = attention(m, [qs[i].text for i in block] + perturbed_texts, batch_size=batch_size,
                        precision=precision)
        by_size: dict[int, list[tuple[int, torch.Tensor, torch.Tensor, np.ndarray]]] = {}
        for j, (i, _kind, aligned) in enumerate(jobs):
            a = group_maps(att[i - s].double(), aligned.old_groups)  # (L, H, G, G)
            b = group_maps(att[len(block) + j].double(), aligned.new_groups)  # (L, H, G, G)
            special = (special_groups(m, att.tokens[i - s], aligned.old_groups)
                       | special_groups(m, att.tokens[len(block) + j], aligned.new_groups))  # (G,)
            by_size.setdefault(a.shape[-1], []).append((j, a, b, special))
        for items in by_size.values():  # compare all pairs with one group count at once
            a = torch.stack([x[1] for x in items])  # (J, L, H, G, G)
            b = torch.stack([x[2] for x in items])  # (J, L, H, G, G)
            special = torch.as_tensor(np.stack([x[3] for x in items]))[:, None, None, :]  # (J, 1, 1, G)
            perms = torch.as_tensor(np.stack([jobs[x[0]][2].perm for x in items]))  # (J, G)
            moved_a = reindex_batch(a, perms)  # (J, L, H, G, G): the original in the perturbed order
            p_sim = similarity(a, b).numpy()  # (J, L, H)
            t_sim = similarity(moved_a, b).numpy()  # (J, L, H)
            p_con = content_similarity(a, b, special).numpy()  # (J, L, H)
            t_con = content_similarity(moved_a, b, special).numpy()  # special groups never move
            for r, (j, _a, _b, _s) in enumerate(items):
                i, k, aligned = jobs[j]
                pos[k][i], tok[k][i] = p_sim[r], t_sim[r]
                pos_c[k][i], tok_c[k][i] = p_con[r], t_con[r]
                moved[k][i] = aligned.displacement
    return PerturbationStudy(pos, tok, [q.text for q in qs], new_texts, skipped, m.name, seed, moved,
                             content_position=pos_c, content_token=tok_c)


# --------------------------------------------------------------------------- displacement


@dataclass
class DisplacementControl:
    """Two kinds of damage compared at equal token displacement, per head.

    For every head, the change ``1 - similarity`` of each query under both kinds
    is fitted as ``change = a + slope * displacement + gap * [kind is first]``
    (least squares over the queries' two pairs); the intervals resample queries.

    Attributes:
        gap: ``[L, H]`` first-kind minus second-kind change at equal displacement.
        slope: ``[L, H]`` change per token position of displacement.
        raw_gap: ``[L, H]`` the plain difference of the mean changes.
        mean_displacement: ``{kind: mean displacement}`` over the queries used.
        kinds: ``(first, second)``; ``space``: the space of the change.
        gap_simultaneous: ``[L, H]`` the same gap with intervals 95% simultaneous over
            all heads (from the same resamples), for "some head ..." verdicts.
    """

    gap: Interval
    slope: Interval
    raw_gap: Interval
    mean_displacement: dict[str, float]
    kinds: tuple[str, str]
    space: str
    n_queries: int
    gap_simultaneous: Interval | None = None


def _fit_gap_and_slope(rows: np.ndarray) -> np.ndarray:
    """``rows [N, 2, K + 1]`` (changes of K heads, then the displacement, for both kinds)
    -> ``[2, K]``: the gap and the slope of the least-squares fit, NaN when not identifiable."""
    k = rows.shape[-1] - 1
    y = rows[:, :, :k].reshape(-1, k)  # (2N, K)
    d = rows[:, :, k].reshape(-1)  # (2N,)
    first = np.tile([1.0, 0.0], rows.shape[0])  # (2N,): 1 for the first kind
    x = np.stack([np.ones_like(d), d, first], axis=1)  # (2N, 3)
    coef, _residuals, rank, _singular = np.linalg.lstsq(x, y, rcond=None)  # (3, K)
    if rank < 3:
        return np.full((2, k), np.nan)
    return np.stack([coef[2], coef[1]])


def _part(fit: Interval, index: int, shape: tuple[int, ...]) -> Interval:
    """Block ``index`` of a flat interval holding blocks of ``prod(shape)`` values, reshaped to ``shape``."""
    k = int(np.prod(shape))
    pick = slice(index * k, (index + 1) * k)
    return Interval(np.asarray(fit.estimate)[pick].reshape(shape), np.asarray(fit.low)[pick].reshape(shape),
                    np.asarray(fit.high)[pick].reshape(shape), fit.level, fit.n)


def displacement_control(study: PerturbationStudy, first: str = "lexical", second: str = "syntactic",
                         space: str = "position", **boot) -> DisplacementControl:
    """Does ``first`` change heads more than ``second`` once displacement is accounted for?

    Uses the queries where both kinds were run. Returns a :class:`DisplacementControl`.
    """
    for k in (first, second):
        if k not in study.displacement:
            raise ValueError(f"kind {k!r} has no displacement in this study (have {list(study.displacement)})")
    a, b = 1.0 - study.values(first, space), 1.0 - study.values(second, space)  # (N, L, H) each
    da, db = study.displacement[first], study.displacement[second]  # (N,) each
    keep = ~(np.isnan(a).any(axis=(1, 2)) | np.isnan(b).any(axis=(1, 2)) | np.isnan(da) | np.isnan(db))
    if keep.sum() < 4:
        raise ValueError(f"only {int(keep.sum())} queries have both {first!r} and {second!r}: too few to fit")
    shape = a.shape[1:]
    rows = np.stack([np.concatenate([a[keep].reshape(int(keep.sum()), -1), da[keep, None]], axis=1),
                     np.concatenate([b[keep].reshape(int(keep.sum()), -1), db[keep, None]], axis=1)],
                    axis=1)  # (N', 2, K + 1)
    estimate, boots, n = bootstrap_samples(rows, lambda r: _fit_gap_and_slope(r).ravel(),
                                           n_boot=boot.get("n_boot", 1000), seed=boot.get("seed", 0))  # (2K,), (B, 2K)
    level = boot.get("level", 0.95)
    fit = interval_from_samples(estimate, boots, level=level, n=n)
    k = int(np.prod(shape))
    gap_simultaneous = simultaneous_from_samples(np.asarray(estimate)[:k].reshape(shape),
                                                 boots[:, :k].reshape((-1,) + shape), level=level, n=n)
    return DisplacementControl(
        gap=_part(fit, 0, shape), slope=_part(fit, 1, shape), raw_gap=bootstrap_mean(a[keep] - b[keep], **boot),
        mean_displacement={first: float(da[keep].mean()), second: float(db[keep].mean())},
        kinds=(first, second), space=space, n_queries=int(keep.sum()), gap_simultaneous=gap_simultaneous,
    )


# --------------------------------------------------------------------------- the example


@dataclass
class ExampleMaps:
    """Attention of the four example queries.

    Attributes:
        maps: ``{kind: [L, H, n, n]}`` token maps for ``original``, ``lexical``,
            ``syntactic``, ``both`` (``n`` may differ when words are respelled).
        tokens: ``{kind: tokens}``; ``texts``: ``{kind: text}``.
        alignments: ``{kind: UnitAlignment}`` with the original.
        position, token: ``{kind: [L, H]}`` similarity to the original in each
            space, compared unit by unit (:func:`group_maps`).
        content_position, content_token: the same on the content keys (:func:`content_similarity`).
    """

    maps: dict
    tokens: dict
    texts: dict
    alignments: dict
    position: dict
    token: dict
    content_position: dict = field(default_factory=dict)
    content_token: dict = field(default_factory=dict)

    def sensitivity(self) -> np.ndarray:
        """``[L, H]``: position-space change averaged over the three perturbations."""
        return np.mean([1.0 - self.position[k] for k in self.position if k != "original"], axis=0)

    def chosen_layer(self) -> int:
        """The layer (0-based) whose heads differ most in how much they change:
        the largest spread (standard deviation over heads) of :meth:`sensitivity`.
        In that layer "most heads stay, a few change" is easiest to see or refute."""
        return int(np.argmax(self.sensitivity().std(axis=1)))


def compare_one(original_maps, perturbed_maps, aligned: UnitAlignment) -> tuple[np.ndarray, np.ndarray]:
    """``(position, token)`` similarity ``[L, H]`` of one original and one perturbed text's
    maps (``[L, H, n, n]`` and ``[L, H, n', n']``), compared unit by unit."""
    a = group_maps(original_maps, aligned.old_groups)  # (L, H, G, G)
    b = group_maps(perturbed_maps, aligned.new_groups)  # (L, H, G, G)
    p, t = compare_maps(a, b, aligned.perm)
    return p.numpy(), t.numpy()


def compare_one_content(original_maps, perturbed_maps, aligned: UnitAlignment,
                        special) -> tuple[np.ndarray, np.ndarray]:
    """:func:`compare_one` on the content keys: ``special`` ``[G]`` booleans marks the special groups."""
    a = group_maps(original_maps, aligned.old_groups)  # (L, H, G, G)
    b = group_maps(perturbed_maps, aligned.new_groups)  # (L, H, G, G)
    special = torch.as_tensor(np.asarray(special, dtype=bool))
    return (content_similarity(a, b, special).numpy(),
            content_similarity(reindex(a, aligned.perm), b, special).numpy())


def example_maps(m: LoadedModel, perturbed: dict[str, Perturbed]) -> ExampleMaps:
    """Attention and similarities for a dict of :class:`~attnlab.analysis.perturb.Perturbed`
    (e.g. :func:`attnlab.analysis.perturb.example_perturbations`), ``"original"`` included."""
    if "original" not in perturbed:
        raise ValueError(f"perturbed needs an 'original' entry to compare with, got {list(perturbed)}")
    kinds = list(perturbed)
    att = attention(m, [perturbed[k].text for k in kinds])
    maps = {k: att[i] for i, k in enumerate(kinds)}  # {kind: (L, H, n, n)}
    aligned = {k: unit_alignment(m, perturbed[k]) for k in kinds}
    pos, tok, pos_c, tok_c = {}, {}, {}, {}
    first = kinds.index("original")
    for i, k in enumerate(kinds):
        pos[k], tok[k] = compare_one(maps["original"], maps[k], aligned[k])  # (L, H) each
        special = (special_groups(m, att.tokens[first], aligned[k].old_groups)
                   | special_groups(m, att.tokens[i], aligned[k].new_groups))  # (G,)
        pos_c[k], tok_c[k] = compare_one_content(maps["original"], maps[k], aligned[k], special)
    return ExampleMaps(maps, {k: att.tokens[i] for i, k in enumerate(kinds)},
                       {k: perturbed[k].text for k in kinds}, aligned, pos, tok, pos_c, tok_c)


def compare_texts(m: LoadedModel, original: Query | str, new_text: str) -> tuple[np.ndarray, np.ndarray, Perturbed]:
    """Every head's similarity between ``original`` and a hand-written perturbation of it.

    ``new_text`` must keep the original's units (see
    :func:`attnlab.analysis.perturb.from_texts`). Returns ``(position [L, H],
    token [L, H], the Perturbed)``.
    """
    p = from_texts(original, new_text, "custom", language=m.language)
    att = attention(m, [p.source.text, p.text])
    position, token = compare_one(att[0], att[1], unit_alignment(m, p))
    return position, token, p
