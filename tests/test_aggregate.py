"""Streaming mean attention against brute force over stacked maps from attnlab.attention."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch
from scipy.stats import entropy as scipy_entropy

import attnlab as al
from attnlab.core.streaming import ENTROPY_EPS, MeanAttention
from attnlab.tools.testing import _EN_WORDS

WORDS = [w for w in _EN_WORDS if w not in ("a", "i")]


def same_length_texts(n: int, words: int = 5, seed: int = 0) -> list[str]:
    """Texts of ``words`` single-token words of the tiny English vocabulary."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(n)]


def brute(m, texts):
    return al.attention(m, texts).tensor.double()  # (N, L, H, T, T)


def test_streaming_mean_and_var_match_brute_force_with_partial_batch(tiny_en):
    texts = same_length_texts(23)
    ref = brute(tiny_en, texts)
    res = al.mean_attention(tiny_en, (t for t in texts), batch_size=7, progress=False)  # 7+7+7+2
    assert res.count == 23
    assert res.mean.shape == (2, 12, 7, 7)
    torch.testing.assert_close(res.mean, ref.mean(dim=0), atol=1e-6, rtol=0)
    torch.testing.assert_close(res.var, ref.var(dim=0), atol=1e-6, rtol=0)
    torch.testing.assert_close(res.stderr, (ref.var(dim=0) / 23).sqrt(), atol=1e-6, rtol=0)


@pytest.mark.parametrize("batch_size", [1, 5, 64])
def test_batch_size_does_not_change_the_result(tiny_en, batch_size):
    texts = same_length_texts(11, seed=1)
    ref = brute(tiny_en, texts)
    res = al.mean_attention(tiny_en, texts, batch_size=batch_size, progress=False)
    torch.testing.assert_close(res.mean, ref.mean(dim=0), atol=1e-6, rtol=0)


def test_merge_of_two_shards_equals_the_whole(tiny_en):
    texts = same_length_texts(20, seed=2)
    whole = al.mean_attention(tiny_en, texts, batch_size=6, progress=False)
    a = al.mean_attention(tiny_en, texts[:9], batch_size=4, progress=False)
    b = al.mean_attention(tiny_en, texts[9:], batch_size=5, progress=False)
    merged = a.merge(b)
    assert merged.count == 20
    ref = brute(tiny_en, texts)
    torch.testing.assert_close(merged.mean, ref.mean(dim=0), atol=1e-6, rtol=0)
    torch.testing.assert_close(merged.var, ref.var(dim=0), atol=1e-6, rtol=0)
    torch.testing.assert_close(merged.fixedness(), whole.fixedness(), atol=1e-9, rtol=0)


def test_merge_refuses_different_maps(tiny_en):
    a = al.mean_attention(tiny_en, same_length_texts(3, words=4), progress=False)
    b = al.mean_attention(tiny_en, same_length_texts(3, words=5), progress=False)
    with pytest.raises(ValueError, match="cannot merge"):
        a.merge(b)


def test_length_mismatch_names_the_text(tiny_en):
    texts = same_length_texts(4) + ["how do you play"]
    with pytest.raises(ValueError, match=r"text 4 \('how do you play'\) has 6 tokens.*bucket=True"):
        al.mean_attention(tiny_en, texts, progress=False)


def test_bucketing_gives_one_exact_mean_per_length(tiny_en):
    four, five = same_length_texts(6, words=4, seed=3), same_length_texts(9, words=5, seed=4)
    mixed = [t for pair in zip(five, four) for t in pair] + five[6:]
    res = al.mean_attention(tiny_en, mixed, batch_size=4, bucket=True, progress=False)
    assert sorted(res) == [6, 7]
    assert res[6].count == 6 and res[7].count == 9
    torch.testing.assert_close(res[6].mean, brute(tiny_en, four).mean(dim=0), atol=1e-6, rtol=0)
    torch.testing.assert_close(res[7].var, brute(tiny_en, five).var(dim=0), atol=1e-6, rtol=0)


def test_truncated_layers_equal_the_full_models_maps(tiny_factory):
    m = tiny_factory("bert", "en", n_layers=4)
    texts = same_length_texts(10, seed=5)
    ref = brute(m, texts)
    res = al.mean_attention(m, texts, layers=[1, 2], batch_size=4, progress=False)
    assert res.layers == [1, 2]
    torch.testing.assert_close(res.mean, ref[:, [1, 2]].mean(dim=0), atol=1e-7, rtol=0)
    first = al.mean_attention(m, texts, layers=2, progress=False)  # int k: the first k layers
    assert first.layers == [0, 1]
    torch.testing.assert_close(first.var, ref[:, :2].var(dim=0), atol=1e-7, rtol=0)


