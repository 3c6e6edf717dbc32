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
those into means with bootstrap confidence intervals, sensitivity maps
(``1 - similarity``), head rankings and position/content-follower labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from attnlab.core.distributions import js_divergence
from attnlab.viz.plot import plot_layer_head_map as _plot_layer_head_map
from attnlab.course.verdicts import ClaimVerdict

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


# --------------------------------------------------------------------------- bootstrap


@dataclass
class Interval:
    """A per-head mean with its bootstrap confidence interval (arrays ``[L, H]``)."""

    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    level: float = 0.95
    n: int = 0


def bootstrap_mean(values, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> Interval:
    """Mean over the first axis with a percentile bootstrap interval.

    Args:
        values: ``[N, ...]`` one value per query (rows with NaN are dropped).
        n_boot: bootstrap resamples of the N queries.
        level: confidence level, e.g. 0.95.

    Returns:
        :class:`Interval` of arrays shaped ``values.shape[1:]``.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim < 1 or v.shape[0] == 0:
        raise ValueError("bootstrap_mean needs at least one value")
    keep = ~np.isnan(v.reshape(v.shape[0], -1)).any(axis=1)
    v = v[keep]
    if v.shape[0] == 0:
        raise ValueError("every value is NaN: nothing to average")
    n = v.shape[0]
    flat = v.reshape(n, -1)  # (N, K)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot) / n  # (B, N): resample counts
    boots = weights @ flat  # (B, K): one mean per resample
    alpha = (1.0 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha], axis=0)
    shape = v.shape[1:]
    return Interval(flat.mean(axis=0).reshape(shape), lo.reshape(shape), hi.reshape(shape), level, n)


# --------------------------------------------------------------------------- rankings


@dataclass(frozen=True)
class HeadScore:
    """One head's value with its interval; ``layer``/``head`` are 0-based."""

    layer: int
    head: int
    value: float
    lo: float
    hi: float

    @property
    def label(self) -> str:
        return f"L{self.layer + 1} H{self.head + 1}"

    def __str__(self) -> str:
        return f"{self.label}: {self.value:.3f} [{self.lo:.3f}, {self.hi:.3f}]"


def top_heads(interval: Interval, k: int = 3, *, largest: bool = True) -> list[HeadScore]:
    """The ``k`` heads with the largest (or smallest) mean, with their intervals."""
    flat = interval.mean.ravel()
    order = np.argsort(-flat if largest else flat, kind="stable")[:k]
    n_heads = interval.mean.shape[-1]
    return [
        HeadScore(int(i // n_heads), int(i % n_heads), float(flat[i]),
                  float(interval.lo.ravel()[i]), float(interval.hi.ravel()[i]))
        for i in order
    ]


# --------------------------------------------------------------------------- the study


FOLLOWER_LABELS = ("position", "content", "neither")


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
        """Mean similarity per head ``[L, H]`` with a bootstrap interval over queries."""
        return bootstrap_mean(self.values(kind, space), **boot)

    def sensitivity(self, kind: str, space: str = "position", **boot) -> Interval:
        """``1 - similarity`` per head: how much the head's map changes (0 = not at all)."""
        return bootstrap_mean(1.0 - self.values(kind, space), **boot)

    def top_sensitive(self, kind: str, space: str = "position", k: int = 3, **boot) -> list[HeadScore]:
        """The ``k`` heads most changed by ``kind`` in ``space``, with intervals."""
        return top_heads(self.sensitivity(kind, space, **boot), k)

    def follower_gap(self, kind: str = "both", **boot) -> Interval:
        """``position similarity - token similarity`` per head: > 0 position-follower,
        < 0 content-follower."""
        return bootstrap_mean(self.values(kind, "position") - self.values(kind, "token"), **boot)

    def followers(self, kind: str = "both", margin: float = 0.05, **boot) -> np.ndarray:
        """Label every head ``"position"``, ``"content"`` or ``"neither"``.

        A head is a position-follower when its whole interval of
        ``position - token`` similarity lies above ``margin``; a content-follower
        when it lies below ``-margin``; otherwise neither (e.g. heads that look
        at [CLS]/[SEP] or at themselves, identical in both spaces).

        Returns:
            ``[L, H]`` array of strings.
        """
        gap = self.follower_gap(kind, **boot)
        labels = np.full(gap.mean.shape, "neither", dtype=object)
        labels[gap.lo > margin] = "position"
        labels[gap.hi < -margin] = "content"
        return labels

    def follower_shares(self, kind: str = "both", margin: float = 0.05, **boot) -> dict[str, float]:
        """Share of heads with each follower label."""
        labels = self.followers(kind, margin, **boot)
        return {lab: float(np.mean(labels == lab)) for lab in FOLLOWER_LABELS}


def perturbation_study(
    m,
    queries: Sequence,
    *,
    kinds: Sequence[str] = ("lexical", "syntactic", "both"),
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
    from attnlab.core.extract import attention
    from attnlab.analysis.perturb import KINDS, PerturbationError, as_query, perturb, try_token_permutation

    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"unknown kind {k!r}; use some of {KINDS}")
    qs = [as_query(q, m.language) for q in queries]
    if not qs:
        raise ValueError("queries is empty: pass at least one query")
    n, shape = len(qs), (m.n_layers, m.n_heads)
    pos = {k: np.full((n,) + shape, np.nan) for k in kinds}  # (N, L, H) per kind
    tok = {k: np.full((n,) + shape, np.nan) for k in kinds}
    new_texts = {k: [""] * n for k in kinds}
    skipped: list[tuple[str, str, str]] = []

    starts = range(0, n, chunk)
    if progress:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc="perturbation study", unit=f"x{chunk} queries")
    for s in starts:
        block = list(range(s, min(n, s + chunk)))
        jobs: list[tuple[int, str, np.ndarray]] = []  # (query index, kind, perm)
        texts = [qs[i].text for i in block]
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
        att = attention(m, texts, batch_size=batch_size)
        # compare all pairs of one token length at once
        by_length: dict[int, list[int]] = {}
        for j, (i, _, _) in enumerate(jobs):
            by_length.setdefault(att.lengths[block.index(i)], []).append(j)
        for length, js in by_length.items():
            a = torch.stack([att[block.index(jobs[j][0])] for j in js]).double()  # (J, L, H, n, n)
            b = torch.stack([att[len(block) + j] for j in js]).double()  # (J, L, H, n, n)
            perms = torch.as_tensor(np.stack([jobs[j][2] for j in js]))  # (J, n)
            p_sim = similarity(a, b).numpy()  # (J, L, H)
            t_sim = similarity(reindex_batch(a, perms), b).numpy()
            for r, j in enumerate(js):
                i, k, _ = jobs[j]
                pos[k][i] = p_sim[r]
                tok[k][i] = t_sim[r]
    return PerturbationStudy(pos, tok, [q.text for q in qs], new_texts, skipped, m.name, seed)


# --------------------------------------------------------------------------- verdicts


def changing_heads(study: PerturbationStudy, kind: str, *, threshold: float = 0.1, **boot) -> np.ndarray:
    """Heads whose position-space map changes clearly under ``kind``: ``[L, H]`` bool,
    True when the lower end of the sensitivity interval exceeds ``threshold``
    (a mean row JS of ``threshold * ln 2``)."""
    return study.sensitivity(kind, "position", **boot).lo > threshold


def verdict_few_heads_change(study: PerturbationStudy, *, threshold: float = 0.1,
                             few: float = 0.25, margin: float = 0.05, **boot) -> ClaimVerdict:
    """The source article's claim: most heads keep their pattern when the query is
    damaged, and only a few capture lexical or syntactic structure.

    Measured as: the share of heads that change clearly under lexical damage and
    under syntactic damage (:func:`changing_heads`), and the share of
    content-following heads (:meth:`PerturbationStudy.followers` under ``"both"``).
    The claim holds when each of these shares is at most ``few`` and the
    position-followers plus the unchanged heads are the majority; it does not
    hold when a share exceeds 0.5; otherwise "cannot tell".
    """
    kinds = [k for k in ("lexical", "syntactic") if k in study.kinds]
    shares = {f"share changing under {k}": float(changing_heads(study, k, threshold=threshold, **boot).mean())
              for k in kinds}
    follow = study.follower_shares("both" if "both" in study.kinds else kinds[-1], margin, **boot)
    shares["share content-followers"] = follow["content"]
    shares["share position-followers"] = follow["position"]
    worst = max(v for k, v in shares.items() if k != "share position-followers")
    if worst <= few:
        verdict = "holds"
    elif worst > 0.5:
        verdict = "does not hold"
    else:
        verdict = "cannot tell"
    shares.update({"threshold": threshold, "few": few, "queries": study.n_queries})
    return ClaimVerdict(
        "most heads keep their pattern under lexical/syntactic damage; only a few follow the content",
        verdict, shares,
    )


# --------------------------------------------------------------------------- the example, and figures


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


def example_maps(m, perturbed: dict) -> ExampleMaps:
    """Attention and similarities for a dict of :class:`~attnlab.analysis.perturb.Perturbed`
    (e.g. :func:`attnlab.analysis.perturb.example_perturbations`)."""
    from attnlab.core.extract import attention
    from attnlab.analysis.perturb import token_permutation

    kinds = list(perturbed)
    att = attention(m, [perturbed[k].text for k in kinds])
    maps = {k: att[i] for i, k in enumerate(kinds)}
    perms = {k: token_permutation(m, perturbed[k]) for k in kinds}
    pos, tok = {}, {}
    for k in kinds:
        p, t = compare_maps(maps["original"], maps[k], perms[k])
        pos[k], tok[k] = p.numpy(), t.numpy()
    return ExampleMaps(maps, {k: att.tokens[i] for i, k in enumerate(kinds)},
                       {k: perturbed[k].text for k in kinds}, perms, pos, tok)


def plot_example_rows(ex: ExampleMaps, layer: int, *, heads: Sequence[int] | None = None, cell: float = 1.25):
    """Every head of one layer (columns) for each of the four queries (rows).

    Each cell is titled with the head (1-based) and its position-space / token-space
    similarity to the original. Returns the figure.
    """
    import matplotlib.pyplot as plt

    from attnlab.viz.fonts import use_cjk_font

    kinds = list(ex.maps)
    first = ex.maps[kinds[0]]
    heads = list(range(first.shape[1])) if heads is None else list(heads)
    if not 0 <= layer < first.shape[0]:
        raise ValueError(f"layer {layer} out of range 0..{first.shape[0] - 1}")
    if any(any(ord(c) > 0x2E80 for c in t) for t in ex.texts.values()):
        use_cjk_font()
    fig, axes = plt.subplots(len(kinds), len(heads), figsize=(cell * len(heads) + 1.2, cell * len(kinds) + 1.0),
                             squeeze=False)
    for r, k in enumerate(kinds):
        for c, h in enumerate(heads):
            ax = axes[r, c]
            ax.imshow(ex.maps[k][layer, h].numpy(), vmin=0, vmax=1, cmap="viridis")
            ax.set_xticks([])
            ax.set_yticks([])
            title = f"H{h + 1}" if r == 0 else ""
            if k != "original":
                title += ("\n" if title else "") + f"p{ex.position[k][layer, h]:.2f} t{ex.token[k][layer, h]:.2f}"
            ax.set_title(title, fontsize=7)
            if c == 0:
                ax.set_ylabel(f"{k}\n{ex.texts[k]}", fontsize=7)
    fig.suptitle(f"Layer {layer + 1}: every head, four queries (p = position-space, t = token-space similarity)",
                 fontsize=9)
    fig.tight_layout()
    return fig


def plot_sensitivity_maps(study: PerturbationStudy, *, kinds: Sequence[str] | None = None, **boot):
    """Grid of ``layers x heads`` sensitivity maps: one column per perturbation,
    one row per space (position, token). Returns the figure."""
    import matplotlib.pyplot as plt

    kinds = list(kinds or study.kinds)
    fig, axes = plt.subplots(2, len(kinds), figsize=(4.2 * len(kinds), 6.2), squeeze=False)
    for c, k in enumerate(kinds):
        for r, space in enumerate(SPACES):
            sens = study.sensitivity(k, space, **boot).mean
            _plot_layer_head_map(sens, ax=axes[r, c], title=f"{k}, {space} space", vmin=0,
                                 vmax=max(0.05, float(np.nanmax(sens))), fontsize=6)
    fig.suptitle(f"Sensitivity (1 - similarity) over {study.n_queries} queries", fontsize=10)
    fig.tight_layout()
    return fig


def plot_followers(study: PerturbationStudy, kind: str = "both", margin: float = 0.05, **boot):
    """``layers x heads`` map of position - token similarity (red: follows positions,
    blue: follows content); heads with a significant label are marked P / C."""
    gap = study.follower_gap(kind, **boot).mean
    labels = study.followers(kind, margin, **boot)
    lim = max(0.05, float(np.nanmax(np.abs(gap))))
    marks = [[{"position": "P", "content": "C"}.get(x, "") for x in row] for row in labels]
    ax = _plot_layer_head_map(gap, cmap="coolwarm", vmin=-lim, vmax=lim, marks=marks)
    ax.set_title(f"position - token similarity under '{kind}' (P: position-follower, C: content-follower)",
                 fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def plot_layer_head_map(values, title: str, *, cmap: str = "magma", vmin: float | None = 0.0,
                        vmax: float | None = None):
    """One ``[L, H]`` per-head value as a heatmap, 1-based layer/head ticks. Returns the figure."""
    ax = _plot_layer_head_map(values, title=title, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.figure.tight_layout()
    return ax.figure


def article_heads_report(values: Interval, layer: int, heads: Sequence[int], what: str) -> str:
    """Lines giving the named (0-based) heads of one layer with value, interval and rank
    within the layer (1 = largest)."""
    row = values.mean[layer]
    ranks = (-row).argsort(kind="stable").argsort() + 1
    return "\n".join(
        f"  L{layer + 1} H{h + 1}: {what} {row[h]:.3f} [{values.lo[layer, h]:.3f}, {values.hi[layer, h]:.3f}], "
        f"rank {ranks[h]} of {len(row)} in its layer"
        for h in heads
    )
