"""Replacing a head's attention map with its mean map (after Hassid et al. 2022, PAPA).

Lesson 08 calls a head "fixed" when every query gets nearly the same map.
If that is true, the head's own map should be replaceable by the mean map
at little cost. Hassid et al. replaced attention maps by constant averages
and found that much of the model's performance survives. Here, one head at
a time, for texts of one token length:

* **cost**: replace the head's map by its mean map over many other queries
  (:class:`attnlab.core.streaming.MeanAttention`) and measure the cosine
  distance of the sentence representation from the unchanged run;
* **control**: replace it instead by the map of another query of the same
  set (what a head's map looks like when it belongs to some other input).

Comparing the cost with the head's fixedness (from the same
:class:`MeanAttention`) asks whether fixed heads are cheap to replace.

Shapes: ``N`` texts, ``L`` averaged layers (``mean.layers``), ``H`` heads, ``n`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from attnlab.analysis.interventions import cosine_distance, replace_maps, sentence_vectors
from attnlab.analysis.stats import Interval, bootstrap_correlation, bootstrap_mean, correlation
from attnlab.core.checks import check_positive_int
from attnlab.core.extract import check_texts
from attnlab.core.models import LoadedModel
from attnlab.core.streaming import MeanAttention


@dataclass
class MapReplacement:
    """What replacing each head's map costs, beside the control.

    Attributes:
        layers: the model layers of the second axis (0-based).
        cost: ``(N, L, H)``: change of the sentence representation with the mean map.
        control: ``(N, L, H)``: change with another query's map.
        fixedness: ``(L, H)``: each head's fixedness over the queries of the mean.
        mean_count: queries behind the mean maps.
    """

    layers: list[int]
    cost: np.ndarray
    control: np.ndarray
    fixedness: np.ndarray
    mean_count: int
    _correlations: dict[int, Interval] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def mean_cost(self) -> np.ndarray:
        """``(L, H)``: cost averaged over texts."""
        return self.cost.mean(axis=0)

    @property
    def mean_control(self) -> np.ndarray:
        """``(L, H)``: control cost averaged over texts."""
        return self.control.mean(axis=0)

    def fixedness_cost_correlation(self, *, seed: int = 0) -> Interval:
        """Spearman rho over heads of fixedness and mean cost, with an interval from resampling heads
        (computed once per seed: the verdict, the plot and the record share it)."""
        if seed not in self._correlations:
            self._correlations[seed] = bootstrap_correlation(self.fixedness.ravel(), self.mean_cost.ravel(),
                                                             method="spearman", seed=seed)
        return self._correlations[seed]

    def within_layer_correlations(self) -> np.ndarray:
        """``(L,)``: Spearman rho of fixedness and mean cost among the heads of each layer (deeper
        layers are both less fixed and closer to the output; this takes depth out)."""
        return np.array([correlation(f, c) for f, c in zip(self.fixedness, self.mean_cost)])

    def saving(self, *, seed: int = 0) -> Interval:
        """Mean over heads of (cost - control), per text, with a bootstrap interval over texts
        (below 0: the mean map is a better stand-in than another query's map)."""
        return bootstrap_mean((self.cost - self.control).mean(axis=(1, 2)), seed=seed)


def _derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A permutation of ``0..n-1`` with no fixed point (every text gets another text's map)."""
    order = rng.permutation(n)
    partner = np.empty(n, dtype=int)
    partner[order] = np.roll(order, 1)
    return partner


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
    texts, _ = check_texts(m, texts)
    batch_size = check_positive_int(batch_size, "batch_size")
    if len(texts) < 2:
        raise ValueError("the control needs at least 2 texts (each gets another text's map)")
    lengths = {len(ids) for ids in m.tokenizer(texts)["input_ids"]}
    if lengths != {mean.length}:
        raise ValueError(f"every text must have {mean.length} tokens like the mean maps; got lengths {sorted(lengths)}")
    layers = [m.check_layer(l) for l in mean.layers]
    mean_maps = mean.mean.float()  # (L, H, n, n)
    partner = _derangement(len(texts), np.random.default_rng(seed))
    n_heads = m.n_heads
    own_maps = _own_maps(m, texts, layers, batch_size)  # (N, L, H, n, n)
    cost = np.zeros((len(texts), len(layers), n_heads))
    control = np.zeros_like(cost)
    for start in range(0, len(texts), batch_size):
        rows = np.arange(start, min(start + batch_size, len(texts)))
        inputs = m.encode([texts[i] for i in rows])
        base = sentence_vectors(m, inputs)  # (B, d)
        others = own_maps[torch.from_numpy(partner[rows])]  # (B, L, H, n, n): another text's maps
        for li, layer in enumerate(layers):
            for head in range(n_heads):
                with replace_maps(m, {(layer, head): mean_maps[li, head]}):
                    cost[rows, li, head] = cosine_distance(sentence_vectors(m, inputs), base).numpy()
                with replace_maps(m, {(layer, head): others[:, li, head]}):
                    control[rows, li, head] = cosine_distance(sentence_vectors(m, inputs), base).numpy()
    return MapReplacement(layers=layers, cost=cost, control=control, fixedness=mean.fixedness().numpy(),
                          mean_count=mean.count)


def _own_maps(m: LoadedModel, texts: list[str], layers: list[int], batch_size: int) -> torch.Tensor:
    """``(N, L, H, n, n)``: every text's own maps in ``layers`` (texts of one length, no padding)."""
    out = []
    for start in range(0, len(texts), batch_size):
        with torch.no_grad():
            run = m.model(**m.encode(texts[start : start + batch_size]), output_attentions=True)
        out.append(torch.stack([run.attentions[l].float() for l in layers], dim=1))  # (B, L, H, n, n)
    return torch.cat(out)
