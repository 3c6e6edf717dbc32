"""Multiplicity and selection: "some head" verdicts corrected for the number of heads,
"top" heads chosen on one half of the queries and scored on the other."""

import numpy as np
import pytest

from attnlab.analysis.compare import PerturbationStudy, displacement_control, query_halves, top_heads_held_out
from attnlab.analysis.stats import bootstrap, bootstrap_mean, simultaneous_from_samples
from attnlab.course.claims import perturbation
from attnlab.course.verdicts import FAILS, HOLDS

N_LAYERS, N_HEADS = 12, 12


def _null_study(seed: int, n: int = 40, lexical_change=None) -> PerturbationStudy:
    """Every head's mean lexical change lies exactly on the change threshold (no head is clearly
    above it), every syntactic change far below it: pattern-free for the lexical-only rule."""
    rng = np.random.default_rng(seed)
    shape = (n, N_LAYERS, N_HEADS)
    centre = np.full((N_LAYERS, N_HEADS), perturbation.CHANGE_THRESHOLD) if lexical_change is None else lexical_change
    lex = centre[None] + rng.normal(0.0, 0.03, shape)  # (N, L, H) change
    lex = lex - lex.mean(axis=0, keepdims=True) + centre[None]  # the sample mean sits exactly on the centre
    syn = np.full(shape, 0.01) + rng.normal(0.0, 0.002, shape)
    sim = {"lexical": 1.0 - lex, "syntactic": 1.0 - syn}
    return PerturbationStudy(sim, sim, [f"q{i}" for i in range(n)], {})


def _null_study_free(seed: int, n: int = 40) -> PerturbationStudy:
    """As :func:`_null_study`, but the sample means vary around the threshold as real data do."""
    rng = np.random.default_rng(seed)
    shape = (n, N_LAYERS, N_HEADS)
    lex = perturbation.CHANGE_THRESHOLD + rng.normal(0.0, 0.03, shape)
    syn = np.full(shape, 0.01) + rng.normal(0.0, 0.002, shape)
    sim = {"lexical": 1.0 - lex, "syntactic": 1.0 - syn}
    return PerturbationStudy(sim, sim, [f"q{i}" for i in range(n)], {})


def test_simultaneous_interval_covers_all_columns_together():
    """On many replicate data sets with known means, the simultaneous intervals cover every
    column at once in about 95% of the replicates; per-column intervals far less often."""
    truth = np.zeros(50)
    joint, separate = 0, 0
    for rep in range(60):
        values = np.random.default_rng(100 + rep).normal(0.0, 1.0, (40, 50))  # (N, K)
        sim = bootstrap_mean(values, n_boot=300, simultaneous=True, seed=rep)
        own = bootstrap_mean(values, n_boot=300, seed=rep)
        joint += bool(np.all((sim.low <= truth) & (truth <= sim.high)))
        separate += bool(np.all((own.low <= truth) & (truth <= own.high)))
    assert joint >= 48  # about 95% of 60 (57), with room for the bootstrap's small-sample optimism
    assert separate <= 20  # 0.95 ** 50 = 8% of the replicates
    assert sim.family == 50 and own.family == 1


def test_simultaneous_from_samples_by_hand():
    """The interval is estimate +- c * sd with c the 95% quantile of the largest studentised deviation."""
    rng = np.random.default_rng(0)
    boots = rng.normal(0.0, [1.0, 2.0, 0.5], (400, 3))  # (B, K)
    est = np.array([0.1, -0.2, 0.3])
    iv = simultaneous_from_samples(est, boots)
    sd = boots.std(axis=0, ddof=1)
    c = np.quantile(np.max(np.abs(boots - est) / sd, axis=1), 0.95)
    np.testing.assert_allclose(iv.low, est - c * sd, atol=1e-12)
    np.testing.assert_allclose(iv.high, est + c * sd, atol=1e-12)
    assert iv.family == 3
    constant = simultaneous_from_samples(np.array([1.0, 2.0]), np.tile([1.0, 2.0], (50, 1)))
    np.testing.assert_allclose(constant.low, [1.0, 2.0]) and np.testing.assert_allclose(constant.high, [1.0, 2.0])
    assert constant.family == 0
    wider = bootstrap(rng.normal(size=(30, 20)), lambda v: v.mean(axis=0), n_boot=200, simultaneous=True)
    narrow = bootstrap(rng.normal(size=(30, 20)), lambda v: v.mean(axis=0), n_boot=200)
    assert np.mean(wider.high - wider.low) > np.mean(narrow.high - narrow.low)


def test_interval_family_survives_the_record():
    iv = bootstrap_mean(np.random.default_rng(1).normal(size=(20, 4)), n_boot=100, simultaneous=True)
    back = type(iv).from_record(iv.to_record())
    assert back.family == 4
    old = iv.to_record()
    del old["family"]  # records saved before the field existed
    assert type(iv).from_record(old).family == 1


