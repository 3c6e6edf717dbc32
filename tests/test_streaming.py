"""Streaming mean attention against brute force over stacked maps from attnlab.attention."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch
from scipy.stats import entropy as scipy_entropy

import attnlab as al
from attnlab.core.distributions import ALL_KEYS
from attnlab.core.streaming import (
    ENTROPY_EPS,
    MeanAttention,
    checked_token_ids,
    js_score_from_sums,
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
    torch.testing.assert_close(merged.js_score(), whole.js_score(), atol=1e-9, rtol=0)


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


def test_entropy_and_js_score_match_an_independent_computation(tiny_en):
    texts = same_length_texts(12, seed=7)
    maps = brute(tiny_en, texts).numpy()  # (N, L, H, n, n)
    n = maps.shape[-1]
    p = (1 - ENTROPY_EPS) * maps + ENTROPY_EPS / n
    row_h = scipy_entropy(p, axis=-1)  # (N, L, H, n)
    mean_h = scipy_entropy((1 - ENTROPY_EPS) * maps.mean(0) + ENTROPY_EPS / n, axis=-1)  # (L, H, n)
    expected = 1 - (mean_h - row_h.mean(0)).mean(-1) / math.log(n)
    res = al.mean_attention(tiny_en, texts, batch_size=5, progress=False)
    np.testing.assert_allclose(res.mean_entropy().numpy(), row_h.mean(axis=(0, 3)), atol=1e-6)
    np.testing.assert_allclose(res.js_score().numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(res.sharpness().numpy(), 1 - mean_h.mean(-1) / math.log(n), atol=1e-6)


def _synthetic(maps: torch.Tensor) -> MeanAttention:
    acc = MeanAttention.empty(1, 1, maps.shape[-1])
    return acc.add(maps[:, None, None])


def test_js_score_of_a_constant_head_is_one():
    torch.manual_seed(0)
    one = torch.softmax(torch.randn(9, 9) * 3, dim=-1)
    assert _synthetic(one.expand(50, 9, 9)).js_score().item() == pytest.approx(1.0, abs=1e-6)
    uniform = torch.full((50, 9, 9), 1 / 9)
    assert _synthetic(uniform).js_score().item() == pytest.approx(1.0, abs=1e-6)


def test_js_score_of_a_random_per_query_head_is_near_zero():
    torch.manual_seed(0)
    picks = torch.randint(0, 9, (2000, 9))
    one_hot = torch.nn.functional.one_hot(picks, 9).float()  # (N, 9, 9)
    assert _synthetic(one_hot).js_score().item() < 0.01
    sharp = torch.softmax(torch.randn(2000, 9, 9) * 8, dim=-1)
    assert _synthetic(sharp).js_score().item() < 0.15
    # the same head, always the same one-hot row: fixed, however sharp
    same = torch.nn.functional.one_hot(picks[:1].expand(2000, 9), 9).float()
    assert _synthetic(same).js_score().item() == pytest.approx(1.0, abs=1e-6)


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


def test_js_score_from_sums_broadcasts_over_leading_axes():
    gen = torch.Generator().manual_seed(3)
    maps = torch.softmax(torch.randn(3, 10, 1, 2, 5, 5, generator=gen) * 2, dim=-1)  # 3 groups of 10 maps
    accs = [MeanAttention.empty(1, 2, 5).add(maps[g]) for g in range(3)]
    stacked = js_score_from_sums(torch.stack([a.total for a in accs]),
                                  torch.stack([a.entropy_total for a in accs]),
                                  torch.tensor([10.0, 10.0, 10.0], dtype=torch.float64))  # (3, 1, 2)
    for g, acc in enumerate(accs):
        torch.testing.assert_close(stacked[g], acc.js_score(), atol=1e-12, rtol=0)


def test_auto_precision_takes_bf16_only_where_it_is_native(tiny_en, monkeypatch):
    from attnlab.core import fast

    monkeypatch.delenv("ATTNLAB_PRECISION", raising=False)
    monkeypatch.setattr(fast, "_cpu_flags", lambda: {"avx2", "fma"})
    assert fast.choose_precision(tiny_en, "auto")[0] == "fp32"
    assert "emulated" in fast.choose_precision(tiny_en, "auto")[1]
    monkeypatch.setattr(fast, "_cpu_flags", lambda: {"avx2", "avx512_bf16"})
    assert fast.choose_precision(tiny_en, "auto")[0] == "bf16"
    assert fast.choose_precision(tiny_en, "int8") == ("int8", "asked for")
    with pytest.raises(ValueError, match="precision"):
        fast.choose_precision(tiny_en, "fp8")


def test_attnlab_precision_decides_auto_and_nothing_else(tiny_en, monkeypatch):
    from attnlab.core import fast

    monkeypatch.setattr(fast, "_cpu_flags", lambda: {"avx2", "avx512_bf16"})
    monkeypatch.setenv("ATTNLAB_PRECISION", "FP32")
    assert fast.choose_precision(tiny_en, "auto") == ("fp32", "ATTNLAB_PRECISION")
    assert fast.choose_precision(tiny_en, "bf16") == ("bf16", "asked for")  # an explicit choice stands
    monkeypatch.setenv("ATTNLAB_PRECISION", "half")
    with pytest.raises(ValueError, match="ATTNLAB_PRECISION"):
        fast.choose_precision(tiny_en, "auto")


def test_attention_in_bf16_stays_near_fp32_and_refuses_int8(tiny_en):
    texts = ["how do you play chess", "why is the sky blue today"]
    exact = al.attention(tiny_en, texts).tensor  # (N, L, H, T, T)
    low = al.attention(tiny_en, texts, precision="bf16").tensor
    assert low.dtype == torch.float32 and low.shape == exact.shape
    torch.testing.assert_close(low.sum(-1), exact.sum(-1), atol=2e-2, rtol=0)  # rows still sum to 1 (or 0: padding)
    assert float((low - exact).abs().max()) < 0.05
    with pytest.raises(ValueError, match="precision"):
        al.attention(tiny_en, texts, precision="int8")


def test_precision_check_passes_what_fp32_measures_and_fails_a_planted_shift():
    from attnlab.course.checks import precision_check

    rng = np.random.default_rng(0)
    exact = rng.uniform(0.5, 1.0, size=(32, 2, 3))  # (N, L, H) similarities
    exact[3] = np.nan  # a skipped query
    noisy = exact + rng.normal(0, 0.01, size=exact.shape)  # per-query noise that averages out
    assert precision_check(exact, noisy).passed
    shifted = exact.copy()
    shifted[:, 1, 2] += 0.02  # one head's mean moved by twice the bound
    check = precision_check(exact, shifted)
    assert not check.passed and check.numbers["largest_move_of_a_mean"] == pytest.approx(0.02)
    with pytest.raises(ValueError, match="same queries"):
        precision_check(exact, exact[:10])


def test_mean_map_precision_check_reads_the_content_keys():
    """The content-key mean maps renormalised by hand in numpy; a planted shift of one content key, taken from
    the special key of the same rows, moves the content reading by far more than the all-keys reading."""
    from attnlab.course.checks import MEAN_MAP_BOUND, mean_map_precision_check

    rng = np.random.default_rng(1)
    n, special = 5, [0, 4]
    maps = rng.dirichlet(np.full(n, 0.5), size=(40, 1, 2, n))  # (Q, L, H, n, n)
    maps[:, 0, 1, :, 0] += 4.0  # head 2 rests on the first special key ...
    maps /= maps.sum(axis=-1, keepdims=True)
    moved = maps.copy()
    moved[:, 0, 1, :, 1] += 0.005  # ... and the reduced precision moves 0.005 of its weight to content key 1
    moved[:, 0, 1, :, 0] -= 0.005
    exact, reduced = (MeanAttention.empty(1, 2, n, special=special).add(torch.from_numpy(x)) for x in (maps, moved))

    def content_mean(x):  # (L, H, n, n_content): special columns dropped, rows renormalised, then averaged
        kept = np.delete(x, special, axis=-1)
        return (kept / kept.sum(axis=-1, keepdims=True)).mean(axis=0)

    by_hand = float(np.abs(content_mean(maps) - content_mean(moved)).max())
    on_all = mean_map_precision_check(exact, reduced, ALL_KEYS)
    on_content = mean_map_precision_check(exact, reduced)
    assert on_all.numbers["largest_move_of_a_cell"] == pytest.approx(0.005) and on_all.passed
    assert on_content.numbers["largest_move_of_a_cell"] == pytest.approx(by_hand)
    assert by_hand > MEAN_MAP_BOUND and not on_content.passed  # a little moved on the text is a lot of the text
    assert mean_map_precision_check(exact, exact).numbers["largest_move_of_a_cell"] == 0.0
    assert mean_map_precision_check(exact, exact).passed
    with pytest.raises(ValueError, match="same queries"):
        mean_map_precision_check(exact, MeanAttention.empty(1, 2, n, special=special).add(torch.from_numpy(maps[:5])))
    with pytest.raises(ValueError, match="special keys"):
        plain = MeanAttention.empty(1, 2, n).add(torch.from_numpy(maps))
        mean_map_precision_check(plain, plain)


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


# --------------------------------------------------------------------------- the fast path's inputs


def same_sums(a: MeanAttention, b: MeanAttention) -> bool:
    """Bit-equal accumulators: same batches in the same order give the same float64 sums."""
    return (a.count == b.count and a.tokens == b.tokens and a.layers == b.layers
            and torch.equal(a.total, b.total) and torch.equal(a.total_sq, b.total_sq)
            and torch.equal(a.entropy_total, b.entropy_total))


@pytest.mark.parametrize("batch_size", [4, 7])
def test_pre_tokenised_input_equals_the_text_path_exactly(tiny_en, batch_size):
    """The same batches in the same order: torch.equal, whether the ids come as lists, a tensor or a dataset."""
    from torch.utils.data import TensorDataset

    texts = same_length_texts(23, seed=30)  # 23: a short last batch for both sizes
    from_text = al.mean_attention(tiny_en, texts, batch_size=batch_size, progress=False, layers=[1])
    ids = tiny_en.tokenizer(texts)["input_ids"]
    as_tensor = torch.tensor(ids)  # (23, 7)
    for given in (ids, iter(ids), as_tensor, TensorDataset(as_tensor)):
        res = al.mean_attention(tiny_en, token_ids=given, batch_size=batch_size, progress=False, layers=[1])
        assert same_sums(res, from_text)


def test_pre_tokenised_rows_of_several_lengths_bucket_like_texts(tiny_en):
    texts = same_length_texts(9, seed=31) + same_length_texts(6, words=3, seed=32)
    random.Random(0).shuffle(texts)
    from_text = al.mean_attention(tiny_en, texts, batch_size=4, bucket=True, progress=False)
    from_ids = al.mean_attention(tiny_en, token_ids=tiny_en.tokenizer(texts)["input_ids"], batch_size=4,
                                 bucket=True, progress=False)
    assert sorted(from_text) == sorted(from_ids) == [5, 7]
    assert all(same_sums(from_text[n], from_ids[n]) for n in from_text)
    with pytest.raises(ValueError, match="text 1 .* has 5 tokens but text 0"):
        al.mean_attention(tiny_en, token_ids=[[101, 1, 2, 3, 4, 5, 102], [101, 1, 2, 3, 102]], progress=False)


def test_bad_pre_tokenised_input_is_a_clear_error(tiny_en):
    with pytest.raises(ValueError, match="exactly one"):
        al.mean_attention(tiny_en, progress=False)
    with pytest.raises(ValueError, match="exactly one"):
        al.mean_attention(tiny_en, ["a b"], token_ids=[[101, 102]], progress=False)
    with pytest.raises(ValueError, match="integer"):
        al.mean_attention(tiny_en, token_ids=torch.zeros(2, 5), progress=False)
    with pytest.raises(ValueError, match="limit"):
        al.mean_attention(tiny_en, token_ids=torch.ones(2, tiny_en.max_tokens + 1, dtype=torch.long), progress=False)


@pytest.mark.parametrize("bucket", [False, True])
def test_background_tokenising_equals_the_text_path_exactly(tiny_en, bucket):
    texts = same_length_texts(30, seed=33) + ([] if not bucket else same_length_texts(5, words=2, seed=34))
    plain = al.mean_attention(tiny_en, iter(texts), batch_size=4, bucket=bucket, progress=False)
    ahead = al.mean_attention(tiny_en, iter(texts), batch_size=4, bucket=bucket, progress=False, background=True)
    if bucket:
        assert sorted(plain) == sorted(ahead) and all(same_sums(plain[n], ahead[n]) for n in plain)
    else:
        assert same_sums(plain, ahead)


def test_background_tokenising_raises_the_texts_error(tiny_en):
    texts = same_length_texts(10, seed=35) + ["   "]
    with pytest.raises(ValueError, match="text 10 is empty"):
        al.mean_attention(tiny_en, iter(texts), batch_size=4, progress=False, background=True)


def test_prefetched_keeps_order_and_raises_where_the_producer_failed():
    from attnlab.core.streaming import prefetched

    assert list(prefetched(iter(range(100)), depth=3)) == list(range(100))

    def fails_after_five():
        yield from range(5)
        raise KeyError("the sixth")

    got = []
    with pytest.raises(KeyError, match="the sixth"):
        for x in prefetched(fails_after_five(), depth=2):
            got.append(x)
    assert got == [0, 1, 2, 3, 4]
    reader = prefetched(iter(range(1000)), depth=2)  # a reader that stops early stops the producer
    assert [next(reader) for _ in range(3)] == [0, 1, 2]
    reader.close()


def test_tf32_is_an_opt_in_recorded_with_its_deviation(tiny_en):
    texts = same_length_texts(12, seed=36)
    exact = al.mean_attention(tiny_en, texts, progress=False)
    tf32 = al.mean_attention(tiny_en, texts, precision="tf32", progress=False)
    assert exact.precision == "fp32" and tf32.precision == "tf32"
    true_dev = float((tf32.mean - exact.mean).abs().max())
    assert tf32.deviation is not None
    assert tf32.deviation == pytest.approx(true_dev, abs=1e-9)  # all 12 fit the check sample
    assert tf32.deviation < 1e-2
    assert MeanAttention.from_state_dict(tf32.state_dict()).precision == "tf32"


# --------------------------------------------------------------------------- resumable shards


def interrupted_after(texts, k_texts):
    """The texts, then a crash (a closed laptop) after ``k_texts`` of them."""
    yield from texts[:k_texts]
    raise KeyboardInterrupt


def test_an_interrupted_sharded_run_resumes_and_equals_an_uninterrupted_one(tiny_en, tmp_path, capsys):
    texts = same_length_texts(23, seed=37)
    whole = sharded_mean_attention(tiny_en, iter(texts), 5, progress=False, batch_size=4)
    with pytest.raises(KeyboardInterrupt):  # dies while reading shard 3 (texts 10-14)
        sharded_mean_attention(tiny_en, interrupted_after(texts, 12), 5, progress=False, batch_size=4,
                               resume_dir=tmp_path)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert sorted(p.name for p in folder.glob("shard_*.pt")) == ["shard_000000.pt", "shard_000001.pt"]

    passes = []
    handle = tiny_en.model.register_forward_pre_hook(lambda *a: passes.append(1))
    try:
        resumed = sharded_mean_attention(tiny_en, iter(texts), 5, progress=False, batch_size=4,
                                         resume_dir=tmp_path)
    finally:
        handle.remove()
    assert len(passes) == 2 + 2 + 1  # shards 3-5 only: 5, 5 and 3 texts in batches of 4
    assert len(resumed) == len(whole) == 5
    assert all(same_sums(a, b) for a, b in zip(resumed, whole))
    assert len(list(folder.glob("shard_*.pt"))) == 5
    capsys.readouterr()
    sharded_mean_attention(tiny_en, iter(texts), 5, progress=True, batch_size=4, resume_dir=tmp_path)
    assert "5 of 5 shards read back" in capsys.readouterr().out  # a time around the call would mislead: say so


def test_resumed_shards_are_not_reused_for_other_texts_or_arguments(tiny_en, tmp_path):
    texts = same_length_texts(10, seed=38)
    sharded_mean_attention(tiny_en, iter(texts), 5, progress=False, batch_size=4, resume_dir=tmp_path)
    other = same_length_texts(10, seed=39)
    fresh = sharded_mean_attention(tiny_en, iter(other), 5, progress=False, batch_size=4, resume_dir=tmp_path)
    reference = sharded_mean_attention(tiny_en, iter(other), 5, progress=False, batch_size=4)
    assert all(same_sums(a, b) for a, b in zip(fresh, reference))
    sharded_mean_attention(tiny_en, iter(texts), 5, progress=False, batch_size=4, layers=[0],
                           resume_dir=tmp_path)
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 3  # other texts, other layers: other folders


def test_two_streams_under_one_resume_dir_keep_their_own_shards(tiny_en, tmp_path, capsys):
    # lesson 08 keeps its real queries and its control under one folder: neither may overwrite the other
    real, control = same_length_texts(10, seed=40), same_length_texts(10, seed=41)
    first = [sharded_mean_attention(tiny_en, iter(t), 5, progress=False, batch_size=4, resume_dir=tmp_path)
             for t in (real, control)]
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2
    capsys.readouterr()
    again = [sharded_mean_attention(tiny_en, iter(t), 5, progress=True, batch_size=4, resume_dir=tmp_path)
             for t in (real, control)]
    assert capsys.readouterr().out.count("2 of 2 shards read back") == 2  # nothing computed again
    for before, after in zip(first, again):
        assert all(same_sums(a, b) for a, b in zip(before, after))
    assert not same_sums(again[0][0], again[1][0])


def test_ablation_precision_bound_is_a_quarter_of_the_spread_of_the_heads_means():
    from attnlab.course.checks import ABLATION_PRECISION_SHARE, ablation_precision_bound, precision_check

    rng = np.random.default_rng(1)
    means = np.linspace(0.0, 1.0, 12).reshape(2, 6)  # (L, H): the heads' mean effects; IQR 0.5
    effects = means + rng.normal(0, 0.05, size=(40, 2, 6))  # (N, L, H)
    effects -= effects.mean(0) - means  # the means exactly as planted
    bound = ablation_precision_bound(effects)
    assert ABLATION_PRECISION_SHARE == 0.25 and bound == pytest.approx(0.25 * 0.5)
    assert precision_check(effects[:, :1], effects[:, :1] + 0.1, bound=bound).passed  # every head moved 0.1 < 0.125
    assert not precision_check(effects[:, :1], effects[:, :1] + 0.15, bound=bound).passed


def test_precision_note_names_what_was_computed(monkeypatch):
    from attnlab.course.checks import precision_note

    assert precision_note("bf16").startswith("maps computed in bf16")
    assert precision_note("fp32", "ablations").startswith("heads' removals measured in fp32")
    with pytest.raises(KeyError):
        precision_note("fp32", "gradients")
