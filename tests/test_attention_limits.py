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
from attnlab.analysis.mean_map_replacement import (_derangement, fixedness_order, head_fixedness, mean_map_replacement,
                                                   replace_together, replaceable_fraction)
from attnlab.analysis.norm_attention import (norm_attention, norm_special_weight, row_shares, special_share,
                                            transformed_values)
from attnlab.analysis.rollout import attention_rollout, residual_maps, rollout
from attnlab.analysis.sinks import (KINDS, is_punctuation, is_word, kind_shares, sink_intervention, sink_profile,
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


def manual_layer0(m, inputs, *, value_edit=None, map_edit=None, index=0, x=None):
    """Layer ``index`` of a BERT model written out from its weights (one text, no padding), from
    the input ``x`` ``(1, T, d)`` (default: the unchanged run's input of that layer).

    ``value_edit(v)`` changes the per-head values ``(H, T, d_head)``; ``map_edit(a)`` the
    per-head maps ``(H, T, T)``. Returns the layer's output ``(1, T, d)``.
    """
    layer = m.model.encoder.layer[index]
    x = hidden_of(m, inputs).hidden_states[index] if x is None else x  # (1, T, d)
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


def test_norm_special_weight_equals_a_hand_written_loop(tiny_en):
    """Each text alone, each head and query row by hand: sum over [CLS]/[SEP] of alpha_ij ||f_h(x_j)|| over
    the row's sum, averaged over rows, then over texts (texts of different lengths: no padding counted)."""
    m = tiny_en
    special_ids = {m.tokenizer.cls_token_id, m.tokenizer.sep_token_id, m.tokenizer.pad_token_id}
    H, dh = m.n_heads, m.head_dim
    per_text = []
    for text in TEXTS:
        inputs = m.encode([text])
        run = hidden_of(m, inputs)
        ids = inputs["input_ids"][0].tolist()
        shares = np.zeros((m.n_layers, H))
        for layer, parts in enumerate(m.layer_parts()):
            wv, bv, wo = parts.value.weight, parts.value.bias, parts.output.weight
            x = run.hidden_states[layer][0]  # (T, d)
            alpha = run.attentions[layer][0]  # (H, T, T)
            for h in range(H):
                cols = slice(h * dh, (h + 1) * dh)
                f_norm = torch.stack([(wo[:, cols] @ (x[j] @ wv[cols].T + bv[cols])).norm()
                                      for j in range(len(ids))]).detach()  # (T,): ||f_h(x_j)||
                rows = []
                for i in range(len(ids)):
                    moved = [float(alpha[h, i, j] * f_norm[j]) for j in range(len(ids))]
                    rows.append(sum(w for w, t in zip(moved, ids) if t in special_ids) / sum(moved))
                shares[layer, h] = np.mean(rows)
        per_text.append(shares)
    by_hand = np.mean(per_text, axis=0)  # (L, H)
    assert np.allclose(norm_special_weight(m, TEXTS, batch_size=2), by_hand, atol=1e-5)
    assert np.allclose(norm_special_weight(m, TEXTS, layers=[1]), by_hand[1:], atol=1e-5)
    raw = norm_attention(m, TEXTS)
    special = torch.tensor([[t in special_ids for t in m.tokenizer.convert_tokens_to_ids(toks)]
                            + [False] * (raw.weights.shape[-1] - len(toks)) for toks in raw.tokens])  # (N, T)
    raw_share = special_share(raw.weights, special).numpy()  # the raw weights' share: the norms are what differ
    assert np.abs(raw_share - by_hand).max() > 1e-3


def test_special_share_weights_each_row_then_each_text():
    weights = torch.zeros(2, 1, 1, 3, 3)  # (N, L, H, T, T): text 0 has 3 tokens, text 1 has 2 (padding row 2)
    weights[0, 0, 0] = torch.tensor([[1.0, 1.0, 2.0], [3.0, 1.0, 0.0], [0.0, 0.0, 5.0]])
    weights[1, 0, 0, :2, :2] = torch.tensor([[1.0, 1.0], [0.0, 2.0]])
    special = torch.tensor([[True, False, False], [True, False, False]])
    expected = (np.mean([0.25, 0.75, 0.0]) + np.mean([0.5, 0.0])) / 2
    assert float(special_share(weights, special)[0, 0]) == pytest.approx(expected)


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
    assert is_word("\u2581chess") and is_word("##s") and is_word("\u25812020") and is_word("下")
    assert not is_word("\u2581") and not is_word("##") and not is_word("\u2581?") and not is_word("+")
    assert token_kinds(tiny_en, ["[CLS]", "\u2581", "chess", "\u2581?", "+", "[SEP]"]) == [
        "start", "other", "word", "punct", "other", "end"]


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


def test_knockout_equals_one_intervention_at_a_time(tiny_en):
    inputs = tiny_en.encode([TEXT])
    scores = faith.knockout(tiny_en, inputs, [2, 4])
    with torch.no_grad():
        base = tiny_en.model(**inputs).last_hidden_state[0]  # (T, d)
    for k, j in enumerate([2, 4]):
        where = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
        where[0, j] = True
        with zero_values(tiny_en, where), torch.no_grad():
            changed = tiny_en.model(**inputs).last_hidden_state[0]
        a, b = changed.double().numpy(), base.double().numpy()
        dist = 1 - (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))  # (T,)
        others = [t for t in range(dist.shape[0]) if t != j]
        assert scores[k] == pytest.approx(float(dist[others].mean()), abs=1e-6)


