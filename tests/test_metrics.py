"""Head statistics against hand-built maps with known answers and a brute-force loop."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch
from scipy.stats import entropy as scipy_entropy

import attnlab as al
from attnlab.analysis.head_stats import empty_sums, head_stats, head_stats_of, head_sums, is_punctuation

EPS = 1e-4


def pad(maps_per_text: list[np.ndarray]) -> tuple[torch.Tensor, list[int]]:
    """Stack per-text maps ``[L, H, n, n]`` into a zero-padded ``[N, L, H, T, T]``."""
    t = max(a.shape[-1] for a in maps_per_text)
    l, h = maps_per_text[0].shape[:2]
    out = torch.zeros(len(maps_per_text), l, h, t, t)
    for i, a in enumerate(maps_per_text):
        n = a.shape[-1]
        out[i, :, :, :n, :n] = torch.as_tensor(a)
    return out, [a.shape[-1] for a in maps_per_text]


def one_head(fn, lengths):
    """Texts with a single layer/head whose map is ``fn(n)``."""
    return pad([fn(n)[None, None] for n in lengths])


def smoothed_entropy_one_hot(n: int) -> float:
    row = np.full(n, EPS / n)
    row[0] += 1 - EPS
    return float(scipy_entropy(row))


LENGTHS = [3, 7, 5]  # mixed lengths: padding must not count
ROWS = sum(LENGTHS)


def test_pure_diagonal():
    maps, lengths = one_head(lambda n: np.eye(n), LENGTHS)
    s = head_stats_of(maps, lengths=lengths)
    assert s.self_mass[0, 0] == pytest.approx(1.0)
    assert s.prev_mass[0, 0] == pytest.approx(0.0) and s.next_mass[0, 0] == pytest.approx(0.0)
    assert s.confidence[0, 0] == pytest.approx(1.0)
    assert s.argmax_offset[0, 0] == 0 and s.offset_share[0, 0] == pytest.approx(1.0)
    want = sum(n * smoothed_entropy_one_hot(n) for n in LENGTHS) / ROWS
    assert s.entropy[0, 0] == pytest.approx(want, rel=1e-6)
    # [CLS] by position: row 0 of each text puts its weight on itself
    assert s.cls_mass[0, 0] == pytest.approx(len(LENGTHS) / ROWS)
    assert s.sep_mass[0, 0] == pytest.approx(len(LENGTHS) / ROWS)


def test_pure_cls_column():
    def cls(n):
        a = np.zeros((n, n))
        a[:, 0] = 1
        return a

    maps, lengths = one_head(cls, LENGTHS)
    s = head_stats_of(maps, lengths=lengths)
    assert s.cls_mass[0, 0] == pytest.approx(1.0)
    assert s.sep_mass[0, 0] == pytest.approx(0.0)
    assert s.self_mass[0, 0] == pytest.approx(len(LENGTHS) / ROWS)  # row 0 of each text
    assert s.prev_mass[0, 0] == pytest.approx(len(LENGTHS) / ROWS)  # row 1 of each text
    # offsets -i: 0 and -1 and -2 occur once per text (3 times), the rest fewer;
    # ties go to the most negative offset
    assert s.argmax_offset[0, 0] == -2 and s.offset_share[0, 0] == pytest.approx(3 / ROWS)


def test_uniform_rows():
    maps, lengths = one_head(lambda n: np.full((n, n), 1 / n), LENGTHS)
    s = head_stats_of(maps, lengths=lengths)
    want = sum(n * math.log(n) for n in LENGTHS) / ROWS
    assert s.entropy[0, 0] == pytest.approx(want, rel=1e-6)
    assert s.uniform_entropy[0, 0] == pytest.approx(want, rel=1e-9)
    assert s.relative_entropy[0, 0] == pytest.approx(1.0, rel=1e-6)
    assert s.confidence[0, 0] == pytest.approx(len(LENGTHS) / ROWS)  # sum over texts of n * (1/n)
    assert s.self_mass[0, 0] == pytest.approx(len(LENGTHS) / ROWS)


def test_shifted_diagonal_previous_token():
    def prev(n):
        a = np.eye(n, k=-1)
        a[0, 0] = 1  # the first token has no previous one
        return a

    maps, lengths = one_head(prev, LENGTHS)
    s = head_stats_of(maps, lengths=lengths)
    assert s.prev_mass[0, 0] == pytest.approx((ROWS - len(LENGTHS)) / ROWS)
    assert s.next_mass[0, 0] == pytest.approx(0.0)
    assert s.argmax_offset[0, 0] == -1
    assert s.offset_share[0, 0] == pytest.approx((ROWS - len(LENGTHS)) / ROWS)


def test_next_token_stops_at_real_end():
    """The last real row's "next" position is padding; it must add nothing."""
    def nxt(n):
        a = np.eye(n, k=1)
        a[-1, -1] = 1
        return a

    maps, lengths = one_head(nxt, LENGTHS)
    s = head_stats_of(maps, lengths=lengths)
    assert s.next_mass[0, 0] == pytest.approx((ROWS - len(LENGTHS)) / ROWS)
    assert s.argmax_offset[0, 0] == 1


