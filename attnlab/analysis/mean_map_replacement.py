"""Replacing heads' attention maps with their mean maps (after Hassid et al. 2022, PAPA).

Lesson 08 calls a head "fixed" when every query gets nearly the same map.
If that is true, the head's own map should be replaceable by the mean map
at little cost. Hassid et al. replaced attention maps by constant averages,
**many heads together**, and asked what fraction can go at little cost. Two
measurements here, for texts of one token length:

* :func:`mean_map_replacement`, one head at a time: replace the head's map by its
  mean map over many other queries (:class:`attnlab.core.streaming.MeanAttention`)
  and measure the cosine distance of the sentence representation from the
  unchanged run (the **cost**); as a **control**, replace it by the map of another
  query of the same set. This measures each head alone, without interactions.
* :func:`replace_together`, heads together: replace the first ``k`` heads of an
  order by their mean maps *at the same time*, for ``k`` from 0 to every head,
  in order of fixedness (most fixed first), in reverse, and in several random
  orders (a band). The **fraction replaceable** is the largest fraction of heads
  whose cumulative cost stays within a tolerance, with an interval from
  resampling the texts. The tolerance is a share of the mean ``1 - cos`` between two
  *different* texts' sentence representations (what "a lot" means for this model; 5% of
  it is a move of 22% of the distance between their unit vectors):
  the same tolerance as lesson 11's pruning, :mod:`attnlab.analysis.costs_nothing`.
  Each text's reference is its mean distance to every other text, so the mean of
  the references is the mean over all pairs.

Comparing one-at-a-time cost with the head's fixedness (from the same
:class:`MeanAttention`, through :func:`head_fixedness`) asks whether fixed
heads are cheap to replace; the comparison is made among the heads of each
layer (deeper heads differ in both), with a permutation test within layers.

Shapes: ``N`` texts, ``L`` averaged layers (``mean.layers``), ``H`` heads, ``n`` tokens,
``F`` fractions of heads, ``R`` random orders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from attnlab.analysis.costs_nothing import TOLERANCE_SHARE as COSTS_NOTHING_SHARE
from attnlab.analysis.costs_nothing import distance_to_others
from attnlab.analysis.interventions import cosine_distance, replace_maps, sentence_vectors
from attnlab.analysis.stats import (Interval, bootstrap, bootstrap_mean, correlation,
                                    permutation_correlation_within, side_of)
from attnlab.core.checks import check_positive_int
from attnlab.core.extract import check_texts
from attnlab.core.models import LoadedModel
from attnlab.core.run import copies_that_fit, encode, repeat_batch, run
from attnlab.core.streaming import MeanAttention

#: A cost is "little" when it is at most this share of the mean 1 - cos between two different texts
#: (:data:`attnlab.analysis.costs_nothing.TOLERANCE_SHARE`, shared with lesson 11).
TOLERANCE_SHARE = COSTS_NOTHING_SHARE
#: Random orders behind the band of :func:`replace_together`.
N_RANDOM_ORDERS = 5
#: Steps of the cumulative curves (fractions 0, 1/STEPS, ..., 1 of the heads).
STEPS = 12
#: The orders of :class:`TogetherCurves`.
ORDERS = ("fixed_first", "reverse", "random")


def head_fixedness(mean: MeanAttention) -> np.ndarray:
    """``(L, H)``: the fixedness of every head of ``mean`` (the course's one fixedness measure;
    everything here that orders or correlates heads by fixedness asks this function)."""
    return np.asarray(mean.fixedness(), dtype=float)


def fixedness_order(fixedness: np.ndarray) -> np.ndarray:
    """Flat head indices (``layer_index * H + head``) from the most fixed to the least; heads
    without a score (NaN: uniform maps, identical for every query) come first."""
    scores = np.where(np.isnan(fixedness), np.inf, fixedness).ravel()
    return np.argsort(-scores, kind="stable")


# --------------------------------------------------------------------------- one head at a time


@dataclass
class MapReplacement:
    """What replacing each head's map costs, beside the control.

    Attributes:
        layers: the model layers of the second axis (0-based).
        cost: ``(N, L, H)``: change of the sentence representation with the mean map.
        control: ``(N, L, H)``: change with another query's map.
        fixedness: ``(L, H)``: each head's fixedness over the queries of the mean.
        mean_count: queries behind the mean maps.
        reference: ``(N,)``: distance between each text's sentence representation and another
            text's (the scale of "a lot"); empty when not measured.
    """

    layers: list[int]
    cost: np.ndarray
    control: np.ndarray
    fixedness: np.ndarray
    mean_count: int
    reference: np.ndarray = field(default_factory=lambda: np.zeros(0))
    _correlations: dict[int, Interval] = field(default_factory=dict, init=False, repr=False, compare=False)
    _within: dict[int, Interval] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def mean_cost(self) -> np.ndarray:
        """``(L, H)``: cost averaged over texts."""
        return self.cost.mean(axis=0)

    @property
    def mean_control(self) -> np.ndarray:
        """``(L, H)``: control cost averaged over texts."""
        return self.control.mean(axis=0)

    def tolerance(self, share: float = TOLERANCE_SHARE) -> float:
        """The cost called "little": ``share`` of the mean distance between different texts."""
        if self.reference.size == 0:
            raise ValueError("no reference distance was measured: run mean_map_replacement")
        return float(share * self.reference.mean())

    def fixedness_cost_correlation(self, *, seed: int = 0) -> Interval:
        """Spearman rho over all heads of fixedness and mean cost, interval from resampling texts
        (the heads are the whole population; the noise is in each head's cost over texts)."""
        if seed not in self._correlations:
            fixed = self.fixedness.ravel()
            self._correlations[seed] = bootstrap(
                self.cost.reshape(self.cost.shape[0], -1), lambda c: correlation(fixed, c.mean(axis=0)),
                seed=seed)
        return self._correlations[seed]

    def within_layer_correlations(self, cost: np.ndarray | None = None) -> np.ndarray:
        """``(L,)``: Spearman rho of fixedness and mean cost among the heads of each layer (deeper
        layers are both less fixed and closer to the output; this takes depth out)."""
        mean_cost = self.mean_cost if cost is None else cost
        return np.array([correlation(f, c) for f, c in zip(self.fixedness, mean_cost)])

    def within_layer_rho(self, *, seed: int = 0) -> Interval:
        """Mean over layers of the within-layer Spearman rho, interval from resampling texts
        (computed once per seed: the verdict, the plot and the record share it)."""
        def mean_rho(costs: np.ndarray) -> float:
            rho = self.within_layer_correlations(costs.mean(axis=0))
            return float(np.nanmean(rho)) if np.isfinite(rho).any() else float("nan")

        if seed not in self._within:
            self._within[seed] = bootstrap(self.cost, mean_rho, seed=seed)
        return self._within[seed]

    def within_layer_permutation(self, *, n_perm: int = 2000, seed: int = 0) -> tuple[float, float]:
        """``(mean within-layer rho, p)``: p of a rho at least this negative when each layer's
        fixedness values are shuffled among its own heads (depth kept, the pairing broken)."""
        groups = np.repeat(np.arange(self.fixedness.shape[0]), self.fixedness.shape[1])
        return permutation_correlation_within(self.fixedness.ravel(), self.mean_cost.ravel(), groups,
                                              n_perm=n_perm, seed=seed, alternative="less")

    def saving(self, *, seed: int = 0) -> Interval:
        """Mean over heads of (cost - control), per text, with a bootstrap interval over texts
        (below 0: the mean map is a better stand-in than another query's map)."""
        return bootstrap_mean((self.cost - self.control).mean(axis=(1, 2)), seed=seed)

    def head_intervals(self, *, seed: int = 0) -> Interval:
        """``(L, H)``: each head's mean cost with its interval over texts."""
        return bootstrap_mean(self.cost, seed=seed)

    def head_sides(self, share: float = TOLERANCE_SHARE, *, seed: int = 0) -> np.ndarray:
        """``(L, H)`` ints from each head's cost interval against the tolerance:
        :data:`~attnlab.analysis.stats.BELOW` (cheap), :data:`~attnlab.analysis.stats.ABOVE`
        (costly) or :data:`~attnlab.analysis.stats.STRADDLES`; the course names them."""
        return np.asarray(side_of(self.head_intervals(seed=seed), self.tolerance(share)))

    def cheap_share(self, share: float = TOLERANCE_SHARE, *, seed: int = 0) -> Interval:
        """Share of heads whose mean cost alone is within the tolerance, interval from resampling texts."""
        rows = np.concatenate([self.cost.reshape(self.cost.shape[0], -1), self.reference[:, None]], axis=1)

        def cheap(r: np.ndarray) -> float:
            return float((r[:, :-1].mean(axis=0) <= share * r[:, -1].mean()).mean())

        return bootstrap(rows, cheap, seed=seed)


def _derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A permutation of ``0..n-1`` with no fixed point (every text gets another text's map)."""
    order = rng.permutation(n)
    partner = np.empty(n, dtype=int)
    partner[order] = np.roll(order, 1)
    return partner


def _check_same_length(m: LoadedModel, texts: Sequence[str], mean: MeanAttention, need: int) -> list[str]:
    texts, _ = check_texts(m, texts)
    if len(texts) < need:
        raise ValueError(f"need at least {need} texts (the reference and the control pair each text with another)")
    lengths = {len(ids) for ids in m.tokenizer(texts)["input_ids"]}
    if lengths != {mean.length}:
        raise ValueError(f"every text must have {mean.length} tokens like the mean maps; got lengths {sorted(lengths)}")
    return texts


def reference_distance(m: LoadedModel, texts: list[str], batch_size: int) -> np.ndarray:
    """``(N,)``: mean cosine distance between text ``i``'s sentence representation and every other
    text's (:func:`attnlab.analysis.costs_nothing.distance_to_others`; the mean over texts is the
    mean over all pairs)."""
    vectors = torch.cat([sentence_vectors(m, encode(m, texts[s : s + batch_size]).inputs)
                         for s in range(0, len(texts), batch_size)])  # (N, d)
    return distance_to_others(vectors.double().cpu().numpy())


def mean_map_replacement(m: LoadedModel, texts: Sequence[str], mean: MeanAttention, *, seed: int = 0,
                         batch_size: int = 64) -> MapReplacement:
    """Replace each head's map, one head at a time, by its mean map and by another query's map.

    Args:
        m: the loaded model.
        texts: at least 2 texts of ``mean.length`` tokens (ideally not among the mean's queries).
        mean: mean maps of the same length (:func:`attnlab.core.streaming.mean_attention`);
            the heads of ``mean.layers`` are replaced.
        seed: chooses whose map each text gets in the control.
        batch_size: texts per forward pass.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    texts = _check_same_length(m, texts, mean, 2)
    layers = [m.check_layer(l) for l in mean.layers]
    mean_maps = mean.mean.float()  # (L, H, n, n)
    partner = _derangement(len(texts), np.random.default_rng(seed))
    n_heads = m.n_heads
    own_maps = _own_maps(m, texts, layers, batch_size)  # (N, L, H, n, n)
    cost = np.zeros((len(texts), len(layers), n_heads))
    control = np.zeros_like(cost)
    for start in range(0, len(texts), batch_size):
        rows = np.arange(start, min(start + batch_size, len(texts)))
        inputs = encode(m, [texts[i] for i in rows]).inputs
        b, n = len(rows), inputs["input_ids"].shape[1]
        base = sentence_vectors(m, inputs)  # (B, d)
        others = own_maps[torch.from_numpy(partner[rows])]  # (B, L, H, n, n): another text's maps
        below = run(m, inputs, keep=("hidden",), layers=None).hidden  # {l: (B, n, d)}: every layer's input
        per_pass = copies_that_fit(2 * b, m=m)  # heads a pass: a copy of the batch with the mean, one with the control
        for li, layer in enumerate(layers):
            for first in range(0, n_heads, per_pass):
                heads = list(range(first, min(n_heads, first + per_pass)))
                copies = 2 * len(heads)  # copy j: head j's mean map; copy len(heads) + j: another text's map
                batch = repeat_batch(inputs, copies)  # (copies * B, n) each
                start_at = (layer, below[layer].repeat(copies, 1, 1)) if layer else None  # layers below as they are
                spec = {(layer, head): (torch.cat([mean_maps[li, head].expand(b, n, n), others[:, li, head]]),
                                        torch.cat([torch.arange(j * b, (j + 1) * b),
                                                   torch.arange((len(heads) + j) * b, (len(heads) + j + 1) * b)]))
                        for j, head in enumerate(heads)}
                with replace_maps(m, spec):
                    vectors = sentence_vectors(m, batch, start_at).view(copies, b, -1)  # (copies, B, d)
                for j, head in enumerate(heads):
                    cost[rows, li, head] = cosine_distance(vectors[j], base).numpy()
                    control[rows, li, head] = cosine_distance(vectors[len(heads) + j], base).numpy()
    return MapReplacement(layers=layers, cost=cost, control=control, fixedness=head_fixedness(mean),
                          mean_count=mean.count, reference=reference_distance(m, texts, batch_size))


def _own_maps(m: LoadedModel, texts: list[str], layers: list[int], batch_size: int) -> torch.Tensor:
    """``(N, L, H, n, n)``: every text's own maps in ``layers`` (texts of one length, no padding)."""
    out = []
    for start in range(0, len(texts), batch_size):
        cache = run(m, encode(m, texts[start : start + batch_size]), keep=("maps",), layers=layers)
        out.append(cache.stacked_maps(layers))  # (B, L, H, n, n)
    return torch.cat(out)


# --------------------------------------------------------------------------- heads together


@dataclass
class TogetherCurves:
    """Cumulative cost of replacing heads by their mean maps together.

    Attributes:
        layers: the model layers whose heads take part (0-based).
        fractions: ``(F,)`` share of those heads replaced, from 0 to 1.
        counts: ``(F,)`` number of heads replaced.
        fixed_first: ``(N, F)`` cost per text, heads taken from the most fixed.
        reverse: ``(N, F)`` the same from the least fixed.
        random: ``(R, N, F)`` the same in ``R`` random orders.
        reference: ``(N,)`` distance between each text and another text (the scale of "a lot").
        orders: ``order name -> (heads,)`` flat head indices (``layer_index * H + head``); random
            orders are ``"random 0"``, ``"random 1"``, ...
    """

    layers: list[int]
    fractions: np.ndarray
    counts: np.ndarray
    fixed_first: np.ndarray
    reverse: np.ndarray
    random: np.ndarray
    reference: np.ndarray
    orders: dict[str, list[int]] = field(default_factory=dict)

    def curve(self, order: str = "fixed_first") -> Interval:
        """``(F,)`` mean cost over texts at each fraction with its interval over texts
        (``"random"``: the mean over the random orders)."""
        return bootstrap_mean(self._costs(order))

    def random_band(self) -> tuple[np.ndarray, np.ndarray]:
        """``(F,)`` lowest and highest mean curve among the random orders."""
        means = self.random.mean(axis=1)  # (R, F)
        return means.min(axis=0), means.max(axis=0)

    def tolerance(self, share: float = TOLERANCE_SHARE) -> float:
        return float(share * self.reference.mean())

    def replaceable(self, order: str = "fixed_first", share: float = TOLERANCE_SHARE, *, seed: int = 0) -> Interval:
        """The largest fraction of heads replaceable together within the tolerance (the last
        fraction before the mean curve first exceeds ``share`` of the reference distance), with an
        interval from resampling texts (curve and reference resampled together)."""
        fractions = self.fractions
        rows = np.concatenate([self._costs(order), self.reference[:, None]], axis=1)  # (N, F + 1)

        def fraction(r: np.ndarray) -> float:
            return replaceable_fraction(r[:, :-1].mean(axis=0), fractions, share * r[:, -1].mean())

        return bootstrap(rows, fraction, seed=seed)

    def random_replaceable(self, share: float = TOLERANCE_SHARE) -> np.ndarray:
        """``(R,)``: the replaceable fraction of each random order (mean curves over texts)."""
        tol = self.tolerance(share)
        return np.array([replaceable_fraction(c, self.fractions, tol) for c in self.random.mean(axis=1)])

    def order_advantage(self, *, seed: int = 0) -> Interval:
        """Per text, mean cost over fractions in fixedness order minus in random orders (their
        mean), interval over texts: below 0 means the most fixed heads are the cheaper ones to remove."""
        return bootstrap_mean(self.fixed_first.mean(axis=1) - self.random.mean(axis=(0, 2)), seed=seed)

    def _costs(self, order: str) -> np.ndarray:
        if order == "fixed_first":
            return self.fixed_first
        if order == "reverse":
            return self.reverse
        if order == "random":
            return self.random.mean(axis=0)
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")


def replaceable_fraction(curve: np.ndarray, fractions: np.ndarray, tolerance: float) -> float:
    """The last fraction before ``curve`` ``(F,)`` first exceeds ``tolerance`` (1 when it never does)."""
    over = np.nonzero(np.asarray(curve) > tolerance)[0]
    if over.size == 0:
        return float(fractions[-1])
    return float(fractions[over[0] - 1]) if over[0] > 0 else 0.0


def cumulative_costs(m: LoadedModel, inputs: dict[str, torch.Tensor], base: torch.Tensor,
                     maps: dict[tuple[int, int], torch.Tensor], order: Sequence[tuple[int, int]],
                     counts: Sequence[int]) -> np.ndarray:
    """``(B, F)``: cosine distance of the sentence representation from ``base`` ``(B, d)`` when the
    first ``counts[f]`` heads of ``order`` use their map from ``maps`` together."""
    return sets_costs(m, inputs, base, maps, [list(order[:k]) for k in counts]).T


def sets_costs(m: LoadedModel, inputs: dict[str, torch.Tensor], base: torch.Tensor,
               maps: dict[tuple[int, int], torch.Tensor], sets: Sequence[Sequence[tuple[int, int]]]) -> np.ndarray:
    """``(S, B)``: cosine distance of the sentence representation from ``base`` ``(B, d)`` when the
    heads of ``sets[s]`` use their ``(n, n)`` map from ``maps`` together (0 for an empty set).

    Each set is replaced in its own copy of the batch, as many copies a pass as make about
    :data:`~attnlab.core.run.ROWS_PER_PASS` texts: the numbers of one pass per set, in fewer, fuller passes."""
    b = inputs["input_ids"].shape[0]
    out = np.zeros((len(sets), b))
    todo = [i for i, heads in enumerate(sets) if len(heads)]  # nothing replaced: the unchanged run, 0
    per_pass = copies_that_fit(b, m=m)
    for first in range(0, len(todo), per_pass):
        group = todo[first:first + per_pass]
        parts: dict[tuple[int, int], list[torch.Tensor]] = {}
        for j, i in enumerate(group):
            for key in sets[i]:
                parts.setdefault(tuple(key), []).append(torch.arange(j * b, (j + 1) * b))  # copy j's texts
        spec = {key: (maps[key].expand(len(rows) * b, *maps[key].shape[-2:]), torch.cat(rows))
                for key, rows in parts.items()}
        batch = repeat_batch(inputs, len(group))  # (copies * B, n) each
        with replace_maps(m, spec):
            vectors = sentence_vectors(m, batch).view(len(group), b, -1)  # (copies, B, d)
        for j, i in enumerate(group):
            out[i] = cosine_distance(vectors[j], base).cpu().numpy()
    return out


def replace_together(m: LoadedModel, texts: Sequence[str], mean: MeanAttention, *,
                     n_random: int = N_RANDOM_ORDERS, steps: int = STEPS, seed: int = 0,
                     batch_size: int = 64) -> TogetherCurves:
    """Replace heads by their mean maps together, cumulatively, in three kinds of order.

    Args:
        m: the loaded model.
        texts: at least 2 texts of ``mean.length`` tokens (ideally not among the mean's queries).
        mean: mean maps of the same length; the heads of ``mean.layers`` take part.
        n_random: random orders behind the band.
        steps: the curves have ``steps + 1`` points, fractions ``0, 1/steps, ..., 1``.
        seed: draws the random orders.
        batch_size: texts per forward pass.
    """
    texts = _check_same_length(m, texts, mean, 2)
    steps, n_random = check_positive_int(steps, "steps"), check_positive_int(n_random, "n_random")
    batch_size = check_positive_int(batch_size, "batch_size")
    layers = [m.check_layer(l) for l in mean.layers]
    n_heads = m.n_heads
    heads = [(layer, h) for layer in layers for h in range(n_heads)]  # flat index li * H + h
    maps = {(layer, h): mean.mean[li, h].float() for li, layer in enumerate(layers) for h in range(n_heads)}
    fractions = np.linspace(0.0, 1.0, steps + 1)
    counts = np.round(fractions * len(heads)).astype(int)
    rng = np.random.default_rng(seed)
    fixed = fixedness_order(head_fixedness(mean))
    orders = {"fixed_first": fixed.tolist(), "reverse": fixed[::-1].tolist()}
    for r in range(n_random):
        orders[f"random {r}"] = rng.permutation(len(heads)).tolist()
    curves = {name: np.zeros((len(texts), len(counts))) for name in orders}
    for start in range(0, len(texts), batch_size):
        rows = slice(start, min(start + batch_size, len(texts)))
        inputs = encode(m, texts[rows]).inputs
        base = sentence_vectors(m, inputs)  # (B, d)
        sets = [[heads[i] for i in order[:k]] for order in orders.values() for k in counts]  # every point of every curve
        costs = sets_costs(m, inputs, base, maps, sets).reshape(len(orders), len(counts), -1)  # (orders, F, B)
        for name, per_order in zip(orders, costs):
            curves[name][rows] = per_order.T
    return TogetherCurves(
        layers=layers, fractions=fractions, counts=counts, fixed_first=curves["fixed_first"],
        reverse=curves["reverse"], random=np.stack([curves[f"random {r}"] for r in range(n_random)]),
        reference=reference_distance(m, texts, batch_size), orders=orders,
    )
