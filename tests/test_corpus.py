"""The built-in query sets: sizes, determinism, segmentation, single-token English words."""

from __future__ import annotations

import pytest

from attnlab.core.models import bundled_model_path
from attnlab.data import corpus


@pytest.mark.parametrize("language", ["zh", "en"])
def test_sizes_and_distinct(language):
    qs = corpus.all_queries(language)
    assert len(qs) >= 1000  # lesson 06 samples 1,000 in full mode
    assert len({q.text for q in qs}) == len(qs)
    assert len(corpus.queries(language, 500)) == 500


@pytest.mark.parametrize("language", ["zh", "en"])
def test_deterministic(language):
    a = corpus.queries(language, 50, seed=3)
    b = corpus.queries(language, 50, seed=3)
    c = corpus.queries(language, 50, seed=4)
    assert a == b
    assert [q.text for q in a] != [q.text for q in c]
    assert corpus.texts(language, 10, seed=3) == [q.text for q in a[:10]]


@pytest.mark.parametrize("language", ["zh", "en"])
def test_words_spell_text_and_chunks_cover_words(language):
    joiner = "" if language == "zh" else " "
    for q in corpus.all_queries(language):
        assert joiner.join(q.words) == q.text
        assert all(w for w in q.words)
        assert q.chunks[0][0] == 0 and q.chunks[-1][1] == len(q.words)
        assert all(a[1] == b[0] for a, b in zip(q.chunks, q.chunks[1:]))
        assert len(q.chunks) >= 2  # a movable constituent


def test_chinese_queries_have_breakable_words_and_vary_in_length():
    qs = corpus.all_queries("zh")
    assert all(any(len(set(w)) >= 2 for w in q.words) for q in qs)
    lengths = {len(q.text) for q in qs}
    assert min(lengths) <= 5 and max(lengths) >= 10
    assert all("\u4e00" <= ch <= "\u9fff" for q in qs for ch in q.text)  # no Latin letters or digits


def test_english_words_are_single_bert_tokens():
    from transformers import AutoTokenizer

    import attnlab as al

    tok = AutoTokenizer.from_pretrained(str(bundled_model_path()))
    qs = corpus.all_queries("en")
    assert corpus.token_report(tok, qs) == {}
    # every query has a multi-word lexical unit to break
    assert all(any(" " in w for w in q.words) for q in qs)
    lengths = {len(tok.tokenize(q.text)) for q in qs}
    assert min(lengths) <= 5 and max(lengths) >= 8


def test_token_report_flags_multi_piece_words():
    from transformers import AutoTokenizer

    import attnlab as al

    tok = AutoTokenizer.from_pretrained(str(bundled_model_path()))
    q = corpus.Query("how do you play minecraft", ("how do you", "play", "minecraft"), ((0, 2), (2, 3)), "en")
    assert corpus.token_report(tok, [q]) == {"minecraft": len(tok.tokenize("minecraft"))}


def test_bad_input():
    with pytest.raises(ValueError, match="language"):
        corpus.queries("fr")
    with pytest.raises(ValueError, match="only"):
        corpus.queries("zh", 10**6)
    with pytest.raises(ValueError, match="positive"):
        corpus.queries("en", 0)
    with pytest.raises(ValueError, match="spell"):
        corpus.Query("王者荣耀", ("王者", "荣"), (), "zh")
    with pytest.raises(ValueError, match="chunks"):
        corpus.Query("王者荣耀", ("王者", "荣耀"), ((0, 1), (2, 2)), "zh")


def test_example_matches_the_course_example():
    from attnlab.data.examples import example_query

    for lang in ("zh", "en"):
        assert corpus.example(lang).text == example_query(lang)
