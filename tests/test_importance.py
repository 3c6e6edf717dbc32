"""Head importance: gradients against finite differences, ablation against hand-made hooks."""

from __future__ import annotations

import gc
import random

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.analysis import importance
from attnlab.analysis.importance import (
    ablation_effects,
    ablation_per_text,
    frozen_weights,
    gate_gradients,
    head_confidence,
    head_importance,
    importance_agreement,
    make_objective,
    mlm_model,
    perturbed_view,
    split_half_agreement,
    torch_threads,
)
from attnlab.analysis.stats import correlation
from attnlab.core.gates import gate_heads
from attnlab.core.memo import is_memoized, models_held
from attnlab.tools.testing import save_tiny_model

TEXTS = ["how do you play chess", "what is the best game", "where can i learn the rules",
         "how to win a game of chess", "the king moves one square"]


@pytest.fixture(scope="module")
def tiny_mlm64(tmp_path_factory):
    """A tiny BERT with an MLM head, in float64 (private copy: converted in place)."""
    folder = save_tiny_model(tmp_path_factory.mktemp("mlm64"), n_layers=2, n_heads=4, hidden=16, mlm_head=True, seed=3)
    m = al.load_model(str(folder), verbose=False)
    mlm = mlm_model(m)
    assert mlm is not None
    mlm.double()
    return m


@pytest.fixture(scope="module")
def tiny_plain64(tmp_path_factory):
    folder = save_tiny_model(tmp_path_factory.mktemp("plain64"), n_layers=2, n_heads=4, hidden=16, seed=4)
    m = al.load_model(str(folder), verbose=False)
    m.model.double()
    return m


def _finite_difference(m, objective, eps=1e-5) -> np.ndarray:
    grad = np.zeros((m.n_layers, m.n_heads))
    for l in range(m.n_layers):
        for h in range(m.n_heads):
            values = []
            for sign in (1, -1):
                gates = torch.ones(m.n_layers, m.n_heads, dtype=torch.float64)
                gates[l, h] += sign * eps
                with gate_heads(m, gates):
                    values.append(objective.evaluate())
            grad[l, h] = (values[0] - values[1]) / (2 * eps)
    return grad


@pytest.mark.parametrize("which,kind", [("tiny_mlm64", "mlm"), ("tiny_plain64", "contrastive")])
def test_gradient_matches_finite_differences(request, which, kind):
    m = request.getfixturevalue(which)
    objective = make_objective(m, TEXTS, batch_size=8)
    assert objective.kind == kind
    ones = torch.ones(m.n_layers, m.n_heads, dtype=torch.float64)
    grad = gate_gradients(m, objective, gates=ones)[0].numpy()  # one batch
    fd = _finite_difference(m, objective)
    assert np.abs(fd).max() > 1e-6  # not trivially zero at the unmodified model
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-10)
    raw = head_importance(m, objective, normalize=False)
    np.testing.assert_allclose(raw, np.abs(fd), rtol=1e-5, atol=1e-10)
    normed = head_importance(m, objective)
    np.testing.assert_allclose(np.linalg.norm(normed, axis=1), 1.0, rtol=1e-9)


def _hand_gated_loss(m, gates, loss_of):
    """``loss_of()`` with every head's slice of the output projection's input scaled by
    ``gates[layer, head]``, through hooks written here (independent of attnlab.core.gates)."""
    d = m.head_dim

    def scale(layer):
        def hook(_module, args):
            return (args[0] * gates[layer].repeat_interleave(d).to(args[0].dtype),)  # (B, T, H * d)

        return hook

    handles = [part.output.register_forward_pre_hook(scale(l)) for l, part in enumerate(m.layer_parts())]
    try:
        return loss_of()
    finally:
        for handle in handles:
            handle.remove()


def _hand_importance(m, losses) -> np.ndarray:
    """``sum_b |dL_b/dxi| * n_b / N`` over ``(loss_of, n_b)`` pairs, by autograd on hand-made gates."""
    total, n = np.zeros((m.n_layers, m.n_heads)), 0
    for loss_of, size in losses:
        gates = torch.ones(m.n_layers, m.n_heads, dtype=torch.float64, requires_grad=True)
        (grad,) = torch.autograd.grad(_hand_gated_loss(m, gates, loss_of), gates)
        total += np.abs(grad.numpy()) * size
        n += size
    return total / n