def test_value_zeroing_matches_hand_computation(tiny_en):
    """Mohebbi et al.: one layer at a time, from the unchanged previous-layer states, float64 cosine
    distances, rows normalised, layers combined by rollout without an identity; written out here
    with the hand-written BERT layer and a plain loop."""
    inputs = tiny_en.encode([TEXT])
    run = hidden_of(tiny_en, inputs)
    t, n_layers = inputs["input_ids"].shape[1], tiny_en.n_layers
    by_hand = np.zeros((n_layers, t, t))
    for layer in range(n_layers):
        x = run.hidden_states[layer]  # the unchanged input of this layer
        for j in range(t):
            def edit(v, j=j):
                v[:, j] = 0.0  # every head, token j
                return v

            out = manual_layer0(tiny_en, inputs, value_edit=edit, index=layer, x=x)[0].double().numpy()  # (T, d)
            ref = run.hidden_states[layer + 1][0].double().numpy()  # (T, d)
            cos = (out * ref).sum(-1) / (np.linalg.norm(out, axis=-1) * np.linalg.norm(ref, axis=-1))
            by_hand[layer, :, j] = 1.0 - cos
        by_hand[layer] /= by_hand[layer].sum(axis=1, keepdims=True)
    flow = by_hand[0]
    for layer in range(1, n_layers):
        flow = by_hand[layer] @ flow
    maps = faith.value_zeroing_maps(tiny_en, inputs).numpy()
    assert maps.dtype == np.float64 and (maps >= 0).all()
    assert np.allclose(maps, by_hand, atol=1e-4)
    assert np.allclose(faith.value_zeroing(tiny_en, inputs).numpy(), flow.mean(axis=0), atol=1e-4)
    # not the same thing as the whole-model knockout: its ranking differs on this text
    positions = list(range(1, t - 1))
    assert not np.allclose(faith.knockout(tiny_en, inputs, positions), flow.mean(axis=0)[positions], atol=1e-3)


