"""Each lesson record the report reads is built by the function its lesson's saving cell calls.

Lessons 05-11 and 13 measure step by step in the notebook and hand their objects to
:mod:`attnlab.course.record_builders` (lesson 13: ``attention_limits_result.from_run``);
``attnlab report`` measures without a notebook (:mod:`attnlab.course.report_parts`). Here each lesson's
measurement is made as its notebook makes it, on a tiny random BERT (3 layers) at smoke sizes, and the record its
builder gives is compared, saved field by saved field, with the report's record on the same inputs.
The report's sized parts are held to one look (minimum = maximum), the size the notebook-side run uses.
"""

from __future__ import annotations

import dataclasses
import json
import math

import lesson_records as rec  # tests/lesson_records.py
import pytest
import torch

from attnlab.analysis import compare, covering, importance, pattern_shares, probes, regroup, taxonomy
from attnlab.analysis.diversity import depth_shape, depth_trend, head_distances, layer_clustering, shuffled_baseline
from attnlab.analysis.faithfulness import scoreboard
from attnlab.analysis.fixedness import fixedness_report
from attnlab.analysis.mean_map_replacement import mean_map_replacement, replace_together
from attnlab.analysis.norm_attention import norm_special_weight
from attnlab.analysis.sinks import sink_intervention, sink_profile
from attnlab.analysis.stats import MIN_UNITS
from attnlab.core.records import to_plain
from attnlab.core.streaming import iter_shards, mean_attention, merge_all, sharded_mean_attention
from attnlab.course import record_builders, registry, report_parts
from attnlab.course.evidence import Evidence, data_verdicts
from attnlab.data import corpus
from attnlab.data.querygen import DEFAULT_N_TOKENS, random_token_queries, same_length_queries
from attnlab.scratch import head_count_training as train

ATOL, RTOL = 1e-6, 1e-6


def plain(record) -> object:
    """A record as it is saved: strict JSON's types (NaN kept as NaN, to be compared as NaN)."""
    return json.loads(json.dumps(to_plain(record), allow_nan=True))


