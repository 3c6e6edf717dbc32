"""The claims of lessons 05-07 on constructed evidence: each can hold, can fail, and
can stay undecided; and the lesson results they end up in survive a save and a load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.analysis.compare import PerturbationStudy, displacement_control
from attnlab.analysis.position import PositionStudy, correlation_by_layer_over_queries
from attnlab.analysis.stats import ABOVE, BELOW, MIN_UNITS, STRADDLES, Interval, bootstrap_correlation, resample_counts
from attnlab.analysis.head_stats import head_sums
from attnlab.analysis.pattern_shares import PatternShares, pattern_shares
from attnlab.course import results
from attnlab.course.claims import head_patterns, perturbation, position
from attnlab.course.lesson_results import HeadPatternsResult, PerturbationResult, PositionResult
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE

# --------------------------------------------------------------------------- lesson 05


def _shares(fixed: tuple[float, float, float], hetero: tuple[float, float, float] = (0.1, 0.05, 0.15),
            n: int = 30, words: tuple[int, int, int] = (9, 2, 1)) -> PatternShares:
    """Lesson 05's evidence built by hand: share intervals ``(estimate, low, high)`` over ``n``
    inputs, and ``words`` = how many heads are fixed / not fixed / cannot tell."""
    arr = np.array([[ABOVE] * words[0] + [BELOW] * words[1] + [STRADDLES] * words[2]])
    strength = Interval(np.ones(arr.shape), np.ones(arr.shape), np.ones(arr.shape), 0.95, n)
    return PatternShares(strength, arr, Interval(*fixed, 0.95, n), Interval(*hetero, 0.95, n),
                         Interval(0.05, 0.0, 0.1, 0.95, n))


def test_verdict_most_heads_fixed_can_hold():
    v = head_patterns.verdict_most_heads_fixed(_shares((0.75, 0.65, 0.8)))
    assert v.verdict == HOLDS
    assert v.numbers["fixed_share_low"] == pytest.approx(0.65) and v.numbers["heterogeneous_share"] == 0.1
    assert v.numbers["heads_cannot_tell"] == 1 and v.numbers["heads"] == 12 and v.numbers["inputs"] == 30
    assert head_patterns.fixed_words(_shares((0.75, 0.65, 0.8))).tolist()[0][-2:] == ["not fixed", UNSURE]


def test_verdict_most_heads_fixed_can_fail():
    v = head_patterns.verdict_most_heads_fixed(_shares((0.25, 0.2, 0.3), hetero=(0.6, 0.5, 0.7)))
    assert v.verdict == FAILS and v.numbers["fixed_share"] == pytest.approx(0.25)


def test_verdict_most_heads_fixed_cannot_tell():
    # the estimate is clearly a majority but the interval over inputs reaches below 0.55
    assert head_patterns.verdict_most_heads_fixed(_shares((0.7, 0.5, 0.8))).verdict == UNSURE
    # as many heterogeneous heads as fixed ones could exist
    assert head_patterns.verdict_most_heads_fixed(_shares((0.7, 0.6, 0.8), hetero=(0.5, 0.4, 0.65))).verdict == UNSURE
    # a wider margin makes the same evidence undecided
    assert head_patterns.verdict_most_heads_fixed(_shares((0.75, 0.65, 0.8)), margin=0.3).verdict == UNSURE


def test_verdict_most_heads_fixed_cannot_tell_on_too_few_inputs():
    v = head_patterns.verdict_most_heads_fixed(_shares((0.75, 0.74, 0.76), n=4))
    assert v.verdict == UNSURE and "4 resampled units" in v.numbers["too_few_units"]


def _survey(n_fixed: int, n_texts: int = 20, heads: int = 8, seed: int = 0, planted: str = "self"):
    """Per-input sums of one layer: ``n_fixed`` heads with a planted pattern (0.8 on the diagonal,
    or on the [CLS] column), the rest sharp i.i.d. rows."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_texts):
        n = int(rng.integers(10, 16))
        maps = []
        for h in range(heads):
            rows = rng.dirichlet(np.full(n, 0.2), size=n)  # (n, n): no pattern
            pattern = np.eye(n) if planted == "self" else np.tile(np.eye(n)[0], (n, 1))
            maps.append(0.8 * pattern + 0.2 * rows if h < n_fixed else rows)
        out.append(head_sums(torch.as_tensor(np.stack(maps)[None, None]), [n]))
    return out


def test_most_heads_fixed_on_planted_surveys_holds_and_fails():
    many = pattern_shares(_survey(7), n_boot=200)
    assert head_patterns.verdict_most_heads_fixed(many).verdict == HOLDS
    few = pattern_shares(_survey(1), n_boot=200)  # a pattern-free majority
    v = head_patterns.verdict_most_heads_fixed(few)
    assert v.verdict == FAILS and v.numbers["heads_fixed"] == 1 and v.numbers["heads_not_fixed"] == 7


