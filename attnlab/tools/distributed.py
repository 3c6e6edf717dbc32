"""Mean attention maps data-parallel: many processes, one exact result.

The accumulator of :mod:`attnlab.core.streaming` holds sums and a count, so the
mean over all queries is the sum of the shards' sums divided by the sum of
their counts. Under ``torchrun`` each process (rank) takes every
``world_size``-th query of the file, accumulates its shard, and
``torch.distributed.all_reduce`` adds the partial sums (float64); rank 0
writes the result. Backend: ``gloo`` on CPU, ``nccl`` when the model runs on
GPUs.

Command line (one process, or K under torchrun; same result)::

    attnlab mean-attention --model bundled --queries queries.txt --out mean.pt --layers 0-3
    torchrun --standalone --nproc_per_node=2 -m attnlab.tools.cli mean-attention \\
        --model bundled --queries queries.txt --out mean.pt --layers 0-3

``queries.txt`` holds one query per line, all of one token length. The
output loads with :meth:`attnlab.core.streaming.MeanAttention.load`.

Every input is checked before any work, and a bad one is one ValueError
naming it: the queries file (missing, a folder, not UTF-8 anywhere, empty),
``--out`` (a folder, or a place that cannot be written), ``--layers`` and
``--batch-size``, all before the model loads; then the token lengths of all
queries, before any forward pass. Under torchrun the ranks first agree on
the token lengths (each rank measures its share, ``all_gather`` puts them
together), so every rank raises the same message as a single process would,
and nobody is left waiting in a collective.
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import torch
import torch.distributed as dist

from attnlab.core.checks import check_positive_int
from attnlab.core.fast import PRECISIONS, check_layers
from attnlab.core.models import LoadedModel, load_model
from attnlab.core.distributions import special_mask, special_token_ids
from attnlab.core.streaming import MeanAttention, mean_attention, text_batches

#: Queries tokenised per call while the lengths are checked.
LENGTH_CHECK_BATCH = 1024


def world() -> tuple[int, int]:
    """``(rank, world_size)`` from torchrun's environment; ``(0, 1)`` when run alone."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def read_queries(path: str | Path, rank: int = 0, world_size: int = 1) -> Iterator[str]:
    """Lines ``rank, rank + world_size, ...`` of a file (blank lines skipped), streamed."""
    for _, text in numbered_queries(path, rank, world_size):
        yield text


def numbered_queries(path: str | Path, rank: int = 0, world_size: int = 1) -> Iterator[tuple[int, str]]:
    """``(line number, query)`` (1-based line numbers) of this rank's share of the non-blank lines."""
    with open(path, encoding="utf-8") as fh:
        lines = ((i + 1, line.rstrip("\n").rstrip("\r")) for i, line in enumerate(fh))
        kept = ((i, line) for i, line in lines if line.strip())
        yield from itertools.islice(kept, rank, None, world_size)


# --------------------------------------------------------------------------- checks before any work