def test_truncated_run_stops_after_the_deepest_layer(tiny_factory):
    m = tiny_factory("bert", "en", n_layers=4)
    calls = []
    handle = m.model.encoder.layer[3].register_forward_hook(lambda *a: calls.append(1))
    ffn_calls = []
    handle2 = m.model.encoder.layer[1].intermediate.register_forward_hook(lambda *a: ffn_calls.append(1))
    try:
        al.mean_attention(m, same_length_texts(4), layers=[0, 1], progress=False)
    finally:
        handle.remove()
        handle2.remove()
    assert calls == [] and ffn_calls == []  # layer 4 and layer 2's feed-forward never ran


@pytest.mark.parametrize("arch", ["distilbert", "albert"])
def test_truncation_exact_for_other_architectures(tiny_factory, arch):
    m = tiny_factory(arch, "en", n_layers=3)
    texts = same_length_texts(5, seed=6)
    ref = brute(m, texts)
    res = al.mean_attention(m, texts, layers=[1], progress=False)
    torch.testing.assert_close(res.mean, ref[:, [1]].mean(dim=0), atol=1e-7, rtol=0)


def test_entropy_and_fixedness_match_an_independent_computation(tiny_en):
    texts = same_length_texts(12, seed=7)
    maps = brute(tiny_en, texts).numpy()  # (N, L, H, n, n)
    n = maps.shape[-1]
    p = (1 - ENTROPY_EPS) * maps + ENTROPY_EPS / n
    row_h = scipy_entropy(p, axis=-1)  # (N, L, H, n)
    mean_h = scipy_entropy((1 - ENTROPY_EPS) * maps.mean(0) + ENTROPY_EPS / n, axis=-1)  # (L, H, n)
    expected = 1 - (mean_h - row_h.mean(0)).mean(-1) / math.log(n)
    res = al.mean_attention(tiny_en, texts, batch_size=5, progress=False)
    np.testing.assert_allclose(res.mean_entropy().numpy(), row_h.mean(axis=(0, 3)), atol=1e-6)
    np.testing.assert_allclose(res.fixedness().numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(res.sharpness().numpy(), 1 - mean_h.mean(-1) / math.log(n), atol=1e-6)


def _synthetic(maps: torch.Tensor) -> MeanAttention:
    acc = MeanAttention.empty(1, 1, maps.shape[-1])
    return acc.add(maps[:, None, None])


def test_fixedness_of_a_constant_head_is_one():
    torch.manual_seed(0)
    one = torch.softmax(torch.randn(9, 9) * 3, dim=-1)
    assert _synthetic(one.expand(50, 9, 9)).fixedness().item() == pytest.approx(1.0, abs=1e-6)
    uniform = torch.full((50, 9, 9), 1 / 9)
    assert _synthetic(uniform).fixedness().item() == pytest.approx(1.0, abs=1e-6)


def test_fixedness_of_a_random_per_query_head_is_near_zero():
    torch.manual_seed(0)
    picks = torch.randint(0, 9, (2000, 9))
    one_hot = torch.nn.functional.one_hot(picks, 9).float()  # (N, 9, 9)
    assert _synthetic(one_hot).fixedness().item() < 0.01
    sharp = torch.softmax(torch.randn(2000, 9, 9) * 8, dim=-1)
    assert _synthetic(sharp).fixedness().item() < 0.15
    # the same head, always the same one-hot row: fixed, however sharp
    same = torch.nn.functional.one_hot(picks[:1].expand(2000, 9), 9).float()
    assert _synthetic(same).fixedness().item() == pytest.approx(1.0, abs=1e-6)


def test_special_mass_is_the_first_and_last_column(tiny_en):
    texts = same_length_texts(6, seed=8)
    ref = brute(tiny_en, texts)
    mass = al.mean_attention(tiny_en, texts, progress=False).special_mass()
    torch.testing.assert_close(mass["cls"], ref[..., 0].mean(dim=(0, 3)), atol=1e-6, rtol=0)
    torch.testing.assert_close(mass["sep"], ref[..., -1].mean(dim=(0, 3)), atol=1e-6, rtol=0)


def test_tolerance_stops_early_on_an_endless_stream(tiny_en):
    rng = random.Random(9)

    def endless():
        while True:
            yield " ".join(rng.choice(WORDS) for _ in range(5))

    res = al.mean_attention(tiny_en, endless(), batch_size=32, tolerance=0.02, progress=False)
    assert res.stopped_early
    assert float(res.stderr.max()) < 0.02
    assert res.count % 32 == 0


def test_tolerance_not_reached_uses_every_text(tiny_en):
    res = al.mean_attention(tiny_en, same_length_texts(10), tolerance=1e-9, progress=False)
    assert res.count == 10 and not res.stopped_early


def test_reduced_precision_reports_its_deviation(tiny_en):
    texts = same_length_texts(16, seed=10)
    exact = al.mean_attention(tiny_en, texts, progress=False)
    assert exact.deviation is None
    for precision in ("bf16", "int8"):
        low = al.mean_attention(tiny_en, texts, precision=precision, progress=False)
        true_dev = float((low.mean - exact.mean).abs().max())
        assert low.deviation == pytest.approx(true_dev, abs=1e-6)  # all 16 fit the check sample
        assert 0 < low.deviation < 0.05


def test_save_and_load_round_trip(tiny_en, tmp_path):
    res = al.mean_attention(tiny_en, same_length_texts(5), progress=False)
    back = MeanAttention.load(res.save(tmp_path / "m.pt"))
    assert back.count == 5 and back.tokens == res.tokens
    torch.testing.assert_close(back.var, res.var)


@pytest.mark.parametrize("kwargs, error", [
    (dict(texts=[]), ValueError),
    (dict(texts="how do you play chess"), TypeError),
    (dict(texts=["how do you", ""]), ValueError),
    (dict(texts=["how do you", 3]), TypeError),
    (dict(texts=["how do you"], precision="fp8"), ValueError),
    (dict(texts=["how do you"], layers=[5]), ValueError),
    (dict(texts=["how do you"], batch_size=0), ValueError),
    (dict(texts=["how do you"], tolerance=-1), ValueError),
])
def test_bad_input_is_a_clear_error(tiny_en, kwargs, error):
    with pytest.raises(error):
        al.mean_attention(tiny_en, progress=False, **kwargs)


def test_variance_needs_two_texts(tiny_en):
    res = al.mean_attention(tiny_en, ["how do you play"], progress=False)
    assert res.mean.shape[-1] == 6
    with pytest.raises(ValueError, match="at least 2"):
        res.var


def _synthetic_shards(n_shards=6, per_shard=60, vary=(0.8, 0.4, 0.0), seed=0):
    """Layer l: each query's map is a random one-hot map with probability vary[l], else a fixed map."""
    gen = torch.Generator().manual_seed(seed)
    n, heads = 6, 12
    fixed_map = torch.softmax(torch.randn(len(vary), heads, n, n, generator=gen) * 3, dim=-1)
    shards = []
    for _ in range(n_shards):
        acc = MeanAttention.empty(len(vary), heads, n)
        picks = torch.randint(0, n, (per_shard, len(vary), heads, n), generator=gen)
        random_maps = torch.nn.functional.one_hot(picks, n).float()
        use_random = torch.rand(per_shard, len(vary), heads, 1, 1, generator=gen) < torch.tensor(vary).view(1, -1, 1, 1, 1)
        acc.add(torch.where(use_random, random_maps, fixed_map.expand(per_shard, -1, -1, -1, -1)))
        shards.append(acc)
    return shards


def test_bootstrap_of_shards_brackets_the_whole():
    from attnlab.analysis.fixedness import bootstrap_fixedness
    from attnlab.core.streaming import merge_all

    shards = _synthetic_shards()
    whole = merge_all(shards).fixedness()
    boots = bootstrap_fixedness(shards, n_boot=200)
    assert boots.shape == (200, 3, 12)
    assert torch.all(boots.quantile(0.01, dim=0) <= whole + 1e-9)
    assert torch.all(whole <= boots.quantile(0.99, dim=0) + 1e-9)


def test_fixedness_report_verdicts_on_synthetic_heads():
    from attnlab.analysis.fixedness import fixedness_report

    rep = fixedness_report(_synthetic_shards(), n_boot=200)
    v = rep.verdicts()
    assert v["patterns more fixed with depth"] == "holds"
    assert v["last layer: all heads fixed"] == "holds"
    assert rep.per_layer[0] < rep.per_layer[1] < rep.per_layer[2]
    growing = fixedness_report(_synthetic_shards(vary=(0.0, 0.4, 0.8)), n_boot=200).verdicts()
    assert growing["patterns more fixed with depth"] == "does not hold"
    assert growing["last layer: all heads fixed"] == "does not hold"
    assert "patterns get more fixed with depth" in rep.summary()
