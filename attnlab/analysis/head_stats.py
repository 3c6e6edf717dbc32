"""Per-head statistics of attention maps: what each head looks at, on average.

The numbers follow Clark et al. (2019) and Voita et al. (2019). For every
layer and head, over all *real* query rows of all texts (padding excluded):

``self_mass``, ``prev_mass``, ``next_mass``
    weight on the query's own position, the position before, the position
    after. The first row has no previous token and the last real row no next
    token: those rows contribute 0, as in Clark et al.'s per-token averages.
``cls_mass``, ``sep_mass``
    weight on the ``[CLS]`` / ``[SEP]`` positions (every ``[SEP]`` of a
    sentence pair counts).
``punct_mass``
    weight on punctuation tokens (every character a Unicode punctuation mark once a piece mark
    is off, e.g. ``.`` ``,`` ``，`` ``。`` ``▁,``: :func:`attnlab.analysis.token_roles.is_punctuation`);
    NaN when no tokens were given.
``entropy``
    entropy in nats of each row smoothed as ``0.9999 * a + 0.0001 / n``
    (Clark et al.), ``n`` the text's real token count.
``uniform_entropy``
    ``ln n`` averaged over the same rows: the entropy a head that spreads
    evenly would have. Compare the two; short inputs cannot reach the
    3.8 nats Clark et al. saw on 128-token inputs.
``confidence``
    mean of each row's largest weight (Voita et al.).
``argmax_offset``, ``offset_share``
    the most common offset ``key - query`` of the row maximum, and the share
    of rows whose maximum lies at that offset (Voita et al. call a head
    positional when that share is at least 90%).
``segment_mass``
    for sentence pairs only: weight on the ordinary (non-special) tokens of
    the query's own segment, the "block" pattern of Kovaleva et al.; NaN when
    no input was a pair.

Where [CLS] and [SEP] are. With tokens, positions whose token is a [CLS]-like
token (``[CLS]``, ``<s>``) or a [SEP]-like token (``[SEP]``, ``</s>``) count;
pass ``special_tokens`` (a loaded model, or ``{"cls": [...], "sep": [...]}``)
for other vocabularies. Without tokens the rule is positional: the first token
of each text is [CLS], the last is [SEP], and, when segment ids are given, the
last token of the first segment is a [SEP] too (sentence pairs).

Streaming. :func:`head_sums` turns one batch of maps into :class:`HeadSums`
(sums and row counts); sums of many batches add with ``+`` and
:meth:`HeadSums.finish` turns them into :class:`HeadStats`. So
:func:`head_stats` can cover thousands of texts without holding their maps.

Two entry points, one per starting point:

* :func:`head_stats` ``(m, texts)`` runs the model and streams its maps;
* :func:`head_stats_of` ``(att)`` describes maps you already have (an
  :class:`~attnlab.core.extract.Attention`, or a padded tensor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from attnlab.analysis.token_roles import is_punctuation
from attnlab.core.checks import check_index
from attnlab.core.distributions import entropy, smooth
from attnlab.core.extract import Attention, Batch, iter_attention_batches
from attnlab.core.language import _
from attnlab.core.models import LoadedModel

#: Clark et al.'s smoothing for entropies.
ENTROPY_EPS = 1e-4

DEFAULT_CLS = frozenset({"[CLS]", "<s>", "[cls]"})
DEFAULT_SEP = frozenset({"[SEP]", "</s>", "[sep]"})

#: Mass statistics accumulated as sums over rows, in table order.
MASS_NAMES = ("self_mass", "prev_mass", "next_mass", "cls_mass", "sep_mass", "punct_mass")
ROW_NAMES = MASS_NAMES + ("entropy", "uniform_entropy", "confidence")


# --------------------------------------------------------------------------- results


@dataclass
class HeadStats:
    """Per-head averages; every array is ``[layers, heads]``.

    See the module docstring for the definition of each field.
    """

    self_mass: np.ndarray
    prev_mass: np.ndarray
    next_mass: np.ndarray
    cls_mass: np.ndarray
    sep_mass: np.ndarray
    punct_mass: np.ndarray
    entropy: np.ndarray
    uniform_entropy: np.ndarray
    confidence: np.ndarray
    argmax_offset: np.ndarray
    offset_share: np.ndarray
    segment_mass: np.ndarray
    n_rows: int = 0
    n_texts: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        """``(layers, heads)``."""
        return tuple(self.self_mass.shape)  # type: ignore[return-value]

    @property
    def special_mass(self) -> np.ndarray:
        """``cls_mass + sep_mass``: the "vertical" stripes, ``[layers, heads]``."""
        return self.cls_mass + self.sep_mass

    @property
    def relative_entropy(self) -> np.ndarray:
        """``entropy / uniform_entropy`` in ``[0, 1]``: 1 = as spread as a uniform row."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.entropy / self.uniform_entropy

    def head(self, layer: int, head: int) -> dict[str, float]:
        """All statistics of one head (0-based indices) as a dict of numbers."""
        n_layers, n_heads = self.shape
        layer = check_index(layer, n_layers, "layer")
        head = check_index(head, n_heads, "head")
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                out[f.name] = v[layer, head].item()
        return out

    def rows(self, columns: Sequence[str] | None = None, digits: int = 3,
             layers: Sequence[int] | None = None) -> list[list[Any]]:
        """One row per head: ``["L1 H1", value, ...]`` (1-based labels), header first.

        ``layers`` (0-based) limits the rows to some layers."""
        cols = list(columns) if columns is not None else [
            "self_mass", "prev_mass", "next_mass", "cls_mass", "sep_mass", "punct_mass",
            "entropy", "uniform_entropy", "confidence", "argmax_offset", "offset_share",
        ]
        out: list[list[Any]] = [["head", *cols]]
        n_layers, n_heads = self.shape
        for l in (range(n_layers) if layers is None else [check_index(l, n_layers, "layer") for l in layers]):
            for h in range(n_heads):
                row: list[Any] = [f"L{l + 1} H{h + 1}"]
                for c in cols:
                    v = getattr(self, c)[l, h]
                    row.append(int(v) if c == "argmax_offset" else round(float(v), digits))
                out.append(row)
        return out

    def table(self, columns: Sequence[str] | None = None, digits: int = 3,
              layers: Sequence[int] | None = None) -> str:
        """A printable fixed-width table, one line per head (no pandas needed)."""
        return format_table(self.rows(columns, digits, layers))

    def __repr__(self) -> str:
        l, h = self.shape
        return _("HeadStats({layers} layers x {heads} heads, {rows} query rows from {texts} texts)").format(
            layers=l, heads=h, rows=self.n_rows, texts=self.n_texts)


