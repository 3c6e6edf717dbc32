"""The analyses that now run the model through attnlab.core.run give the numbers of a direct
forward pass of the transformers model (written out here, with hooks installed by hand)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

from attnlab.analysis.faithfulness import knockout, value_zeroing_maps
from attnlab.analysis.interventions import replace_maps, sentence_vectors, zero_values_hooks
from attnlab.analysis.mean_map_replacement import _own_maps
from attnlab.analysis.norm_attention import norm_attention
from attnlab.analysis.position import equivariance_gap, output_vectors
from attnlab.analysis.regroup import capture_queries_keys
from attnlab.analysis.sinks import sink_intervention
from attnlab.core.run import run
from attnlab.course.exercises.lesson_00 import _first_row
from attnlab.scratch.self_attention import hidden_states

from same_length import same_length_texts

ATOL = 1e-5


def direct(m, inputs):
    """transformers' own outputs: last hidden state, every hidden state and every map."""
    with torch.no_grad():
        return m.model(**inputs, output_hidden_states=True, output_attentions=True)


def _analysed(m, texts, analysis):
    """``analysis(m, texts)``, with the texts' encoding and a direct pass over them to check it against."""
    inputs = m.encode(texts)
    return analysis(m, texts), inputs, direct(m, inputs)


@contextlib.contextmanager
def zeroed_by_hand(m, layer: int, where: torch.Tensor):
    """Zero the value vectors (every head) of the tokens where ``where`` ``(B, T)`` is True in one layer."""
    def hook(_module, _args, output):
        return output * (~where).to(output.dtype)[..., None]  # (B, T, H * d_head)

    handle = m.layer_parts()[layer].value.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def cosine_distance_by_hand(a, b):
    a, b = a.double(), b.double()
    return 1 - (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))


def pooled_by_hand(hidden, mask):
    w = mask.double()[..., None]
    return (hidden.double() * w).sum(1) / w.sum(1)


def test_sentence_vectors_and_zero_value_hooks_match_a_direct_pass(tiny_en):
    m = tiny_en
    inputs = m.encode(["how do you play chess", "why is the sky blue today"])
    plain = direct(m, inputs).last_hidden_state
    assert torch.allclose(sentence_vectors(m, inputs).double(), pooled_by_hand(plain, inputs["attention_mask"]),
                          atol=ATOL)
    where = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
    where[:, 1] = True
    with zeroed_by_hand(m, 1, where):
        expected = direct(m, inputs).last_hidden_state
    got = run(m, inputs, keep=("output",), hooks=zero_values_hooks(m, where, layers=[1])).output.last_hidden_state
    assert torch.allclose(got, expected, atol=ATOL)
    assert not torch.allclose(got, plain, atol=1e-3)  # the change is real


def test_replacing_a_head_map_by_its_own_map_changes_nothing(tiny_en):
    m = tiny_en
    inputs = m.encode(same_length_texts(2, seed=4))
    out = direct(m, inputs)
    own = out.attentions[1][:, 3]  # (B, T, T)
    with replace_maps(m, {(1, 3): own}):
        same = sentence_vectors(m, inputs)
    on_first = torch.zeros_like(own)
    on_first[..., 0] = 1.0  # every query looks at the first token only
    with replace_maps(m, {(0, h): on_first for h in range(m.n_heads)}):
        changed = sentence_vectors(m, inputs)
    base = pooled_by_hand(out.last_hidden_state, inputs["attention_mask"])
    assert torch.allclose(same.double(), base, atol=ATOL)
    assert not torch.allclose(changed.double(), base, atol=1e-3)  # a real replacement does change it


def test_sink_intervention_matches_a_direct_computation(tiny_en):
    m = tiny_en
    texts = ["how do you play chess", "why is the sky blue today"]
    got, inputs, out = _analysed(m, texts, sink_intervention)
    mask = inputs["attention_mask"].double()  # (B, T)
    lengths = inputs["attention_mask"].sum(1)
    base = pooled_by_hand(out.last_hidden_state, inputs["attention_mask"])
    for layer in range(m.n_layers):
        maps = out.attentions[layer].double().mean(1)  # (B, T, T), heads averaged
        for b in range(len(texts)):
            first = (maps[b, :, 0] * mask[b]).sum() / mask[b].sum()
            last = (maps[b, :, lengths[b] - 1] * mask[b]).sum() / mask[b].sum()
            assert got.sink_mass[b, layer] == pytest.approx(float(max(first, last)), abs=ATOL)
            assert bool(got.sink_is_start[b, layer]) == bool(first >= last)
        where = torch.zeros_like(inputs["input_ids"], dtype=torch.bool)
        for b in range(len(texts)):
            where[b, 0 if got.sink_is_start[b, layer] else lengths[b] - 1] = True
        with zeroed_by_hand(m, layer, where):
            changed = pooled_by_hand(direct(m, inputs).last_hidden_state, inputs["attention_mask"])
        assert np.allclose(got.sink_effect[:, layer], cosine_distance_by_hand(changed, base).numpy(), atol=ATOL)


