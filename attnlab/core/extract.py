"""Batched, padding-aware attention extraction.

:func:`attention` runs a list of texts through a model and returns an
:class:`Attention` holding every map as one float32 tensor
``[texts, layers, heads, query, key]`` (zeros outside each text's tokens),
plus the tokens and lengths. Texts are sorted by length and batched so that
little padding is computed; a text's maps are the same whether it runs alone
or beside longer texts.

:func:`iter_attention_batches` is the streaming form used by the aggregating
analyses (mean maps over 100,000 queries never hold all maps at once).
"""

from __future__ import annotations

import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import torch
from tqdm.auto import tqdm

from attnlab.core.language import _
from attnlab.core.checks import check_index
from attnlab.core.models import LoadedModel
from attnlab.core.run import encode, run


# --------------------------------------------------------------------------- validation


def check_texts(
    m: LoadedModel,
    texts: Sequence[str] | str,
    pairs: Sequence[str] | None = None,
    *,
    truncate: bool = False,
) -> tuple[list[str], list[str] | None]:
    """Validate texts (and optional second segments) before a forward pass.

    Args:
        m: the loaded model (for its tokenizer and maximum length).
        texts: one string or a sequence of strings.
        pairs: optional second segments, one per text.
        truncate: allow texts longer than the model's limit (they are cut, with
            a warning); by default they are an error.

    Returns:
        ``(texts, pairs)`` as lists.

    Raises:
        TypeError: a text is not a string.
        ValueError: the list is empty, a text is empty or whitespace, the pair
            count differs, or a text is too long.
    """
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Sequence):
        raise TypeError(
            f"texts must be a string or a list of strings, got {type(texts).__name__}"
        )
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty: pass at least one string, e.g. ['how do you play chess']")
    _check_strings(texts, "texts")
    if pairs is not None:
        if isinstance(pairs, str):
            pairs = [pairs]
        pairs = list(pairs)
        if len(pairs) != len(texts):
            raise ValueError(
                f"pairs has {len(pairs)} entries for {len(texts)} texts: give one second "
                "segment per text, or none."
            )
        _check_strings(pairs, "pairs")
    lengths = token_lengths(m, texts, pairs)
    too_long = [i for i, n in enumerate(lengths) if n > m.max_tokens]
    if too_long:
        i = too_long[0]
        msg = (
            f"{len(too_long)} text(s) are longer than this model's limit of {m.max_tokens} "
            f"tokens (text {i} has {lengths[i]}: {texts[i][:40]!r}...)."
        )
        if not truncate:
            raise ValueError(msg + " Shorten them, or pass truncate=True to cut them.")
        warnings.warn(msg + f" They are truncated to {m.max_tokens} tokens.", stacklevel=3)
    return texts, pairs


def _check_strings(items: list, what: str) -> None:
    for i, t in enumerate(items):
        check_text(t, f"{what}[{i}]")


#: Unicode categories that show nothing: controls, format (zero-width) characters,
#: surrogates, private use, unassigned, and separators.
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"}