def format_table(rows: list[list[Any]]) -> str:
    """Left-aligned first column, right-aligned others, columns padded to fit."""
    text = [[("nan" if isinstance(v, float) and math.isnan(v) else str(v)) for v in r] for r in rows]
    widths = [max(len(r[c]) for r in text) for c in range(len(text[0]))]
    lines = []
    for r in text:
        cells = [r[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells))
    return "\n".join(lines)


@dataclass
class HeadSums:
    """Running sums behind :class:`HeadStats`; add two with ``+``.

    Attributes:
        sums: statistic name -> float64 ``[layers, heads]`` sum over rows.
        n_rows: real query rows seen (per head, the same for all heads).
        n_punct_rows: rows of texts whose tokens were known (for ``punct_mass``).
        n_pair_rows: rows of sentence-pair texts (for ``segment_mass``).
        offset_counts: offset ``key - query`` -> int64 ``[layers, heads]``
            count of rows whose maximum lies there.
        n_texts: texts seen.
    """

    sums: dict[str, np.ndarray]
    n_rows: int = 0
    n_punct_rows: int = 0
    n_pair_rows: int = 0
    offset_counts: dict[int, np.ndarray] = field(default_factory=dict)
    n_texts: int = 0

    def __add__(self, other: "HeadSums") -> "HeadSums":
        if not isinstance(other, HeadSums):
            return NotImplemented
        shapes = {v.shape for v in [*self.sums.values(), *other.sums.values()]}
        if len(shapes) > 1:
            raise ValueError(f"cannot add sums of different models: shapes {sorted(shapes)}")
        sums = {k: self.sums[k] + other.sums[k] for k in self.sums}
        counts = {k: v.copy() for k, v in self.offset_counts.items()}
        for k, v in other.offset_counts.items():
            counts[k] = counts[k] + v if k in counts else v.copy()
        return HeadSums(
            sums=sums, n_rows=self.n_rows + other.n_rows,
            n_punct_rows=self.n_punct_rows + other.n_punct_rows,
            n_pair_rows=self.n_pair_rows + other.n_pair_rows,
            offset_counts=counts, n_texts=self.n_texts + other.n_texts,
        )

    def finish(self) -> HeadStats:
        """Divide by the row counts; pick the most common argmax offset per head."""
        if self.n_rows == 0:
            raise ValueError("no query rows were accumulated: give at least one non-empty text")
        nan = np.full_like(self.sums["self_mass"], np.nan)
        avg = {k: self.sums[k] / self.n_rows for k in ROW_NAMES if k != "punct_mass"}
        avg["punct_mass"] = self.sums["punct_mass"] / self.n_punct_rows if self.n_punct_rows else nan
        seg = self.sums["segment_mass"] / self.n_pair_rows if self.n_pair_rows else nan
        offsets = np.array(sorted(self.offset_counts))  # (K,)
        counts = np.stack([self.offset_counts[o] for o in offsets], axis=-1)  # (L, H, K)
        best = counts.argmax(axis=-1)  # (L, H): ties go to the most negative offset
        return HeadStats(
            **avg,
            argmax_offset=offsets[best].astype(int),
            offset_share=np.take_along_axis(counts, best[..., None], axis=-1)[..., 0] / self.n_rows,
            segment_mass=seg,
            n_rows=self.n_rows,
            n_texts=self.n_texts,
        )


