"""One builder per saved lesson record: the lesson's saving cell and ``attnlab report`` call the same one.

Each lesson measures step by step in its notebook and, at the end, hands its own
objects (a study, labels, intervals) to the builder of its record; the report's
parts (:mod:`attnlab.course.report_parts`) measure the same way without a
notebook and call the same builder. A builder asks the claims for every verdict
it records, so a field added to a record is filled in one place::

    record = record_builders.averaging(report, n_queries=res.count, n_tokens=N_TOKENS)
    results.save(record.file_name, record, model=m)

The records themselves (:mod:`attnlab.course.lesson_results`) are plain data
below the claims; the builders sit above them. Keyword arguments marked "lesson
only" are what a lesson measures beyond what the conclusions read (the report
leaves them out). Lesson 13's builder is
:func:`attnlab.course.attention_limits_result.from_run`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from attnlab.analysis import importance, taxonomy
from attnlab.analysis.compare import DisplacementControl, PerturbationStudy
from attnlab.analysis.covering import Covering
from attnlab.analysis.diversity import DepthShape, DepthTrend, LayerClustering, ShuffledBaseline
from attnlab.analysis.fixedness import FixednessReport
from attnlab.analysis.pattern_shares import PatternShares
from attnlab.analysis.probes import TaskStudy
from attnlab.analysis.pruning import PruningStudy, SurvivorOverlap
from attnlab.analysis.regroup import GroupSummary
from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS
from attnlab.core.language import N_
from attnlab.course import lesson_results
from attnlab.course.claims import averaging as averaging_claims
from attnlab.course.claims import diversity as diversity_claims
from attnlab.course.claims import followers
from attnlab.course.claims import head_count as head_count_claims
from attnlab.course.claims import head_patterns as head_patterns_claims
from attnlab.course.claims import perturbation as perturbation_claims
from attnlab.course.claims import pruning as pruning_claims
from attnlab.course.claims.readings import with_other_reading
from attnlab.course.verdicts import ClaimVerdict
from attnlab.scratch.head_count_training import FIXED_D_HEAD, HeadCountStudy

#: the statistics of lesson 05's survey a record keeps per head
HEAD_STATS = ("self_mass", "prev_mass", "next_mass", "cls_mass", "sep_mass", "entropy", "uniform_entropy",
              "confidence")
#: the two kinds of damage whose changing heads lesson 06 labels
DAMAGE_KINDS = ("lexical", "syntactic")


# --------------------------------------------------------------------------- 05


def head_patterns(labels: taxonomy.HeadLabels, shares: PatternShares, *,
                  sensitivity: Sequence[Sequence[Any]] | None = None,
                  zoo: Mapping[str, Sequence[int]] | None = None) -> lesson_results.HeadPatternsResult:
    """Lesson 05's record from the survey's labels and its intervals over inputs.

    Args:
        labels: :func:`attnlab.analysis.taxonomy.classify_heads` of the survey (its ``stats`` kept per head).
        shares: :func:`attnlab.analysis.pattern_shares.pattern_shares` of the same inputs.
        sensitivity: lesson only, the rows of :func:`~attnlab.course.claims.head_patterns.threshold_sensitivity`.
        zoo: lesson only, each label's clearest head.
    """
    depth = taxonomy.fixed_share_by_depth(labels)
    return lesson_results.HeadPatternsResult(
        n_inputs=labels.stats.n_texts, labels=labels.labels.tolist(), label_counts=labels.counts(),
        fixed_share=labels.share(taxonomy.FIXED), verdict=head_patterns_claims.verdict_most_heads_fixed(shares),
        fixed_share_by_layer=depth.by_layer, depth_spearman=depth.spearman,
        heterogeneous_share=labels.share(["heterogeneous"]), broad_share=labels.share(["broad"]),
        thresholds=labels.thresholds,
        threshold_verdicts={f"positional={row[0]} special={row[1]}": row[-1] for row in (sensitivity or [])[1:]},
        zoo={name: list(lh) for name, lh in (zoo or {}).items()},
        stats={k: getattr(labels.stats, k) for k in HEAD_STATS},
        fixed_share_interval=shares.fixed_share, fixed_words=head_patterns_claims.fixed_words(shares).tolist(),
        heterogeneous_share_interval=shares.heterogeneous_share)


# --------------------------------------------------------------------------- 06


def perturbation(study: PerturbationStudy, *, chosen_layer: int, n_boot: int,
                 control: DisplacementControl | None = None, sensitivity: Sequence[Sequence[Any]] | None = None,
                 article: Mapping[str, ClaimVerdict] | None = None,
                 lexical_only: ClaimVerdict | None = None) -> lesson_results.PerturbationResult:
    """Lesson 06's record from its perturbation study (every interval over queries, ``n_boot`` resamples).

    Args:
        chosen_layer: the layer the lesson reads the article's heads in (0-based).
        control: lesson only, :func:`attnlab.analysis.compare.displacement_control` (its verdict is computed here).
        sensitivity: lesson only, the rows of the few-heads verdict's threshold sensitivity.
        article: lesson only, :func:`~attnlab.course.claims.perturbation.article_verdicts`.
        lexical_only: lesson only, "some heads change with lexical damage only".
    """
    labels = followers.follower_labels(study, "both", n_boot=n_boot)
    content_labels = followers.follower_labels(study, "both", keys=CONTENT_KEYS, n_boot=n_boot)
    shares = study.follower_shares("both", n_boot=n_boot)
    return lesson_results.PerturbationResult(
        n_queries=study.n_queries, chosen_layer=chosen_layer,
        verdict=perturbation_claims.verdict_few_heads_change(study, n_boot=n_boot),
        follower_labels=labels.tolist(), position_follower_share=shares["position"],
        content_follower_share=shares["content"], unchanged=study.unchanged(),
        sensitivity={f"{kind}_{space}": study.sensitivity(kind, space, n_boot=n_boot).estimate
                     for kind in study.kinds for space in ("position", "token")},
        follower_gap=study.follower_gap("both", n_boot=n_boot).estimate, n_skipped=len(study.skipped),
        mean_displacement=control.mean_displacement if control is not None else {},
        lexical_gap_at_equal_displacement=control.gap.estimate if control is not None else None,
        displacement_verdict=(perturbation_claims.verdict_lexical_beyond_displacement(control)
                              if control is not None else None),
        lexical_only_verdict=lexical_only,
        article_heads_verdict=article["heads_chosen"] if article else None,
        threshold_verdicts={f"threshold={row[0]} few={row[1]}": row[2] for row in (sensitivity or [])[1:]},
        change_labels={k: perturbation_claims.change_labels(study, k, n_boot=n_boot).tolist() for k in DAMAGE_KINDS},
        change_shares={**{k: perturbation_claims.changing_share(study, k, n_boot=n_boot) for k in DAMAGE_KINDS},
                       "content": perturbation_claims.content_share(study, n_boot=n_boot)},
        article_verdicts=dict(article or {}),
        unchanged_per_query=study.unchanged_per_query(),
        follower_gap_per_query=study.follower_gap_per_query("both"),
        content_gap_per_query=study.follower_gap_per_query("both", CONTENT_KEYS),
        follower_labels_by_reading={ALL_KEYS: labels.tolist(), CONTENT_KEYS: content_labels.tolist()},
        content_share_by_reading={reading: study.follower_share("content", "both", keys=reading, n_boot=n_boot)
                                  for reading in (ALL_KEYS, CONTENT_KEYS)})


# --------------------------------------------------------------------------- 08


def averaging(report: FixednessReport, *, n_queries: int, n_tokens: int, norm_special: np.ndarray | None = None,
              seconds: float = float("nan"), tolerance: float = float("nan"), queries_for_tolerance: int = 0,
              curve_counts: Sequence[int] = (),
              curve_fixed_share: Sequence[float] = ()) -> lesson_results.AveragingResult:
    """Lesson 08's record from its fixedness report (``n_queries`` same-length queries of ``n_tokens`` tokens).

    Args:
        norm_special: ``(L, H)`` share of the norm-based weight on the special keys
            (:func:`attnlab.analysis.norm_attention.norm_special_weight`).
        seconds, tolerance, queries_for_tolerance, curve_counts, curve_fixed_share: lesson only, the run's time,
            the early-stopping run and the fixedness curve.
    """
    return lesson_results.AveragingResult(
        n_queries=n_queries, n_tokens=n_tokens, layers=report.layers, fixedness=report.fixedness,
        sharpness=report.sharpness, fixedness_per_layer=report.per_layer, slope=report.slope,
        fixed_heads=averaging_claims.fixed_heads(report), fixed_threshold=averaging_claims.FIXED_THRESHOLD,
        verdicts=averaging_claims.verdicts(report), seconds=seconds, tolerance=tolerance,
        queries_for_tolerance=queries_for_tolerance, corpus="varied", control_fixedness=report.control,
        control_queries=report.control_count, curve_counts=list(curve_counts),
        curve_fixed_share=[float(s) for s in curve_fixed_share],
        labels=averaging_claims.head_labels(report).tolist(),
        fixed_share=averaging_claims.label_share(report).interval, n_shards=report.n_shards,
        difference_slope=report.difference_slope, js_score=report.js_score,
        information=report.information.estimate, content_fixedness=report.content.fixedness,
        content_labels=averaging_claims.reading_labels(report, CONTENT_KEYS).tolist(),
        content_fixed_share=averaging_claims.label_share(report.content).interval,
        special_weight=report.special_weight, sink_labels=averaging_claims.sink_labels(report).tolist(),
        norm_special_weight=norm_special)


# --------------------------------------------------------------------------- 09


def diversity(trend: DepthTrend, baseline: ShuffledBaseline, content_trend: DepthTrend,
              content_baseline: ShuffledBaseline, *, n_queries: int, shape: DepthShape | None = None,
              content_shape: DepthShape | None = None, clustering: LayerClustering | None = None,
              cls_mass_per_layer: np.ndarray | None = None,
              sep_mass_per_layer: np.ndarray | None = None) -> lesson_results.DiversityResult:
    """Lesson 09's record from the dispersion's trend with depth and its shuffled-layer control, on all keys
    and on the content keys, over ``n_queries`` texts.

    Args:
        shape, content_shape: :func:`attnlab.analysis.diversity.depth_shape` on all keys and on the content
            keys, the curve's shape that conclusion 2 is decided on.
        clustering: :func:`attnlab.analysis.diversity.layer_clustering`; without it (a quick look while a
            run grows) the clustering verdict repeats the trend's and the distances are NaN.
        cls_mass_per_layer, sep_mass_per_layer: lesson only, ``(L,)`` mass on [CLS] and [SEP].
    """
    verdict = with_other_reading(diversity_claims.verdict_more_alike_with_depth(trend, baseline), ALL_KEYS,
                                 diversity_claims.verdict_more_alike_with_depth(content_trend, content_baseline))
    return lesson_results.DiversityResult(
        n_queries=n_queries, layers=trend.layers, dispersion=trend.dispersion, slope=trend.slope,
        spearman=trend.spearman, verdict=verdict,
        clustering_verdict=(diversity_claims.verdict_layers_cluster(clustering) if clustering is not None
                            else verdict),
        within_layer=clustering.within if clustering is not None else float("nan"),
        between_layers=clustering.between if clustering is not None else float("nan"),
        cls_mass_per_layer=cls_mass_per_layer, sep_mass_per_layer=sep_mass_per_layer,
        baseline_slope=baseline.slope, baseline_p=baseline.p_value,
        content_dispersion=content_trend.dispersion, content_slope=content_trend.slope,
        content_baseline_slope=content_baseline.slope, content_baseline_p=content_baseline.p_value,
        shape=shape, content_shape=content_shape)


# --------------------------------------------------------------------------- 10


def unsplittable_reason(n_heads: int, target: int = head_count_claims.COLLAPSE_TARGET) -> str:
    """Why ``n_heads`` heads cannot be merged into ``target`` (a reason for "cannot tell"), or ``""``."""
    if n_heads % target == 0:
        return ""
    return N_("{n} heads cannot be merged into {k} groups of equal size").format(n=n_heads, k=target)


def regrouping(summaries: Mapping[int, GroupSummary], *, n_heads: int, n_texts: int) -> dict[str, Any]:
    """The regrouping half of lesson 10's record (conclusion 3): the heads merged into fewer groups, over
    ``n_texts`` texts, and the two collapse verdicts ("cannot tell" with the reason when ``n_heads`` cannot
    be merged into :data:`~attnlab.course.claims.head_count.COLLAPSE_TARGET` groups)."""
    target = head_count_claims.COLLAPSE_TARGET
    why = unsplittable_reason(n_heads, target)
    return dict(
        n_texts=n_texts, regroup=list(summaries.values()),
        collapse=(head_count_claims.verdict_fewer_heads_collapse(summaries, n_heads=n_heads, target=target)
                  if target in summaries else ClaimVerdict.missing(head_count_claims.COLLAPSE_CLAIM, why)),
        self_collapse=(head_count_claims.verdict_self_collapse(summaries, n_heads=n_heads, target=target)
                       if target in summaries else ClaimVerdict.missing(head_count_claims.SELF_CLAIM, why)))


def head_count(summaries: Mapping[int, GroupSummary], fixed_width: HeadCountStudy, fixed_head_size: HeadCountStudy,
               *, n_heads: int, n_texts: int, seeds: Sequence[int],
               train_seconds: float = float("nan")) -> lesson_results.HeadCountResult:
    """Lesson 10's record: the model's ``n_heads`` heads regrouped (:func:`regrouping`), and small
    transformers trained with each head count at a fixed width and at a fixed head size (conclusion 5).

    Args:
        seeds: the training seeds, one run per head count and seed in each design.
        train_seconds: lesson only, how long the training took.
    """
    designs = {"fixed width": fixed_width, "fixed head size": fixed_head_size}
    perplexities = {design: study.perplexities_by_heads() for design, study in designs.items()}
    head_sizes = {design: {h: study.config.head_size(h) for h in study.head_counts}
                  for design, study in designs.items()}
    counts = list(fixed_width.head_counts)
    return lesson_results.HeadCountResult(
        **regrouping(summaries, n_heads=n_heads, n_texts=n_texts),
        head_counts=counts, seeds=list(seeds),
        perplexity=[perplexities["fixed width"][h].tolist() for h in counts],
        head_count=head_count_claims.verdict_head_count(perplexities["fixed width"], design="fixed width"),
        perplexity_fixed_head=[perplexities["fixed head size"][h].tolist() for h in counts],
        d_head=FIXED_D_HEAD, d_model=fixed_width.config.d_model,
        more_heads={design: head_count_claims.verdict_more_heads_not_always_better(
            ppl, design=design, head_sizes=head_sizes[design]) for design, ppl in perplexities.items()},
        language=fixed_width.language.describe(), train_seconds=train_seconds)


# --------------------------------------------------------------------------- 11


def objective_agreements(per_objective: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``{"a vs b": rank agreement}`` of the heads' importance under two objectives, texts paired: sentence
    against token on every ranking text, then every other objective against those before it on the texts
    both were measured on (the first ones)."""
    found = {"sentence vs token": importance.importance_agreement(per_objective["sentence"], per_objective["token"],
                                                                   paired=True)}
    others = [k for k in per_objective if k not in ("sentence", "token")]
    for i, kind in enumerate(others):
        for first in ["sentence"] + others[:i]:
            n = min(len(per_objective[first]), len(per_objective[kind]))
            found[f"{first} vs {kind}"] = importance.importance_agreement(
                per_objective[first][:n], per_objective[kind][:n], paired=True)
    return found