# --------------------------------------------------------------------------- brute force


def brute_force(maps_per_text, tokens, segments=None):
    """Row-by-row loops, independent of the vectorised code."""
    l, h = maps_per_text[0].shape[:2]
    acc = {k: np.zeros((l, h)) for k in ["self", "prev", "next", "cls", "sep", "punct", "ent", "uni", "conf", "seg"]}
    offsets = [[Counter() for _ in range(h)] for _ in range(l)]
    rows = pair_rows = 0
    for i, a in enumerate(maps_per_text):
        n = a.shape[-1]
        toks = tokens[i]
        is_pair = segments is not None and 1 in segments[i]
        for q in range(n):
            rows += 1
            pair_rows += is_pair
            for li in range(l):
                for hi in range(h):
                    row = a[li, hi, q]
                    acc["self"][li, hi] += row[q]
                    acc["prev"][li, hi] += row[q - 1] if q > 0 else 0
                    acc["next"][li, hi] += row[q + 1] if q + 1 < n else 0
                    acc["cls"][li, hi] += sum(row[k] for k in range(n) if toks[k] == "[CLS]")
                    acc["sep"][li, hi] += sum(row[k] for k in range(n) if toks[k] == "[SEP]")
                    acc["punct"][li, hi] += sum(row[k] for k in range(n) if toks[k] in {".", ",", "?", "。", "，"})
                    acc["ent"][li, hi] += scipy_entropy((1 - EPS) * row + EPS / n)
                    acc["uni"][li, hi] += math.log(n)
                    acc["conf"][li, hi] += row.max()
                    offsets[li][hi][int(np.argmax(row)) - q] += 1
                    if is_pair:
                        acc["seg"][li, hi] += sum(
                            row[k] for k in range(n)
                            if segments[i][k] == segments[i][q] and toks[k] not in ("[CLS]", "[SEP]")
                        )
    out = {k: v / rows for k, v in acc.items() if k != "seg"}
    out["seg"] = acc["seg"] / pair_rows if pair_rows else None
    out["offset_share"] = np.array([[max(c.values()) / rows for c in r] for r in offsets])
    return out


def random_maps(rng, n, l=2, h=3, sharp=0.3):
    a = rng.dirichlet(np.full(n, sharp), size=(l, h, n))  # (l, h, n, n) rows sum to 1
    return a


TOKS = [
    ["[CLS]", "how", "do", "you", "play", "chess", "?", "[SEP]"],
    ["[CLS]", "王", "者", "，", "玩", "[SEP]"],
    ["[CLS]", "a", ".", "[SEP]", "b", "c", "[SEP]"],  # a sentence pair
]
SEGS = [[0] * 8, [0] * 6, [0, 0, 0, 0, 1, 1, 1]]


def test_matches_brute_force_with_padding_tokens_and_pairs():
    rng = np.random.default_rng(0)
    per_text = [random_maps(rng, len(t)) for t in TOKS]
    maps, lengths = pad(per_text)
    s = head_stats_of(maps, lengths=lengths, tokens=TOKS, segments=SEGS)
    ref = brute_force(per_text, TOKS, SEGS)
    for name, key in [("self_mass", "self"), ("prev_mass", "prev"), ("next_mass", "next"),
                      ("cls_mass", "cls"), ("sep_mass", "sep"), ("punct_mass", "punct"),
                      ("entropy", "ent"), ("uniform_entropy", "uni"), ("confidence", "conf"),
                      ("segment_mass", "seg"), ("offset_share", "offset_share")]:
        np.testing.assert_allclose(getattr(s, name), ref[key], rtol=1e-5, atol=1e-6, err_msg=name)


