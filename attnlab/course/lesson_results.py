"""What each lesson saves for later lessons: one record type per lesson result.

Lesson 12 judges the article's six conclusions from the results of lessons
05-11 (and cites lesson 13's mean-map replacement under the first), lesson 07 and the pruning study reuse lesson 06's perturbation
sensitivity. Those hand-offs go through the types below, saved and loaded
with :mod:`attnlab.course.results`::

    results.save(PerturbationResult.file_name, record, model=m)
    saved = results.load(PerturbationResult.file_name, PerturbationResult, model=m)

Arrays are ``[layers, heads]`` (0-based) unless a field says otherwise.
A field added here with a default keeps older saved files readable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from attnlab.analysis.covering import Covering
from attnlab.analysis.diversity import DepthShape
from attnlab.analysis.probes import TaskStudy
from attnlab.analysis.pruning import PruningStudy
from attnlab.analysis.regroup import GroupSummary
from attnlab.analysis.stats import Interval
from attnlab.core.records import Record
from attnlab.course.verdicts import ClaimVerdict


@dataclass
class HeadPatternsResult(Record):
    """Lesson 05: one pattern label per head, from Clark-style statistics over many inputs."""

    file_name: ClassVar[str] = "05_reading_heatmaps"  # the saved file, without ``.json``

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
    fixed_share_interval: Interval | None = None  # of fixed_share, over the survey's inputs (never heads)
    fixed_words: list[list[str]] = field(default_factory=list)  # [L][H] "fixed" / "not fixed" / "cannot tell"
    heterogeneous_share_interval: Interval | None = None


@dataclass
class PerturbationResult(Record):
    """Lesson 06: how much each head's map changes under lexical and syntactic perturbation."""

    file_name: ClassVar[str] = "06_perturbation"  # the saved file, without ``.json``

    n_queries: int
    chosen_layer: int
    verdict: ClaimVerdict  # "most heads keep their pattern; only a few follow the content"
    follower_labels: list[list[str]]  # [L][H]: "position", "content" or "cannot tell" (all keys; older records: "neither")
    position_follower_share: float
    content_follower_share: float
    unchanged: np.ndarray  # (L, H): mean position-space similarity over the perturbation kinds
    sensitivity: dict[str, np.ndarray] = field(default_factory=dict)  # "<kind>_<space>" -> (L, H) mean change
    follower_gap: np.ndarray | None = None  # (L, H): position - token similarity under "both"
    n_skipped: int = 0  # (query, kind) pairs skipped: nothing to break or move, or tokens changed
    mean_displacement: dict[str, float] = field(default_factory=dict)  # kind -> mean token displacement
    lexical_gap_at_equal_displacement: np.ndarray | None = None  # (L, H): lexical - syntactic change
    displacement_verdict: ClaimVerdict | None = None  # "lexical beyond displacement" for some heads
    lexical_only_verdict: ClaimVerdict | None = None  # "some heads change with lexical damage only"
    article_heads_verdict: ClaimVerdict | None = None  # the article's heads 7 and 9 (its model only)
    threshold_verdicts: dict[str, str] = field(default_factory=dict)  # "threshold=0.1 few=0.25" -> verdict word
    # kind -> [L][H] "changes" / "barely changes" / "cannot tell" (the head's interval over queries vs the threshold)
    change_labels: dict[str, list[list[str]]] = field(default_factory=dict)
    # "lexical" / "syntactic": share of changing heads; "content": share of content-followers; intervals over queries
    change_shares: dict[str, Interval] = field(default_factory=dict)
    # "heads_last" / "heads_chosen" / "pattern_last" / "pattern_chosen": the article's layer in both readings
    article_verdicts: dict[str, ClaimVerdict] = field(default_factory=dict)
    # (N, L, H) per query (NaN where skipped), for intervals over queries in lesson 07: "unchanged" averaged
    # over the kinds run on the query, and the follower gap under "both". None in records saved before them.
    unchanged_per_query: np.ndarray | None = None
    follower_gap_per_query: np.ndarray | None = None
    # (N, L, H) the follower gap under "both" on the content keys (each row weighted by its content mass), for
    # conclusion 1's share of content-followers with each head weighted by its content mass; None before it
    content_gap_per_query: np.ndarray | None = None
    # reading ("all keys" / "content keys") -> [L][H] "position" / "content" / "cannot tell", from each head's
    # interval over queries; and -> share of content-followers with its interval over queries
    follower_labels_by_reading: dict[str, list[list[str]]] = field(default_factory=dict)
    content_share_by_reading: dict[str, Interval] = field(default_factory=dict)


