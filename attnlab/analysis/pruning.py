"""Pruning curves: mask more and more heads, watch the loss (Michel et al. 2019).

Heads are switched off in a given *order* (a list of ``(layer, head)`` pairs):
at fraction ``p`` the first ``round(p * layers * heads)`` heads of the order
are masked together (:func:`attnlab.core.gates.mask_heads`) and the objective is
measured (:class:`attnlab.analysis.importance.Objective`). Three orders are compared:

* ``"importance"``: least important first (the pruning strategy);
* ``"reverse"``: most important first (should hurt fastest);
* ``"random"``: a random order, many seeds (the baseline), reported as the
  median and a percentile band (:data:`RANDOM_BAND`) over the seeds.

Heads are ranked once, at the unpruned model, as in Michel et al.'s Figure;
their code can also re-rank after each step, which this module does not do.
Rank the heads on other texts than the ones the curves are measured on
(:func:`pruning_study` takes the ranking as ``importance``), or the curves
reward the ranking for fitting those very texts.

Every curve ends at the same point, all heads masked. A curve need not rise
at every step: masking a head changes what the later layers receive, and
LayerNorm rescales what is left, so removing one more head can bring the
output a little closer to the full model's again. :meth:`PruningStudy.dips`
counts such steps, and the table shows where the all-masked end point lies.

Tolerances. With a representation objective (0 for the full model,
:attr:`attnlab.analysis.importance.Objective.absolute`) a tolerance is an
absolute number (0.01: the cosine with the full model stays above 0.99);
with the masked-LM or contrastive loss it is relative to the unpruned loss
(0.01 = 1%).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from attnlab.analysis.importance import (Objective, copies_per_pass, head_importance, head_sets_states,
                                         make_objective, text_losses_of, torch_threads)
from attnlab.core.checks import check_fraction, check_positive_int
from attnlab.core.gates import mask_heads
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record

DEFAULT_FRACTIONS = tuple(round(0.1 * i, 1) for i in range(11))  # 0.0, 0.1, ..., 1.0
#: counts the one-head scan masks in its first pass (each in its own copy of the texts; doubled after each pass)
SCAN_AHEAD = 4
#: percentiles of the random orders drawn as a band around their median
RANDOM_BAND = (10.0, 90.0)
ORDER_LABELS = {"importance": N_("least important first"), "reverse": N_("most important first"),
                "random": N_("random order")}  # marked: an order's name as printed


def order_label(order: str) -> str:
    """An order's name (``"importance"``, ``"reverse"``, ``"random"``) in the reader's language."""
    return _(ORDER_LABELS[order]) if order in ORDER_LABELS else order


def order_by_score(scores: np.ndarray, *, ascending: bool = True) -> list[tuple[int, int]]:
    """All ``(layer, head)`` pairs sorted by ``scores [layers, heads]`` (ties: layer, then head)."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2:
        raise ValueError(f"scores must be [layers, heads], got shape {scores.shape}")
    flat = scores.ravel() if ascending else -scores.ravel()
    idx = np.lexsort((np.arange(flat.size), flat))  # stable: by score, then position
    n_heads = scores.shape[1]
    return [(int(i // n_heads), int(i % n_heads)) for i in idx]


def random_order(n_layers: int, n_heads: int, seed: int) -> list[tuple[int, int]]:
    """All heads in a random order fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    idx = rng.permutation(n_layers * n_heads)
    return [(int(i // n_heads), int(i % n_heads)) for i in idx]


def heads_masked_at(fraction: float, total: int) -> int:
    """How many of ``total`` heads are masked at ``fraction`` (rounded to the nearest head)."""
    try:
        fraction = check_fraction(fraction, "fraction")
    except ValueError as exc:
        raise ValueError(f"fractions must lie in [0, 1]: {exc}") from None
    return int(round(fraction * total))


def pruning_curve(m: LoadedModel, objective: Objective, order: Sequence[tuple[int, int]],
                  fractions: Sequence[float] = DEFAULT_FRACTIONS, *, progress: bool = False,
                  threads: int | None = None, seen: dict | None = None) -> np.ndarray:
    """Objective value after masking the first ``fraction`` of ``order``, for each fraction.

    Args:
        m: the loaded model.
        objective: from :func:`attnlab.analysis.importance.make_objective`.
        order: every head once, first to be pruned first.
        fractions: fractions of all heads in ``[0, 1]``.
        threads: CPU threads for the forward passes (see :mod:`attnlab.analysis.importance`).
        seen: values of earlier passes by set of masked heads, filled as it goes: curves that
            share one (every order masks nothing at 0 and everything at 1) run each set once.

    Returns:
        ``(len(fractions),)`` losses; at fraction 0 this is ``objective.evaluate()``.
    """
    counts = _checked_counts(m, order, fractions)
    iterator = tqdm(counts, desc=_("pruning"), unit=_("step"), leave=False) if progress else counts
    with torch_threads(threads):
        losses = [_masked(m, order[:k], objective.evaluate, seen) for k in iterator]
    return np.array(losses)


def _key(heads: Sequence[tuple[int, int]], compute, fill) -> tuple:
    """The key of ``seen``: the set of heads, the function and the kind of ablation."""
    return frozenset(tuple(p) for p in heads), getattr(compute, "__name__", ""), fill is None


def _masked(m: LoadedModel, heads: Sequence[tuple[int, int]], compute, seen: dict | None, fill=None):
    """``compute()`` with ``heads`` masked, or its value from ``seen`` (keyed by the set of heads
    and the function) when an earlier pass masked the same set: the same pass, the same numbers.
    ``fill``: as in :func:`attnlab.core.gates.mask_heads` (None: zero-ablation)."""
    key = _key(heads, compute, fill)
    if seen is not None and key in seen:
        return seen[key]
    with mask_heads(m, heads, fill):
        value = compute()
    if seen is not None:
        seen[key] = value
    return value


def _prefill(m: LoadedModel, objective: Objective, sets: Sequence[Sequence[tuple[int, int]]], seen: dict,
             fill=None, *, threads: int | None = None) -> None:
    """Put every text's loss with each set of ``sets`` masked into ``seen`` (as ``objective.per_text``
    under :func:`_masked` would), several sets a pass (:func:`~attnlab.analysis.importance.head_sets_states`).
    Only for a representation objective, whose curves read text by text; a set already seen is skipped."""
    todo, keys = [], set()
    for heads in sets:
        key = _key(heads, objective.per_text, fill)
        if key not in seen and key not in keys:
            keys.add(key)
            todo.append([tuple(p) for p in heads])
    if not todo:
        return
    values = head_sets_states(m, objective, todo, text_losses_of(objective), fill=fill, threads=threads)
    for heads, value in zip(todo, values):
        seen[_key(heads, objective.per_text, fill)] = value


def pruning_curve_per_text(m: LoadedModel, objective: Objective, order: Sequence[tuple[int, int]],
                           fractions: Sequence[float] = DEFAULT_FRACTIONS, *,
                           threads: int | None = None, seen: dict | None = None) -> np.ndarray:
    """Like :func:`pruning_curve`, text by text, for a representation objective.

    Returns:
        ``(len(fractions), N)``: the objective's loss of each text (its
        ``kind``) after masking the first ``fraction`` of ``order``; the mean
        over texts is :func:`pruning_curve`. ``seen``: as in :func:`pruning_curve`.
    """
    counts = _checked_counts(m, order, fractions)
    with torch_threads(threads):
        rows = [_masked(m, order[:k], objective.per_text, seen)[objective.kind] for k in counts]
    return np.stack(rows)


def _checked_counts(m: LoadedModel, order: Sequence[tuple[int, int]], fractions: Sequence[float]) -> list[int]:
    total = m.n_layers * m.n_heads
    order = [tuple(p) for p in order]
    if sorted(order) != [(l, h) for l in range(m.n_layers) for h in range(m.n_heads)]:
        raise ValueError(f"order must list each of the {total} (layer, head) pairs exactly once")
    return [heads_masked_at(f, total) for f in fractions]


def loss_limit(base: float, tolerance: float, *, relative: bool = True) -> float:
    """The highest loss still "within the tolerance": ``base + tolerance * |base|`` (relative)
    or ``base + tolerance`` (absolute, for objectives that are 0 at the full model)."""
    return base + tolerance * (abs(base) if relative else 1.0)


def prunable_fraction(fractions: Sequence[float], losses: Sequence[float], *, tolerance: float = 0.01,
                      relative: bool = True) -> float:
    """Largest fraction reached before the loss first exceeds :func:`loss_limit` of ``losses[0]``.

    The curve is read from the left: a fraction counts only if every smaller
    fraction also stayed within the tolerance. ``fractions[0]`` must be 0.
    """
    fractions = list(fractions)
    losses = np.asarray(losses, dtype=float)
    tolerance = _check_tolerance(tolerance)
    if not fractions or fractions[0] != 0:
        raise ValueError("fractions must start at 0 (the unpruned model)")
    if len(fractions) != len(losses):
        raise ValueError(f"{len(fractions)} fractions but {len(losses)} losses")
    limit = loss_limit(losses[0], tolerance, relative=relative)
    best = 0.0
    for f, value in zip(fractions, losses):
        if value > limit:
            break
        best = float(f)
    return best


def _check_tolerance(tolerance: float) -> float:
    """A loss increase in [0, 1] (0.01 = 1%, or 0.01 of cosine)."""
    return check_fraction(tolerance, "tolerance")


def prunable_heads(m: LoadedModel, objective: Objective, order: Sequence[tuple[int, int]], *,
                   tolerance: float = 0.01, base_loss: float | None = None, threads: int | None = None,
                   seen: dict | None = None, fill=None) -> int:
    """How many heads of ``order`` can be masked, one head at a time, before the loss
    first exceeds :func:`loss_limit` (the 10% grid at one-head resolution).

    Masks the first 1, 2, 3, ... heads and stops at the first crossing. For a representation
    objective the next counts are masked together, each in its own copy of the texts
    (:data:`SCAN_AHEAD` in the first pass, twice as many in each next one, up to
    :func:`~attnlab.analysis.importance.copies_per_pass`), so a scan over a few texts still makes
    full passes; otherwise one pass per head that passes, plus one. The
    tolerance is absolute for a representation objective, relative otherwise.
    The loss is the one the curves plot: the mean of the texts' losses
    (:func:`pruning_curve_per_text`) for a representation objective,
    :meth:`~attnlab.analysis.importance.Objective.evaluate` otherwise; ``seen``
    (as in :func:`pruning_curve`) skips the sets of heads a curve has masked already.
    ``fill`` (``[layers, heads, d_head]``, :func:`attnlab.core.gates.head_output_means`):
    mean-ablation instead of zero-ablation.
    """
    order = [tuple(p) for p in order]
    tolerance = _check_tolerance(tolerance)

    def loss(k: int) -> float:
        if is_absolute(objective):
            return float(_masked(m, order[:k], objective.per_text, seen, fill)[objective.kind].mean())
        return float(_masked(m, order[:k], objective.evaluate, seen, fill))

    seen = {} if seen is None else seen
    most = copies_per_pass(objective) if is_absolute(objective) else 1  # counts masked in one pass, at most
    ahead = min(SCAN_AHEAD, most)  # doubles while the scan goes on, so a scan that stops early wastes little
    with torch_threads(threads):
        base = loss(0) if base_loss is None else base_loss
        limit = loss_limit(base, tolerance, relative=not is_absolute(objective))
        for k in range(1, len(order) + 1):
            if most > 1 and _key(order[:k], objective.per_text, fill) not in seen:
                _prefill(m, objective, [order[:j] for j in range(k, min(len(order), k + ahead - 1) + 1)], seen, fill)
                ahead = min(2 * ahead, most)
            if loss(k) > limit:
                return k - 1
    return len(order)


def is_absolute(objective) -> bool:
    """Is the objective 0 at the full model, with absolute tolerances? (False for any other loss.)"""
    return bool(getattr(objective, "absolute", False))


@dataclass
class PruningStudy(Record):
    """Pruning curves of one model (a :class:`~attnlab.core.records.Record`: lesson 11 saves it).

    Attributes:
        fractions: ``(F,)`` fractions of heads masked.
        importance: ``[layers, heads]`` scores used for the order.
        curves: ``"importance"`` and ``"reverse"`` ``(F,)``; ``"random"`` ``(seeds, F)``.
        base_loss: the unpruned objective.
        prunable: per order, the largest fraction within ``tolerance`` of the base loss
            (``"random"``: the median over seeds).
        prunable_heads: the same for the importance order at one-head resolution
            (:func:`prunable_heads`), a number of heads.
        tolerance: loss increase allowed: relative (0.01 = 1%) or, when
            ``relative`` is False, absolute (0.01 of ``1 - cos``).
        objective: the description of the loss.
        relative: whether ``tolerance`` is relative to the unpruned loss.
        per_text: ``"importance"`` and ``"reverse"`` ``(F, N)``: each text's loss, and
            ``"random"`` ``(seeds, F, N)`` (representation objectives only; empty otherwise).
        random_orders: the random orders, one list of ``(layer, head)`` per seed, so that
            the heads masked together at each fraction are known.
    """

    fractions: np.ndarray
    importance: np.ndarray
    curves: dict[str, np.ndarray]
    base_loss: float
    prunable: dict[str, float]
    tolerance: float
    objective: str
    survivors: list[tuple[int, int]] = field(default_factory=list)
    prunable_heads: int | None = None
    relative: bool = True
    per_text: dict[str, np.ndarray] = field(default_factory=dict)
    random_orders: list[list[tuple[int, int]]] = field(default_factory=list)

    def random_band(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(low, median, high)``, each ``(F,)``: the :data:`RANDOM_BAND` percentiles and the
        median of the random orders at each fraction."""
        rand = np.atleast_2d(self.curves["random"])  # (seeds, F)
        low, high = np.percentile(rand, RANDOM_BAND, axis=0)
        return low, np.median(rand, axis=0), high

    @property
    def all_masked(self) -> float:
        """The loss with every head masked (the last point when the fractions end at 1)."""
        if float(self.fractions[-1]) != 1.0:
            return float("nan")
        return float(self.curves["importance"][-1])

    def dips(self, name: str = "importance") -> int:
        """How many steps of a mean curve go *down* (more heads masked, lower loss)."""
        curve = np.asarray(self.curves[name], dtype=float)
        if curve.ndim == 2:
            curve = np.median(curve, axis=0)
        return int(np.sum(np.diff(curve) < 0))

    def table(self) -> str:
        """The curves as a small text table (loss per fraction and order)."""
        low, median, high = self.random_band()
        n = np.atleast_2d(self.curves["random"]).shape[0]
        band = _("random: median [{low}-{high}th pct] of {n}").format(low=f"{RANDOM_BAND[0]:g}",
                                                                       high=f"{RANDOM_BAND[1]:g}", n=n)
        lines = [f"{_('pruned'):>7} {_('importance'):>11} {band:>38} {_('reverse'):>9}"]
        for i, f in enumerate(self.fractions):
            lines.append(f"{f:>7.0%} {self.curves['importance'][i]:>11.4f} "
                         f"{median[i]:>19.4f} [{low[i]:.4f}, {high[i]:.4f}] {self.curves['reverse'][i]:>9.4f}")
        return "\n".join(lines)


def pruning_study(
    m: LoadedModel,
    texts: Sequence[str] | Objective,
    *,
    importance: np.ndarray | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    n_random: int = 20,
    seed: int = 0,
    tolerance: float = 0.01,
    progress: bool = False,
    threads: int | None = None,
    **objective_kw,
) -> PruningStudy:
    """Pruning curves by importance, in reverse, and in ``n_random`` random orders.

    Args:
        m: the loaded model.
        texts: texts, or a prepared :class:`~attnlab.analysis.importance.Objective`.
        importance: ``[layers, heads]`` scores (default: :func:`head_importance`
            on the same objective).
        fractions: must start at 0.
        n_random: random orders (seeds ``seed, seed + 1, ...``).
        tolerance: loss increase counted as "no noticeable loss" (absolute for a
            representation objective, relative otherwise).

    Returns:
        A :class:`PruningStudy`.
    """
    objective = texts if isinstance(texts, Objective) else make_objective(m, texts, **objective_kw)
    n_random = check_positive_int(n_random, "n_random")
    relative = not is_absolute(objective)
    if importance is None:
        importance = head_importance(m, objective, threads=threads)
    importance = np.asarray(importance, dtype=float)
    if importance.shape != (m.n_layers, m.n_heads):
        raise ValueError(f"importance must be [{m.n_layers}, {m.n_heads}], got {importance.shape}")
    fractions = np.asarray(fractions, dtype=float)
    orders = {"importance": order_by_score(importance), "reverse": order_by_score(importance, ascending=False)}
    per_text, seen = {}, {}  # seen: every set of heads is masked once (all orders share 0 and 100%)
    random_orders = [random_order(m.n_layers, m.n_heads, seed + s) for s in range(n_random)]
    if not relative:  # every set of every curve, several sets a pass
        counts = _checked_counts(m, orders["importance"], fractions)
        _prefill(m, objective, [order[:k] for order in [*orders.values(), *random_orders] for k in counts], seen,
                 threads=threads)
    if relative:
        curves = {name: pruning_curve(m, objective, order, fractions, progress=progress, threads=threads, seen=seen)
                  for name, order in orders.items()}
    else:
        per_text = {name: pruning_curve_per_text(m, objective, order, fractions, threads=threads, seen=seen)
                    for name, order in orders.items()}  # (F, N) each
        curves = {name: values.mean(axis=1) for name, values in per_text.items()}
    if relative:
        curves["random"] = np.stack([pruning_curve(m, objective, order, fractions, progress=progress,
                                                   threads=threads, seen=seen) for order in random_orders])  # (S, F)
    else:  # the same passes, kept text by text
        per_text["random"] = np.stack([pruning_curve_per_text(m, objective, order, fractions, threads=threads,
                                                              seen=seen)
                                       for order in random_orders])  # (S, F, N)
        curves["random"] = per_text["random"].mean(axis=2)  # (S, F)
    base = float(curves["importance"][0])
    def prunable_at(curve: np.ndarray) -> float:
        return prunable_fraction(fractions, curve, tolerance=tolerance, relative=relative)

    prunable = {
        "importance": prunable_at(curves["importance"]),
        "reverse": prunable_at(curves["reverse"]),
        "random": float(np.median([prunable_at(c) for c in curves["random"]])),
    }
    survivors = orders["importance"][::-1]  # pruned last first
    n_ok = prunable_heads(m, objective, orders["importance"], tolerance=tolerance, base_loss=base, threads=threads,
                          seen=seen)  # the grid's sets of heads are not masked again
    return PruningStudy(fractions, importance, curves, base, prunable, tolerance, objective.description, survivors,
                        n_ok, relative, per_text, [[tuple(p) for p in o] for o in random_orders])


# --------------------------------------------------------------------------- survivors and sensitivity


@dataclass
class SurvivorOverlap:
    """How many of the ``k`` heads pruned last are also among the ``k`` most sensitive heads.

    Attributes:
        overlap: heads in both top-``k`` lists.
        expected_by_chance: ``k * k / (layers * heads)``, the mean overlap of two random choices.
        top_survivors, top_sensitive: the two lists, 0-based ``(layer, head)``.
    """

    k: int
    overlap: int
    expected_by_chance: float
    top_survivors: list[tuple[int, int]]
    top_sensitive: list[tuple[int, int]]


def compare_with_sensitivity(survivors: Sequence[tuple[int, int]], sensitivity: np.ndarray, k: int) -> SurvivorOverlap:
    """Do the last-pruned heads coincide with the heads most changed by perturbations?

    Args:
        survivors: heads in the order they would be pruned last first
            (:attr:`PruningStudy.survivors`).
        sensitivity: ``[layers, heads]`` sensitivity from lesson 06 (or a proxy).
        k: how many heads to compare from each side.
    """
    sensitivity = np.asarray(sensitivity, dtype=float)
    total = sensitivity.size
    k = check_positive_int(k, "k")
    if k > total:
        raise ValueError(f"k must be between 1 and {total}, got {k}")
    top_survivors = [(int(l), int(h)) for l, h in survivors[:k]]
    top_sensitive = order_by_score(sensitivity, ascending=False)[:k]
    overlap = len(set(top_survivors) & set(top_sensitive))
    return SurvivorOverlap(k, overlap, k * k / total, top_survivors, top_sensitive)