def test_mlm_importance_equals_a_hand_written_loop_with_the_raw_model(tiny_mlm64):
    m = tiny_mlm64
    objective = make_objective(m, TEXTS, kind="mlm", batch_size=2, seed=1)  # batches of 2, 2 and 1
    mlm = mlm_model(m)

    def mlm_loss(batch):
        def loss_of():
            logits = mlm(**batch["inputs"]).logits  # (B, T, V), the raw masked-LM model
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                     batch["labels"].reshape(-1), ignore_index=-100)

        return loss_of

    expected = _hand_importance(m, [(mlm_loss(b), n) for b, n in zip(objective.batches, objective.sizes)])
    assert expected.max() > 1e-6
    np.testing.assert_allclose(head_importance(m, objective, normalize=False), expected, rtol=1e-7, atol=1e-12)


def test_contrastive_importance_equals_a_hand_written_loop_with_the_raw_model(tiny_plain64):
    m = tiny_plain64
    rng = random.Random(3)
    losses = []
    for chunk in (TEXTS[:2], TEXTS[2:]):  # batch_size 2: the lone fifth text joins the second batch
        views = [perturbed_view(t, rng) for t in chunk]
        enc = m.tokenizer(chunk + views, padding=True, return_tensors="pt")  # tokenised here

        def loss_of(enc=enc, n=len(chunk)):
            hidden = m.model(**enc).last_hidden_state  # (2n, T, D), the raw encoder
            mask = enc["attention_mask"][..., None].double()  # (2n, T, 1)
            pooled = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)  # (2n, D)
            sims = importance.CONTRASTIVE_SCALE * pooled[:n] @ pooled[n:].T  # (n, n)
            return -torch.log_softmax(sims, dim=1).diagonal().mean()

        losses.append((loss_of, len(chunk)))
    expected = _hand_importance(m, losses)
    assert expected.max() > 1e-6
    got = head_importance(m, TEXTS, normalize=False, kind="contrastive", batch_size=2, seed=3)
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-12)


def test_importance_averages_absolute_batch_gradients(tiny_plain64):
    objective = make_objective(tiny_plain64, TEXTS, batch_size=2)  # batches of 2 and 3 (a lone text is merged)
    assert objective.sizes == [2, 3]
    grads = gate_gradients(tiny_plain64, objective, gates=torch.ones(2, 4, dtype=torch.float64)).numpy()
    expected = (np.abs(grads[0]) * 2 + np.abs(grads[1]) * 3) / 5
    np.testing.assert_allclose(head_importance(tiny_plain64, objective, normalize=False), expected, rtol=1e-6)


def test_ablation_equals_independent_zeroing(tiny_plain64):
    m = tiny_plain64
    objective = make_objective(m, TEXTS)
    effects, base = ablation_effects(m, objective)
    assert base == pytest.approx(objective.evaluate())
    layer, head, d = 1, 2, m.head_dim

    def zero_slice(_module, args):
        x = args[0].clone()
        x[..., head * d : (head + 1) * d] = 0
        return (x,)

    handle = m.layer_parts()[layer].output.register_forward_pre_hook(zero_slice)
    try:
        masked = objective.evaluate()
    finally:
        handle.remove()
    assert effects[layer, head] == pytest.approx(masked - base, abs=1e-10)
    assert effects.shape == (2, 4) and np.abs(effects).max() > 0


def test_confidence_brute_force(tiny_en):
    texts = TEXTS[:3]
    att = al.attention(tiny_en, texts)
    rows = [att[i].amax(dim=-1) for i in range(len(texts))]  # each [L, H, n_i]
    expected = torch.cat(rows, dim=-1).double().mean(dim=-1).numpy()
    np.testing.assert_allclose(head_confidence(tiny_en, texts, batch_size=2), expected, rtol=1e-6)


def test_objective_choice_and_errors(tiny_en, bundled):
    assert make_objective(bundled, TEXTS).kind == "contrastive"  # sentence encoder without MLM head
    with pytest.raises(ValueError, match="contrastive"):
        make_objective(tiny_en, TEXTS, kind="mlm")
    with pytest.raises(ValueError, match="at least 2"):
        make_objective(tiny_en, ["one text"])
    with pytest.raises(ValueError, match="kind"):
        make_objective(tiny_en, TEXTS, kind="nonsense")
    with pytest.raises(ValueError):
        make_objective(tiny_en, [])


