"""The measurements behind the article's six conclusions, run headless for ``attnlab report``.

Lessons 05, 06, 08, 09, 10, 11 and 13 measure, narrate and save a typed record
(:mod:`attnlab.course.lesson_results`); lesson 12 judges the six conclusions
from them. Here the same measurements run without a notebook, one function per
lesson (a *part*), each returning the record its lesson saves (the fields the
conclusions read, and the lesson's own verdicts), so that
:func:`attnlab.course.evidence.all_conclusions` can judge any model.

Sized by reliability. A part that draws queries reads them in growing looks
(a minimum, doubling up to a maximum) and stops once its deciding verdict has
settled: lesson 08's rule (:mod:`attnlab.analysis.settling`), with the
verdict word watched instead of each head's label, so it stops only after
:data:`~attnlab.analysis.settling.PATIENCE` looks running gave the same word
and none of them "cannot tell". Looks double, so a run of at most
``log2(max / min) + 1`` looks is watched (few looks keep the chance of
stopping on a lucky streak small); every look is recorded in a
:class:`Stopping`. Lesson 08's own part stops with lesson 08's rule on the
head labels, shard after shard. Parts over fixed sets of texts (lesson 05's
survey, lesson 11's split halves) are not sized.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from attnlab.analysis import covering, importance, pattern_shares, probes, regroup, taxonomy
from attnlab.analysis.compare import PerturbationStudy, perturbation_study
from attnlab.analysis.diversity import (
    HeadDistances,
    depth_shape,
    depth_trend,
    head_distances,
    layer_clustering,
    shuffled_baseline,
)
from attnlab.analysis.faithfulness import scoreboard
from attnlab.analysis.fixedness import fixedness_report
from attnlab.analysis.mean_map_replacement import mean_map_replacement, replace_together
from attnlab.analysis.norm_attention import norm_special_weight
from attnlab.analysis.settling import PATIENCE, LabelWatch, average_until_settled
from attnlab.analysis.sinks import sink_intervention, sink_profile
from attnlab.analysis.stats import MIN_UNITS
from attnlab.core.config import pick
from attnlab.core.distributions import CONTENT_KEYS
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record
from attnlab.core.streaming import iter_shards, mean_attention, merge_all, sharded_mean_attention
from attnlab.course import attention_limits_result, lesson_results, record_builders, registry
from attnlab.course.attention_limits_result import AttentionLimitsResult
from attnlab.course.claims import averaging as averaging_claims
from attnlab.course.claims import conclusions as conclusion_claims
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE
from attnlab.data import corpus
from attnlab.data.querygen import DEFAULT_N_TOKENS, random_token_queries, same_length_queries
from attnlab.scratch import head_count_training as train


@dataclass
class Stopping(Record):
    """Where a sized part stopped, and why.

    Attributes:
        unit: what was drawn ("queries", "texts", "shards of queries").
        minimum, maximum: the fewest and the most units the part may read.
        looks: units read at each look at the verdict.
        words: the deciding verdict (or ``"labels changed: k heads"``) at each look.
        settled: True when the rule stopped it before the maximum ran out.
        used: units the part's numbers rest on.
        rule: the stopping rule, in words.
    """

    unit: str
    minimum: int
    maximum: int
    looks: list[int] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    settled: bool = False
    used: int = 0
    rule: str = ""


#: the rule every sized part follows, in words
RULE = (f"looks at doubling sizes from the minimum to the maximum; stop when {PATIENCE} looks running "
        "gave the same deciding verdict as the look before and none was \"cannot tell\"")


def doubling_looks(minimum: int, maximum: int) -> list[int]:
    """``[minimum, 2 minimum, 4 minimum, ..., maximum]``: the sizes at which a sized part looks."""
    if minimum < 1 or maximum < minimum:
        raise ValueError(f"need 1 <= minimum <= maximum, got {minimum} and {maximum}")
    looks = [minimum]
    while looks[-1] < maximum:
        looks.append(min(2 * looks[-1], maximum))
    return looks


def grow_until_settled(minimum: int, maximum: int, measure_more: Callable[[int, int], object],
                       merge: Callable[[object, object], object], word_of: Callable[[object], str], *,
                       unit: str, patience: int = PATIENCE) -> tuple[object, Stopping]:
    """Measure units ``[0, n)`` in growing looks (:func:`doubling_looks`) until the verdict settles.

    Args:
        measure_more: ``measure_more(start, stop)`` measures units ``start..stop-1`` only.
        merge: joins the measurement so far with the new one.
        word_of: the deciding verdict word of a measurement (``"cannot tell"`` never settles).

    Returns:
        ``(measurement, stopping)``.
    """
    watch = LabelWatch(unsure=UNSURE, patience=patience)
    stopping = Stopping(unit=unit, minimum=minimum, maximum=maximum, rule=RULE)
    so_far, done = None, 0
    for size in doubling_looks(minimum, maximum):
        more = measure_more(done, size)
        so_far = more if so_far is None else merge(so_far, more)
        done = size
        word = word_of(so_far)
        stopping.looks.append(size)
        stopping.words.append(word)
        if watch.update(np.asarray([word], dtype=object)):
            break
    stopping.settled = watch.settled
    stopping.used = done
    return so_far, stopping


def word_of_interval(interval, *, below: float | None = None, above: float | None = None) -> str:
    """``"holds"`` when ``interval`` lies below ``below`` (or above ``above``), ``"does not hold"`` when
    on the other side, else ``"cannot tell"``."""
    if interval is None or interval.n < MIN_UNITS:
        return UNSURE
    if below is not None:
        return HOLDS if interval.below(below) else FAILS if interval.above(below) else UNSURE
    return HOLDS if interval.above(above) else FAILS if interval.below(above) else UNSURE


# --------------------------------------------------------------------------- sizes


def sizes_of(part: str) -> dict:
    """This run's sizes of ``part`` (smoke or full, from ``ATTNLAB_SMOKE``), from its row of the registry
    (:attr:`attnlab.course.registry.LessonRecord.sizes`)."""
    return {key: pick(*value) for key, value in registry.by_key(part).sizes.items()}


# --------------------------------------------------------------------------- 05


def patterns(m: LoadedModel, *, precision: str = "fp32",
             progress: bool = False) -> tuple[lesson_results.HeadPatternsResult, None]:
    """Lesson 05's survey: a pattern label per head and the share of fixed patterns, interval over inputs."""
    size = sizes_of("patterns")
    per_input = taxonomy.default_survey_sums(m, progress=progress)
    stats = sum(per_input[1:], per_input[0]).finish()
    shares = pattern_shares.pattern_shares(pattern_shares.stack_sums(per_input), n_boot=size["n_boot"])
    return record_builders.head_patterns(taxonomy.classify_heads(stats), shares), None


