"""What each lesson saves for later lessons: one record type per lesson result.

Lesson 12 judges the article's six conclusions from the results of lessons
05-11, lesson 07 and the pruning study reuse lesson 06's perturbation
sensitivity. Those hand-offs go through the types below, saved and loaded
with :mod:`attnlab.course.results`::

    results.save(RESULT_NAMES[PerturbationResult], record, model=m)
    saved = results.load("06_perturbation", PerturbationResult, model=m)

Arrays are ``[layers, heads]`` (0-based) unless a field says otherwise.
A field added here with a default keeps older saved files readable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnlab.analysis.pruning import PruningStudy
from attnlab.analysis.regroup import GroupSummary
from attnlab.analysis.stats import Interval
from attnlab.core.records import Record
from attnlab.course.verdicts import ClaimVerdict


@dataclass
class HeadPatternsResult(Record):
    """Lesson 05: one pattern label per head, from Clark-style statistics over many inputs."""

    n_inputs: int
    labels: list[list[str]]  # [L][H]
    label_counts: dict[str, int]
    fixed_share: float  # share of heads with a fixed (positional or special-token) label
    verdict: ClaimVerdict  # "most heads follow a fixed pattern"
    fixed_share_by_layer: np.ndarray  # (L,)
    depth_spearman: float
    heterogeneous_share: float = float("nan")
    broad_share: float = float("nan")
    thresholds: dict[str, float] = field(default_factory=dict)
    threshold_verdicts: dict[str, str] = field(default_factory=dict)  # "positional=0.4 special=0.5" -> verdict word
    zoo: dict[str, list[int]] = field(default_factory=dict)  # label -> [layer, head] of its clearest head
    stats: dict[str, np.ndarray] = field(default_factory=dict)  # statistic name -> (L, H)


@dataclass
class PerturbationResult(Record):
    """Lesson 06: how much each head's map changes under lexical and syntactic perturbation."""

    n_queries: int
    chosen_layer: int
    verdict: ClaimVerdict  # "most heads keep their pattern; only a few follow the content"
    follower_labels: list[list[str]]  # [L][H]: "position", "content" or "neither"
    position_follower_share: float
    content_follower_share: float
    unchanged: np.ndarray  # (L, H): mean position-space similarity over the perturbation kinds
    sensitivity: dict[str, np.ndarray] = field(default_factory=dict)  # "<kind>_<space>" -> (L, H) mean change
    follower_gap: np.ndarray | None = None  # (L, H): position - token similarity under "both"
    n_skipped: int = 0  # (query, kind) pairs skipped: nothing to break or move, or tokens changed


@dataclass
class PositionResult(Record):
    """Lesson 07: what removing the position embeddings does to each head."""

    n_queries: int
    chosen_layer: int
    change: np.ndarray  # (L, H): 1 - similarity with and without positions
    verdict: ClaimVerdict  # "heads unchanged by perturbation are the ones positions drive"
    correlation: Interval  # spearman r across heads of lesson 06's "unchanged" and ``change``
    change_low: np.ndarray | None = None  # (L, H): 95% bootstrap interval of ``change``
    change_high: np.ndarray | None = None
    unchanged_source: str = ""  # where lesson 06's "unchanged" came from
    follower_gap_correlation: Interval | None = None  # the same with lesson 06's follower gap
    follower_gap_verdict: ClaimVerdict | None = None
    output_cosine_mean: float = float("nan")
    equivariance_gap_with: float = float("nan")
    equivariance_gap_without: float = float("nan")


@dataclass
class AveragingResult(Record):
    """Lesson 08: mean maps over many same-length queries and each head's fixedness."""

    n_queries: int
    n_tokens: int  # tokens per query, [CLS] and [SEP] not counted
    layers: list[int]  # the averaged model layers (0-based), the first axis below
    fixedness: np.ndarray  # (L', H)
    sharpness: np.ndarray  # (L', H): how far each mean map is from uniform
    fixedness_per_layer: Interval  # (L',) with a bootstrap interval over query shards
    slope: Interval  # of fixedness_per_layer against depth, per layer
    fixed_heads: list[tuple[int, int]]  # (layer, head) with fixedness >= fixed_threshold
    fixed_threshold: float
    verdicts: dict[str, ClaimVerdict]  # keyed as attnlab.course.claims.averaging.verdicts
    seconds: float = float("nan")
    tolerance: float = float("nan")  # largest standard error asked of the early-stopping run
    queries_for_tolerance: int = 0  # queries that run needed


