"""core.run: the one tokeniser call and the one way to run the model, against transformers' own outputs."""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path

import pytest
import torch

from attnlab.core.models import load_masked_lm, load_model
from attnlab.core.run import Hook, attention_module_paths, encode, encode_ids, layer_module_paths, run
from attnlab.tools.testing import ARCHITECTURES, save_tiny_model

from same_length import same_length_texts

PACKAGE = Path(__file__).resolve().parents[1] / "attnlab"


def reference(m, texts, pairs=None):
    """transformers' own outputs (all maps and hidden states), tokenised directly."""
    args = (texts, pairs) if pairs is not None else (texts,)
    enc = m.tokenizer(*args, padding=True, return_tensors="pt")
    if m.model_type == "distilbert":
        enc.pop("token_type_ids", None)
    with torch.no_grad():
        out = m.model(**enc, output_attentions=True, output_hidden_states=True)
    return enc, out


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_encode_follows_the_segment_rule_and_counts_tokens(tiny_factory, arch):
    m = tiny_factory(arch, "en")
    texts = ["how do you play chess", "why"]
    batch = encode(m, texts)
    enc, _ = reference(m, texts)
    assert torch.equal(batch.input_ids, enc["input_ids"])
    assert torch.equal(batch.attention_mask, enc["attention_mask"])
    assert (batch.token_type_ids is None) == (arch == "distilbert")
    assert "token_type_ids" not in batch.inputs if arch == "distilbert" else "token_type_ids" in batch.inputs
    expected = [len(m.tokenizer(t)["input_ids"]) for t in texts]
    assert batch.lengths.tolist() == expected


def test_pairs_keep_their_second_segment(tiny_en):
    batch = encode(tiny_en, ["how are you"], ["fine thanks"])
    segments = batch.token_type_ids[0].tolist()
    assert segments[0] == 0 and segments[-1] == 1 and set(segments) == {0, 1}


def test_encode_ids_pads_ragged_rows_like_the_tokenizer(tiny_en):
    texts = ["how do you play chess", "why", "the cat sat"]
    ids = tiny_en.tokenizer(texts)["input_ids"]
    from_ids, from_texts = encode_ids(tiny_en, ids), encode(tiny_en, texts)
    assert torch.equal(from_ids.input_ids, from_texts.input_ids)
    assert torch.equal(from_ids.attention_mask, from_texts.attention_mask)
    assert torch.equal(from_ids.lengths, from_texts.lengths)
    square = encode_ids(tiny_en, torch.tensor([ids[0], ids[0]]))
    assert square.attention_mask.all() and square.lengths.tolist() == [len(ids[0])] * 2
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        encode_ids(tiny_en, torch.tensor(ids[0]))


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_run_keeps_the_same_maps_and_hidden_states_as_transformers(tiny_factory, arch):
    m = tiny_factory(arch, "en", n_layers=3)
    texts = ["how do you play chess", "why is the sky blue today"]
    _, out = reference(m, texts)
    cache = run(m, encode(m, texts), keep=("maps", "hidden"))
    assert sorted(cache.maps) == [0, 1, 2] and sorted(cache.hidden) == [0, 1, 2, 3]
    for l in range(3):
        assert torch.equal(cache.maps[l], out.attentions[l])
    for k in range(4):
        assert torch.equal(cache.hidden[k], out.hidden_states[k])


def test_stop_after_layer_skips_the_layers_above_and_keeps_the_values_exact(tiny_factory):
    m = tiny_factory("bert", "en", n_layers=4)
    texts = same_length_texts(3, seed=2)
    _, out = reference(m, texts)
    ran = []
    spy = Hook(layer_module_paths(m)[2], lambda *a: ran.append(2))
    cache = run(m, encode(m, texts), keep=("maps", "hidden"), layers=[0, 1], hooks=[spy])
    assert cache.stopped_after == 1 and ran == []  # layer 3 never ran
    assert torch.equal(cache.hidden[2], out.hidden_states[2])
    assert torch.equal(cache.maps[1], out.attentions[1])
    only_maps = run(m, encode(m, texts), keep=("maps",), layers=[1])
    assert only_maps.stopped_after == 1 and sorted(only_maps.maps) == [1]
    assert torch.equal(only_maps.stacked_maps()[:, 0], out.attentions[1])