def test_objective_is_deterministic(tiny_mlm64):
    a = make_objective(tiny_mlm64, TEXTS, seed=1)
    b = make_objective(tiny_mlm64, TEXTS, seed=1)
    assert torch.equal(a.batches[0]["labels"], b.batches[0]["labels"])
    assert (a.batches[0]["labels"] != -100).sum(dim=1).min() >= 1  # every text has a masked token
    assert a.evaluate() == b.evaluate()


def test_perturbed_view_drops_one_word():
    rng = random.Random(0)
    text = "how do you play chess"
    view = perturbed_view(text, rng)
    assert len(view.split()) == 4 and set(view.split()) <= set(text.split())
    assert perturbed_view("hi there", rng) == "hi there"
    assert len(perturbed_view("王者荣耀怎么玩", rng)) == 6


def test_mlm_model_is_found_once_and_leaves_the_model_untouched(tmp_path):
    folder = save_tiny_model(tmp_path / "mlm", n_layers=1, n_heads=2, hidden=8, mlm_head=True, seed=1)
    m = al.load_model(str(folder), verbose=False)
    fields_before = dict(vars(m))
    first = mlm_model(m)
    assert first is not None and mlm_model(m) is first  # cached, not loaded again
    assert vars(m) == fields_before  # the cache is not kept on the model
    assert getattr(first, first.base_model_prefix) is m.model  # the encoder is shared, so gates apply
    assert is_memoized(m, "masked_lm", ())
    gc.collect()  # models other tests left for the collector go first, so the count below is this one's
    held = models_held()
    del m, first
    gc.collect()
    assert models_held() == held - 1  # released with its model


def test_torch_threads_restores_the_setting():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError):
        with torch_threads(0):
            pass


def test_representation_losses_against_an_independent_computation(tiny_plain64):
    m = tiny_plain64
    objective = make_objective(m, TEXTS, kind="token", batch_size=2)
    assert objective.absolute and objective.kind == "token"
    np.testing.assert_allclose(objective.per_text()["sentence"], 0.0, atol=1e-12)  # the full model itself
    masked = [(0, 1), (1, 3)]
    with al.mask_heads(m, masked):
        got = objective.per_text()
        loss = objective.evaluate()
    for i, text in enumerate(TEXTS):  # one text at a time, no padding
        enc = m.tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            full = m.model(**enc).last_hidden_state[0].double()  # (T, D)
            with al.mask_heads(m, masked):
                pruned = m.model(**enc).last_hidden_state[0].double()
        sentence = 1 - torch.nn.functional.cosine_similarity(pruned.mean(0), full.mean(0), dim=0)
        token = (1 - torch.nn.functional.cosine_similarity(pruned, full, dim=-1)).mean()
        assert got["sentence"][i] == pytest.approx(float(sentence), abs=1e-9)
        assert got["token"][i] == pytest.approx(float(token), abs=1e-9)
    assert got["sentence"].max() > 1e-6  # masking really moved the vectors
    assert loss == pytest.approx(got["token"].mean(), abs=1e-12)


def test_representation_gradient_is_zero_at_the_full_model(tiny_plain64):
    objective = make_objective(tiny_plain64, TEXTS, kind="sentence")
    grad = gate_gradients(tiny_plain64, objective, gates=torch.ones(2, 4, dtype=torch.float64))
    assert float(grad.abs().max()) < 1e-6  # at its minimum: the gradient says nothing, ablation must be used


def test_ablation_per_text_matches_masking_each_head(tiny_plain64):
    m = tiny_plain64
    objective = make_objective(m, TEXTS, kind="sentence", batch_size=3)
    effects = ablation_per_text(m, objective)
    assert set(effects) == {"sentence", "token"} and effects["sentence"].shape == (len(TEXTS), 2, 4)
    with al.mask_heads(m, [(1, 2)]):
        direct = objective.per_text()
    np.testing.assert_allclose(effects["sentence"][:, 1, 2], direct["sentence"], atol=1e-12)
    np.testing.assert_allclose(effects["token"][:, 1, 2], direct["token"], atol=1e-12)
    mean_effects, _ = ablation_effects(m, objective)
    np.testing.assert_allclose(effects["sentence"].mean(axis=0), mean_effects, atol=1e-12)