@dataclass
class PositionResult(Record):
    """Lesson 07: what removing the position embeddings does to each head."""

    file_name: ClassVar[str] = "07_position_embeddings"  # the saved file, without ``.json``

    n_queries: int
    chosen_layer: int
    change: np.ndarray  # (L, H): 1 - similarity with and without positions
    verdict: ClaimVerdict  # "heads unchanged by perturbation are the ones positions drive"
    correlation: Interval  # (L,): spearman r across each layer's heads of lesson 06's "unchanged" and ``change``,
    # interval over queries (n = queries)
    change_low: np.ndarray | None = None  # (L, H): 95% bootstrap interval of ``change``
    change_high: np.ndarray | None = None
    unchanged_source: str = ""  # where lesson 06's "unchanged" came from
    follower_gap_correlation: Interval | None = None  # (L,): the same with lesson 06's follower gap
    follower_gap_verdict: ClaimVerdict | None = None
    output_cosine_mean: float = float("nan")
    equivariance_gap_with: float = float("nan")
    equivariance_gap_without: float = float("nan")
    pooled_correlation: Interval | None = None  # over all heads together, for reference only (interval over queries)
    change_mean: np.ndarray | None = None  # (L, H): change with every position the mean position vector
    change_shuffle: np.ndarray | None = None  # (L, H): change with the position vectors shuffled
    position_dependent_share: float = float("nan")  # heads changed clearly by both mean and shuffle
    disrupted_share: float = float("nan")  # heads zeroing changes clearly more than the mean control
    special_share_zero_by_layer: np.ndarray | None = None  # (L,): moved weight landing on [CLS]/[SEP], zeroed
    verdicts_by_intervention: dict[str, ClaimVerdict] = field(default_factory=dict)  # "zero"/"mean"/"shuffle"
    # [L][H] "position-dependent" / "not position-dependent" / "cannot tell", from the intervals over queries
    position_labels: list[list[str]] = field(default_factory=list)
    disruption_labels: list[list[str]] = field(default_factory=list)  # "disrupted" / "not disrupted" / "cannot tell"
    position_dependent_share_interval: Interval | None = None  # over queries (each resample labels the heads anew)
    disrupted_share_interval: Interval | None = None


