"""Regrouping heads: h' = H is the model's own attention; h' < H matches a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.analysis.head_stats import head_stats_of
from attnlab.analysis.regroup import (
    GroupSummary,
    check_group_count,
    focus_by_layer,
    group_summary,
    regroup_attention,
    regroup_summaries,
    valid_group_counts,
)

TEXTS = ["how do you play chess", "what is the best way to learn the rules of a new game", "hi"]


@pytest.mark.parametrize("arch", ["bert", "distilbert", "albert"])
def test_all_groups_reproduce_the_models_attention(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    expected = al.attention(m, TEXTS)  # the model's own output_attentions
    got = regroup_attention(m, TEXTS, m.n_heads)
    assert got.tensor.shape == expected.tensor.shape
    torch.testing.assert_close(got.tensor, expected.tensor, rtol=0, atol=1e-5)
    assert got.tokens == expected.tokens and got.lengths == expected.lengths


def test_bundled_reproduces_its_attention(bundled):
    expected = al.attention(bundled, TEXTS)
    got = regroup_attention(bundled, TEXTS, bundled.n_heads)
    torch.testing.assert_close(got.tensor, expected.tensor, rtol=0, atol=1e-5)


def _by_hand(m, text: str, n_groups: int) -> torch.Tensor:
    """Regrouped attention of one text, from hidden states, with plain loops."""
    enc = m.tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        hidden = m.model(**enc, output_hidden_states=True).hidden_states  # inputs of each layer
    width = m.hidden_size // n_groups
    out = []
    for layer, parts in enumerate(m.layer_parts()):
        x = hidden[layer][0]  # (T, D)
        q = x @ parts.query.weight.T + parts.query.bias
        k = x @ parts.key.weight.T + parts.key.bias
        maps = []
        for g in range(n_groups):
            cols = slice(g * width, (g + 1) * width)
            scores = torch.zeros(len(x), len(x))
            for i in range(len(x)):
                for j in range(len(x)):
                    scores[i, j] = torch.dot(q[i, cols], k[j, cols]) / math.sqrt(width)
            maps.append(torch.softmax(scores, dim=-1))
        out.append(torch.stack(maps))
    return torch.stack(out)  # (L, h', T, T)


@pytest.mark.parametrize("n_groups", [6, 3, 2, 1])
def test_fewer_groups_match_hand_computation(tiny_en, n_groups):
    got = regroup_attention(tiny_en, TEXTS, n_groups)
    assert got.tensor.shape[:3] == (len(TEXTS), tiny_en.n_layers, n_groups)
    for i in (0, 1):  # a padded text and the longest one
        expected = _by_hand(tiny_en, TEXTS[i], n_groups)
        torch.testing.assert_close(got[i], expected, rtol=0, atol=1e-5)
    n = got.lengths[0]  # the shorter text is padded
    assert n < got.tensor.shape[-1]
    assert got.tensor[0, :, :, n:, :].abs().max() == 0  # zero outside the text
    assert got.tensor[0, :, :, :, n:].abs().max() == 0


def test_regrouping_changes_the_maps(tiny_en):
    full = regroup_attention(tiny_en, TEXTS, 12)
    two = regroup_attention(tiny_en, TEXTS, 2)
    assert two.tensor.shape[2] == 2
    assert not torch.allclose(two.tensor[:, :, 0], full.tensor[:, :, :6].mean(2), atol=1e-3)


def test_bad_group_counts(tiny_en):
    assert valid_group_counts(12) == [12, 6, 4, 3, 2, 1]
    for bad in (5, 24):
        with pytest.raises(ValueError, match="divide"):
            regroup_attention(tiny_en, TEXTS, bad)
    for bad in (0, -2):
        with pytest.raises(ValueError, match="at least 1"):
            regroup_attention(tiny_en, TEXTS, bad)
    for bad in (2.0, True):
        with pytest.raises(TypeError):
            regroup_attention(tiny_en, TEXTS, bad)
    with pytest.raises(ValueError):
        regroup_attention(tiny_en, [], 2)
    with pytest.raises(ValueError, match="batch_size"):
        regroup_attention(tiny_en, TEXTS, 2, batch_size=0)
    assert check_group_count(tiny_en, np.int64(4)) == 4  # numpy integers are counts too


def test_group_summary_uses_head_stats(tiny_en):
    att = regroup_attention(tiny_en, TEXTS, 4)
    s, stats = group_summary(att), head_stats_of(att)
    assert s.n_groups == 4
    assert s.self_mass == pytest.approx(float(stats.self_mass.mean()))
    assert s.entropy_ratio == pytest.approx(float(stats.entropy.mean() / stats.uniform_entropy.mean()))
    assert s.focus == pytest.approx(max(s.self_mass, s.cls_mass, s.sep_mass))
    assert s.masses[s.focus_on] == s.focus
    assert GroupSummary.from_record(s.to_record()) == s


def test_regroup_summaries_cover_every_count(tiny_en):
    summaries = regroup_summaries(tiny_en, TEXTS, [12, 3])
    assert list(summaries) == [12, 3]
    assert summaries[3] == group_summary(regroup_attention(tiny_en, TEXTS, 3))


def test_focus_by_layer(tiny_en):
    att = regroup_attention(tiny_en, TEXTS, 2)
    stats = head_stats_of(att)
    focus = focus_by_layer(att)
    assert len(focus) == tiny_en.n_layers
    for layer, (token, mass) in enumerate(focus):
        masses = {"self": stats.self_mass[layer].mean(), "[CLS]": stats.cls_mass[layer].mean(),
                  "[SEP]": stats.sep_mass[layer].mean()}
        assert token == max(masses, key=masses.get) and mass == pytest.approx(masses[token])
