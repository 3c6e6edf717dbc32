"""Lesson 13's measurements against independent computations on tiny random models:
interventions by hook vs a hand-written layer, norm-based attention vs a per-head loop,
rollout vs a direct matrix product, and the model restored after every intervention."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import rankdata

import attnlab as al
from attnlab.analysis import faithfulness as faith
from attnlab.analysis.interventions import cosine_distance, replace_maps, sentence_vectors, zero_values
from attnlab.analysis.mean_map_replacement import _derangement, mean_map_replacement
from attnlab.analysis.norm_attention import norm_attention, row_shares, transformed_values
from attnlab.analysis.rollout import attention_rollout, residual_maps, rollout
from attnlab.analysis.sinks import (KINDS, is_punctuation, kind_shares, sink_intervention, sink_profile,
                                    token_kinds)
from attnlab.tools.testing import ARCHITECTURES

from same_length import same_length_texts

TEXT = "how do you play chess ?"
TEXTS = ["how do you play chess ?", "what is the best way to learn the rules", "good game ."]


def hidden_of(m, inputs):
    with torch.no_grad():
        return m.model(**inputs, output_hidden_states=True, output_attentions=True)


def hooks_of(m) -> list[tuple]:
    """Every forward (pre-)hook on the model's modules (transformers installs some of its own)."""
    return [(name, tuple(mod._forward_hooks), tuple(mod._forward_pre_hooks)) for name, mod in m.model.named_modules()]


# --------------------------------------------------------------------------- a hand-written BERT layer


def manual_layer0(m, inputs, *, value_edit=None, map_edit=None):
    """Layer 0 of a BERT model written out from its weights (one text, no padding).

    ``value_edit(v)`` changes the per-head values ``(H, T, d_head)``; ``map_edit(a)`` the
    per-head maps ``(H, T, T)``. Returns the layer's output ``(1, T, d)``.
    """
    layer = m.model.encoder.layer[0]
    x = hidden_of(m, inputs).hidden_states[0]  # (1, T, d)
    H, dh = m.n_heads, m.head_dim
    with torch.no_grad():
        def heads(lin):
            return lin(x)[0].view(-1, H, dh).transpose(0, 1)  # (H, T, dh)

        q, k, v = heads(layer.attention.self.query), heads(layer.attention.self.key), heads(layer.attention.self.value)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1)  # (H, T, T)
        if value_edit is not None:
            v = value_edit(v.clone())
        if map_edit is not None:
            a = map_edit(a.clone())
        context = (a @ v).transpose(0, 1).reshape(1, -1, H * dh)  # (1, T, d)
        attn_out = layer.attention.output(context, x)  # dense, residual, LayerNorm
        return layer.output(layer.intermediate(attn_out), attn_out)


def test_zero_values_equals_a_hand_written_layer(tiny_en):
    inputs = tiny_en.encode([TEXT])
    where = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
    where[0, 2] = True

    def edit(v):
        v[[1, 5], 2] = 0.0  # heads 1 and 5, token 2
        return v

    with zero_values(tiny_en, where, layers=[0], heads=[1, 5]):
        hooked = hidden_of(tiny_en, inputs).hidden_states[1]
    manual = manual_layer0(tiny_en, inputs, value_edit=edit)
    plain = hidden_of(tiny_en, inputs).hidden_states[1]
    assert torch.allclose(hooked, manual, atol=1e-5)
    assert not torch.allclose(hooked, plain, atol=1e-4)  # the intervention did something