def test_threshold_sensitivity_rows():
    survey = _survey(7, planted="cls")  # seven [CLS] heads with mass about 0.8
    rows = head_patterns.threshold_sensitivity(survey, positional=(0.5,), special=(0.6, 0.95), n_boot=100)
    assert rows[0][:3] == ["positional", "special", "fixed share"]
    assert rows[1][2] == pytest.approx(7 / 8) and rows[1][-1] == HOLDS
    assert rows[2][2] == pytest.approx(0.0, abs=1e-12) and rows[2][-1] == FAILS  # 0.8 < 0.95


# --------------------------------------------------------------------------- lesson 06


def _study(change_pos: np.ndarray, change_tok: np.ndarray, n: int = 40, seed: int = 0) -> PerturbationStudy:
    """A study of one layer: per head, a typical change (1 - similarity) in each space, with small noise."""
    rng = np.random.default_rng(seed)
    heads = len(change_pos)
    sims = {}
    for space, change in (("position", change_pos), ("token", change_tok)):
        noise = rng.normal(0, 0.01, size=(n, 1, heads))
        sims[space] = {k: np.clip(1 - np.asarray(change)[None, None, :] + noise, 0, 1)
                       for k in ("lexical", "syntactic", "both")}
    return PerturbationStudy(sims["position"], sims["token"], ["q"] * n,
                             {k: ["q"] * n for k in ("lexical", "syntactic", "both")})


def _kinds_study(lexical: np.ndarray, syntactic: np.ndarray, n: int = 40, model_name: str = "",
                 seed: int = 0) -> PerturbationStudy:
    """One layer; per head, a typical position-space change under lexical and under syntactic
    damage (combined damage: the larger of the two), with small noise; token space unchanged."""
    rng = np.random.default_rng(seed)
    change = {"lexical": np.asarray(lexical), "syntactic": np.asarray(syntactic),
              "both": np.maximum(lexical, syntactic)}
    pos = {k: np.clip(1 - c[None, None, :] + rng.normal(0, 0.01, size=(n, 1, len(c))), 0, 1)
           for k, c in change.items()}
    tok = {k: np.ones_like(v) for k, v in pos.items()}
    return PerturbationStudy(pos, tok, ["q"] * n, {k: ["q"] * n for k in pos}, model_name=model_name)


def test_changing_heads():
    study = _study(np.array([0.02, 0.3, 0.5, 0.05]), np.full(4, 0.02))
    np.testing.assert_array_equal(perturbation.changing_heads(study, "lexical", n_boot=200),
                                  [[False, True, True, False]])
    np.testing.assert_array_equal(perturbation.changing_heads(study, "lexical", threshold=0.4, n_boot=200),
                                  [[False, False, True, False]])


def test_verdict_few_heads_change_can_hold():
    # one head of twelve changes and follows the content; the others keep their map
    pos = np.full(12, 0.02)
    pos[3] = 0.4
    tok = np.full(12, 0.02)
    study = _study(pos, tok)
    v = perturbation.verdict_few_heads_change(study, n_boot=200)
    assert v.verdict == HOLDS
    assert v.numbers["share_changing_lexical"] == pytest.approx(1 / 12)
    assert v.numbers["share_content_followers"] == pytest.approx(1 / 12)
    assert v.numbers["queries"] == 40


def test_verdict_few_heads_change_can_fail():
    # every head changes in position space and keeps its map in token space: all follow the content
    study = _study(np.full(8, 0.5), np.full(8, 0.02))
    v = perturbation.verdict_few_heads_change(study, n_boot=200)
    assert v.verdict == FAILS
    assert v.numbers["share_changing_syntactic"] == pytest.approx(1.0)
    assert v.numbers["share_content_followers"] == pytest.approx(1.0)


def test_verdict_few_heads_change_cannot_tell():
    pos = np.full(8, 0.02)
    pos[:3] = 0.4  # 3 of 8 heads = 0.375: more than a few, not a majority
    v = perturbation.verdict_few_heads_change(_study(pos, np.full(8, 0.02)), n_boot=200)
    assert v.verdict == UNSURE
    only_both = PerturbationStudy({"both": np.ones((3, 1, 2))}, {"both": np.ones((3, 1, 2))}, ["q"] * 3, {})
    missing = perturbation.verdict_few_heads_change(only_both, n_boot=50)
    assert missing.verdict == UNSURE and "missing" in missing.numbers


def test_verdict_few_heads_change_cannot_tell_on_too_few_queries():
    # the evidence that holds on 40 queries is "cannot tell" on 4, and says why
    pos = np.full(12, 0.02)
    pos[3] = 0.4
    v = perturbation.verdict_few_heads_change(_study(pos, np.full(12, 0.02), n=4), n_boot=200)
    assert v.verdict == UNSURE and "4 resampled units" in v.numbers["too_few_units"]