def check_text(text: object, what: str = "text") -> str:
    """``text`` if it is a string a model can read, else a clear error.

    Raises:
        TypeError: not a string.
        ValueError: empty, or only whitespace, control or zero-width characters
            (an attention map needs at least one visible character), or a lone
            surrogate (not valid Unicode text: usually bytes decoded with
            ``errors="surrogateescape"``).
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} is {type(text).__name__}, not a string")
    for ch in text:
        if "\ud800" <= ch <= "\udfff":
            raise ValueError(
                f"{what} contains a lone surrogate (U+{ord(ch):04X}), which is not valid text: "
                "read the file as UTF-8 with errors='strict' or 'replace'."
            )
    if not any(unicodedata.category(ch) not in _INVISIBLE for ch in text):
        raise ValueError(
            f"{what} is empty or has no visible character (only whitespace, control or zero-width "
            "characters): an attention map needs at least one word. Remove it or replace it with real text."
        )
    return text


def token_lengths(m: LoadedModel, texts: list[str], pairs: list[str] | None = None) -> list[int]:
    """Token count of each text (or pair), special tokens included."""
    args = (texts, pairs) if pairs is not None else (texts,)
    enc = m.tokenizer(*args, add_special_tokens=True, truncation=False)
    return [len(ids) for ids in enc["input_ids"]]


# --------------------------------------------------------------------------- batches


@dataclass
class Batch:
    """One forward pass worth of attention.

    Attributes:
        index: positions of these texts in the caller's list, ``(B,)``.
        maps: attention ``(B, L, H, T, T)`` float32; zero on padding rows/columns.
        lengths: real token count per text, ``(B,)``.
        input_ids: ``(B, T)``.
    """

    index: list[int]
    maps: torch.Tensor
    lengths: torch.Tensor
    input_ids: torch.Tensor
    token_type_ids: torch.Tensor | None = None


#: the precisions :func:`attention` runs at (the int8 copy is for :mod:`attnlab.core.fast`)
MAP_PRECISIONS = ("fp32", "tf32", "bf16")


def iter_attention_batches(
    m: LoadedModel,
    texts: Sequence[str],
    pairs: Sequence[str] | None = None,
    *,
    batch_size: int = 32,
    truncate: bool = False,
    sort_by_length: bool = True,
    progress: bool = False,
    validate: bool = True,
    precision: str = "fp32",
) -> Iterator[Batch]:
    """Yield :class:`Batch` objects covering ``texts``.

    Texts are grouped by token length (when ``sort_by_length``) to cut padding.
    Attention rows and columns of padding are set to zero. ``precision``: as in
    :func:`attention`.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if validate:
        texts, pairs = check_texts(m, texts, pairs, truncate=truncate)
    texts = list(texts)
    order = list(range(len(texts)))
    if sort_by_length and len(texts) > batch_size:
        lens = token_lengths(m, texts, list(pairs) if pairs is not None else None)
        order.sort(key=lambda i: lens[i])
    chunks = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    iterator: Iterable = chunks
    if progress:
        iterator = tqdm(chunks, desc=_("attention"), unit=_("batch"))
    for idx in iterator:
        batch_texts = [texts[i] for i in idx]
        batch_pairs = [pairs[i] for i in idx] if pairs is not None else None
        yield _forward(m, idx, batch_texts, batch_pairs, truncate, precision)


def _forward(m: LoadedModel, idx: list[int], texts: list[str], pairs: list[str] | None, truncate: bool,
             precision: str = "fp32") -> Batch:
    batch = encode(m, texts, pairs, truncate=truncate)  # (B, T) each
    maps = run(m, batch, keep=("maps",), precision=precision).stacked_maps().float()  # (B, L, H, T, T)
    mask = batch.attention_mask.to(maps.dtype)  # (B, T)
    maps = maps * mask[:, None, None, :, None] * mask[:, None, None, None, :]
    return Batch(
        index=list(idx),
        maps=maps.cpu(),
        lengths=batch.lengths,
        input_ids=batch.input_ids.cpu(),
        token_type_ids=batch.token_type_ids.cpu() if batch.token_type_ids is not None else None,
    )


# --------------------------------------------------------------------------- result