def test_sep_found_by_position_in_pairs_without_tokens():
    """No tokens: first token is [CLS], last is [SEP], and the end of segment 0 is [SEP] too."""
    rng = np.random.default_rng(1)
    per_text = [random_maps(rng, len(t)) for t in TOKS]
    maps, lengths = pad(per_text)
    by_name = head_stats_of(maps, lengths=lengths, tokens=TOKS, segments=SEGS)
    by_position = head_stats_of(maps, lengths=lengths, segments=SEGS)
    np.testing.assert_allclose(by_position.cls_mass, by_name.cls_mass, rtol=1e-6)
    np.testing.assert_allclose(by_position.sep_mass, by_name.sep_mass, rtol=1e-6)
    assert np.isnan(by_position.punct_mass).all()


def test_no_pairs_means_no_segment_mass():
    maps, lengths = one_head(lambda n: np.eye(n), [3, 4])
    assert np.isnan(head_stats_of(maps, lengths=lengths).segment_mass).all()


def test_streaming_sums_equal_one_shot():
    rng = np.random.default_rng(2)
    per_text = [random_maps(rng, n) for n in [4, 9, 6, 2, 7]]
    maps, lengths = pad(per_text)
    whole = head_stats_of(maps, lengths=lengths)
    total = empty_sums(2, 3)
    for part in ([0, 1], [2], [3, 4]):
        sub, sub_len = pad([per_text[i] for i in part])  # each batch padded to its own length
        total = total + head_sums(sub, sub_len)
    streamed = total.finish()
    for name in ["self_mass", "prev_mass", "cls_mass", "sep_mass", "entropy", "uniform_entropy",
                 "confidence", "offset_share"]:
        np.testing.assert_allclose(getattr(streamed, name), getattr(whole, name), rtol=1e-9, err_msg=name)
    np.testing.assert_array_equal(streamed.argmax_offset, whole.argmax_offset)
    assert streamed.n_rows == whole.n_rows == sum(lengths)


def test_attention_object_and_streaming_over_a_model(tiny_en):
    texts = ["how do you play chess", "the game is good .", "what", "learn the rules of chess , fast"]
    att = al.attention(tiny_en, texts)
    one_shot = head_stats_of(att)
    streamed = head_stats(tiny_en, texts, batch_size=2)
    for name in ["self_mass", "cls_mass", "sep_mass", "punct_mass", "entropy", "confidence"]:
        np.testing.assert_allclose(getattr(streamed, name), getattr(one_shot, name), rtol=1e-4, atol=1e-6)
    assert one_shot.shape == (tiny_en.n_layers, tiny_en.n_heads)
    assert one_shot.punct_mass.min() > 0  # "." and "," are in the texts
    with pytest.raises(TypeError, match="head_stats_of"):
        head_stats(att, texts)  # maps go to head_stats_of, a model to head_stats


def test_table_and_dict():
    maps, lengths = one_head(lambda n: np.eye(n), [3])
    s = head_stats_of(maps, lengths=lengths)
    assert "L1 H1" in s.table()
    assert s.n_rows == 3 and s.n_texts == 1
    assert s.head(0, 0)["confidence"] == pytest.approx(1.0)
    assert s.head(np.int64(0), np.int64(0))["self_mass"] == pytest.approx(1.0)  # numpy indices (from argmax)
    with pytest.raises(ValueError, match="out of range"):
        s.head(1, 0)
    with pytest.raises(TypeError):
        s.head(True, 0)
    with pytest.raises(ValueError, match="out of range"):
        s.table(layers=[1])


def test_bad_input():
    maps, lengths = one_head(lambda n: np.eye(n), [3, 4])
    with pytest.raises(ValueError, match="lengths is required"):
        head_stats_of(maps)
    with pytest.raises(ValueError, match="one per text"):
        head_stats_of(maps, lengths=[3])
    with pytest.raises(ValueError, match=r"\[N, L, H, T, T\]"):
        head_stats_of(maps[0], lengths=[3])
    with pytest.raises(ValueError, match="between 1 and T"):
        head_stats_of(maps, lengths=[3, 9])
    with pytest.raises(TypeError):
        head_stats_of([[1.0]], lengths=[1])


def test_punctuation_rule():
    assert is_punctuation(".") and is_punctuation("，") and is_punctuation("?!")
    assert not is_punctuation("[CLS]") and not is_punctuation("a.") and not is_punctuation("")
