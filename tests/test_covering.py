"""Covering (do heads cover for one another?) on toy models whose answer is known, and on a real pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnlab as al
import lesson_records as rec  # tests/lesson_records.py
from attnlab.analysis import covering as cv
from attnlab.analysis import importance
from attnlab.data import corpus
from attnlab.core.gates import head_output_means
from attnlab.course.claims import conclusions as claims
from attnlab.course.verdicts import FAILS, HOLDS

LAYERS, HEADS, TEXTS, DIM = 2, 12, 40, 8
TOTAL = LAYERS * HEADS

rng = np.random.default_rng(0)
WEIGHT, BIAS, EPS = 1.0 + 0.1 * rng.normal(size=DIM), 0.1 * rng.normal(size=DIM), 1e-5


def layer_norm(x):
    """A LayerNorm written out here (independent of the package's)."""
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return WEIGHT * (x - mean) / np.sqrt(var + EPS) + BIAS


def _measure(pre, *, sizes=(12,), n_sets: int = 12, total: int = TOTAL, heads: int = HEADS, pair_seed: int = 0):
    """Covering of a toy whose ``pre(gates (K,)) -> (N, D)`` is the input of a final LayerNorm (one
    token per text), by brute force over the gates, with the package's LayerNorm null and the
    pairs of heads of one layer (``heads`` a layer; flat head ``i`` sits in layer ``i // heads``)."""
    gates = [np.where(np.arange(total) == i, 0.0, 1.0) for i in range(total)]
    full, single = layer_norm(pre(np.ones(total))), np.stack([layer_norm(pre(g)) for g in gates])  # (N, D), (K, N, D)
    sets = [s for i, k in enumerate(sizes) for s in cv.random_sets(total, k, n_sets, seed=i)]
    joint = np.stack([layer_norm(pre(np.where(np.isin(np.arange(total), s), 0.0, 1.0))) for s in sets])  # (S, N, D)
    n = len(full)
    null = cv.additive_null(pre(np.ones(total)), [(list(range(total)), np.stack([pre(g) for g in gates]))], sets,
                            (WEIGHT, BIAS, EPS), np.arange(n), n, single, joint)
    cov = cv.covering_from_vectors(full, single, joint, layer_norm(pre(np.zeros(total))), sets, heads, null=null)
    pairs = cv.layer_pairs(total // heads, heads, seed=pair_seed)  # the course's design: 2 matchings a layer
    both = np.stack([layer_norm(pre(np.where(np.isin(np.arange(total), p), 0.0, 1.0))) for p in pairs])  # (P, N, D)
    return cv.add_pairs(cov, full, single, both, pairs)


def _course_sized(pre, local, dim, pair_seed: int = 0):
    """:func:`_measure` at the course's sizes: 144 heads (12 x 12), random sets of 14 and 72 heads
    (10% and 50%), 20 of each, 144 pairs of heads of one layer (2 matchings of each layer's heads),
    through a LayerNorm of ``dim`` drawn from ``local``."""
    global WEIGHT, BIAS
    saved = WEIGHT, BIAS
    WEIGHT, BIAS = 1.0 + 0.1 * local.normal(size=dim), 0.1 * local.normal(size=dim)
    try:
        return _measure(pre, sizes=(14, 72), n_sets=20, total=144, heads=12, pair_seed=pair_seed)
    finally:
        WEIGHT, BIAS = saved


def _backup_pairs(job: float, *, scale: float = 1.0, seed: int = 3):
    """Half of 144 heads in backup pairs (a pair's shared job survives while either head is on),
    each pair's job ``job`` x a lone head's effect (0.1 x normal per text and dimension), a paired
    head's own effect 0.05 of a lone head's; every effect times ``scale``. At the course's sizes
    (:func:`_course_sized`), 30 texts of 16 dimensions."""
    total, texts, dim = 144, 30, 16
    local = np.random.default_rng(seed)
    paired = local.permutation(total)[: total // 2]
    first, second = paired[0::2], paired[1::2]
    own = 0.1 * local.normal(size=(total, texts, dim))
    carried = job * 0.1 * local.normal(size=(len(first), texts, dim))
    own[paired] *= 0.05  # a backed-up head does little alone
    own, carried = scale * own, scale * carried
    base = local.normal(size=(texts, dim))

    def pre(g):
        either = 1 - (1 - g[first]) * (1 - g[second])
        return base + np.einsum("p,pnd->nd", either, carried) + np.einsum("k,knd->nd", g, own)

    return _course_sized(pre, local, dim)


def _additive_heads(scale: float = 1.0, seed: int = 5):
    """144 heads whose effects (``scale`` x 0.1 x normal) add up before the final LayerNorm, at the
    course's sizes (:func:`_course_sized`)."""
    texts, dim = 30, 16
    local = np.random.default_rng(seed)
    effects = scale * 0.1 * local.normal(size=(144, texts, dim))
    base = local.normal(size=(texts, dim))
    return _course_sized(lambda g: base + np.einsum("k,knd->nd", g, effects), local, dim)


def _judge(cov, claim=claims.conclusion_4b):
    pr = rec.pruning(n_layers=cov.n_total // cov.n_heads, n_heads=cov.n_heads, n_texts=cov.n_texts)
    pr.covering = cov
    return claim(pr)


BASE = rng.normal(size=(TEXTS, DIM))
CARRIED = 0.3 * rng.normal(size=(TOTAL // 2, TEXTS, DIM))  # what each pair of heads carries
OWN = 0.015 * rng.normal(size=(TOTAL, TEXTS, DIM))  # a small part each head carries alone


def test_backup_heads_are_redundant():
    """Heads in pairs that back each other up: one alone costs little, both together a lot."""
    def pre(g):
        either = 1 - (1 - g[0::2]) * (1 - g[1::2])  # (K/2,): 1 while one of the pair is on
        return BASE + np.einsum("p,pnd->nd", either, CARRIED) + np.einsum("k,knd->nd", g, OWN)

    cov = _measure(pre)
    assert cv.interaction_excess(cov).low > cv.COVER_FLOOR and cv.excess_over_null(cov).low > 0
    assert cv.covering_reading(cov) == "cover"
    v = _judge(cov)  # the pairs of one layer: partners (heads 2i, 2i + 1) are in the same layer here
    assert v.verdict == HOLDS and v.numbers["reading"] == cv.PAIR_READINGS["cover"]
    assert _judge(cov, claims.conclusion_4a).verdict == FAILS


@pytest.mark.parametrize("aligned", [True, False])
def test_additive_heads_are_not_redundant(aligned):
    """Heads that add up before the LayerNorm: the ratio equals the null's, whichever way the effects point."""
    direction = rng.normal(size=(TEXTS, DIM))
    effects = 0.1 * (np.abs(rng.normal(size=(TOTAL, 1, 1))) * direction[None] if aligned
                     else rng.normal(size=(TOTAL, TEXTS, DIM)))  # (K, N, D)

    def pre(g):
        return BASE + np.einsum("k,knd->nd", g, effects)

    cov = _measure(pre)
    # the null adds the effects in float32 (its accumulator on bert-base's shape): equal to 1e-6
    np.testing.assert_allclose(cov.joint_norm, cov.null_joint_norm, rtol=1e-6, atol=1e-9)
    assert cv.excess_over_null(cov).estimate == pytest.approx(0.0, abs=1e-6)
    assert cv.interaction_excess(cov).high < 1e-5  # the null is the additive heads' own move
    v = _judge(cov)
    assert v.verdict == FAILS and v.numbers["reading"] == cv.PAIR_READINGS["add"]
    assert cv.pair_deviation(cov).high < cv.PAIR_MARGIN  # pairs through the final LayerNorm: a small bend


def test_layernorm_null_sets_the_line():
    """Additive heads followed by a LayerNorm: the covering ratio is clearly off 1, so a line at 1
    would read covering (or saturation); the null, checked against a LayerNorm applied here set by
    set, sits on the real ratio and the heads read "add up"."""
    effects = 0.25 * rng.normal(size=(TOTAL, TEXTS, DIM))  # large moves: the LayerNorm bends their sum

    def pre(g):
        return BASE + np.einsum("k,knd->nd", g, effects)

    cov = _measure(pre)
    ratio = cv.covering_ratio(cov)
    assert not ratio.contains(1.0) and abs(ratio.estimate - 1.0) > cv.COVER_FLOOR
    full = layer_norm(pre(np.ones(TOTAL)))
    for s, heads in enumerate(cov.sets[:3]):  # the null by hand: sum the effects, then the LayerNorm
        added = pre(np.ones(TOTAL)) - effects[heads].sum(axis=0)
        np.testing.assert_allclose(cov.null_joint_norm[s], np.linalg.norm(layer_norm(added) - full, axis=-1),
                                   rtol=1e-6)  # the null's sums are kept in float32
    assert cv.interaction_excess(cov).high < cv.ADD_MARGIN
    assert cv.covering_reading(cov) == "add" and _judge(cov).verdict == FAILS
    # against the plain sum instead of the null, ||delta_S - sum|| / ||sum||, the LayerNorm's bending
    # would read as an interaction well past the floor
    joint, total, dot = (np.asarray(x) for x in (cov.joint_norm, cov.sum_norm, cov.dot))
    assert np.sqrt((joint ** 2 - 2 * dot + total ** 2).sum() / (total ** 2).sum()) > cv.COVER_FLOOR


def test_partial_backup_is_not_additive():
    """14 of 144 heads per set, half the heads in backup pairs: a partner shares the set 9% of the
    time, too rarely to say "add up"; sets of half the heads see the pairs and read covering.

    The verdicts decide on pairs of heads of one layer, and these partners were drawn across all
    144 heads (11 in 12 of them in another layer): the pairs do not see them and read "add up",
    so 4b does not hold. That is what the claim's words say it tests (the heads of one layer)."""
    both = _backup_pairs(1.0)
    assert cv.meet_chance(14, 144) == pytest.approx(13 / 143)
    assert cv.covering_reading(both, 14) != "add"
    assert cv.covering_reading(both) == "cover"
    v = _judge(both)
    assert v.verdict == FAILS and v.numbers["reading"] == cv.PAIR_READINGS["add"]
    assert v.numbers["pairs of heads of one layer"] == 144


@pytest.mark.parametrize("job", [0.03, 0.05])
def test_small_backup_jobs_not_additive(job):
    """Half the heads in backup pairs whose shared job is 0.03-0.05 of a lone head's effect, at
    the course's sizes: the covering ratio's excess over the null stays within +-0.05 (it adds a
    job only in quadrature, and read "add up" before), but the interaction share grows with the
    job: not "add up", so 4a does not hold. A hundredth of a lone head's effect stays below the
    floor of "cover"."""
    cov = _backup_pairs(job)
    assert abs(cv.excess_over_null(cov).estimate) < 0.05  # the old reading's margin: "add up"
    interaction = cv.interaction_excess(cov, 72)
    assert interaction.low > 2 * cv.ADD_MARGIN  # grows with the job: about 0.6 x job at 72 of 144 heads
    assert interaction.estimate == pytest.approx(0.6 * job, rel=0.3)
    assert cv.covering_reading(cov) != "add"


def test_floor_blocks_tiny_effects_4a():
    """Additive heads at the course's sizes: weak, additive, and masking every head moves the
    vectors far beyond "costs nothing", so 4a holds; the same heads at a hundredth of the size
    still add up, but every head masked moves the vectors less than the tolerance: not "holds"."""
    full = _judge(_additive_heads(), claims.conclusion_4a)
    assert full.verdict == HOLDS and full.numbers["reading"] == cv.PAIR_READINGS["add"]
    tiny_cov = _additive_heads(0.01)
    tiny = _judge(tiny_cov, claims.conclusion_4a)
    assert tiny.numbers["reading"] == cv.PAIR_READINGS["add"] and tiny.verdict != HOLDS
    assert cv.all_masked_move(tiny_cov).high < tiny.numbers["all heads masked must move beyond"]
    # the move by hand: 1 - cos between every head masked and the full toy, text by text
    moved = cv.all_masked_move(_additive_heads()).estimate
    assert moved > 100 * cv.all_masked_move(tiny_cov).estimate


def test_floor_blocks_tiny_effects_4b():
    """Backup pairs of one layer whose job is half a lone head's effect cover for one another (4b
    holds); with the job at a hundredth of that the signed pair interaction stays under the floor,
    and with every effect at a hundredth masking every head costs nothing: neither holds."""
    assert _judge(_layer_jobs(0.5)).verdict == HOLDS
    v = _judge(_layer_jobs(0.005))
    assert v.verdict == FAILS and v.numbers["high"] < claims.FLOOR_4B == v.numbers["floor"]
    tiny = _layer_jobs(0.5, scale=0.01)
    v = _judge(tiny)
    assert v.verdict != HOLDS and v.numbers["reading"] == cv.PAIR_READINGS["cover"]
    assert cv.all_masked_move(tiny).high < v.numbers["all heads masked must move beyond"]


def test_saturation_is_not_covering():
    """Additive heads followed by a saturating stage (tanh) before the final LayerNorm, at the
    course's sizes: masking half the heads at once does not add up (the sets' interaction share is
    far past the floor), but the sets do not move further than additive heads would, so 4b does not
    hold. Two heads of one layer are a small step along the tanh: they add up."""
    texts, dim = 30, 16
    local = np.random.default_rng(5)
    effects = 0.1 * local.normal(size=(144, texts, dim))
    base = local.normal(size=(texts, dim))
    cov = _course_sized(lambda g: np.tanh(base + np.einsum("k,knd->nd", g, effects)), local, dim)
    assert cv.interaction_excess(cov, 72).low > cv.COVER_FLOOR
    assert cv.gain_excess(cov, 72).high < 0  # less along the sum than additive heads
    assert cv.covering_reading(cov) in ("interact", "together")
    assert _judge(cov).verdict == FAILS and _judge(cov).numbers["reading"] == cv.PAIR_READINGS["add"]


def test_heads_that_work_only_together_are_not_redundant():
    """Pairs that only work together (synergy): one missing head breaks what the pair does, so two
    masked together cost less than their two moves added; the signed pair interaction is below 0
    (2 layers: 24 pairs, few of them partners) and 4b does not hold."""
    def pre(g):
        both = g[0::2] * g[1::2]  # (K/2,): 1 only while both are on
        return BASE + np.einsum("p,pnd->nd", both, CARRIED) + np.einsum("k,knd->nd", g, OWN)

    cov = _measure(pre)
    assert cv.excess_over_null(cov).high < 0 and cv.interaction_excess(cov).low > cv.COVER_FLOOR
    assert cv.covering_reading(cov) == "together"
    assert cv.pair_interaction(cov).high < 0
    v = _judge(cov)
    assert v.verdict == FAILS
    gain, _residual = cv.decomposition(cov)
    assert gain.high < 1.0  # less along the sum than the heads alone


def test_held_out_top_head_is_chosen_on_the_other_half():
    single = np.ones((8, 4))
    single[:4, 1] = 5.0  # head 1 is strongest, but only on texts 0-3
    single[4:, 2] = 3.0  # head 2 on texts 4-7
    cov = cv.Covering(1, [[0]], np.ones((1, 8)), np.ones((1, 8)), single, np.full(8, 10.0), 4)
    choose, score = cv.halves(8, cov.seed)
    iv, top = cv.held_out_top_head(cov)
    expected = int(np.argmax(single[choose].mean(0)))
    assert top == expected
    assert iv.estimate == pytest.approx(single[score, top].mean() / single[score].sum(axis=1).mean())
    assert not set(choose) & set(score) and len(choose) + len(score) == 8


def test_effect_norms_by_hand():
    full = np.zeros((2, 3))
    single = np.array([[[1.0, 0, 0], [0, 1, 0]], [[1.0, 0, 0], [0, -1, 0]], [[0, 0, 2.0], [0, 0, 0]]])  # (K=3, N=2, D)
    joint = np.array([[[3.0, 0, 0], [0, 0, 0]]])  # set {0, 1}
    joint_norm, sum_norm, dot, single_norm = cv.effect_norms(full, single, joint, [[0, 1]])
    np.testing.assert_allclose(joint_norm, [[3.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(dot, [[6.0, 0.0]], atol=1e-12)  # (3,0,0) . (2,0,0)
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
    cov = cv.covering_study(tiny_en, objective, shares=(0.25, 0.5), n_sets=3,
                            importance=np.arange(24.0).reshape(2, 12))
    assert cov.k == 6 and cov.sizes == [6, 12] and np.shape(cov.joint_norm) == (6, 5)
    assert np.shape(cov.single_norm) == (5, 24) and cov.has_null
    assert cov.top_set == list(range(23, 17, -1))  # the six highest scores
    assert np.isfinite(cv.covering_ratio(cov).estimate) and cv.top_set_ratio(cov) is not None
    assert np.isfinite(cv.excess_over_null(cov, 12).estimate)
    one = cv.covering_study(tiny_en, objective, shares=(1 / 24,), n_sets=2)  # sets of one head: exactly additive
    np.testing.assert_allclose(one.joint_norm, one.sum_norm, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(one.null_joint_norm, one.joint_norm, rtol=1e-3, atol=1e-5)  # one head: null = real
    slot = cv._final_norm_slot(tiny_en)
    with cv.final_norm_removed(tiny_en):
        assert isinstance(getattr(slot[0], slot[1]), torch.nn.Identity)
    assert getattr(slot[0], slot[1]) is slot[2]  # restored
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


def test_the_null_batch_by_batch_equals_the_null_of_all_texts_at_once(tiny_en):
    """measure_null holds one batch's sums at a time; computed with every text in one batch, the
    same sets give the same four arrays, text by text."""
    texts = ["how do you play chess", "why is the sky blue", "red car", "where is the bank", "best pizza in town"]
    sets = cv.random_sets(24, 6, 3, seed=1)
    results = []
    for batch_size in (2, 8):  # three batches, then one
        objective = importance.make_objective(tiny_en, texts, kind="sentence", batch_size=batch_size)
        assert len(objective.batches) == (3 if batch_size == 2 else 1)
        single = importance.single_head_states(tiny_en, objective, importance.sentence_vectors_of)  # (L, H, N, D)
        single = np.asarray(single).reshape((24,) + np.shape(single)[2:])  # (K, N, D)
        joint = np.stack(importance.head_sets_states(tiny_en, objective, [[(i // 12, i % 12) for i in s] for s in sets],
                                                     importance.sentence_vectors_of))  # (S, N, D)
        results.append(cv.measure_null(tiny_en, objective, sets, single, joint))
    for batched, whole in zip(*results):
        assert np.shape(batched) == (3, 5)
        np.testing.assert_allclose(batched, whole, rtol=1e-4, atol=1e-6)


def _layer_jobs(job: float, *, kind: str = "cover", backed: int = 12, texts: int = 128, seed: int = 7,
                pair_seed: int = 0, scale: float = 1.0):
    """144 heads (12 layers x 12) at the course's sizes (144 pairs of heads of one layer, ``texts``
    texts: 128 in full mode). A lone head moves each text by 0.1 x normal per dimension; ``backed``
    heads of each layer do a twentieth of that alone and share jobs of ``job`` x a lone head's effect:

    * ``kind="cover"``: in pairs with a partner of their layer, each pair's job lost only when both
      are masked (backup pairs);
    * ``"saturate"``: one job of the layer lost as soon as any of them is masked (masking a second
      costs nothing more).

    Every effect times ``scale``."""
    total, heads, dim = 144, 12, 16
    local = np.random.default_rng(seed)
    chosen = np.stack([layer * heads + local.permutation(heads)[:backed] for layer in range(12)])  # (12, backed)
    own = 0.1 * local.normal(size=(total, texts, dim))
    own[chosen.ravel()] *= 0.05
    own *= scale
    base = local.normal(size=(texts, dim))
    if kind == "cover":
        first, second = chosen[:, 0::2].ravel(), chosen[:, 1::2].ravel()
        carried = scale * job * 0.1 * local.normal(size=(len(first), texts, dim))

        def kept(g):
            return 1 - (1 - g[first]) * (1 - g[second])
    else:
        carried = scale * job * 0.1 * local.normal(size=(12, texts, dim))

        def kept(g):
            return np.prod(g[chosen], axis=1)

    def pre(g):
        return base + np.einsum("p,pnd->nd", kept(g), carried) + np.einsum("k,knd->nd", g, own)

    return _course_sized(pre, local, dim, pair_seed=pair_seed)


def _mean_r(cov):
    """The signed mean pair interaction by hand from the stored lengths (every pair moves here)."""
    joint, added = np.asarray(cov.pair_joint_norm), np.asarray(cov.pair_sum_norm)
    return float(np.mean((joint.sum(1) - added.sum(1)) / added.sum(1)))


def test_cover_reads_signed_direction():
    """Backup pairs (a job lost only when both heads of a pair are masked) and saturating heads (a
    job lost as soon as any is masked) at the course's sizes: both move the pairs far from adding
    up, so the unsigned mean |r| (and the large sets' unsigned interaction share) is high for both
    and cannot tell them apart; the signed mean reads covering above the floor and saturation
    below minus it. 4b holds on the first and does not hold on the second, with "saturate" as its
    reading; 4a holds on neither."""
    cover, saturate = _layer_jobs(0.5, kind="cover"), _layer_jobs(0.5, kind="saturate")
    for cov in (cover, saturate):
        assert cv.pair_deviation(cov).low > cv.PAIR_MARGIN  # unsigned: far from additive, either way
        assert cv.interaction_excess(cov, 72).low > cv.COVER_FLOOR  # the sets' unsigned share: the same
        assert _judge(cov, claims.conclusion_4a).verdict == FAILS
    up, down = cv.pair_interaction(cover), cv.pair_interaction(saturate)
    assert up.estimate == pytest.approx(_mean_r(cover), abs=1e-12)
    assert down.estimate == pytest.approx(_mean_r(saturate), abs=1e-12)
    assert up.low > cv.PAIR_FLOOR and down.high < -cv.PAIR_FLOOR
    covered, saturated = _judge(cover), _judge(saturate)
    assert covered.verdict == HOLDS and covered.numbers["reading"] == cv.PAIR_READINGS["cover"]
    assert saturated.verdict == FAILS and saturated.numbers["reading"] == cv.PAIR_READINGS["saturate"]
    for v, iv in ((covered, up), (saturated, down)):  # the card's deciding number is the signed mean
        assert (v.numbers["estimate"], v.numbers["low"], v.numbers["high"]) == (iv.estimate, iv.low, iv.high)
        assert v.numbers["floor"] == claims.FLOOR_4B == v.numbers["holds above"] and "signed" in v.numbers["measure"]


@pytest.mark.parametrize("job, least, most", [(0.11, 6, 10), (0.045, 0, 0)])
def test_covering_near_the_floor_at_the_course_sizes(job, least, most):
    """Backup pairs planted so that the signed mean pair interaction is about twice the floor
    (job 0.11 of a lone head's effect: about 0.10) and half of it (0.045: about 0.025), at the
    course's sizes (144 pairs of heads of one layer, 128 texts), ten planted models and pair draws:
    "cover" in at least 6 of 10 at twice the floor (the power of 2 matchings a layer: the signal
    lives in the pairs that happen to be partners), in none at half of it."""
    estimates, covered = [], 0
    for seed in range(10):
        iv = cv.pair_interaction(_layer_jobs(job, seed=seed, pair_seed=seed))
        estimates.append(iv.estimate)
        covered += iv.above(cv.PAIR_FLOOR)
    assert np.mean(estimates) == pytest.approx(cv.PAIR_FLOOR * (2.0 if job > 0.1 else 0.5), rel=0.35)
    assert least <= covered <= most


class _BackedUpOutput(torch.nn.Linear):
    """A BERT layer's attention output projection with planted backup pairs: each pair's heads
    (``pairs``, heads of this layer) share a job, a fixed vector ``jobs[p]`` (D,) added to every
    token while either head is on, lost only when both are masked. A masked head's slice of the
    context arrives as zeros (the gate's pre-hook runs before this forward)."""

    def __init__(self, dense: torch.nn.Linear, pairs: list[tuple[int, int]], jobs: torch.Tensor, d_head: int):
        super().__init__(dense.in_features, dense.out_features)
        self.load_state_dict(dense.state_dict())
        self.pairs, self.jobs, self.d_head = pairs, jobs, d_head

    def on(self, x: torch.Tensor, head: int) -> torch.Tensor:
        """``(B, T, 1)``: 1 where ``head``'s slice of the context is not all zero."""
        part = x[..., head * self.d_head:(head + 1) * self.d_head]
        return (part.abs().sum(-1, keepdim=True) > 0).to(x.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x)
        for (a, b), job in zip(self.pairs, self.jobs):
            out = out + (1 - (1 - self.on(x, a)) * (1 - self.on(x, b))) * job
        return out


def _real_block(tmp_path, *, backup_job: float | None):
    """A BERT-like encoder built from a config (12 layers x 12 heads, hidden 48: GELU, a LayerNorm
    after attention and after the feed-forward block in every layer), its attention output weights
    scaled so that one head moves a sentence vector by a few percent, as a trained model's do.
    With ``backup_job``: every head of every layer in a backup pair with a partner of its layer
    (:class:`_BackedUpOutput`), doing a twentieth of its own move alone, the pair's shared job
    ``backup_job`` x the mean length of one head's output at that layer."""
    from attnlab.tools.testing import save_tiny_model

    m = al.load_model(str(save_tiny_model(tmp_path / "block", n_layers=12, n_heads=12, hidden=48, seed=3)),
                      verbose=False)
    texts = [q.text for q in corpus.queries("en", 32, seed=1)]
    objective = importance.make_objective(m, texts, kind="sentence", batch_size=64)
    d_head = 48 // 12
    local = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parts in m.layer_parts():
            parts.output.weight.mul_(8.0)
    if backup_job is None:
        return m, objective
    sizes = []
    hook = [p.output.register_forward_pre_hook(
        lambda _mod, args: sizes.append(args[0].detach())) for p in m.layer_parts()]
    objective.sentence_vectors()
    for h in hook:
        h.remove()
    for layer, parts in enumerate(m.layer_parts()):
        context = torch.cat([s.reshape(-1, s.shape[-1]) for s in sizes[layer::m.n_layers]])  # (tokens, H d)
        weight = parts.output.weight.detach()  # (D, H d)
        lone = torch.stack([(context[:, h * d_head:(h + 1) * d_head] @ weight[:, h * d_head:(h + 1) * d_head].T)
                            .norm(dim=-1).mean() for h in range(12)]).mean()  # one head's output, mean length
        order = torch.randperm(12, generator=local).tolist()
        pairs = [(order[i], order[i + 1]) for i in range(0, 12, 2)]
        direction = torch.randn(len(pairs), 48, generator=local)
        jobs = backup_job * lone * direction / direction.norm(dim=-1, keepdim=True)
        with torch.no_grad():
            weight_scaled = parts.output.weight.clone()
            weight_scaled.mul_(0.05)  # a backed-up head does a twentieth of its move alone
            parts.output.weight.copy_(weight_scaled)
        layer_module = m.model.encoder.layer[layer].attention.output
        layer_module.dense = _BackedUpOutput(parts.output, pairs, jobs, d_head)
    return m, objective


def test_additive_heads_in_a_real_block(tmp_path):
    """Inside a real BERT-like encoder (GELU, intermediate LayerNorms, softmax) of the course's
    shape (144 heads, 144 pairs of heads of one layer; 32 texts, to keep the test short):

    * its own heads: masking half of them at once bends the move far past any margin of "add up"
      (the large sets' interaction share beyond the final-LayerNorm null), but two heads of one
      layer add up within the pair margin: the pairs read "add" and 4b does not hold;
    * the same encoder with every head in a backup pair of its layer whose shared job is half a
      lone head's output: the pairs read "cover", 4b holds and 4a does not."""
    m, objective = _real_block(tmp_path, backup_job=None)
    plain = cv.covering_study(m, objective, shares=(0.5,), n_sets=4)
    assert len(plain.pairs) == 144 and plain.n_texts == 32
    assert cv.interaction_excess(plain, 72).low > 0.1  # the block's own bends: 20 times the old margin of 0.005
    assert cv.pair_deviation(plain).high < cv.PAIR_MARGIN
    assert cv.pair_reading(cv.pair_interaction(plain), cv.pair_deviation(plain)) == "add"
    assert _judge(plain).verdict == FAILS and _judge(plain).numbers["reading"] == cv.PAIR_READINGS["add"]
    assert _judge(plain, claims.conclusion_4a).verdict != FAILS

    m, objective = _real_block(tmp_path / "backed", backup_job=0.5)
    backed = cv.covering_study(m, objective, shares=(0.5,), n_sets=4)
    assert cv.pair_interaction(backed).low > cv.PAIR_FLOOR
    assert _judge(backed).verdict == HOLDS and _judge(backed).numbers["reading"] == cv.PAIR_READINGS["cover"]
    assert _judge(backed, claims.conclusion_4a).verdict == FAILS

    # the untrained twin's measurement: no LayerNorm null, one random set of each size; conclusion 4's
    # pairs, all-masked move and verdicts are the same passes, so the same numbers
    lean = cv.Covering.from_record(cv.covering_study(m, objective, shares=(0.5,), n_sets=4, describe=False).to_record())
    assert not lean.has_null and lean.has_move and lean.has_pairs and len(lean.sets) == 1
    for claim in (claims.conclusion_4a, claims.conclusion_4b):
        full_word, lean_word = _judge(backed, claim), _judge(lean, claim)
        assert lean_word.verdict == full_word.verdict
        assert lean_word.numbers["estimate"] == pytest.approx(full_word.numbers["estimate"], abs=1e-9)
    assert not any("random sets" in key for key in _judge(lean).numbers)  # nothing described that was not measured
    assert any("random sets" in key for key in _judge(backed).numbers)


def _pairs_record(r: np.ndarray, *, texts: int = 128, noise: float = 0.03, seed: int = 0):
    """A covering record at the course's sizes whose pairs (``len(r)`` of them) interact by ``r``
    each: text by text, ``||delta_a + delta_b||`` about 1 and ``||delta_ab||`` about ``1 + r``,
    each scattered by ``noise`` (relative), the size of the pairs' text-to-text scatter on real encoders."""
    local = np.random.default_rng(seed)
    added = 1.0 + noise * local.normal(size=(len(r), texts))  # (P, N)
    both = added * (1.0 + np.asarray(r)[:, None]) * (1.0 + noise * local.normal(size=(len(r), texts)))
    cov = cv.Covering(1, [[0]], np.ones((1, texts)), np.ones((1, texts)), np.ones((texts, 144)), np.ones(texts), 12)
    cov.pairs = cv.layer_pairs(12, 12)
    cov.pair_joint_norm, cov.pair_sum_norm = both, added
    return cov


def test_covering_and_saturating_pairs_do_not_cancel_in_the_unsigned_mean():
    """Half the pairs cover (r = +0.1, twice the margin) and half saturate (r = -0.1): the signed mean
    is about 0 and reads neither, but the mean |r| lies above the margin: "do not add up", not "add".
    Pairs at half the margin either way (r = +-0.025) read "add up"."""
    mixed = _pairs_record(np.tile([0.1, -0.1], 72))
    signed, either = cv.pair_interaction(mixed), cv.pair_deviation(mixed)
    assert signed.contains(0.0) and abs(signed.estimate) < 0.01
    assert either.low > cv.PAIR_MARGIN and either.estimate == pytest.approx(0.1, abs=0.005)
    assert cv.pair_reading(signed, either) == "interact"
    small = _pairs_record(np.tile([0.025, -0.025], 72))
    assert cv.pair_reading(cv.pair_interaction(small), cv.pair_deviation(small)) == "add"
    # by hand: the mean over pairs of |sum_n (both - added)| / sum_n added
    joint, added = np.asarray(small.pair_joint_norm), np.asarray(small.pair_sum_norm)
    by_hand = np.mean(np.abs(joint.sum(1) - added.sum(1)) / added.sum(1))
    assert cv.pair_deviation(small).estimate == pytest.approx(by_hand, rel=1e-12)
    assert cv.pair_deviation(small).contains(cv.pair_deviation(small).estimate)  # the texts' lift taken out


def test_layer_pairs_match_each_layers_heads():
    pairs = cv.layer_pairs(3, 5, matchings=2, seed=1)
    assert len(pairs) == 3 * 2 * 2  # an odd layer leaves one head out of each matching
    assert all(a // 5 == b // 5 and a != b for a, b in pairs)
    per_layer = [[p for p in pairs if p[0] // 5 == layer] for layer in range(3)]
    for matching in (row[i:i + 2] for row in per_layer for i in (0, 2)):
        heads = [h for p in matching for h in p]
        assert len(set(heads)) == len(heads)  # a matching uses each head once
    assert cv.pair_meet_chance(12) == pytest.approx(1 - (10 / 11) ** 2)
    full = np.zeros((2, 3))
    single = np.array([[[1.0, 0, 0]] * 2, [[0, 1.0, 0]] * 2, [[0, 0, 1.0]] * 2])  # (K=3, N=2, D=3)
    both = np.array([[[3.0, 4.0, 0]] * 2])  # pair (0, 1) together: (3, 4, 0)
    joint, added, gap = cv.pair_norms(full, single, both, [[0, 1]])
    np.testing.assert_allclose(joint, [[5.0, 5.0]], atol=1e-12)
    np.testing.assert_allclose(added, [[np.sqrt(2.0)] * 2], atol=1e-12)
    np.testing.assert_allclose(gap, [[np.hypot(2.0, 3.0)] * 2], atol=1e-12)