def test_an_extra_hook_changes_the_pass_and_is_removed_even_after_an_error(tiny_en):
    m = tiny_en
    batch = encode(m, ["how do you play chess"])
    plain = run(m, batch, keep=("output",)).output.last_hidden_state
    zero_embeddings = Hook("embeddings", lambda module, args, output: torch.zeros_like(output))
    changed = run(m, batch, keep=("output",), hooks=[zero_embeddings]).output.last_hidden_state
    assert not torch.allclose(changed, plain, atol=1e-3)

    def explode(module, args, output):
        raise RuntimeError("boom")

    hooks_before = sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.model.modules())
    with pytest.raises(RuntimeError, match="boom"):
        run(m, batch, keep=("maps",), hooks=[Hook(attention_module_paths(m)[0], explode)])
    hooks_after = sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.model.modules())
    assert hooks_after == hooks_before
    again = run(m, batch, keep=("output",)).output.last_hidden_state
    assert torch.equal(again, plain)


def test_run_records_the_encoder_inside_a_masked_lm_model(tmp_path):
    folder = save_tiny_model(tmp_path / "mlm", n_layers=2, n_heads=2, hidden=8, mlm_head=True, seed=5)
    m = load_model(str(folder), verbose=False)
    mlm = load_masked_lm(m)
    texts = ["how do you play chess", "why"]
    enc, out = reference(m, texts)
    with torch.no_grad():
        logits = mlm(**enc).logits  # (B, T, V), transformers' own pass
    cache = run(m, encode(m, texts), model=mlm, keep=("maps", "output"))
    assert torch.equal(cache.output.logits, logits)
    assert all(torch.equal(cache.maps[l], out.attentions[l]) for l in range(2))
    hidden = run(m, encode(m, texts), model=mlm, keep=("hidden",), layers=[0])
    assert torch.equal(hidden.hidden[1], out.hidden_states[1])


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_start_at_skips_the_layers_below_and_matches_the_whole_pass(tiny_factory, arch):
    from attnlab.core.gates import gate_hook_specs
    m = tiny_factory(arch, "en", n_layers=3)
    batch = encode(m, ["how do you play chess", "why is the sky blue today"])
    gates = torch.ones(m.n_layers, m.n_heads)
    gates[2, 0] = 0.0  # a head of layer 2 switched off: nothing below layer 2 changes
    whole = run(m, batch, keep=("output",), hooks=gate_hook_specs(m, gates)).output.last_hidden_state
    start = run(m, batch, keep=("hidden",), layers=[1]).hidden[2]  # the input of layer 2
    ran = []
    spy = Hook(layer_module_paths(m)[0], lambda *a: ran.append(0), pre=True)
    out = run(m, batch, keep=("output", "maps"), hooks=gate_hook_specs(m, gates) + [spy], start_at=(2, start))
    assert torch.allclose(out.output.last_hidden_state, whole, atol=1e-6)
    shares_layers = len(set(layer_module_paths(m))) < m.n_layers
    assert (ran != []) == shares_layers  # ALBERT runs the whole pass (the same numbers); the others skip
    assert sorted(out.maps) == ([0, 1, 2] if shares_layers else [2])  # maps are recorded under their own layer
    with pytest.raises(ValueError, match="batch"):
        run(m, batch, keep=("output",), start_at=(2, start[:1]))
    again = run(m, batch, keep=("output",)).output.last_hidden_state  # the layer list is whole again
    assert torch.equal(again, run(m, batch, keep=("output",)).output.last_hidden_state)
    assert len(run(m, batch, keep=("maps",)).maps) == 3


