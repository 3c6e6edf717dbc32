"""How many heads? Small transformers trained from scratch, on a CPU.

Vaswani et al. (2017, Table 3 row (A)) varied the number of heads ``h`` of a
translation Transformer (English-German, not BERT) at a fixed model width
(``d_k = d_model / h``, same parameter count): one head was clearly worst, 8
and 16 best, 32 worse again. This module repeats the design in miniature, on
a small language model, in minutes on a laptop CPU, and adds a second design
that separates "more heads" from "narrower heads". Their numbers, and the
verdicts on this study, are in :mod:`attnlab.course.claims.head_count`.

**The data: a lookup language** (:class:`LookupLanguage`). A synthetic
language whose structure is known exactly, so the best possible perplexity
is known too. Sequences of ``vocab`` symbols; the first ``max(offsets)``
symbols are random; after that each symbol is, with probability
``1 - noise``, a fixed random function of the symbols at a few earlier
offsets (default 1, 3 and 6 positions back)::

    x[t] = table[x[t-1], x[t-3], x[t-6]]   (else a uniformly random symbol)

Predicting ``x[t]`` needs three lookups, each *bound* to its offset
(``table`` is not symmetric): a head that averages several positions loses
which symbol came from where, so the model needs several heads, or a detour
through its second layer. What the task favours: a few heads that each find
one offset; it gives nothing to heads beyond the number of offsets, and it
punishes heads too narrow to pick out one position among ``seq_len``.
Nothing is downloaded: the corpus is generated from a seed, identical on
every machine.

**The model** (:class:`TinyTransformer`): a decoder-only (causal) transformer
with learned positions, pre-LayerNorm blocks and the multi-head attention
written out below. Two ways to vary ``h`` (:class:`TrainConfig`'s ``d_head``):

* **fixed width** (``d_head=None``, Vaswani et al.'s design): the Q, K, V and
  output projections are ``d_model x d_model`` whatever ``h``; each head gets
  ``d_k = d_model / h``, so more heads means narrower heads, and the parameter
  count does not depend on ``h``;
* **fixed head size** (``d_head`` an int): every head has ``d_head``
  dimensions, so the attention's inner width ``h * d_head`` grows with ``h``
  (the residual stream, ``d_model``, and the MLP stay the same). More heads
  here also means more attention parameters.

With ``d_model = 64`` and ``d_head = 8`` the two designs build the same model
at ``h = 8``.

**The protocol** (:func:`head_count_study`): for each ``h`` and each seed,
the same data, the same number of steps and the same optimiser; the seed
fixes the initial weights and the batch order, so the same seed gives the same
curve. Reported: validation perplexity and next-symbol accuracy on the
predictable positions, mean and spread over seeds. The budget is small
(minutes for all models), so the study measures what each head count reaches
*in a fixed small budget*, learning speed included.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from attnlab.core.checks import check_positive_int
from attnlab.core.language import _

#: Vaswani et al.'s row (A) head counts
HEAD_COUNTS = (1, 4, 8, 16, 32)
#: the head size of the fixed-head-size design (the fixed-width design's head size at h = 8)
FIXED_D_HEAD = 8


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class LookupLanguage:
    """A synthetic language: each symbol depends on symbols at fixed earlier offsets.

    Attributes:
        vocab: number of symbols.
        offsets: how far back the rule looks (distinct, >= 1).
        noise: probability that a symbol is random instead of following the rule.
        seq_len: symbols per sequence.
        seed: fixes the rule table.
    """

    vocab: int = 4
    offsets: tuple[int, ...] = (1, 3, 6)
    noise: float = 0.1
    seq_len: int = 16
    seed: int = 1234

    def __post_init__(self) -> None:
        if self.vocab < 2:
            raise ValueError(_("vocab must be >= 2, got {vocab}").format(vocab=self.vocab))
        if not self.offsets or min(self.offsets) < 1 or len(set(self.offsets)) != len(self.offsets):
            raise ValueError(_("offsets must be distinct integers >= 1, got {offsets}").format(offsets=self.offsets))
        if not 0.0 <= self.noise < 1.0:
            raise ValueError(_("noise must be in [0, 1), got {noise}").format(noise=self.noise))
        if self.seq_len <= self.start:
            raise ValueError(_("seq_len must exceed the largest offset {start}, got {seq_len}").format(
                start=self.start, seq_len=self.seq_len))

    @property
    def start(self) -> int:
        """First position whose symbol follows the rule (the earlier ones are random)."""
        return max(self.offsets)

    def table(self) -> torch.Tensor:
        """The rule: ``vocab ** len(offsets)`` entries, each a symbol, shape ``(vocab,) * k``."""
        gen = torch.Generator().manual_seed(self.seed)
        size = (self.vocab,) * len(self.offsets)
        return torch.randint(self.vocab, size, generator=gen)

    def sample(self, n: int, seed: int) -> torch.Tensor:
        """``n`` sequences ``(n, seq_len)`` of int64 symbols, fixed by ``seed``."""
        gen = torch.Generator().manual_seed(seed)
        table = self.table()
        x = torch.randint(self.vocab, (n, self.seq_len), generator=gen)  # (n, T)
        follow = torch.rand(n, self.seq_len, generator=gen) >= self.noise  # (n, T)
        for t in range(self.start, self.seq_len):
            ruled = table[tuple(x[:, t - o] for o in self.offsets)]  # (n,)
            x[:, t] = torch.where(follow[:, t], ruled, x[:, t])
        return x

    def best_loss(self) -> float:
        """Cross-entropy (nats) of the true conditional distribution at a ruled position."""
        p_right = 1.0 - self.noise + self.noise / self.vocab
        p_other = self.noise / self.vocab
        loss = -p_right * math.log(p_right)
        if p_other > 0:
            loss -= (self.vocab - 1) * p_other * math.log(p_other)
        return loss

    def describe(self) -> str:
        rule = ", ".join(f"x[t-{o}]" for o in self.offsets)
        return _("lookup language: {vocab} symbols, x[t] = table[{rule}] with probability {p:.2f} (else random), "
                 "sequences of {n}; best possible perplexity {best:.3f}, chance {vocab}").format(
            vocab=self.vocab, rule=rule, p=1 - self.noise, n=self.seq_len, best=math.exp(self.best_loss()))


# --------------------------------------------------------------------------- model


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention with a causal mask: ``h`` heads of ``d_head`` dimensions.

    ``d_head=None`` gives the fixed-width split, ``d_head = d_model / h``
    (projections ``d_model x d_model`` for every ``h``); an int gives heads of
    that size whatever ``h`` (inner width ``h * d_head``).
    """

    def __init__(self, d_model: int, n_heads: int, d_head: int | None = None):
        super().__init__()
        if d_head is None:
            if d_model % n_heads:
                raise ValueError(_("d_model={d_model} is not divisible by n_heads={n_heads}").format(
                    d_model=d_model, n_heads=n_heads))
            d_head = d_model // n_heads
        self.n_heads, self.d_head = n_heads, d_head
        inner = n_heads * d_head
        self.qkv = nn.Linear(d_model, 3 * inner)
        self.out = nn.Linear(inner, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _width = x.shape
        inner = self.n_heads * self.d_head
        q, k, v = self.qkv(x).split(inner, dim=-1)  # 3 x (B, T, h * d_head)
        # 1. split the inner width into h heads
        q, k, v = (z.view(b, t, self.n_heads, self.d_head).transpose(1, 2) for z in (q, k, v))  # (B, h, T, d_head)
        # 2. scaled dot products, future positions blocked
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)  # (B, h, T, T)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)  # (T, T)
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)  # (B, h, T, T)
        # 3. mix the values, concatenate the heads, project
        context = (weights @ v).transpose(1, 2).reshape(b, t, inner)  # (B, T, h * d_head)
        return self.out(context)