@dataclass
class AveragingResult(Record):
    """Lesson 08: mean maps over many same-length queries and each head's fixedness.

    Fixedness is the share of a row's information the mean map explains, against
    each head's own null (:mod:`attnlab.analysis.fixedness`); labels are three-way
    from each head's interval over query shards (:func:`attnlab.course.claims.averaging.head_labels`).
    """

    file_name: ClassVar[str] = "08_layer_averaging"  # the saved file, without ``.json``

    n_queries: int
    n_tokens: int  # tokens per query, [CLS] and [SEP] not counted
    layers: list[int]  # the averaged model layers (0-based), the first axis below
    fixedness: np.ndarray  # (L', H): information share, NaN for heads whose rows carry no information
    sharpness: np.ndarray  # (L', H): how far each mean map is from uniform
    fixedness_per_layer: Interval  # (L',) with a bootstrap interval over query shards
    slope: Interval  # of fixedness_per_layer against depth, per layer (raw, without the control)
    fixed_heads: list[tuple[int, int]]  # (layer, head) labelled "fixed" (whole interval >= fixed_threshold)
    fixed_threshold: float
    verdicts: dict[str, ClaimVerdict]  # keyed as attnlab.course.claims.averaging.verdicts
    seconds: float = float("nan")
    tolerance: float = float("nan")  # largest standard error asked of the early-stopping run
    queries_for_tolerance: int = 0  # queries that run needed
    corpus: str = ""  # which same-length queries ("varied": roles move between positions)
    control_fixedness: np.ndarray | None = None  # (L', H) on strings of random vocabulary pieces
    control_queries: int = 0
    control_margin: float = float("nan")  # unused since fixedness has its own null (kept for older files)
    curve_counts: list[int] = field(default_factory=list)  # queries averaged at each point of the curve
    curve_fixed_share: list[float] = field(default_factory=list)  # share of heads fixed (point rule) at each count
    labels: list[list[str]] = field(default_factory=list)  # [L'][H]: "fixed", "varying", "cannot tell", "uniform"
    fixed_share: Interval | None = None  # share of heads labelled fixed, interval over query shards
    n_shards: int = 0  # query shards the intervals resample
    difference_slope: Interval | None = None  # slope of per-layer (real - control) fixedness against depth
    js_score: np.ndarray | None = None  # (L', H): the old score 1 - JS / ln n, for comparison only
    information: np.ndarray | None = None  # (L', H): the rows' information E KL(row || uniform) / ln n
    # the content-key reading (special keys left out, rows renormalised): fixedness, labels, share labelled fixed
    content_fixedness: np.ndarray | None = None  # (L', H)
    content_labels: list[list[str]] = field(default_factory=list)  # [L'][H]
    content_fixed_share: Interval | None = None
    special_weight: np.ndarray | None = None  # (L', H): mean weight on [CLS]/[SEP], <s>/</s>
    sink_labels: list[list[str]] = field(default_factory=list)  # [L'][H]: content label, "sink + " when it rests on one
    # (L', H): share of each row's norm-based weight alpha_ij ||f_h(x_j)|| on the special keys (Kobayashi et al.),
    # on a sample of the queries; None in records saved before it
    norm_special_weight: np.ndarray | None = None


@dataclass
class DiversityResult(Record):
    """Lesson 09: within-layer dispersion of heads and its trend with depth."""

    file_name: ClassVar[str] = "09_head_diversity"  # the saved file, without ``.json``

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
    baseline_slope: Interval | None = None  # slopes when heads are dealt to layers at random (middle 95%)
    baseline_p: float = float("nan")  # share of those shuffles with a slope at or below the observed one
    # the same on the content keys (special tokens left out, rows renormalised); None in older records
    content_dispersion: Interval | None = None  # (L,)
    content_slope: Interval | None = None
    content_baseline_slope: Interval | None = None
    content_baseline_p: float = float("nan")
    # the shape of the curve (how much of the lower third's spread the upper third keeps, how far the last
    # layer climbs back above the least diverse one), intervals over queries; None in older records
    shape: DepthShape | None = None
    content_shape: DepthShape | None = None


