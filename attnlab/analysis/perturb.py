"""Lexical and syntactic perturbations of a query, with the permutation they apply.

The source article damages ``王者荣耀怎么玩`` in three ways and looks at which
heads change:

* **lexical** - break words: the characters *inside* a multi-character word are
  shuffled (``王者荣耀`` -> ``王荣者耀``); the words stay in their places.
* **syntactic** - move a constituent: whole words move, none is broken
  (``王者荣耀 | 怎么玩`` -> ``怎么玩王者荣耀``).
* **both** - the same word breaks and the same move together.

English analogue: an English model's tokens are words, so the counterpart of
a Chinese multi-character word is a multi-token *lexical unit*, a fixed
expression or compound (``"how do you"``, ``"ice cream"``); breaking it
shuffles its words (``"do how you"``, ``"cream ice"``). Moves are the same
(``how do you play | chess`` -> ``chess how do you play``).

Every perturbation is a rearrangement of *units* (characters for Chinese,
space-separated words for English), so it comes with ``unit_order``: new unit
``i`` is old unit ``unit_order[i]``. :func:`token_permutation` turns that into
a permutation of the model's tokens, checked against the real tokenizer:
``new_tokens[i] == old_tokens[perm[i]]``, special tokens fixed. When the
tokenizer does not cut the new text into the same tokens (a Latin word split
inside a Chinese query, a BPE word that gains a leading-space marker), it
raises :class:`TokenizationChanged` instead of pretending.

All choices are seeded: the same query, kind and seed give the same output.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from attnlab.core.models import LoadedModel
from attnlab.data.corpus import Query, example, lexicon

KINDS = ("lexical", "syntactic", "both")


class PerturbationError(ValueError):
    """A perturbation cannot be applied to this query (nothing to break or move)."""


class TokenizationChanged(ValueError):
    """The perturbed text is not the original's tokens rearranged; no token permutation exists."""


@dataclass(frozen=True)
class Perturbed:
    """A perturbed query.

    Attributes:
        kind: ``"lexical"``, ``"syntactic"``, ``"both"`` (or ``"original"``).
        text: the new text.
        words: the words in their new order (broken words as they now read).
        unit_order: new unit ``i`` is old unit ``unit_order[i]``; units are the
            characters (Chinese) or space-separated words (English).
        source: the original :class:`~attnlab.data.corpus.Query`.
    """

    kind: str
    text: str
    words: tuple[str, ...]
    unit_order: tuple[int, ...]
    source: Query

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


def breakable(q: Query) -> list[int]:
    """Indices of words with at least two *different* units (shuffling them changes the text)."""
    return [i for i, w in enumerate(q.words) if len(set(units_of(w, q.language))) >= 2]


def _word_break(word_units: list[str], rng: random.Random) -> list[int]:
    """A permutation of ``range(len(word_units))`` that changes the word's spelling."""
    n = len(word_units)
    if n <= 6:
        options = [p for p in itertools.permutations(range(n))
                   if [word_units[i] for i in p] != word_units]
        return list(rng.choice(options))
    while True:  # long words: rejection sampling terminates fast (>= 2 distinct units)
        p = list(range(n))
        rng.shuffle(p)
        if [word_units[i] for i in p] != word_units:
            return p