def test_some_head_is_corrected_for_the_number_of_heads():
    """144 heads, none clearly lexical-only, 100 replicate data sets: the rule "some head's own 95%
    interval is clear" fires in most replicates; the rule with simultaneous intervals in about 5%."""
    uncorrected_fires, corrected_fires = 0, 0
    for seed in range(100):
        study = _null_study_free(seed)
        clear_own, _ = perturbation.lexical_only_heads(study, simultaneous=False, n_boot=200, seed=seed)
        uncorrected_fires += bool(clear_own.any())
        corrected_fires += perturbation.verdict_lexical_only_heads_exist(study, n_boot=200, seed=seed).verdict == HOLDS
    print(f"null data, 100 replicates of 144 heads: uncorrected rule fires {uncorrected_fires}, "
          f"corrected {corrected_fires}")
    assert uncorrected_fires >= 60
    assert corrected_fires <= 10


def test_corrected_rule_still_finds_one_planted_head():
    """One head of 144 really changes with lexical damage only: the corrected verdict finds it, and only it."""
    centre = np.full((N_LAYERS, N_HEADS), 0.02)
    centre[4, 7] = 0.3
    study = _null_study(0, lexical_change=centre)
    v = perturbation.verdict_lexical_only_heads_exist(study, n_boot=300)
    assert v.verdict == HOLDS
    assert v.numbers["clear_heads"] == 1 and v.numbers["first_clear"] == "L5 H8"
    assert "288" in v.numbers["interval"]  # one family: both kinds of damage, every head (2 x 144)


def test_layer_pattern_intervals_are_simultaneous_over_the_layer():
    iv = perturbation.layer_sensitivity(_null_study(1), "lexical", 3, n_boot=200)
    assert iv.family == N_HEADS and np.shape(iv.estimate) == (N_HEADS,)
    own = bootstrap_mean(1.0 - _null_study(1).values("lexical")[:, 3, :], n_boot=200)
    assert np.all(iv.high - iv.low > own.high - own.low)


def test_displacement_gap_is_simultaneous_and_still_holds_when_planted():
    rng = np.random.default_rng(0)
    n = 40
    disp = {"lexical": rng.uniform(0.5, 3, n), "syntactic": rng.uniform(0.5, 3, n)}
    lex = 0.05 + 0.02 * disp["lexical"][:, None, None] + rng.normal(0, 0.01, (n, 2, 4))
    syn = 0.05 + 0.02 * disp["syntactic"][:, None, None] + rng.normal(0, 0.01, (n, 2, 4))
    lex[:, 1, 2] += 0.2  # one head reads word identity
    sim = {"lexical": 1 - lex, "syntactic": 1 - syn}
    control = displacement_control(PerturbationStudy(sim, sim, ["q"] * n, {}, displacement=disp), n_boot=300)
    assert control.gap_simultaneous.family == 8
    assert np.all(control.gap_simultaneous.high - control.gap_simultaneous.low
                  >= control.gap.high - control.gap.low - 1e-12)
    v = perturbation.verdict_lexical_beyond_displacement(control)
    assert v.verdict == HOLDS and v.numbers["heads_above"] == 1


def test_top_heads_held_out_scores_on_the_other_half():
    rng = np.random.default_rng(0)
    values = rng.normal(0.0, 1.0, (40, 3, 4))  # (N, L, H)
    values[:, 2, 1] += 5.0
    first, second = query_halves(40, seed=3)
    assert len(set(first) & set(second)) == 0 and len(first) + len(second) == 40
    top = top_heads_held_out(values, k=2, seed=3, n_boot=100)
    assert (top[0].layer, top[0].head) == (2, 1)
    assert top[0].value == pytest.approx(values[second, 2, 1].mean(), abs=1e-12)  # scored on the held-out half
    chosen = values[first].mean(axis=0).ravel()
    runner_up = int(np.argsort(-chosen, kind="stable")[1])
    assert (top[1].layer, top[1].head) == divmod(runner_up, 4)  # chosen on the first half
    # on pure noise the same-data top head is biased up; the held-out one is not
    noise = rng.normal(0.0, 1.0, (40, 12, 12))
    same = noise.mean(axis=0).max()
    held = top_heads_held_out(noise, k=1, n_boot=50)[0].value
    assert same > 0.3 and abs(held) < same


def test_lexical_only_verdict_can_still_fail():
    """Every head clearly changes under syntactic damage: no head can be lexical-only."""
    study = _null_study(0, lexical_change=np.full((N_LAYERS, N_HEADS), 0.3))
    sim = dict(study.position)
    sim["syntactic"] = sim["lexical"]
    assert perturbation.verdict_lexical_only_heads_exist(PerturbationStudy(sim, sim, study.texts, {}),
                                                         n_boot=200).verdict == FAILS
