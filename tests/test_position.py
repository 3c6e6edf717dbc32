"""no_position and its controls (mean position vector, shuffled positions): the embedding sum
they give, restored exactly afterwards; and the position study built on them."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon
from scipy.stats import spearmanr

import attnlab as al
from attnlab.analysis import perturb, position, stats
from attnlab.core import position as core_position
from attnlab.core.run import Hook, encode, run
from attnlab.tools.testing import ARCHITECTURES

TEXT = {"en": "how do you play chess", "zh": "王者荣耀怎么玩"}


def _manual_embedding_without_positions(m, enc):
    """Independent: LayerNorm(word + segment), written out with torch ops."""
    emb = m.model.base_model.embeddings
    ids = enc["input_ids"]
    x = emb.word_embeddings.weight[ids]  # (1, n, e)
    if getattr(emb, "token_type_embeddings", None) is not None:
        types = enc.get("token_type_ids", torch.zeros_like(ids))
        x = x + emb.token_type_embeddings.weight[types]
    ln = emb.LayerNorm
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return (x - mu) / torch.sqrt(var + ln.eps) * ln.weight + ln.bias


def _before(tiny_factory, arch: str, language: str):
    """A tiny model, its example text encoded, and what a test compares with after a replacement: the
    state of the model and its number of hooks."""
    m = tiny_factory(arch, language)
    return m, m.encode([TEXT[language]]), _snapshot(m.model), _hook_count(m.model)


def _snapshot(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _hook_count(model):
    return sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in model.modules())


def _same_state(before, model):
    after = model.state_dict()
    return before.keys() == after.keys() and all(
        before[k].dtype == after[k].dtype and torch.equal(before[k], after[k]) for k in before
    )


@pytest.mark.parametrize("arch", ["bert", "roberta"])
def test_first_layer_input_is_recomputed_without_positions(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    enc = m.encode([TEXT["en"]])
    with torch.no_grad():
        expected = _manual_embedding_without_positions(m, enc)
        with al.no_position(m):
            got = m.model(**enc, output_hidden_states=True).hidden_states[0]
        with_pos = m.model(**enc, output_hidden_states=True).hidden_states[0]
    assert torch.allclose(got, expected, atol=1e-5)
    assert not torch.allclose(with_pos, expected, atol=1e-3)  # the position term was really there


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_embedding_module_output_on_every_architecture(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    enc = m.encode([TEXT["en"]])
    emb = m.model.base_model.embeddings
    kwargs = {k: v for k, v in enc.items() if k in ("input_ids", "token_type_ids")}
    with torch.no_grad():
        expected = _manual_embedding_without_positions(m, enc)
        with al.no_position(m):
            got = emb(**kwargs)
    assert torch.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("how", core_position.REPLACEMENTS)
def test_model_restored_exactly(tiny_factory, arch, how):
    m, enc, before_state, before_hooks = _before(tiny_factory, arch, "en")
    with torch.no_grad():
        before = m.model(**enc, output_attentions=True)
        with core_position.replace_positions(m, how):
            inside = m.model(**enc, output_attentions=True)
            assert _hook_count(m.model) == before_hooks + 1
        after = m.model(**enc, output_attentions=True)
    assert not torch.allclose(before.last_hidden_state, inside.last_hidden_state)
    assert torch.equal(before.last_hidden_state, after.last_hidden_state)
    assert all(torch.equal(a, b) for a, b in zip(before.attentions, after.attentions))
    assert _same_state(before_state, m.model)
    assert _hook_count(m.model) == before_hooks


@pytest.mark.parametrize("arch", ["bert", "roberta", "albert"])
@pytest.mark.parametrize("how", core_position.REPLACEMENTS)
def test_model_restored_after_exception(tiny_factory, arch, how):
    m, enc, before_state, before_hooks = _before(tiny_factory, arch, "zh")
    with torch.no_grad():
        before = m.model(**enc).last_hidden_state
        with pytest.raises(RuntimeError, match="boom"):
            with core_position.replace_positions(m, how):
                m.model(**enc)
                raise RuntimeError("boom")
        after = m.model(**enc).last_hidden_state
    assert torch.equal(before, after)
    assert _same_state(before_state, m.model)
    assert _hook_count(m.model) == before_hooks


def test_mean_and_shuffle_controls_by_hand(tiny_en):
    emb = tiny_en.model.base_model.embeddings
    enc = tiny_en.encode([TEXT["en"]])
    ids, types = enc["input_ids"], enc["token_type_ids"]
    n = ids.shape[1]
    table = emb.position_embeddings.weight[:n]  # (n, e): the positions of this input
    word = emb.word_embeddings.weight[ids] + emb.token_type_embeddings.weight[types]  # (1, n, e)
    order = core_position.shuffled_order(n, seed=3)
    expected = {"mean": word + table.mean(dim=0), "shuffle": word + table[order]}
    with torch.no_grad():
        for how, x in expected.items():
            with core_position.replace_positions(tiny_en, how, seed=3):
                got = emb(input_ids=ids, token_type_ids=types)
            want = torch.nn.functional.layer_norm(x, x.shape[-1:], emb.LayerNorm.weight, emb.LayerNorm.bias,
                                                  emb.LayerNorm.eps)
            assert torch.allclose(got, want, atol=1e-5), how
    # the shuffle is seeded, a real permutation, and never the identity
    assert torch.equal(order, core_position.shuffled_order(n, seed=3))
    assert sorted(order.tolist()) == list(range(n)) and order.tolist() != list(range(n))
    assert core_position.shuffled_order(2, seed=0).tolist() == [1, 0]
    with pytest.raises(ValueError, match="how"):
        with core_position.replace_positions(tiny_en, "random"):
            pass


@pytest.mark.parametrize("arch", ["bert", "albert"])
def test_position_specs_in_one_run_drop_the_position_term_and_leave_no_hook(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    batch = encode(m, [TEXT["en"]])
    hooks = _hook_count(m.model)
    with torch.no_grad():
        expected = _manual_embedding_without_positions(m, batch.inputs)  # (1, n, e), by hand
    cache = run(m, batch, keep=("hidden",), stop_after_layer=0, hooks=core_position.position_hook_specs(m, "zero"))
    assert _hook_count(m.model) == hooks
    with torch.no_grad():
        first_layer_input = m.model(**batch.inputs, output_hidden_states=True).hidden_states[0]
        emb = m.model.base_model.embeddings
        kwargs = {k: v for k, v in batch.inputs.items() if k in ("input_ids", "token_type_ids")}
        plain = emb(**kwargs)  # the next pass has its positions back
    assert not torch.allclose(plain, expected, atol=1e-3)
    if arch == "bert":  # hidden state 0 is the embeddings themselves
        assert torch.allclose(cache.hidden[0], expected, atol=1e-5)
        assert torch.equal(first_layer_input, plain)

    def explode(_module, _args, _output):
        raise RuntimeError("boom")

    specs = core_position.position_hook_specs(m, "shuffle", seed=1) + [Hook(m.layer_parts()[0].query, explode)]
    with pytest.raises(RuntimeError, match="boom"):
        run(m, batch, keep=("output",), hooks=specs)
    assert _hook_count(m.model) == hooks
    with pytest.raises(ValueError, match="how"):
        core_position.position_hook_specs(m, "random")


def test_attention_changes_and_stays_valid(tiny_factory):
    for arch in ARCHITECTURES:
        m = tiny_factory(arch, "en")
        a = al.attention(m, [TEXT["en"]])[0]
        with al.no_position(m):
            b = al.attention(m, [TEXT["en"]])[0]
        assert torch.allclose(b.sum(-1), torch.ones(b.shape[:-1]), atol=1e-5)
        assert not torch.allclose(a, b, atol=1e-4), arch


def test_without_positions_the_model_is_permutation_equivariant(tiny_zh):
    p = perturb.example_perturbations("zh")["both"]  # 么怎玩王荣者耀
    perm = perturb.token_permutation(tiny_zh, p)
    with al.no_position(tiny_zh):
        gap_without = position.equivariance_gap(tiny_zh, p.source.text, perm)
    gap_with = position.equivariance_gap(tiny_zh, p.source.text, perm)
    assert gap_without < 1e-5
    assert gap_with > 1e-3
    # permuting the tokens is tokenizing the perturbed text, where the tokenizer allows it
    ids = tiny_zh.tokenizer(p.source.text)["input_ids"]
    assert [ids[i] for i in perm] == tiny_zh.tokenizer(p.text)["input_ids"]
    rev = position.content_reversal(tiny_zh, p.source.text)
    assert rev[0] == 0 and rev[-1] == len(ids) - 1 and sorted(rev) == list(range(len(ids)))
    with pytest.raises(ValueError, match="permutation"):
        position.equivariance_gap(tiny_zh, p.source.text, [0, 0, 1])


def _js_similarity(a, b):
    """Independent: 1 - mean row JS / ln 2 with scipy's Jensen-Shannon distance."""
    return 1 - np.mean([jensenshannon(a[i], b[i]) ** 2 for i in range(a.shape[0])]) / math.log(2)