def plan(q: Query, seed: int = 0, *, fraction: float = 1.0) -> tuple[dict[int, list[int]], list[int]]:
    """Decide, once per query and seed, which words break how and which chunk moves.

    Args:
        q: the query.
        seed: random seed.
        fraction: share of breakable words to break (at least one).

    Returns:
        ``(word_perms, chunk_order)``: ``word_perms[w]`` is the new order of the
        units of word ``w`` (only for broken words); ``chunk_order`` lists the old
        chunk indices in their new order (one chunk, chosen by the seed among all
        but the first, moves to the front).
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    rng = _rng(seed, q, "lexical")
    candidates = breakable(q)
    chosen = candidates
    if candidates and fraction < 1:
        k = max(1, math.ceil(fraction * len(candidates)))
        chosen = sorted(rng.sample(candidates, k))
    word_perms = {w: _word_break(units_of(q.words[w], q.language), rng) for w in chosen}
    chunks = q.chunks or _halves(q.words, q.language)
    if len(chunks) >= 2:
        mover = _rng(seed, q, "syntactic").randrange(1, len(chunks))
        chunk_order = [mover] + [c for c in range(len(chunks)) if c != mover]
    else:
        chunk_order = [0]
    return word_perms, chunk_order


def _apply(q: Query, kind: str, word_perms: dict[int, list[int]], chunk_order: list[int]) -> Perturbed:
    """Build the perturbed text and its unit order from a plan."""
    chunks = q.chunks or _halves(q.words, q.language)
    # old unit index where each word starts
    starts, pos = [], 0
    for w in q.words:
        starts.append(pos)
        pos += len(units_of(w, q.language))
    units = units_of(q.text, q.language)
    word_sequence = [w for c in chunk_order for w in range(*chunks[c])]
    order: list[int] = []
    new_words: list[str] = []
    for w in word_sequence:
        n = len(units_of(q.words[w], q.language))
        inner = word_perms.get(w, list(range(n)))
        idx = [starts[w] + i for i in inner]
        order.extend(idx)
        new_words.append(_joiner(q.language).join(units[i] for i in idx))
    text = _joiner(q.language).join(units[i] for i in order)
    return Perturbed(kind, text, tuple(new_words), tuple(order), q)


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
    word_perms, chunk_order = plan(q, seed, fraction=fraction)
    if kind in ("lexical", "both") and not word_perms:
        raise PerturbationError(
            f"{q.text!r} has no word with two or more different "
            f"{'characters' if q.language == 'zh' else 'words'} to break "
            f"(words: {list(q.words)})."
        )
    if kind in ("syntactic", "both") and len(chunk_order) < 2:
        raise PerturbationError(f"{q.text!r} has a single chunk {list(q.chunks)}: nothing to move.")
    return _apply(
        q, kind,
        word_perms if kind != "syntactic" else {},
        chunk_order if kind != "lexical" else list(range(len(chunk_order))),
    )


def lexical(q: Query | str, seed: int = 0, **kw) -> Perturbed:
    """Break words: shuffle the units inside multi-unit words, words stay in place."""
    return perturb(q, "lexical", seed, **kw)


def syntactic(q: Query | str, seed: int = 0, **kw) -> Perturbed:
    """Move one constituent (chunk) to the front; every word stays whole."""
    return perturb(q, "syntactic", seed, **kw)


def perturb_all(q: Query | str, seed: int = 0, **kw) -> dict[str, Perturbed]:
    """``{"original", "lexical", "syntactic", "both"}`` for one query."""
    q = as_query(q, kw.pop("language", None) or getattr(q, "language", "zh"))
    n = len(units_of(q.text, q.language))
    out = {"original": Perturbed("original", q.text, q.words, tuple(range(n)), q)}
    for kind in KINDS:
        out[kind] = perturb(q, kind, seed, **kw)
    return out


def from_texts(q: Query | str, new_text: str, kind: str, *, language: str | None = None) -> Perturbed:
    """A :class:`Perturbed` for a hand-written rearrangement of ``q`` (e.g. the article's).

    The unit order is found by matching units: the k-th occurrence of a unit
    in the new text is the k-th occurrence in the old one.

    Raises:
        ValueError: ``new_text`` does not hold exactly the same units.
    """
    q = as_query(q, language or getattr(q, "language", "zh"))
    old = units_of(q.text, q.language)
    new = units_of(new_text, q.language)
    if sorted(old) != sorted(new):
        raise ValueError(f"{new_text!r} is not a rearrangement of {q.text!r}: the units differ")
    order = _match(old, new)
    words = (new_text,) if q.language == "zh" else tuple(new)
    return Perturbed(kind, new_text, words, tuple(order), q)


def _match(old: Sequence, new: Sequence) -> list[int]:
    """Positions in ``old`` of each item of ``new`` (occurrences matched in order)."""
    slots: dict = {}
    for i, u in enumerate(old):
        slots.setdefault(u, []).append(i)
    taken: dict = {}
    order = []
    for u in new:
        k = taken.get(u, 0)
        order.append(slots[u][k])
        taken[u] = k + 1
    return order


#: The source article's four queries (its lexical and combined damage, written out).
ARTICLE_QUERIES = {
    "original": "王者荣耀怎么玩",
    "lexical": "王荣者耀怎玩么",
    "syntactic": "怎么玩王者荣耀",
    "both": "怎么玩王荣者耀",
}


def example_perturbations(language: str, seed: int = 0) -> dict[str, Perturbed]:
    """The four queries of the lesson's example figure.

    Chinese: the source article's own four queries (:data:`ARTICLE_QUERIES`).
    English: :func:`perturb_all` of ``how do you play chess`` (units
    ``how do you | play | chess``).
    """
    q = example(language)
    if language == "zh":
        return {k: (from_texts(q, t, k) if k != "original" else from_texts(q, t, "original"))
                for k, t in ARTICLE_QUERIES.items()}
    return perturb_all(q, seed)


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
            # the unit holding the token's first non-space character
            for u, (us, ue) in enumerate(spans):
                if us <= s < ue or (s < us < e):
                    per_unit[u].append(t)
                    break
            else:
                special.append(t)
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
            original tokens rearranged (token count or pieces differ).
    """
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
    moved = [t for u in p.unit_order for t in per_unit[u]]
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