# --------------------------------------------------------------------------- special tokens


def _special_sets(special_tokens: Any) -> tuple[set[str], set[str]]:
    """``(cls_like, sep_like)`` token strings from a model, a mapping, or the defaults."""
    if special_tokens is None:
        return set(DEFAULT_CLS), set(DEFAULT_SEP)
    if hasattr(special_tokens, "cls_token") and hasattr(special_tokens, "sep_token"):
        return {special_tokens.cls_token}, {special_tokens.sep_token}
    if isinstance(special_tokens, Mapping):
        if not {"cls", "sep"} <= set(special_tokens):
            raise ValueError('special_tokens must have keys "cls" and "sep", e.g. {"cls": ["[CLS]"], "sep": ["[SEP]"]}')
        return set(special_tokens["cls"]), set(special_tokens["sep"])
    raise TypeError(
        "special_tokens must be a loaded model, a mapping {'cls': [...], 'sep': [...]}, or None; "
        f"got {type(special_tokens).__name__}"
    )


def token_roles(
    lengths: Sequence[int],
    t_max: int,
    *,
    tokens: Sequence[Sequence[str]] | None = None,
    segments: Sequence[Sequence[int]] | torch.Tensor | None = None,
    special_tokens: Any = None,
) -> dict[str, torch.Tensor]:
    """Boolean masks ``(B, T)`` saying which key positions are [CLS], [SEP],
    punctuation, and which segment each position belongs to.

    Returns:
        ``{"cls", "sep", "punct", "segment"}``; ``segment`` is int64 ``(B, T)``
        (all 0 without segment ids); padding positions are False / 0.
    """
    b = len(lengths)
    cls = torch.zeros(b, t_max, dtype=torch.bool)
    sep = torch.zeros(b, t_max, dtype=torch.bool)
    punct = torch.zeros(b, t_max, dtype=torch.bool)
    seg = torch.zeros(b, t_max, dtype=torch.long)
    if segments is not None:
        for i, n in enumerate(lengths):
            seg[i, :n] = torch.as_tensor(list(segments[i])[:n], dtype=torch.long)
    if tokens is not None:
        cls_like, sep_like = _special_sets(special_tokens)
        for i, n in enumerate(lengths):
            for t, tok in enumerate(tokens[i][:n]):
                cls[i, t] = tok in cls_like
                sep[i, t] = tok in sep_like
                punct[i, t] = is_punctuation(tok)
    else:
        for i, n in enumerate(lengths):
            cls[i, 0] = True
            sep[i, n - 1] = True
            if segments is not None:
                second = (seg[i, :n] == 1).nonzero()
                if len(second):
                    sep[i, int(second[0]) - 1] = True  # the [SEP] that closes the first segment
    return {"cls": cls, "sep": sep, "punct": punct, "segment": seg}


