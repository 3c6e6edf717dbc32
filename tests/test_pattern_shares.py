"""Lesson 05's labels with intervals over texts: the vectorised rule agrees with the
taxonomy's per-head rule, a pattern-free head is never fixed, a planted one is, and a
head on the line is "cannot tell"."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.analysis import pattern_shares as ps
from attnlab.analysis.head_stats import head_sums
from attnlab.analysis.stats import ABOVE, BELOW, STRADDLES
from attnlab.analysis.taxonomy import FIXED, classify_heads


def _rows(rng, n: int, alpha: float) -> np.ndarray:
    return rng.dirichlet(np.full(n, alpha), size=n)  # (n, n): every row drawn on its own


def _text_maps(rng, n: int, self_weight: float | None, alpha: float = 1.0) -> np.ndarray:
    """One head's map of one text: i.i.d. Dirichlet rows, or ``self_weight`` on the diagonal plus such rows."""
    rows = _rows(rng, n, alpha)
    if self_weight is None:
        return rows
    return self_weight * np.eye(n) + (1 - self_weight) * rows


def _per_text(heads, n_texts: int = 30, seed: int = 0):
    """Per-text sums of one layer; ``heads`` is a list of functions (rng, n, text index) -> (n, n) map."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_texts):
        n = int(rng.integers(12, 21))
        maps = np.stack([h(rng, n, i) for h in heads])[None, None]  # (1, 1, H, n, n)
        out.append(head_sums(torch.as_tensor(maps), [n]))
    return out


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.0, 5.0, 20.0])
def test_iid_rows_are_never_fixed_patterns_in_lesson_05(alpha):
    per_text = _per_text([lambda rng, n, i: _text_maps(rng, n, None, alpha)] * 3)
    shares = ps.pattern_shares(per_text, n_boot=200)
    assert (shares.sides == BELOW).all()
    assert shares.fixed_share.high == pytest.approx(0.0, abs=1e-12)


def test_a_planted_self_pattern_is_fixed_and_a_head_on_the_line_cannot_tell():
    line = np.random.default_rng(9).uniform(0.25, 0.85, size=40)  # per text: [CLS] weight near the 0.6 line

    def cls_on_the_line(rng, n, i):  # [CLS]+[SEP] mass about 0.6, varying from text to text
        return line[i] * np.tile(np.eye(n)[0], (n, 1)) + (1 - line[i]) * _rows(rng, n, 1.0)

    heads = [lambda rng, n, i: _text_maps(rng, n, None),          # no pattern
             lambda rng, n, i: _text_maps(rng, n, 0.7),           # a fixed self pattern plus noise
             cls_on_the_line]
    shares = ps.pattern_shares(_per_text(heads, n_texts=40), n_boot=300)
    assert shares.sides.tolist() == [[BELOW, ABOVE, STRADDLES]]
    assert shares.counts() == {ABOVE: 1, BELOW: 1, STRADDLES: 1}
    assert shares.n_texts == 40  # the interval resamples the texts
    assert shares.fixed_share.low <= 1 / 3 <= shares.fixed_share.high


def test_the_vectorised_labels_agree_with_classify_heads():
    rng = np.random.default_rng(4)
    heads = [lambda r, n, i: _text_maps(r, n, None, alpha=0.1),       # sharp rows, no pattern: heterogeneous
             lambda r, n, i: _text_maps(r, n, 0.8),
             lambda r, n, i: np.roll(np.eye(n), -1, axis=1) * 0.9 + 0.1 / n,  # previous-token head
             lambda r, n, i: _text_maps(r, n, None, alpha=50.0),            # broad
             lambda r, n, i: np.tile(np.eye(n)[0], (n, 1)) * 0.7 + 0.3 / n]  # [CLS] column
    per_text = _per_text(heads, n_texts=int(rng.integers(10, 15)))
    stacked = ps.stack_sums(per_text)
    total = sum(per_text[1:], per_text[0]).finish()
    labels = classify_heads(total)
    kinds = ps.kinds_of(stacked.total())
    np.testing.assert_array_equal(kinds["fixed"][0], np.isin(labels.labels, FIXED))
    np.testing.assert_array_equal(kinds["broad"][0], labels.labels == "broad")
    np.testing.assert_array_equal(kinds["heterogeneous"][0], labels.labels == "heterogeneous")
    assert labels.labels.tolist() == [["heterogeneous", "self", "previous", "broad", "vertical"]]


def test_resampled_totals_are_weighted_sums_of_the_texts():
    per_text = _per_text([lambda rng, n, i: _text_maps(rng, n, 0.6)], n_texts=5)
    stacked = ps.stack_sums(per_text)
    w = np.array([[2, 0, 1, 1, 1]])
    again = per_text[0] + per_text[0] + per_text[2] + per_text[3] + per_text[4]
    part = stacked.weighted(w)
    np.testing.assert_allclose(part.sums["self_mass"][0], again.sums["self_mass"], atol=1e-12)
    assert part.rows[0] == again.n_rows
    with pytest.raises(ValueError):
        ps.stack_sums([])