def test_position_study_matches_a_direct_computation(tiny_en):
    texts = ["how do you play chess", "where can i buy ice cream", "why is my phone so slow", "how do you play golf"]
    study = position.position_study(tiny_en, texts, seed=1)
    assert study.interventions == list(core_position.REPLACEMENTS) and study.n_texts == 4
    for how in study.interventions:
        sim = study.similarity[how]
        assert sim.shape == (4, tiny_en.n_layers, tiny_en.n_heads)
        assert ((sim > 0) & (sim <= 1 + 1e-9)).all()
    # entries recomputed independently, one text at a time: separate extraction, scipy's JS distance
    a = al.attention(tiny_en, [texts[1]])[0].double().numpy()  # (L, H, n, n)
    for how in study.interventions:
        with core_position.replace_positions(tiny_en, how, seed=1):
            b = al.attention(tiny_en, [texts[1]])[0].double().numpy()
        assert study.similarity[how][1, 1, 2] == pytest.approx(_js_similarity(a[1, 2], b[1, 2]), abs=1e-5)
        special = a[..., [0, -1]].sum(-1).mean(-1)  # (L, H): weight on [CLS] and [SEP]
        np.testing.assert_allclose(study.special_mass["normal"][1], special, atol=1e-6)
        np.testing.assert_allclose(study.special_mass[how][1], b[..., [0, -1]].sum(-1).mean(-1), atol=1e-6)
        np.testing.assert_allclose(study.moved_mass[how][1], 0.5 * np.abs(a - b).sum(-1).mean(-1), atol=1e-6)
    change = study.change("zero", n_boot=100)
    np.testing.assert_allclose(change.estimate, 1 - study.similarity["zero"].mean(axis=0))
    assert (change.low <= change.estimate + 1e-12).all() and (change.estimate <= change.high + 1e-12).all()
    excess = study.excess("zero", "mean", n_boot=100).estimate
    np.testing.assert_allclose(excess, study.change("zero").estimate - study.change("mean").estimate, atol=1e-12)
    gain = study.special_mass["zero"] - study.special_mass["normal"]  # (N, L, H)
    share = study.special_share_of_moved("zero", n_boot=100).estimate
    np.testing.assert_allclose(share, gain.mean(0) / study.moved_mass["zero"].mean(0), rtol=1e-9)
    with pytest.raises(ValueError, match="empty"):
        position.position_study(tiny_en, [])
    with pytest.raises(ValueError, match="intervention"):
        position.position_study(tiny_en, texts, interventions=("swap",))


