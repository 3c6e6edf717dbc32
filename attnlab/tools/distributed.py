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
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from pathlib import Path
from typing import Iterator, Sequence

import torch
import torch.distributed as dist

from attnlab.core.fast import check_layers
from attnlab.core.models import load_model
from attnlab.core.streaming import MeanAttention, mean_attention


def world() -> tuple[int, int]:
    """``(rank, world_size)`` from torchrun's environment; ``(0, 1)`` when run alone."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def read_queries(path: str | Path, rank: int = 0, world_size: int = 1) -> Iterator[str]:
    """Lines ``rank, rank + world_size, ...`` of a file (blank lines skipped), streamed."""
    with open(path, encoding="utf-8") as fh:
        lines = (line.rstrip("\n") for line in fh)
        kept = (line for line in lines if line.strip())
        yield from itertools.islice(kept, rank, None, world_size)


def parse_layers(spec: str | None) -> list[int] | None:
    """``"0-3"`` -> ``[0, 1, 2, 3]``; ``"0,2,5"`` -> ``[0, 2, 5]``; None/"all" -> None (0-based)."""
    if spec is None or spec.strip().lower() in ("", "all"):
        return None
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return out


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

    Works alone (one process) and under torchrun. Rank 0 writes ``out`` and
    returns the combined result; other ranks return None.
    """
    rank, world_size = world()
    m = load_model(model, verbose=rank == 0)
    use_cuda = world_size > 1 and torch.cuda.is_available()
    if use_cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        m.model.to(f"cuda:{local}")
    chosen = check_layers(m, layers)
    first = next(read_queries(queries), None)
    if first is None:
        raise ValueError(f"{queries} holds no queries: write one query per line")
    length = len(m.tokenizer(first)["input_ids"])
    started = world_size > 1 and not dist.is_initialized()
    if started:
        dist.init_process_group("nccl" if use_cuda else "gloo")
    try:
        shard = list(itertools.islice(read_queries(queries, rank, world_size), 1))
        if shard:
            acc = mean_attention(m, read_queries(queries, rank, world_size), batch_size=batch_size,
                                 progress=progress and rank == 0, layers=chosen, precision=precision)
        else:  # fewer queries than processes: this rank adds zeros
            acc = MeanAttention.empty(len(chosen), m.n_heads, length, layers=chosen, model_name=m.name,
                                      precision=precision)
        if world_size > 1:
            acc = _all_reduce(acc)
            if not acc.tokens:
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
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "int8"])
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
