"""Issue 51, part C1 / lesson 13: rows weighted by their content mass, and the floors of conclusion 1,
lesson 08's article-head groups and lesson 13's comparisons.

Every test plants known data: a pattern-free null and a planted pattern, and shows that the measure
or the rule separates them; the floors' tests plant the same direction at a hundredth of the size.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.analysis import compare
from attnlab.analysis.fixedness import fixedness_report, head_numbers, row_content_mass
from attnlab.core.streaming import MeanAttention
from attnlab.course.claims import averaging

N_KEYS = 7  # key 0 is the special token <s>; keys 1..6 are content
SINK_ROWS = (0, 1, 2, 3, 4)  # query rows that rest 99% on <s> and put the other 1% on one fixed word
CONTENT_ROWS = (5, 6)  # query rows that read the text: all their weight on a word each text picks anew


def mixed_head_maps(queries: int, rng: np.random.Generator) -> torch.Tensor:
    """``[queries, 1, 1, n, n]``: one head whose sink rows are fixed and whose content rows vary."""
    maps = torch.zeros(queries, 1, 1, N_KEYS, N_KEYS, dtype=torch.float64)
    for r in SINK_ROWS:
        maps[:, 0, 0, r, 0] = 0.99
        maps[:, 0, 0, r, 1] = 0.01
    for r in CONTENT_ROWS:
        picks = torch.from_numpy(rng.integers(1, N_KEYS, size=queries))  # (Q,)
        maps[torch.arange(queries), 0, 0, r, picks] = 1.0
    return maps


def mixed_head_shards(n_shards: int = 10, per_shard: int = 200, seed: int = 0) -> list[MeanAttention]:
    rng = np.random.default_rng(seed)
    shards = []
    for _ in range(n_shards):
        acc = MeanAttention.empty(1, 1, N_KEYS, special=[0])
        acc.add(mixed_head_maps(per_shard, rng).float())
        shards.append(acc)
    return shards


def numpy_weighted_fixedness(maps: np.ndarray, special: int = 0) -> float:
    """Content-key fixedness of one head ``maps`` ``[Q, n, n]`` with each row weighted by its mean
    content mass, computed directly from the maps (the independent computation)."""
    eps = 1e-5  # the accumulator's entropy smoothing (attnlab.core.streaming.ENTROPY_EPS)
    keep = np.arange(maps.shape[-1]) != special
    mass = maps[..., keep].sum(-1)  # (Q, n): each row's content mass
    rows = maps[..., keep] / mass[..., None]  # (Q, n, k): renormalised over the content keys
    k = rows.shape[-1]

    def info(p):  # KL(p || u) of the smoothed row
        q = (1 - eps) * p + eps / k
        return np.log(k) + (q * np.log(q)).sum(-1)

    w = mass.mean(0)  # (n,)
    mean_info = info(rows.mean(0))  # (n,)
    row_info = info(rows).mean(0)  # (n,)
    null = (1 - eps) ** 2 * np.clip(k * (rows ** 2).sum(-1).mean(0) - 1, 0, None) / (2 * len(maps))  # (n,)
    return float((w * (mean_info - null)).sum() / (w * (row_info - null)).sum())


def test_row_content_weighting():
    """Inside one head, five rows rest 99% on <s> (their 1% on one fixed word) and two rows read a word
    each text picks anew. Weighted by content mass the head reads as varying; counted row by row, the
    five renormalised sink rows (one-hot on the same word every time) make it read as fixed."""
    shards = mixed_head_shards()
    report = fixedness_report(shards, n_boot=200, control=None)
    content = report.content
    assert content.row_weighted and not report.row_weighted
    weighted, unweighted = float(content.fixedness[0, 0]), float(content.unweighted[0, 0])
    assert weighted < 0.1 and unweighted > 0.6
    assert averaging.head_labels(content)[0, 0] == averaging.VARYING
    plain = fixedness_report([s.content for s in shards], n_boot=200)  # the same rows, every one counted the same
    assert not plain.row_weighted and averaging.head_labels(plain)[0, 0] == averaging.FIXED
    assert abs(float(plain.fixedness[0, 0]) - unweighted) < 1e-12
    # the weighted share against a computation straight from the maps
    maps = mixed_head_maps(2000, np.random.default_rng(0)).float().double()[:, 0, 0].numpy()  # (Q, n, n)
    acc = MeanAttention.empty(1, 1, N_KEYS, special=[0])
    acc.add(torch.from_numpy(maps)[:, None, None].float())
    got = head_numbers(acc.content, row_content_mass(acc))[0][0, 0]
    assert abs(float(got) - numpy_weighted_fixedness(maps.astype(np.float32).astype(np.float64))) < 1e-6
    # the same mass on every row: the weights cancel and the weighted share is the unweighted one
    even = MeanAttention.empty(1, 1, N_KEYS, special=[0])
    even.add(torch.from_numpy(np.random.default_rng(1).dirichlet(np.ones(N_KEYS), size=(50, 1, 1, N_KEYS))).float())
    same_mass = torch.full((1, 1, N_KEYS), 0.3 * even.count, dtype=torch.float64)
    assert np.allclose(head_numbers(even.content, same_mass)[0], head_numbers(even.content)[0])


def test_row_content_weighting_in_the_follower_statistic():
    """Lesson 06's content-key similarity: sink rows that stay put and content rows that move. Weighted,
    the head's map moves (similarity near 0); counted row by row, the renormalised sink rows hold it up."""
    special = torch.zeros(N_KEYS, dtype=torch.bool)
    special[0] = True
    a = torch.zeros(N_KEYS, N_KEYS, dtype=torch.float64)
    b = torch.zeros(N_KEYS, N_KEYS, dtype=torch.float64)
    for m in (a, b):
        m[list(SINK_ROWS), 0], m[list(SINK_ROWS), 1] = 0.99, 0.01
    for r in CONTENT_ROWS:  # disjoint words before and after
        a[r, 2], b[r, 5] = 1.0, 1.0
    got = float(compare.content_similarity(a, b, special))
    w = np.array([0.01] * len(SINK_ROWS) + [1.0] * len(CONTENT_ROWS))
    js = np.array([0.0] * len(SINK_ROWS) + [np.log(2)] * len(CONTENT_ROWS))
    assert abs(got - (1 - (w * js).sum() / w.sum() / np.log(2))) < 1e-12
    assert got < 0.05
    unweighted = 1 - js.mean() / np.log(2)
    assert unweighted > 0.7


