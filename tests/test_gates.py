"""Head gating: checked against hooks and linear maps written here, independently."""

from __future__ import annotations

import pytest
import torch

from attnlab.core.gates import gate_heads, gate_hook_specs, gates_for, mask_heads
from attnlab.core.run import Hook, encode, run

TEXTS = ["how do you play chess", "what is the best game"]


def _last_hidden(m, **kw):
    with torch.no_grad():
        return m.model(**m.encode(TEXTS)).last_hidden_state


def _n_hooks(m) -> int:
    return sum(len(mod._forward_pre_hooks) + len(mod._forward_hooks) for mod in m.model.modules())


@pytest.mark.parametrize("arch", ["bert", "roberta", "distilbert", "electra"])
def test_all_heads_of_a_layer_equal_zeroed_attention_output(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    layer = 1
    dense = m.layer_parts()[layer].output

    def zero_input(_module, args):  # independent: the whole context vector becomes 0
        return (torch.zeros_like(args[0]),)

    handle = dense.register_forward_pre_hook(zero_input)
    try:
        expected = _last_hidden(m)
    finally:
        handle.remove()
    with mask_heads(m, [(layer, h) for h in range(m.n_heads)]):
        got = _last_hidden(m)
    assert not torch.allclose(expected, _last_hidden(m))  # the layer matters at all
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def _capture(module):
    store = {}

    def pre(_m, args):
        store["input"] = args[0].detach().clone()

    def post(_m, _args, out):
        store["output"] = out.detach().clone()

    return store, [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]


@pytest.mark.parametrize("gate_value", [0.0, 0.5])
def test_one_head_equals_scaling_its_slice(tiny_en, gate_value):
    m = tiny_en
    layer, head, d = 1, 7, tiny_en.head_dim
    dense = m.layer_parts()[layer].output
    store, handles = _capture(dense)
    try:
        _last_hidden(m)  # unmodified context vector of layer 1
        context = store["input"]
        gates = torch.ones(m.n_layers, m.n_heads)
        gates[layer, head] = gate_value
        with gate_heads(m, gates):
            _last_hidden(m)
        got = store["output"]
    finally:
        for h in handles:
            h.remove()
    scaled = context.clone()
    scaled[..., head * d : (head + 1) * d] *= gate_value  # the head's slice, by hand
    expected = scaled @ dense.weight.T + dense.bias
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
    # and it differs from the ungated projection
    assert not torch.allclose(got, context @ dense.weight.T + dense.bias, atol=1e-5)


def test_masking_nothing_changes_nothing(tiny_en):
    before = _last_hidden(tiny_en)
    with mask_heads(tiny_en, []):
        torch.testing.assert_close(_last_hidden(tiny_en), before, rtol=0, atol=0)


def test_hooks_removed_and_outputs_restored_after_exception(tiny_en):
    before = _last_hidden(tiny_en)
    hooks = _n_hooks(tiny_en)
    with pytest.raises(RuntimeError, match="boom"):
        with mask_heads(tiny_en, [(0, 0), (1, 3)]):
            assert _n_hooks(tiny_en) > hooks
            assert not torch.allclose(_last_hidden(tiny_en), before)
            raise RuntimeError("boom")
    assert _n_hooks(tiny_en) == hooks
    torch.testing.assert_close(_last_hidden(tiny_en), before, rtol=0, atol=0)


def test_albert_shared_projection_gates_the_right_layer(tiny_factory):
    m = tiny_factory("albert", "en", n_layers=3)
    dense = m.layer_parts()[0].output
    assert all(p.output is dense for p in m.layer_parts())  # really shared
    layer, head, d = 1, 4, m.head_dim
    calls = {"n": 0}

    def reset(_m, _a):
        calls["n"] = 0

    def zero_on_second_call(_m, args):  # independent: count calls by hand
        x = args[0]
        if calls["n"] == layer:
            x = x.clone()
            x[..., head * d : (head + 1) * d] = 0
        calls["n"] += 1
        return (x,)

    handles = [m.model.register_forward_pre_hook(reset), dense.register_forward_pre_hook(zero_on_second_call)]
    try:
        expected = _last_hidden(m)
    finally:
        for h in handles:
            h.remove()
    with mask_heads(m, [(layer, head)]):
        got = _last_hidden(m)
        got_again = _last_hidden(m)  # the counter restarts every forward pass
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(got_again, expected, rtol=0, atol=1e-6)
    with mask_heads(m, [(0, head)]):
        assert not torch.allclose(_last_hidden(m), expected, atol=1e-6)


def test_gate_gradient_flows(tiny_en):
    gates = torch.ones(tiny_en.n_layers, tiny_en.n_heads, requires_grad=True)
    with gate_heads(tiny_en, gates):
        out = tiny_en.model(**tiny_en.encode(TEXTS)).last_hidden_state
        out.pow(2).sum().backward()
    assert gates.grad is not None and gates.grad.abs().sum() > 0


def test_bad_input(tiny_en):
    with pytest.raises(ValueError, match="layer index 2"):
        gates_for(tiny_en, [(2, 0)])
    with pytest.raises(ValueError, match="head index 12"):
        gates_for(tiny_en, [(0, 12)])
    with pytest.raises(TypeError, match="pairs"):
        with mask_heads(tiny_en, (0, 6)):
            pass
    with pytest.raises(TypeError):
        gates_for(tiny_en, [(0, 1, 2)])
    with pytest.raises(ValueError, match=r"\[2, 12\]"):
        with gate_heads(tiny_en, torch.ones(3, 12)):
            pass


def test_gate_specs_in_one_run_scale_the_slice_and_leave_no_hook(tiny_en):
    m = tiny_en
    layer, head, d = 0, 5, m.head_dim
    dense = m.layer_parts()[layer].output
    store, handles = _capture(dense)
    hooks = _n_hooks(m)  # the capture hooks included
    try:
        gates = torch.ones(m.n_layers, m.n_heads)
        gates[layer, head] = 0.25
        run(m, encode(m, TEXTS), keep=("output",), hooks=gate_hook_specs(m, gates))
        got, context = store["output"], store["input"]  # the capture runs before the gate: ungated input
        assert _n_hooks(m) == hooks  # removed after the pass
        run(m, encode(m, TEXTS), keep=("output",))  # and the next pass is ungated
        ungated = store["output"]
    finally:
        for h in handles:
            h.remove()
    with torch.no_grad():
        scaled = context.clone()
        scaled[..., head * d : (head + 1) * d] *= 0.25  # the head's slice, by hand
        torch.testing.assert_close(got, scaled @ dense.weight.T + dense.bias, rtol=0, atol=1e-5)
        torch.testing.assert_close(ungated, context @ dense.weight.T + dense.bias, rtol=0, atol=1e-5)
    assert not torch.allclose(got, ungated, atol=1e-5)


def test_gate_specs_are_removed_when_the_pass_raises(tiny_en):
    m = tiny_en
    hooks = _n_hooks(m)
    before = _last_hidden(m)

    def explode(_module, _args, _output):
        raise RuntimeError("boom")

    specs = gate_hook_specs(m, gates_for(m, [(1, 2)])) + [Hook(m.layer_parts()[1].output, explode)]
    with pytest.raises(RuntimeError, match="boom"):
        run(m, encode(m, TEXTS), keep=("output",), hooks=specs)
    assert _n_hooks(m) == hooks
    torch.testing.assert_close(_last_hidden(m), before, rtol=0, atol=0)


def test_gate_heads_removes_its_hooks_when_the_body_raises(tiny_en):
    hooks = _n_hooks(tiny_en)
    gates = torch.ones(tiny_en.n_layers, tiny_en.n_heads, requires_grad=True)
    with pytest.raises(RuntimeError, match="boom"):
        with gate_heads(tiny_en, gates) as inside:
            assert inside is gates and _n_hooks(tiny_en) > hooks
            raise RuntimeError("boom")
    assert _n_hooks(tiny_en) == hooks
