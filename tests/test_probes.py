"""Task probes: word-start labels, the logistic probe, and a head sweep on a real model."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis import importance, probes
from attnlab.data import corpus

import lesson_records as rec  # tests/lesson_records.py


def test_word_start_labels_walk_the_tokens():
    words, special = ("洗衣机", "哪个", "牌子", "好"), [True, False, False, False, False, False, False, False, True]
    tokens = ["<s>", "▁", "洗衣", "机", "哪个", "牌", "子", "好", "</s>"]
    labels = probes.word_start_labels(tokens, words, "", special)
    assert labels.tolist() == [-1, -1, 1, 0, 1, 1, 0, 1, -1]
    en = probes.word_start_labels(["[CLS]", "how", "do", "you", "eat", "ice", "cream", "[SEP]"],
                                  ("how do you", "eat", "ice cream"), " ", [True] + [False] * 6 + [True])
    assert en.tolist() == [-1, 1, 0, 0, 1, 1, 0, -1]
    unknown = probes.word_start_labels(["[CLS]", "[UNK]", "[SEP]"], ("cat",), " ", [True, False, True])
    assert (unknown == probes.IGNORE).all()


def test_probe_log_loss_by_hand():
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(-2, 1, (40, 3)), rng.normal(2, 1, (40, 3))]
    y = np.r_[np.zeros(40, int), np.ones(40, int)]
    probe = probes.fit_probe(x, y)
    assert probe.accuracy(x, y) > 0.95
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(0), x.std(0) + 1e-8
    ref = LogisticRegression(C=probes.PROBE_C, max_iter=2000).fit((x - mean) / scale, y)
    expected = -np.log(ref.predict_proba((x - mean) / scale)[np.arange(80), y])
    np.testing.assert_allclose(probe.losses(x, y), expected, rtol=1e-6)
    assert probe.losses(x[:1], np.array([7]))[0] == pytest.approx(-np.log(probes.FLOOR))  # a class never seen
    p_right = np.exp(-expected)
    np.testing.assert_allclose(probe.log_odds(x, y), np.log(p_right / (1 - p_right)), rtol=1e-6, atol=1e-9)
    three = probes.fit_probe(np.r_[x, rng.normal(0, 1, (40, 3)) + [0, 6, 0]], np.r_[y, np.full(40, 2)])
    logp = three.log_probs(x[:5])  # (5, 3)
    by_hand = logp[np.arange(5), y[:5]] - np.log(np.exp(logp).sum(1) - np.exp(logp[np.arange(5), y[:5]]))
    np.testing.assert_allclose(three.log_odds(x[:5], y[:5]), by_hand, rtol=1e-6)


def test_task_study_on_a_real_model(tiny_en):
    qs = corpus.queries("en", 40, seed=0)
    train, test = qs[:32], qs[32:]
    held = importance.make_objective(tiny_en, [q.text for q in test], kind="sentence", batch_size=4)
    fitted = probes.fit_probes(tiny_en, train, held, test)
    study = probes.task_study(tiny_en, fitted, held)
    assert set(study.costs) == set(probes.TASKS)
    assert study.costs["family"].shape == (8, tiny_en.n_layers, tiny_en.n_heads)
    assert study.n_tokens > 8 and 0 <= study.accuracy["word start"] <= 1
    # one head by hand: the family probe's log-loss with head (1, 3) masked, minus the full model's
    import attnlab as al

    full = fitted.losses(held.final_states())[:, 0]
    with al.mask_heads(tiny_en, [(1, 3)]):
        masked = fitted.losses(held.final_states())[:, 0]
    np.testing.assert_allclose(study.costs["family"][:, 1, 3], masked - full, atol=1e-5)
    back = probes.TaskStudy.from_record(study.to_record())
    np.testing.assert_allclose(back.costs["word start"], study.costs["word start"], equal_nan=True)
    with pytest.raises(ValueError, match="share a text"):
        probes.fit_probes(tiny_en, qs[:33], held, test)


def test_identity_accuracy_by_hand():
    ids = np.array([5, 5, 5, 7, 7, 9])
    y = np.array([1, 1, 0, 0, 0, 1])  # 5 -> 1, 7 -> 0, 9 -> 1; commonest overall: 0 and 1 tie, 0 first
    assert probes.identity_accuracy(ids, y, np.array([5, 7, 9, 11]), np.array([1, 1, 1, 0])) == pytest.approx(3 / 4)


def test_refit_agreements_by_hand():
    """Reliabilities and the disattenuated agreement against a direct computation on the same halves:
    per split, on its own halves of the queries; the means over the splits; the ratio capped at 1."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    truth = rng.normal(size=(3, 4))
    refits = {t: np.stack([[truth + 0.5 * rng.normal(size=(3, 4)) + 0.3 * rng.normal(size=(20, 3, 4))
                            for _r in range(2)] for _s in range(3)]) for t in probes.TASKS}  # (3, 2, 20, 3, 4)
    out = probes.refit_agreements(refits, probes.TASKS, n_boot=60, seed=5)
    a, b = (refits[t] for t in probes.TASKS)
    mean = lambda x, rows: x[rows].mean(0).ravel()  # noqa: E731
    numbers = []
    for s in range(3):
        order = np.random.default_rng(5 + s).permutation(20)
        first, second = order[:10], order[10:]
        a1, a2, b1, b2 = mean(a[s, 0], first), mean(a[s, 1], second), mean(b[s, 0], first), mean(b[s, 1], second)
        numbers.append([spearmanr(a1, a2)[0], spearmanr(b1, b2)[0],
                        0.5 * (spearmanr(a1, b2)[0] + spearmanr(b1, a2)[0])])
    rel_a, rel_b, across = np.mean(numbers, axis=0)
    assert out["reliability a"].estimate == pytest.approx(rel_a)
    assert out["reliability b"].estimate == pytest.approx(rel_b)
    assert out["across"].estimate == pytest.approx(across)
    assert out["disattenuated"].estimate == pytest.approx(min(1.0, across / np.sqrt(rel_a * rel_b)))
    assert out["disattenuated"].high <= 1.0  # a correlation: noise in the reliabilities cannot push it past 1
    one = probes.refit_agreements({t: c[0] for t, c in refits.items()}, probes.TASKS, n_boot=60, seed=5)
    assert one["reliability a"].estimate == pytest.approx(numbers[0][0])  # a record from before the splits


