"""The head-count study: data with a known rule, attention against torch, training behaviour."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlab.scratch.head_count_training import (
    CausalSelfAttention,
    LookupLanguage,
    TinyTransformer,
    TrainConfig,
    count_parameters,
    fixed_head_size,
    head_count_study,
    same_model,
    train_one,
)

SMALL = TrainConfig(d_model=32, n_layers=1, steps=40, batch_size=16, n_train=256, n_val=64, eval_every=10, warmup=5)
LANG = LookupLanguage(vocab=3, offsets=(1, 2), seq_len=10, noise=0.2)


def test_language_follows_its_rule():
    lang = LookupLanguage(vocab=4, offsets=(1, 3), seq_len=12, noise=0.25, seed=7)
    x = lang.sample(400, seed=1)
    table = lang.table()
    hits = total = 0
    for row in x.tolist():  # plain loops, independent of the vectorised sampler
        for t in range(lang.start, lang.seq_len):
            hits += row[t] == int(table[row[t - 1], row[t - 3]])
            total += 1
    expected = 1 - lang.noise + lang.noise / lang.vocab
    assert abs(hits / total - expected) < 0.02
    assert torch.equal(x, lang.sample(400, seed=1))


def test_best_loss_is_the_entropy_of_the_true_distribution():
    lang = LookupLanguage(vocab=5, noise=0.3)
    p = np.full(5, 0.3 / 5)
    p[0] += 0.7
    assert lang.best_loss() == pytest.approx(-(p * np.log(p)).sum())
    assert LookupLanguage(noise=0.0).best_loss() == 0.0


@pytest.mark.parametrize("n_heads,d_head", [(1, None), (4, None), (16, None), (1, 8), (4, 8), (16, 3)])
def test_attention_matches_torch(n_heads, d_head):
    torch.manual_seed(0)
    attn = CausalSelfAttention(32, n_heads, d_head)
    size = 32 // n_heads if d_head is None else d_head
    inner = n_heads * size
    x = torch.randn(3, 7, 32)
    q, k, v = attn.qkv(x).split(inner, dim=-1)
    split = lambda z: z.view(3, 7, n_heads, size).transpose(1, 2)  # noqa: E731
    ref = torch.nn.functional.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
    expected = attn.out(ref.transpose(1, 2).reshape(3, 7, inner))
    torch.testing.assert_close(attn(x), expected, rtol=1e-5, atol=1e-6)


def test_parameter_count_does_not_depend_on_heads():
    counts = {count_parameters(TinyTransformer(4, 16, 64, 2, h)) for h in (1, 2, 4, 8, 16, 32)}
    assert len(counts) == 1


def test_fixed_head_size_design():
    config = fixed_head_size(TrainConfig(), d_head=8)
    assert config.design == "fixed head size" and TrainConfig().design == "fixed width"
    assert [config.head_size(h) for h in (1, 32)] == [8, 8]
    assert [TrainConfig().head_size(h) for h in (1, 32)] == [64, 2]
    counts = [count_parameters(TinyTransformer(4, 16, 64, 2, h, 8)) for h in (1, 4, 8, 32)]
    assert counts == sorted(counts) and len(set(counts)) == 4  # more heads, more attention parameters
    attention_per_head = 2 * (64 * 3 * 8 + 3 * 8 + 8 * 64)  # 2 layers: Q, K, V (with biases) and the output rows
    assert counts[1] - counts[0] == 3 * attention_per_head
    # h = 8 with heads of 8 is the fixed-width model of width 64
    assert count_parameters(TinyTransformer(4, 16, 64, 2, 8, 8)) == count_parameters(TinyTransformer(4, 16, 64, 2, 8))
    assert same_model(TrainConfig(), config, 8) and not same_model(TrainConfig(), config, 4)


def test_reuse_takes_only_identical_models():
    width = head_count_study((2, 4), seeds=(0,), language=LANG, config=SMALL)
    size = head_count_study((2, 4), seeds=(0,), language=LANG, config=fixed_head_size(SMALL, d_head=16), reuse=width)
    assert size.runs[0] is width.runs[0]  # h = 2: 32 / 2 = 16, the same model
    assert size.runs[1] is not width.runs[1] and size.runs[1].d_k == 16 and width.runs[1].d_k == 8
    fresh = train_one(2, seed=0, language=LANG, config=fixed_head_size(SMALL, d_head=16))
    assert fresh.val_perplexity == width.runs[0].val_perplexity  # reusing changes no number
    other = head_count_study((2,), seeds=(0,), language=LookupLanguage(vocab=3, offsets=(1, 3), seq_len=10),
                             config=fixed_head_size(SMALL, d_head=16), reuse=width)
    assert other.runs[0] is not width.runs[0]  # another language: trained again


def test_training_lowers_the_loss():
    run = train_one(2, seed=0, language=LANG, config=SMALL)
    assert run.steps == [10, 20, 30, 40]
    assert run.train_loss[-1] < run.train_loss[0] - 0.05
    assert run.val_loss[-1] < math.log(LANG.vocab)  # better than chance


def test_same_seed_same_curve_other_seed_other_curve():
    a = train_one(4, seed=3, language=LANG, config=SMALL)
    b = train_one(4, seed=3, language=LANG, config=SMALL)
    c = train_one(4, seed=4, language=LANG, config=SMALL)
    assert a.train_loss == b.train_loss and a.val_loss == b.val_loss
    assert a.val_perplexity == b.val_perplexity
    assert a.train_loss != c.train_loss


def test_study_summary():
    study = head_count_study((1, 2), seeds=(0, 1), language=LANG, config=SMALL)
    s = study.summary()
    assert set(s) == {1, 2} and s[2]["d_k"] == 16 and s[1]["seeds"] == 2
    assert s[1]["parameters"] == s[2]["parameters"] == study.runs[0].parameters
    ppl = study.perplexities(1)
    assert s[1]["ppl_mean"] == pytest.approx(ppl.mean())
    assert s[1]["ppl_sd"] == pytest.approx(np.std(ppl, ddof=1))
    assert "±" in study.table()
    by_heads = study.perplexities_by_heads()
    assert list(by_heads) == [1, 2]
    np.testing.assert_array_equal(by_heads[1], [r.val_perplexity for r in study.runs if r.n_heads == 1])


def test_training_on_two_processes_gives_the_runs_of_one(tmp_path):
    one = head_count_study((1, 2), seeds=(0, 1), language=LANG, config=SMALL)
    two = head_count_study((1, 2), seeds=(0, 1), language=LANG, config=SMALL, workers=2)
    assert [(r.n_heads, r.seed) for r in two.runs] == [(r.n_heads, r.seed) for r in one.runs]  # the same order
    for a, b in zip(one.runs, two.runs):
        np.testing.assert_allclose(b.train_loss, a.train_loss, atol=1e-6)
        np.testing.assert_allclose(b.val_loss, a.val_loss, atol=1e-6)
    with pytest.raises(ValueError, match="workers"):
        head_count_study((1,), seeds=(0,), language=LANG, config=SMALL, workers=0)


def test_bad_settings():
    with pytest.raises(ValueError, match="divide"):
        train_one(3, seed=0, language=LANG, config=SMALL)
    with pytest.raises(TypeError):
        train_one(2.0, seed=0, language=LANG, config=SMALL)
    with pytest.raises(ValueError):
        LookupLanguage(offsets=(1, 1))
    with pytest.raises(ValueError):
        LookupLanguage(seq_len=5, offsets=(1, 6))
    with pytest.raises(ValueError):
        TrainConfig(steps=0)
    with pytest.raises(ValueError):
        head_count_study((), seeds=(0,))