def pruning(effects_eval: np.ndarray, per_objective: Mapping[str, np.ndarray], *, covering: Covering | None,
            tasks: TaskStudy | None, study: PruningStudy | None = None, verdict: ClaimVerdict | None = None,
            spearman_importance_ablation: float = float("nan"), confidence: np.ndarray | None = None,
            sensitivity_source: str = "",
            overlaps: Mapping[str, SurvivorOverlap] | None = None) -> lesson_results.PruningResult:
    """Lesson 11's record from its single-head ablations.

    Args:
        effects_eval: ``(N, L, H)`` loss change of each evaluation text when one head is removed.
        per_objective: objective -> ``(N', L, H)`` the same on the ranking texts ("sentence" and "token"
            on every one; other objectives on the first texts).
        covering, tasks: the covering study and the two task probes on the evaluation texts (None: not measured).
        study: lesson only, the pruning curves (their share removable alone is computed here).
        verdict, spearman_importance_ablation, confidence, sensitivity_source: lesson only.
        overlaps: lesson only, damage kind -> survivors against the most sensitive heads.
    """
    effects = effects_eval.mean(axis=0)
    agreements = objective_agreements(per_objective)
    overlaps = overlaps or {}
    return lesson_results.PruningResult(
        study=study, ablation=effects, verdict=verdict,
        removable_alone=(pruning_claims.removable_alone(effects, study.base_loss, study.tolerance,
                                                        relative=study.relative)
                         if study is not None else float("nan")),
        spearman_importance_ablation=spearman_importance_ablation, confidence=confidence,
        sensitivity_source=sensitivity_source,
        survivor_overlap={kind: c.overlap for kind, c in overlaps.items()},
        overlap_chance=overlaps["lexical"].expected_by_chance if "lexical" in overlaps else float("nan"),
        ablation_per_text=effects_eval,
        objective_importance={kind: values.mean(axis=0) for kind, values in per_objective.items()},
        split_half={kind: importance.split_half_agreement(values) for kind, values in per_objective.items()},
        objective_agreement=agreements["sentence vs token"], objective_agreements=agreements,
        n_importance_texts=len(per_objective["sentence"]), n_eval_texts=len(effects_eval),
        covering=covering, tasks=tasks)