# --------------------------------------------------------------------------- per batch


def _check_maps(maps: Any, lengths: Sequence[int] | None) -> tuple[torch.Tensor, list[int]]:
    if isinstance(maps, np.ndarray):
        maps = torch.from_numpy(maps)
    if not isinstance(maps, torch.Tensor):
        raise TypeError(f"attention must be an Attention or a tensor [N, L, H, T, T], got {type(maps).__name__}")
    if maps.ndim != 5 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"attention tensor must be [N, L, H, T, T], got shape {tuple(maps.shape)}")
    if lengths is None:
        raise ValueError(
            "lengths is required with a padded tensor: pass the real token count of each text "
            "(Attention.lengths), or pass the Attention object itself."
        )
    lengths = [int(n) for n in (lengths.tolist() if isinstance(lengths, torch.Tensor) else lengths)]
    if len(lengths) != maps.shape[0]:
        raise ValueError(f"got {len(lengths)} lengths for {maps.shape[0]} texts: give one per text")
    bad = [n for n in lengths if not 1 <= n <= maps.shape[-1]]
    if bad:
        raise ValueError(f"every length must be between 1 and T = {maps.shape[-1]}; got {bad[:5]}")
    return maps, lengths


def head_sums(
    maps: torch.Tensor,
    lengths: Sequence[int],
    *,
    tokens: Sequence[Sequence[str]] | None = None,
    segments: Sequence[Sequence[int]] | torch.Tensor | None = None,
    special_tokens: Any = None,
) -> HeadSums:
    """Sums of every statistic over the real rows of one batch.

    Args:
        maps: attention ``(B, L, H, T, T)``, zero outside each text.
        lengths: real token count of each text, ``B`` ints.
        tokens: token strings per text (for [CLS]/[SEP] by name and punctuation).
        segments: segment ids per text (0/1); texts with a second segment
            count toward ``segment_mass``.
        special_tokens: see :func:`token_roles`.

    Returns:
        :class:`HeadSums` (add batches with ``+``, then ``.finish()``).
    """
    maps, lengths = _check_maps(maps, lengths)
    if tokens is not None and len(tokens) != len(lengths):
        raise ValueError(f"got {len(tokens)} token lists for {len(lengths)} texts")
    maps = maps.double()
    b, n_layers, n_heads, t, _keys = maps.shape
    lens = torch.tensor(lengths)  # (B,)
    pos = torch.arange(t)  # (T,)
    valid = pos[None, :] < lens[:, None]  # (B, T): real rows / columns
    roles = token_roles(lengths, t, tokens=tokens, segments=segments, special_tokens=special_tokens)

    def row_sum(per_row: torch.Tensor, rows: torch.Tensor = valid) -> np.ndarray:
        """(B, L, H, T) -> (L, H): sum over the selected rows of every text."""
        return (per_row * rows[:, None, None, :]).sum(dim=(0, 3)).numpy()

    def col_mass(cols: torch.Tensor) -> torch.Tensor:
        """(B, T) column mask -> (B, L, H, T) weight each row puts on those columns."""
        return (maps * cols[:, None, None, None, :].to(maps.dtype)).sum(dim=-1)

    diag = maps.diagonal(dim1=-2, dim2=-1)  # (B, L, H, T): a[i, i]
    prev = torch.zeros_like(diag)
    prev[..., 1:] = maps.diagonal(offset=-1, dim1=-2, dim2=-1)  # a[i, i-1]
    nxt = torch.zeros_like(diag)
    nxt[..., :-1] = maps.diagonal(offset=1, dim1=-2, dim2=-1)  # a[i, i+1] (0 past the end)

    # entropy of smoothed rows; smoothing must not leak onto padding columns
    n = lens.to(maps.dtype)[:, None, None, None, None]  # (B, 1, 1, 1, 1)
    smoothed = smooth(maps, ENTROPY_EPS, n) * valid[:, None, None, None, :]  # (B, L, H, T, T)
    ent = entropy(smoothed)  # (B, L, H, T)
    uniform = torch.log(lens.to(maps.dtype))[:, None, None, None].expand_as(ent)  # (B, L, H, T)

    top, where = maps.max(dim=-1)  # (B, L, H, T)
    offsets = where - pos  # (B, L, H, T): key - query of the row maximum

    has_tokens = tokens is not None
    sums = {
        "self_mass": row_sum(diag),
        "prev_mass": row_sum(prev),
        "next_mass": row_sum(nxt),
        "cls_mass": row_sum(col_mass(roles["cls"])),
        "sep_mass": row_sum(col_mass(roles["sep"])),
        "punct_mass": row_sum(col_mass(roles["punct"])) if has_tokens else np.zeros((n_layers, n_heads)),
        "entropy": row_sum(ent),
        "uniform_entropy": row_sum(uniform),
        "confidence": row_sum(top),
    }

    # block pattern: weight on ordinary tokens of the query's own segment (pairs only)
    seg = roles["segment"]  # (B, T)
    is_pair = (seg * valid).amax(dim=1) > 0  # (B,)
    ordinary = valid & ~roles["cls"] & ~roles["sep"]  # (B, T)
    same = (seg[:, :, None] == seg[:, None, :]) & ordinary[:, None, :]  # (B, Tq, Tk)
    own = (maps * same[:, None, None].to(maps.dtype)).sum(dim=-1)  # (B, L, H, T)
    sums["segment_mass"] = row_sum(own, valid & is_pair[:, None])

    counts: dict[int, np.ndarray] = {}
    real_offsets = offsets[valid[:, None, None, :].expand_as(offsets)].view(-1)
    for o in torch.unique(real_offsets).tolist():
        counts[int(o)] = row_sum((offsets == o).to(maps.dtype)).astype(np.int64)

    n_rows = int(sum(lengths))
    return HeadSums(
        sums=sums, n_rows=n_rows, n_punct_rows=n_rows if has_tokens else 0,
        n_pair_rows=int(lens[is_pair].sum()), offset_counts=counts, n_texts=b,
    )