# --------------------------------------------------------------------------- 06


def merge_studies(a: PerturbationStudy, b: PerturbationStudy) -> PerturbationStudy:
    """Two perturbation studies of disjoint queries as one (queries of ``a`` first)."""
    def cat(x: dict, y: dict) -> dict:
        return {k: np.concatenate([x[k], y[k]]) for k in x if k in y}

    return PerturbationStudy(
        position=cat(a.position, b.position), token=cat(a.token, b.token), texts=a.texts + b.texts,
        perturbed={k: a.perturbed[k] + b.perturbed.get(k, []) for k in a.perturbed},
        skipped=a.skipped + b.skipped, model_name=a.model_name, seed=a.seed,
        displacement=cat(a.displacement, b.displacement), content_position=cat(a.content_position, b.content_position),
        content_token=cat(a.content_token, b.content_token))


def perturbation(m: LoadedModel, *, precision: str = "fp32",
                 progress: bool = False) -> tuple[lesson_results.PerturbationResult, Stopping]:
    """Lesson 06: how each head's map changes under lexical and syntactic damage, sized by conclusion 1's
    second half (the share of content-followers on the content keys against "a few")."""
    size = sizes_of("perturbation")
    n_boot = size["n_boot"]
    low, high = size["queries"]
    queries = corpus.queries(m.language, high, seed=0)
    high = min(high, len(queries))

    def measure(start: int, stop: int) -> PerturbationStudy:
        return perturbation_study(m, queries[start:stop], seed=start, progress=progress, precision=precision)

    def word(study: PerturbationStudy) -> str:
        share = study.follower_share("content", "both", keys=CONTENT_KEYS, n_boot=n_boot)
        return word_of_interval(share, below=conclusion_claims.FEW_CONTENT)

    study, stopping = grow_until_settled(min(low, high), high, measure, merge_studies, word, unit="queries")
    return record_builders.perturbation(study, chosen_layer=m.n_layers - 1, n_boot=n_boot), stopping


# --------------------------------------------------------------------------- 08