@dataclass
class DiversityResult(Record):
    """Lesson 09: within-layer dispersion of heads and its trend with depth."""

    n_queries: int
    layers: list[int]  # 0-based model layers
    dispersion: Interval  # (L,) mean JS distance among each layer's heads, interval over queries
    slope: Interval  # of dispersion against depth, per layer
    spearman: float  # rank correlation of dispersion with depth
    verdict: ClaimVerdict  # "heads within a layer become more alike with depth"
    clustering_verdict: ClaimVerdict  # "heads of the same layer attend more alike ..."
    within_layer: float  # mean distance between heads of one layer
    between_layers: float  # mean distance between heads of different layers
    cls_mass_per_layer: np.ndarray | None = None  # (L,)
    sep_mass_per_layer: np.ndarray | None = None  # (L,)


@dataclass
class HeadCountResult(Record):
    """Lesson 10: regrouping the heads into fewer, and training with different head counts."""

    n_texts: int  # queries the regrouping statistics average over
    regroup: list[GroupSummary]  # one per h', largest first
    collapse: ClaimVerdict  # "with fewer heads, attention collapses onto one token"
    head_counts: list[int]
    seeds: list[int]
    perplexity: list[list[float]]  # [head count][seed]: validation perplexity of each trained model
    head_count: ClaimVerdict  # Vaswani et al.'s row (A) pattern: 1 head worst, a middle count best
    language: str = ""
    train_seconds: float = float("nan")

    def summaries(self) -> dict[int, GroupSummary]:
        """``{h': GroupSummary}`` of the regrouping study."""
        return {s.n_groups: s for s in self.regroup}

    def perplexities(self) -> dict[int, np.ndarray]:
        """``{h: (seeds,) validation perplexities}`` of the training study."""
        return {h: np.asarray(p, dtype=float) for h, p in zip(self.head_counts, self.perplexity)}


@dataclass
class PruningResult(Record):
    """Lesson 11: head importance, single-head ablation and pruning curves."""

    study: PruningStudy  # importance (L, H), curves, base loss, prunable fractions, survivors
    ablation: np.ndarray  # (L, H): loss change when the head alone is removed
    verdict: ClaimVerdict  # "some heads can be pruned with almost no loss"
    removable_alone: float = float("nan")  # share of heads removable alone within the tolerance
    spearman_importance_ablation: float = float("nan")
    confidence: np.ndarray | None = None  # (L, H): Voita et al.'s confidence
    sensitivity_source: str = ""  # where the perturbation sensitivity came from
    survivor_overlap: dict[str, int] = field(default_factory=dict)  # kind -> overlap of the top-k lists
    overlap_chance: float = float("nan")  # the overlap two random top-k lists would have


@dataclass
class ConclusionsResult(Record):
    """Lesson 12: the six conclusions with their verdicts, and where the evidence came from."""

    verdicts: list[ClaimVerdict]
    evidence_origin: dict[str, str]  # result name -> "saved", "recomputed" or "missing"


#: saved name of each lesson result
RESULT_NAMES: dict[type, str] = {
    HeadPatternsResult: "05_reading_heatmaps",
    PerturbationResult: "06_perturbation",
    PositionResult: "07_position_embeddings",
    AveragingResult: "08_layer_averaging",
    DiversityResult: "09_head_diversity",
    HeadCountResult: "10_how_many_heads",
    PruningResult: "11_pruning_heads",
    ConclusionsResult: "12_conclusions",
}
RESULT_KINDS: dict[str, type] = {name: kind for kind, name in RESULT_NAMES.items()}
