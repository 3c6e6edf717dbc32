"""Streaming mean attention against brute force over stacked maps from attnlab.attention."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch
from scipy.stats import entropy as scipy_entropy

import attnlab as al
from attnlab.core.streaming import (
    ENTROPY_EPS,
    MeanAttention,
    checked_token_ids,
    fixedness_from_sums,
    merge_all,
    sharded_mean_attention,
    text_batches,
)

from same_length import WORDS, same_length_texts


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


def test_an_interrupted_save_keeps_the_old_file(tiny_en, tmp_path, monkeypatch):
    path = tmp_path / "m.pt"
    old = al.mean_attention(tiny_en, same_length_texts(5), progress=False)
    old.save(path)
    before = path.read_bytes()
    new = al.mean_attention(tiny_en, same_length_texts(7, seed=3), progress=False)

    def half_then_crash(state, target):  # writes part of a file, then the machine "dies"
        with open(target, "wb") as fh:
            fh.write(b"PK\x03\x04 half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", half_then_crash)
    with pytest.raises(KeyboardInterrupt):
        new.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert MeanAttention.load(path).count == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]  # no temporary file left behind
    new.save(path)
    assert MeanAttention.load(path).count == 7


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(texts=[]), ValueError, "texts is empty"),
    (dict(texts="how do you play chess"), TypeError, "not one string"),
    (dict(texts=["how do you", ""]), ValueError, "text 1 is empty"),
    (dict(texts=["how do you", 3]), TypeError, "text 1 is int"),
    (dict(texts=["how do you"], precision="fp8"), ValueError, "precision"),
    (dict(texts=["how do you"], layers=[5]), ValueError, "layer index 5 is out of range"),
    (dict(texts=["how do you"], layers=-1), ValueError, "use 1..2"),
    (dict(texts=["how do you"], layers=0), ValueError, "use 1..2"),
    (dict(texts=["how do you"], layers=True), TypeError, "bool"),
    (dict(texts=["how do you"], layers="0-1"), TypeError, "layers must be"),
    (dict(texts=["how do you"], batch_size=0), ValueError, "batch_size must be at least 1"),
    (dict(texts=["how do you"], batch_size=1.5), TypeError, "batch_size must be a positive int"),
    (dict(texts=["how do you"], batch_size=None), TypeError, "batch_size must be a positive int"),
    (dict(texts=["how do you"], batch_size=True), TypeError, "batch_size must be a positive int"),
    (dict(texts=["how do you"], tolerance=-1), ValueError, "tolerance must be greater than 0"),
    (dict(texts=["how do you"], tolerance=0), ValueError, "tolerance must be greater than 0"),
    (dict(texts=["how do you"], tolerance=True), TypeError, "tolerance must be a number"),
    (dict(texts=["how do you"], tolerance="1e-3"), TypeError, "tolerance must be a number"),
])
def test_bad_input_is_a_clear_error(tiny_en, kwargs, error, message):
    with pytest.raises(error, match=message):
        al.mean_attention(tiny_en, progress=False, **kwargs)


def test_numpy_integers_are_accepted(tiny_en):
    texts = same_length_texts(5, seed=15)
    ref = al.mean_attention(tiny_en, texts, batch_size=2, layers=[1], progress=False)
    res = al.mean_attention(tiny_en, texts, batch_size=np.int64(2), layers=[np.int64(1)], progress=False)
    assert res.layers == [1] and isinstance(res.layers[0], int)
    torch.testing.assert_close(res.mean, ref.mean, atol=0, rtol=0)
    first = al.mean_attention(tiny_en, texts, layers=np.int64(1), tolerance=np.float32(1e-9), progress=False)
    assert first.layers == [0] and first.count == 5


def test_variance_needs_two_texts(tiny_en):
    res = al.mean_attention(tiny_en, ["how do you play"], progress=False)
    assert res.mean.shape[-1] == 6
    with pytest.raises(ValueError, match="at least 2"):
        res.var


def test_text_batches_keep_order_and_a_short_last_batch():
    batches = list(text_batches((str(i) for i in range(7)), 3))
    assert batches == [["0", "1", "2"], ["3", "4", "5"], ["6"]]
    assert list(text_batches([], 3)) == []


def test_checked_token_ids_name_the_bad_text(tiny_en):
    ids = checked_token_ids(tiny_en, ["how do you", "play"])
    assert [len(row) for row in ids] == [5, 3]
    assert ids[0][0] == tiny_en.tokenizer.cls_token_id and ids[0][-1] == tiny_en.tokenizer.sep_token_id
    with pytest.raises(ValueError, match="text 11 is empty"):
        checked_token_ids(tiny_en, ["how", " "], start=10)
    with pytest.raises(ValueError, match="text 1 .* more than this model's limit"):
        checked_token_ids(tiny_en, ["how", " ".join(["play"] * (tiny_en.max_tokens + 5))])


def test_shards_add_up_to_the_whole(tiny_en):
    texts = same_length_texts(17, seed=16)
    shards = sharded_mean_attention(tiny_en, iter(texts), 5, progress=False, batch_size=4)
    assert [s.count for s in shards] == [5, 5, 5, 2]
    whole = merge_all(shards)
    ref = brute(tiny_en, texts)
    torch.testing.assert_close(whole.mean, ref.mean(dim=0), atol=1e-6, rtol=0)
    torch.testing.assert_close(whole.var, ref.var(dim=0), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="at least 2"):
        sharded_mean_attention(tiny_en, texts, 1, progress=False)
    with pytest.raises(ValueError, match="nothing to merge"):
        merge_all([])


def test_fixedness_from_sums_broadcasts_over_leading_axes():
    gen = torch.Generator().manual_seed(3)
    maps = torch.softmax(torch.randn(3, 10, 1, 2, 5, 5, generator=gen) * 2, dim=-1)  # 3 groups of 10 maps
    accs = [MeanAttention.empty(1, 2, 5).add(maps[g]) for g in range(3)]
    stacked = fixedness_from_sums(torch.stack([a.total for a in accs]),
                                  torch.stack([a.entropy_total for a in accs]),
                                  torch.tensor([10.0, 10.0, 10.0], dtype=torch.float64))  # (3, 1, 2)
    for g, acc in enumerate(accs):
        torch.testing.assert_close(stacked[g], acc.fixedness(), atol=1e-12, rtol=0)


def test_auto_precision_takes_bf16_only_where_it_is_native(tiny_en, monkeypatch):
    from attnlab.core import fast

    monkeypatch.setattr(fast, "_cpu_flags", lambda: {"avx2", "fma"})
    assert fast.choose_precision(tiny_en, "auto")[0] == "fp32"
    assert "emulated" in fast.choose_precision(tiny_en, "auto")[1]
    monkeypatch.setattr(fast, "_cpu_flags", lambda: {"avx2", "avx512_bf16"})
    assert fast.choose_precision(tiny_en, "auto")[0] == "bf16"
    assert fast.choose_precision(tiny_en, "int8") == ("int8", "asked for")
    with pytest.raises(ValueError, match="precision"):
        fast.choose_precision(tiny_en, "fp8")


def test_auto_precision_on_this_machine_matches_fp32_where_bf16_is_not_native(tiny_en):
    from attnlab.core import fast

    if fast.native_bf16(tiny_en.device):
        pytest.skip("this machine runs bf16 natively")
    texts = same_length_texts(12)
    auto = al.mean_attention(tiny_en, texts, progress=False, precision="auto")
    exact = al.mean_attention(tiny_en, texts, progress=False)
    assert auto.precision == "fp32"
    torch.testing.assert_close(auto.mean, exact.mean, atol=0, rtol=0)


def test_caches_live_with_the_model_not_in_loaded_model(tiny_en):
    from attnlab.core import fast, run

    ids = tiny_en.tokenizer(["hello world"])["input_ids"]
    fast.forward_maps(tiny_en, fast.encode_same_length(tiny_en, ids), [0])
    assert tiny_en.model in run._PATHS
