"""Pruning curves: the unpruned point, a synthetic monotone objective, orders and the 1% rule."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.analysis import importance
from attnlab.core import run as core_run
from attnlab.analysis.importance import kind_label, make_objective, pair_label
from attnlab.analysis.pruning import (
    RANDOM_BAND,
    PruningStudy,
    compare_with_sensitivity,
    heads_masked_at,
    loss_limit,
    order_label,
    order_by_score,
    prunable_fraction,
    prunable_heads,
    pruning_curve,
    pruning_curve_per_text,
    pruning_study,
    random_order,
)
from attnlab.core import language
from attnlab.core.language import translated

TEXTS = ["how do you play chess", "what is the best game", "where can i learn the rules",
         "how to win a game of chess"]


class ContextEnergy:
    """Synthetic objective: minus the squared norm of layer 0's gated context vector.

    Masking a head removes its (non-negative) share, so the value can only
    rise as more heads are masked, by exactly the masked heads' shares.
    """

    def __init__(self, m):
        self.m = m
        self.inputs = m.encode(TEXTS)
        self.store = {}
        m.layer_parts()[0].output.register_forward_hook(self._record)

    def _record(self, _module, args, _out):
        self.store["context"] = args[0].detach()  # the gated input

    def evaluate(self) -> float:
        with torch.no_grad():
            self.m.model(**self.inputs)
        return -float(self.store["context"].double().pow(2).sum())


def test_synthetic_curve_is_monotone_and_exact(tiny_factory):
    m = tiny_factory("bert", "en", n_layers=1, seed=5)
    energy = ContextEnergy(m)
    base = energy.evaluate()
    context = energy.store["context"].double()  # (B, T, H * d)
    shares = context.view(*context.shape[:2], m.n_heads, m.head_dim).pow(2).sum(dim=(0, 1, 3)).numpy()
    order = random_order(1, m.n_heads, seed=0)
    fractions = [k / m.n_heads for k in range(m.n_heads + 1)]
    curve = pruning_curve(m, energy, order, fractions)
    assert curve[0] == pytest.approx(base)
    expected = base + np.concatenate([[0], np.cumsum([shares[h] for _, h in order])])
    scale = abs(base)  # the last point is 0 up to rounding: compare with an absolute tolerance too
    np.testing.assert_allclose(curve, expected, rtol=1e-9, atol=1e-12 * scale)
    assert np.all(np.diff(curve) >= -1e-12 * scale)
    assert curve[-1] == pytest.approx(0.0, abs=1e-12 * scale)


def test_study_on_tiny_model(tiny_en):
    objective = make_objective(tiny_en, TEXTS)
    study = pruning_study(tiny_en, objective, n_random=2)
    base = objective.evaluate()
    for name in ("importance", "reverse"):
        assert study.curves[name][0] == pytest.approx(base)
    assert study.curves["random"].shape == (2, 11)
    np.testing.assert_allclose(study.curves["random"][:, 0], base)
    # at 100% every order has masked the same set: all heads
    assert study.curves["reverse"][-1] == pytest.approx(study.curves["importance"][-1])
    assert study.curves["random"][0, -1] == pytest.approx(study.curves["importance"][-1])
    assert study.survivors[0] == tuple(np.unravel_index(np.argmax(study.importance), study.importance.shape))
    assert "pruned" in study.table()


def test_prunable_fraction_reads_from_the_left():
    f = [0.0, 0.1, 0.2, 0.3]
    assert prunable_fraction(f, [1.0, 1.005, 1.02, 1.0]) == 0.1
    assert prunable_fraction(f, [1.0, 0.9, 1.0, 1.01]) == 0.3
    assert prunable_fraction(f, [1.0, 2.0, 3.0, 4.0]) == 0.0
    assert prunable_fraction(f, [1.0, 1.04, 1.0, 1.0], tolerance=0.05) == 0.3
    with pytest.raises(ValueError):
        prunable_fraction([0.1, 0.2], [1.0, 1.0])
    with pytest.raises(ValueError):
        prunable_fraction(f, [1.0])


def test_orders():
    scores = np.array([[0.3, 0.1], [0.2, 0.1]])
    assert order_by_score(scores) == [(0, 1), (1, 1), (1, 0), (0, 0)]
    assert order_by_score(scores, ascending=False)[0] == (0, 0)
    assert random_order(2, 3, seed=1) == random_order(2, 3, seed=1)
    assert sorted(random_order(2, 3, seed=1)) == [(l, h) for l in range(2) for h in range(3)]


def test_bad_order(tiny_en):
    objective = make_objective(tiny_en, TEXTS)
    with pytest.raises(ValueError, match="exactly once"):
        pruning_curve(tiny_en, objective, [(0, 0)] * 24)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pruning_curve(tiny_en, objective, random_order(2, 12, 0), [0.0, 1.5])


def test_sensitivity_overlap():
    sens = np.array([[0.9, 0.1], [0.8, 0.2]])
    cmp = compare_with_sensitivity([(0, 0), (1, 1), (0, 1), (1, 0)], sens, k=2)
    assert cmp.top_sensitive == [(0, 0), (1, 0)] and cmp.top_survivors == [(0, 0), (1, 1)]
    assert cmp.overlap == 1 and cmp.k == 2
    assert cmp.expected_by_chance == pytest.approx(1.0)  # 2 * 2 / 4
    assert compare_with_sensitivity([(0, 0), (1, 0)], sens, k=np.int64(2)).overlap == 2
    for bad in (0, 5):
        with pytest.raises(ValueError):
            compare_with_sensitivity([(0, 0)], sens, k=bad)


def test_study_round_trips_as_a_record(tiny_en):
    objective = make_objective(tiny_en, TEXTS)
    study = pruning_study(tiny_en, objective, n_random=2, fractions=[0.0, 0.5, 1.0])
    back = PruningStudy.from_record(study.to_record())
    np.testing.assert_array_equal(back.curves["random"], study.curves["random"])
    assert back.curves["random"].shape == (2, 3)
    assert back.survivors == study.survivors and back.prunable_heads == study.prunable_heads


def test_argument_checks(tiny_en):
    assert heads_masked_at(0.3, 24) == 7
    with pytest.raises(ValueError):
        heads_masked_at(-0.1, 24)
    with pytest.raises(ValueError, match="tolerance"):
        prunable_fraction([0.0, 0.1], [1.0, 1.0], tolerance=-0.01)
    with pytest.raises(ValueError, match="n_random"):
        pruning_study(tiny_en, make_objective(tiny_en, TEXTS), n_random=0)


def test_prunable_heads_at_one_head_resolution(tiny_factory):
    m = tiny_factory("bert", "en", n_layers=1, seed=5)
    energy = ContextEnergy(m)  # rises by each masked head's share of -|context|^2
    base = energy.evaluate()
    order = random_order(1, m.n_heads, seed=2)
    curve = pruning_curve(m, energy, order, [k / m.n_heads for k in range(m.n_heads + 1)])
    tol = 0.3
    limit = base + tol * abs(base)
    expected = next((k - 1 for k in range(1, m.n_heads + 1) if curve[k] > limit), m.n_heads)
    assert 0 < expected < m.n_heads
    assert prunable_heads(m, energy, order, tolerance=tol) == expected


def test_representation_study_is_per_text_with_absolute_tolerance(tiny_en):
    objective = make_objective(tiny_en, TEXTS, kind="sentence", batch_size=2)
    order = random_order(2, 12, seed=3)
    fractions = [0.0, 0.25, 0.5, 1.0]
    per_text = pruning_curve_per_text(tiny_en, objective, order, fractions)
    assert per_text.shape == (4, len(TEXTS))
    np.testing.assert_allclose(per_text.mean(axis=1), pruning_curve(tiny_en, objective, order, fractions), atol=1e-9)
    np.testing.assert_allclose(per_text[0], 0.0, atol=1e-6)  # nothing masked: the full model
    scores = np.arange(24.0).reshape(2, 12)
    study = pruning_study(tiny_en, objective, importance=scores, fractions=fractions, n_random=4, tolerance=0.05)
    assert not study.relative and set(study.per_text) == {"importance", "reverse", "random"}
    np.testing.assert_allclose(study.curves["importance"], study.per_text["importance"].mean(axis=1))
    assert study.per_text["random"].shape == (4, len(fractions), len(TEXTS))  # (seeds, F, N)
    np.testing.assert_allclose(study.curves["random"], study.per_text["random"].mean(axis=2))
    assert study.random_orders[1] == random_order(2, 12, seed=1)  # seeds 0, 1, 2, 3
    k = heads_masked_at(0.25, 24)
    with al.mask_heads(tiny_en, study.random_orders[2][:k]):  # the third random set, masked by hand
        direct = objective.per_text()["sentence"]
    np.testing.assert_allclose(study.per_text["random"][2, 1], direct, atol=1e-6)
    expected = prunable_fraction(fractions, study.curves["importance"], tolerance=0.05, relative=False)
    assert study.prunable["importance"] == expected
    assert study.all_masked == pytest.approx(study.curves["reverse"][-1])
    low, median, high = study.random_band()
    rand = study.curves["random"]
    np.testing.assert_allclose(median, np.median(rand, axis=0))
    np.testing.assert_allclose(low, np.percentile(rand, RANDOM_BAND[0], axis=0))
    assert np.all(low <= median) and np.all(median <= high)
    assert "10-90th pct" in study.table()
    back = PruningStudy.from_record(study.to_record())
    np.testing.assert_allclose(back.per_text["reverse"], study.per_text["reverse"])
    np.testing.assert_allclose(back.per_text["random"], study.per_text["random"])
    assert back.random_orders == study.random_orders and isinstance(back.random_orders[0][0], tuple)
    assert not back.relative


def test_absolute_and_relative_limits():
    assert loss_limit(0.0, 0.01, relative=False) == pytest.approx(0.01)
    assert loss_limit(0.0, 0.01) == 0.0  # relative to a zero loss: nothing is allowed
    assert loss_limit(2.0, 0.01) == pytest.approx(2.02) and loss_limit(-2.0, 0.01) == pytest.approx(-1.98)
    f = [0.0, 0.1, 0.2]
    assert prunable_fraction(f, [0.0, 0.005, 0.02], tolerance=0.01, relative=False) == 0.1
    assert prunable_fraction(f, [0.0, 0.005, 0.02], tolerance=0.01) == 0.0


def test_dips_count_steps_down():
    study = PruningStudy(np.array([0.0, 0.5, 1.0]), np.zeros((1, 2)),
                         {"importance": np.array([0.0, 0.3, 0.2]), "reverse": np.array([0.0, 0.1, 0.2]),
                          "random": np.array([[0.0, 0.4, 0.2], [0.0, 0.5, 0.2], [0.0, 0.1, 0.2]])},
                         0.0, {}, 0.01, "t")
    assert study.dips("importance") == 1 and study.dips("reverse") == 0
    assert study.dips("random") == 1  # the median random curve: 0, 0.4, 0.2
    assert study.all_masked == pytest.approx(0.2)


def test_table_and_descriptions_are_english_by_default_and_chinese_on_request(tiny_en):
    objective = make_objective(tiny_en, TEXTS, kind="sentence")
    study = pruning_study(tiny_en, objective, n_random=2)
    before = language.current_language()
    try:
        language.set_language("en")
        english_table = study.table()
        assert english_table.splitlines()[0].split()[:2] == ["pruned", "importance"]
        assert objective.description == f"1 - cos between the pruned and the full model's mean-pooled " \
                                         f"sentence vector, on {len(TEXTS)} texts"
        assert translated(objective.description) == objective.description
        language.set_language("zh")
        chinese_table = study.table()
        header = chinese_table.splitlines()[0]
        assert "pruned" not in header and "reverse" not in header and "剪掉" in header
        # the rows (numbers only) are the same in both languages
        assert chinese_table.splitlines()[1:] == english_table.splitlines()[1:]
        shown = translated(objective.description)
        assert "1 - cos" in shown and str(len(TEXTS)) in shown and not re.search(r"[a-z]{4,}", shown)
    finally:
        language.set_language(before)
    assert study.objective == objective.description  # what is saved stays English


@pytest.mark.parametrize("kind", ["token", "contrastive"])
def test_every_objective_description_has_its_chinese_form(tiny_en, kind, chinese):
    objective = make_objective(tiny_en, TEXTS, kind=kind, batch_size=2)
    shown = translated(objective.description)
    assert shown != objective.description and str(len(TEXTS)) in shown


def test_objective_and_order_names_in_chinese(chinese):
    assert kind_label("sentence") == "句子" and kind_label("auto") == "auto"
    assert pair_label("sentence vs contrastive") == "句子 对 对比"
    assert order_label("importance") == "最不重要的先剪" and order_label("reverse") == "最重要的先剪"


def test_curves_that_share_seen_mask_each_set_of_heads_once(tiny_factory):
    m = tiny_factory("bert", "en", n_layers=2, seed=7)
    objective = make_objective(m, TEXTS, kind="sentence", batch_size=2)
    orders = [random_order(m.n_layers, m.n_heads, s) for s in range(3)]
    alone = [pruning_curve_per_text(m, objective, order) for order in orders]  # no sharing
    passes = []
    handle = m.model.register_forward_pre_hook(lambda *a: passes.append(1))
    seen = {}
    try:
        shared = [pruning_curve_per_text(m, objective, order, seen=seen) for order in orders]
    finally:
        handle.remove()
    for a, b in zip(alone, shared):
        np.testing.assert_allclose(a, b, atol=1e-7)
    counts = [heads_masked_at(f, m.n_layers * m.n_heads) for f in np.linspace(0, 1, 11)]
    distinct = {frozenset(order[:k]) for order in orders for k in counts}
    assert len(distinct) < 3 * len(counts)  # nothing masked and everything masked are shared at least
    assert len(passes) == len(distinct) * len(objective.batches)


def test_study_masks_each_set_of_heads_once(tiny_en):
    """Curves and the one-head scan share passes: each distinct set of masked heads goes through the
    model once, in its own copy of the texts, counted row by row by brute force; the curves and the
    count equal one pass per set without any sharing."""
    objective = make_objective(tiny_en, TEXTS, kind="sentence", batch_size=2)
    rows = []

    def count(_module, _args, kwargs):
        rows.append(int(kwargs["input_ids"].shape[0]))

    scores = np.arange(24.0).reshape(2, 12)
    fractions = [0.0, 0.25, 0.5, 0.75, 1.0]
    handle = tiny_en.model.register_forward_pre_hook(count, with_kwargs=True)
    try:
        study = pruning_study(tiny_en, objective, importance=scores, fractions=fractions, n_random=3, tolerance=0.05)
    finally:
        handle.remove()
    orders = [order_by_score(scores), order_by_score(scores, ascending=False)] + study.random_orders
    sets = {frozenset(order[:heads_masked_at(f, 24)]) for order in orders for f in fractions}
    scan = orders[0]
    scanned = {frozenset(scan[:k]) for k in range(1, min(study.prunable_heads + 1, 24) + 1)}
    ahead = importance.copies_per_pass(objective)  # the scan may mask this many counts beyond the crossing
    per_set = len(TEXTS)  # every text once per set of heads
    assert len(sets | scanned) * per_set <= sum(rows) <= (len(sets | scanned) + ahead - 1) * per_set
    assert max(rows) <= max(core_run.ROWS_PER_PASS, 2)
    assert len(rows) < len(sets | scanned) * len(objective.batches)  # several sets a pass
    for name, order in (("importance", orders[0]), ("reverse", orders[1])):
        alone = pruning_curve_per_text(tiny_en, objective, order, fractions)  # one pass per set, nothing shared
        np.testing.assert_allclose(study.per_text[name], alone, atol=1e-6)
    assert study.prunable_heads == prunable_heads(tiny_en, objective, scan, tolerance=0.05)  # no memo: the same count