def test_contrastive_per_text_losses_against_an_independent_computation(tiny_plain64):
    m = tiny_plain64
    objective = make_objective(m, TEXTS, kind="contrastive", batch_size=5, seed=2)
    masked = [(0, 3)]
    with al.mask_heads(m, masked):
        got = objective.per_text()["contrastive"]  # (N,)
        loss = objective.evaluate()
    rng = random.Random(2)
    views = [perturbed_view(t, rng) for t in TEXTS]
    with torch.no_grad(), al.mask_heads(m, masked):
        vectors = []
        for text in TEXTS + views:  # one text at a time, no padding
            hidden = m.model(**m.tokenizer([text], return_tensors="pt")).last_hidden_state[0]  # (T, D)
            vectors.append(torch.nn.functional.normalize(hidden.mean(0).double(), dim=0))
    a, b = torch.stack(vectors[:5]), torch.stack(vectors[5:])  # (5, D) each
    logits = importance.CONTRASTIVE_SCALE * a @ b.T  # (5, 5)
    by_hand = -torch.log_softmax(logits, dim=1).diagonal()  # (5,)
    np.testing.assert_allclose(got, by_hand.numpy(), atol=1e-9)
    assert loss == pytest.approx(float(by_hand.mean()), abs=1e-9)
    effects = ablation_per_text(m, objective)
    assert set(effects) == {"contrastive"} and effects["contrastive"].shape == (5, 2, 4)
    with torch.no_grad():
        base = objective.per_text()["contrastive"]
    np.testing.assert_allclose(effects["contrastive"][:, 0, 3], got - base, atol=1e-12)


def test_mlm_per_text_losses_average_to_the_batch_loss(tiny_mlm64):
    m = tiny_mlm64
    objective = make_objective(m, TEXTS, kind="mlm", batch_size=5, seed=1)
    per_text = objective.per_text()["mlm"]  # (N,)
    batch = objective.batches[0]
    labels = batch["labels"]  # (B, T)
    with torch.no_grad():
        logits = mlm_model(m)(**batch["inputs"]).logits.double()  # (B, T, V)
    for i in range(len(TEXTS)):  # each text's masked tokens, by hand
        where = labels[i] != -100
        by_hand = -torch.log_softmax(logits[i][where], dim=-1).gather(1, labels[i][where][:, None]).mean()
        assert per_text[i] == pytest.approx(float(by_hand), abs=1e-9)
    counts = (labels != -100).sum(1).double().numpy()  # (B,)
    assert objective.evaluate() == pytest.approx(float((per_text * counts).sum() / counts.sum()), abs=1e-9)


def test_importance_agreement_and_split_half():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0, 1, (3, 4))  # (L, H) the real importance
    stable = truth + rng.normal(0, 0.02, (40, 3, 4))  # 40 texts, little noise
    noisy = truth + rng.normal(0, 3.0, (40, 3, 4))  # 40 texts, noise far above the signal
    high = split_half_agreement(stable)
    low = split_half_agreement(noisy)
    assert high.low > 0.9 and low.high < high.low
    assert low.low < 0.5
    same = importance_agreement(stable, stable + 1e-3 * rng.normal(size=stable.shape), paired=True)
    assert same.estimate > 0.98
    other = importance_agreement(stable, -stable, paired=True)  # reversed ranking
    assert other.estimate == pytest.approx(-1.0) and other.high < 0
    expected = correlation(stable[:20].mean(0), stable[20:].mean(0), "spearman")
    assert importance_agreement(stable[:20], stable[20:], paired=False).estimate == pytest.approx(expected)
    with pytest.raises(ValueError, match="same texts"):
        importance_agreement(stable[:5], stable[:6], paired=True)
    with pytest.raises(ValueError, match="at least 4"):
        split_half_agreement(stable[:3])


@pytest.mark.parametrize("kind", ["sentence", "contrastive", "mlm"])
def test_ablation_begins_at_the_masked_layer_and_equals_whole_passes(tmp_path, kind):
    # a head of layer l changes nothing below l: each pass starts at l; the numbers are those of whole passes
    folder = save_tiny_model(tmp_path / "m", n_layers=3, n_heads=2, hidden=8, mlm_head=True, seed=6)
    m = al.load_model(str(folder), verbose=False)
    objective = make_objective(m, TEXTS, kind=kind, batch_size=3, seed=1)
    whole = {}
    for layer in range(3):
        for head in range(2):
            with al.mask_heads(m, [(layer, head)]):
                whole[layer, head] = objective.per_text()[kind]
    base = objective.per_text()[kind]
    calls = []
    handle = m.model.encoder.layer[0].register_forward_pre_hook(lambda *a: calls.append(1))
    try:
        effects = ablation_per_text(m, objective)[kind]  # (N, L, H)
    finally:
        handle.remove()
    for (layer, head), values in whole.items():
        np.testing.assert_allclose(effects[:, layer, head], values - base, atol=1e-6)
    batches = len(objective.batches)
    # layer 0 runs for the base pass, one pass that finds every layer's input, and one pass that
    # masks both heads of layer 0 (a copy of the batch each): 3 per batch, never for the heads of
    # layers 1 and 2 (every kind's loss follows from the final states here, the MLM one too)
    assert objective.from_final_states
    assert len(calls) == 3 * batches
    assert len(m.model.encoder.layer) == 3


