"""Mean attention maps over many texts of one length, streamed and mergeable.

The source article averages the maps of 100,000 queries of the same length
and reads each head's *mean* map: a sharp pattern means the head does the
same thing whatever the query (position-dominated), a flat one means it
moves with the content. :func:`mean_attention` computes that mean, exactly,
for any number of texts:

* **Streaming.** Texts are pulled from any iterable (a list, a file, a
  generator) one batch at a time; memory does not grow with their number.
* **Exact and mergeable.** :class:`MeanAttention` keeps float64 *sums*, sums
  of squares and a count. Mean and (unbiased) variance follow from them, and
  two accumulators over disjoint shards add up to the accumulator of the
  whole (:meth:`MeanAttention.merge`), which is what the multi-process run in
  :mod:`attnlab.tools.distributed` all-reduces.
* **One length.** Maps of different sizes cannot be averaged cell by cell. A
  text of another token length is an error naming it, or, with
  ``bucket=True``, goes to its own bucket (a dict length -> MeanAttention).
* **Fast.** The forward pass of :mod:`attnlab.core.fast` records only the
  requested layers and stops after the deepest (``layers=range(4)`` runs 4
  of 12 layers); ``precision="int8"`` or ``"bf16"`` are opt-in and report
  their measured deviation from fp32.
* **Early stopping.** With ``tolerance``, the run stops once the largest
  standard error of any cell of the mean is below it.

Per-head **fixedness** (how much of what a query's row says its mean map
already says, against a pattern-free null) comes from the same sums: see
:meth:`MeanAttention.fixedness` and :mod:`attnlab.analysis.fixedness`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import torch
from torch.utils.data import TensorDataset
from tqdm.auto import tqdm

from attnlab.core.atomic import atomic_path, write_text_atomic
from attnlab.core.checks import check_positive_int, check_positive_number
from attnlab.core.distributions import content_keys, entropy, smooth, special_mask, special_token_ids
from attnlab.core.extract import check_text
from attnlab.core.fast import check_layers, choose_precision, forward_maps
from attnlab.core.language import _
from attnlab.core.models import LoadedModel
from attnlab.core.run import encode_ids

#: Clark et al.'s smoothing for entropies (0.9999 * a + 0.0001 / n).
ENTROPY_EPS = 1e-4

#: Queries of a reduced-precision run that also run in fp32 to measure the deviation
#: (one batch; its cost vanishes over long runs). 0 switches the check off.
DEVIATION_SAMPLE = 256


# --------------------------------------------------------------------------- the accumulator


@dataclass
class MeanAttention:
    """Streaming sums of attention maps of ``count`` texts of one token length.

    Attributes:
        total: float64 ``[layers, heads, n, n]``, the sum of the maps.
        total_sq: float64 ``[layers, heads, n, n]``, the sum of squared maps.
        entropy_total: float64 ``[layers, heads, n]``, the sum over texts of
            each query row's entropy (smoothed like Clark et al.), for
            :meth:`fixedness`, :meth:`js_score` and :meth:`mean_entropy`.
        count: number of texts.
        layers: the 0-based model layers of the first axis.
        length: ``n``, tokens per text including special tokens.
        tokens: the tokens of the first text (axis labels for plots).
        model_name: which model made the maps.
        precision: ``"fp32"``, ``"int8"`` or ``"bf16"``.
        deviation: for reduced precision, the largest absolute difference
            between this precision's and fp32's mean maps over the first
            queries (``DEVIATION_SAMPLE``); ``None`` for fp32.
        stopped_early: the ``tolerance`` was reached before the texts ran out.
        special: the key positions of the special tokens ([CLS]/[SEP], ``<s>``/``</s>``), the same
            in every text of one length; empty when unknown.
        content: the same sums for the **content-key reading** of the same maps
            (:func:`attnlab.core.distributions.content_keys`: special columns left out, rows
            renormalised), maps ``[layers, heads, n, n_content]``; None when ``special`` is empty.
            A row with no weight on any content key counts as uniform over them. One pass fills
            both readings.
    """

    total: torch.Tensor
    total_sq: torch.Tensor
    entropy_total: torch.Tensor
    count: int = 0
    layers: list[int] = field(default_factory=list)
    length: int = 0
    tokens: list[str] = field(default_factory=list)
    model_name: str = ""
    precision: str = "fp32"
    deviation: float | None = None
    stopped_early: bool = False
    special: list[int] = field(default_factory=list)
    content: "MeanAttention | None" = None

    # ----------------------------------------------------------------- building

    @classmethod
    def empty(cls, n_layers: int, n_heads: int, length: int, *, layers: Sequence[int] | None = None,
              **meta) -> "MeanAttention":
        """A zero accumulator for maps ``[n_layers, n_heads, length, length]``.

        With ``special`` (key positions of the special tokens, in ``meta``), it also holds a zero
        :attr:`content` accumulator for maps ``[n_layers, n_heads, length, length - len(special)]``.
        """
        keys = meta.pop("keys", length)
        shape = (n_layers, n_heads, length, keys)
        acc = cls(
            total=torch.zeros(shape, dtype=torch.float64),
            total_sq=torch.zeros(shape, dtype=torch.float64),
            entropy_total=torch.zeros(shape[:3], dtype=torch.float64),
            layers=list(layers) if layers is not None else list(range(n_layers)),
            length=length,
            **meta,
        )
        acc.special = sorted(int(k) for k in acc.special)
        if acc.special and keys == length and len(acc.special) < length:
            acc.content = cls.empty(n_layers, n_heads, length, layers=acc.layers, keys=length - len(acc.special),
                                    model_name=acc.model_name, precision=acc.precision)
        return acc

    def special_keys(self) -> torch.Tensor:
        """``[n]`` booleans, True at the special key positions :attr:`special`."""
        mask = torch.zeros(self.total.shape[-1], dtype=torch.bool)
        mask[self.special] = True
        return mask

    def add(self, maps: torch.Tensor) -> "MeanAttention":
        """Add a batch of maps ``(B, layers, heads, n, n)`` in place; returns self."""
        if maps.dim() != 5 or tuple(maps.shape[1:]) != tuple(self.total.shape):
            raise ValueError(
                f"maps of shape {tuple(maps.shape)} do not fit this accumulator: expected "
                f"(B, {', '.join(map(str, self.total.shape))})"
            )
        # sums over the batch are taken where the maps are (CPU or GPU), then added where the
        # sums live (the CPU, or the GPU during a run there: no synchronisation per batch)
        where = self.total.device
        self.total += maps.sum(dim=0, dtype=torch.float64).to(where)  # (L, H, n, n)
        self.total_sq += maps.square().sum(dim=0, dtype=torch.float64).to(where)
        self.entropy_total += entropy(smooth(maps, ENTROPY_EPS)).sum(dim=0, dtype=torch.float64).to(where)  # (L, H, n)
        self.count += maps.shape[0]
        if self.content is not None:
            self.content.add(content_rows(maps, self.special_keys().to(maps.device)))  # (B, L, H, n, n_content)
        return self

    def merge(self, other: "MeanAttention") -> "MeanAttention":
        """The accumulator of both shards (a new object): sums and counts add."""
        if (self.layers, self.length, self.total.shape) != (other.layers, other.length, other.total.shape):
            raise ValueError(
                f"cannot merge means of layers {self.layers} length {self.length} with layers "
                f"{other.layers} length {other.length}: they describe different maps"
            )
        both = self.special == other.special and self.content is not None and other.content is not None
        return MeanAttention(
            total=self.total + other.total,
            total_sq=self.total_sq + other.total_sq,
            entropy_total=self.entropy_total + other.entropy_total,
            count=self.count + other.count,
            layers=list(self.layers),
            length=self.length,
            tokens=list(self.tokens or other.tokens),
            model_name=self.model_name or other.model_name,
            precision=self.precision,
            deviation=_max_or_none(self.deviation, other.deviation),
            stopped_early=self.stopped_early or other.stopped_early,
            special=list(self.special) if both else [],
            content=self.content.merge(other.content) if both else None,
        )

    __add__ = merge

    # ----------------------------------------------------------------- results

    @property
    def mean(self) -> torch.Tensor:
        """float64 ``[layers, heads, n, n]``: the mean map of every head."""
        self._need(1)
        return self.total / self.count

    @property
    def var(self) -> torch.Tensor:
        """float64 ``[layers, heads, n, n]``: unbiased variance across texts (like ``torch.var``)."""
        self._need(2)
        centred = self.total_sq - self.total * self.total / self.count
        return (centred / (self.count - 1)).clamp_min(0.0)

    @property
    def stderr(self) -> torch.Tensor:
        """float64 ``[layers, heads, n, n]``: standard error of each cell of the mean."""
        return (self.var / self.count).sqrt()

    def mean_entropy(self) -> torch.Tensor:
        """``[layers, heads]``: Clark et al.'s per-head entropy, the entropy in nats of
        each smoothed query row, averaged over rows and texts."""
        self._need(1)
        return self.entropy_total.mean(dim=-1) / self.count

    def entropy_of_mean(self) -> torch.Tensor:
        """``[layers, heads]``: entropy of the rows of the *mean* map (smoothed), averaged over rows."""
        return entropy(smooth(self.mean, ENTROPY_EPS)).mean(dim=-1)

    def fixedness(self) -> torch.Tensor:
        """``[layers, heads]``: the information share ``(KL(p̄ || u) - b) / (E_i KL(p_i || u) - b)``.

        ``KL(. || u) = ln n - H(.)`` is how far a row is from uniform, ``p̄`` the
        mean row and ``b`` what the mean of the same rows would keep if each
        were shuffled over its key positions (a head with no pattern at all).
        Summed over query rows before dividing. 1 when every text gets the same
        map (sharp or diffuse), about 0 for rows drawn independently per text,
        whatever their sharpness; NaN where the rows carry no information
        (uniform heads). Derivation, null and labels: :mod:`attnlab.analysis.fixedness`.
        """
        self._need(1)
        return fixedness_from_sums(self.total, self.total_sq, self.entropy_total, torch.tensor(float(self.count)))

    def js_score(self) -> torch.Tensor:
        """``[layers, heads]``: ``1 - mean_r JS_r / ln n`` in [0, 1], where ``JS_r = H(p̄_r) - mean_i H(p_{i,r})``
        is the Jensen-Shannon divergence among all the texts' rows ``r`` (equal weights).

        1 when every text gets the same map. It is **not** a fixedness: rows
        drawn independently for every text score high whenever they are diffuse
        (i.i.d. Dirichlet(2) rows score about 0.92), because ``ln n`` is the
        wrong yardstick for rows that carry little information. The course's
        fixedness divides by the rows' own information and compares each head
        with a null of its own: :meth:`fixedness`.
        Kept to show why (lesson 08) and as a streaming check.
        """
        self._need(1)
        return js_score_from_sums(self.total, self.entropy_total, torch.tensor(float(self.count)))

    def sharpness(self) -> torch.Tensor:
        """``[layers, heads]``: how far the *mean* map is from uniform, ``1 - H(p̄) / ln n``
        averaged over rows; 0 for a flat mean map. This is the article's visual
        criterion (a mean map that "still shows a pattern")."""
        return 1.0 - self.entropy_of_mean() / math.log(self.total.shape[-1])

    def special_mass(self) -> dict[str, torch.Tensor]:
        """``{"cls": [layers, heads], "sep": [layers, heads]}``: mean attention to the first
        ([CLS]) and last ([SEP]) position, over rows and texts (exact from the mean map)."""
        mean = self.mean
        return {"cls": mean[..., 0].mean(dim=-1), "sep": mean[..., -1].mean(dim=-1)}

    def special_weight(self) -> torch.Tensor:
        """``[layers, heads]``: mean weight on the special keys :attr:`special` (all of them together),
        over query rows and texts (exact from the mean map); zeros when :attr:`special` is empty."""
        return self.mean[..., self.special].sum(dim=-1).mean(dim=-1)

    def _need(self, k: int) -> None:
        if self.count < k:
            raise ValueError(f"this accumulator holds {self.count} text(s); at least {k} needed")

    # ----------------------------------------------------------------- saving

    def state_dict(self) -> dict:
        """Plain tensors, ints and strings (loadable with ``torch.load(weights_only=True)``)."""
        return {
            "total": self.total, "total_sq": self.total_sq, "entropy_total": self.entropy_total,
            "count": self.count, "layers": list(self.layers), "length": self.length,
            "tokens": list(self.tokens), "model_name": self.model_name, "precision": self.precision,
            "deviation": self.deviation, "stopped_early": self.stopped_early,
            "special": list(self.special),
            "content": self.content.state_dict() if self.content is not None else None,
        }

    @classmethod
    def from_state_dict(cls, state: dict) -> "MeanAttention":
        """The accumulator of :meth:`state_dict` (files saved before the content reading load without it)."""
        state = dict(state)
        content = state.pop("content", None)
        acc = cls(**state)
        acc.content = cls.from_state_dict(content) if content is not None else None
        return acc

    def save(self, path: str | Path) -> Path:
        """Write the accumulator to ``path`` (torch format), atomically: an interrupted
        save leaves the previous file as it was."""
        path = Path(path)
        with atomic_path(path) as tmp:
            torch.save(self.state_dict(), tmp)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "MeanAttention":
        return cls.from_state_dict(torch.load(Path(path), weights_only=True))

    def __repr__(self) -> str:
        return (f"MeanAttention(count={self.count}, layers={self.layers}, length={self.length}, "
                f"precision={self.precision!r}, model={self.model_name!r})")


def content_rows(maps: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """:func:`~attnlab.core.distributions.content_keys` of maps ``[..., n, n]`` ->
    ``[..., n, n_content]``, a row without any content weight replaced by the uniform row
    (it prefers no content token)."""
    rows = content_keys(maps, special)  # (..., n, n_content), NaN rows where no content weight
    return torch.nan_to_num(rows, nan=1.0 / rows.shape[-1])


def _max_or_none(a: float | None, b: float | None) -> float | None:
    vals = [v for v in (a, b) if v is not None]
    return max(vals) if vals else None


# --------------------------------------------------------------------------- the stream


def text_batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    """Consecutive lists of ``size`` texts (the last one may be shorter), read lazily from ``texts``."""
    it = iter(texts)
    while batch := list(itertools.islice(it, size)):
        yield batch


def checked_token_ids(m: LoadedModel, texts: list[str], start: int = 0) -> list[list[int]]:
    """Token ids (special tokens included, no padding) of a batch of texts, checked one by one.

    Args:
        m: the loaded model (its tokenizer and token limit).
        texts: a batch of ``B`` strings.
        start: index of ``texts[0]`` in the whole stream, so errors name the right text.

    Returns:
        ``B`` lists of token ids; their lengths may differ.

    Raises:
        TypeError: a text is not a string.
        ValueError: a text has nothing visible, holds a lone surrogate, or is longer than the model's limit.
    """
    for k, t in enumerate(texts):
        check_text(t, f"text {start + k}")  # the one text check of core.extract
    ids = m.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
    for k, row in enumerate(ids):
        if len(row) > m.max_tokens:
            raise ValueError(
                f"text {start + k} ({texts[k][:40]!r}) has {len(row)} tokens, more than this "
                f"model's limit of {m.max_tokens}"
            )
    return ids


def _progress(total: int | None, enabled: bool) -> tqdm:
    return tqdm(total=total, unit=_(" queries"), desc=_("mean attention"), disable=not enabled, smoothing=0.1)


#: batches a background tokeniser may hold ready ahead of the forward pass
PREFETCH_DEPTH = 4


def prefetched(items: Iterable, depth: int = PREFETCH_DEPTH) -> Iterator:
    """The items of ``items``, produced by a background thread up to ``depth`` ahead of the reader.

    Same items, same order; an exception in the producer is raised in the
    reader at the point where it happened. Used to tokenise the next batches
    while the current one runs through the model (a fast tokenizer releases
    the interpreter lock while it works). When the reader stops early, the
    producer stops too (it may have read up to ``depth + 1`` items ahead).
    """
    out: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(message: tuple) -> bool:
        while not stop.is_set():
            try:
                out.put(message, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the reader
            put(("error", exc))

    worker = threading.Thread(target=produce, name="attnlab-tokeniser", daemon=True)
    worker.start()
    try:
        while True:
            kind, item = out.get()
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item
    finally:
        stop.set()
        worker.join(timeout=5)


def _id_chunks_from_texts(m: LoadedModel, texts: Iterable[str], batch_size: int) -> Iterator[tuple]:
    """``(start, ids, texts)`` per chunk of ``batch_size`` texts: checked token ids (lists)."""
    seen = 0
    for chunk in text_batches(texts, batch_size):
        yield seen, checked_token_ids(m, chunk, seen), chunk
        seen += len(chunk)


def _id_chunks_from_ids(m: LoadedModel, token_ids, batch_size: int) -> Iterator[tuple]:
    """``(start, ids, None)`` per chunk of pre-tokenised input: a ``(N, T)`` tensor (or a
    TensorDataset holding one) is sliced, other iterables of id lists are batched."""
    if isinstance(token_ids, TensorDataset):
        token_ids = token_ids.tensors[0]
    if isinstance(token_ids, torch.Tensor):
        if token_ids.dim() != 2 or token_ids.dtype.is_floating_point:
            raise ValueError(f"token_ids must be an integer (N, T) tensor, got {tuple(token_ids.shape)} "
                             f"{token_ids.dtype}")
        if token_ids.shape[1] > m.max_tokens:
            raise ValueError(f"token_ids rows have {token_ids.shape[1]} tokens, more than this model's "
                             f"limit of {m.max_tokens}")
        for start in range(0, token_ids.shape[0], batch_size):
            yield start, token_ids[start:start + batch_size], None
        return
    seen = 0
    it = iter(token_ids)
    while rows := [list(map(int, r)) for r in itertools.islice(it, batch_size)]:
        for k, row in enumerate(rows):
            if len(row) > m.max_tokens:
                raise ValueError(f"token_ids row {seen + k} has {len(row)} tokens, more than this model's "
                                 f"limit of {m.max_tokens}")
            if not row:
                raise ValueError(f"token_ids row {seen + k} is empty")
        yield seen, rows, None
        seen += len(rows)


def _rows_by_length(ids) -> Iterator[tuple[int, list[int], object]]:
    """``(length, positions, rows)`` groups of one chunk, in order of first appearance.
    A tensor chunk is one group; list rows are grouped by their length."""
    if isinstance(ids, torch.Tensor):
        yield ids.shape[1], list(range(ids.shape[0])), ids
        return
    groups: dict[int, list[int]] = {}
    for k, row in enumerate(ids):
        groups.setdefault(len(row), []).append(k)
    for n, where in groups.items():
        yield n, where, [ids[k] for k in where]


def mean_attention(
    m: LoadedModel,
    texts: Iterable[str] | None = None,
    batch_size: int = 256,
    progress: bool = True,
    layers: Sequence[int] | int | None = None,
    bucket: bool = False,
    tolerance: float | None = None,
    precision: str = "fp32",
    *,
    token_ids: "Iterable[Sequence[int]] | torch.Tensor | TensorDataset | None" = None,
    background: bool = False,
    check_every: int | None = None,
) -> "MeanAttention | dict[int, MeanAttention]":
    """Mean and variance of every head's attention map over texts of one token length.

    Args:
        m: a model from :func:`attnlab.load_model`.
        texts: any iterable of strings (list, file, generator); read once, a
            batch at a time, never held whole.
        batch_size: texts per forward pass (larger is faster up to a point).
        progress: show a tqdm bar counting queries and queries/s.
        layers: 0-based layers to average (``None``: all; ``range(4)`` for the
            article's layers 1-4). The model runs only up to the deepest one.
        bucket: group texts by token length and return ``{length: MeanAttention}``
            instead of raising on a text of another length.
        tolerance: stop once the largest standard error of any cell of the
            mean is below this; ``result.count`` says after how many texts
            (``result.stopped_early`` whether it stopped before the end).
        precision: ``"auto"`` (bf16 where the hardware runs it natively, else
            fp32: see :func:`attnlab.core.fast.choose_precision`), ``"fp32"``
            (exact, default), ``"tf32"`` (TensorFloat-32 matrix products on a
            GPU; fp32 on a CPU), ``"int8"`` (dynamic quantisation of the linear
            layers, CPU) or ``"bf16"`` (autocast). For the reduced ones the
            first queries also run in fp32 and ``result.deviation`` is the
            largest difference of the mean maps.
        token_ids: instead of ``texts``, pre-tokenised input (special tokens
            included): an integer ``(N, T)`` tensor (on the CPU or already on
            the model's device), a ``TensorDataset`` holding one, or an iterable
            of id lists. Nothing is tokenised; the result equals the text path's.
        background: tokenise the next batches in a background thread while the
            current one runs (same batches, same order, same result; up to
            :data:`PREFETCH_DEPTH` batches are read ahead of the forward pass).
        check_every: with ``tolerance``, test the standard error after every
            ``check_every`` chunks of ``batch_size`` texts (each test
            synchronises a GPU); default 1 on a CPU, 16 on a GPU.

    Returns:
        :class:`MeanAttention` with ``.mean``, ``.var``, ``.stderr``
        ``[layers, heads, n, n]`` and ``.count``; ``n`` counts special tokens.
        With ``bucket=True``: a dict from ``n`` to :class:`MeanAttention`. The
        sums are on the CPU; on a GPU they stay on the device during the run.

    Raises:
        ValueError: no texts, a text of another token length (without
            ``bucket``), an empty or too long text, a layer out of range, a
            batch size below 1, a tolerance not above 0, an unknown precision,
            both or neither of ``texts`` and ``token_ids``.
        TypeError: a text is not a string; a batch size that is not an int
            (``1.5``, ``None``, ``True``); a tolerance that is not a number
            (``True`` is not 1).
    """
    if (texts is None) == (token_ids is None):
        raise ValueError("pass texts or token_ids (pre-tokenised input), exactly one of them")
    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of strings, not one string: wrap it in a list")
    batch_size = check_positive_int(batch_size, "batch_size")
    precision = choose_precision(m, precision)[0]  # "auto": bf16 only where it is native
    if tolerance is not None:
        tolerance = check_positive_number(tolerance, "tolerance")
    if tolerance is not None and bucket:
        raise ValueError("tolerance works on one length at a time: use bucket=False with same-length texts")
    if check_every is None:
        check_every = 1 if m.device.type == "cpu" else 16
    check_every = check_positive_int(check_every, "check_every")
    chosen = check_layers(m, layers)
    source = texts if texts is not None else token_ids
    total = len(source) if hasattr(source, "__len__") else None
    chunks = (_id_chunks_from_texts(m, texts, batch_size) if texts is not None
              else _id_chunks_from_ids(m, token_ids, batch_size))
    if background:
        chunks = prefetched(chunks)
    runner = _Runner(m, chosen, precision)
    buckets: dict[int, MeanAttention] = {}
    pending: dict[int, list] = {}
    first: tuple[int, str] | None = None  # (length, what) that fixes the length
    with _progress(total, progress) as bar:
        for i, (seen, ids, chunk) in enumerate(chunks):
            for n, where, rows in _rows_by_length(ids):
                if first is None:
                    first = (n, repr(chunk[where[0]]) if chunk is not None else "(token ids)")
                elif n != first[0] and not bucket:
                    k = where[0]
                    what = repr(chunk[k]) if chunk is not None else "(token ids)"
                    raise ValueError(
                        f"text {seen + k} ({what}) has {n} tokens but text 0 ({first[1]}) has "
                        f"{first[0]} (special tokens included): mean maps need texts of one token "
                        "length. Keep only texts of one length, or pass bucket=True for one mean per length."
                    )
                if isinstance(rows, torch.Tensor) and not pending.get(n) and rows.shape[0] == batch_size:
                    runner.run(buckets, n, rows)  # a full tensor batch goes straight through
                    bar.update(batch_size)
                    continue
                rows = rows.tolist() if isinstance(rows, torch.Tensor) else rows
                pending.setdefault(n, []).extend(rows)
            for n in list(pending):
                while len(pending[n]) >= batch_size:
                    rows, pending[n] = pending[n][:batch_size], pending[n][batch_size:]
                    runner.run(buckets, n, rows)
                    bar.update(len(rows))
            if (tolerance is not None and first is not None and first[0] in buckets
                    and (i + 1) % check_every == 0):
                acc = buckets[first[0]]
                if acc.count >= 2 and (largest := float(acc.stderr.max())) < tolerance:
                    acc.stopped_early = True
                    if progress:
                        bar.write(_("stopped after {n} queries: the largest standard error of any cell is "
                                            "{largest:.2g} < tolerance {tolerance:g}").format(
                                    n=acc.count, largest=largest, tolerance=tolerance))
                    break
        else:
            for n, rows in pending.items():
                if rows:
                    runner.run(buckets, n, rows)
                    bar.update(len(rows))
    if first is None:
        raise ValueError("texts is empty: pass at least one string of the length you want to average")
    for acc in buckets.values():
        _to_host(acc)  # the one synchronisation of a GPU run
    return dict(sorted(buckets.items())) if bucket else buckets[first[0]]


def _sum_device(m: LoadedModel) -> torch.device:
    """Where the float64 sums live during a run: on a CUDA GPU, else on the CPU
    (Apple's MPS has no float64)."""
    return m.device if m.device.type == "cuda" else torch.device("cpu")


def _to_host(acc: MeanAttention) -> MeanAttention:
    acc.total, acc.total_sq, acc.entropy_total = acc.total.cpu(), acc.total_sq.cpu(), acc.entropy_total.cpu()
    if acc.content is not None:
        _to_host(acc.content)
    return acc


def _to_device(acc: MeanAttention, device: torch.device) -> MeanAttention:
    acc.total, acc.total_sq = acc.total.to(device), acc.total_sq.to(device)
    acc.entropy_total = acc.entropy_total.to(device)
    if acc.content is not None:
        _to_device(acc.content, device)
    return acc


class _Runner:
    """Runs batches of one length through the fast forward and accumulates them on the sums' device."""

    def __init__(self, m: LoadedModel, layers: list[int], precision: str) -> None:
        self.m, self.layers, self.precision = m, layers, precision
        self.device = _sum_device(m)
        self.reference: dict[int, MeanAttention] = {}  # fp32 sums of the first queries (reduced precision)
        self.checked: dict[int, MeanAttention] = {}  # reduced-precision sums of the same queries

    def _empty(self, n: int, **meta) -> MeanAttention:
        acc = MeanAttention.empty(len(self.layers), self.m.n_heads, n, layers=self.layers, **meta)
        return _to_device(acc, self.device)

    def run(self, buckets: dict[int, MeanAttention], n: int, rows) -> None:
        m = self.m
        acc = buckets.get(n)
        if acc is None:
            first = rows[0].tolist() if isinstance(rows, torch.Tensor) else rows[0]
            special = torch.nonzero(special_mask(first, special_token_ids(m.tokenizer))).flatten().tolist()
            acc = buckets[n] = self._empty(n, model_name=m.name, precision=self.precision,
                                           tokens=m.tokenizer.convert_ids_to_tokens(first), special=special)
        inputs = encode_ids(m, rows).inputs  # (B, n), pinned and copied without blocking on a GPU
        maps = forward_maps(m, inputs, self.layers, precision=self.precision)  # (B, L', H, n, n)
        acc.add(maps)
        if self.precision != "fp32" and DEVIATION_SAMPLE > 0:
            self._measure_deviation(acc, n, inputs, maps)

    def _measure_deviation(self, acc: MeanAttention, n: int, inputs: dict, maps: torch.Tensor) -> None:
        ref = self.reference.get(n)
        if ref is not None and ref.count >= DEVIATION_SAMPLE:
            return
        if ref is None:
            ref = self.reference[n] = self._empty(n)
            self.checked[n] = self._empty(n)
        ref.add(forward_maps(self.m, inputs, self.layers, precision="fp32"))
        self.checked[n].add(maps)
        acc.deviation = float((ref.mean - self.checked[n].mean).abs().max())


# --------------------------------------------------------------------------- shards (for intervals)


def model_identity(m: LoadedModel) -> dict:
    """What tells one model's weights from another's, cheaply: name, geometry, and per
    parameter its shape and the float64 sum of its first 4096 values."""
    fingerprint = hashlib.sha256()
    with torch.no_grad():
        for name, p in m.model.named_parameters():
            head = p.detach().reshape(-1)[:4096].double().cpu()
            fingerprint.update(f"{name}{tuple(p.shape)}{float(head.sum())!r}{float(head.abs().sum())!r}".encode())
    return {"name": m.name, "model_type": m.model_type, "n_layers": m.n_layers, "n_heads": m.n_heads,
            "weights": fingerprint.hexdigest()}


def shard_folder(root: str | Path, m: LoadedModel, shard_size: int, arguments: dict) -> Path:
    """The folder under ``root`` for finished shards of this model and these arguments.

    Its name is the model's name and a hash of :func:`model_identity` and the
    arguments (layers, precision, batch size, ...): another model or other
    arguments get another folder and never reuse a shard.
    """
    key = {"model": model_identity(m), "shard_size": int(shard_size), "arguments": arguments}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in m.name)
    folder = Path(root) / f"{safe}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "key.json").exists():
        write_text_atomic(folder / "key.json", json.dumps(key, indent=1, sort_keys=True))
    return folder


def texts_digest(texts: Sequence[str]) -> str:
    """sha256 of a shard's texts, in order (a resumed shard must hold the same texts)."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def _load_shard(path: Path, digest: str) -> MeanAttention | None:
    """The shard saved at ``path`` if it was made from the same texts, else None."""
    if not path.exists():
        return None
    try:
        state = torch.load(path, weights_only=True)
    except Exception:  # a damaged file is recomputed
        return None
    if state.pop("texts_sha256", None) != digest:
        return None
    return MeanAttention.from_state_dict(state)


def _save_shard(path: Path, shard: MeanAttention, digest: str) -> None:
    with atomic_path(path) as tmp:
        torch.save({**shard.state_dict(), "texts_sha256": digest}, tmp)


def sharded_mean_attention(
    m: LoadedModel,
    texts: Iterable[str],
    shard_size: int,
    *,
    progress: bool = True,
    resume_dir: str | Path | None = None,
    **kwargs,
) -> list[MeanAttention]:
    """:func:`mean_attention` over consecutive shards of ``shard_size`` texts.

    The shards add up to the whole (``merge_all``), and resampling them gives
    bootstrap intervals over queries for anything computed from the sums
    (fixedness per layer, its trend with depth). Keyword arguments go to
    :func:`mean_attention` (``layers``, ``batch_size``, ``precision``).
    :func:`iter_shards` gives the same shards one at a time, so that a caller
    can stop when the answer has settled.

    Args:
        resume_dir: a folder for finished shards. Each shard is written there
            atomically as soon as it is done (in a sub-folder named by
            :func:`shard_folder`: the model's identity and the arguments). A
            rerun with the same model, arguments and texts loads the finished
            shards instead of computing them again and continues with the
            first missing one, so an interrupted run loses at most one shard.
            The texts are still read (to check, by a hash, that shard ``k``
            holds the same texts as before; a shard whose texts differ is
            computed again and replaced). The folder's key also holds the hash
            of the first shard's texts, so two different streams (real queries
            and a control) kept under one ``resume_dir`` never overwrite each
            other's shards.
    """
    shards: list[MeanAttention] = []
    read_back, folder = 0, None
    for shard, was_saved, folder in _shards(m, texts, shard_size, progress=progress, resume_dir=resume_dir,
                                            **kwargs):
        shards.append(shard)
        read_back += was_saved
    if not shards:
        raise ValueError("texts is empty")
    if read_back and progress:
        print(_("{k} of {n} shards read back from {folder} (finished by an earlier run): "
                "a time measured around this call counts only the others").format(k=read_back, n=len(shards),
                                                                                folder=folder))
    return shards


def iter_shards(m: LoadedModel, texts: Iterable[str], shard_size: int, *, progress: bool = True,
                resume_dir: str | Path | None = None, **kwargs) -> Iterator[MeanAttention]:
    """The shards of :func:`sharded_mean_attention`, one at a time (lazily: the texts of shard ``k + 1``
    are read only when it is asked for), with the same ``resume_dir`` folder and files."""
    for shard, _was_saved, _folder in _shards(m, texts, shard_size, progress=progress, resume_dir=resume_dir,
                                              **kwargs):
        yield shard


def _shards(m: LoadedModel, texts: Iterable[str], shard_size: int, *, progress: bool,
            resume_dir: str | Path | None, **kwargs) -> Iterator[tuple[MeanAttention, bool, Path | None]]:
    """(shard, read back from ``resume_dir``?, its folder) for each consecutive shard of ``texts``."""
    if check_positive_int(shard_size, "shard_size") < 2:
        raise ValueError(f"shard_size must be at least 2 (a shard needs a variance), got {shard_size}")
    folder, arguments = None, None
    if resume_dir is not None:
        arguments = {k: (list(v) if isinstance(v, range) else v) for k, v in sorted(kwargs.items())}
        arguments["layers"] = check_layers(m, kwargs.get("layers"))
        arguments["precision"] = choose_precision(m, kwargs.get("precision", "fp32"))[0]
        arguments.setdefault("batch_size", 256)
    with _progress(None, progress) as bar:
        for k, chunk in enumerate(text_batches(texts, int(shard_size))):
            shard = None
            if arguments is not None:
                digest = texts_digest(chunk)
                if folder is None:  # the stream is known by its first shard
                    folder = shard_folder(resume_dir, m, int(shard_size), {**arguments, "first_shard": digest})
                path = folder / f"shard_{k:06d}.pt"
                shard = _load_shard(path, digest)
            was_saved = shard is not None
            if shard is None:
                shard = mean_attention(m, chunk, progress=False, **kwargs)
                if folder is not None:
                    _save_shard(path, shard, digest)
            bar.update(len(chunk))
            yield shard, was_saved, folder


def merge_all(parts: Sequence[MeanAttention]) -> MeanAttention:
    """One accumulator from many (``parts[0] + parts[1] + ...``)."""
    if not parts:
        raise ValueError("nothing to merge")
    total = parts[0]
    for p in parts[1:]:
        total = total.merge(p)
    return total


def information_from_sums(total: torch.Tensor, total_sq: torch.Tensor, entropy_total: torch.Tensor,
                          count: torch.Tensor, row_weight: torch.Tensor | None = None,
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(mean_info, row_info, null_info)``, each ``[..., L, H]`` in nats summed over query rows,
    from the sums of :class:`MeanAttention` (leading axes ``...``: many accumulators at once).
    With ``row_weight`` ``[..., L, H, n]``, each query row's share of the sums is multiplied by its
    weight (e.g. the row's mass on the content keys: :func:`attnlab.analysis.fixedness.row_content_mass`).

    ``mean_info``: ``sum_r KL(p̄_r || u)``; ``row_info``: ``sum_r mean_i KL(p_{i,r} || u)``;
    ``null_info``: the expected ``mean_info`` of the same rows shuffled over their key positions,
    ``(n mean_i ||p_{i,r}||^2 - 1) / (2N)`` per row (second order; smoothing shrinks it by ``(1 - eps)^2``).
    """
    c = count.reshape(*count.shape, 1, 1, 1)  # broadcasts over (L, H, n)
    n = total.shape[-1]
    mean = total / c[..., None]  # (..., L, H, n, n)
    mean_info = math.log(n) - entropy(smooth(mean, ENTROPY_EPS))  # (..., L, H, n)
    row_info = math.log(n) - entropy_total / c  # (..., L, H, n)
    square = total_sq.sum(dim=-1) / c  # (..., L, H, n): mean squared length of a row
    null_info = (1 - ENTROPY_EPS) ** 2 * (n * square - 1.0).clamp_min(0.0) / (2 * c)  # (..., L, H, n)
    w = torch.ones_like(row_info) if row_weight is None else row_weight  # (..., L, H, n)
    return (w * mean_info).sum(dim=-1), (w * row_info).sum(dim=-1), (w * null_info).sum(dim=-1)


def fixedness_from_sums(total: torch.Tensor, total_sq: torch.Tensor, entropy_total: torch.Tensor,
                        count: torch.Tensor) -> torch.Tensor:
    """:meth:`MeanAttention.fixedness` ``[..., L, H]`` from the sums (NaN where the rows carry no
    more information than the null keeps)."""
    mean_info, row_info, null_info = information_from_sums(total, total_sq, entropy_total, count)
    room = row_info - null_info  # (..., L, H)
    return torch.where(room > 1e-12, (mean_info - null_info) / room.clamp_min(1e-12), torch.nan)


def js_score_from_sums(total: torch.Tensor, entropy_total: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """:meth:`MeanAttention.js_score` ``[..., L, H]`` from sums of maps ``[..., L, H, n, n]``, sums of
    row entropies ``[..., L, H, n]`` and counts ``[...]``.

    The leading axes ``...`` let many accumulators (e.g. bootstrap resamples) go at once.
    """
    c = count.reshape(*count.shape, 1, 1, 1)  # broadcasts over (L, H, n)
    mean = total / c[..., None]  # (..., L, H, n, n)
    h_of_mean = entropy(smooth(mean, ENTROPY_EPS))  # (..., L, H, n)
    js = (h_of_mean - entropy_total / c).clamp_min(0.0)  # (..., L, H, n): JS among texts, per row
    return (1.0 - js.mean(dim=-1) / math.log(total.shape[-1])).clamp(0.0, 1.0)
