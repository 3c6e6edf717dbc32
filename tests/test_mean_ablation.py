"""Mean-ablation: a removed head leaves its mean output over reference texts, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.analysis import importance
from attnlab.core.gates import gate_heads, head_output_means, mask_heads

REFERENCE = ["how do you play chess", "what is the best game", "where is the station"]
TEXTS = ["how do you play chess", "a short one"]


def _contexts(m, texts, layer):
    """``(B, T, H * d)`` the output projection's input of ``layer``, captured with a plain hook."""
    store = {}
    dense = m.layer_parts()[layer].output
    handle = dense.register_forward_pre_hook(lambda _m, args: store.__setitem__("c", args[0].detach().clone()))
    try:
        enc = m.encode(texts)
        with torch.no_grad():
            m.model(**enc)
    finally:
        handle.remove()
    return store["c"], enc["attention_mask"]


def test_head_output_means_by_hand(tiny_en):
    m = tiny_en
    means = head_output_means(m, REFERENCE, batch_size=2)  # two batches: padding differs between them
    assert tuple(means.shape) == (m.n_layers, m.n_heads, m.head_dim)
    for layer in range(m.n_layers):
        rows = []
        for text in REFERENCE:  # one text at a time: no padding at all
            c, _mask = _contexts(m, [text], layer)
            rows.append(c[0])  # (T, H * d)
        by_hand = torch.cat(rows).double().mean(dim=0).view(m.n_heads, m.head_dim)
        torch.testing.assert_close(means[layer].double(), by_hand, rtol=0, atol=1e-5)


def test_mean_ablation_equals_replacing_the_slice_by_hand(tiny_en):
    m = tiny_en
    layer, head, d = 1, 5, m.head_dim
    fill = head_output_means(m, REFERENCE)
    mean_vec = fill[layer, head].clone()

    def put_mean(_module, args):  # independent: overwrite the head's slice with its mean
        c = args[0].clone()
        c[..., head * d:(head + 1) * d] = mean_vec
        return (c,)

    handle = m.layer_parts()[layer].output.register_forward_pre_hook(put_mean)
    try:
        with torch.no_grad():
            expected = m.model(**m.encode(TEXTS)).last_hidden_state
    finally:
        handle.remove()
    with torch.no_grad(), mask_heads(m, [(layer, head)], fill):
        got = m.model(**m.encode(TEXTS)).last_hidden_state
    with torch.no_grad(), mask_heads(m, [(layer, head)]):
        zeroed = m.model(**m.encode(TEXTS)).last_hidden_state
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
    assert not torch.allclose(got, zeroed, atol=1e-4)  # the mean is not zero: the two ablations differ


def test_fill_with_gate_one_changes_nothing_and_gate_half_mixes(tiny_en):
    m = tiny_en
    fill = head_output_means(m, REFERENCE)
    enc = m.encode(TEXTS)
    with torch.no_grad():
        full = m.model(**enc).last_hidden_state
        with gate_heads(m, torch.ones(m.n_layers, m.n_heads), fill):
            kept = m.model(**enc).last_hidden_state
    torch.testing.assert_close(kept, full, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="fill"):
        with mask_heads(m, [(0, 0)], torch.zeros(2, 2, 2)):
            pass


def test_ablation_per_text_with_fill(tiny_en):
    m = tiny_en
    objective = importance.make_objective(m, TEXTS, kind="sentence", batch_size=8)
    fill = head_output_means(m, REFERENCE)
    mean_effects = importance.ablation_per_text(m, objective, fill=fill)["sentence"]  # (N, L, H)
    zero_effects = importance.ablation_per_text(m, objective)["sentence"]
    with mask_heads(m, [(1, 5)], fill):
        masked = objective.per_text()["sentence"]  # (N,): whole passes with the head's mean in its place
    base = objective.per_text()["sentence"]
    np.testing.assert_allclose(mean_effects[:, 1, 5], masked - base, atol=1e-6)
    assert not np.allclose(mean_effects, zero_effects)


def test_prunable_heads_with_a_zero_fill_is_zero_ablation(tiny_en):
    from attnlab.analysis.pruning import order_by_score, prunable_heads

    m = tiny_en
    objective = importance.make_objective(m, TEXTS, kind="sentence", batch_size=8)
    order = order_by_score(np.arange(m.n_layers * m.n_heads, dtype=float).reshape(m.n_layers, m.n_heads))
    zero_fill = torch.zeros(m.n_layers, m.n_heads, m.head_dim)
    tol = 0.02
    assert prunable_heads(m, objective, order, tolerance=tol, fill=zero_fill) == prunable_heads(
        m, objective, order, tolerance=tol)