class Block(nn.Module):
    """Pre-LayerNorm transformer block: attention then a 4x MLP, each with a residual."""

    def __init__(self, d_model: int, n_heads: int, d_head: int | None = None):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, d_head)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    """A small causal transformer language model: ``(B, T)`` symbols -> ``(B, T, vocab)`` logits."""

    def __init__(self, vocab: int, seq_len: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
                 d_head: int | None = None):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_head) for _layer in range(n_layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.shape[1], device=x.device)
        h = self.tok(x) + self.pos(positions)  # (B, T, D)
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln(h))  # (B, T, V)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- training


@dataclass(frozen=True)
class TrainConfig:
    """Everything that stays fixed across head counts.

    ``d_head``: None for the fixed-width design (``d_k = d_model / h``), or the
    size of every head in the fixed-head-size design (see the module docstring).
    """

    d_model: int = 64
    n_layers: int = 2
    steps: int = 180
    batch_size: int = 32
    lr: float = 5e-3
    weight_decay: float = 0.01
    warmup: int = 20
    n_train: int = 4096
    n_val: int = 512
    data_seed: int = 0
    eval_every: int = 100
    threads: int = 1  # models this small train fastest on one CPU thread (no thread synchronisation)
    d_head: int | None = None

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "steps", "batch_size", "n_train", "n_val", "eval_every", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(_("{name} must be >= 1, got {value}").format(name=name, value=getattr(self, name)))
        if self.d_head is not None and self.d_head < 1:
            raise ValueError(_("d_head must be None or >= 1, got {d_head}").format(d_head=self.d_head))

    @property
    def design(self) -> str:
        """``"fixed width"`` or ``"fixed head size"``: how ``h`` is varied."""
        return "fixed width" if self.d_head is None else "fixed head size"

    def head_size(self, n_heads: int) -> int:
        """``d_k`` of one head when the model has ``n_heads`` heads."""
        return self.d_model // n_heads if self.d_head is None else self.d_head