def test_probe_refit_coverage():
    """At the course's sizes (144 heads, 128 held-out and 256 training queries) and a true agreement
    of 0.51, with probe noise as large as lesson 11's (one split's value scatters by SD ~0.12, about
    twice its query-only interval's half-width), the interval from 20 splits covers the truth in at
    least 27 of 30 fresh samples. (Query resampling alone covered it in 5 of 30 here.)"""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(11)
    family, own = rng.normal(size=(2, 12, 12))
    word = 0.55 * family + np.sqrt(1 - 0.55 ** 2) * own
    truth = spearmanr(family.ravel(), word.ravel())[0]
    assert 0.45 < truth < 0.57
    covered, estimates = 0, []
    for _sample in range(30):
        refits = {t: rec.probe_costs(x, rng, n_texts=128, n_train=256, noise=0.6, probe_noise=1.0)[1]
                  for t, x in zip(probes.TASKS, (family, word))}
        dis = probes.refit_agreements(refits, probes.TASKS, seed=int(rng.integers(1000)))["disattenuated"]
        covered += bool(dis.contains(truth))
        estimates.append(dis.estimate)
    assert covered >= 27
    assert abs(np.mean(estimates) - truth) < 0.06  # the estimate is centred on the truth, not merely widened


def test_refitted_probes_on_a_real_model(tiny_en):
    qs = corpus.queries("en", 40, seed=0)
    train, test = qs[:32], qs[32:]
    held = importance.make_objective(tiny_en, [q.text for q in test], kind="sentence", batch_size=4)
    fitted = probes.fit_probes(tiny_en, train, held, test, n_splits=3)
    assert len(fitted.refits) == 6 and 0 <= fitted.identity_accuracy <= 1
    study = probes.task_study(tiny_en, fitted, held)
    assert study.refit_costs["family"].shape == (3, 2, 8, tiny_en.n_layers, tiny_en.n_heads) and study.n_splits == 3
    import attnlab as al

    full = fitted.refit_losses(held.final_states())[2, 1, :, 1]  # split 2, refit B, word start
    with al.mask_heads(tiny_en, [(0, 2)]):
        masked = fitted.refit_losses(held.final_states())[2, 1, :, 1]
    np.testing.assert_allclose(study.refit_costs["word start"][2, 1, :, 0, 2], masked - full, atol=1e-5, equal_nan=True)
    # each refit is the probe fitted on its half of the training queries alone (warm start changes nothing)
    halves = probes.training_halves(len(train), 3)
    fit_on = importance.make_objective(tiny_en, [q.text for q in train], kind="sentence", batch_size=4)
    x, y, q = probes.features(fit_on.full_states(), probes.task_data(tiny_en, fit_on, train))["family"]
    cold = probes.fit_probe(x[np.isin(q, halves[5])], y[np.isin(q, halves[5])])
    np.testing.assert_allclose(fitted.refits[5]["family"].log_probs(x), cold.log_probs(x), atol=1e-3)
    back = probes.TaskStudy.from_record(study.to_record())
    np.testing.assert_allclose(back.refit_costs["family"], study.refit_costs["family"], equal_nan=True)
