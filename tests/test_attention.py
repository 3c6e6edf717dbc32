"""The teaching attention code against independent references.

References: ``torch.nn.functional.scaled_dot_product_attention``,
``torch.nn.MultiheadAttention`` with copied weights, and the loaded models'
own returned attention maps and attention-output projections.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attnlab.scratch.self_attention import (
    MultiHeadSelfAttention,
    attention_steps,
    find_pattern_heads,
    head_contributions,
    head_spread_rows,
    hidden_states,
    merge_heads,
    padding_mask,
    pattern_scores,
    project_per_head,
    recompute_layer_attention,
    scaled_dot_product_attention,
    shuffle_keys,
    split_heads,
    tiny_example,
)

TEXTS = ["how do you play chess", "the king"]  # different lengths: padding is exercised


def _qkv(*shape_q, t_k=None, d_v=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    *lead, t_q, d_k = shape_q
    t_k = t_k or t_q
    d_v = d_v or d_k
    q = torch.randn(*lead, t_q, d_k, generator=g)
    k = torch.randn(*lead, t_k, d_k, generator=g)
    v = torch.randn(*lead, t_k, d_v, generator=g)
    return q, k, v


# --------------------------------------------------------------------------- scaled dot product


@pytest.mark.parametrize("scale", [True, False, 0.3])
def test_sdpa_matches_torch(scale):
    q, k, v = _qkv(2, 3, 5, 8, t_k=7, d_v=4)
    out, weights = scaled_dot_product_attention(q, k, v, scale=scale)
    torch_scale = None if scale is True else (1.0 if scale is False else 0.3)
    ref = F.scaled_dot_product_attention(q, k, v, scale=torch_scale)
    assert torch.allclose(out, ref, atol=1e-5)
    # the weights: torch's attention applied to identity values returns them
    eye = torch.eye(7).expand(2, 3, 7, 7)
    ref_w = F.scaled_dot_product_attention(q, k, eye, scale=torch_scale)
    assert torch.allclose(weights, ref_w, atol=1e-5)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 5), atol=1e-6)


def test_sdpa_mask_matches_torch_and_zeroes_hidden_keys():
    q, k, v = _qkv(2, 4, 6, 8)
    keep = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    mask = keep[:, None, None, :]  # (B, 1, 1, T)
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.allclose(out, ref, atol=1e-5)
    assert torch.all(weights[0, :, :, 4:] == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4, 6), atol=1e-6)


def test_sdpa_fully_masked_row_is_uniform_not_nan():
    q, k, v = _qkv(1, 3, 4)
    mask = torch.zeros(3, 3, dtype=torch.bool)
    mask[0] = True  # rows 1 and 2 see nothing
    _, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not torch.isnan(weights).any()
    assert torch.allclose(weights[0, 1], torch.full((3,), 1 / 3))


def test_sdpa_bad_input():
    q, k, v = _qkv(1, 3, 4)
    with pytest.raises(ValueError, match="feature width"):
        scaled_dot_product_attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match="number of tokens"):
        scaled_dot_product_attention(q, k, v[:, :2])
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        scaled_dot_product_attention(q[0, 0], k, v)
    with pytest.raises(TypeError, match="boolean"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(3, 3))
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(5, dtype=torch.bool))
    with pytest.raises(TypeError):
        scaled_dot_product_attention([[1.0]], k, v)


def test_padding_mask_shape_and_error():
    m = padding_mask(torch.tensor([[1, 1, 0]]))
    assert m.shape == (1, 1, 1, 3) and m.dtype == torch.bool and m.tolist() == [[[[True, True, False]]]]
    with pytest.raises(ValueError):
        padding_mask(torch.ones(3))


# --------------------------------------------------------------------------- heads


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 3), t=st.integers(1, 6), h=st.integers(1, 6), d_h=st.integers(1, 5))
def test_merge_inverts_split(b, t, h, d_h):
    x = torch.randn(b, t, h * d_h)
    parts = split_heads(x, h)
    assert parts.shape == (b, h, t, d_h)
    assert torch.equal(merge_heads(parts), x)


def test_split_heads_gives_each_head_its_slice():
    x = torch.arange(2 * 3 * 12, dtype=torch.float32).reshape(2, 3, 12)
    parts = split_heads(x, 4)  # (2, 4, 3, 3)
    for h in range(4):
        assert torch.equal(parts[:, h], x[:, :, 3 * h : 3 * h + 3])


def test_split_merge_bad_shapes():
    with pytest.raises(ValueError, match="not divisible"):
        split_heads(torch.zeros(1, 2, 10), 3)
    with pytest.raises(ValueError, match="batch, tokens, features"):
        split_heads(torch.zeros(2, 10), 2)
    with pytest.raises(ValueError, match="n_heads must be at least 1"):
        split_heads(torch.zeros(1, 2, 10), 0)
    with pytest.raises(TypeError, match="n_heads"):
        split_heads(torch.zeros(1, 2, 10), True)  # a bool is not a number of heads
    # numpy integers (e.g. from argmax) are heads counts like any other
    assert split_heads(torch.zeros(1, 2, 10), np.int64(5)).shape == (1, 5, 2, 2)
    with pytest.raises(ValueError, match="batch, heads"):
        merge_heads(torch.zeros(2, 3, 4))


def test_project_per_head_equals_one_big_projection():
    torch.manual_seed(0)
    lin = torch.nn.Linear(24, 24)
    x = torch.randn(2, 5, 24)
    # reference written independently: the full projection, then a reshape
    ref = (x @ lin.weight.T + lin.bias).reshape(2, 5, 6, 4).permute(0, 2, 1, 3)
    assert torch.allclose(project_per_head(x, lin, 6), ref, atol=1e-6)
    with pytest.raises(ValueError):
        project_per_head(x, lin, 5)


# --------------------------------------------------------------------------- module vs torch


def test_multihead_matches_torch_multiheadattention():
    torch.manual_seed(1)
    d, h = 16, 4
    mine = MultiHeadSelfAttention(d, h).eval()
    ref = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mine.query.weight, mine.key.weight, mine.value.weight]))
        ref.in_proj_bias.copy_(torch.cat([mine.query.bias, mine.key.bias, mine.value.bias]))
        ref.out_proj.weight.copy_(mine.output.weight)
        ref.out_proj.bias.copy_(mine.output.bias)
    x = torch.randn(2, 6, d)
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    with torch.no_grad():
        out, weights = mine(x, attention_mask)
        ref_out, ref_w = ref(x, x, x, key_padding_mask=attention_mask == 0, average_attn_weights=False)
    assert torch.allclose(out, ref_out, atol=1e-5)
    assert torch.allclose(weights, ref_w, atol=1e-5)


def test_multihead_bad_input():
    mha = MultiHeadSelfAttention(8, 2)
    with pytest.raises(ValueError, match="batch, tokens, 8"):
        mha(torch.zeros(1, 3, 6))
    with pytest.raises(ValueError, match="attention_mask"):
        mha(torch.zeros(1, 3, 8), torch.ones(1, 4))
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadSelfAttention(10, 3)


# --------------------------------------------------------------------------- real models


def _hook_output(module):
    seen = []
    handle = module.register_forward_hook(lambda mod, inp, out: seen.append(out.detach()))
    return seen, handle


@pytest.mark.parametrize("arch", ["bert", "roberta", "distilbert", "albert", "electra"])
def test_recompute_matches_model_attention_tiny(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    _, inputs, model_atts = hidden_states(m, TEXTS)
    assert inputs["attention_mask"].sum(1).tolist()[0] > inputs["attention_mask"].sum(1).tolist()[1]
    for layer in range(m.n_layers):
        mine = recompute_layer_attention(m, TEXTS, layer)
        assert mine.weights.shape == model_atts[layer].shape
        assert torch.allclose(mine.weights, model_atts[layer], atol=1e-5)


def test_recompute_matches_model_attention_chinese(tiny_zh):
    texts = ["王者荣耀怎么玩", "怎么玩"]
    _, _, model_atts = hidden_states(tiny_zh, texts)
    for layer in range(tiny_zh.n_layers):
        assert torch.allclose(recompute_layer_attention(tiny_zh, texts, layer).weights, model_atts[layer], atol=1e-5)


def test_recompute_matches_bundled_every_layer(bundled):
    _, inputs, model_atts = hidden_states(bundled, TEXTS)
    assert len(model_atts) == bundled.n_layers == 6
    for layer in range(bundled.n_layers):
        mine = recompute_layer_attention(bundled, TEXTS, layer)
        assert torch.allclose(mine.weights, model_atts[layer], atol=1e-5)
        # padding keys of the shorter text get no weight
        n = int(inputs["attention_mask"][1].sum())
        assert torch.all(mine.weights[1, :, :, n:] == 0)


@pytest.mark.parametrize("arch", ["bert", "distilbert"])
def test_from_model_reproduces_layer_attention_block(tiny_factory, arch):
    """The copied module gives the model's weights and the output projection's output."""
    m = tiny_factory(arch, "en")
    layer = 1
    parts = m.layer_parts()[layer]
    seen, handle = _hook_output(parts.output)
    try:
        hs, inputs, model_atts = hidden_states(m, TEXTS)
    finally:
        handle.remove()
    mha = MultiHeadSelfAttention.from_model(m, layer)
    with torch.no_grad():
        out, weights = mha(hs[layer], inputs["attention_mask"])
    assert torch.allclose(weights, model_atts[layer], atol=1e-5)
    assert len(seen) == 1
    assert torch.allclose(out, seen[0], atol=1e-5)


def test_from_model_bundled_and_bad_layer(bundled):
    mha = MultiHeadSelfAttention.from_model(bundled, 0)
    assert (mha.n_heads, mha.head_dim, mha.d_model) == (12, 32, 384)
    assert torch.equal(mha.key.weight, bundled.layer_parts()[0].key.weight)
    assert mha.key.weight.data_ptr() != bundled.layer_parts()[0].key.weight.data_ptr()  # a copy
    with pytest.raises(ValueError, match="out of range"):
        MultiHeadSelfAttention.from_model(bundled, 6)
    with pytest.raises(ValueError, match="out of range"):
        recompute_layer_attention(bundled, "chess", -1)


# --------------------------------------------------------------------------- lesson 01 helpers


def test_attention_steps_tiny_example_by_hand():
    ex = tiny_example()
    s = attention_steps(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"])
    # row 0 by hand: q_I = (2, 0, 1, 1); keys (1,1,0,0), (1,0,2,1), (1,1,1,0) -> scores 2, 5, 3; /sqrt(4)
    assert s["scores"][0].tolist() == [2.0, 5.0, 3.0]
    denom = math.exp(1.0) + math.exp(2.5) + math.exp(1.5)
    assert s["weights"][0, 1].item() == pytest.approx(math.exp(2.5) / denom, abs=1e-6)
    out, w = scaled_dot_product_attention(s["Q"], s["K"], s["V"])
    assert torch.allclose(w, s["weights"], atol=1e-6)
    assert torch.allclose(out, s["output"], atol=1e-6)
    with pytest.raises(ValueError):
        attention_steps(ex["x"][:, :3], ex["w_q"], ex["w_k"], ex["w_v"])


def test_pattern_scores_on_constructed_maps():
    n = 5
    diagonal = torch.eye(n)
    vertical = torch.zeros(n, n)
    vertical[:, 2] = 1.0
    previous = torch.zeros(n, n)
    previous[0, 0] = 1.0
    for i in range(1, n):
        previous[i, i - 1] = 1.0
    s = pattern_scores(torch.stack([diagonal, vertical, previous]))
    assert s["diagonal"].tolist() == pytest.approx([1.0, 0.2, 0.2])
    assert s["vertical"][1].item() == pytest.approx(1.0) and s["vertical_column"][1].item() == 2
    assert s["previous"][2].item() == pytest.approx(1.0)
    assert s["next"][2].item() == pytest.approx(0.0)
    maps = torch.full((2, 3, n, n), 1.0 / n)
    maps[0, 1] = diagonal
    maps[1, 2] = vertical
    maps[1, 0] = previous
    found = find_pattern_heads(maps)
    assert found["diagonal"][:2] == (0, 1)
    assert found["vertical"][:2] == (1, 2)
    assert found["band"][:2] == (1, 0)
    with pytest.raises(ValueError):
        pattern_scores(torch.zeros(3, 4))
    with pytest.raises(ValueError):
        find_pattern_heads(torch.zeros(3, 4, 4))


def test_package_attention_name_still_extracts(tiny_en):
    """Importing the teaching module must not hide ``al.attention(m, texts)``."""
    import attnlab as al
    import attnlab.scratch.self_attention  # noqa: F401

    att = al.attention(tiny_en, ["how do you play chess"])
    assert att.tensor.shape[:3] == (1, tiny_en.n_layers, tiny_en.n_heads)


# --------------------------------------------------------------------------- lesson 04 helpers


def test_head_contributions_sum_to_output_projection():
    torch.manual_seed(2)
    out = torch.nn.Linear(12, 5)
    context = torch.randn(2, 3, 4, 4)  # (B, H, T, d_h)
    parts = head_contributions(context, out)
    assert parts.shape == (2, 3, 4, 5)
    assert torch.allclose(parts.sum(1) + out.bias, out(merge_heads(context)), atol=1e-5)
    # head 1 alone: its slice of the concatenation times its block of W_o, written out
    ref = context[:, 1] @ out.weight[:, 4:8].T
    assert torch.allclose(parts[:, 1], ref, atol=1e-6)
    with pytest.raises(ValueError):
        head_contributions(context[0], out)
    with pytest.raises(ValueError):
        head_contributions(torch.randn(1, 2, 4, 4), out)


def test_head_spread_of_identical_and_disjoint_heads():
    from scipy.spatial.distance import jensenshannon

    n = 4
    same = torch.softmax(torch.randn(n, n), -1).expand(3, n, n)
    assert float(head_spread_rows(same).max()) == pytest.approx(0.0, abs=1e-12)
    a, b = torch.eye(n), torch.roll(torch.eye(n), 1, dims=1)
    got = float(head_spread_rows(torch.stack([a, b])).mean())
    pa, pb = 0.999 * a + 0.001 / n, 0.999 * b + 0.001 / n
    ref = sum(jensenshannon(pa[r].numpy(), pb[r].numpy()) ** 2 for r in range(n)) / n  # scipy: sqrt of JS, nats
    assert got == pytest.approx(ref, rel=1e-6)
    with pytest.raises(ValueError):
        head_spread_rows(torch.eye(3)[None])


def test_head_spread_rows_are_the_per_token_divergences():
    from scipy.spatial.distance import jensenshannon

    n = 5
    maps = torch.softmax(torch.randn(3, n, n, generator=torch.Generator().manual_seed(3)), -1)  # (H, n, n)
    rows = head_spread_rows(maps)
    assert rows.shape == (n,)
    p = (0.999 * maps + 0.001 / n).double()
    pairs = [(0, 1), (0, 2), (1, 2)]
    for r in range(n):
        ref = np.mean([jensenshannon(p[i, r].numpy(), p[j, r].numpy()) ** 2 for i, j in pairs])
        assert float(rows[r]) == pytest.approx(ref, rel=1e-6)


def test_shuffle_keys_moves_weights_within_each_row_only():
    maps = torch.softmax(torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(0)), -1)
    mixed = shuffle_keys(maps, torch.Generator().manual_seed(1))
    assert mixed.shape == maps.shape
    # every row holds the same weights, in another order
    assert torch.equal(mixed.sort(dim=-1).values, maps.sort(dim=-1).values)
    assert not torch.equal(mixed, maps)
    again = shuffle_keys(maps, torch.Generator().manual_seed(1))
    assert torch.equal(mixed, again)  # a seeded generator gives the same control
    with pytest.raises(ValueError):
        shuffle_keys(torch.zeros(3, 4))


def test_layer_heads_figure_has_one_scale_a_colourbar_and_named_axes():
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.viz.multi_head_plots import plot_layer_heads_with_scale

    maps = torch.softmax(torch.randn(5, 4, 4, generator=torch.Generator().manual_seed(2)), -1)  # (H, n, n)
    fig = plot_layer_heads_with_scale(maps, ["a", "b", "c", "d"], layer=0, ncols=3)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 5 and len(fig.axes) == 5 + 1  # five heads, then the colourbar
    limits = [ax.images[0].get_clim() for ax in panels]
    assert limits == [(0.0, pytest.approx(float(maps.max())))] * 5  # one shared scale
    colourbar = fig.axes[-1]
    assert colourbar.get_ylabel() == "attention weight"
    assert fig.get_supxlabel().startswith("key token") and fig.get_supylabel().startswith("query token")