def _noisy_study(mean_change: np.ndarray, sd: float, n: int = 40, seed: int = 1) -> PerturbationStudy:
    """One layer; each head's change is its mean plus per-query noise of ``sd`` (token space unchanged)."""
    rng = np.random.default_rng(seed)
    kinds = ("lexical", "syntactic", "both")
    pos = {k: 1 - (np.asarray(mean_change)[None, None, :] + rng.normal(0, sd, size=(n, 1, len(mean_change))))
           for k in kinds}
    return PerturbationStudy(pos, {k: np.ones_like(v) for k, v in pos.items()}, ["q"] * n, {k: ["q"] * n for k in kinds})


def test_change_labels_are_three_way_from_the_intervals():
    # far above, far below, and right on the threshold with noise between queries
    study = _noisy_study(np.array([0.4, 0.0, perturbation.CHANGE_THRESHOLD]), sd=0.05)
    labels = perturbation.change_labels(study, "lexical", n_boot=300)
    np.testing.assert_array_equal(labels, [[perturbation.CHANGES, perturbation.BARELY_CHANGES,
                                            perturbation.CANNOT_TELL]])
    assert perturbation.word_counts(labels) == {"changes": 1, "barely changes": 1, "cannot tell": 1}
    v = perturbation.verdict_few_heads_change(study, n_boot=300)
    assert v.numbers["heads_cannot_tell_lexical"] == 1 and v.numbers["heads_changing_lexical"] == 1


def test_changing_share_separates_a_pattern_free_null_from_planted_changers():
    null = _noisy_study(np.zeros(12), sd=0.03)  # maps that only jitter from query to query
    assert perturbation.changing_share(null, "lexical", n_boot=200).high == pytest.approx(0.0, abs=1e-12)
    assert perturbation.verdict_few_heads_change(null, n_boot=200).verdict == HOLDS
    planted = np.zeros(12)
    planted[:9] = 0.4  # nine of twelve heads change
    iv = perturbation.changing_share(_noisy_study(planted, sd=0.03), "lexical", n_boot=200)
    assert iv.low == pytest.approx(0.75) and iv.high == pytest.approx(0.75)
    assert perturbation.verdict_few_heads_change(_noisy_study(planted, sd=0.03), n_boot=200).verdict == FAILS


def test_a_share_on_the_threshold_has_a_wide_interval_over_queries():
    # every head sits on the threshold: each resample of the queries labels them anew
    study = _noisy_study(np.full(8, perturbation.CHANGE_THRESHOLD), sd=0.05)
    iv = perturbation.changing_share(study, "lexical", n_boot=300)
    assert iv.high - iv.low >= 0.25
    # the per-head labels say the same: most of these heads are "cannot tell"
    labels = perturbation.change_labels(study, "lexical", n_boot=300)
    assert perturbation.word_counts(labels)["cannot tell"] >= 6


def test_verdict_lexical_only_heads_exist_can_hold():
    # head 2 changes with lexical damage only; the others with both or neither
    study = _kinds_study(np.array([0.02, 0.4, 0.4, 0.02]), np.array([0.02, 0.4, 0.02, 0.02]))
    v = perturbation.verdict_lexical_only_heads_exist(study, n_boot=200)
    assert v.verdict == HOLDS
    assert v.numbers["clear_heads"] == 1 and v.numbers["first_clear"] == "L1 H3"
    clear, possible = perturbation.lexical_only_heads(study, n_boot=200)
    np.testing.assert_array_equal(clear, [[False, False, True, False]])
    assert (possible >= clear).all()


def test_lexical_and_syntactic_intervals_are_one_family():
    """One max-statistic over both kinds' columns: the family counts 2 x heads, the intervals are at
    least as wide as either kind's own simultaneous ones, and the critical value is the 95% quantile
    of the largest studentised deviation over all columns at once (recomputed here by hand)."""
    study = _kinds_study(np.array([0.02, 0.4, 0.4, 0.02]), np.array([0.02, 0.4, 0.02, 0.02]))
    lex, syn = perturbation.joint_sensitivity(study, n_boot=400)
    assert lex.family == syn.family == 8
    own = study.sensitivity("lexical", simultaneous=True, n_boot=400)
    assert ((np.asarray(lex.high) - np.asarray(lex.low)) >= (np.asarray(own.high) - np.asarray(own.low)) - 1e-12).all()
    joint = np.stack([1 - study.values("lexical"), 1 - study.values("syntactic")], axis=1).reshape(
        len(study.values("lexical")), -1)  # (N, 8)
    n = len(joint)
    weights = resample_counts(n, 400, 0) / n
    means = weights @ joint
    spread = np.sqrt(np.maximum(weights @ joint ** 2 - means ** 2, 0) * n / (n - 1) / n)
    se = joint.std(0, ddof=1) / np.sqrt(n)
    varies = se > 0
    c = np.quantile((np.abs(means - joint.mean(0)) / spread)[:, varies].max(1), 0.95)
    half = np.where(varies, c * se, 0.0).reshape(2, 1, 4)
    np.testing.assert_allclose(np.asarray(lex.high), joint.mean(0).reshape(2, 1, 4)[0] + half[0], rtol=1e-9)
    np.testing.assert_allclose(np.asarray(syn.low), joint.mean(0).reshape(2, 1, 4)[1] - half[1], rtol=1e-9)
    v = perturbation.verdict_lexical_only_heads_exist(study, n_boot=200)
    assert v.numbers["interval"].startswith("95% simultaneous over 8 intervals")


