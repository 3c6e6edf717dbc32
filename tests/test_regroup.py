"""Regrouping heads: h' = H is the model's own attention; h' < H matches a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.analysis.regroup import (
    DESTINATIONS,
    GroupSummary,
    check_group_count,
    destination_index,
    group_summary,
    regroup_attention,
    regroup_summaries,
    summary_table,
    text_statistics,
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


def _destinations_by_hand(row: np.ndarray, i: int) -> dict[str, float]:
    """Where one query row's weight goes, with plain loops (first token [CLS], last [SEP])."""
    n = len(row)
    out = dict.fromkeys(DESTINATIONS, 0.0)
    for j, w in enumerate(row):
        if j == 0:
            out["first special token"] += w
        elif j == n - 1:
            out["last special token"] += w
        elif j == i:
            out["self"] += w
        elif j == i - 1:
            out["previous"] += w
        elif j == i + 1:
            out["next"] += w
        else:
            out["other"] += w
    return out


def test_destinations_partition_every_row():
    torch.manual_seed(0)
    maps = torch.rand(2, 3, 6, 6).softmax(dim=-1)  # (L, h', n, n)
    masses, ratio, confidence = text_statistics(maps)
    assert masses.shape == (2, 6) and ratio.shape == (2,) and confidence.shape == (2,)
    np.testing.assert_allclose(masses.sum(axis=1), 1.0, atol=1e-6)
    for layer in range(2):
        by_hand = dict.fromkeys(DESTINATIONS, 0.0)
        for g in range(3):
            for i in range(6):
                for k, v in _destinations_by_hand(maps[layer, g, i].numpy(), i).items():
                    by_hand[k] += v / (3 * 6)
        np.testing.assert_allclose(masses[layer], [by_hand[k] for k in DESTINATIONS], atol=1e-6)
        assert confidence[layer] == pytest.approx(float(maps[layer].amax(-1).mean()), abs=1e-6)
    flat = torch.full((1, 1, 5, 5), 0.2)
    assert text_statistics(flat)[1][0] == pytest.approx(1.0, abs=1e-6)  # uniform rows: entropy ratio 1
    assert destination_index(3).tolist() == [[3, 2, 4], [3, 0, 4], [3, 1, 4]]  # [CLS] next [SEP] / ...


def test_group_summary_matches_the_per_text_statistics(tiny_en):
    att = regroup_attention(tiny_en, TEXTS, 4)
    s = group_summary(att)
    assert s.n_groups == 4 and s.per_text.shape == (len(TEXTS), 6) and s.per_layer.shape == (tiny_en.n_layers, 6)
    for i, n in enumerate(att.lengths):
        masses, ratio, _ = text_statistics(att.tensor[i, :, :, :n, :n])
        np.testing.assert_allclose(s.per_text[i], masses.mean(axis=0), atol=1e-9)
        assert s.entropy_per_text[i] == pytest.approx(ratio.mean())
    np.testing.assert_allclose(s.per_text.sum(axis=1), 1.0, atol=1e-5)
    assert s.self_mass == pytest.approx(s.per_text[:, 0].mean())
    assert s.focus == pytest.approx(max(s.masses[k] for k in DESTINATIONS[:5]))
    assert s.focus_on != "other" and s.masses[s.focus_on] == s.focus
    back = GroupSummary.from_record(s.to_record())
    np.testing.assert_allclose(back.per_text, s.per_text)
    assert back.n_groups == s.n_groups and back.confidence == pytest.approx(s.confidence)


def test_regroup_summaries_cover_every_count(tiny_en):
    summaries = regroup_summaries(tiny_en, TEXTS, [12, 3], batch_size=2)  # one forward pass serves both
    assert list(summaries) == [12, 3]
    for g in (12, 3):
        expected = group_summary(regroup_attention(tiny_en, TEXTS, g))
        np.testing.assert_allclose(summaries[g].per_text, expected.per_text, atol=1e-6)
        np.testing.assert_allclose(summaries[g].entropy_per_text, expected.entropy_per_text, atol=1e-6)
        assert summaries[g].confidence == pytest.approx(expected.confidence, abs=1e-6)
    assert "first special token" in summary_table(summaries)


def test_focus_by_layer(tiny_en):
    s = group_summary(regroup_attention(tiny_en, TEXTS, 2))
    focus = s.focus_by_layer()
    assert len(focus) == tiny_en.n_layers
    for layer, (token, mass) in enumerate(focus):
        masses = dict(zip(DESTINATIONS, s.per_layer[layer]))
        assert token == max(DESTINATIONS[:5], key=masses.get) and mass == pytest.approx(masses[token])


def test_summary_table_columns_line_up_in_chinese(tiny_en):
    """The header pads by display width, so in Chinese every line of the table ends its numeric
    columns at the same terminal column as the rows below it."""
    from attnlab.core.display_width import display_width
    from attnlab.core.language import current_language, set_language

    summaries = regroup_summaries(tiny_en, TEXTS, [12, 3], batch_size=2)
    before = current_language()
    try:
        set_language("zh")
        lines = summary_table(summaries).splitlines()
    finally:
        set_language(before)
    header, rows = lines[0], lines[1:]
    assert any(display_width(ch) == 2 for ch in header)  # the header is in Chinese
    # the confidence column ends where the header's confidence label ends (two spaces, then the focus)
    ends = {display_width(line.rsplit("  ", 1)[0].rstrip()) for line in rows}
    assert ends == {display_width(header.rsplit("  ", 1)[0])}