@dataclass
class HeadCountResult(Record):
    """Lesson 10: regrouping the heads into fewer, and training with different head counts in two designs."""

    file_name: ClassVar[str] = "10_how_many_heads"  # the saved file, without ``.json``

    n_texts: int  # queries the regrouping statistics average over
    regroup: list[GroupSummary]  # one per h', largest first; per-text masses on self/prev/next/[CLS]/[SEP]/other
    collapse: ClaimVerdict  # general: "with fewer heads, attention collapses onto one token"
    head_counts: list[int]
    seeds: list[int]
    perplexity: list[list[float]]  # [head count][seed]: fixed width (d_k = d_model / h)
    head_count: ClaimVerdict  # Vaswani et al.'s row (A) pattern at fixed width
    language: str = ""
    train_seconds: float = float("nan")
    self_collapse: ClaimVerdict | None = None  # specific: "every token attends to itself"
    perplexity_fixed_head: list[list[float]] = field(default_factory=list)  # [head count][seed]: fixed d_head
    d_head: int = 0  # the head size of the fixed-head-size design
    d_model: int = 0
    more_heads: dict[str, ClaimVerdict] = field(default_factory=dict)  # design -> "more heads is not always better"

    def summaries(self) -> dict[int, GroupSummary]:
        """``{h': GroupSummary}`` of the regrouping study."""
        return {s.n_groups: s for s in self.regroup}

    def perplexities(self, design: str = "fixed width") -> dict[int, np.ndarray]:
        """``{h: (seeds,) validation perplexities}`` of one design (``"fixed width"`` or ``"fixed head size"``)."""
        table = self.perplexity if design == "fixed width" else self.perplexity_fixed_head
        return {h: np.asarray(p, dtype=float) for h, p in zip(self.head_counts, table)}


@dataclass
class PruningResult(Record):
    """Lesson 11: head importance on one set of texts, pruning curves and ablation on another."""

    file_name: ClassVar[str] = "11_pruning_heads"  # the saved file, without ``.json``

    study: PruningStudy | None  # ranking (L, H) from the importance texts; curves (random ones per text) on the
    #   evaluation texts; None from `attnlab report`, which leaves the curves out (no conclusion reads them)
    ablation: np.ndarray  # (L, H): mean loss change on the evaluation texts when the head alone is removed
    verdict: ClaimVerdict | None  # "some heads can be pruned with almost no loss"; None where ``study`` is
    removable_alone: float = float("nan")  # share of heads removable alone within the tolerance
    spearman_importance_ablation: float = float("nan")  # gradient importance vs ablation, one objective
    confidence: np.ndarray | None = None  # (L, H): Voita et al.'s confidence
    sensitivity_source: str = ""  # where the perturbation sensitivity came from
    survivor_overlap: dict[str, int] = field(default_factory=dict)  # kind -> overlap of the top-k lists
    overlap_chance: float = float("nan")  # the overlap two random top-k lists would have
    ablation_per_text: np.ndarray | None = None  # (N, L, H): ``ablation`` text by text (evaluation texts)
    objective_importance: dict[str, np.ndarray] = field(default_factory=dict)  # objective -> (L, H), importance texts
    split_half: dict[str, Interval] = field(default_factory=dict)  # objective -> split-half rank agreement
    objective_agreement: Interval | None = None  # rank agreement of sentence and token importance (same passes)
    objective_agreements: dict[str, Interval] = field(default_factory=dict)  # "a vs b" -> rank agreement, same texts
    n_importance_texts: int = 0
    n_eval_texts: int = 0
    covering: Covering | None = None  # heads masked together against the sum alone, on the evaluation texts
    tasks: TaskStudy | None = None  # two probes' head costs (query family, word starts) on the evaluation texts


@dataclass
class ConclusionsResult(Record):
    """Lesson 12: the six conclusions with their verdicts, and where the evidence came from; ``attnlab report``
    saves its conclusions in the same shape (both built by :func:`attnlab.course.evidence.conclusions_record`)."""

    file_name: ClassVar[str] = "12_conclusions"  # the saved file, without ``.json``

    verdicts: list[ClaimVerdict]
    evidence_origin: dict[str, str]  # result name -> "saved", "recomputed" or "missing"
    labels: list[str] = field(default_factory=list)  # one per verdict, e.g. "3a" (conclusion 3, first reading)
    # label -> the verdict's record with its deciding number, reason and untrained twin's cell, in English
    # (the table the report's readers and the documents read); {} in records saved before it
    claims: dict[str, dict] = field(default_factory=dict)