def test_verdict_lexical_only_heads_exist_can_fail():
    # every head that lexical damage changes is changed by syntactic damage too
    study = _kinds_study(np.array([0.02, 0.4, 0.5, 0.02]), np.array([0.02, 0.4, 0.3, 0.3]))
    v = perturbation.verdict_lexical_only_heads_exist(study, n_boot=200)
    assert v.verdict == FAILS and v.numbers["possible_heads"] == 0


def test_verdict_lexical_only_heads_exist_cannot_tell():
    # head 2's syntactic change sits right on the threshold: it may or may not be lexical-only
    study = _kinds_study(np.array([0.02, 0.4, 0.4]), np.array([0.02, 0.4, perturbation.CHANGE_THRESHOLD]))
    assert perturbation.verdict_lexical_only_heads_exist(study, n_boot=200).verdict == UNSURE
    only_lexical = PerturbationStudy({"lexical": np.ones((3, 1, 2))}, {"lexical": np.ones((3, 1, 2))}, ["q"] * 3, {})
    assert "missing" in perturbation.verdict_lexical_only_heads_exist(only_lexical, n_boot=50).numbers


def _article_study(head7: tuple[float, float], head9: tuple[float, float], model_name: str = "bert-base-chinese"):
    lex, syn = np.full(12, 0.02), np.full(12, 0.02)
    lex[6], syn[6] = head7
    lex[8], syn[8] = head9
    return _kinds_study(lex, syn, model_name=model_name)


def test_verdict_article_heads_can_hold():
    v = perturbation.verdict_article_heads(_article_study((0.4, 0.4), (0.4, 0.02)), 0, n_boot=200)
    assert v.verdict == HOLDS and v.numbers["layer"] == 1
    assert v.numbers["head9_syntactic"] == pytest.approx(0.02, abs=0.01)
    # a hub path of the same model counts as the article's model
    hub = _article_study((0.4, 0.4), (0.4, 0.02), model_name="google-bert/bert-base-chinese")
    assert perturbation.verdict_article_heads(hub, 0, n_boot=200).verdict == HOLDS


def test_verdict_article_heads_can_fail():
    # head 9 changes with syntactic damage as much as with lexical damage
    v = perturbation.verdict_article_heads(_article_study((0.4, 0.4), (0.4, 0.4)), 0, n_boot=200)
    assert v.verdict == FAILS


def test_verdict_article_heads_cannot_tell():
    # on the threshold: undecided; on another model: not applicable, whatever the numbers
    edge = _article_study((0.4, 0.4), (0.4, perturbation.CHANGE_THRESHOLD))
    assert perturbation.verdict_article_heads(edge, 0, n_boot=200).verdict == UNSURE
    other = perturbation.verdict_article_heads(_article_study((0.4, 0.4), (0.4, 0.02), model_name="tiny-zh"), 0)
    assert other.verdict == UNSURE and other.numbers["missing"].startswith("not applicable")


def _two_layer_study(last: tuple[np.ndarray, np.ndarray], first: tuple[np.ndarray, np.ndarray], n: int = 40,
                     model_name: str = "", seed: int = 0) -> PerturbationStudy:
    """Two layers; per layer, each head's typical lexical and syntactic change, small noise."""
    rng = np.random.default_rng(seed)
    change = {"lexical": np.stack([first[0], last[0]]), "syntactic": np.stack([first[1], last[1]])}  # (2, H)
    change["both"] = np.maximum(change["lexical"], change["syntactic"])
    pos = {k: np.clip(1 - c[None] + rng.normal(0, 0.01, size=(n,) + c.shape), 0, 1) for k, c in change.items()}
    return PerturbationStudy(pos, {k: np.ones_like(v) for k, v in pos.items()}, ["q"] * n, {k: ["q"] * n for k in pos},
                             model_name=model_name)