def test_leave_one_out_keeps_positions(tiny_en):
    """Masking token j from attention in every layer equals deleting it while every other token
    keeps its position id; both pools leave j out. Plain deletion shifts positions and differs."""
    inputs = tiny_en.encode([TEXT])
    ids = inputs["input_ids"][0].tolist()
    t = len(ids)
    with torch.no_grad():
        full = tiny_en.model(**inputs).last_hidden_state[0].double()  # (T, d)
    effects = faith.masked_leave_one_out(tiny_en, inputs, [1, 3])
    deleted = faith.leave_one_out(tiny_en, inputs, [1, 3])
    for k, j in enumerate([1, 3]):
        keep = [i for i in range(t) if i != j]
        shorter = torch.tensor([[ids[i] for i in keep]])
        with torch.no_grad():
            moved_not = tiny_en.model(input_ids=shorter, attention_mask=torch.ones_like(shorter),
                                      token_type_ids=torch.zeros_like(shorter),
                                      position_ids=torch.tensor([keep])).last_hidden_state[0].double()
        a, b = moved_not.mean(dim=0).numpy(), full[keep].mean(dim=0).numpy()
        expected = 1 - a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
        assert effects[k] == pytest.approx(expected, abs=1e-6)
        assert effects[k] > 1e-6  # the others did read token j
        assert abs(deleted[k] - effects[k]) > 1e-4  # deletion is a different ground truth
    # what token j is does not matter to the others once nobody can read it ... its effect does
    swapped = dict(inputs)
    swapped["input_ids"] = inputs["input_ids"].clone()
    swapped["input_ids"][0, 3] = inputs["input_ids"][0, 2]
    again = faith.masked_leave_one_out(tiny_en, swapped, [3])
    with torch.no_grad():
        masked = {k: v.clone() for k, v in inputs.items()}
        masked["attention_mask"][0, 3] = 0
        one = tiny_en.model(**masked).last_hidden_state[0]
        masked["input_ids"] = swapped["input_ids"].clone()
        two = tiny_en.model(**masked).last_hidden_state[0]
    keep = [i for i in range(t) if i != 3]
    assert torch.allclose(one[keep], two[keep], atol=1e-5)
    assert np.isfinite(again).all()


def test_scoreboard(tiny_en):
    long = ["how do you play chess ?", "what is the best way to learn the rules", "good game of chess for you"]
    board = faith.scoreboard(tiny_en, long + ["good game ."])
    assert board.skipped == 1 and len(board.queries) + board.constant == 3
    assert faith.MIN_TOKENS >= 5
    q = board.queries[0]
    att = al.attention(tiny_en, [q.text])[0]  # (L, H, n, n)
    raw = att[-1].mean(dim=0).mean(dim=0)[q.positions].numpy()
    assert np.allclose(q.scores["raw"], raw, atol=1e-6)
    assert np.allclose(q.scores["rollout"], rollout(att)[-1].mean(dim=0)[q.positions].numpy(), atol=1e-6)
    inputs = tiny_en.encode([q.text])
    assert np.allclose(q.scores["value_zeroing"], faith.value_zeroing(tiny_en, inputs).numpy()[q.positions])
    assert np.allclose(q.effects["deleted"], faith.leave_one_out(tiny_en, inputs, q.positions))
    n = len(board.queries)
    for truth in faith.TRUTHS:
        for view in faith.VIEWS:
            rho = board.rho[truth][view]
            assert rho.shape == (n,) and np.isfinite(rho).all() and np.all(np.abs(rho) <= 1 + 1e-9)  # paired
            assert len(q.scores[view]) == len(q.effects[truth]) == len(q.positions)
        assert sorted(board.ranking(truth)) == sorted(faith.VIEWS)
    assert board.paired("raw", "raw").estimate == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        board.interval("gradient")
    with pytest.raises(ValueError):
        board.interval("raw", "gradient")
    with pytest.raises(ValueError, match="non-special"):
        faith.scoreboard(tiny_en, ["chess"])


def test_board_keeps_only_queries_every_view_can_score():
    def query(effect):
        scores = {v: np.array([1.0, 2.0, 3.0, 4.0, 5.0]) for v in faith.VIEWS}
        return faith.QueryScores("t", list("abcde"), [1, 2, 3, 4, 5], scores,
                                 {"masked": np.asarray(effect, float), "deleted": np.arange(5.0)})
    board = faith.board_from([query([1, 2, 3, 5, 4]), query([2, 2, 2, 2, 2])], skipped=0)
    assert len(board.queries) == 1 and board.constant == 1
    assert board.rho["masked"]["raw"][0] == pytest.approx(0.9) and board.rho["deleted"]["norm"][0] == pytest.approx(1.0)


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


