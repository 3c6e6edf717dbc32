"""Taxonomy labels on synthetic heads whose pattern is known by construction."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from attnlab.analysis.head_stats import head_stats, head_stats_of
from attnlab.analysis.taxonomy import (
    FIXED,
    LABELS,
    HeadLabels,
    classify_heads,
    fixed_share_by_depth,
    pick_examples,
    sample_texts,
    survey_stats,
    survey_text_sums,
    survey_texts,
)
from attnlab.core import language
from attnlab.core.memo import forget, is_memoized

TOKENS = [
    ["[CLS]", "a", "b", "c", "d", "e", "f", "[SEP]"],
    ["[CLS]", "g", "h", "i", "j", "[SEP]"],
]
PAIR_TOKENS = ["[CLS]", "a", "b", "c", "[SEP]", "d", "e", "f", "[SEP]"]
PAIR_SEGS = [0, 0, 0, 0, 0, 1, 1, 1, 1]


def patterns(n: int, rng: np.random.Generator, segs=None) -> np.ndarray:
    """``[1, 7, n, n]``: self, previous, next, [CLS], uniform, random sharp, block."""
    eye = np.eye(n)
    prev = np.eye(n, k=-1)
    prev[0, 0] = 1
    nxt = np.eye(n, k=1)
    nxt[-1, -1] = 1
    cls = np.zeros((n, n))
    cls[:, 0] = 1
    uniform = np.full((n, n), 1 / n)
    sharp = rng.dirichlet(np.full(n, 0.15), size=n)
    block = uniform.copy()
    if segs is not None:
        segs = np.asarray(segs)
        ordinary = np.ones(n, bool)
        ordinary[[0, n - 1]] = False
        ordinary[segs.tolist().index(1) - 1] = False  # the middle [SEP]
        for q in range(n):
            own = ordinary & (segs == segs[q])
            block[q] = own / own.sum()
    return np.stack([eye, prev, nxt, cls, uniform, sharp, block])[None]


def pad(per_text):
    t = max(a.shape[-1] for a in per_text)
    out = torch.zeros(len(per_text), *per_text[0].shape[:2], t, t)
    for i, a in enumerate(per_text):
        n = a.shape[-1]
        out[i, ..., :n, :n] = torch.as_tensor(a)
    return out


def test_synthetic_heads_get_their_labels():
    rng = np.random.default_rng(0)
    per_text = [patterns(len(t), rng) for t in TOKENS]
    stats = head_stats_of(pad(per_text), lengths=[len(t) for t in TOKENS], tokens=TOKENS)
    labels = classify_heads(stats)
    got = [labels[0, h] for h in range(7)]
    # without pair inputs the block head is just a spread-out head
    assert got == ["self", "previous", "next", "vertical", "broad", "heterogeneous", "broad"]
    assert labels.reasons[0, 3].startswith("first + last special token mass")  # no token named: models differ
    assert "[CLS]" not in " ".join(labels.reasons.ravel())
    assert "self mass 1.00" in labels.reasons[0, 0]


def test_block_needs_pairs_and_is_found_with_them():
    rng = np.random.default_rng(1)
    a = patterns(len(PAIR_TOKENS), rng, PAIR_SEGS)
    stats = head_stats_of(pad([a]), lengths=[len(PAIR_TOKENS)], tokens=[PAIR_TOKENS], segments=[PAIR_SEGS])
    labels = classify_heads(stats)
    assert labels[0, 6] == "block"
    assert labels[0, 4] == "broad"  # uniform over the pair: about half in each sentence
    assert "own-sentence mass 1.00" in labels.reasons[0, 6]


def test_thresholds_move_the_boundary():
    """A head with 40% self mass is positional only when the threshold is below 0.4."""
    n = 6
    a = np.full((n, n), 0.6 / (n - 1))
    np.fill_diagonal(a, 0.4)
    stats = head_stats_of(torch.as_tensor(a)[None, None, None], lengths=[n])
    assert classify_heads(stats, offset_share=1.1)[0, 0] != "self"
    assert classify_heads(stats, positional=0.35)[0, 0] == "self"
    # Voita et al.'s criterion: the row maximum sits on the diagonal in every row
    assert classify_heads(stats)[0, 0] == "self"


def test_counts_verdict_and_bad_input():
    rng = np.random.default_rng(2)
    per_text = [patterns(len(t), rng) for t in TOKENS]
    labels = classify_heads(head_stats_of(pad(per_text), lengths=[len(t) for t in TOKENS], tokens=TOKENS))
    counts = labels.counts()
    assert set(counts) == set(LABELS) and sum(counts.values()) == 7
    assert labels.heads("vertical") == [(0, 3)]
    assert labels.share(FIXED) == pytest.approx(4 / 7) and labels.share(["heterogeneous"]) == pytest.approx(1 / 7)
    assert "L1 H4" in labels.table() and "vertical" in labels.table()
    with pytest.raises(ValueError, match="unknown label"):
        labels.heads("diagonalish")
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        classify_heads(labels.stats, special=1.5)
    with pytest.raises(TypeError):
        classify_heads({"self_mass": 1})


def test_survey_adds_pairs_to_the_singles(tiny_en):
    texts = sample_texts("en", 6)
    stats = survey_stats(tiny_en, texts, n_pairs=3, batch_size=4)
    singles = head_stats(tiny_en, texts, batch_size=4)
    pairs = head_stats(tiny_en, texts[:3], texts[1:4], batch_size=4)
    assert stats.n_texts == singles.n_texts + pairs.n_texts == 9
    rows_singles, rows_pairs = singles.n_rows, pairs.n_rows
    want = (singles.self_mass * rows_singles + pairs.self_mass * rows_pairs) / (rows_singles + rows_pairs)
    np.testing.assert_allclose(stats.self_mass, want, rtol=1e-6)
    np.testing.assert_allclose(stats.segment_mass, pairs.segment_mass, rtol=1e-6)  # from the pairs only
    labels = classify_heads(stats)
    assert labels.shape == (tiny_en.n_layers, tiny_en.n_heads)
    assert np.isfinite(stats.segment_mass).all()
    assert len(sample_texts("zh")) >= 100 and len(sample_texts("en")) >= 100
    more = survey_texts("en", 120)  # the sample sentences, then corpus queries
    assert len(more) == 120 and more[:5] == sample_texts("en", 5) and len(set(more)) == 120


def test_pick_examples_and_sensitivity():
    rng = np.random.default_rng(0)
    per_text = [patterns(len(t), rng) for t in TOKENS]
    stats = head_stats_of(pad(per_text), lengths=[len(t) for t in TOKENS], tokens=TOKENS)
    labels = classify_heads(stats)
    picks = pick_examples(labels)
    assert picks["self"] == (0, 0) and picks["previous"] == (0, 1) and picks["next"] == (0, 2)
    assert picks["vertical"] == (0, 3) and picks["heterogeneous"] == (0, 5)
    assert picks["broad"] in [(0, 4), (0, 6)] and "block" not in picks
    assert classify_heads(stats, special=1.0).share(FIXED) == pytest.approx(4 / 7)  # the [CLS] head has mass 1.0


def test_fixed_share_by_depth():
    labels = np.array([["broad", "broad", "broad", "broad"],
                       ["self", "broad", "broad", "heterogeneous"],
                       ["self", "vertical", "next", "broad"]])
    fake = HeadLabels(labels=labels, reasons=np.full(labels.shape, ""), stats=None)  # type: ignore[arg-type]
    trend = fixed_share_by_depth(fake)
    np.testing.assert_allclose(trend.by_layer, [0.0, 0.25, 0.75])
    np.testing.assert_allclose(trend.by_layer, [np.isin(row, FIXED).mean() for row in labels])
    assert trend.spearman == pytest.approx(1.0)
    falling = HeadLabels(labels=labels[::-1], reasons=np.full(labels.shape, ""), stats=None)  # type: ignore[arg-type]
    assert fixed_share_by_depth(falling).spearman == pytest.approx(-1.0)
    flat = HeadLabels(labels=np.full((3, 2), "broad"), reasons=np.full((3, 2), ""), stats=None)  # type: ignore[arg-type]
    assert np.isnan(fixed_share_by_depth(flat).spearman)
    two = HeadLabels(labels=labels[:2], reasons=np.full((2, 4), ""), stats=None)  # type: ignore[arg-type]
    assert np.isnan(fixed_share_by_depth(two).spearman)


def test_lesson_figures_build(tiny_en, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.course.figures import FigureContext, discover, lesson_05

    registry = discover()
    ctx = FigureContext(model=tiny_en, smoke=True)
    calls = []
    survey = lesson_05.survey_stats
    monkeypatch.setattr(lesson_05, "survey_stats", lambda *a, **kw: calls.append(1) or survey(*a, **kw))
    forget(tiny_en)
    for name in ("taxonomy_map", "pattern_zoo", "example_line_view"):
        assert registry[name].lesson == "05_reading_heatmaps.ipynb"
        fig = registry[name].make(ctx)
        assert fig.axes, name
    assert calls == [1]  # the survey ran once for all three
    assert is_memoized(tiny_en, "figure", "05_labels", smoke=True) and not is_memoized(
        tiny_en, "figure", "05_labels", smoke=False)


def test_per_input_sums_add_up_to_the_survey(tiny_en):
    texts = sample_texts("en", 6)
    per_input = survey_text_sums(tiny_en, texts, n_pairs=3, batch_size=4)
    assert len(per_input) == 9 and all(s.n_texts == 1 for s in per_input)
    total = sum(per_input[1:], per_input[0]).finish()
    whole = survey_stats(tiny_en, texts, n_pairs=3, batch_size=4)
    for name in ("self_mass", "cls_mass", "entropy", "offset_share", "segment_mass"):
        np.testing.assert_allclose(getattr(total, name), getattr(whole, name), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(total.argmax_offset, whole.argmax_offset)


def test_reasons_are_stored_in_english_and_shown_in_the_readers_language():
    rng = np.random.default_rng(0)
    per_text = [patterns(len(t), rng) for t in TOKENS]
    stats = head_stats_of(pad(per_text), lengths=[len(t) for t in TOKENS], tokens=TOKENS)
    labels = classify_heads(stats)
    before = language.current_language()
    try:
        language.set_language("en")
        english = [labels.reason(0, h) for h in range(7)]
        assert english == [str(r) for r in labels.reasons[0, :7]]
        assert labels.table().splitlines()[0].split()[:2] == ["head", "label"]
        language.set_language("zh")
        chinese = [labels.reason(0, h) for h in range(7)]
        assert chinese[0].startswith("落到自己的份额 1.00 ≥ ")  # the same numbers, in the Chinese template
        assert chinese[3].startswith("首尾特殊 token 的份额 1.00 ≥ ")
        for shown, stored in zip(chinese, english):
            assert shown != stored and re.findall(r"\d+\.\d+", shown) == re.findall(r"\d+\.\d+", stored)
        header = labels.table().splitlines()[0]
        assert "标签" in header and "reason" not in header
        assert str(labels.reasons[0, 0]).startswith("self mass")  # what is stored stays English
    finally:
        language.set_language(before)