def test_replace_maps_equals_a_hand_written_layer(tiny_en):
    inputs = tiny_en.encode([TEXT])
    n = inputs["input_ids"].shape[1]
    new_map = torch.softmax(torch.randn(n, n, generator=torch.Generator().manual_seed(0)), dim=-1)

    def edit(a):
        a[3] = new_map
        return a

    with replace_maps(tiny_en, {(0, 3): new_map}):
        hooked = hidden_of(tiny_en, inputs).hidden_states[1]
    manual = manual_layer0(tiny_en, inputs, map_edit=edit)
    assert torch.allclose(hooked, manual, atol=1e-5)
    assert not torch.allclose(hooked, hidden_of(tiny_en, inputs).hidden_states[1], atol=1e-4)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_replacing_every_map_with_itself_changes_nothing(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    inputs = m.encode(same_length_texts(3, seed=1))
    hooks = hooks_of(m)
    plain = hidden_of(m, inputs)
    own = {(l, h): plain.attentions[l][:, h] for l in range(m.n_layers) for h in range(m.n_heads)}  # (B, T, T) each
    with replace_maps(m, own):
        same = hidden_of(m, inputs).last_hidden_state
    assert torch.allclose(same, plain.last_hidden_state, atol=1e-5)
    uniform = torch.full_like(own[(1, 0)][0], 1.0 / own[(1, 0)].shape[-1])
    with replace_maps(m, {(1, 0): uniform}):
        changed = hidden_of(m, inputs)
    assert torch.allclose(changed.hidden_states[1], plain.hidden_states[1], atol=1e-6)  # layer 0 untouched
    assert not torch.allclose(changed.last_hidden_state, plain.last_hidden_state, atol=1e-5)
    assert hooks_of(m) == hooks


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_zero_values_touches_only_the_chosen_layer(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    inputs = m.encode([TEXT])
    plain = hidden_of(m, inputs)
    everywhere = torch.ones_like(inputs["input_ids"], dtype=torch.bool)
    with zero_values(m, everywhere, layers=[1]):
        late = hidden_of(m, inputs)
    assert torch.allclose(late.hidden_states[1], plain.hidden_states[1], atol=1e-6)
    assert not torch.allclose(late.last_hidden_state, plain.last_hidden_state, atol=1e-5)
    with zero_values(m, everywhere, layers=[]):
        nothing = hidden_of(m, inputs).last_hidden_state
    assert torch.allclose(nothing, plain.last_hidden_state, atol=1e-6)
    # every value zero in every head: each layer's attention output is just the output bias
    seen = []
    hook = m.layer_parts()[0].output.register_forward_hook(lambda mod, inp, out: seen.append(out.detach()))
    try:
        with zero_values(m, everywhere, layers=[0]):
            hidden_of(m, inputs)
    finally:
        hook.remove()
    bias = m.layer_parts()[0].output.bias
    assert torch.allclose(seen[0], bias.expand_as(seen[0]), atol=1e-6)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_model_is_restored_after_an_exception(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    inputs = m.encode([TEXT])
    before = hidden_of(m, inputs).last_hidden_state
    hooks = hooks_of(m)
    where = torch.ones_like(inputs["input_ids"], dtype=torch.bool)
    n = inputs["input_ids"].shape[1]
    for intervention in (zero_values(m, where), replace_maps(m, {(0, 0): torch.eye(n)})):
        with pytest.raises(RuntimeError, match="boom"):
            with intervention:
                assert hooks_of(m) != hooks
                raise RuntimeError("boom")
        assert hooks_of(m) == hooks
        assert torch.equal(hidden_of(m, inputs).last_hidden_state, before)


def test_interventions_refuse_bad_arguments(tiny_en):
    inputs = tiny_en.encode([TEXT])
    hooks = hooks_of(tiny_en)
    with pytest.raises(ValueError, match="bool"):
        with zero_values(tiny_en, torch.zeros(1, 3)):
            pass
    with pytest.raises(ValueError, match="batch"):
        with zero_values(tiny_en, torch.zeros(2, 3, dtype=torch.bool)):
            hidden_of(tiny_en, inputs)
    with pytest.raises(ValueError, match="tokens"):
        with replace_maps(tiny_en, {(0, 0): torch.eye(3)}):
            hidden_of(tiny_en, inputs)
    with pytest.raises(ValueError, match="layer index"):
        with replace_maps(tiny_en, {(9, 0): torch.eye(3)}):
            pass
    with pytest.raises(ValueError, match="head index"):
        with zero_values(tiny_en, torch.zeros(1, 3, dtype=torch.bool), heads=[np.int64(12)]):
            pass
    assert hooks_of(tiny_en) == hooks


def test_sentence_vectors_ignore_padding(tiny_en):
    alone = sentence_vectors(tiny_en, tiny_en.encode([TEXTS[2]]))
    padded = sentence_vectors(tiny_en, tiny_en.encode([TEXTS[2], TEXTS[1]]))
    assert torch.allclose(alone[0], padded[0], atol=1e-5)
    assert cosine_distance(alone, alone).abs().max() < 1e-6


# --------------------------------------------------------------------------- norm-based attention


@pytest.mark.parametrize("arch", ["bert", "distilbert"])
def test_norm_attention_equals_a_per_head_loop(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    na = norm_attention(m, [TEXT])
    run = hidden_of(m, m.encode([TEXT]))
    H, dh = m.n_heads, m.head_dim
    for layer, parts in enumerate(m.layer_parts()):
        wv, bv, wo = parts.value.weight, parts.value.bias, parts.output.weight  # (d, d), (d,), (d, d)
        x = run.hidden_states[layer][0]  # (T, d)
        alpha = run.attentions[layer][0]  # (H, T, T)
        T = x.shape[0]
        for h in range(H):
            cols = slice(h * dh, (h + 1) * dh)
            for j in range(T):
                v_h = x[j] @ wv[cols].T + bv[cols]  # (dh,): head h's slice of the value
                f = (wo[:, cols] @ v_h).detach()  # (d,): through head h's block of the output projection
                assert float(na.value_norms[0, layer, h, j]) == pytest.approx(float(f.norm()), rel=1e-4, abs=1e-6)
                expected = alpha[h, :, j] * f.norm()  # (T,): every query row i
                assert torch.allclose(na.per_head[0, layer, h, :, j], expected.detach(), rtol=1e-4, atol=1e-6)
        assert torch.allclose(na.weights[0, layer], alpha, atol=1e-6)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_head_terms_add_up_to_the_attention_output(tiny_factory, arch):
    """sum_h sum_j alpha_ij^h f_h(x_j) + b_O is exactly what the output projection returns."""
    m = tiny_factory(arch, "en")
    inputs = m.encode([TEXT])
    parts = m.layer_parts()
    seen = []
    hook = parts[1].output.register_forward_hook(lambda mod, inp, out: seen.append(out.detach()))
    try:
        run = hidden_of(m, inputs)
    finally:
        hook.remove()
    with torch.no_grad():
        f = transformed_values(m, parts[1], run.hidden_states[1])  # (1, H, T, d)
        total = torch.einsum("bhij,bhjd->bid", run.attentions[1], f) + parts[1].output.bias  # (1, T, d)
    assert torch.allclose(total, seen[-1], atol=1e-5)
    combined = norm_attention(m, [TEXT]).combined[0, 1]  # (T, T)
    by_hand = torch.einsum("hij,hjd->ijd", run.attentions[1][0], f[0]).norm(dim=-1)  # (T, T)
    assert torch.allclose(combined, by_hand, atol=1e-5)


def test_norm_attention_does_not_depend_on_batch_neighbours(tiny_en):
    alone = norm_attention(tiny_en, [TEXTS[2]])
    together = norm_attention(tiny_en, TEXTS, batch_size=2)
    short = together.text(2)
    assert short.lengths == alone.lengths and short.tokens == alone.tokens
    assert torch.allclose(short.combined, alone.combined, atol=1e-5)
    assert torch.allclose(short.per_head, alone.per_head, atol=1e-5)
    n = together.lengths[2]
    assert together.per_head[2, :, :, n:, :].abs().max() == 0 and together.combined[2, :, :, n:].abs().max() == 0


def test_row_shares():
    maps = torch.tensor([[1.0, 3.0], [0.0, 0.0]])
    assert torch.allclose(row_shares(maps), torch.tensor([[0.25, 0.75], [0.0, 0.0]]))


# --------------------------------------------------------------------------- rollout


def test_rollout_equals_a_direct_product():
    g = torch.Generator().manual_seed(1)
    maps = torch.softmax(torch.randn(3, 2, 4, 4, generator=g), dim=-1)  # (L, H, T, T)
    eye = torch.eye(4)
    steps = []
    for l in range(3):
        a = 0.5 * maps[l].mean(dim=0) + 0.5 * eye
        steps.append(a / a.sum(dim=-1, keepdim=True))
    flows = rollout(maps)
    assert torch.allclose(flows[0], steps[0])
    assert torch.allclose(flows[2], steps[2] @ steps[1] @ steps[0], atol=1e-6)
    assert torch.allclose(flows.sum(dim=-1), torch.ones(3, 4), atol=1e-6)
    raw = rollout(maps, residual=0.0)
    assert torch.allclose(raw[2], maps[2].mean(0) @ maps[1].mean(0) @ maps[0].mean(0), atol=1e-6)
    assert torch.allclose(residual_maps(maps, 1.0), eye.expand(3, 4, 4))
    with pytest.raises(ValueError):
        rollout(maps, residual=1.5)
    with pytest.raises(ValueError):
        rollout(maps[0, 0])


def test_attention_rollout_of_a_model(tiny_en):
    flows = attention_rollout(tiny_en, TEXTS[:2])
    att = al.attention(tiny_en, TEXTS[:2])
    assert [f.shape for f in flows] == [(2, n, n) for n in att.lengths]
    assert torch.allclose(flows[1], rollout(att[1]))


# --------------------------------------------------------------------------- sinks


def test_token_kinds(tiny_en):
    assert is_punctuation("?") and is_punctuation("##.") and is_punctuation("，")
    assert not is_punctuation("chess") and not is_punctuation("##") and not is_punctuation("a1")
    tokens = tiny_en.tokenizer.convert_ids_to_tokens(tiny_en.encode([TEXT])["input_ids"][0].tolist())
    assert token_kinds(tiny_en, tokens) == ["start", "word", "word", "word", "word", "word", "punct", "end"]


def test_kind_shares_on_a_constructed_map():
    maps = torch.tensor([[0.5, 0.2, 0.1, 0.2], [0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.4, 0.4], [0.2, 0.2, 0.2, 0.4]])
    shares = kind_shares(maps, ["start", "word", "punct", "end"])
    assert float(shares["start"]) == pytest.approx((0.5 + 0.7 + 0.1 + 0.2) / 4)
    assert float(shares["end"]) == pytest.approx((0.2 + 0.1 + 0.4 + 0.4) / 4)
    assert sum(float(v) for v in shares.values()) == pytest.approx(1.0)


def test_sink_profile_matches_the_attention_maps(tiny_en):
    profile = sink_profile(tiny_en, TEXTS, batch_size=2)
    att = al.attention(tiny_en, TEXTS)
    for i in range(len(TEXTS)):
        maps = att[i].mean(dim=1)  # (L, n, n), heads averaged
        assert np.allclose(profile.raw["start"][i], maps[:, :, 0].mean(dim=-1).numpy(), atol=1e-5)
        assert np.allclose(profile.raw["end"][i], maps[:, :, -1].mean(dim=-1).numpy(), atol=1e-5)
    for view in ("raw", "norm"):
        total = sum(profile._view(view)[k] for k in KINDS)
        assert np.allclose(total, 1.0, atol=1e-5)
    assert profile.special("raw").shape == (3, tiny_en.n_layers)
    assert np.isnan(profile.value_norm["punct"][1]).all() and not np.isnan(profile.value_norm["punct"][0]).any()
    assert profile.per_layer("raw", "start").n == 3
    with pytest.raises(ValueError):
        profile.special("weights")


def test_sink_intervention(tiny_en):
    texts = TEXTS[:2]
    result = sink_intervention(tiny_en, texts, seed=3)
    att = al.attention(tiny_en, texts)
    assert result.sink_effect.shape == result.control_effect.shape == (2, tiny_en.n_layers)
    assert (result.sink_effect >= -1e-6).all() and (result.control_effect > 0).any()
    for i in range(2):
        received = att[i].mean(dim=1).sum(dim=-2) / att.lengths[i]  # (L, n): mean over rows
        first, last = received[:, 0].numpy(), received[:, -1].numpy()
        assert np.array_equal(result.sink_is_start[i], first >= last)
        assert np.allclose(result.sink_mass[i], np.maximum(first, last), atol=1e-5)
    # the sink effect of text 0 in layer 1, recomputed with the hook directly
    inputs = tiny_en.encode(texts[:1])
    where = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
    where[0, 0 if result.sink_is_start[0, 1] else -1] = True
    with zero_values(tiny_en, where, layers=[1]):
        changed = sentence_vectors(tiny_en, inputs)
    expected = float(cosine_distance(changed, sentence_vectors(tiny_en, inputs))[0])
    assert result.sink_effect[0, 1] == pytest.approx(expected, abs=1e-6)
    one_head = sink_intervention(tiny_en, texts, heads=[4], seed=3)
    assert one_head.heads == [4] and (one_head.sink_effect <= result.sink_effect.max() + 1e-6).all()
    with pytest.raises(ValueError, match="no word"):
        sink_intervention(tiny_en, ["?"])


# --------------------------------------------------------------------------- the scoreboard


def test_leave_one_out_equals_removing_the_token_by_hand(tiny_en):
    inputs = tiny_en.encode([TEXT])
    effects = faith.leave_one_out(tiny_en, inputs, [1, 3])
    ids = inputs["input_ids"][0].tolist()
    base = sentence_vectors(tiny_en, inputs)
    for k, j in enumerate([1, 3]):
        shorter = torch.tensor([ids[:j] + ids[j + 1:]])
        vec = sentence_vectors(tiny_en, {"input_ids": shorter, "attention_mask": torch.ones_like(shorter),
                                         "token_type_ids": torch.zeros_like(shorter)})
        assert effects[k] == pytest.approx(float(cosine_distance(vec, base)[0]), abs=1e-6)


def test_value_zeroing_equals_one_intervention_at_a_time(tiny_en):
    inputs = tiny_en.encode([TEXT])
    scores = faith.value_zeroing(tiny_en, inputs, [2, 4])
    with torch.no_grad():
        base = tiny_en.model(**inputs).last_hidden_state[0]  # (T, d)
    for k, j in enumerate([2, 4]):
        where = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
        where[0, j] = True
        with zero_values(tiny_en, where), torch.no_grad():
            changed = tiny_en.model(**inputs).last_hidden_state[0]
        dist = cosine_distance(changed, base)  # (T,)
        others = [t for t in range(dist.shape[0]) if t != j]
        assert scores[k] == pytest.approx(float(dist[others].mean()), abs=1e-6)


def test_scoreboard(tiny_en):
    board = faith.scoreboard(tiny_en, TEXTS + ["chess"])
    assert board.skipped == 1 and len(board.queries) == 3
    q = board.queries[0]
    att = al.attention(tiny_en, [q.text])[0]  # (L, H, n, n)
    raw = att[-1].mean(dim=0).mean(dim=0)[q.positions].numpy()
    assert np.allclose(q.scores["raw"], raw, atol=1e-6)
    assert np.allclose(q.scores["rollout"], rollout(att)[-1].mean(dim=0)[q.positions].numpy(), atol=1e-6)
    for view in faith.VIEWS:
        rho = board.rho[view]
        assert rho.shape == (3,) and np.all(np.abs(rho[~np.isnan(rho)]) <= 1 + 1e-9)
        assert len(q.scores[view]) == len(q.effect) == len(q.positions)
    assert sorted(board.ranking()) == sorted(faith.VIEWS)
    assert board.paired("raw", "raw").estimate == pytest.approx(0.0)
    with pytest.raises(ValueError):
        board.interval("gradient")
    with pytest.raises(ValueError, match="non-special"):
        faith.scoreboard(tiny_en, ["chess"])


# --------------------------------------------------------------------------- mean-map replacement


def test_derangement_has_no_fixed_point():
    rng = np.random.default_rng(0)
    for n in (2, 3, 10):
        p = _derangement(n, rng)
        assert sorted(p) == list(range(n)) and not (p == np.arange(n)).any()


def test_replacing_a_map_with_its_own_mean_costs_nothing(tiny_en):
    text = same_length_texts(1, seed=4)[0]
    mean = al.mean_attention(tiny_en, [text], progress=False)  # the mean of one text is its own map
    same = mean_map_replacement(tiny_en, [text, text], mean)
    assert same.cost.shape == (2, tiny_en.n_layers, tiny_en.n_heads)
    assert np.abs(same.cost).max() < 1e-6 and np.abs(same.control).max() < 1e-6


def test_mean_map_replacement(tiny_en):
    texts = same_length_texts(6, seed=5)
    mean = al.mean_attention(tiny_en, same_length_texts(20, seed=6), progress=False, layers=[1])
    result = mean_map_replacement(tiny_en, texts, mean, batch_size=4)
    assert result.layers == [1] and result.cost.shape == (6, 1, tiny_en.n_heads)
    assert np.allclose(result.fixedness, mean.fixedness().numpy())
    assert (result.cost > 0).any() and (result.control > 0).any()
    # one cell recomputed with the hook directly
    inputs = tiny_en.encode(texts[:1])
    with replace_maps(tiny_en, {(1, 7): mean.mean[0, 7].float()}):
        changed = sentence_vectors(tiny_en, inputs)
    expected = float(cosine_distance(changed, sentence_vectors(tiny_en, inputs))[0])
    assert result.cost[0, 0, 7] == pytest.approx(expected, abs=1e-6)
    assert result.mean_cost.shape == (1, tiny_en.n_heads)
    ranks = [rankdata(result.fixedness[0]), rankdata(result.mean_cost[0])]  # ties share their mean rank
    assert result.within_layer_correlations()[0] == pytest.approx(np.corrcoef(*ranks)[0, 1], abs=1e-9)
    with pytest.raises(ValueError, match="tokens like the mean"):
        mean_map_replacement(tiny_en, texts[:2] + ["chess"], mean)
    with pytest.raises(ValueError, match="at least 2"):
        mean_map_replacement(tiny_en, texts[:1], mean)