@dataclass
class Attention:
    """Attention maps of a list of texts.

    Attributes:
        tensor: float32 ``[texts, layers, heads, query, key]``; zeros outside
            each text's ``lengths[i] x lengths[i]`` block.
        tokens: the tokens of each text, special tokens included.
        lengths: tokens per text.
        texts: the input texts; ``pairs`` the second segments, if any.
        segments: segment id (0 or 1) of every token, per text.
        model_name: which model made the maps.
    """

    tensor: torch.Tensor
    tokens: list[list[str]]
    lengths: list[int]
    texts: list[str]
    pairs: list[str] | None = None
    segments: list[list[int]] = field(default_factory=list)
    model_name: str = ""
    offsets: list[list[tuple[int, int]]] = field(default_factory=list)
    word_ids: list[list[int | None]] = field(default_factory=list)

    def __len__(self) -> int:
        return self.tensor.shape[0]

    def __getitem__(self, i: int) -> torch.Tensor:
        """Maps of text ``i`` with padding trimmed: ``[layers, heads, n_i, n_i]``."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"text index {i} out of range for {len(self)} texts")
        n = self.lengths[i]
        return self.tensor[i, :, :, :n, :n]

    @property
    def n_layers(self) -> int:
        return self.tensor.shape[1]

    @property
    def n_heads(self) -> int:
        return self.tensor.shape[2]

    def head(self, i: int, layer: int, head: int) -> torch.Tensor:
        """One head's map for text ``i``: ``[n_i, n_i]``, rows are queries."""
        layer = check_index(layer, self.n_layers, "layer")
        head = check_index(head, self.n_heads, "head")
        return self[i][layer, head]

    def word_groups(self, i: int, words: Sequence[str] | None = None) -> tuple[list[list[int]], list[str]]:
        """Group text ``i``'s tokens into words.

        Args:
            i: text index.
            words: optional segmentation of the text (e.g. ``["王者荣耀", "怎么", "玩"]``);
                their concatenation must equal the text with spaces removed.
                Without it, English words come from the tokenizer's word ids and
                Chinese text is one word per character.

        Returns:
            ``(groups, labels)``: token indices per word (special tokens are
            their own words) and a readable label per word.
        """
        toks = self.tokens[i]
        if words is None:
            ids = self.word_ids[i] if self.word_ids else [None] * len(toks)
            groups, labels, last = [], [], object()
            for t, wid in enumerate(ids):
                seg = self.segments[i][t] if self.segments else 0
                key = (seg, wid)
                if wid is not None and key == last:
                    groups[-1].append(t)
                    labels[-1] += toks[t][2:] if toks[t].startswith("##") else toks[t]
                else:
                    groups.append([t])
                    labels.append(toks[t])
                last = key if wid is not None else object()
            return groups, labels
        return _groups_from_words(self.texts[i], list(words), self.offsets[i], toks)

    def word_level(self, i: int, words: Sequence[str] | None = None) -> tuple[torch.Tensor, list[str]]:
        """Word-level maps of text ``i`` (Clark et al. 2019).

        Attention *to* a word is the sum over its pieces (columns); attention
        *from* a word is the mean over its pieces (rows), so rows still sum to 1.

        Returns:
            ``(maps [layers, heads, W, W], labels)``.
        """
        groups, labels = self.word_groups(i, words)
        return to_word_level(self[i], groups), labels

    def to_bertviz(self, i: int = 0) -> tuple[tuple[torch.Tensor, ...], list[str]]:
        """``(attention, tokens)`` in the format of bertviz's ``head_view``/``model_view``:
        a tuple of ``layers`` tensors ``(1, heads, n, n)`` and the token list."""
        maps = self[i]
        return tuple(maps[l].unsqueeze(0) for l in range(maps.shape[0])), list(self.tokens[i])


def to_word_level(maps: torch.Tensor, groups: list[list[int]]) -> torch.Tensor:
    """Pool token maps ``[..., n, n]`` into word (or character) maps ``[..., W, W]``.

    Attention *to* a word is the sum of the columns of its pieces; attention
    *from* a word is the mean of the rows of its pieces. Groups may overlap: a
    piece that covers several units (``荣耀`` covers 荣 and 耀) belongs to each of
    them, and its column mass is split equally over them, so every row still
    sums to 1 when each token is in at least one group. With groups that
    partition the tokens this is the plain sum / mean.
    """
    n = maps.shape[-1]
    assign = torch.zeros(n, len(groups), dtype=maps.dtype)  # (n, W): 1 where token t is in group w
    for w, g in enumerate(groups):
        assign[list(g), w] = 1.0
    share = assign / assign.sum(dim=1, keepdim=True).clamp(min=1.0)  # (n, W): a token's mass split over its groups
    to_words = maps @ share  # (..., n, W): column sums
    sizes = assign.sum(dim=0)  # (W,)
    return (assign.T @ to_words) / sizes[:, None]  # (..., W, W): row means