def test_start_at_on_a_copy_of_the_model_skips_the_copy_s_layers(tiny_factory):
    import copy
    from attnlab.core.run import layer_input
    m = tiny_factory("bert", "en", n_layers=3)
    other = copy.deepcopy(m.model)  # the same structure, other weights (as an int8 copy would have)
    with torch.no_grad():
        for p in other.encoder.layer[2].parameters():
            p.mul_(0.5)
    batch = encode(m, ["how do you play chess", "why is the sky blue today"])
    whole = run(m, batch, keep=("output",), model=other).output.last_hidden_state
    start = layer_input(m, batch, 2, model=other)
    ran = []
    spy = Hook(other.encoder.layer[0], lambda *a: ran.append(0), pre=True)
    part = run(m, batch, keep=("output",), model=other, hooks=[spy], start_at=(2, start)).output.last_hidden_state
    assert ran == [] and torch.allclose(part, whole, atol=1e-6)
    assert not torch.allclose(whole, run(m, batch, keep=("output",)).output.last_hidden_state, atol=1e-3)
    assert len(other.encoder.layer) == len(m.model.encoder.layer) == 3


def test_start_at_puts_the_layers_back_after_an_error(tiny_en):
    m = tiny_en
    batch = encode(m, ["how do you play chess"])
    start = run(m, batch, keep=("hidden",), layers=[0]).hidden[1]

    def explode(module, args, output):
        raise RuntimeError("boom")

    hooks_before = sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.model.modules())
    with pytest.raises(RuntimeError, match="boom"):
        run(m, batch, keep=("output",), start_at=(1, start), hooks=[Hook(attention_module_paths(m)[1], explode)])
    assert len(m.model.encoder.layer) == m.n_layers
    assert sum(len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.model.modules()) == hooks_before


def test_run_refuses_what_it_cannot_keep(tiny_en):
    batch = encode(tiny_en, ["chess"])
    with pytest.raises(ValueError, match="keep"):
        run(tiny_en, batch, keep=("values!",))
    with pytest.raises(ValueError, match="full pass"):
        run(tiny_en, batch, keep=("output",), stop_after_layer=0)


def test_loaded_model_encode_is_the_same_call(tiny_en):
    texts = ["how do you play chess", "why"]
    alias, direct = tiny_en.encode(texts), encode(tiny_en, texts).inputs
    assert alias.keys() == direct.keys()
    assert all(torch.equal(alias[k], direct[k]) for k in alias)


# --------------------------------------------------------------------------- the next step of the layering


