"""Lexical and syntactic perturbations of a query, and how their tokens line up.

The source article damages ``王者荣耀怎么玩`` in three ways and looks at which
heads change:

* **lexical** - break words from the inside; the words stay in their places.
  Chinese: the characters *inside* a multi-character word are shuffled
  (``王者荣耀`` -> ``王荣者耀``). English: the letters inside a word of at least
  :data:`MIN_LETTERS` letters are shuffled into a non-word (``chess`` -> ``hcses``);
  shorter words (mostly function words: how, do, the) stay, as one-character
  Chinese words do.
* **syntactic** - move a constituent: whole words move, none is broken
  (``王者荣耀 | 怎么玩`` -> ``怎么玩王者荣耀``, ``how do you play | chess`` ->
  ``chess how do you play``).
* **both** - the same breaks and the same move together: every word that
  lexical damage breaks is broken here too.

Every perturbation rearranges *units* (characters for Chinese, space-separated
words for English) and may respell English units with their own letters; it
comes with ``unit_order`` (new unit ``i`` is old unit ``unit_order[i]``) and
``respelled`` (the old units whose letters were shuffled).

Two ways to line the perturbed text's tokens up with the original's:

* :func:`token_permutation` - a permutation of the model's tokens, checked
  against the real tokenizer (``new_tokens[i] == old_tokens[perm[i]]``). It
  exists only when the tokens are the original's rearranged: Chinese
  characters, English moves. A respelled English word has new word pieces, so
  it raises :class:`TokenizationChanged`.
* :func:`unit_alignment` - the tokens grouped by unit ([CLS], each unit,
  [SEP]) in both texts, and the permutation of those groups. It exists for every
  perturbation, also when the pieces differ: a multilingual (XLM-R) tokenizer
  cuts ``王者荣耀怎么玩`` as ``▁王 者 荣耀 怎么 玩`` but ``怎么玩王者荣耀`` as
  ``▁ 怎么 玩 王 者 荣耀``; a piece that covers several characters is in each
  of their groups; :mod:`attnlab.analysis.compare` compares maps at this level.
  Its ``displacement`` says how far the units moved, in token positions: the
  part of a map's change that position alone can explain.

All choices are seeded: the same query, kind and seed give the same output.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from attnlab.core.models import LoadedModel
from attnlab.data.corpus import Query, example, lexicon

KINDS = ("lexical", "syntactic", "both")

#: English words shorter than this keep their spelling under lexical damage.
MIN_LETTERS = 4


class PerturbationError(ValueError):
    """A perturbation cannot be applied to this query (nothing to break or move)."""


class TokenizationChanged(ValueError):
    """The perturbed text is not the original's tokens rearranged; no token permutation exists."""