def check_queries_file(path: str | Path) -> int:
    """The number of queries (non-blank lines) of a readable UTF-8 file; ValueError otherwise.

    The whole file is read once, so a bad byte on the last line is found
    before the model loads, not after an hour of computing.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"queries file {path} does not exist")
    if path.is_dir():
        raise ValueError(f"queries file {path} is a folder: give a text file with one query per line")
    count = 0
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(f"queries file {path}: line {number} is not valid UTF-8 (byte {err.start} of "
                                 f"the line, {raw[err.start:err.start + 1]!r}); save the file as UTF-8") from None
            count += bool(line.strip())
    if count == 0:
        raise ValueError(f"queries file {path} holds no queries: write one query per line")
    return count


def check_out(path: str | Path) -> Path:
    """``path`` as the output file, refused if it is a folder or its folder cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"--out {path} is a folder: give a file name such as {path / 'mean.pt'}")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the nearest folder that exists (the missing ones will be made)
    if not folder.is_dir():
        raise ValueError(f"--out {path} cannot be written: {folder} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise ValueError(f"--out {path} cannot be written: {folder} refuses new files ({err.strerror})") from None
    return path


def check_layer_list(layers: Sequence[int] | None) -> list[int] | None:
    """0-based layer indices: ints (not bools) of at least 0; None means all layers."""
    if layers is None:
        return None
    out = []
    for l in layers:
        if isinstance(l, bool) or not isinstance(l, int):
            raise ValueError(f"--layers takes 0-based layer numbers, got {l!r}")
        if l < 0:
            raise ValueError(f"--layers takes 0-based layer numbers (0 is the first layer), got {l}")
        out.append(l)
    if not out:
        raise ValueError("--layers is empty: leave it out for all layers, or give e.g. 0-3")
    return out


def parse_layers(spec: str | None) -> list[int] | None:
    """``"0-3"`` -> ``[0, 1, 2, 3]``; ``"0,2,5"`` -> ``[0, 2, 5]``; None/"all" -> None (0-based).

    Raises:
        ValueError: anything else (``"-1"``, ``"3-1"``, ``"a"``), with the accepted forms.
    """
    if spec is None or spec.strip().lower() in ("", "all"):
        return None
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not lo.strip().isdigit() or (dash and not hi.strip().isdigit()):
            raise ValueError(f"--layers {spec!r}: use 0-based layer numbers such as 0-3 or 0,2,5 "
                             f"(0 is the first layer; {part!r} is not one)")
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first:
            raise ValueError(f"--layers {spec!r}: the range {part} runs backwards; write {last}-{first}")
        out.extend(range(first, last + 1))
    return out


LengthTable = dict[int, tuple[int, str]]  # token length -> (first line number, that line's text)


@dataclass
class LengthCheck:
    """What one rank (or all of them, merged) found about the token lengths of its queries.

    Attributes:
        lengths: token length (special tokens included) -> its first line and that line's text.
        too_long: ``(line number, tokens)`` of the first query over the model's limit, if any.
    """

    lengths: LengthTable = field(default_factory=dict)
    too_long: tuple[int, int] | None = None


def local_lengths(m: LoadedModel, path: str | Path, rank: int = 0, world_size: int = 1) -> LengthCheck:
    """Token lengths of this rank's share of the queries (nothing raised: the ranks decide together)."""
    found = LengthCheck()
    for batch in text_batches(numbered_queries(path, rank, world_size), LENGTH_CHECK_BATCH):
        ids = m.tokenizer([t for _, t in batch], add_special_tokens=True, truncation=False)["input_ids"]
        for (number, text), row in zip(batch, ids):
            n = len(row)
            if n > m.max_tokens and (found.too_long is None or number < found.too_long[0]):
                found.too_long = (number, n)
            if n not in found.lengths or number < found.lengths[n][0]:
                found.lengths[n] = (number, text)
    return found


def merge_lengths(checks: Sequence[LengthCheck]) -> LengthCheck:
    """The ranks' findings as one: each length with its earliest line, the earliest too-long line."""
    merged = LengthCheck()
    for check in checks:
        for n, (number, text) in check.lengths.items():
            if n not in merged.lengths or number < merged.lengths[n][0]:
                merged.lengths[n] = (number, text)
        if check.too_long is not None and (merged.too_long is None or check.too_long[0] < merged.too_long[0]):
            merged.too_long = tuple(check.too_long)
    return merged


def agreed_length(check: LengthCheck, path: str | Path, m: LoadedModel) -> int:
    """The one token length of all queries; ValueError for a query over the limit or of another length."""
    if check.too_long is not None:
        line, n = check.too_long
        raise ValueError(f"queries file {path}: line {line} has {n} tokens, more than {m.name}'s limit "
                         f"of {m.max_tokens}")
    if not check.lengths:
        raise ValueError(f"queries file {path} holds no queries: write one query per line")
    by_line = sorted(check.lengths.items(), key=lambda item: item[1][0])
    n, (line, text) = by_line[0]
    if len(by_line) > 1:
        other, (other_line, other_text) = by_line[1]
        raise ValueError(
            f"queries file {path}: line {other_line} ({other_text[:40]!r}) has {other} tokens but line {line} "
            f"({text[:40]!r}) has {n} (special tokens included); mean maps need queries of one token length "
            f"({len(by_line)} lengths found: {sorted(check.lengths)})"
        )
    return n


def _gather_lengths(check: LengthCheck) -> LengthCheck:
    """Every rank's findings merged, the same on every rank (torch.distributed.all_gather_object)."""
    gathered: list = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, (check.lengths, check.too_long))
    return merge_lengths([LengthCheck(dict(lengths), too_long) for lengths, too_long in gathered])