# --------------------------------------------------------------------------- lesson 08: the article's head groups


def article_groups(gap: float, spread: float = 0.01, seed: int = 0) -> np.ndarray:
    """4 layers x 12 heads: the article's fixed heads around 0.6 + gap, its varying heads around 0.6,
    each head scattered by ``spread``; the other heads at 0.5."""
    rng = np.random.default_rng(seed)
    f = np.full((4, 12), 0.5)
    f[:, list(averaging.ARTICLE_FIXED_HEADS)] = 0.6 + gap + spread * rng.standard_normal(6)
    f[:, list(averaging.ARTICLE_VARYING_HEADS)] = 0.6 + spread * rng.standard_normal(5)
    return f


def test_floor_blocks_tiny_effects_lesson08():
    """The article's split at a hundredth of its planted size (a gap of 0.004 instead of 0.4) does not
    hold, though the permutation test alone (every fixed head above every varying head) would pass it."""
    from test_claims_08_09 import ARTICLE, report

    big = averaging.verdict_article_head_groups(report(article_groups(0.4, spread=0.0005), model=ARTICLE))
    assert big.verdict == "holds" and big.numbers["floor"] == averaging.GROUPS_MARGIN
    tiny = averaging.verdict_article_head_groups(report(article_groups(0.004, spread=0.0005), model=ARTICLE))
    assert tiny.numbers["permutation_p"] < averaging.GROUPS_ALPHA and tiny.numbers["estimate"] > 0
    assert tiny.verdict == "does not hold"  # alike within the margin: equivalence, not p