def empty_sums(n_layers: int, n_heads: int) -> HeadSums:
    """Zero sums to start an accumulation: ``total = empty_sums(L, H); total += head_sums(...)``."""
    zeros = {k: np.zeros((n_layers, n_heads)) for k in (*ROW_NAMES, "segment_mass")}
    return HeadSums(sums=zeros)


# --------------------------------------------------------------------------- one call


def head_stats_of(
    att: Attention | torch.Tensor | np.ndarray,
    *,
    tokens: Sequence[Sequence[str]] | None = None,
    lengths: Sequence[int] | None = None,
    special_tokens: Any = None,
    segments: Sequence[Sequence[int]] | None = None,
) -> HeadStats:
    """Per-head statistics of attention maps you already have.

    Args:
        att: an :class:`attnlab.core.extract.Attention` (tokens, lengths and segment
            ids are taken from it), or a zero-padded tensor ``[N, L, H, T, T]``.
        tokens: token lists, one per text (tensor input): needed for
            punctuation and to find [CLS]/[SEP] by name; without them
            [CLS]/[SEP] are found by position (see the module docstring).
        lengths: real token count per text (required with a tensor).
        special_tokens: a loaded model or ``{"cls": [...], "sep": [...]}``.
        segments: segment ids per text, for sentence pairs (tensor input).

    Returns:
        :class:`HeadStats`, every field ``[L, H]``.

    Example::

        att = al.attention(m, texts)
        stats = head_stats_of(att)
        print(stats.table())
    """
    if isinstance(att, Attention):
        tokens = att.tokens if tokens is None else tokens
        lengths = att.lengths if lengths is None else lengths
        if segments is None and att.pairs is not None and att.segments:
            segments = att.segments
        att = att.tensor
    maps, lengths = _check_maps(att, lengths)
    return head_sums(maps, lengths, tokens=tokens, segments=segments, special_tokens=special_tokens).finish()