def averaging(m: LoadedModel, *, precision: str = "fp32", progress: bool = False,
              resume_dir=None) -> tuple[lesson_results.AveragingResult, Stopping]:
    """Lesson 08: mean maps over same-length queries and each head's fixedness, read shard after shard
    until the head labels settle (lesson 08's own rule); finished shards are kept in ``resume_dir``."""
    size = sizes_of("averaging")
    shard, n_boot = size["shard"], size["n_boot"]
    low, high = size["queries"]
    queries = same_length_queries(m, high, DEFAULT_N_TOKENS)
    stopping = Stopping(unit="shards of queries", minimum=max(MIN_UNITS, low // shard), maximum=high // shard,
                        rule=f"lesson 08's rule: after each shard, label every head; stop when for {PATIENCE} "
                             "shards running no label changed and none was \"cannot tell\"")

    def label_heads(taken):
        return averaging_claims.head_labels(fixedness_report(taken, n_boot=n_boot))

    shards = iter_shards(m, queries, shard, batch_size=64, resume_dir=resume_dir, progress=progress,
                         precision=precision)
    run = average_until_settled(itertools.islice(shards, stopping.maximum), label_heads,
                                unsure=averaging_claims.UNSURE_LABEL, start=stopping.minimum)
    stopping.looks = list(range(run.first_labelled, run.first_labelled + len(run.watch.history)))
    stopping.words = [f"{c} heads changed label" if c >= 0 else "first labels" for c in run.watch.changes]
    stopping.settled, stopping.used = run.settled, run.n_shards
    control = sharded_mean_attention(m, random_token_queries(m, size["control"], DEFAULT_N_TOKENS), shard,
                                     batch_size=64, resume_dir=resume_dir, progress=False, precision=precision)
    report = fixedness_report(run.shards, control=control, n_boot=n_boot)
    sample = list(same_length_queries(m, size["norm_queries"], DEFAULT_N_TOKENS))  # for the norm-based weights
    record = record_builders.averaging(report, n_queries=merge_all(run.shards).count, n_tokens=DEFAULT_N_TOKENS,
                                       norm_special=norm_special_weight(m, sample, layers=report.layers))
    return record, stopping


# --------------------------------------------------------------------------- 09


def merge_distances(a: HeadDistances, b: HeadDistances) -> HeadDistances:
    """Head distances over two disjoint sets of texts as one (a count-weighted mean, texts of ``a`` first)."""
    na, nb = a.count, b.count
    content = merge_distances(a.content, b.content) if a.content is not None and b.content is not None else None
    return HeadDistances(distance=(a.distance * na + b.distance * nb) / (na + nb),
                         per_text=torch.cat([a.per_text, b.per_text]), layers=a.layers, n_heads=a.n_heads,
                         reading=a.reading, content=content)


def _diversity_record(hd: HeadDistances, n_boot: int, *, clustering: bool = False) -> lesson_results.DiversityResult:
    return record_builders.diversity(
        depth_trend(hd, n_boot=n_boot), shuffled_baseline(hd, n_perm=n_boot), depth_trend(hd.content, n_boot=n_boot),
        shuffled_baseline(hd.content, n_perm=n_boot), n_queries=hd.count,
        shape=depth_shape(hd, n_boot=n_boot), content_shape=depth_shape(hd.content, n_boot=n_boot),
        clustering=layer_clustering(hd) if clustering else None)


def diversity(m: LoadedModel, *, precision: str = "fp32",
              progress: bool = False) -> tuple[lesson_results.DiversityResult, Stopping]:
    """Lesson 09: within-layer dispersion of heads against depth and its shuffled-layer control,
    sized by conclusion 2's verdict."""
    size = sizes_of("diversity")
    low, high = size["texts"]
    texts = list(same_length_queries(m, high, 10))
    high = min(high, len(texts))

    def measure(start: int, stop: int) -> HeadDistances:
        return head_distances(m, texts[start:stop], batch_size=32, content_keys=True, precision=precision,
                              progress=progress)

    def word(hd: HeadDistances) -> str:
        return conclusion_claims.conclusion_2(_diversity_record(hd, size["n_boot"] // 4)).verdict

    hd, stopping = grow_until_settled(min(low, high), high, measure, merge_distances, word, unit="texts")
    return _diversity_record(hd, size["n_boot"], clustering=True), stopping


# --------------------------------------------------------------------------- 10


def head_count(m: LoadedModel, *, precision: str = "fp32", progress: bool = False,
               trained: lesson_results.HeadCountResult | None = None) -> tuple[lesson_results.HeadCountResult, None]:
    """Lesson 10: the model's heads regrouped into fewer (conclusion 3), and small transformers trained with
    different head counts in two designs (conclusion 5; this half does not depend on ``m``, so a record
    ``trained`` on another model, e.g. the trained twin of an untrained one, lends its training half)."""
    size = sizes_of("head_count")
    texts = corpus.texts(m.language, size["texts"], seed=0)
    summaries = regroup.regroup_summaries(m, texts, regroup.valid_group_counts(m.n_heads), progress=progress)
    if trained is not None:
        return dataclasses.replace(trained, **record_builders.regrouping(summaries, n_heads=m.n_heads,
                                                                         n_texts=len(texts))), None
    language = train.LookupLanguage()
    config = pick(train.TrainConfig(), train.smoke_config())
    seeds = size["seeds"]
    workers = pick(os.cpu_count() or 1, 1)  # the runs are independent: one per core at a time, as in lesson 10
    study = train.head_count_study(train.HEAD_COUNTS, seeds, language=language, config=config, progress=progress,
                                   workers=workers)
    fixed_head = train.head_count_study(train.HEAD_COUNTS, seeds, language=language,
                                        config=train.fixed_head_size(config), progress=progress, reuse=study,
                                        workers=workers)
    record = record_builders.head_count(summaries, study, fixed_head, n_heads=m.n_heads, n_texts=len(texts),
                                        seeds=seeds)
    return record, None


# --------------------------------------------------------------------------- 11


def pruning(m: LoadedModel, *, precision: str = "fp32", progress: bool = False,
            describe: bool = True) -> tuple[lesson_results.PruningResult, None]:
    """Lesson 11: single-head ablation on one set of texts, the covering study and two task probes on
    another (conclusions 4 and 6). Lesson 11's pruning curves are left out: they decide only that
    lesson's own verdict, which no conclusion reads, and they were half of this part's time.
    ``describe=False`` (the untrained twin's): the covering study measures only what conclusion 4
    decides on (:func:`attnlab.analysis.covering.covering_study`)."""
    size = sizes_of("pruning")
    n_importance, n_eval = size["importance_texts"], size["eval_texts"]
    queries = corpus.queries(m.language, n_importance + n_eval + size["probe_texts"], seed=1)
    importance_texts = [q.text for q in queries[:n_importance]]
    eval_queries = queries[n_importance:n_importance + n_eval]
    eval_texts = [q.text for q in eval_queries]
    ranking = importance.make_objective(m, importance_texts, kind="sentence", batch_size=64)
    held_out = importance.make_objective(m, eval_texts, kind="sentence", batch_size=64)
    effects_rank = importance.ablation_per_text(m, ranking, progress=progress, precision=precision)
    imp = effects_rank["sentence"].mean(axis=0)  # (L, H)
    try:
        fitted = probes.fit_probes(m, queries[:n_importance] + queries[n_importance + n_eval:], held_out,
                                   eval_queries)
    except ValueError:  # e.g. a tokenizer whose every token starts a word: nothing to probe (6b cannot tell)
        fitted = None
    keep = {"vectors": importance.sentence_vectors_of,
            **({"tasks": fitted.losses, "refits": fitted.refit_losses} if fitted is not None else {})}
    sweep = importance.ablation_per_text(m, held_out, progress=progress, keep=keep)
    effects_eval = sweep["sentence"]  # (N, L, H)
    cover = covering.covering_study(m, held_out, n_sets=size["covering_sets"], importance=imp, single=sweep["vectors"],
                                    describe=describe)
    tasks = (probes.task_study(m, fitted, held_out, masked=sweep["tasks"], refits=sweep["refits"])
             if fitted is not None else None)  # from the same sweep: no sweep of its own
    record = record_builders.pruning(effects_eval, effects_rank, covering=cover, tasks=tasks)  # no pruning curves
    return record, None


# --------------------------------------------------------------------------- 13


def attention_limits(m: LoadedModel, *, precision: str = "fp32",
                     progress: bool = False) -> tuple[AttentionLimitsResult, None]:
    """Lesson 13: sinks, the faithfulness scoreboard and mean-map replacement (cited under conclusion 1)."""
    size = sizes_of("attention_limits")
    mark = "？" if m.language == "zh" else " ?"
    with torch.no_grad():
        sink_texts = [t + mark for t in corpus.texts(m.language, size["sink_texts"])]
        profile = sink_profile(m, sink_texts)
        intervention = sink_intervention(m, sink_texts[:size["intervene"]], seed=0)
        board = scoreboard(m, corpus.texts(m.language, size["scored"], seed=1))
        queries = list(same_length_queries(m, size["mean_queries"] + size["replace"]))
        layers = pick(None, [m.n_layers - 1])
        mean = mean_attention(m, queries[:size["mean_queries"]], layers=layers, progress=False)
        held_out = queries[size["mean_queries"]:]
        replacement = mean_map_replacement(m, held_out, mean, seed=0)
        together = replace_together(m, held_out, mean, n_random=size["orders"], seed=0)
    return attention_limits_result.from_run(profile, intervention, board, replacement, together), None


#: the parts in the order they run, one per record of lesson 12's evidence (:data:`attnlab.course.registry.EVIDENCE`),
#: each the function of this module named by the record's key: name -> (lesson, what it measures, function)
PARTS: dict[str, tuple[str, str, Callable]] = {r.key: (r.lesson, r.what, globals()[r.key])
                                               for r in registry.EVIDENCE}