def test_article_groups_equivalence_margin():
    """A pattern-free null (both groups drawn alike) does not hold; the planted split holds; a difference
    near the margin measured loosely (heads scattered by 0.3) is "cannot tell", where the old rule
    (p >= 0.2: "does not hold") took the absence of evidence for evidence of absence."""
    from test_claims_08_09 import ARTICLE, report

    null = averaging.verdict_article_head_groups(report(article_groups(0.0, spread=0.02, seed=3), model=ARTICLE))
    assert null.verdict == "does not hold" and null.numbers["high"] < averaging.GROUPS_MARGIN
    loose = averaging.verdict_article_head_groups(report(article_groups(0.1, spread=0.3, seed=1), model=ARTICLE))
    assert loose.numbers["low"] < averaging.GROUPS_MARGIN < loose.numbers["high"]
    assert loose.verdict == "cannot tell"
    # the interval against an independent resampling of the heads (no shard noise in this report)
    f = article_groups(0.1, spread=0.3, seed=1)
    per_head = f.mean(axis=0)
    fixed, varying = per_head[list(averaging.ARTICLE_FIXED_HEADS)], per_head[list(averaging.ARTICLE_VARYING_HEADS)]
    rng = np.random.default_rng(11)
    diffs = [rng.choice(fixed, 6).mean() - rng.choice(varying, 5).mean() for _ in range(4000)]
    assert abs(loose.numbers["low"] - np.quantile(diffs, 0.025)) < 0.03
    assert abs(loose.numbers["high"] - np.quantile(diffs, 0.975)) < 0.03
    table = [averaging.verdict_article_head_groups(report(f, model=ARTICLE), margin=m).verdict
             for m in averaging.SENSITIVITY_GROUPS_MARGIN]
    assert len(table) == 3


# --------------------------------------------------------------------------- lesson 13's comparisons


def test_floor_blocks_tiny_effects_lesson13():
    """Each of lesson 13's comparisons that used to be decided at 0 holds at its planted size and does not
    hold at a hundredth of it, even where the interval is wholly on the claim's side of 0 (measured tightly)."""
    from attnlab.course.claims import attention_limits as lim
    from test_attention_limits_claims import board, intervention, replacement, together

    big = {"raw": 0.5, "norm": 0.8, "rollout": 0.8, "value_zeroing": 0.95, "knockout": 0.9}
    tiny = {"raw": 0.5, "norm": 0.503, "rollout": 0.503, "value_zeroing": 0.5045, "knockout": 0.9}
    for verdict in (lim.verdict_norm_beats_raw, lim.verdict_rollout_beats_raw, lim.verdict_value_zeroing_best):
        assert verdict(board(big, spread=0.0005)).verdict == "holds"
        small = verdict(board(tiny, spread=0.0005))
        assert small.numbers["low"] > 0  # the old rule (> 0) would say "holds"
        assert small.verdict == "does not hold" and small.numbers["floor"] == lim.FLOOR_BEATS_RHO

    assert lim.verdict_sink_no_op(intervention(sink=0.001, control=0.01)).verdict == "holds"
    small = lim.verdict_sink_no_op(intervention(sink=0.01 - 0.00009, control=0.01))
    assert small.verdict != "holds" and small.numbers["floor"] == pytest.approx(0.1 * small.numbers["control_effect"])

    assert lim.verdict_mean_map_stands_in(replacement(control_extra=0.01, spread=0.0001)).verdict == "holds"
    small = lim.verdict_mean_map_stands_in(replacement(control_extra=0.0001, spread=0.0001))
    assert small.numbers["high"] < 0 and small.verdict == "does not hold"
    assert small.numbers["floor"] == pytest.approx(0.01 * 0.4)  # 1% of the distance between two texts

    assert lim.verdict_fixed_order_beats_random(together(random_cost=2.0)).verdict == "holds"
    small = lim.verdict_fixed_order_beats_random(together(random_cost=1.01))
    assert small.verdict == "does not hold" and small.numbers["floor"] == pytest.approx(0.01 * 0.2)