def test_copies_in_one_pass_give_each_heads_own_replacement(tiny_en, monkeypatch):
    """Heads replaced in copies of the batch (two heads a pass here) give, for every head, what
    replacing that head alone in a plain pass gives: by its mean map, and by another text's map."""
    from attnlab.core import run as core_run

    monkeypatch.setattr(core_run, "ROWS_PER_PASS", 8)  # batches of 2 texts: 2 heads, 4 copies a pass
    texts = same_length_texts(3, seed=5)
    mean = al.mean_attention(tiny_en, same_length_texts(12, seed=6), progress=False, layers=[0, 1])
    result = mean_map_replacement(tiny_en, texts, mean, batch_size=2, seed=3)
    partner = _derangement(len(texts), np.random.default_rng(3))
    own = al.attention(tiny_en, texts).tensor  # (N, L, H, n, n): no padding, one length
    for i, text in enumerate(texts):
        inputs = tiny_en.encode([text])
        base = sentence_vectors(tiny_en, inputs)
        for li, layer in enumerate([0, 1]):
            for head in range(tiny_en.n_heads):
                for amap, got in ((mean.mean[li, head].float(), result.cost), (own[partner[i], layer, head], result.control)):
                    with replace_maps(tiny_en, {(layer, head): amap}):
                        want = float(cosine_distance(sentence_vectors(tiny_en, inputs), base)[0])
                    assert got[i, li, head] == pytest.approx(want, abs=1e-6)


