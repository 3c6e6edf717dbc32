"""Same-length query sets: exact token counts, distinct, deterministic, 100,000 of them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from attnlab.data.querygen import QueryGenerator, same_length_queries


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
