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
    thresholds: dict = field(default_factory=dict)
    sensitivity: dict = field(default_factory=dict)  # threshold setting -> verdict word
    stats: dict = field(default_factory=dict)  # statistic name -> (L, H) lists


@dataclass
class PerturbationResult(Record):
    """Lesson 06: how much each head's map changes under lexical and syntactic perturbation."""

    n_queries: int
    chosen_layer: int
    verdict: ClaimVerdict  # "in one layer, most heads barely change"
    follower_labels: list[list[str]]  # [L][H]: "position", "content" or "unclear"
    position_follower_share: float
    content_follower_share: float
    unchanged: np.ndarray  # (L, H): mean similarity over the perturbation kinds
    sensitivity: dict[str, np.ndarray] = field(default_factory=dict)  # "<kind>_<space>" -> (L, H) mean change
    follower_gap: np.ndarray | None = None  # (L, H)


@dataclass
class PositionResult(Record):
    """Lesson 07: what removing the position embeddings does to each head."""

    n_queries: int
    chosen_layer: int
    change: np.ndarray  # (L, H): 1 - similarity with and without positions
    verdict: ClaimVerdict  # "heads unchanged by perturbation are the ones positions drive"
    correlation: dict = field(default_factory=dict)
    output_cosine_mean: float = float("nan")
    equivariance_gap_with: float = float("nan")
    equivariance_gap_without: float = float("nan")


@dataclass
class AveragingResult(Record):
    """Lesson 08: mean maps over many same-length queries and each head's fixedness."""

    n_queries: int
    n_tokens: int
    fixedness: np.ndarray  # (L', H) for the averaged layers
    sharpness: np.ndarray  # (L', H)
    fixedness_per_layer: np.ndarray  # (L',)
    per_layer_low: np.ndarray
    per_layer_high: np.ndarray
    slope: float
    slope_low: float
    slope_high: float
    fixed_heads: list[list[int]]  # [(layer, head), ...] called fixed
    verdicts: dict[str, ClaimVerdict] = field(default_factory=dict)
    layers: list[int] = field(default_factory=list)
    seconds: float = float("nan")


@dataclass
class DiversityResult(Record):
    """Lesson 09: within-layer dispersion of heads and its trend with depth."""

    n_queries: int
    dispersion: np.ndarray  # (L,)
    dispersion_low: np.ndarray
    dispersion_high: np.ndarray
    slope: float
    slope_low: float
    slope_high: float
    verdict: ClaimVerdict  # "heads within a layer become more alike with depth"
    clustering_verdict: ClaimVerdict | None = None  # "heads of one layer cluster"
    within_layer: float = float("nan")
    between_layers: float = float("nan")
    cls_mass_per_layer: np.ndarray | None = None
    sep_mass_per_layer: np.ndarray | None = None


@dataclass
class HeadCountResult(Record):
    """Lesson 10: regrouping the heads into fewer, and training with different head counts."""

    regroup_counts: list[int]
    collapse: ClaimVerdict  # "with fewer heads, attention collapses onto one token"
    focus_by_layer: dict = field(default_factory=dict)  # groups -> per-layer focus summary
    head_counts: list[int] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    perplexity: dict = field(default_factory=dict)  # heads -> {"ppl_mean", "ppl_sd", "seeds"}
    head_count: ClaimVerdict | None = None  # "more heads is not always better"
    language: str = ""
    train_seconds: float = float("nan")


@dataclass
class PruningResult(Record):
    """Lesson 11: head importance, single-head ablation and pruning curves."""

    objective: str
    base_loss: float
    importance: np.ndarray  # (L, H)
    ablation: np.ndarray  # (L, H): loss change when the head alone is removed
    fractions: list[float]
    curves: dict  # order name -> losses per fraction ("random": a list of curves)
    prunable: dict[str, float]
    verdict: ClaimVerdict  # "some heads can be removed"
    removable_alone: float = float("nan")
    spearman_importance_ablation: float = float("nan")
    survivors: dict = field(default_factory=dict)


@dataclass
class ConclusionsResult(Record):
    """Lesson 12: the six conclusions with their verdicts, and where the evidence came from."""

    verdicts: list[ClaimVerdict]
    evidence_origin: dict[str, str]


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