def head_stats(
    m: LoadedModel,
    texts: Sequence[str],
    pairs: Sequence[str] | None = None,
    *,
    batch_size: int = 32,
    progress: bool = False,
) -> HeadStats:
    """Statistics of ``m``'s heads over many texts, streamed batch by batch.

    Only one batch of maps is in memory at a time, so thousands of texts are
    fine. Tokens come from the model's tokenizer, so [CLS]/[SEP] are found by
    name (``m.cls_token``, ``m.sep_token``). For maps already computed, use
    :func:`head_stats_of`.

    Args:
        m: a :class:`attnlab.core.models.LoadedModel`.
        texts: the texts (validated like :func:`attnlab.attention`).
        pairs: optional second segments (for the block pattern).
        batch_size: texts per forward pass.
        progress: show a tqdm progress bar.

    Returns:
        :class:`HeadStats`, every field ``[L, H]``.
    """
    if not isinstance(m, LoadedModel):
        raise TypeError(f"head_stats(m, texts) needs a loaded model first, got {type(m).__name__}; "
                        "for attention maps you already have, use head_stats_of(att)")
    return stats_of_batches(m, iter_attention_batches(m, texts, pairs, batch_size=batch_size, progress=progress))


def stats_of_batches(m: LoadedModel, batches: Iterable[Batch]) -> HeadStats:
    """:class:`HeadStats` of ``m`` (every field ``[L, H]``) over ``batches`` of its maps, summed in their
    order with one batch in memory at a time."""
    total = empty_sums(m.n_layers, m.n_heads)
    for batch in batches:
        total = total + batch_sums(m, batch)
    return total.finish()


def batch_sums(m: LoadedModel, batch: Batch) -> HeadSums:
    """:class:`HeadSums` of one :class:`attnlab.core.extract.Batch` of model ``m``.

    The building block for accumulating over your own stream of batches::

        total = empty_sums(m.n_layers, m.n_heads)
        for batch in iter_attention_batches(m, texts, batch_size=64):
            total = total + batch_sums(m, batch)
        stats = total.finish()
    """
    lengths = batch.lengths.tolist()
    tokens = [m.tokenizer.convert_ids_to_tokens(batch.input_ids[i, :n].tolist()) for i, n in enumerate(lengths)]
    segments = batch.token_type_ids.tolist() if batch.token_type_ids is not None else None
    return head_sums(batch.maps, lengths, tokens=tokens, segments=segments, special_tokens=m)


def text_sums(m: LoadedModel, batch: Batch) -> list[HeadSums]:
    """One :class:`HeadSums` per text of a batch (their sum is :func:`batch_sums`).

    Per-text sums let an interval resample the *texts*: add the sums of a
    resample and :meth:`HeadSums.finish` them (see
    :mod:`attnlab.analysis.pattern_shares`).
    """
    lengths = batch.lengths.tolist()
    segments = batch.token_type_ids.tolist() if batch.token_type_ids is not None else None
    out = []
    for i, n in enumerate(lengths):
        tokens = [m.tokenizer.convert_ids_to_tokens(batch.input_ids[i, :n].tolist())]
        maps = batch.maps[i:i + 1, :, :, :n, :n]  # (1, L, H, n, n)
        segs = [segments[i][:n]] if segments is not None else None
        out.append(head_sums(maps, [n], tokens=tokens, segments=segs, special_tokens=m))
    return out