# --------------------------------------------------------------------------- conclusion 1


def test_floor_blocks_tiny_effects_1():
    """Conclusion 1 planted: 90% of the heads fixed (0.4 past "most") and none following the content (0.25
    below "a few") holds; the same direction at a hundredth of the size (50.4% fixed, 24.75% following)
    does not hold, though both intervals lie on the claim's side of their lines (the rule without a floor
    would say "holds")."""
    import lesson_records as rec
    from attnlab.course.claims import conclusions as claims

    big = {"n_layers": 20, "n_heads": 50}  # 1,000 heads, so that a hundredth of the effect is a whole number of heads
    planted = claims.conclusion_1(rec.averaging(0.9, half_width=0.001, **big),
                                  rec.perturbation(0.0, half_width=0.001, **big))
    assert planted.verdict == "holds" and planted.numbers["floor"] == claims.FLOOR_1
    fixed, content = 0.5 + 0.4 / 100, 0.25 - 0.25 / 100
    tiny_avg = rec.averaging(fixed, half_width=0.001, **big)
    tiny_pert = rec.perturbation(content, half_width=0.001, **big)
    small = claims.conclusion_1(tiny_avg, tiny_pert)
    assert small.numbers["low"] > claims.MOST_FIXED and small.numbers["content high"] < claims.FEW_CONTENT
    assert claims.conclusion_1(tiny_avg, tiny_pert, floor=0.0).verdict == "holds"  # no floor: "holds"
    assert small.verdict == "cannot tell"
    # a pattern-free null (half the heads fixed, a quarter following the content) does not hold either way
    null = claims.conclusion_1(rec.averaging(0.5, half_width=0.001, **big), rec.perturbation(0.25, half_width=0.001, **big))
    assert null.verdict == "cannot tell"
    # the floor has its rows in the sensitivity table
    assert claims.SENSITIVITY[1]["floor"] == [0.0, 0.1, 0.2]


def test_content_share_weights_each_head_by_its_content_mass():
    """Lesson 06's share of content-followers as conclusion 1 decides it: 40% of the heads follow the
    content, but each of them puts 1% of its rows on the text (the rest on [CLS]); the heads that read the
    text follow positions. Unweighted the share is 0.4, not "a few"; weighted by content mass it is about
    0.007, and the claim's second half is met."""
    import lesson_records as rec
    from attnlab.course.claims import conclusions as claims

    big = {"n_layers": 6, "n_heads": 12}
    rng = np.random.default_rng(4)
    follows = np.zeros((6, 12), dtype=bool)
    follows[:, :5] = True  # 30 of 72 heads (~0.42) follow the content
    gaps = np.where(follows, -0.3, 0.3) + 0.05 * rng.standard_normal((60, 6, 12))  # (N, L, H): position - token
    avg = rec.averaging(0.9, **big)
    avg.special_weight = np.where(follows, 0.99, 0.2)  # the followers rest 99% on special tokens
    pert = rec.perturbation(30 / 72, **big)
    pert.content_gap_per_query = gaps
    weighted = claims.weighted_content_share(avg, pert)
    mass = np.where(follows, 0.01, 0.8)
    by_hand = float((mass * follows).sum() / mass.sum())
    assert abs(weighted.estimate - by_hand) < 1e-12 and weighted.high < 0.02 and weighted.n == 60
    v = claims.conclusion_1(avg, pert)
    assert v.numbers["content high"] < claims.FEW_CONTENT - claims.FLOOR_1 and v.verdict == "holds"
    pert.content_gap_per_query = None  # a record saved before the per-query gaps: decided unweighted
    assert claims.conclusion_1(avg, pert).verdict == "does not hold"