def _all_reduce(acc: MeanAttention) -> MeanAttention:
    """Add the sums and counts of every rank in place (float64); the deviation takes the largest."""
    device = torch.device("cuda") if dist.get_backend() == "nccl" else torch.device("cpu")
    for name in ("total", "total_sq", "entropy_total"):
        t = getattr(acc, name).to(device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        setattr(acc, name, t.cpu())
    count = torch.tensor([acc.count], dtype=torch.float64, device=device)
    dist.all_reduce(count, op=dist.ReduceOp.SUM)
    acc.count = int(count.item())
    if acc.content is not None:  # the content-key reading's sums (every rank has them: same special positions)
        _all_reduce(acc.content)
    if acc.deviation is not None:
        dev = torch.tensor([acc.deviation], dtype=torch.float64, device=device)
        dist.all_reduce(dev, op=dist.ReduceOp.MAX)
        acc.deviation = float(dev.item())
    return acc


def distributed_mean_attention(
    model: str,
    queries: str | Path,
    out: str | Path,
    *,
    layers: Sequence[int] | None = None,
    batch_size: int = 256,
    precision: str = "fp32",
    progress: bool = True,
) -> MeanAttention | None:
    """Run :func:`attnlab.mean_attention` on this rank's shard and combine all ranks.

    Works alone (one process) and under torchrun. Rank 0 writes ``out``
    (atomically) and returns the combined result; other ranks return None.

    Raises:
        ValueError: a bad input (see the module docstring), before any forward pass;
            under torchrun on every rank, with the same message.
    """
    rank, world_size = world()
    batch_size = check_positive_int(batch_size, "--batch-size")
    if precision != "auto" and precision not in PRECISIONS:
        raise ValueError(f"--precision must be 'auto' or one of {PRECISIONS}, got {precision!r}")
    layers = check_layer_list(layers)
    check_queries_file(queries)
    out = check_out(out)
    m = load_model(model, verbose=rank == 0)
    chosen = check_layers(m, layers)
    use_cuda = world_size > 1 and torch.cuda.is_available()
    if use_cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        m.model.to(f"cuda:{local}")
    started = world_size > 1 and not dist.is_initialized()
    if started:
        dist.init_process_group("nccl" if use_cuda else "gloo")
    try:
        mine = local_lengths(m, queries, rank, world_size)
        length = agreed_length(_gather_lengths(mine) if world_size > 1 else mine, queries, m)
        if mine.lengths:
            acc = mean_attention(m, read_queries(queries, rank, world_size), batch_size=batch_size,
                                 progress=progress and rank == 0, layers=chosen, precision=precision)
        else:  # fewer queries than processes: this rank adds zeros (both readings)
            first = m.tokenizer(next(read_queries(queries)))["input_ids"]
            special = torch.nonzero(special_mask(first, special_token_ids(m.tokenizer))).flatten().tolist()
            acc = MeanAttention.empty(len(chosen), m.n_heads, length, layers=chosen, model_name=m.name,
                                      precision=precision, special=special)
        if world_size > 1:
            acc = _all_reduce(acc)
            if not acc.tokens:
                first = next(read_queries(queries))
                acc.tokens = m.tokenizer.convert_ids_to_tokens(m.tokenizer(first)["input_ids"])
        if rank == 0:
            acc.save(out)
            return acc
        return None
    finally:
        if started:
            dist.destroy_process_group()


# --------------------------------------------------------------------------- command line


def _run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    acc = distributed_mean_attention(
        args.model, args.queries, args.out, layers=parse_layers(args.layers), batch_size=args.batch_size,
        precision=args.precision, progress=not args.quiet,
    )
    if acc is not None:
        secs = time.perf_counter() - start
        rank, world_size = world()
        dev = f", deviation from fp32 {acc.deviation:.2e}" if acc.deviation is not None else ""
        print(f"mean attention of {acc.count} queries ({acc.length} tokens, layers {acc.layers}) "
              f"by {world_size} process(es) in {secs:.1f} s{dev} -> {args.out}")
    return 0


def add_cli(subparsers) -> None:
    """Register ``attnlab mean-attention``."""
    p = subparsers.add_parser(
        "mean-attention",
        help="mean attention maps over a file of same-length queries (works under torchrun)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--model", default="auto", help="auto, bundled, a hub id or a folder")
    p.add_argument("--queries", required=True, help="text file, one query per line, all of one token length")
    p.add_argument("--out", required=True, help="output file (.pt), read with MeanAttention.load")
    p.add_argument("--layers", default=None, help="0-based layers, e.g. 0-3 or 0,2,5 (default: all)")
    p.add_argument("--batch-size", type=int, default=256, help="queries per forward pass (at least 1)")
    p.add_argument("--precision", default="fp32", choices=["auto", "fp32", "bf16", "int8"],
                   help="fp32 is exact; auto takes bf16 only where the hardware runs it natively")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