def _pattern_layer(pattern: bool) -> tuple[np.ndarray, np.ndarray]:
    lex, syn = np.full(12, 0.02), np.full(12, 0.02)
    if pattern:
        lex[6], syn[6] = 0.4, 0.4  # changes with both kinds
        lex[8] = 0.4  # lexical only
    return lex, syn


def test_verdict_layer_pattern_can_hold():
    v = perturbation.verdict_layer_pattern(_two_layer_study(_pattern_layer(True), _pattern_layer(False)), 1,
                                           reading="last", n_boot=200)
    assert v.verdict == HOLDS and v.numbers["heads_lexical_only"] == 1 and v.numbers["layer"] == 2
    assert v.claim == perturbation.CLAIM_LAYER_PATTERN_LAST


def test_verdict_layer_pattern_can_fail():
    v = perturbation.verdict_layer_pattern(_two_layer_study(_pattern_layer(True), _pattern_layer(False)), 0,
                                           n_boot=200)
    assert v.verdict == FAILS and v.numbers["heads_possibly_lexical_only"] == 0


def test_verdict_layer_pattern_cannot_tell():
    lex, syn = _pattern_layer(True)
    syn[8] = perturbation.CHANGE_THRESHOLD  # the lexical-only head sits on the line
    study = _two_layer_study((lex, syn), _pattern_layer(False))
    assert perturbation.verdict_layer_pattern(study, 1, n_boot=200).verdict == UNSURE
    few = _two_layer_study(_pattern_layer(True), _pattern_layer(False), n=4)
    v = perturbation.verdict_layer_pattern(few, 1, n_boot=200)
    assert v.verdict == UNSURE and "too_few_units" in v.numbers
    with pytest.raises(ValueError):
        perturbation.verdict_layer_pattern(study, 1, reading="middle")


def test_article_verdicts_decide_both_readings_of_the_layer():
    # the article's pattern sits in the last layer; the data-chosen layer (here the first) lacks it
    study = _two_layer_study(_pattern_layer(True), _pattern_layer(False), model_name="bert-base-chinese")
    assert perturbation.reading_layers(study, 0) == {"last": 1, "chosen": 0}
    out = perturbation.article_verdicts(study, 0, n_boot=200)
    assert out["heads_last"].verdict == HOLDS and out["heads_chosen"].verdict == FAILS
    assert out["pattern_last"].verdict == HOLDS and out["pattern_chosen"].verdict == FAILS
    assert out["heads_last"].claim == perturbation.CLAIM_ARTICLE_HEADS_LAST
    other = perturbation.article_verdicts(_two_layer_study(_pattern_layer(True), _pattern_layer(False)), 0, n_boot=50)
    assert other["heads_last"].verdict == UNSURE and other["pattern_last"].verdict == HOLDS


def _displacement_study(lexical_extra: float, n: int = 60, seed: int = 0) -> PerturbationStudy:
    """Change = 0.05 per token of displacement, plus ``lexical_extra`` for lexical damage (head 0 only)."""
    rng = np.random.default_rng(seed)
    moved = {"lexical": rng.uniform(0.5, 2.5, n), "syntactic": rng.uniform(1.5, 4.0, n)}
    pos = {}
    for k, d in moved.items():
        change = 0.05 * d[:, None, None] + rng.normal(0, 0.005, size=(n, 1, 3))  # (N, 1, 3)
        if k == "lexical":
            change[:, 0, 0] += lexical_extra
        pos[k] = 1 - change
    return PerturbationStudy(pos, {k: v.copy() for k, v in pos.items()}, ["q"] * n, {}, displacement=moved)


def test_verdict_lexical_beyond_displacement_can_hold():
    control = displacement_control(_displacement_study(0.2), n_boot=200)
    # the plain difference is below 0 for the heads without an extra (syntactic moves tokens further) ...
    assert (control.raw_gap.estimate[0, 1:] < 0).all()
    # ... the fit recovers the 0.05 per token and the extra of head 0
    np.testing.assert_allclose(control.slope.estimate, 0.05, atol=0.005)
    assert control.gap.estimate[0, 0] == pytest.approx(0.2, abs=0.01)
    v = perturbation.verdict_lexical_beyond_displacement(control)
    assert v.verdict == HOLDS and v.numbers["heads_above"] == 1


def test_verdict_lexical_beyond_displacement_can_fail():
    v = perturbation.verdict_lexical_beyond_displacement(displacement_control(_displacement_study(0.0), n_boot=200))
    assert v.verdict == FAILS and v.numbers["heads_below"] == 3


def test_verdict_lexical_beyond_displacement_cannot_tell():
    control = displacement_control(_displacement_study(perturbation.GAP_MARGIN), n_boot=200)
    assert perturbation.verdict_lexical_beyond_displacement(control).verdict == UNSURE
    reversed_kinds = displacement_control(_displacement_study(0.2), "syntactic", "lexical", n_boot=50)
    assert "missing" in perturbation.verdict_lexical_beyond_displacement(reversed_kinds).numbers