@dataclass
class AttentionLimitsResult(Record):
    """Lesson 13: sinks, norm-based attention, the faithfulness scoreboard and mean-map replacement
    (built by :func:`attnlab.course.attention_limits_result.from_run`).

    Attributes:
        sink_texts: texts behind the sink measurements.
        special_share_raw, special_share_norm: ``(L,)`` share of attention on [CLS]/[SEP]
            (or <s>/</s>) per layer, raw and norm-based, with intervals over texts.
        separator_share_raw: ``(L,)`` share on the separator alone ([SEP] or </s>), raw.
        removed_share: share of the special tokens' raw mass that norm-based weights remove.
        sink_effect, control_effect: mean cosine distance of the sentence representation when
            the sink's (a random word's) value vectors are zeroed in one layer.
        view_rho: view -> mean Spearman rho with the leave-one-out effect that keeps positions
            (interval over queries).
        view_rho_deleted: the same against deleting the token.
        view_ranking, view_ranking_deleted: views from best to worst under each ground truth.
        scored_queries: queries on the scoreboard (the same for every view).
        papa_layers: layers whose heads were replaced by their mean map.
        papa_cost, papa_control: ``(L, H)`` mean cost of the mean map / another query's map.
        papa_fixedness: ``(L, H)`` fixedness of each replaced head.
        papa_rho: Spearman rho over all heads of fixedness and cost (interval over texts).
        papa_within_rho: the same within layers, averaged (interval over texts).
        papa_saving: mean-map cost minus control cost (interval over texts).
        papa_labels: ``(L, H)`` "cheap" / "costly" / "cannot tell" per head replaced alone.
        together_fractions: ``(F,)`` fractions of heads replaced together.
        together_fixed_first, together_reverse: ``(F,)`` mean cost, most / least fixed first.
        together_random_low, together_random_high: ``(F,)`` band of the random orders.
        together_replaceable: fraction replaceable together within the tolerance (interval over texts).
        together_tolerance: that tolerance (cosine distance).
        mean_queries: queries behind the mean maps.
        verdicts: the claims of :mod:`attnlab.course.claims.attention_limits`, by key.
        sensitivity: claim key -> {threshold: verdict word} (for the comparisons decided beyond a floor,
            {floor: verdict word}: :func:`attnlab.course.claims.attention_limits.floor_sensitivity`).
    """

    file_name: ClassVar[str] = "13_attention_limits"  # the saved file, without ``.json``

    sink_texts: int
    special_share_raw: Interval
    special_share_norm: Interval
    removed_share: float
    sink_effect: float
    control_effect: float
    view_rho: dict[str, Interval]
    view_ranking: list[str]
    scored_queries: int
    papa_layers: list[int]
    papa_cost: np.ndarray
    papa_control: np.ndarray
    papa_fixedness: np.ndarray
    papa_rho: Interval
    papa_saving: Interval
    mean_queries: int
    separator_share_raw: Interval | None = None
    view_rho_deleted: dict[str, Interval] = field(default_factory=dict)
    view_ranking_deleted: list[str] = field(default_factory=list)
    papa_within_rho: Interval | None = None
    papa_labels: list[list[str]] = field(default_factory=list)
    together_fractions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_fixed_first: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_reverse: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_random_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_random_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    together_replaceable: Interval | None = None
    together_tolerance: float = float("nan")
    verdicts: dict[str, ClaimVerdict] = field(default_factory=dict)
    sensitivity: dict[str, dict[str, str]] = field(default_factory=dict)


#: every lesson record type, in lesson order (each names its saved file: ``file_name``)
RECORD_TYPES: tuple[type[Record], ...] = (HeadPatternsResult, PerturbationResult, PositionResult, AveragingResult,
                                          DiversityResult, HeadCountResult, PruningResult, ConclusionsResult,
                                          AttentionLimitsResult)
#: the record type saved under each file name
RESULT_KINDS: dict[str, type[Record]] = {kind.file_name: kind for kind in RECORD_TYPES}
