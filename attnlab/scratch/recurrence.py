"""Self-attention versus recurrence: measurements for lesson 03.

The Transformer paper (Vaswani et al. 2017, Table 1) compares layer types by
three numbers: computation per layer, sequential operations (steps that must
wait for the previous one) and the maximum path length between two positions.
This module states that table (:data:`COMPLEXITY`) and measures two of its
consequences on the machine that runs it:

* :func:`time_layers` -- wall time of an LSTM and a self-attention layer of the
  same width, batched, for several sequence lengths, every repeat kept;
* :func:`first_token_influence` -- how strongly the output at the last
  position depends on the first token (the norm of the Jacobian block
  ``d y_last / d x_first``), for random (untrained) initialisations.

Layers compared (:func:`make_layer`): ``"lstm"`` (left to right),
``"bilstm"`` (ELMo-style: a forward and a backward LSTM, outputs
concatenated) and ``"attention"`` (:class:`~attnlab.scratch.self_attention.MultiHeadSelfAttention`).

This module holds the numbers only; the verdicts on them live in
:mod:`attnlab.course.claims.recurrence`.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from attnlab.analysis.stats import slope
from attnlab.core.checks import check_positive_int
from attnlab.core.language import _
from attnlab.core.records import Record
from attnlab.scratch.self_attention import MultiHeadSelfAttention

KINDS = ("lstm", "bilstm", "attention")

#: Vaswani et al. 2017, Table 1 (n: sequence length, d: width, k: kernel size,
#: r: neighbourhood size of restricted self-attention), plus the row the paper's
#: table leaves out: the four d x d projections (query, key, value, output) that
#: every self-attention layer also runs, O(n · d^2) like a recurrence, but all
#: positions at once.
COMPLEXITY = [
    {"layer": "Self-attention", "per_layer": "O(n^2 · d)", "sequential": "O(1)", "path": "O(1)"},
    {"layer": "Self-attention: Q/K/V/O projections", "per_layer": "O(n · d^2)", "sequential": "O(1)", "path": "-"},
    {"layer": "Recurrent (RNN/LSTM)", "per_layer": "O(n · d^2)", "sequential": "O(n)", "path": "O(n)"},
    {"layer": "Convolutional", "per_layer": "O(k · n · d^2)", "sequential": "O(1)", "path": "O(log_k n)"},
    {"layer": "Self-attention (restricted)", "per_layer": "O(r · n · d)", "sequential": "O(1)", "path": "O(n / r)"},
]


def complexity_markdown() -> str:
    """:data:`COMPLEXITY` as a Markdown table."""
    names = _layer_names()
    lines = [_("| layer type | complexity per layer | sequential operations | maximum path length |"),
             "|---|---|---|---|"]
    lines += [f"| {names.get(r['layer'], r['layer'])} | {r['per_layer']} | {r['sequential']} | {r['path']} |"
              for r in COMPLEXITY]
    return "\n".join(lines)


def _layer_names() -> dict[str, str]:
    """The layer types of :data:`COMPLEXITY` as shown, in the current language."""
    return {"Self-attention": _("Self-attention"),
            "Self-attention: Q/K/V/O projections": _("Self-attention: Q/K/V/O projections"),
            "Recurrent (RNN/LSTM)": _("Recurrent (RNN/LSTM)"),
            "Convolutional": _("Convolutional"),
            "Self-attention (restricted)": _("Self-attention (restricted)")}


def path_length(kind: str, n: int) -> int:
    """Layers' steps a signal needs from the first to the last of ``n`` tokens:
    ``n - 1`` through a recurrence (one step per token, either direction),
    1 through self-attention (every token sees every token directly)."""
    _check_kind(kind)
    if n < 2:
        raise ValueError(_("need at least 2 tokens, got n={n}").format(n=n))
    return 1 if kind == "attention" else n - 1


def sequential_steps(kind: str, n: int) -> int:
    """Operations that must run one after another for ``n`` tokens: ``n`` for a
    recurrence (each step needs the previous hidden state), 1 for self-attention
    (all positions are one batched matrix product)."""
    _check_kind(kind)
    if n < 1:
        raise ValueError(_("need at least 1 token, got n={n}").format(n=n))
    return 1 if kind == "attention" else n


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(_("kind must be one of {kinds}, got {kind!r}").format(kinds=KINDS, kind=kind))


class SequenceLayer(nn.Module):
    """One sequence layer mapping ``(B, T, width) -> (B, T, width)``."""

    def __init__(self, kind: str, width: int, n_heads: int = 4):
        super().__init__()
        _check_kind(kind)
        self.kind = kind
        if kind == "lstm":
            self.inner = nn.LSTM(width, width, batch_first=True)
        elif kind == "bilstm":
            if width % 2:
                raise ValueError(_("bilstm needs an even width (two halves are concatenated)"))
            # ELMo style: forward and backward halves, concatenated per position
            self.inner = nn.LSTM(width, width // 2, batch_first=True, bidirectional=True)
        else:
            self.inner = MultiHeadSelfAttention(width, n_heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.inner(x)[0]  # LSTM: (output, state); attention: (output, weights)
        return out  # (B, T, width)


def make_layer(kind: str, width: int = 32, *, n_heads: int = 4, seed: int = 0) -> SequenceLayer:
    """A freshly initialised layer (PyTorch's default initialisation), eval mode."""
    torch.manual_seed(seed)
    return SequenceLayer(kind, width, n_heads).eval()


# --------------------------------------------------------------------------- timing


def _rows(kept: dict[str, list[list[float]]], summary: dict[str, list[float]], kind: str) -> np.ndarray:
    """``[runs, lengths]``: ``kind``'s values of every run (``kept``: one list per length, a value per run),
    or one row of the per-length ``summary`` when no run's values were kept."""
    if kind in kept:
        return np.asarray(kept[kind], dtype=float).T
    return np.asarray(summary[kind], dtype=float)[None, :]


@dataclass
class Timing(Record):
    """Wall time per forward pass, per kind and length.

    Attributes:
        lengths: the sequence lengths ``n``.
        batch, width: the batch size and the layers' width ``d``.
        seconds: kind -> the median over repeats, one per length.
        samples: kind -> one list per length with every repeat's seconds. Repeat
            ``r`` of every kind ran back to back, so ``samples[a][i][r]`` and
            ``samples[b][i][r]`` saw the same load on the machine (a pair).
    """

    lengths: list[int]
    batch: int
    width: int
    seconds: dict[str, list[float]] = field(default_factory=dict)
    samples: dict[str, list[list[float]]] = field(default_factory=dict)

    def repeats(self, kind: str) -> np.ndarray:
        """``[repeats, lengths]`` seconds of ``kind`` (one row of medians when no samples were kept)."""
        return _rows(self.samples, self.seconds, kind)


def time_layers(
    lengths: Sequence[int], *, kinds: Sequence[str] = ("lstm", "attention"), width: int = 64,
    batch: int = 16, repeats: int = 15, seed: int = 0, threads: int = 1, progress: bool = False,
) -> Timing:
    """Forward time of each layer kind for batched random inputs ``(batch, n, width)``,
    ``repeats`` times each; :class:`Timing` keeps every repeat and the median.

    The kinds take turns within each repeat (in alternating order), so a burst
    of load from other programs hits both sides of a comparison alike. Runs on
    ``threads`` CPU threads (1 by default: the comparison is per core).
    """
    batch = check_positive_int(batch, "batch")
    repeats = check_positive_int(repeats, "repeats")
    threads = check_positive_int(threads, "threads")
    timing = Timing(list(lengths), batch, width)
    gen = torch.Generator().manual_seed(seed)
    jobs = list(lengths)
    if progress:
        jobs = tqdm(jobs, desc=_("timing"), unit=_("length"))
    layers = {k: make_layer(k, width, seed=seed) for k in kinds}
    threads_before = torch.get_num_threads()
    torch.set_num_threads(threads)  # one core: fair, and steady on a busy machine
    try:
        for n in jobs:
            x = torch.randn(batch, n, width, generator=gen)  # (B, T, width)
            times = _time_one_length(layers, x, repeats)
            for kind in kinds:
                timing.samples.setdefault(kind, []).append(times[kind])
                timing.seconds.setdefault(kind, []).append(statistics.median(times[kind]))
    finally:
        torch.set_num_threads(threads_before)
    return timing


def _time_one_length(layers: dict[str, nn.Module], x: torch.Tensor, repeats: int) -> dict[str, list[float]]:
    """Every repeat's seconds per kind for one input; the kinds alternate who goes first."""
    order = list(layers)
    times: dict[str, list[float]] = {k: [] for k in order}
    with torch.no_grad():
        for kind in order:
            layers[kind](x)  # warm-up
        for r in range(repeats):
            for kind in (order if r % 2 == 0 else order[::-1]):
                start = time.perf_counter()
                layers[kind](x)
                times[kind].append(time.perf_counter() - start)
    return times


def growth_exponent(lengths: Sequence[int], seconds: Sequence[float]) -> float:
    """Slope of log(time) against log(length): 1 = linear, 2 = quadratic."""
    return float(slope(np.log(np.asarray(lengths, dtype=float)), np.log(np.asarray(seconds, dtype=float))))


# --------------------------------------------------------------------------- dependence


def position_jacobian_norms(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``||d y_last / d x_j||_F`` for every input position ``j``.

    Args:
        layer: maps ``(B, T, d) -> (B, T, d)``, batch items independent.
        x: one input sequence ``(T, d)``.

    Returns:
        ``(T,)``: how much the last output depends on each input token.

    The whole Jacobian comes from one backward pass: ``x`` is copied ``d``
    times, and copy ``b`` back-propagates only output feature ``b``.
    """
    if x.ndim != 2:
        raise ValueError(_("x must be (tokens, width), got shape {shape}").format(shape=tuple(x.shape)))
    T, d = x.shape
    xb = x.unsqueeze(0).repeat(d, 1, 1).requires_grad_(True)  # (d, T, d): one copy per output feature
    y = layer(xb)  # (d, T, d)
    if y.shape[-1] != d:
        raise ValueError(_("layer must keep the width {d}, got output {shape}").format(d=d, shape=tuple(y.shape)))
    picked = y[torch.arange(d), -1, torch.arange(d)]  # (d,): copy b keeps feature b of the last output
    (grad,) = torch.autograd.grad(picked.sum(), xb)  # (d, T, d): grad[b, j] = d y_last[b] / d x_j
    return grad.pow(2).sum(dim=(0, 2)).sqrt()  # (T,)


@dataclass
class Influence(Record):
    """Dependence of the last output on the first token, per kind and length.

    ``first``: mean over seeds of ``||d y_last / d x_first||``.
    ``share``: the mean over seeds of the same divided by the mean norm over all
    positions (1 = the first token counts as much as an average token; 0 = it is
    forgotten). ``share_per_seed``: kind -> one list per length with the share
    of each seed (each seed is a fresh random layer and input).
    """

    lengths: list[int]
    seeds: list[int]
    width: int
    first: dict[str, list[float]] = field(default_factory=dict)
    share: dict[str, list[float]] = field(default_factory=dict)
    share_per_seed: dict[str, list[list[float]]] = field(default_factory=dict)

    def seed_shares(self, kind: str) -> np.ndarray:
        """``[seeds, lengths]`` shares of ``kind`` (one row of means when no per-seed values were kept)."""
        return _rows(self.share_per_seed, self.share, kind)


def first_token_influence(
    lengths: Sequence[int], *, kinds: Sequence[str] = KINDS, width: int = 32,
    seeds: Sequence[int] = (0, 1, 2), progress: bool = False,
) -> Influence:
    """Measure :class:`Influence` for random layers and random N(0, 1) inputs."""
    result = Influence(list(lengths), list(seeds), width)
    jobs = [(k, n) for k in kinds for n in lengths]
    if progress:
        jobs = tqdm(jobs, desc=_("gradients"), unit=_("run"))
    for kind, n in jobs:
        firsts, shares = [], []
        for seed in seeds:
            layer = make_layer(kind, width, seed=seed)
            gen = torch.Generator().manual_seed(1000 + seed)
            x = torch.randn(n, width, generator=gen)  # (T, width)
            norms = position_jacobian_norms(layer, x)  # (T,)
            firsts.append(float(norms[0]))
            shares.append(float(norms[0] / norms.mean()))
        result.first.setdefault(kind, []).append(statistics.fmean(firsts))
        result.share.setdefault(kind, []).append(statistics.fmean(shares))
        result.share_per_seed.setdefault(kind, []).append(shares)
    return result


# --------------------------------------------------------------------------- summaries


def crossover_length(timing: Timing) -> int | None:
    """The first measured length at which the LSTM is faster than attention (None if never)."""
    for n, a, l in zip(timing.lengths, timing.seconds["attention"], timing.seconds["lstm"]):
        if l < a:
            return n
    return None


def exponent_summary(timing: Timing) -> dict[str, float]:
    """Growth exponent of each kind's time with length (see :func:`growth_exponent`)."""
    return {k: growth_exponent(timing.lengths, v) for k, v in timing.seconds.items()}


__all__ = [
    "COMPLEXITY", "KINDS", "complexity_markdown", "path_length", "sequential_steps", "make_layer",
    "SequenceLayer", "time_layers", "Timing", "growth_exponent", "position_jacobian_norms",
    "first_token_influence", "Influence", "crossover_length", "exponent_summary",
]