def shown_design(design: str) -> str:
    """A design's name (:attr:`TrainConfig.design`) as printed, in the current language."""
    names = {"fixed width": _("fixed width"), "fixed head size": _("fixed head size")}
    return names.get(design, design)


@dataclass
class RunResult:
    """One training run.

    Attributes:
        n_heads, seed: what varied.
        steps: the step numbers of ``train_loss`` and ``val_loss``.
        train_loss: training loss (mean over the last ``eval_every`` steps) at those steps.
        val_loss: validation loss at those steps.
        val_perplexity, val_accuracy: at the end, on the predictable positions.
        parameters: parameter count; seconds: wall time.
        d_k: the size of each head.
    """

    n_heads: int
    seed: int
    steps: list[int]
    train_loss: list[float]
    val_loss: list[float]
    val_perplexity: float
    val_accuracy: float
    parameters: int
    seconds: float
    d_k: int = 0


def _ruled_loss(model: nn.Module, x: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Next-symbol loss and accuracy on the ruled positions ``start..T-1``."""
    logits = model(x[:, :-1])[:, start - 1 :]  # (B, T - start, V): predictions of x[start:]
    target = x[:, start:]  # (B, T - start)
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    acc = (logits.argmax(-1) == target).float().mean()
    return loss, acc


def evaluate(model: nn.Module, data: torch.Tensor, start: int, batch_size: int = 512) -> tuple[float, float]:
    """Mean loss (nats) and accuracy over ``data (N, T)`` on the ruled positions."""
    model.eval()
    total_loss = total_acc = 0.0
    with torch.no_grad():
        for s in range(0, len(data), batch_size):
            chunk = data[s : s + batch_size]
            loss, acc = _ruled_loss(model, chunk, start)
            total_loss += float(loss) * len(chunk)
            total_acc += float(acc) * len(chunk)
    model.train()
    return total_loss / len(data), total_acc / len(data)


def train_one(n_heads: int, seed: int, language: LookupLanguage | None = None,
              config: TrainConfig | None = None) -> RunResult:
    """Train one model with ``n_heads`` heads from scratch; deterministic given ``seed``.

    The data (train and validation sets) depend only on ``config.data_seed``;
    ``seed`` fixes the initial weights and the order of the batches. Runs on
    ``config.threads`` CPU threads (restored afterwards).
    """
    n_heads = check_positive_int(n_heads, "n_heads")
    config = config or TrainConfig()
    previous = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        return _train_one(n_heads, seed, language or LookupLanguage(), config)
    finally:
        torch.set_num_threads(previous)


def _train_one(n_heads: int, seed: int, language: LookupLanguage, config: TrainConfig) -> RunResult:
    if config.d_head is None and config.d_model % n_heads:
        raise ValueError(_("n_heads={n_heads} does not divide d_model={d_model}").format(
            n_heads=n_heads, d_model=config.d_model))
    train = language.sample(config.n_train, seed=config.data_seed)  # (N, T)
    val = language.sample(config.n_val, seed=config.data_seed + 10_000)
    torch.manual_seed(seed)
    model = TinyTransformer(language.vocab, language.seq_len, config.d_model, config.n_layers, n_heads,
                            config.d_head)
    # foreach: one fused update for all parameters (the per-tensor loop dominates at this size)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay, foreach=True)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, config))
    gen = torch.Generator().manual_seed(seed)
    steps, train_curve, val_curve, running = [], [], [], []
    start_time = time.time()
    model.train()
    for step in range(1, config.steps + 1):
        idx = torch.randint(len(train), (config.batch_size,), generator=gen)
        loss, _accuracy = _ruled_loss(model, train[idx], language.start)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        schedule.step()
        running.append(float(loss.detach()))
        if step % config.eval_every == 0 or step == config.steps:
            steps.append(step)
            train_curve.append(float(np.mean(running)))
            running = []
            val_loss, val_acc = evaluate(model, val, language.start)
            val_curve.append(val_loss)
    return RunResult(n_heads, seed, steps, train_curve, val_curve, math.exp(val_loss), val_acc,
                     count_parameters(model), time.time() - start_time, config.head_size(n_heads))


def _lr_factor(step: int, config: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < config.warmup:
        return (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


# --------------------------------------------------------------------------- the study


@dataclass
class HeadCountStudy:
    """Results for every head count and seed, in one design.

    Attributes:
        runs: all :class:`RunResult` objects.
        language, config: what was held fixed (``config.design`` says how ``h`` varied).
    """

    runs: list[RunResult]
    language: LookupLanguage
    config: TrainConfig
    head_counts: list[int] = field(default_factory=list)

    def perplexities(self, h: int) -> np.ndarray:
        return np.array([r.val_perplexity for r in self.runs if r.n_heads == h])

    def accuracies(self, h: int) -> np.ndarray:
        return np.array([r.val_accuracy for r in self.runs if r.n_heads == h])

    def perplexities_by_heads(self) -> dict[int, np.ndarray]:
        """``{h: (seeds,) validation perplexities}`` for every head count, in study order."""
        return {h: self.perplexities(h) for h in self.head_counts}

    def summary(self) -> dict[int, dict[str, float]]:
        """Per ``h``: mean, standard deviation, min and max of perplexity; mean accuracy; d_k; parameters."""
        out = {}
        for h in self.head_counts:
            p, a = self.perplexities(h), self.accuracies(h)
            params = [r.parameters for r in self.runs if r.n_heads == h]
            out[h] = {"ppl_mean": float(p.mean()), "ppl_sd": float(p.std(ddof=1)) if len(p) > 1 else 0.0,
                      "ppl_min": float(p.min()), "ppl_max": float(p.max()),
                      "acc_mean": float(a.mean()), "acc_sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
                      "d_k": self.config.head_size(h), "parameters": params[0], "seeds": len(p)}
        return out

    def table(self) -> str:
        """Perplexity (mean ± sd over seeds, range), accuracy, head size and parameters per head count."""
        lines = [f"{shown_design(self.config.design)}:",
                 f"{_('heads'):>5} {'d_k':>4} {_('params'):>7} {_('perplexity (mean ± sd)'):>24} {_('range'):>15} "
                 f"{_('accuracy'):>16}"]
        for h, s in self.summary().items():
            lines.append(f"{h:>5} {s['d_k']:>4} {s['parameters']:>7} {s['ppl_mean']:>15.3f} ± {s['ppl_sd']:<6.3f} "
                         f"{s['ppl_min']:>6.3f}-{s['ppl_max']:<6.3f} {s['acc_mean']:>8.3f} ± {s['acc_sd']:.3f}")
        lines.append(_("(best possible perplexity {best:.3f}; chance {chance})").format(
            best=math.exp(self.language.best_loss()), chance=self.language.vocab))
        return "\n".join(lines)


def head_count_study(head_counts: Sequence[int] = HEAD_COUNTS, seeds: Sequence[int] = (0, 1, 2, 3, 4), *,
                     language: LookupLanguage | None = None, config: TrainConfig | None = None,
                     progress: bool = False, reuse: HeadCountStudy | None = None,
                     workers: int = 1) -> HeadCountStudy:
    """Train one model per (head count, seed) with everything else fixed.

    ``reuse``: a study of the other design on the same language; where it
    trained the identical model (same ``h``, seed, head size and settings,
    :func:`same_model`) its run is taken as it is instead of training again
    (training is deterministic, so the numbers are the same).

    ``workers``: how many models train at once, each in a process of its own on
    ``config.threads`` threads (a machine with 2 cores: ``workers=2``). The runs
    do not depend on each other and each is deterministic, so the numbers are
    those of training them one after another.
    """
    language = language or LookupLanguage()
    config = config or TrainConfig()
    workers = check_positive_int(workers, "workers")
    if not head_counts or not seeds:
        raise ValueError(_("give at least one head count and one seed"))
    jobs = [(h, s) for h in head_counts for s in seeds]
    done = {job: _reused(reuse, language, config, *job) for job in jobs}
    todo = [job for job in jobs if done[job] is None]
    desc = _("training ({design})").format(design=shown_design(config.design))
    with tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc=desc, unit=_("model"), disable=not progress) as bar:
        done.update(zip(todo, _train_all(todo, language, config, workers, lambda: bar.update(1))))
    return HeadCountStudy([done[job] for job in jobs], language, config, list(head_counts))


def _train_all(jobs: list[tuple[int, int]], language: LookupLanguage, config: TrainConfig, workers: int,
               finished: Callable[[], object]) -> list[RunResult]:
    """:func:`train_one` of every ``(n_heads, seed)``, in the order of ``jobs``, on ``workers``
    processes (1: here); ``finished()`` is called as each run ends (a progress bar)."""
    if workers == 1 or len(jobs) < 2:
        out = []
        for n_heads, seed in jobs:
            out.append(train_one(n_heads, seed, language, config))
            finished()
        return out
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked thread pools
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool:
        # the most heads first (the longest runs), so no worker sits idle at the end
        futures = {job: pool.submit(train_one, job[0], job[1], language, config)
                   for job in sorted(jobs, key=lambda job: -job[0])}
        for _future in as_completed(futures.values()):
            finished()
        return [futures[job].result() for job in jobs]


def same_model(a: TrainConfig, b: TrainConfig, n_heads: int) -> bool:
    """Do the two configurations build and train the identical model with ``n_heads`` heads?"""
    fields_a = {k: v for k, v in vars(a).items() if k != "d_head"}
    fields_b = {k: v for k, v in vars(b).items() if k != "d_head"}
    return fields_a == fields_b and a.head_size(n_heads) == b.head_size(n_heads)


def _reused(study: HeadCountStudy | None, language: LookupLanguage, config: TrainConfig, n_heads: int,
            seed: int) -> RunResult | None:
    if study is None or study.language != language or not same_model(study.config, config, n_heads):
        return None
    return next((r for r in study.runs if r.n_heads == n_heads and r.seed == seed), None)


def fixed_head_size(config: TrainConfig, d_head: int = FIXED_D_HEAD) -> TrainConfig:
    """The same configuration in the fixed-head-size design (every head ``d_head`` wide)."""
    return replace(config, d_head=d_head)


def smoke_config() -> TrainConfig:
    """A seconds-long configuration for smoke runs and tests."""
    return TrainConfig(steps=6, batch_size=16, n_train=256, n_val=64, eval_every=3, warmup=2)