def raw_model_calls() -> list[str]:
    """Places outside core that call the model or install hooks themselves (``m.model(`` or
    ``register_forward_*hook``), read statically."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent)
        if rel.parts[1] == "core":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("register_forward_hook", "register_forward_pre_hook"):
                found.append(f"{rel}:{node.lineno} {f.attr}")
            elif isinstance(f, ast.Attribute) and f.attr == "model":
                found.append(f"{rel}:{node.lineno} {ast.unparse(f.value)}.model(...)")
    return found


def test_the_raw_call_finder_sees_a_raw_call(tmp_path, monkeypatch):
    fake = tmp_path / "attnlab" / "analysis"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("def f(m, x):\n    h = m.model.encoder.register_forward_hook(print)\n"
                                 "    y = self._m.model(**x)\n"
                                 "    return m.model(**x)\n")
    (fake / "good.py").write_text("def f(m, x):\n    return run(m, x, model=m.model)\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "attnlab")
    assert raw_model_calls() == ["attnlab/analysis/bad.py:2 register_forward_hook",
                                 "attnlab/analysis/bad.py:3 self._m.model(...)",
                                 "attnlab/analysis/bad.py:4 m.model(...)"]


def test_only_core_runs_the_model():
    """Every analysis runs the model through attnlab.core.run: no raw ``m.model(...)`` call and
    no hook installed outside core."""
    offenders = raw_model_calls()
    assert not offenders, "run the model through attnlab.core.run:\n" + "\n".join(offenders)


def test_a_wider_model_takes_fewer_rows_a_pass(tiny_en):
    """Rows a pass scale with 1 / hidden width above the width ROWS_PER_PASS is for, never up."""
    from types import SimpleNamespace

    from attnlab.core import run as core_run

    assert core_run.pass_rows() == core_run.ROWS_PER_PASS
    assert core_run.pass_rows(SimpleNamespace(hidden_size=core_run.ROWS_WIDTH)) == core_run.ROWS_PER_PASS
    assert core_run.pass_rows(SimpleNamespace(hidden_size=768)) == core_run.ROWS_PER_PASS * core_run.ROWS_WIDTH // 768
    assert core_run.pass_rows(tiny_en) == core_run.ROWS_PER_PASS  # narrower than ROWS_WIDTH: the full budget
    wide = SimpleNamespace(hidden_size=4 * core_run.ROWS_WIDTH)
    assert core_run.copies_that_fit(16, m=wide) == core_run.ROWS_PER_PASS // 4 // 16
    assert core_run.copies_that_fit(16, 64, m=wide) == 4  # an explicit budget wins
    assert core_run.copies_that_fit(10_000, m=wide) == 1


def _gate_gradient_and_saved_bytes(m, batch, recompute: bool):
    """dL/dgates of a simple loss by plain autograd, and the bytes the forward pass saved for backward."""
    from attnlab.core.gates import gate_heads
    from attnlab.core.run import recompute_in_backward
    saved = []

    def pack(t):
        saved.append(t.numel() * t.element_size())
        return t

    gates = torch.ones(m.n_layers, m.n_heads, requires_grad=True)
    with gate_heads(m, gates), recompute_in_backward(m) if recompute else contextlib.nullcontext() as used:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            hidden = run(m, batch, keep=("output",), grad=True).output.last_hidden_state  # (B, T, d)
        loss = (hidden ** 2).mean()
        (grad,) = torch.autograd.grad(loss, gates)  # (L, H)
    return grad, sum(saved), used


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_recomputing_layers_in_backward_keeps_the_gradients_and_saves_less(tiny_factory, arch):
    m = tiny_factory(arch, "en", n_layers=3)
    batch = encode(m, ["how do you play chess", "why is the sky blue today", "where is the nearest station"])
    plain, plain_bytes, _unused = _gate_gradient_and_saved_bytes(m, batch, recompute=False)
    again, again_bytes, used = _gate_gradient_and_saved_bytes(m, batch, recompute=True)
    assert plain.abs().max() > 0
    assert torch.allclose(again, plain, rtol=1e-5, atol=1e-9)
    shares_layers = len(set(layer_module_paths(m))) < m.n_layers
    assert used is (not shares_layers)  # ALBERT: left alone, the hooks count a shared module's calls
    if used:  # only each layer's input (and what lies outside the layers) is kept
        assert again_bytes < plain_bytes / 3
    else:
        assert again_bytes == plain_bytes
    assert all("forward" not in vars(layer) for layer in m.model.modules())  # the class's forward again


def test_recomputing_layers_puts_forward_back_after_an_error(tiny_en):
    from attnlab.core.run import recompute_in_backward
    with pytest.raises(RuntimeError, match="boom"):
        with recompute_in_backward(tiny_en) as used:
            assert used and all("forward" in vars(layer) for layer in tiny_en.model.encoder.layer)
            raise RuntimeError("boom")
    assert all("forward" not in vars(layer) for layer in tiny_en.model.modules())
    with recompute_in_backward(tiny_en):  # without gradients the layers run as they are
        out = run(tiny_en, encode(tiny_en, ["chess"]), keep=("output",)).output.last_hidden_state
    assert torch.equal(out, run(tiny_en, encode(tiny_en, ["chess"]), keep=("output",)).output.last_hidden_state)
