"""Covering (do heads cover for one another?) on toy models whose answer is known, and on a real pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnlab as al
import lesson_records as rec  # tests/lesson_records.py
from attnlab.analysis import covering as cv
from attnlab.analysis import importance
from attnlab.core.gates import head_output_means
from attnlab.course.claims import conclusions as claims
from attnlab.course.verdicts import FAILS, HOLDS

LAYERS, HEADS, TEXTS, DIM = 2, 12, 40, 8
TOTAL = LAYERS * HEADS


def _measure(model, *, n_sets: int = 12, k: int = 12):
    """Covering of ``model(gates (K,)) -> (N, D)`` sentence vectors, by brute force over the gates."""
    ones = np.ones(TOTAL)
    full = model(ones)
    single = np.stack([model(np.where(np.arange(TOTAL) == i, 0.0, 1.0)) for i in range(TOTAL)])  # (K, N, D)
    sets = cv.random_sets(TOTAL, k, n_sets, seed=0)
    joint = np.stack([model(np.where(np.isin(np.arange(TOTAL), s), 0.0, 1.0)) for s in sets])  # (S, N, D)
    return cv.covering_from_vectors(full, single, joint, model(np.zeros(TOTAL)), sets, HEADS)


def _judge(cov):
    pr = rec.pruning(n_layers=LAYERS, n_heads=HEADS, n_texts=TEXTS)
    pr.covering = cov
    return claims.conclusion_4(pr)


rng = np.random.default_rng(0)
BASE = rng.normal(size=(TEXTS, DIM))
CARRIED = rng.normal(size=(TOTAL // 2, TEXTS, DIM))  # what each pair of heads carries
OWN = 0.05 * rng.normal(size=(TOTAL, TEXTS, DIM))  # a small part each head carries alone


def test_backup_heads_are_redundant():
    """Heads in pairs that back each other up: one alone costs little, both together a lot."""
    def model(g):
        either = 1 - (1 - g[0::2]) * (1 - g[1::2])  # (K/2,): 1 while one of the pair is on
        return BASE + np.einsum("p,pnd->nd", either, CARRIED) + np.einsum("k,knd->nd", g, OWN)

    cov = _measure(model)
    ratio = cv.covering_ratio(cov)
    assert ratio.low > cv.COVERS and cv.reading(ratio) == "cover"
    v = _judge(cov)
    assert v.verdict == HOLDS and v.numbers["reading"] == "cover for one another (redundant)"


@pytest.mark.parametrize("aligned", [True, False])
def test_additive_heads_are_not_redundant(aligned):
    """Independent heads add up: the ratio is exactly 1, even when their effects point the same way."""
    direction = rng.normal(size=(TEXTS, DIM))
    effects = (np.abs(rng.normal(size=(TOTAL, 1, 1))) * direction[None] if aligned
               else rng.normal(size=(TOTAL, TEXTS, DIM)))  # (K, N, D)

    def model(g):
        return BASE + np.einsum("k,knd->nd", g, effects)

    cov = _measure(model)
    np.testing.assert_allclose(cov.joint_norm, cov.sum_norm, rtol=1e-9, atol=1e-12)
    assert cv.covering_ratio(cov).estimate == pytest.approx(1.0, abs=1e-9)
    v = _judge(cov)
    assert v.verdict == FAILS and v.numbers["reading"] == "add up independently"
    # the old scale: 1 - cos of the pooled vector, together against the sum alone, is not 1 for aligned effects
    if aligned:
        def one_minus_cos(a, b):
            return 1 - (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)

        full, s = model(np.ones(TOTAL)), cov.sets[0]
        together = one_minus_cos(model(np.where(np.isin(np.arange(TOTAL), s), 0.0, 1.0)), full).mean()
        alone = sum(one_minus_cos(model(np.where(np.arange(TOTAL) == i, 0.0, 1.0)), full).mean() for i in s)
        assert together / alone > 1.5


def test_heads_that_work_only_together_are_not_redundant():
    """Pairs that only work together (synergy): one missing head breaks what the pair does."""
    def model(g):
        both = g[0::2] * g[1::2]  # (K/2,): 1 only while both are on
        return BASE + np.einsum("p,pnd->nd", both, CARRIED) + np.einsum("k,knd->nd", g, OWN)

    cov = _measure(model)
    ratio = cv.covering_ratio(cov)
    assert ratio.high < 1 / cv.COVERS and cv.reading(ratio) == "together"
    v = _judge(cov)
    assert v.verdict == FAILS and "work only together" in v.numbers["reading"]
    assert "work only together" in str(v)


def test_held_out_top_head_is_chosen_on_the_other_half():
    single = np.ones((8, 4))
    single[:4, 1] = 5.0  # head 1 is strongest, but only on texts 0-3
    single[4:, 2] = 3.0  # head 2 on texts 4-7
    cov = cv.Covering(1, [[0]], np.ones((1, 8)), np.ones((1, 8)), single, np.full(8, 10.0), 4)
    choose, score = cv.halves(8, cov.seed)
    iv, top = cv.held_out_top_head(cov)
    expected = int(np.argmax(single[choose].mean(0)))
    assert top == expected
    assert iv.estimate == pytest.approx(single[score, top].mean() / 10.0)
    assert not set(choose) & set(score) and len(choose) + len(score) == 8


def test_effect_norms_by_hand():
    full = np.zeros((2, 3))
    single = np.array([[[1.0, 0, 0], [0, 1, 0]], [[1.0, 0, 0], [0, -1, 0]], [[0, 0, 2.0], [0, 0, 0]]])  # (K=3, N=2, D)
    joint = np.array([[[3.0, 0, 0], [0, 0, 0]]])  # set {0, 1}
    joint_norm, sum_norm, single_norm = cv.effect_norms(full, single, joint, [[0, 1]])
    np.testing.assert_allclose(joint_norm, [[3.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(sum_norm, [[2.0, 0.0]], atol=1e-12)  # (1,0,0)+(1,0,0); (0,1,0)+(0,-1,0)
    np.testing.assert_allclose(single_norm, [[1, 1, 2], [1, 1, 0]], atol=1e-12)


def test_batched_single_head_states_equal_one_head_at_a_time(tiny_en):
    objective = importance.make_objective(tiny_en, ["how do you play chess", "why is the sky blue", "red"],
                                          kind="sentence", batch_size=2)
    batched = importance.single_head_states(tiny_en, objective, importance.sentence_vectors_of)  # (L, H, N, D)
    assert batched.shape == (tiny_en.n_layers, tiny_en.n_heads, 3, tiny_en.model.config.hidden_size)
    for layer, head in [(0, 0), (1, 5), (tiny_en.n_layers - 1, tiny_en.n_heads - 1)]:
        with al.mask_heads(tiny_en, [(layer, head)]):
            one = objective.sentence_vectors()
        np.testing.assert_allclose(batched[layer, head], one, atol=1e-5)
    both = importance.single_head_states(tiny_en, objective, {"v": importance.sentence_vectors_of,
                                                               "n": lambda st: np.array([len(st)])},
                                         heads_per_pass=5)
    np.testing.assert_allclose(both["v"], batched, atol=1e-5)


def test_sets_of_heads_in_copies_equal_one_set_at_a_time(tiny_en):
    """Several sets of heads, each masked in its own copy of the texts, give each set's own numbers
    (mask_heads and a plain pass, set by set), for zero- and mean-ablation and any number of copies a pass."""
    texts = ["how do you play chess", "why is the sky blue", "red"]
    objective = importance.make_objective(tiny_en, texts, kind="sentence", batch_size=2)
    sets = [[], [(0, 0)], [(0, 1), (1, 3), (1, 4)], [(l, h) for l in range(tiny_en.n_layers) for h in range(6)]]
    fill = head_output_means(tiny_en, ["a short text", "another one here"])  # (L, H, d_head)
    for how in (None, fill):
        for per_pass in (None, 1, 3):
            got = importance.head_sets_states(tiny_en, objective, sets, importance.text_losses_of(objective),
                                              sets_per_pass=per_pass, fill=how)
            assert len(got) == len(sets)
            for heads, value in zip(sets, got):
                with al.mask_heads(tiny_en, heads, how):
                    want = objective.per_text()
                for kind in ("sentence", "token"):
                    np.testing.assert_allclose(value[kind], want[kind], atol=1e-6)
    assert np.abs(got[0]["sentence"]).max() < 1e-6  # nothing masked: the full model's own vectors


def test_ablation_keeps_other_measures_of_the_same_passes(tiny_en):
    objective = importance.make_objective(tiny_en, ["how do you play chess", "why is the sky blue", "red"],
                                          kind="sentence", batch_size=2)
    out = importance.ablation_per_text(tiny_en, objective, keep={"vectors": importance.sentence_vectors_of})
    assert out["sentence"].shape == (3, tiny_en.n_layers, tiny_en.n_heads)
    assert out["vectors"].shape == (tiny_en.n_layers, tiny_en.n_heads, 3, tiny_en.model.config.hidden_size)
    plain = importance.ablation_per_text(tiny_en, objective)
    np.testing.assert_allclose(out["sentence"], plain["sentence"], atol=1e-9)
    with al.mask_heads(tiny_en, [(1, 3)]):
        one = objective.sentence_vectors()  # (N, D), head (1, 3) masked in a whole pass
    np.testing.assert_allclose(out["vectors"][1, 3], one, atol=1e-5)
    full = objective.sentence_vectors()
    assert np.abs(out["vectors"][1, 3] - full).max() > 1e-4  # the kept vectors did change with the head


def test_covering_study_on_a_real_model(tiny_en):
    objective = importance.make_objective(tiny_en, ["how do you play chess", "why is the sky blue", "red car",
                                                    "where is the bank", "best pizza in town"], kind="sentence")
    cov = cv.covering_study(tiny_en, objective, share=0.25, n_sets=3, importance=np.arange(24.0).reshape(2, 12))
    assert cov.k == 6 and np.shape(cov.joint_norm) == (3, 5) and np.shape(cov.single_norm) == (5, 24)
    assert cov.top_set == list(range(23, 17, -1))  # the six highest scores
    assert np.isfinite(cv.covering_ratio(cov).estimate) and cv.top_set_ratio(cov) is not None
    one = cv.covering_study(tiny_en, objective, share=1 / 24, n_sets=2)  # sets of one head: exactly additive
    np.testing.assert_allclose(one.joint_norm, one.sum_norm, rtol=1e-4, atol=1e-6)
    back = cv.Covering.from_record(cov.to_record())
    assert cv.covering_ratio(back).estimate == pytest.approx(cv.covering_ratio(cov).estimate)


def test_one_row_of_gates_per_text_equals_one_pass_per_mask(tiny_en):
    from attnlab.core.gates import gate_heads, ones_gates
    from attnlab.core.run import encode

    enc = encode(tiny_en, ["how do you play chess"] * 3).inputs
    gates = ones_gates(tiny_en).repeat(3, 1, 1)  # (3, L, H)
    gates[1, 0, 4] = 0.0
    gates[2, 1, 7] = 0.5
    with gate_heads(tiny_en, gates):
        rows = tiny_en.model(**enc).last_hidden_state  # (3, T, D)
    for i in range(3):
        with gate_heads(tiny_en, gates[i]):
            one = tiny_en.model(**{k: v[:1] for k, v in enc.items()}).last_hidden_state[0]
        np.testing.assert_allclose(rows[i].detach().numpy(), one.detach().numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="texts, layers, heads"):
        with gate_heads(tiny_en, torch.zeros((2, 3, 4, 5))):
            pass