def test_few_heads_change_sensitivity_table():
    from attnlab.course.claims.sensitivity import sensitivity_rows, verdicts_seen

    pos = np.full(8, 0.02)
    pos[:2] = 0.15  # 2 of 8 heads change by 0.15 (and follow the content): a few at threshold 0.1, none at 0.2
    study = _study(pos, np.full(8, 0.02))
    rows = sensitivity_rows(lambda st, **t: perturbation.verdict_few_heads_change(st, n_boot=100, **t), study,
                            {"threshold": [0.1, 0.2], "few": [0.1, 0.25]}, numbers=["share_changing_lexical"])
    assert rows[0] == ["threshold", "few", "verdict", "share_changing_lexical"]
    assert [r[:3] for r in rows[1:]] == [[0.1, 0.1, UNSURE], [0.1, 0.25, HOLDS], [0.2, 0.1, UNSURE], [0.2, 0.25, HOLDS]]
    assert verdicts_seen(rows) == [UNSURE, HOLDS]
    assert [r[3] for r in rows[1:]] == [0.25, 0.25, 0.0, 0.0]  # share changing at each threshold


# --------------------------------------------------------------------------- lesson 07


def _per_layer(r: list[float], low: list[float], high: list[float], n: int = 30) -> Interval:
    """Per-layer correlations built by hand, as if resampled over ``n`` queries."""
    return Interval(np.array(r), np.array(low), np.array(high), 0.95, n)


def _per_query(level: np.ndarray, slope: float, n: int = 40, noise: float = 0.05, seed: int = 0):
    """Per-query evidence ``[N, L, H]`` for each head's true "unchanged" ``level`` ``[L, H]``: x is the
    level, y its ``slope`` times, each with independent per-query noise."""
    rng = np.random.default_rng(seed)
    x = level[None] + rng.normal(0, noise, size=(n,) + level.shape)
    y = slope * level[None] + rng.normal(0, noise, size=(n,) + level.shape)
    return x, y


def test_verdict_invariant_heads_are_positional_can_hold():
    level = np.random.default_rng(0).uniform(0.5, 1.0, size=(4, 12))
    unchanged, change = _per_query(level, 0.8)  # the steadier, the more positional
    per_layer = correlation_by_layer_over_queries(unchanged, change, n_boot=300)
    v = position.verdict_invariant_heads_are_positional(per_layer, intervention="zero")
    assert v.verdict == HOLDS
    assert v.numbers["layers_supporting"] == 4 and v.numbers["queries"] == 40 == per_layer.n
    assert "too_few_units" not in v.numbers
    assert v.numbers["median_r"] == pytest.approx(np.median(per_layer.estimate))


def test_verdict_invariant_heads_are_positional_can_fail():
    level = np.random.default_rng(1).uniform(0.5, 1.0, size=(4, 12))
    unchanged, change = _per_query(level, -1.0)  # the opposite link in every layer
    v = position.verdict_invariant_heads_are_positional(correlation_by_layer_over_queries(unchanged, change,
                                                                                          n_boot=300))
    assert v.verdict == FAILS and v.numbers["median_r"] < 0 and v.numbers["layers_opposite"] == 4


def test_verdict_invariant_heads_are_positional_on_a_null_does_not_hold():
    # x and y independent per query, and no head differs from another in either: no link to find
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(60, 6, 12)), rng.normal(size=(60, 6, 12))
    v = position.verdict_invariant_heads_are_positional(correlation_by_layer_over_queries(x, y, n_boot=300))
    assert v.verdict in (FAILS, UNSURE) and v.numbers["layers_supporting"] == 0