@dataclass(frozen=True)
class Perturbed:
    """A perturbed query.

    Attributes:
        kind: ``"lexical"``, ``"syntactic"``, ``"both"`` (or ``"original"``, ``"custom"``).
        text: the new text.
        words: the words in their new order (broken words as they now read).
        unit_order: new unit ``i`` is old unit ``unit_order[i]``; units are the
            characters (Chinese) or space-separated words (English).
        source: the original :class:`~attnlab.data.corpus.Query`.
        respelled: old unit indices whose letters were shuffled (English lexical damage).
    """

    kind: str
    text: str
    words: tuple[str, ...]
    unit_order: tuple[int, ...]
    source: Query
    respelled: tuple[int, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return self.text != self.source.text


# --------------------------------------------------------------------------- units and segmentation


def units_of(text: str, language: str) -> list[str]:
    """The units that perturbations rearrange: characters (zh) or space-separated words (en)."""
    if language == "zh":
        return list(text)
    return text.split(" ")


def _joiner(language: str) -> str:
    return "" if language == "zh" else " "


def segment(text: str, *, method: str = "lexicon", words: Sequence[str] | None = None) -> list[str]:
    """Split Chinese text into words.

    Args:
        text: Chinese text without spaces.
        method: ``"lexicon"`` - forward maximum matching against the course's
            built-in lexicon (plus ``words``); unknown characters become
            one-character words. ``"jieba"`` - the jieba segmenter, if installed.
        words: extra lexicon entries.

    Returns:
        Words whose concatenation is ``text``.
    """
    if not isinstance(text, str) or not text:
        raise ValueError("segment needs a non-empty string")
    if method == "jieba":
        try:
            import jieba  # optional dependency, imported only when this method is asked for
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ImportError("method='jieba' needs `pip install jieba`; or use method='lexicon'") from exc
        return [w for w in jieba.lcut(text, HMM=False) if w]
    if method != "lexicon":
        raise ValueError(f"method must be 'lexicon' or 'jieba', got {method!r}")
    vocab = lexicon("zh") | set(words or ())
    longest = max(len(w) for w in vocab)
    out, i = [], 0
    while i < len(text):
        for size in range(min(longest, len(text) - i), 0, -1):
            piece = text[i : i + size]
            if size == 1 or piece in vocab:
                out.append(piece)
                i += size
                break
    return out


def as_query(item: Query | str, language: str, *, words: Sequence[str] | None = None,
             chunks: Sequence[tuple[int, int]] | None = None) -> Query:
    """Turn a string (or a Query) into a :class:`Query` with words and chunks.

    Without ``words``, Chinese text is segmented with :func:`segment`; English
    text is split on spaces (every word its own unit). Without ``chunks``, the
    words are cut into two chunks at the word boundary nearest the middle.
    """
    if isinstance(item, Query):
        return item
    if not isinstance(item, str) or not item.strip():
        raise ValueError(f"expected a non-empty query string, got {item!r}")
    if language not in ("zh", "en"):
        raise ValueError(f"language must be 'zh' or 'en', got {language!r}")
    text = item if language == "zh" else " ".join(item.split())
    if words is None:
        words = segment(text) if language == "zh" else text.split(" ")
    words = tuple(words)
    if chunks is None:
        chunks = _halves(words, language)
    return Query(text, words, tuple(tuple(c) for c in chunks), language, "custom")


def _halves(words: tuple[str, ...], language: str) -> tuple[tuple[int, int], ...]:
    if len(words) < 2:
        return ((0, len(words)),)
    sizes = [len(units_of(w, language)) for w in words]
    total, best, best_cut = sum(sizes), None, 1
    for cut in range(1, len(words)):
        gap = abs(sum(sizes[:cut]) - total / 2)
        if best is None or gap < best:
            best, best_cut = gap, cut
    return ((0, best_cut), (best_cut, len(words)))


# --------------------------------------------------------------------------- the plan


def _rng(seed: int, q: Query, what: str) -> random.Random:
    # a string seed is hashed with SHA-512 by `random`: stable across runs and machines
    return random.Random(f"{seed}|{what}|{q.language}|{q.text}")


def _english_words() -> set[str]:
    return {w for unit in lexicon("en") for w in unit.split(" ")}


def breakable(q: Query) -> list[int]:
    """What lexical damage can break.

    Chinese: indices of words with at least two *different* characters.
    English: indices of units (space-separated words) with at least
    :data:`MIN_LETTERS` letters, two of them different.
    """
    if q.language == "zh":
        return [i for i, w in enumerate(q.words) if len(set(w)) >= 2]
    return [i for i, u in enumerate(units_of(q.text, "en")) if len(u) >= MIN_LETTERS and len(set(u)) >= 2]


def _word_break(items: Sequence[str], rng: random.Random, *, avoid: set[str] = frozenset()) -> list[int]:
    """A permutation of ``range(len(items))`` that changes the spelling (and avoids the spellings in ``avoid``)."""
    n = len(items)

    def ok(p) -> bool:
        spelled = [items[i] for i in p]
        return spelled != list(items) and "".join(spelled) not in avoid

    if n <= 6:
        options = [p for p in itertools.permutations(range(n)) if ok(p)]
        if not options:  # only real words left: take any other spelling
            options = [p for p in itertools.permutations(range(n)) if [items[i] for i in p] != list(items)]
        return list(rng.choice(options))
    while True:  # long words: rejection sampling terminates fast (>= 2 distinct items)
        p = list(range(n))
        rng.shuffle(p)
        if ok(p):
            return p


def plan(q: Query, seed: int = 0, *, fraction: float = 1.0) -> tuple[dict[int, list[int]], list[int]]:
    """Decide, once per query and seed, which words break how and which chunk moves.

    Args:
        q: the query.
        seed: random seed.
        fraction: share of breakable words to break (at least one).

    Returns:
        ``(breaks, chunk_order)``. ``breaks[i]`` is the new order of the
        characters of word ``i`` (Chinese) or of the letters of unit ``i``
        (English), for the broken ones only (indices as in :func:`breakable`).
        ``chunk_order`` lists the old chunk indices in their new order (one
        chunk, chosen by the seed among all but the first, moves to the front).
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    rng = _rng(seed, q, "lexical")
    candidates = breakable(q)
    chosen = candidates
    if candidates and fraction < 1:
        k = max(1, math.ceil(fraction * len(candidates)))
        chosen = sorted(rng.sample(candidates, k))
    if q.language == "zh":
        breaks = {w: _word_break(list(q.words[w]), rng) for w in chosen}
    else:
        units, real = units_of(q.text, "en"), _english_words()
        breaks = {u: _word_break(list(units[u]), rng, avoid=real) for u in chosen}
    chunks = q.chunks or _halves(q.words, q.language)
    if len(chunks) >= 2:
        mover = _rng(seed, q, "syntactic").randrange(1, len(chunks))
        chunk_order = [mover] + [c for c in range(len(chunks)) if c != mover]
    else:
        chunk_order = [0]
    return breaks, chunk_order


def apply_plan(q: Query, kind: str, breaks: dict[int, Sequence[int]], chunk_order: Sequence[int]) -> Perturbed:
    """Build the perturbed text from a plan (see :func:`plan`): break the words in
    ``breaks`` and put the chunks in ``chunk_order``. Pass ``{}`` to break nothing
    and ``range(len(chunks))`` to move nothing."""
    chunks = q.chunks or _halves(q.words, q.language)
    if sorted(chunk_order) != list(range(len(chunks))):
        raise ValueError(f"chunk_order must be a permutation of the {len(chunks)} chunks, got {list(chunk_order)}")
    joiner = _joiner(q.language)
    starts, pos = [], 0  # old unit index where each word starts
    for w in q.words:
        starts.append(pos)
        pos += len(units_of(w, q.language))
    units = units_of(q.text, q.language)
    if q.language == "zh":
        spelled = list(units)
        inner = {w: list(p) for w, p in breaks.items()}
    else:  # English: respell units with their own letters; the units stay in place
        spelled = [("".join(u[i] for i in breaks[k]) if k in breaks else u) for k, u in enumerate(units)]
        inner = {}
    order: list[int] = []
    new_words: list[str] = []
    for w in (w for c in chunk_order for w in range(*chunks[c])):
        n = len(units_of(q.words[w], q.language))
        idx = [starts[w] + i for i in inner.get(w, range(n))]
        order.extend(idx)
        new_words.append(joiner.join(spelled[i] for i in idx))
    text = joiner.join(spelled[i] for i in order)
    respelled = tuple(sorted(breaks)) if q.language == "en" else ()
    return Perturbed(kind, text, tuple(new_words), tuple(order), q, respelled)


def perturb(q: Query | str, kind: str, seed: int = 0, *, language: str | None = None,
            fraction: float = 1.0) -> Perturbed:
    """Apply one perturbation.

    Args:
        q: a :class:`~attnlab.data.corpus.Query` (or a string plus ``language``).
        kind: ``"lexical"``, ``"syntactic"`` or ``"both"``.
        seed: random seed (same seed, same output).
        fraction: share of breakable words to break (lexical and both).

    Raises:
        PerturbationError: no word can be broken (lexical/both), or there is
            only one chunk to move (syntactic/both).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    q = as_query(q, language or getattr(q, "language", "zh"))
    breaks, chunk_order = plan(q, seed, fraction=fraction)
    if kind in ("lexical", "both") and not breaks:
        raise PerturbationError(
            f"{q.text!r} has no word to break: "
            + ("no word with two or more different characters" if q.language == "zh"
               else f"no word of {MIN_LETTERS} or more letters")
            + f" (words: {list(q.words)})."
        )
    if kind in ("syntactic", "both") and len(chunk_order) < 2:
        raise PerturbationError(f"{q.text!r} has a single chunk {list(q.chunks)}: nothing to move.")
    return apply_plan(
        q, kind,
        breaks if kind != "syntactic" else {},
        chunk_order if kind != "lexical" else list(range(len(chunk_order))),
    )


def lexical(q: Query | str, seed: int = 0, **kw) -> Perturbed:
    """Break words from the inside (characters or letters shuffled); words stay in place."""
    return perturb(q, "lexical", seed, **kw)


def syntactic(q: Query | str, seed: int = 0, **kw) -> Perturbed:
    """Move one constituent (chunk) to the front; every word stays whole."""
    return perturb(q, "syntactic", seed, **kw)


def original(q: Query | str, *, language: str | None = None) -> Perturbed:
    """The query itself as a :class:`Perturbed` (identity order), to compare against."""
    q = as_query(q, language or getattr(q, "language", "zh"))
    return Perturbed("original", q.text, q.words, tuple(range(len(units_of(q.text, q.language)))), q)


def perturb_all(q: Query | str, seed: int = 0, **kw) -> dict[str, Perturbed]:
    """``{"original", "lexical", "syntactic", "both"}`` for one query."""
    q = as_query(q, kw.pop("language", None) or getattr(q, "language", "zh"))
    out = {"original": original(q)}
    for kind in KINDS:
        out[kind] = perturb(q, kind, seed, **kw)
    return out


def from_texts(q: Query | str, new_text: str, kind: str = "custom", *, language: str | None = None) -> Perturbed:
    """A :class:`Perturbed` for a hand-written perturbation of ``q`` (e.g. typed by a student).

    The new text must keep every unit: a rearrangement of the characters
    (Chinese) or words (English); an English word may also be respelled with
    its own letters (``play`` -> ``paly``). Units are matched in order: the
    k-th occurrence of a unit in the new text is its k-th occurrence in the old
    one; a respelled word is matched to the first unused word with its letters.

    Raises:
        ValueError: ``new_text`` does not keep the units.
    """
    q = as_query(q, language or getattr(q, "language", "zh"))
    old = units_of(q.text, q.language)
    new = units_of(" ".join(new_text.split()) if q.language == "en" else new_text, q.language)
    if len(old) != len(new) or (q.language == "zh" and sorted(old) != sorted(new)):
        raise ValueError(f"{new_text!r} is not a rearrangement of {q.text!r}: the units differ "
                         f"({'characters' if q.language == 'zh' else 'words'} must be kept"
                         f"{'' if q.language == 'zh' else ', each word spelled with its own letters'})")
    order, respelled = _match(old, new)
    words = (new_text,) if q.language == "zh" else tuple(new)
    return Perturbed(kind, _joiner(q.language).join(new), words, tuple(order), q, tuple(sorted(respelled)))


def _match(old: Sequence[str], new: Sequence[str]) -> tuple[list[int], list[int]]:
    """Positions in ``old`` of each item of ``new``, and the old positions matched by
    their letters only (respelled). Exact occurrences are matched first, in order."""
    slots: dict[str, list[int]] = {}
    for i, u in enumerate(old):
        slots.setdefault(u, []).append(i)
    order: list[int | None] = []
    used: set[int] = set()
    for u in new:
        free = slots.get(u, [])
        order.append(free.pop(0) if free else None)
        if order[-1] is not None:
            used.add(order[-1])
    respelled = []
    for j, u in enumerate(new):
        if order[j] is not None:
            continue
        match = next((i for i, o in enumerate(old) if i not in used and sorted(o) == sorted(u)), None)
        if match is None:
            raise ValueError(f"{u!r} is neither a word of the original nor one of its words respelled")
        order[j] = match
        used.add(match)
        respelled.append(match)
    return [int(i) for i in order], respelled


#: The source article's four queries as it prints them. Its combined damage
#: (``怎么玩王荣者耀``) breaks only ``王者荣耀`` and leaves ``怎么`` whole, so it is not
#: its lexical damage plus its move; the lesson uses :func:`example_perturbations`.
ARTICLE_QUERIES = {
    "original": "王者荣耀怎么玩",
    "lexical": "王荣者耀怎玩么",
    "syntactic": "怎么玩王者荣耀",
    "both": "怎么玩王荣者耀",
}

#: The article's break of ``王者荣耀`` (word 0 of the example): its 2nd and 3rd characters swap.
ARTICLE_BREAK = {0: (0, 2, 1, 3)}


def example_perturbations(language: str, seed: int = 0) -> dict[str, Perturbed]:
    """The four queries of the lesson's example figure, made by the generator.

    Chinese: ``王者荣耀怎么玩`` (``王者荣耀 | 怎么 玩``) with every breakable word
    broken, ``王者荣耀`` as the article breaks it (``王荣者耀``), and the question
    phrase moved to the front: ``王荣者耀么怎玩``, ``怎么玩王者荣耀`` and, for both,
    the same breaks moved: ``么怎玩王荣者耀``. English: :func:`perturb_all` of
    ``how do you play chess``.
    """
    q = example(language)
    if language != "zh":
        return perturb_all(q, seed)
    breaks, _ = plan(q, seed)
    breaks.update({w: list(p) for w, p in ARTICLE_BREAK.items()})
    keep, move = list(range(len(q.chunks))), [1, 0]
    return {"original": original(q), "lexical": apply_plan(q, "lexical", breaks, keep),
            "syntactic": apply_plan(q, "syntactic", {}, move), "both": apply_plan(q, "both", breaks, move)}


# --------------------------------------------------------------------------- tokens


def _unit_spans(text: str, language: str) -> list[tuple[int, int]]:
    """Character span of every unit in ``text``."""
    spans, pos = [], 0
    for u in units_of(text, language):
        start = text.index(u, pos)
        spans.append((start, start + len(u)))
        pos = start + len(u)
    return spans


def _tokens_per_unit(m: LoadedModel, text: str, language: str) -> tuple[list[int], list[int], list[list[int]]]:
    """``(input_ids, special positions, token positions of each unit)`` for ``text``."""
    tok = m.tokenizer
    enc = tok(text, return_offsets_mapping=bool(getattr(tok, "is_fast", False)))
    ids = list(enc["input_ids"])
    spans = _unit_spans(text, language)
    per_unit: list[list[int]] = [[] for _ in spans]
    special: list[int] = []
    special_ids = set(tok.all_special_ids)
    if "offset_mapping" in enc:
        for t, (s, e) in enumerate(enc["offset_mapping"]):
            if e <= s and ids[t] in special_ids:
                special.append(t)
                continue
            # every unit the piece overlaps: one, or several for a piece like 荣耀
            covered = [u for u, (us, ue) in enumerate(spans) if us < e and s < ue]
            if not covered:  # a piece of spaces only (a bare ▁): it goes with the next unit
                covered = [next((u for u, (us, _) in enumerate(spans) if us >= s), len(spans) - 1)]
            for u in covered:
                per_unit[u].append(t)
        return ids, special, per_unit
    # slow tokenizers: tokenize unit by unit (WordPiece-style vocabularies)
    content = [t for t, i in enumerate(ids) if i not in special_ids]
    special = [t for t, i in enumerate(ids) if i in special_ids]
    k = 0
    for u, (s, e) in enumerate(spans):
        n = len(tok.tokenize(text[s:e]))
        per_unit[u] = content[k : k + n]
        k += n
    return ids, special, per_unit


def token_permutation(m: LoadedModel, p: Perturbed) -> np.ndarray:
    """Token permutation of a perturbation under ``m``'s tokenizer.

    Returns:
        ``perm`` int array ``(n_tokens,)`` with ``new_ids[i] == old_ids[perm[i]]``
        for every position ``i``; special tokens ([CLS], [SEP]) map to themselves.

    Raises:
        TokenizationChanged: the perturbed text does not tokenize into the
            original tokens rearranged (token count or pieces differ, or a word
            was respelled).
    """
    if p.respelled:
        raise TokenizationChanged(
            f"{p.kind} perturbation {p.text!r} respells words, so it has new word pieces: no token "
            "permutation exists (use unit_alignment, which groups each word's pieces)."
        )
    language = p.source.language
    old_ids, old_special, per_unit = _tokens_per_unit(m, p.source.text, language)
    new_ids = list(m.tokenizer(p.text)["input_ids"])
    if len(new_ids) != len(old_ids):
        raise TokenizationChanged(
            f"{p.kind} perturbation {p.text!r} has {len(new_ids)} tokens, the original "
            f"{p.source.text!r} has {len(old_ids)}: the tokenizer cuts the rearranged text "
            "differently, so its attention map cannot be compared token by token. Use a "
            "query whose moved words are single tokens (see attnlab.data.corpus)."
        )
    content_new = [t for t in range(len(old_ids)) if t not in set(old_special)]
    moved = list(dict.fromkeys(t for u in p.unit_order for t in per_unit[u]))  # a piece of two units once
    perm = np.arange(len(old_ids))
    if len(moved) != len(content_new):
        raise TokenizationChanged(
            f"could not align the tokens of {p.text!r} with {p.source.text!r} "
            f"({len(moved)} content tokens mapped, {len(content_new)} expected)."
        )
    perm[content_new] = moved
    if [old_ids[j] for j in perm] != new_ids:
        old_toks = m.tokenizer.convert_ids_to_tokens(old_ids)
        new_toks = m.tokenizer.convert_ids_to_tokens(new_ids)
        raise TokenizationChanged(
            f"{p.kind} perturbation {p.text!r} tokenizes as {new_toks}, which is not the original "
            f"tokens {old_toks} rearranged (a piece changed when words moved, e.g. a leading-space "
            "marker or a word split across a boundary); it cannot be compared token by token."
        )
    return perm


def try_token_permutation(m: LoadedModel, p: Perturbed) -> tuple[np.ndarray | None, str]:
    """:func:`token_permutation`, returning ``(None, reason)`` instead of raising."""
    try:
        return token_permutation(m, p), ""
    except TokenizationChanged as exc:
        return None, str(exc)


# --------------------------------------------------------------------------- unit alignment


@dataclass(frozen=True)
class UnitAlignment:
    """The tokens of an original and a perturbed text, grouped by unit.

    Attributes:
        old_groups, new_groups: token positions of each group, in token order:
            every special token ([CLS], [SEP]) is a group of its own, every unit
            (character or word) a group of the pieces that cover it. Groups
            overlap when a piece covers several units (``荣耀`` is in the groups
            of 荣 and of 耀); a bare ``▁`` piece is in the group of the unit
            after it. :func:`attnlab.analysis.compare.group_maps` pools maps
            over these groups.
        perm: ``(G,)`` new group ``i`` holds old group ``perm[i]``.
        shift: ``(U,)`` for each unit of the new text, how far its first token
            moved (new position - old position, in tokens).
    """

    old_groups: tuple[tuple[int, ...], ...]
    new_groups: tuple[tuple[int, ...], ...]
    perm: np.ndarray
    shift: np.ndarray

    @property
    def displacement(self) -> float:
        """Mean absolute shift of the units, in token positions (0 when nothing moved)."""
        return float(np.abs(self.shift).mean()) if self.shift.size else 0.0


def _groups(special: list[int], per_unit: list[list[int]]) -> tuple[list[tuple[int, ...]], list[int], list[int]]:
    """Groups in token order, and the group index of each special token and of each unit."""
    items = [("s", k, (t,)) for k, t in enumerate(special)] + [("u", k, tuple(ts)) for k, ts in enumerate(per_unit)]
    items.sort(key=lambda it: (it[2][0], it[0] == "u", it[1]))  # units sharing a piece stay in text order
    special_at, unit_at = [0] * len(special), [0] * len(per_unit)
    for g, (what, k, _) in enumerate(items):
        (special_at if what == "s" else unit_at)[k] = g
    return [it[2] for it in items], special_at, unit_at


def unit_alignment(m: LoadedModel, p: Perturbed) -> UnitAlignment:
    """Line the perturbed text's tokens up with the original's, unit by unit.

    Raises:
        TokenizationChanged: a unit has no token, or the texts have different
            numbers of special tokens.
    """
    language = p.source.language
    _, old_special, old_units = _tokens_per_unit(m, p.source.text, language)
    _, new_special, new_units = _tokens_per_unit(m, p.text, language)
    if len(old_special) != len(new_special) or any(not ts for ts in old_units + new_units):
        raise TokenizationChanged(f"the tokens of {p.text!r} cannot be grouped unit by unit like "
                                  f"those of {p.source.text!r}")
    old_groups, old_special_at, old_unit_at = _groups(old_special, old_units)
    new_groups, new_special_at, new_unit_at = _groups(new_special, new_units)
    perm = np.empty(len(new_groups), dtype=np.int64)
    for k in range(len(new_special)):
        perm[new_special_at[k]] = old_special_at[k]
    for i, old in enumerate(p.unit_order):
        perm[new_unit_at[i]] = old_unit_at[old]
    shift = np.array([new_units[i][0] - old_units[old][0] for i, old in enumerate(p.unit_order)], dtype=float)
    return UnitAlignment(tuple(old_groups), tuple(new_groups), perm, shift)


def try_unit_alignment(m: LoadedModel, p: Perturbed) -> tuple[UnitAlignment | None, str]:
    """:func:`unit_alignment`, returning ``(None, reason)`` instead of raising."""
    try:
        return unit_alignment(m, p), ""
    except TokenizationChanged as exc:
        return None, str(exc)