def test_a_map_given_for_some_rows_leaves_the_others_alone(tiny_en):
    texts = same_length_texts(2, seed=7)
    inputs = tiny_en.encode(texts)
    n = inputs["input_ids"].shape[1]
    uniform = torch.full((1, n, n), 1.0 / n)
    with replace_maps(tiny_en, {(0, 3): (uniform, torch.tensor([1]))}):  # only the second text
        both = sentence_vectors(tiny_en, inputs)
    with replace_maps(tiny_en, {(0, 3): uniform[0]}):
        second = sentence_vectors(tiny_en, tiny_en.encode(texts[1:]))
    torch.testing.assert_close(both[0], sentence_vectors(tiny_en, tiny_en.encode(texts[:1]))[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(both[1], second[0], atol=1e-5, rtol=0)


def test_heads_replaced_together(tiny_en):
    texts = same_length_texts(5, seed=5)
    mean = al.mean_attention(tiny_en, same_length_texts(20, seed=6), progress=False)
    together = replace_together(tiny_en, texts, mean, n_random=2, steps=4, batch_size=2)
    n_heads = tiny_en.n_layers * tiny_en.n_heads
    assert list(together.counts) == [0, 6, 12, 18, 24] and together.counts[-1] == n_heads
    assert together.fixed_first.shape == (5, 5) and together.random.shape == (2, 5, 5)
    assert np.allclose(together.fixed_first[:, 0], 0.0) and np.allclose(together.reverse[:, 0], 0.0)
    # every order ends with every head replaced: the same run
    assert np.allclose(together.fixed_first[:, -1], together.reverse[:, -1], atol=1e-9)
    assert np.allclose(together.random[0][:, -1], together.fixed_first[:, -1], atol=1e-9)
    # the order is by fixedness, most fixed first
    fixed = head_fixedness(mean).ravel()
    order = together.orders["fixed_first"]
    assert (np.diff(fixed[order]) <= 1e-12).all() and together.orders["reverse"] == order[::-1]
    # one point recomputed by hand: the first 12 heads of the order replaced together
    heads = [divmod(i, tiny_en.n_heads) for i in order[:12]]
    inputs = tiny_en.encode(texts[:1])
    with replace_maps(tiny_en, {(l, h): mean.mean[l, h].float() for l, h in heads}):
        changed = sentence_vectors(tiny_en, inputs)
    expected = float(cosine_distance(changed, sentence_vectors(tiny_en, inputs))[0])
    assert together.fixed_first[0, 2] == pytest.approx(expected, abs=1e-9)
    # every point of a random order and of the reverse order, set by set in plain passes
    # (the study replaces the sets in copies of the batch, several a pass)
    for name, curve in (("random 1", together.random[1]), ("reverse", together.reverse)):
        for f, k in enumerate(together.counts):
            chosen = [divmod(i, tiny_en.n_heads) for i in together.orders[name][:k]]
            with replace_maps(tiny_en, {(l, h): mean.mean[l, h].float() for l, h in chosen}):
                changed = sentence_vectors(tiny_en, inputs)
            want = float(cosine_distance(changed, sentence_vectors(tiny_en, inputs))[0])
            assert curve[0, f] == pytest.approx(want, abs=1e-6)
    share = together.replaceable()
    assert 0.0 <= share.low <= share.estimate <= share.high <= 1.0 and share.n == 5
    assert together.tolerance() == pytest.approx(0.05 * together.reference.mean())
    assert (together.reference > 0).all()


def test_replaceable_fraction_and_fixedness_order():
    fractions = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    assert replaceable_fraction(np.array([0, 0.01, 0.02, 0.5, 0.9]), fractions, 0.1) == 0.5
    assert replaceable_fraction(np.array([0, 0.2, 0.01, 0.01, 0.01]), fractions, 0.1) == 0.0  # first crossing
    assert replaceable_fraction(np.zeros(5), fractions, 0.1) == 1.0
    order = fixedness_order(np.array([[0.5, np.nan], [0.9, 0.1]]))
    assert order.tolist() == [1, 2, 0, 3]  # no score (uniform maps) first, then most fixed


def test_within_layer_permutation_takes_depth_out():
    from attnlab.analysis.stats import permutation_correlation_within
    rng = np.random.default_rng(0)
    layers = np.repeat(np.arange(4), 12)
    depth = layers.astype(float)
    fixed = -depth + rng.normal(0, 0.1, 48)  # deeper: less fixed ...
    cost = depth + rng.normal(0, 0.1, 48)  # ... and costlier; no relation inside a layer
    rho, p = permutation_correlation_within(fixed, cost, layers, n_perm=500, seed=1)
    assert abs(rho) < 0.4 and p > 0.05
    inside = depth - 3.0 * (fixed + depth) + rng.normal(0, 0.05, 48)  # within each layer, more fixed means cheaper
    rho, p = permutation_correlation_within(fixed, inside, layers, n_perm=500, seed=1)
    assert rho < -0.5 and p < 0.01
    ranks = [rankdata(fixed[:12]), rankdata(inside[:12])]
    groups = [np.corrcoef(rankdata(fixed[layers == g]), rankdata(inside[layers == g]))[0, 1] for g in range(4)]
    assert rho == pytest.approx(np.mean(groups), abs=1e-9) and len(ranks) == 2


def test_per_layer_zeroing_changes_each_copy_in_its_own_layer(tiny_en):
    inputs = tiny_en.encode([TEXT])
    t = inputs["input_ids"].shape[1]
    copies = {k: v.expand(2, -1) for k, v in inputs.items()}
    where = torch.zeros(tiny_en.n_layers, 2, t, dtype=torch.bool)
    where[0, 0, 2] = True  # copy 0: token 2 in layer 0
    where[1, 1, 4] = True  # copy 1: token 4 in layer 1
    with zero_values(tiny_en, where):
        both = hidden_of(tiny_en, copies).last_hidden_state
    for copy, (layer, token) in enumerate([(0, 2), (1, 4)]):
        one = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
        one[0, token] = True
        with zero_values(tiny_en, one, layers=[layer]):
            alone = hidden_of(tiny_en, inputs).last_hidden_state[0]
        assert torch.allclose(both[copy], alone, atol=1e-5)
    with pytest.raises(ValueError, match="leave layers=None"):
        with zero_values(tiny_en, where, layers=[0]):
            pass
    with pytest.raises(ValueError, match="one mask per layer"):
        with zero_values(tiny_en, where[:1]):
            pass


def test_best_view_is_chosen_on_one_half_and_scored_on_the_other():
    """A view that wins only on the choosing half is scored on the other half's queries, not on its own."""
    from attnlab.analysis.faithfulness import VIEWS, Scoreboard

    n = 40
    order = np.random.default_rng(0).permutation(n)
    choose, score = order[: n // 2], order[n // 2:]
    rho = {view: np.full(n, 0.5) for view in VIEWS}
    lucky = np.full(n, 0.5)
    lucky[choose], lucky[score] = 0.9, 0.1  # best where it is chosen, worst where it is scored
    rho["rollout"] = lucky
    board = Scoreboard(rho={"masked": rho})
    best, interval = board.best_held_out(["raw", "norm", "rollout"])
    assert best == "rollout"
    assert interval.estimate == pytest.approx(0.1, abs=1e-12)  # the same-data mean would be 0.5
    assert float(np.mean(lucky)) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        Scoreboard(rho={"masked": {v: np.ones(3) for v in VIEWS}}).best_held_out(["raw"])


def test_queries_scored_together_equal_one_at_a_time(tiny_en, monkeypatch):
    # texts of different lengths padded into shared passes give each text's own numbers, in the
    # texts' order; a text too short to score stays None; a small pass budget makes several groups
    texts = ["how do you play chess ?", "good game .", "what is the best way to learn the rules of chess",
             "where can i learn the rules", "the king moves one square at a time on the board"]
    alone = [faith.query_scores(tiny_en, t) for t in texts]
    assert alone[1] is None and all(q is not None for i, q in enumerate(alone) if i != 1)
    for budget in (256, 20):
        monkeypatch.setattr(faith, "ROWS_PER_GROUP", budget)
        together = faith.queries_scores(tiny_en, texts)
        for a, b in zip(alone, together):
            assert (a is None) == (b is None)
            if a is None:
                continue
            assert a.text == b.text and a.tokens == b.tokens and a.positions == b.positions
            for name in faith.VIEWS:
                np.testing.assert_allclose(b.scores[name], a.scores[name], atol=1e-6)
            for name in faith.TRUTHS:
                np.testing.assert_allclose(b.effects[name], a.effects[name], atol=1e-6, rtol=1e-4)
            for name, share in a.special.items():
                assert b.special[name] == pytest.approx(share, abs=1e-6)


def test_reference_agreement_is_the_mean_of_per_query_correlations():
    from scipy.stats import spearmanr

    from attnlab.analysis.faithfulness import QueryScores, Scoreboard

    rng = np.random.default_rng(0)
    queries = []
    for i in range(12):
        masked = rng.random(6)
        queries.append(QueryScores(f"q{i}", ["t"] * 6, list(range(6)), {}, {
            "masked": masked, "deleted": masked + 0.3 * rng.random(6), "grad_input": rng.random(6)}))
    board = Scoreboard({}, queries)
    by_hand = np.mean([spearmanr(q.effects["masked"], q.effects["deleted"])[0] for q in queries])
    agree = board.reference_agreement("masked", "deleted")
    assert agree.estimate == pytest.approx(by_hand) and agree.low <= agree.estimate <= agree.high
    assert agree.estimate > board.reference_agreement("masked", "grad_input").estimate
    with pytest.raises(ValueError, match="ground truth|reference"):
        board.reference_agreement("masked", "nothing")


def test_each_single_text_reference_refuses_a_batch_and_answers_for_its_one_text(tiny_en):
    """The one-text forms take a ``(1, T)`` encoding, refuse two texts, and give the batched form's answer."""
    one, two = tiny_en.encode([TEXTS[0]]), tiny_en.encode(TEXTS[:2])
    calls = {"knockout": lambda x: faith.knockout(tiny_en, x, [1, 2]),
             "leave_one_out": lambda x: faith.leave_one_out(tiny_en, x, [1, 2]),
             "value_zeroing_maps": lambda x: faith.value_zeroing_maps(tiny_en, x)}
    for name, call in calls.items():
        with pytest.raises(ValueError, match="one text's encoding expected"):
            call(two)
    assert np.allclose(calls["knockout"](one), faith._knockout(tiny_en, two, [[1, 2], [1]])[0], atol=1e-6)
    assert faith.knockout(tiny_en, one, [1, 2]).shape == (2,)