def test_verdict_invariant_heads_are_positional_cannot_tell():
    # strong in 3 of 4 layers, but one layer clearly the other way
    mixed = _per_layer([0.6, 0.6, 0.6, -0.6], [0.2, 0.2, 0.2, -0.9], [0.9, 0.9, 0.9, -0.2])
    assert position.verdict_invariant_heads_are_positional(mixed).verdict == UNSURE
    # wide intervals everywhere: the queries cannot decide
    wide = _per_layer([0.35] * 4, [-0.2] * 4, [0.8] * 4)
    assert position.verdict_invariant_heads_are_positional(wide).verdict == UNSURE
    # the link is clear, but rests on fewer queries than a decision needs: cannot tell, saying why
    level = np.random.default_rng(5).uniform(0.5, 1.0, size=(4, 12))
    few = correlation_by_layer_over_queries(*_per_query(level, 0.8, n=MIN_UNITS - 1), n_boot=300)
    assert few.n == MIN_UNITS - 1 and np.all(few.low > 0.3)  # it would hold on these numbers alone
    v = position.verdict_invariant_heads_are_positional(few)
    assert v.verdict == UNSURE and "resampled units" in v.numbers["too_few_units"]
    assert position.verdict_invariant_heads_are_positional(_per_layer([0.6] * 4, [0.4] * 4, [0.8] * 4)).holds
    assert position.verdict_invariant_heads_are_positional(
        _per_layer([0.6] * 4, [0.4] * 4, [0.8] * 4, n=MIN_UNITS - 1)).verdict == UNSURE
    # a link pooled across layers is not evidence: between-layer differences only
    rng = np.random.default_rng(2)
    x = np.arange(4.0)[None, :, None] + rng.normal(0, 0.05, (30, 4, 12))  # (N, L, H): layer + query noise
    y = np.arange(4.0)[None, :, None] + rng.normal(0, 0.05, (30, 4, 12))
    assert bootstrap_correlation(x.mean(0), y.mean(0), n_boot=200).estimate > 0.8  # pooled: looks strong
    within = position.verdict_invariant_heads_are_positional(correlation_by_layer_over_queries(x, y, n_boot=200))
    assert within.verdict != HOLDS
    assert "missing" in position.verdict_invariant_heads_are_positional(_per_layer([], [], [])).numbers


def _position_study(zero: np.ndarray, mean: np.ndarray, shuffle: np.ndarray, n: int = 30) -> PositionStudy:
    rng = np.random.default_rng(0)
    sims = {how: np.clip(1 - np.asarray(c)[None, None, :] + rng.normal(0, 0.01, (n, 1, len(c))), 0, 1)
            for how, c in (("zero", zero), ("mean", mean), ("shuffle", shuffle))}
    special = {how: np.zeros((n, 1, len(zero))) for how in ("normal", "zero", "mean", "shuffle")}
    return PositionStudy(sims, special, {k: np.ones((n, 1, len(zero))) for k in sims}, ["q"] * n)


def test_position_dependent_and_disrupted_heads():
    # head 0: every intervention changes it (reads positions); head 1: only zeroing (disrupted);
    # head 2: nothing changes it; head 3: the mean changes it, the shuffle does not
    study = _position_study(np.array([0.4, 0.4, 0.02, 0.3]), np.array([0.4, 0.02, 0.02, 0.3]),
                            np.array([0.4, 0.02, 0.02, 0.02]))
    np.testing.assert_array_equal(position.position_dependent_heads(study, n_boot=200), [[True, False, False, False]])
    np.testing.assert_array_equal(position.disrupted_heads(study, n_boot=200), [[False, True, False, False]])


def _noisy_position_study(zero, mean, shuffle, sd: float, n: int = 40, seed: int = 2) -> PositionStudy:
    """One layer; each head's change under each intervention plus per-query noise of ``sd``."""
    rng = np.random.default_rng(seed)
    sims = {how: 1 - (np.asarray(c, dtype=float)[None, None, :] + rng.normal(0, sd, (n, 1, len(c))))
            for how, c in (("zero", zero), ("mean", mean), ("shuffle", shuffle))}
    special = {how: np.zeros((n, 1, len(zero))) for how in ("normal", "zero", "mean", "shuffle")}
    return PositionStudy(sims, special, {k: np.ones((n, 1, len(zero))) for k in sims}, ["q"] * n)


def test_position_labels_are_three_way_from_the_intervals():
    t = position.CHANGE_THRESHOLD
    # head 0 reads positions; head 1 only the mean changes it; head 2 sits on the line under both controls
    study = _noisy_position_study([0.4, 0.3, t], [0.4, 0.3, t], [0.4, 0.0, t], sd=0.05)
    np.testing.assert_array_equal(position.position_labels(study, n_boot=300),
                                  [[position.DEPENDENT, position.NOT_DEPENDENT, position.CANNOT_TELL]])
    m = position.DISRUPTION_MARGIN
    # zeroing adds 0.3, nothing, or exactly the margin to the mean vector's change
    zeroed = _noisy_position_study([0.5, 0.2, 0.2 + m], [0.2, 0.2, 0.2], [0.2, 0.2, 0.2], sd=0.05)
    np.testing.assert_array_equal(position.disruption_labels(zeroed, n_boot=300),
                                  [[position.DISRUPTED, position.NOT_DISRUPTED, position.CANNOT_TELL]])


def test_position_dependent_share_separates_a_null_from_planted_heads():
    null = _noisy_position_study(np.zeros(12), np.zeros(12), np.zeros(12), sd=0.03)  # positions change nothing
    assert position.position_dependent_share(null, n_boot=200).high == pytest.approx(0.0, abs=1e-12)
    assert position.disrupted_share(null, n_boot=200).high == pytest.approx(0.0, abs=1e-12)
    planted = np.zeros(12)
    planted[:4] = 0.4  # four heads read positions: both controls change them
    half = planted.copy()
    half[2:4] = 0.0  # ... but the shuffle changes only two of them
    iv = position.position_dependent_share(_noisy_position_study(planted, planted, half, sd=0.03), n_boot=200)
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((2 / 12, 2 / 12, 2 / 12))