def test_position_study_does_not_depend_on_the_other_texts(tiny_en):
    # texts of other lengths in the same call never pad this one's positions
    alone = position.position_study(tiny_en, ["how do you play chess"])
    mixed = position.position_study(tiny_en, ["why", "how do you play chess", "where can i buy ice cream today"])
    for how in alone.interventions:
        np.testing.assert_allclose(mixed.similarity[how][1], alone.similarity[how][0], atol=1e-6)


def _brute_force_layer_correlations(x, y, n_boot, seed):
    """Independent: draw the queries of each resample as a list of indices, average every head over
    them (ignoring NaN), and call scipy's spearmanr layer by layer."""
    counts = stats.resample_counts(x.shape[0], n_boot, seed)  # (B, N): the same draws as the package
    boots = np.full((n_boot, x.shape[1]), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for b in range(n_boot):
            drawn = np.repeat(np.arange(x.shape[0]), counts[b])  # (N,): query indices, with repeats
            mx, my = np.nanmean(x[drawn], axis=0), np.nanmean(y[drawn], axis=0)  # (L, H)
            for l in range(x.shape[1]):
                if np.ptp(mx[l]) > 0 and np.ptp(my[l]) > 0:
                    boots[b, l] = spearmanr(mx[l], my[l])[0]
    return np.nanquantile(boots, [0.025, 0.975], axis=0)  # (2, L)


def test_correlation_by_layer_over_queries_matches_a_loop_over_resamples():
    rng = np.random.default_rng(0)
    n, layers, heads = 25, 3, 6
    x = rng.normal(size=(n, layers, heads)) + np.arange(heads)  # heads differ in x ...
    y = rng.normal(0, 2, size=(n, layers, heads)) + np.arange(heads)[::-1] * np.array([[1.0], [0.0], [-1.0]])
    x[:, 1] = rng.integers(0, 2, size=(n, heads))  # a layer with ties among its heads' means
    x[3] = np.nan  # a query whose perturbations were all skipped (it still carries y)
    x[5, 0, 2] = np.nan
    per_layer = position.correlation_by_layer_over_queries(x, y, n_boot=300, seed=7)
    assert per_layer.n == n and np.shape(per_layer.estimate) == (layers,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mx, my = np.nanmean(x, axis=0), np.nanmean(y, axis=0)  # (L, H)
    for l in range(layers):
        assert per_layer.estimate[l] == pytest.approx(spearmanr(mx[l], my[l])[0], abs=1e-12)
    low, high = _brute_force_layer_correlations(x, y, 300, 7)
    np.testing.assert_allclose(per_layer.low, low, atol=1e-9)
    np.testing.assert_allclose(per_layer.high, high, atol=1e-9)
    gone = y.copy()
    gone[[0, 1]] = np.nan
    x2 = x.copy()
    x2[1] = np.nan  # query 1 has nothing in x or y: dropped; query 0 still has x
    assert position.correlation_by_layer_over_queries(x2, gone, n_boot=50).n == n - 1
    with pytest.raises(ValueError, match="queries, layers, heads"):
        position.correlation_by_layer_over_queries(x[0], y[0])


def test_correlation_by_layer_over_queries_on_a_null_and_a_planted_link():
    rng = np.random.default_rng(1)
    n, layers, heads = 60, 8, 12
    # null: every head has the same x and the same y on average; the queries only add independent noise
    null = position.correlation_by_layer_over_queries(rng.normal(size=(n, layers, heads)),
                                                      rng.normal(size=(n, layers, heads)), n_boot=500)
    assert null.n == n
    assert int(np.sum(null.contains(0.0))) >= layers - 1  # a 95% interval misses 0 rarely
    # planted: a head's mean change follows its mean similarity, under query noise as large as the spread
    level = rng.uniform(0.0, 1.0, size=(layers, heads))  # (L, H): each head's true "unchanged"
    x = level + rng.normal(0, 0.3, size=(n, layers, heads))
    y = 0.8 * level + rng.normal(0, 0.3, size=(n, layers, heads))
    planted = position.correlation_by_layer_over_queries(x, y, n_boot=500)
    assert np.all(planted.low > 0) and np.median(planted.estimate) > 0.7
    pooled = position.pooled_correlation_over_queries(x, y, n_boot=200)
    assert pooled.n == n and np.ndim(pooled.estimate) == 0 and pooled.low > 0
    assert float(pooled.estimate) == pytest.approx(spearmanr(x.mean(0).ravel(), y.mean(0).ravel())[0], abs=1e-12)


def test_output_vectors_and_their_similarity(tiny_en):
    texts = ["how do you play chess", "why is my phone so slow"]
    h = position.output_vectors(tiny_en, texts[0])
    with torch.no_grad():
        direct = tiny_en.model(**tiny_en.encode([texts[0]]), output_hidden_states=True).hidden_states[-1][0]
    assert h.shape == (len(tiny_en.tokenizer(texts[0])["input_ids"]), tiny_en.hidden_size)
    assert torch.allclose(h, direct.float())
    cos = position.output_similarity(tiny_en, texts)
    with al.no_position(tiny_en):
        h0 = position.output_vectors(tiny_en, texts[0])
    want = float(torch.nn.functional.cosine_similarity(h, h0, dim=-1).mean())
    assert cos.shape == (2,) and cos[0] == pytest.approx(want, abs=1e-6)
    assert (cos < 1 - 1e-4).all()


def test_with_and_without_maps(tiny_en):
    a, a0, tokens = position.with_and_without(tiny_en, "how do you play chess")
    assert a.shape == a0.shape == (tiny_en.n_layers, tiny_en.n_heads, len(tokens), len(tokens))
    assert torch.equal(a, al.attention(tiny_en, ["how do you play chess"])[0])
    assert not torch.allclose(a, a0, atol=1e-4)
    with al.no_position(tiny_en):
        assert torch.equal(a0, al.attention(tiny_en, ["how do you play chess"])[0])
    _, shuffled, _ = position.with_and_without(tiny_en, "how do you play chess", how="shuffle")
    assert not torch.allclose(a0, shuffled, atol=1e-4)


def test_no_absolute_positions_is_a_clear_error():
    with pytest.raises(ValueError, match="position"):
        with al.no_position(torch.nn.Linear(2, 2)):
            pass
    with pytest.raises(TypeError):
        core_position.position_embedding_module("bert")


def test_position_study_in_rounds_equals_one_round(tiny_en):
    # a length group larger than a round is split; every text gets the numbers of the single round
    texts = ["how do you play chess", "how do you play golf", "where can i buy ice", "why is my phone slow",
             "what is the time", "how do you play"]
    whole = position.position_study(tiny_en, texts, seed=1)
    rounds = position.position_study(tiny_en, texts, seed=1, chunk=2)
    for how in whole.interventions:
        np.testing.assert_allclose(rounds.similarity[how], whole.similarity[how], atol=1e-6)
        np.testing.assert_allclose(rounds.moved_mass[how], whole.moved_mass[how], atol=1e-6)
    np.testing.assert_allclose(rounds.special_mass["normal"], whole.special_mass["normal"], atol=1e-6)
    with pytest.raises(ValueError, match="chunk"):
        position.position_study(tiny_en, texts, chunk=0)