def test_mlm_ablation_without_a_known_head_runs_one_pass_per_head_with_the_same_numbers(tmp_path, monkeypatch):
    # an MLM model whose head the course cannot split off: every position goes through the whole
    # model, one pass per head; the numbers equal the batched sweep over the final states
    folder = save_tiny_model(tmp_path / "m", n_layers=2, n_heads=3, hidden=12, mlm_head=True, seed=4)
    m = al.load_model(str(folder), verbose=False)
    objective = make_objective(m, TEXTS, kind="mlm", batch_size=4, seed=3)
    assert objective.from_final_states
    batched = ablation_per_text(m, objective)["mlm"]  # (N, L, H)
    monkeypatch.setattr(importance, "masked_lm_head", lambda mlm: None)
    assert not objective.from_final_states
    one_by_one = ablation_per_text(m, objective)["mlm"]
    np.testing.assert_allclose(one_by_one, batched, atol=1e-6)
    assert np.abs(batched).max() > 1e-4  # masking a head changes the masked-LM loss at all


def test_frozen_weights_take_no_gradients_and_come_back(tiny_en):
    before = [p.requires_grad for p in tiny_en.model.parameters()]
    assert all(before)
    objective = make_objective(tiny_en, ["how do you play chess", "where can i buy ice cream"], kind="contrastive",
                               batch_size=2)
    gates = torch.ones(tiny_en.n_layers, tiny_en.n_heads, requires_grad=True)
    with gate_heads(tiny_en, gates):
        (plain,) = torch.autograd.grad(objective.batch_loss(objective.batches[0]), gates)
    with pytest.raises(RuntimeError, match="inside"):
        with frozen_weights(tiny_en.model):
            assert not any(p.requires_grad for p in tiny_en.model.parameters())
            with gate_heads(tiny_en, gates):
                loss = objective.batch_loss(objective.batches[0])
                (frozen,) = torch.autograd.grad(loss, gates)
                assert loss.grad_fn is not None
            raise RuntimeError("an error inside the block")
    assert [p.requires_grad for p in tiny_en.model.parameters()] == before  # restored after the error
    torch.testing.assert_close(frozen, plain, rtol=0, atol=1e-7)


def test_confidence_on_content_keys_brute_force(tiny_en):
    from attnlab.core.distributions import CONTENT_KEYS, special_token_ids

    texts = TEXTS[:3]
    att = al.attention(tiny_en, texts)
    special = special_token_ids(tiny_en.tokenizer)
    peaks = []
    for i, text in enumerate(texts):
        ids = tiny_en.tokenizer(text)["input_ids"]
        keep = [k for k, t in enumerate(ids) if t not in special]
        rows = att[i][..., keep].double()  # (L, H, n, n_content)
        peaks.append(rows.amax(dim=-1) / rows.sum(dim=-1))  # (L, H, n)
    expected = torch.cat(peaks, dim=-1).mean(dim=-1).numpy()
    got = head_confidence(tiny_en, texts, batch_size=2, keys=CONTENT_KEYS)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("arch", ["bert", "roberta", "distilbert", "albert", "electra"])