def test_article_heads_are_the_articles_numbers():
    # the article's 1-based heads 7 and 9 (lesson 06), and 5, 7, 9, 12 (lesson 07)
    assert [h + 1 for h in perturbation.ARTICLE_HEADS] == [7, 9]
    assert [h + 1 for h in position.ARTICLE_HEADS] == [5, 7, 9, 12]


# --------------------------------------------------------------------------- saved results


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path))
    monkeypatch.delenv("ATTNLAB_SMOKE", raising=False)
    return tmp_path


def test_lesson_results_survive_a_save_and_a_load(results_dir, tiny_en):
    shares = _shares((0.75, 0.65, 0.8))
    v05 = head_patterns.verdict_most_heads_fixed(shares)
    r05 = HeadPatternsResult(n_inputs=30, labels=[["self"] * 9 + ["heterogeneous"] * 3], label_counts={"self": 9},
                             fixed_share=0.75, fixed_share_interval=shares.fixed_share,
                             fixed_words=head_patterns.fixed_words(shares).tolist(), verdict=v05, fixed_share_by_layer=np.array([0.75]),
                             depth_spearman=float("nan"), zoo={"self": [0, 0]},
                             threshold_verdicts={"positional=0.5 special=0.6": v05.verdict},
                             stats={"self_mass": np.eye(2)})
    study = _study(np.full(4, 0.02), np.full(4, 0.02))
    r06 = PerturbationResult(n_queries=40, chosen_layer=0,
                             verdict=perturbation.verdict_few_heads_change(study, n_boot=50),
                             follower_labels=study.followers(n_boot=50).tolist(),
                             position_follower_share=0.0, content_follower_share=0.0,
                             unchanged=study.unchanged(),
                             sensitivity={"lexical_position": study.sensitivity("lexical", n_boot=50).estimate},
                             unchanged_per_query=study.unchanged_per_query(),
                             follower_gap_per_query=study.follower_gap_per_query("both"))
    r06.unchanged_per_query[3] = np.nan  # a query skipped by every kind
    heads = np.arange(10.0).reshape(1, 2, 5)  # (1, L, H): the same ranks in both, query after query
    per_layer = correlation_by_layer_over_queries(heads + np.zeros((9, 1, 1)), heads ** 2 + np.zeros((9, 1, 1)),
                                                  n_boot=50)
    r07 = PositionResult(n_queries=40, chosen_layer=0, change=np.ones((1, 4)),
                         verdict=position.verdict_invariant_heads_are_positional(per_layer), correlation=per_layer,
                         change_mean=np.zeros((1, 4)), verdicts_by_intervention={
                             "zero": position.verdict_invariant_heads_are_positional(per_layer)})
    for record in (r05, r06, r07):
        name = f"result_{type(record).__name__}"
        results.save(name, record, model=tiny_en)
        back = results.load(name, type(record), model=tiny_en)
        assert type(back) is type(record) and back.verdict.verdict == record.verdict.verdict
    back05 = results.load("result_HeadPatternsResult", HeadPatternsResult, model=tiny_en)
    assert back05.fixed_share == 0.75 and back05.zoo == {"self": [0, 0]} and np.isnan(back05.depth_spearman)
    np.testing.assert_array_equal(back05.stats["self_mass"], np.eye(2))
    back06 = results.load("result_PerturbationResult", PerturbationResult, model=tiny_en)
    np.testing.assert_allclose(back06.unchanged, study.unchanged())
    np.testing.assert_allclose(back06.sensitivity["lexical_position"], r06.sensitivity["lexical_position"])
    assert back06.unchanged_per_query.shape == (40, 1, 4) and np.isnan(back06.unchanged_per_query[3]).all()
    np.testing.assert_allclose(back06.unchanged_per_query, r06.unchanged_per_query)  # NaN where NaN
    np.testing.assert_allclose(back06.follower_gap_per_query, r06.follower_gap_per_query)
    older = r06.to_record()
    del older["unchanged_per_query"], older["follower_gap_per_query"]  # a record saved before these fields
    assert PerturbationResult.from_record(older).unchanged_per_query is None
    back07 = results.load("result_PositionResult", PositionResult, model=tiny_en)
    np.testing.assert_allclose(back07.correlation.estimate, [1.0, 1.0])
    assert back07.correlation.n == 9  # queries
    assert back07.follower_gap_correlation is None and back07.change_low is None
    np.testing.assert_array_equal(back07.change_mean, np.zeros((1, 4)))
    assert back07.verdicts_by_intervention["zero"].verdict == r07.verdict.verdict
