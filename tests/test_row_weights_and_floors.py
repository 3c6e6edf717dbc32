"""Issue 51, part C1 / lesson 13: rows weighted by their content mass, and the floors of conclusion 1,
lesson 08's article-head groups and lesson 13's comparisons.

Every test plants known data: a pattern-free null and a planted pattern, and shows that the measure
or the rule separates them; the floors' tests plant the same direction at a hundredth of the size.
"""

from __future__ import annotations

import numpy as np
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