def test_mlm_losses_from_the_masked_positions_equal_the_whole_vocabulary_projection(arch, tmp_path):
    """Projecting only the masked positions gives each text's loss of the full (B, T, V) logits."""
    from attnlab.core.models import masked_lm_head

    folder = save_tiny_model(tmp_path / arch, arch=arch, n_layers=2, n_heads=4, hidden=16, mlm_head=True, seed=2)
    m = al.load_model(str(folder), verbose=False)
    objective = make_objective(m, TEXTS, kind="mlm", batch_size=2, seed=1)
    mlm = mlm_model(m)
    assert masked_lm_head(mlm) is not None and mlm is not m.model
    expected, batch_losses = [], []
    with torch.no_grad():
        for batch in objective.batches:
            logits = mlm(**batch["inputs"]).logits  # (B, T, V): every position, the raw masked-LM model
            labels = batch["labels"]  # (B, T)
            ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100,
                                                   reduction="none")  # (B, T)
            expected.append((ce.sum(1) / (labels != -100).sum(1).clamp_min(1)).double().numpy())
            batch_losses.append((float(torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)),
                float(objective.batch_loss(batch))))
    np.testing.assert_allclose(objective.per_text()["mlm"], np.concatenate(expected), atol=1e-5)
    for want, got in batch_losses:
        assert got == pytest.approx(want, abs=1e-5)


def test_full_states_are_the_kept_references_and_need_no_pass(tiny_en):
    objective = make_objective(tiny_en, TEXTS, kind="sentence", batch_size=3)
    calls = []
    handle = tiny_en.model.register_forward_pre_hook(lambda *a: calls.append(1))
    try:
        kept = objective.full_states()
    finally:
        handle.remove()
    assert calls == []  # read from the objective, not computed
    for (hidden, mask), (again, same_mask) in zip(kept, objective.final_states()):
        torch.testing.assert_close(hidden, again, atol=1e-6, rtol=0)
        assert torch.equal(mask, same_mask)


@pytest.mark.parametrize("kind", ["sentence", "mlm"])
def test_ablation_of_some_heads_equals_those_heads_of_the_whole_sweep(tiny_mlm64, kind):
    m = tiny_mlm64
    objective = make_objective(m, TEXTS, kind=kind, batch_size=3, seed=1)
    whole = ablation_per_text(m, objective)
    for layers in ([1], [0], [1, 0]):
        part = ablation_per_text(m, objective, layers=layers)
        for name, values in whole.items():
            assert part[name].shape == (len(TEXTS), len(layers), m.n_heads)
            np.testing.assert_allclose(part[name], values[:, layers], atol=1e-12)
    for layers, heads in (([1], [3, 0]), ([0], [2])):
        part = ablation_per_text(m, objective, layers=layers, heads=heads)
        for name, values in whole.items():
            assert part[name].shape == (len(TEXTS), len(layers), len(heads))
            np.testing.assert_allclose(part[name], values[:, layers][:, :, heads], atol=1e-12)
    for bad in ([], [2], [0, 0], [-1]):
        with pytest.raises(ValueError, match="layers"):
            ablation_per_text(m, objective, layers=bad)
    with pytest.raises(ValueError, match="heads"):
        ablation_per_text(m, objective, heads=[4])


def test_first_batch_keeps_the_first_texts_and_their_effects(tiny_plain64):
    m = tiny_plain64
    objective = make_objective(m, TEXTS, kind="contrastive", batch_size=3, seed=2)
    first = objective.first_batch()
    assert first.n_texts == 3 and first.batches[0] is objective.batches[0] and objective.n_texts == 5
    np.testing.assert_allclose(ablation_per_text(m, first)["contrastive"],
                               ablation_per_text(m, objective)["contrastive"][:3], atol=1e-12)


def test_bf16_ablation_stays_near_fp32_and_measures_both_losses_alike(tmp_path):
    # a float32 model: bf16 moves every effect a little, and the unchanged model's loss is measured in
    # bf16 too, so that an effect is a difference of two losses that carry the same rounding
    folder = save_tiny_model(tmp_path / "m", n_layers=2, n_heads=4, hidden=32, seed=5)
    m = al.load_model(str(folder), verbose=False)
    objective = make_objective(m, TEXTS, kind="contrastive", batch_size=5, seed=2)
    exact = ablation_per_text(m, objective)["contrastive"]  # (N, L, H)
    low = ablation_per_text(m, objective, precision="bf16")["contrastive"]
    assert objective.precision == "fp32" and objective.at_precision("bf16").precision == "bf16"
    assert objective.at_precision("fp32") is objective
    spread = np.abs(exact).max()
    assert spread > 1e-3  # the heads matter at all
    assert 0 < np.abs(low - exact).max() < 0.1 * spread  # rounded, and near
    with al.mask_heads(m, [(1, 3)]):
        masked = objective.at_precision("bf16").per_text()["contrastive"]
    base = objective.at_precision("bf16").per_text()["contrastive"]
    np.testing.assert_allclose(low[:, 1, 3], masked - base, atol=1e-6)