def differences(a: object, b: object, where: str = "") -> list[str]:
    """Where two saved records differ (floats within ``ATOL`` / ``RTOL``, NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a.keys() ^ b.keys())}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: lengths {len(a)} and {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and (
                (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)):
            return []
        return [f"{where}: {a!r} and {b!r}"]
    return [] if a == b else [f"{where}: {a!r} and {b!r}"]


# --------------------------------------------------------------------------- each lesson, as its notebook runs


def lesson_05(m, size):
    per_input = taxonomy.default_survey_sums(m)                     # one HeadSums per input
    labels = taxonomy.classify_heads(taxonomy.default_survey(m))    # the lesson's labels
    shares = pattern_shares.pattern_shares(pattern_shares.stack_sums(per_input), n_boot=size["n_boot"])
    return record_builders.head_patterns(labels, shares)


def lesson_06(m, size):
    n_queries = size["queries"][0]
    study = compare.perturbation_study(m, corpus.queries(m.language, n_queries, seed=0), seed=0, precision="fp32")
    return record_builders.perturbation(study, chosen_layer=m.n_layers - 1, n_boot=size["n_boot"])


def lesson_08(m, size):
    shard, n_boot = size["shard"], size["n_boot"]
    queries = same_length_queries(m, size["queries"][0], DEFAULT_N_TOKENS)
    shards = list(iter_shards(m, queries, shard, batch_size=64, precision="fp32"))
    control = sharded_mean_attention(m, random_token_queries(m, size["control"], DEFAULT_N_TOKENS), shard,
                                     batch_size=64, precision="fp32")
    report = fixedness_report(shards, control=control, n_boot=n_boot)
    sample = list(same_length_queries(m, size["norm_queries"], DEFAULT_N_TOKENS))
    return record_builders.averaging(report, n_queries=merge_all(shards).count, n_tokens=DEFAULT_N_TOKENS,
                                     norm_special=norm_special_weight(m, sample, layers=report.layers))


def lesson_09(m, size):
    hd = head_distances(m, list(same_length_queries(m, size["texts"][0], 10)), batch_size=32, content_keys=True,
                        precision="fp32")
    n = size["n_boot"]
    return record_builders.diversity(depth_trend(hd, n_boot=n), shuffled_baseline(hd, n_perm=n),
                                     depth_trend(hd.content, n_boot=n), shuffled_baseline(hd.content, n_perm=n),
                                     n_queries=hd.count, shape=depth_shape(hd, n_boot=n),
                                     content_shape=depth_shape(hd.content, n_boot=n), clustering=layer_clustering(hd))


def lesson_10(m, size):
    texts = corpus.texts(m.language, size["texts"], seed=0)
    summaries = regroup.regroup_summaries(m, texts, regroup.valid_group_counts(m.n_heads))
    config, language, seeds = train.smoke_config(), train.LookupLanguage(), size["seeds"]
    study = train.head_count_study(train.HEAD_COUNTS, seeds, language=language, config=config, workers=1)
    fixed_head = train.head_count_study(train.HEAD_COUNTS, seeds, language=language,
                                        config=train.fixed_head_size(config), reuse=study, workers=1)
    return record_builders.head_count(summaries, study, fixed_head, n_heads=m.n_heads, n_texts=len(texts),
                                      seeds=seeds)


def lesson_11(m, size):
    n_rank, n_eval = size["importance_texts"], size["eval_texts"]
    queries = corpus.queries(m.language, n_rank + n_eval + size["probe_texts"], seed=1)
    ranking_queries, eval_queries = queries[:n_rank], queries[n_rank:n_rank + n_eval]
    ranking = importance.make_objective(m, [q.text for q in ranking_queries], kind="sentence", batch_size=64)
    held_out = importance.make_objective(m, [q.text for q in eval_queries], kind="sentence", batch_size=64)
    per_objective = importance.ablation_per_text(m, ranking, precision="fp32")  # {"sentence", "token"}: (N, L, H)
    fitted = probes.fit_probes(m, ranking_queries + queries[n_rank + n_eval:], held_out, eval_queries)
    sweep = importance.ablation_per_text(m, held_out, keep={"vectors": importance.sentence_vectors_of,
                                                            "tasks": fitted.losses, "refits": fitted.refit_losses})
    cover = covering.covering_study(m, held_out, n_sets=size["covering_sets"],
                                    importance=per_objective["sentence"].mean(axis=0), single=sweep["vectors"])
    tasks = probes.task_study(m, fitted, held_out, masked=sweep["tasks"], refits=sweep["refits"])
    return record_builders.pruning(sweep["sentence"], per_objective, covering=cover, tasks=tasks)


def lesson_13(m, size):
    builder = registry.by_key("attention_limits").build
    with torch.no_grad():
        texts = [t + " ?" for t in corpus.texts(m.language, size["sink_texts"])]
        queries = list(same_length_queries(m, size["mean_queries"] + size["replace"]))
        mean = mean_attention(m, queries[:size["mean_queries"]], layers=[m.n_layers - 1], progress=False)
        replaced = queries[size["mean_queries"]:]
        return builder(sink_profile(m, texts), sink_intervention(m, texts[:size["intervene"]], seed=0),
                       scoreboard(m, corpus.texts(m.language, size["scored"], seed=1)),
                       mean_map_replacement(m, replaced, mean, seed=0),
                       replace_together(m, replaced, mean, n_random=size["orders"], seed=0))


#: evidence key -> the lesson's own way to its record
NOTEBOOK_WAY = {"patterns": lesson_05, "perturbation": lesson_06, "averaging": lesson_08, "diversity": lesson_09,
                "head_count": lesson_10, "pruning": lesson_11, "attention_limits": lesson_13}
#: the sized parts held to one look: part -> its size knob
ONE_LOOK = {"perturbation": "queries", "diversity": "texts", "averaging": "queries"}
#: lesson 13's smoke sizes made smaller still (its record keeps every number, however few texts)
LESSON_13_FEWER = {"sink_texts": 6, "intervene": 3, "scored": 3, "mean_queries": 20, "replace": 2}


@pytest.fixture(scope="module")
def tiny3(tiny_factory):
    """The tiny random English BERT with 3 layers (lesson 09's trend with depth needs 3)."""
    return tiny_factory("bert", "en", n_layers=3)


@pytest.fixture
def one_look_smoke(monkeypatch):
    """Smoke sizes, each sized part reading its minimum only (the averaging part: the fewest shards)."""
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    sizes = {part: dict(knobs) for part, knobs in report_parts.SIZES.items()}
    for part, knob in ONE_LOOK.items():
        full, smoke = sizes[part][knob]
        least = MIN_UNITS * sizes[part]["shard"][1] if part == "averaging" else smoke[0]
        sizes[part][knob] = (full, (least, least))
    for knob, fewer in LESSON_13_FEWER.items():  # lesson 13's builder is the notebook's own: the fewest texts
        sizes["attention_limits"][knob] = (sizes["attention_limits"][knob][0], fewer)
    monkeypatch.setattr(report_parts, "SIZES", sizes)


def test_every_record_the_report_reads_is_in_the_registry_with_its_builder():
    """The registry lists each record lesson 12 and the report read once: the report's parts, lesson 12's
    evidence fields and this test's lessons are the same keys, each record with a builder."""
    keys = [r.key for r in registry.EVIDENCE]
    assert keys == list(report_parts.PARTS) == list(NOTEBOOK_WAY)
    assert keys == [f.name for f in dataclasses.fields(Evidence) if f.name != "origin"]
    assert all(r.build is not None and r.conclusions for r in registry.EVIDENCE)
    assert len({r.name for r in registry.RECORDS}) == len(registry.RECORDS)
    assert [r.key for r in registry.RERUN] == [k for k in keys if k != "attention_limits"]


def test_registry_names_the_conclusions_each_record_decides():
    """Judged on hand-made evidence without one record, exactly the conclusions the registry names for it
    change (conclusion 6 counted once for its two halves)."""
    def rows(ev: Evidence) -> dict[str, str]:
        return {label: json.dumps([v.verdict, v.numbers], default=str, sort_keys=True)
                for label, v in data_verdicts(ev, safe=True).items()}

    everything = rows(rec.evidence())
    for record in registry.RERUN:
        without = rows(rec.evidence(**{record.key: None}))
        changed = sorted({label[0] for label in everything if without[label] != everything[label]})
        assert changed == sorted(record.conclusions), record.key


@pytest.mark.parametrize("key", list(NOTEBOOK_WAY))
def test_record_builders_shared(key, tiny3, one_look_smoke):
    """The lesson's saving cell (its builder on its own objects) and the report's part give the same record."""
    part = report_parts.PARTS[key][2]
    from_report, _stopping = part(tiny3, precision="fp32")
    from_notebook = NOTEBOOK_WAY[key](tiny3, report_parts.sizes_of(key))
    assert type(from_notebook) is type(from_report) is registry.by_key(key).kind
    found = differences(plain(from_notebook), plain(from_report))
    assert not found, f"{key}: the lesson's record and the report's differ at\n" + "\n".join(found[:20])


def test_the_comparison_sees_a_difference():
    """The comparison can fail: a number moved past the tolerance, a NaN against a number, a missing field."""
    assert differences({"a": [1.0, float("nan")]}, {"a": [1.0, float("nan")]}) == []
    assert differences({"a": 1.0}, {"a": 1.0 + 1e-9}) == []
    assert differences({"a": 1.0}, {"a": 1.001}) == [".a: 1.0 and 1.001"]
    assert differences({"a": float("nan")}, {"a": 0.0}) and differences({"a": 1}, {"b": 1})
    assert differences({"a": ["fixed"]}, {"a": ["varying"]})
