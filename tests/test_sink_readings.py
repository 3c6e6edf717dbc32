"""Two readings of attention rows (all keys, content keys): planted heads whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.analysis.fixedness import fixedness_report
from attnlab.analysis.stats import MIN_UNITS
from attnlab.core.distributions import (
    ALL_KEYS,
    CONTENT_KEYS,
    content_keys,
    special_mask,
    special_token_ids,
    special_weight,
)
from attnlab.core.streaming import MeanAttention, merge_all
from attnlab.course.claims import averaging as claims
from attnlab.course.claims.readings import READING, with_other_reading
from attnlab.course.verdicts import ClaimVerdict

N = 10  # tokens per text: <s> at 0, eight content tokens, </s> at 9
SPECIAL = [0, N - 1]
SHARDS, PER_SHARD = MIN_UNITS + 2, 150


def planted_shards(rows_of, *, seed: int = 0) -> list[MeanAttention]:
    """Shards of one planted head: ``rows_of(rng) -> (N, N)`` map of one text."""
    rng = np.random.default_rng(seed)
    shards = []
    for _ in range(SHARDS):
        maps = np.stack([rows_of(rng) for _ in range(PER_SHARD)])  # (Q, N, N)
        acc = MeanAttention.empty(1, 1, N, special=SPECIAL)
        shards.append(acc.add(torch.from_numpy(maps)[:, None, None]))
    return shards


def sink_plus_content(s: float):
    """Share ``s`` of every row on <s>, the rest on one content token chosen anew for each text."""
    def rows_of(rng) -> np.ndarray:
        out = np.zeros((N, N))
        out[:, 0] = s
        out[:, rng.integers(1, N - 1)] += 1 - s
        return out
    return rows_of


def sink_plus_previous(s: float):
    """Share ``s`` of every row on <s>, the rest on the previous content token (the same map every text)."""
    def rows_of(rng) -> np.ndarray:
        out = np.zeros((N, N))
        out[:, 0] = s
        for i in range(N):
            out[i, max(i - 1, 1) if i < N - 1 else N - 2] += 1 - s
        return out
    return rows_of


# --------------------------------------------------------------------------- content_keys


def test_content_keys_against_brute_force():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(7), size=(3, 5))  # (3, 5, 7)
    special = np.array([True, False, False, True, False, False, True])
    out = content_keys(torch.from_numpy(p), torch.from_numpy(special)).numpy()  # (3, 5, 4)
    for idx in np.ndindex(3, 5):
        row = p[idx]
        kept = [row[j] for j in range(7) if not special[j]]
        expected = [x / sum(kept) for x in kept]
        np.testing.assert_allclose(out[idx], expected, atol=1e-12)
        assert abs(float(special_weight(torch.from_numpy(p[idx]), torch.from_numpy(special)))
                   - sum(row[j] for j in range(7) if special[j])) < 1e-12


def test_content_keys_of_a_row_without_content_is_nan():
    p = torch.tensor([[0.5, 0.0, 0.5], [0.2, 0.6, 0.2]])
    out = content_keys(p, torch.tensor([True, False, True]))
    assert torch.isnan(out[0]).all() and torch.allclose(out[1], torch.tensor([1.0]))


def test_content_keys_refuses_bad_masks():
    with pytest.raises(ValueError):
        content_keys(torch.ones(2, 3) / 3, torch.tensor([True, False]))
    with pytest.raises(ValueError):
        content_keys(torch.ones(2, 3) / 3, torch.tensor([True, True, True]))


def test_special_ids_leave_unk_and_mask_out():
    class Tok:
        cls_token_id, sep_token_id, pad_token_id, unk_token_id, mask_token_id = 101, 102, 0, 100, 103
        bos_token_id = eos_token_id = None
    ids = special_token_ids(Tok())
    assert ids == {101, 102, 0}
    assert special_mask([101, 5, 100, 102], ids).tolist() == [True, False, False, True]


def test_accumulator_content_sums_equal_brute_force():
    rng = np.random.default_rng(2)
    maps = torch.from_numpy(rng.dirichlet(np.ones(N), size=(6, 2, 3, N)))  # (B, L, H, n, n) rows
    acc = MeanAttention.empty(2, 3, N, special=SPECIAL).add(maps[:4]).merge(
        MeanAttention.empty(2, 3, N, special=SPECIAL).add(maps[4:]))
    kept = maps[..., 1:N - 1] / maps[..., 1:N - 1].sum(-1, keepdim=True)  # (B, L, H, n, n - 2)
    torch.testing.assert_close(acc.content.mean, kept.mean(0), atol=1e-12, rtol=0)
    torch.testing.assert_close(acc.special_weight(), (maps[..., 0] + maps[..., -1]).mean(dim=(0, -1)),
                               atol=1e-12, rtol=0)
    again = MeanAttention.from_state_dict(acc.state_dict())
    torch.testing.assert_close(again.content.total, acc.content.total)


# --------------------------------------------------------------------------- fixedness, planted heads


@pytest.mark.parametrize("s", [0.0, 0.5, 0.9])
def test_sink_plus_content_head_is_varying(s):
    report = fixedness_report(planted_shards(sink_plus_content(s)), n_boot=200)
    content = claims.reading_labels(report, CONTENT_KEYS)
    assert content[0, 0] == claims.VARYING
    assert report.content.fixedness[0, 0] < 0.1
    assert abs(report.special_weight[0, 0] - (s + (1 - s) * 0)) < 1e-9  # the rest sits on content tokens
    if s >= 0.9:  # all keys count the sink as pattern: "fixed"
        assert claims.reading_labels(report, ALL_KEYS)[0, 0] == claims.FIXED
        assert claims.sink_labels(report)[0, 0] == claims.SINK_PREFIX + claims.VARYING
    if s == 0.0:
        assert claims.sink_labels(report)[0, 0] == claims.VARYING


@pytest.mark.parametrize("s", [0.0, 0.5, 0.9])
def test_sink_plus_previous_token_is_fixed(s):
    report = fixedness_report(planted_shards(sink_plus_previous(s)), n_boot=200)
    assert claims.reading_labels(report, ALL_KEYS)[0, 0] == claims.FIXED
    assert claims.reading_labels(report, CONTENT_KEYS)[0, 0] == claims.FIXED
    assert report.content.fixedness[0, 0] > 0.99


def test_both_readings_table_and_grid():
    shards = [a.merge(b) for a, b in zip(planted_shards(sink_plus_content(0.9)), planted_shards(sink_plus_previous(0.0), seed=3))]
    report = fixedness_report(shards, n_boot=100)
    rows = claims.both_readings(report)
    assert rows[1][:2] == [1, 1] and len(rows) == 2
    grid = claims.readings_grid(report)
    assert "L1" in grid and "H1" in grid


def test_verdicts_name_their_reading():
    report = fixedness_report(planted_shards(sink_plus_content(0.9)), n_boot=100)
    for verdict in claims.verdicts(report).values():
        assert verdict.numbers[READING] == ALL_KEYS
        assert f"{CONTENT_KEYS}: verdict" in verdict.numbers
    for verdict in claims.verdicts(report, keys=CONTENT_KEYS).values():
        assert verdict.numbers[READING] == CONTENT_KEYS


def test_with_other_reading_keeps_the_decided_word():
    decided = ClaimVerdict.decide("c", holds=True, fails=False, estimate=0.8)
    beside = ClaimVerdict.decide("c", holds=False, fails=True, estimate=0.1)
    out = with_other_reading(decided, CONTENT_KEYS, beside)
    assert out.verdict == decided.verdict and out.numbers[f"{ALL_KEYS}: estimate"] == 0.1


# --------------------------------------------------------------------------- conclusion 1


def test_conclusion_1_names_its_reading_and_decides_on_content_keys():
    import lesson_records as rec
    from attnlab.analysis.stats import Interval
    from attnlab.course.claims import conclusions
    from attnlab.course.verdicts import FAILS, HOLDS

    big = dict(n_layers=12, n_heads=12)
    avg, pert = rec.averaging(0.9, **big), rec.perturbation(0.05, **big)
    v = conclusions.conclusion_1(avg, pert)
    assert v.verdict == HOLDS and v.numbers[READING] == CONTENT_KEYS
    assert v.numbers["content low"] < v.numbers["content high"]  # the interval over queries is not a point
    assert "all keys: fixed heads (lesson 08)" in v.numbers
    # all keys: 90% fixed; content keys: 20% fixed (the sink made them look fixed) -> decided on content
    sunk = rec.averaging(0.2, **big)
    avg.content_fixed_share, avg.content_labels = sunk.content_fixed_share, sunk.content_labels
    assert conclusions.conclusion_1(avg, pert).verdict == FAILS
    old = rec.perturbation(0.05, **big)
    old.content_share_by_reading = {}
    assert "content-key reading" in conclusions.conclusion_1(rec.averaging(0.9, **big), old).numbers["missing"]


# --------------------------------------------------------------------------- lesson 13: gradient x input


def test_grad_input_against_finite_differences(tiny_en):
    from attnlab.analysis.faithfulness import grad_input
    from attnlab.core.run import encode

    inputs = encode(tiny_en, ["the cat sat on the mat"]).inputs
    ids = inputs["input_ids"]
    positions = list(range(ids.shape[1]))  # special tokens too
    got = grad_input(tiny_en, inputs, positions)
    with torch.no_grad():
        embeds = tiny_en.model.get_input_embeddings()(ids).double()  # (1, T, d)
        model = tiny_en.model.double()
        try:
            def unit(x):
                out = model(inputs_embeds=x, attention_mask=inputs["attention_mask"]).last_hidden_state
                s = out.mean(dim=1)
                return s / s.norm(dim=-1, keepdim=True)
            expected = []
            h = 1e-6
            for j in positions:
                step = torch.zeros_like(embeds)
                step[0, j] = embeds[0, j]
                expected.append(float(((unit(embeds + h * step) - unit(embeds - h * step)) / (2 * h)).norm()))
        finally:
            model.float()
    np.testing.assert_allclose(got, expected, rtol=2e-3, atol=1e-7)
    assert (got > 0).all()


def test_zeroed_embedding_and_grad_input_without_the_token_by_hand(tiny_en):
    """The two added references, each against a computation written out here: the embedding really
    zeroed (one pass per token), and gradient x input with the token out of the pool (central differences)."""
    from attnlab.analysis.faithfulness import grad_input, zeroed_embedding
    from attnlab.core.run import encode

    inputs = encode(tiny_en, ["the cat sat on the mat"]).inputs
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    positions = [1, 2, 4]
    with torch.no_grad():
        embeds = tiny_en.model.get_input_embeddings()(ids)  # (1, T, d)
        full = tiny_en.model(inputs_embeds=embeds, attention_mask=mask).last_hidden_state.mean(dim=1)[0]
        expected = []
        for j in positions:
            zeroed = embeds.clone()
            zeroed[0, j] = 0.0
            moved = tiny_en.model(inputs_embeds=zeroed, attention_mask=mask).last_hidden_state.mean(dim=1)[0]
            expected.append(1.0 - float(torch.nn.functional.cosine_similarity(moved, full, dim=0)))
    np.testing.assert_allclose(zeroed_embedding(tiny_en, inputs, positions), expected, rtol=1e-4, atol=1e-7)
    got = grad_input(tiny_en, inputs, positions, leave_out=True)
    with torch.no_grad():
        model = tiny_en.model.double()
        try:
            embeds = embeds.double()
            expected = []
            for j in positions:
                keep = [i for i in range(ids.shape[1]) if i != j]

                def unit(x):
                    s = model(inputs_embeds=x, attention_mask=mask).last_hidden_state[:, keep].mean(dim=1)
                    return s / s.norm(dim=-1, keepdim=True)

                step = torch.zeros_like(embeds)
                step[0, j] = embeds[0, j]
                h = 1e-6
                expected.append(float(((unit(embeds + h * step) - unit(embeds - h * step)) / (2 * h)).norm()))
        finally:
            model.float()
    np.testing.assert_allclose(got, expected, rtol=2e-3, atol=1e-7)
    assert not np.allclose(got, grad_input(tiny_en, inputs, positions), rtol=1e-3)  # the token's own path counted


def test_scoreboard_has_a_special_row(tiny_en):
    from attnlab.analysis.faithfulness import TRUTHS, VIEWS, scoreboard

    board = scoreboard(tiny_en, ["the quick brown fox jumps over the lazy dog", "a small bird sings in the old tree",
                                 "we walked along the river until the sun went down"])
    assert "grad_input" in board.rho
    for name in VIEWS + TRUTHS:
        share = board.special_share(name)
        assert 0.0 <= float(share.estimate) <= 1.0
    q = board.queries[0]
    raw_all = q.scores["raw"].sum() / (1 - q.special["raw"])  # the words' share plus the special share is 1
    assert raw_all > q.scores["raw"].sum()
