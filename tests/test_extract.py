"""Attention extraction checked against an independent, hand-written recomputation."""

from __future__ import annotations

import math

import pytest
import torch

import attnlab as al
from attnlab.core.extract import to_word_level
from attnlab.tools.testing import ARCHITECTURES


def _self_attention_modules(model, model_type):
    """(query, key) Linear pairs of each layer, looked up by hand for the test."""
    if model_type == "distilbert":
        return [(l.attention.q_lin, l.attention.k_lin) for l in model.transformer.layer]
    if model_type == "albert":
        att = model.encoder.albert_layer_groups[0].albert_layers[0].attention
        return [(att.query, att.key)] * model.config.num_hidden_layers
    return [(l.attention.self.query, l.attention.self.key) for l in model.encoder.layer]


def reference_attention(m, text: str) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_head)) per layer and head, from each layer's own weights
    applied to that layer's input hidden states. Returns [L, H, n, n]."""
    enc = m.tokenizer(text, return_tensors="pt")
    inputs = {"input_ids": enc["input_ids"]}
    with torch.no_grad():
        out = m.model(**inputs, output_hidden_states=True)
        maps = []
        for layer, (wq, wk) in enumerate(_self_attention_modules(m.model, m.model_type)):
            x = out.hidden_states[layer][0]  # (n, d)
            n = x.shape[0]
            q = wq(x).view(n, m.n_heads, m.head_dim).transpose(0, 1)  # (H, n, dh)
            k = wk(x).view(n, m.n_heads, m.head_dim).transpose(0, 1)
            scores = q @ k.transpose(1, 2) / math.sqrt(m.head_dim)  # (H, n, n)
            maps.append(torch.softmax(scores, dim=-1))
    return torch.stack(maps)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_attention_matches_independent_recomputation(tiny_factory, language):
    m = tiny_factory("bert", language)
    text = "王者荣耀怎么玩" if language == "zh" else "how do you play chess"
    att = al.attention(m, [text])
    torch.testing.assert_close(att[0], reference_attention(m, text), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_every_architecture_loads_and_extracts(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    assert m.model_type == arch
    assert (m.n_layers, m.n_heads) == (2, 12)
    att = al.attention(m, ["how do you play chess", "the game"])
    assert att.tensor.shape == (2, 2, 12, max(att.lengths), max(att.lengths))
    torch.testing.assert_close(att[0], reference_attention(m, "how do you play chess"), atol=1e-5, rtol=1e-5)
    assert len(m.layer_parts()) == m.n_layers


def test_padding_invariance(tiny_zh):
    short = "怎么玩"
    alone = al.attention(tiny_zh, [short])[0]
    longer = ["王者荣耀怎么玩手机游戏好看", short, "今天天气如何做菜"]
    batched = al.attention(tiny_zh, longer, batch_size=3)
    torch.testing.assert_close(batched[1], alone, atol=1e-5, rtol=1e-5)
    # and with sorting by length across several batches
    batched2 = al.attention(tiny_zh, longer * 3, batch_size=2)
    for i in (1, 4, 7):
        torch.testing.assert_close(batched2[i], alone, atol=1e-5, rtol=1e-5)


def test_rows_sum_to_one_and_padding_is_zero(tiny_en):
    texts = ["how do you play chess", "chess", "what is the best way to learn the rules of the game"]
    att = al.attention(tiny_en, texts)
    for i, n in enumerate(att.lengths):
        full = att.tensor[i]  # (L, H, T, T)
        torch.testing.assert_close(full[:, :, :n, :n].sum(-1), torch.ones(2, 12, n))
        assert full[:, :, n:, :].abs().sum() == 0
        assert full[:, :, :, n:].abs().sum() == 0
    assert att.tokens[1] == ["[CLS]", "chess", "[SEP]"]
    assert att.lengths == [len(t) for t in att.tokens]


def test_bundled_model_shape(bundled):
    att = al.attention(bundled, ["how do i play chess", "what is attention"])
    assert att.tensor.shape == (2, 6, 12, 7, 7)
    assert att.tensor.dtype == torch.float32
    assert att[1].shape == (6, 12, 5, 5)
    torch.testing.assert_close(att[0], reference_attention(bundled, "how do i play chess"), atol=1e-5, rtol=1e-4)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", ["", "   ", "\n\t"])
def test_empty_text_is_an_error(tiny_en, bad):
    with pytest.raises(ValueError, match="empty"):
        al.attention(tiny_en, ["fine text", bad])


def test_empty_list_is_an_error(tiny_en):
    with pytest.raises(ValueError, match="texts is empty"):
        al.attention(tiny_en, [])


@pytest.mark.parametrize("bad", [[1, "a"], [None], "not-a-list-but-ok"])
def test_non_string_input(tiny_en, bad):
    if isinstance(bad, str):
        assert len(al.attention(tiny_en, bad)) == 1  # a single string is accepted
        return
    with pytest.raises(TypeError, match="not a string"):
        al.attention(tiny_en, bad)


def test_non_sequence_input(tiny_en):
    with pytest.raises(TypeError, match="list of strings"):
        al.attention(tiny_en, 42)


def test_too_long_is_an_error_unless_truncation_is_asked(tiny_en):
    long_text = " ".join(["chess"] * 100)  # tiny model allows 64 positions
    with pytest.raises(ValueError, match="longer than this model's limit of 64"):
        al.attention(tiny_en, [long_text])
    with pytest.warns(UserWarning, match="truncated"):
        att = al.attention(tiny_en, [long_text, "chess"], truncate=True)
    assert att.lengths[0] == 64
    torch.testing.assert_close(att[0].sum(-1), torch.ones(2, 12, 64))


def test_pairs_must_match_in_number(tiny_en):
    with pytest.raises(ValueError, match="one second segment per text"):
        al.attention(tiny_en, ["a game", "the king"], pairs=["one"])


def test_bad_layer_and_head_indices(tiny_en):
    att = al.attention(tiny_en, ["how do you play chess"])
    with pytest.raises(ValueError, match="layer index 2"):
        att.head(0, 2, 0)
    with pytest.raises(ValueError, match="head index 12"):
        att.head(0, 0, 12)
    with pytest.raises(ValueError, match="out of range"):
        tiny_en.check_layer(-1)
    with pytest.raises(TypeError):
        tiny_en.check_head("3")
    assert tiny_en.check_head(11) == 11
    with pytest.raises(IndexError):
        att[5]


# --------------------------------------------------------------------------- extras


def test_sentence_pairs_have_two_segments(tiny_en):
    att = al.attention(tiny_en, ["how do you play chess"], pairs=["learn the rules"])
    toks = att.tokens[0]
    assert toks.count("[SEP]") == 2
    assert att.segments[0][0] == 0 and att.segments[0][-1] == 1
    torch.testing.assert_close(att[0].sum(-1), torch.ones(2, 12, len(toks)))


def test_word_level_pooling_by_hand():
    g = torch.Generator().manual_seed(0)
    maps = torch.softmax(torch.randn(2, 3, 5, 5, generator=g), dim=-1)  # (L, H, n, n)
    groups = [[0], [1, 2], [3], [4]]
    pooled = to_word_level(maps, groups)
    assert pooled.shape == (2, 3, 4, 4)
    # attention *to* word 1 = sum of columns 1 and 2; *from* word 1 = mean of rows 1 and 2
    expected_to = maps[..., 0, 1] + maps[..., 0, 2]
    torch.testing.assert_close(pooled[..., 0, 1], expected_to)
    expected_from = 0.5 * (maps[..., 1, 3] + maps[..., 2, 3])  # word 2 is token 3
    torch.testing.assert_close(pooled[..., 1, 2], expected_from)
    torch.testing.assert_close(pooled.sum(-1), torch.ones(2, 3, 4))


def test_word_level_from_given_chinese_words(tiny_zh):
    att = al.attention(tiny_zh, ["王者荣耀怎么玩"])
    maps, labels = att.word_level(0, ["王者", "荣耀", "怎么", "玩"])
    assert labels == ["[CLS]", "王者", "荣耀", "怎么", "玩", "[SEP]"]
    assert maps.shape == (2, 12, 6, 6)
    raw = att[0]
    torch.testing.assert_close(maps[:, :, 0, 1], raw[:, :, 0, 1] + raw[:, :, 0, 2])
    with pytest.raises(ValueError, match="do not spell"):
        att.word_level(0, ["王者", "荣耀"])


def test_word_level_from_tokenizer_word_ids(bundled):
    att = al.attention(bundled, ["attention heads are unbelievably interesting"])
    groups, labels = att.word_groups(0)
    pieces = att.tokens[0]
    assert len(pieces) > len(labels)  # some word was split into pieces
    assert "unbelievably" in labels
    assert sum(len(g) for g in groups) == len(pieces)


def test_bertviz_format(tiny_en):
    att = al.attention(tiny_en, ["how do you play chess", "chess"])
    maps, tokens = att.to_bertviz(1)
    assert len(maps) == 2 and maps[0].shape == (1, 12, 3, 3)
    assert tokens == ["[CLS]", "chess", "[SEP]"]


@pytest.mark.parametrize("text", ["\u200b\u200b", "\x00\x01", " \u2028 ", "\ufeff", ""])
def test_texts_with_nothing_visible_are_refused(tiny_en, text):
    with pytest.raises(ValueError, match="no visible character"):
        al.attention(tiny_en, [text])


def test_a_lone_surrogate_is_refused_with_advice(tiny_en):
    bad = b"caf\xe9".decode("utf-8", errors="surrogateescape")
    with pytest.raises(ValueError, match="lone surrogate"):
        al.attention(tiny_en, ["fine", bad])


def test_numpy_indices_are_indices(tiny_en):
    import numpy as np

    att = al.attention(tiny_en, ["hello world"])
    assert torch.equal(att.head(np.int64(0), np.int64(1), np.int32(2)), att.head(0, 1, 2))
    with pytest.raises(TypeError):
        att.head(0, True, 0)
    with pytest.raises(ValueError, match="out of range"):
        att.head(0, np.int64(99), 0)