def test_norm_attention_matches_a_direct_pass(tiny_en):
    m = tiny_en
    texts = ["how do you play chess", "why"]
    got, inputs, out = _analysed(m, texts, norm_attention)
    mask = inputs["attention_mask"].float()
    for layer in range(m.n_layers):
        assert torch.allclose(got.weights[:, layer], out.attentions[layer] * mask[:, None, :, None], atol=ATOL)
        parts = m.layer_parts()[layer]
        x = out.hidden_states[layer]  # (B, T, d): the layer's input
        with torch.no_grad():
            values = x @ parts.value.weight.T + parts.value.bias  # (B, T, H * d_head)
        for h in range(m.n_heads):
            cols = slice(h * m.head_dim, (h + 1) * m.head_dim)
            f = values[..., cols] @ parts.output.weight[:, cols].T.detach()  # (B, T, d)
            assert torch.allclose(got.value_norms[:, layer, h], f.norm(dim=-1) * mask, atol=ATOL)


def test_own_maps_of_mean_map_replacement_match_a_direct_pass(tiny_en):
    m = tiny_en
    texts = same_length_texts(3, seed=1)
    got = _own_maps(m, texts, [1, 0], batch_size=2)  # (N, 2, H, n, n), in the order asked
    out = direct(m, m.encode(texts))
    assert torch.allclose(got[:, 0], out.attentions[1], atol=ATOL)
    assert torch.allclose(got[:, 1], out.attentions[0], atol=ATOL)


def test_knockout_and_value_zeroing_match_passes_zeroed_by_hand(tiny_en):
    m = tiny_en
    inputs = m.encode(["how do you play"])
    t = inputs["input_ids"].shape[1]
    plain = direct(m, inputs)
    # knockout of token 2: its values zeroed in every layer, distance of the other tokens
    where = torch.zeros(1, t, dtype=torch.bool)
    where[0, 2] = True
    with contextlib.ExitStack() as stack:
        for layer in range(m.n_layers):
            stack.enter_context(zeroed_by_hand(m, layer, where))
        changed = direct(m, inputs).last_hidden_state
    distance = cosine_distance_by_hand(changed[0], plain.last_hidden_state[0])  # (T,)
    expected = distance[torch.arange(t) != 2].mean()
    assert knockout(m, inputs, [2])[0] == pytest.approx(float(expected), abs=ATOL)
    # value zeroing: token j zeroed in layer l alone, distance of layer l's outputs, rows rescaled
    got = value_zeroing_maps(m, inputs)  # (L, T, T)
    for layer in range(m.n_layers):
        raw = torch.zeros(t, t, dtype=torch.float64)
        for j in range(t):
            where = torch.zeros(1, t, dtype=torch.bool)
            where[0, j] = True
            with zeroed_by_hand(m, layer, where):
                after = direct(m, inputs).hidden_states[layer + 1][0]  # (T, d)
            raw[:, j] = cosine_distance_by_hand(after, plain.hidden_states[layer + 1][0])
        assert torch.allclose(got[layer], raw / raw.sum(-1, keepdim=True), atol=1e-4)


def test_captured_queries_and_keys_are_the_projections_of_each_layer_input(tiny_factory):
    m = tiny_factory("albert", "en")  # one module shared by every layer: calls are told apart
    inputs = m.encode(["how do you play chess", "why"])
    queries, keys = capture_queries_keys(m, inputs)
    out = direct(m, inputs)
    with torch.no_grad():
        for layer, p in enumerate(m.layer_parts()):
            x = out.hidden_states[layer]
            assert torch.allclose(queries[layer], p.query(x), atol=ATOL)
            assert torch.allclose(keys[layer], p.key(x), atol=ATOL)


def test_position_outputs_match_a_direct_pass(tiny_en):
    m = tiny_en
    text = "how do you play chess"
    inputs = m.encode([text])
    expected = direct(m, inputs).last_hidden_state[0]
    assert torch.allclose(output_vectors(m, text), expected, atol=ATOL)
    n = inputs["input_ids"].shape[1]
    perm = [0] + list(range(n - 2, 0, -1)) + [n - 1]
    moved = {k: v[:, perm] for k, v in inputs.items()}
    h_new = direct(m, moved).last_hidden_state[0]
    gap = float((h_new - expected[perm]).abs().max())
    assert equivariance_gap(m, text, perm) == pytest.approx(gap, abs=ATOL)
    assert gap > 1e-3  # with positions, reordering is not only a reordering


def test_scratch_hidden_states_match_a_direct_pass(tiny_en):
    m = tiny_en
    texts = ["how do you play chess", "why"]
    hs, inputs, maps = hidden_states(m, texts)
    out = direct(m, m.encode(texts))
    assert len(hs) == m.n_layers + 1 and len(maps) == m.n_layers
    assert all(torch.allclose(a, b, atol=ATOL) for a, b in zip(hs, out.hidden_states))
    assert all(torch.allclose(a, b, atol=ATOL) for a, b in zip(maps, out.attentions))


def test_lesson_00_first_row_matches_a_pass_on_the_token_ids_alone(tiny_en):
    m = tiny_en
    text = "how do you play chess"
    ids = m.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = m.model(input_ids=ids, output_attentions=True)
    row, tokens = _first_row(m, text, 1, 2)
    assert torch.allclose(row, out.attentions[1][0, 2, 0], atol=ATOL)
    assert tokens == m.tokenizer.convert_ids_to_tokens(ids[0].tolist())