def _groups_from_words(
    text: str, words: list[str], offsets: list[tuple[int, int]], toks: list[str]
) -> tuple[list[list[int]], list[str]]:
    joined = "".join(words)
    if joined.replace(" ", "") != text.replace(" ", ""):
        raise ValueError(
            f"words {words} do not spell the text {text!r}: their concatenation must equal "
            "the text (spaces ignored)."
        )
    # character spans of each word in the original text
    spans, pos = [], 0
    for w in words:
        w = w.strip()
        start = text.find(w, pos)
        if start < 0:
            raise ValueError(f"word {w!r} not found in {text!r} after position {pos}")
        spans.append((start, start + len(w)))
        pos = start + len(w)
    groups: list[list[int]] = []
    labels: list[str] = []
    word_of_tok: dict[int, int] = {}
    for t, (s, e) in enumerate(offsets):
        if e <= s:
            continue  # special token
        for w, (ws, we) in enumerate(spans):
            if ws <= s < we:
                word_of_tok[t] = w
                break
    current = None
    for t in range(len(toks)):
        w = word_of_tok.get(t)
        if w is not None and w == current:
            groups[-1].append(t)
            continue
        groups.append([t])
        labels.append(words[w].strip() if w is not None else toks[t])
        current = w
    return groups, labels


def attention(
    m: LoadedModel,
    texts: Sequence[str] | str,
    *,
    pairs: Sequence[str] | None = None,
    batch_size: int = 32,
    truncate: bool = False,
    progress: bool = False,
    precision: str = "fp32",
) -> Attention:
    """Attention maps of every layer and head for each text.

    Args:
        m: a model from :func:`attnlab.load_model`.
        texts: a string or a list of strings (not empty, none blank).
        pairs: optional second segments for sentence-pair inputs.
        batch_size: texts per forward pass.
        truncate: cut texts longer than the model's limit (with a warning)
            instead of raising.
        progress: show a progress bar.
        precision: ``"fp32"`` (exact, the default) or ``"bf16"`` (bfloat16 autocast: about 2x
            faster where the CPU or GPU has native bfloat16, :func:`attnlab.core.fast.choose_precision`;
            the maps come back as float32 and differ from fp32 by a few thousandths).

    Returns:
        :class:`Attention` with ``tensor`` float32 ``[texts, layers, heads, T, T]``,
        ``T`` the longest text's token count.
    """
    if precision not in MAP_PRECISIONS:
        raise ValueError(f"precision must be one of {MAP_PRECISIONS}, got {precision!r}")
    texts, pairs = check_texts(m, texts, pairs, truncate=truncate)
    args = (texts, pairs) if pairs is not None else (texts,)
    enc = m.tokenizer(
        *args, truncation=truncate, max_length=m.max_tokens if truncate else None,
        return_offsets_mapping=_is_fast(m), return_token_type_ids=True,
    )
    lengths = [len(ids) for ids in enc["input_ids"]]
    t_max = max(lengths)
    out = torch.zeros(len(texts), m.n_layers, m.n_heads, t_max, t_max)  # (N, L, H, T, T)
    for batch in iter_attention_batches(
        m, texts, pairs, batch_size=batch_size, truncate=truncate, progress=progress, validate=False,
        precision=precision,
    ):
        t = batch.maps.shape[-1]
        out[batch.index, :, :, :t, :t] = batch.maps
    tokens = [m.tokenizer.convert_ids_to_tokens(ids) for ids in enc["input_ids"]]
    segments = [list(s) for s in enc["token_type_ids"]] if "token_type_ids" in enc else []
    offsets = [list(map(tuple, o)) for o in enc["offset_mapping"]] if "offset_mapping" in enc else []
    word_ids = [enc.word_ids(i) for i in range(len(texts))] if _is_fast(m) else []
    return Attention(
        tensor=out, tokens=tokens, lengths=lengths, texts=texts, pairs=pairs,
        segments=segments, model_name=m.name, offsets=offsets, word_ids=word_ids,
    )


def _is_fast(m: LoadedModel) -> bool:
    return bool(getattr(m.tokenizer, "is_fast", False))
