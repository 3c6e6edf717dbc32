"""Which heads does a task need? Small probes on frozen representations.

Two tasks are built from the texts' own annotations (no download):

* **sentence level**: which family (template) a query comes from, read off its
  sentence vector (the mean-pooled final hidden state);
* **token level**: does this token begin a word? read off each token's final
  hidden state; the words are the queries' own segmentation (``words``).

Each task gets a logistic-regression probe (scikit-learn), trained once on the
full model's representations of the *training* queries. A head's importance
for a task is what masking it costs the frozen probe on **held-out** queries:
how far it lowers the log-odds of each query's right label (for the token
task, the mean over its labelled tokens). The log-odds, unlike the log-loss,
do not flatten out where the probe is already sure (a probe right on almost
every query would otherwise leave a handful of queries to carry every head's
cost, and the rankings would be noise). Every query has its own cost, so each task's ranking of the
heads has a split-half agreement (two disjoint halves of the held-out queries)
and the two tasks' rankings an agreement on the same queries
(:func:`task_agreements`).

**Probe noise.** The split-half agreement resamples the queries of a *fixed*
probe; the probe itself was fitted on a sample of training queries, and another
sample could rank the heads differently. So each task's probe is also refitted
on the two halves of :data:`N_SPLITS` random splits of the training queries
(:attr:`TaskProbes.refits`; from the features already computed, no further pass
of the model), and a task's **reliability** is the agreement of one split's two
refits' rankings on two disjoint halves of the held-out queries: both kinds of
noise at once, averaged over the splits, with the query bootstrap nested inside
the splits for the intervals (:func:`refit_agreements`). The agreement of two tasks, measured the same way
and divided by the square root of the two reliabilities, is the agreement
their noise-free rankings would have (disattenuated, Spearman's correction).

**Token identity.** Whether a token begins a word can often be read off the
token itself (on Chinese text many tokens are whole words): the accuracy of
answering each token's commonest training label is kept beside the probe's
(:func:`identity_accuracy`).

Word starts are found by walking the model's own tokens along the text (the
``##`` and ``▁`` markers dropped, case ignored); a query whose tokens cannot
be walked (an unknown token, say) gets no token labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, Sequence

import numpy as np
import torch
from scipy.stats import rankdata
from sklearn.linear_model import LogisticRegression

from attnlab.analysis.importance import (
    Objective,
    importance_agreement,
    make_objective,
    pooled,
    single_head_states,
    split_half_agreement,
)
from attnlab.analysis.stats import Interval, resample_counts
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record

#: the two tasks, as stored (English) and as printed; catalogued, so a number's key that names one
#: ("reliability, family") reads in the reader's language
TASKS = (N_("family"), N_("word start"))
TASK_LABELS = {"family": N_("query family (sentence level)"), "word start": N_("word start (token level)")}


def task_label(task: str) -> str:
    """A task's name (:data:`TASKS`) in the reader's language; any other name unchanged."""
    return _(TASK_LABELS[task]) if task in TASK_LABELS else task


#: no label for this token (special token, marker, or a query that could not be walked)
IGNORE = -1
#: probabilities are clipped here before the log (a class the probe never saw)
FLOOR = 1e-9
#: inverse regularisation strength of both probes (scikit-learn's ``C``)
PROBE_C = 1.0
#: random splits of the training queries into two halves, each half refitting both probes
N_SPLITS = 20


class Annotated(Protocol):
    """What a probe needs of a query (:class:`attnlab.data.corpus.Query` has it all)."""

    text: str
    words: tuple[str, ...]
    family: str
    joiner: str


def _clean(token: str) -> str:
    return token.replace("##", "").replace("▁", "").replace("Ġ", "").strip()


def word_start_labels(tokens: Sequence[str], words: Sequence[str], joiner: str,
                      special: Sequence[bool]) -> np.ndarray:
    """``(T,)``: 1 where a token begins a word, 0 inside a word, :data:`IGNORE` elsewhere.

    Args:
        tokens: the model's tokens of the text (padding and special tokens included).
        words: the text's words; ``joiner.join(words)`` is the text.
        special: ``(T,)`` True for special and padding tokens.
    """
    text = joiner.join(words).lower()
    starts, pos = set(), 0
    for w in words:
        starts.add(pos)
        pos += len(w) + len(joiner)
    labels = np.full(len(tokens), IGNORE, dtype=int)
    pos = 0
    for t, (token, skip) in enumerate(zip(tokens, special)):
        piece = _clean(token).lower()
        if skip or not piece:
            continue
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if text[pos:pos + len(piece)] != piece:
            return np.full(len(tokens), IGNORE, dtype=int)  # cannot walk this text: no labels at all
        labels[t] = int(pos in starts)
        pos += len(piece)
    return labels


@dataclass
class Probe:
    """A fitted logistic-regression probe: standardise with the training features, then
    ``softmax(x W^T + b)`` over ``classes`` (a binary probe has one row of ``W``)."""

    classes: np.ndarray  # (C,) the labels seen in training
    weights: np.ndarray  # (C', D)
    bias: np.ndarray  # (C',)
    mean: np.ndarray  # (D,)
    scale: np.ndarray  # (D,)

    def log_probs(self, x: np.ndarray) -> np.ndarray:
        """``(n, C)`` log-probabilities of every class."""
        z = (np.asarray(x, dtype=float) - self.mean) / self.scale @ self.weights.T + self.bias  # (n, C')
        if z.shape[1] == 1:  # binary: the one row scores the second class
            z = np.concatenate([np.zeros_like(z), z], axis=1)
        z = z - z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))

    def losses(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``(n,)`` log-loss of every example; a label the probe never saw gets ``-log FLOOR``."""
        logp = self.log_probs(x)  # (n, C)
        column = {c: i for i, c in enumerate(self.classes.tolist())}
        idx = np.array([column.get(v, -1) for v in np.asarray(y).tolist()])
        out = np.full(len(idx), -np.log(FLOOR))
        seen = idx >= 0
        out[seen] = -np.maximum(logp[np.flatnonzero(seen), idx[seen]], np.log(FLOOR))
        return out

    def log_odds(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``(n,)`` log-odds of the right label, ``log p_y - log(1 - p_y)``: unlike the log-loss it
        does not flatten out where the probe is already sure, so every example tells how far a
        change of the representation pushes it; 0 for a label the probe never saw
        (:func:`stacked_log_odds` of this probe alone)."""
        return stacked_log_odds([self], x, y)[0]

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        """Share of examples whose most probable class is their label."""
        return float(np.mean(self.classes[np.argmax(self.log_probs(x), axis=1)] == np.asarray(y)))

    def affine(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W' (C', D), b' (C',))`` with the standardisation folded in: ``x W'^T + b'`` are the logits."""
        w = self.weights / self.scale  # (C', D)
        return w, self.bias - w @ self.mean


def stacked_log_odds(probes: Sequence[Probe], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(P, n)``: :meth:`Probe.log_odds` of each of ``probes`` on the same features ``x`` ``(n, D)``,
    in one matrix product (the refits of a task read the same features). The log-odds of the right
    class is its logit minus the log-sum-exp of the other classes' logits (the normaliser cancels)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y)
    parts = [p.affine() for p in probes]
    logits = x @ np.concatenate([w for w, _b in parts]).T + np.concatenate([b for _w, b in parts])  # (n, sum C')
    out, start = np.zeros((len(probes), len(y))), 0
    for i, (p, (w, _b)) in enumerate(zip(probes, parts)):
        z = logits[:, start:start + len(w)]
        start += len(w)
        if z.shape[1] == 1:  # binary: the one row scores the second class against a logit of 0
            z = np.concatenate([np.zeros_like(z), z], axis=1)
        idx = np.minimum(np.searchsorted(p.classes, y), len(p.classes) - 1)
        rows = np.flatnonzero(p.classes[idx] == y)  # labels the probe saw
        others = z[rows].copy()  # (n', C): every class but the right one
        others[np.arange(len(rows)), idx[rows]] = -np.inf
        top = others.max(axis=1)
        out[i, rows] = z[rows, idx[rows]] - top - np.log(np.exp(others - top[:, None]).sum(axis=1))
    return out


def fit_probe(x: np.ndarray, y: np.ndarray, *, c: float = PROBE_C, start: Probe | None = None) -> Probe:
    """A :class:`Probe` fitted on features ``x`` ``(n, D)`` and labels ``y`` ``(n,)`` (at least two classes).

    ``start``: a probe fitted on similar data (a refit's full-data probe) whose weights the solver
    starts from when it has the same classes; the optimum is the same (the loss is convex), only
    reached in fewer steps."""
    x, y = np.asarray(x, dtype=float), np.asarray(y)
    if len(np.unique(y)) < 2:
        raise ValueError("a probe needs at least two classes in its training labels")
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-8
    model = LogisticRegression(C=c, max_iter=2000, warm_start=start is not None)
    if start is not None and np.array_equal(start.classes, np.unique(y)):
        model.coef_, model.intercept_ = start.weights.copy(), start.bias.copy()
    model.fit((x - mean) / scale, y)
    return Probe(model.classes_, model.coef_, model.intercept_, mean, scale)


@dataclass
class TaskData:
    """Labels of a set of queries, aligned with the batches of an :class:`Objective` on their texts.

    Attributes:
        family: ``(N,)`` family names.
        word_start: one ``(B, T)`` int array per batch (:func:`word_start_labels`).
    """

    family: np.ndarray
    word_start: list[np.ndarray]


def task_data(m: LoadedModel, objective: Objective, queries: Sequence[Annotated]) -> TaskData:
    """The two tasks' labels of ``queries`` (the texts of ``objective``, in order)."""
    special_ids = set(m.tokenizer.all_special_ids)
    labels, row = [], 0
    for batch in objective.batches:
        ids = batch["inputs"]["input_ids"].cpu()  # (B, T)
        mask = batch["inputs"]["attention_mask"].cpu()  # (B, T)
        rows = []
        for i in range(ids.shape[0]):
            q = queries[row]
            tokens = m.tokenizer.convert_ids_to_tokens(ids[i].tolist())
            special = [(not bool(mask[i, t])) or int(ids[i, t]) in special_ids for t in range(ids.shape[1])]
            rows.append(word_start_labels(tokens, q.words, q.joiner, special))
            row += 1
        labels.append(np.stack(rows))
    return TaskData(np.array([q.family for q in queries]), labels)


def features(states: list[tuple[torch.Tensor, torch.Tensor]], data: TaskData) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each task's ``(x (n, D), y (n,), query (n,))`` from the final states of :meth:`Objective.final_states`:
    sentence vectors for ``"family"``, the labelled tokens' states for ``"word start"``."""
    sentence = np.concatenate([pooled(h, mask).double().cpu().numpy() for h, mask in states])  # (N, D)
    tok_x, tok_y, tok_q, offset = [], [], [], 0
    for (hidden, _mask), labels in zip(states, data.word_start):
        keep = labels != IGNORE  # (B, T)
        rows, cols = np.nonzero(keep)
        tok_x.append(hidden.double().cpu().numpy()[rows, cols])  # (n_b, D)
        tok_y.append(labels[rows, cols])
        tok_q.append(rows + offset)
        offset += hidden.shape[0]
    return {"family": (sentence, data.family, np.arange(len(sentence))),
            "word start": (np.concatenate(tok_x), np.concatenate(tok_y), np.concatenate(tok_q))}


def per_query_losses(probes: dict[str, Probe], states, data: TaskData) -> np.ndarray:
    """``(N, tasks)``: each held-out query's loss under each task's probe, minus the log-odds of
    the right label (:meth:`Probe.log_odds`; the token task: the mean over the query's labelled
    tokens; NaN for a query without any). Masking a head that the task needs raises it."""
    return _query_losses([probes], features(states, data), len(data.family))[0]


def _query_losses(probe_sets: Sequence[dict[str, Probe]], feats: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
                  n_queries: int) -> np.ndarray:
    """``(P, N, tasks)``: :func:`per_query_losses` of each of ``probe_sets`` from the tasks' :func:`features`."""
    out = np.full((len(probe_sets), n_queries, len(TASKS)), np.nan)
    for j, (task, (x, y, query)) in enumerate(feats.items()):
        losses = -stacked_log_odds([ps[task] for ps in probe_sets], x, y)  # (P, n)
        count = np.bincount(query, minlength=n_queries)
        for i, row in enumerate(losses):
            np.divide(np.bincount(query, weights=row, minlength=n_queries), count, out=out[i, :, j], where=count > 0)
    return out


@dataclass
class TaskStudy(Record):
    """Two probes' head importance on held-out queries (a Record: lesson 11 saves it).

    Attributes:
        tasks: the task names (:data:`TASKS`).
        costs: task -> ``(N, L, H)``: how far masking each head lowers each held-out query's
            log-odds of the right label (:func:`per_query_losses`).
        accuracy: task -> the probe's accuracy on the held-out queries, full model.
        chance: task -> the accuracy of always answering the training set's commonest label.
        n_train, n_test: training and held-out queries; ``n_tokens``: labelled held-out tokens.
        refit_costs: task -> ``(S, 2, N, L, H)``: the same costs under the probes refitted on
            the two halves of each of ``S`` random splits of the training queries (``(2, N, L, H)``
            in a record from before the splits, empty in one from before the refits).
        identity_accuracy: the word-start accuracy of each token's commonest training label
            (:func:`identity_accuracy`; NaN when not measured).
    """

    tasks: list[str]
    costs: dict[str, np.ndarray]
    accuracy: dict[str, float]
    chance: dict[str, float]
    n_train: int = 0
    n_test: int = 0
    n_tokens: int = 0
    seed: int = 0
    refit_costs: dict[str, np.ndarray] = field(default_factory=dict)
    identity_accuracy: float = float("nan")

    def split_half(self, task: str) -> Interval:
        """The task's ranking of the heads on two disjoint halves of the held-out queries
        (:func:`attnlab.analysis.importance.split_half_agreement`)."""
        return split_half_agreement(_finite(self.costs[task]), seed=self.seed)

    def agreement(self) -> Interval:
        """The two tasks' rankings on the same held-out queries (paired resampling)."""
        a, b = (np.asarray(self.costs[t], dtype=float) for t in self.tasks)
        keep = np.isfinite(a).all(axis=(1, 2)) & np.isfinite(b).all(axis=(1, 2))
        return importance_agreement(a[keep], b[keep], paired=True, seed=self.seed)

    @cached_property
    def fixed_evidence(self) -> tuple[dict[str, Interval], Interval]:
        """``(split-half per task, agreement of the two tasks)`` of the fixed probes, computed once
        (a sensitivity table judges the same study many times)."""
        return {t: self.split_half(t) for t in self.tasks}, self.agreement()

    @property
    def n_splits(self) -> int:
        """How many splits of the training queries the refitted probes came from (0: none)."""
        return split_count(self.refit_costs) if self.refit_costs else 0

    def refit_agreements(self, *, n_boot: int = 1000) -> dict[str, Interval]:
        """:func:`refit_agreements` of this study's refitted probes (both tasks)."""
        if set(self.refit_costs) != set(self.tasks):
            raise ValueError("this task study has no refitted probes (measured before them)")
        return refit_agreements(self.refit_costs, self.tasks, n_boot=n_boot, seed=self.seed)


def _finite(costs: np.ndarray) -> np.ndarray:
    costs = np.asarray(costs, dtype=float)
    return costs[np.isfinite(costs).all(axis=(1, 2))]


def split_count(refit_costs: dict[str, np.ndarray]) -> int:
    """How many splits of the training queries the refitted probes came from: the leading axis
    of ``(S, 2, N, L, H)`` costs; 1 for ``(2, N, L, H)`` costs (a record from before the splits)."""
    shapes = {np.ndim(c) for c in refit_costs.values()}
    if shapes == {4}:
        return 1
    if shapes != {5}:
        raise ValueError("refitted costs must all be (2, N, L, H) or all (S, 2, N, L, H)")
    return int(next(iter(refit_costs.values())).shape[0])


def _by_split(refit_costs: dict[str, np.ndarray], tasks: Sequence[str]) -> tuple[dict[str, np.ndarray], int]:
    """``({task: (S, 2, N', L*H)}, N')``: the costs of the queries every refit scored (finite)."""
    costs = {t: np.asarray(refit_costs[t], dtype=float) for t in tasks}
    costs = {t: c[None] if c.ndim == 4 else c for t, c in costs.items()}  # (S, 2, N, L, H)
    keep = np.ones(costs[tasks[0]].shape[2], dtype=bool)
    for c in costs.values():
        keep &= np.isfinite(c).all(axis=(0, 1, 3, 4))
    n = int(keep.sum())
    return {t: c[:, :, keep].reshape(c.shape[0], 2, n, -1) for t, c in costs.items()}, n


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks along the last axis (ties averaged), centred and scaled to unit length: the dot product
    of two rows is their Spearman correlation (NaN for a constant row)."""
    r = rankdata(x, axis=-1)
    r = r - r.mean(axis=-1, keepdims=True)
    norm = np.sqrt((r * r).sum(axis=-1, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return r / norm


def _split_numbers(a1: np.ndarray, a2: np.ndarray, b1: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """``(..., 3)``: task a's reliability, task b's, and the mean of the two cross-task agreements
    ``(a1, b2)`` and ``(b1, a2)``, from head scores ``(..., L*H)`` on the two query halves."""
    a1, a2, b1, b2 = (_ranks(x) for x in (a1, a2, b1, b2))
    rho = lambda x, y: (x * y).sum(axis=-1)  # noqa: E731
    return np.stack([rho(a1, a2), rho(b1, b2), 0.5 * (rho(a1, b2) + rho(b1, a2))], axis=-1)


def disattenuate(across: np.ndarray, rel_a: np.ndarray, rel_b: np.ndarray) -> np.ndarray:
    """``across / sqrt(rel_a * rel_b)``, clipped to ``[-1, 1]`` (a correlation; noise in the
    reliabilities can push the ratio past 1); NaN where a reliability is not positive."""
    across, rel_a, rel_b = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (across, rel_a, rel_b)))
    out = np.full(across.shape, np.nan)
    ok = (rel_a > 0) & (rel_b > 0)
    out[ok] = np.clip(across[ok] / np.sqrt(rel_a[ok] * rel_b[ok]), -1.0, 1.0)
    return out


def resampled_heads(n_heads: int, n_boot: int, seed: int) -> np.ndarray:
    """``(1 + n_boot, n_heads)`` head indices: every head once (the estimate), then ``n_boot``
    resamples of the heads with replacement."""
    rng = np.random.default_rng(seed)
    return np.vstack([np.arange(n_heads), rng.integers(0, n_heads, size=(n_boot, n_heads))])


def refit_agreements(refit_costs: dict[str, np.ndarray], tasks: Sequence[str], *, n_boot: int = 1000,
                     seed: int = 0) -> dict[str, Interval]:
    """Reliabilities, the cross-task agreement and its disattenuated value, from refitted probes,
    with the noise of the probes' training split **and** of the queries in every interval.

    Each split ``s`` of the training queries gave each task two probes, refitted on its halves A
    and B. The held-out queries are split into two halves as well (a new split for each ``s``,
    from ``seed + s``): on half 1 each task's head ranking comes from its refit A, on half 2 from
    its refit B, so two rankings of one task differ by both the queries and the probe's training
    sample. Per split: a task's reliability is the Spearman agreement of its two rankings, the
    agreement across tasks the mean of the two cross pairs ``(a_A, b_B)`` and ``(b_A, a_B)``.

    The estimates are the means over the splits, and the disattenuated agreement is
    ``across / sqrt(reliability a * reliability b)`` of those means, clipped to ``[-1, 1]``
    (Spearman's correction; NaN when a reliability is not positive). The intervals nest the query
    bootstrap inside the splits: ``n_boot`` resamples in all, shared out over the splits, each
    resampling the queries within both halves of its split, and the heads, and computing every
    number on that split alone; the 2.5 and 97.5 percentiles of the pooled resamples. A value that
    moves with the probes' training split therefore moves its interval as much as any query
    resample does.

    Why the heads are resampled too: the splits share one training set, so the part of a probe's
    error that every refit shares (what the whole training sample got wrong) does not move from
    split to split; over a few hundred heads, that error lines up with the true ranking a little
    by chance and moves the estimate by about as much as the splits do. Resampling the heads
    measures that chance alignment. At the course's sizes (144 heads, 128 queries, 256 training
    queries, true agreement 0.51, probe noise as large as lesson 11's: one split's value scattering
    by SD 0.12) the intervals from 20 splits cover the true agreement in 29 of 30 fresh samples;
    without the heads resampled, in 21 (``tests/test_probes.py::test_probe_refit_coverage``).

    Args:
        refit_costs: task -> ``(S, 2, N, L, H)`` per-query head costs under refits A and B of
            each split (``(2, N, L, H)``: one split, a record from before the splits).
        tasks: the two tasks, ``(a, b)``.

    Returns:
        ``{"reliability a": ..., "reliability b": ..., "across": ..., "disattenuated": ...}``.
    """
    a, b = tasks
    costs, n = _by_split(refit_costs, tasks)
    if n < 4:
        raise ValueError(f"a split-half comparison needs at least 4 queries, got {n}")
    splits = costs[a].shape[0]
    per_split, boots = [], []
    for s in range(splits):
        order = np.random.default_rng(seed + s).permutation(n)
        first, second = order[: n // 2], order[n // 2:]
        w1 = np.vstack([np.full(len(first), 1.0 / len(first)),
                        resample_counts(len(first), -(-n_boot // splits), seed + s) / len(first)])  # (1+B, N1)
        w2 = np.vstack([np.full(len(second), 1.0 / len(second)),
                        resample_counts(len(second), -(-n_boot // splits), seed + s + splits) / len(second)])
        scores = [w @ costs[t][s, r, rows] for t in (a, b) for r, (w, rows) in enumerate(((w1, first), (w2, second)))]
        pick = resampled_heads(scores[0].shape[-1], len(w1) - 1, seed + 2 * splits + s)  # (1+B, K)
        scores = [np.take_along_axis(x, pick, axis=1) for x in scores]
        values = _split_numbers(*scores)  # (1+B, 3): the estimate first, then the resamples
        per_split.append(values[0])
        boots.append(values[1:])
    mean = np.nanmean(np.stack(per_split), axis=0) if splits > 1 else per_split[0]  # (3,)
    pooled = np.concatenate(boots)  # (S*B, 3)
    pooled = np.column_stack([pooled, disattenuate(pooled[:, 2], pooled[:, 0], pooled[:, 1])])  # (S*B, 4)
    estimate = np.r_[mean, disattenuate(mean[2], mean[0], mean[1])]
    out = {}
    for j, name in enumerate(("reliability a", "reliability b", "across", "disattenuated")):
        column = pooled[:, j]
        low, high = np.nanpercentile(column, [2.5, 97.5]) if np.isfinite(column).any() else (np.nan, np.nan)
        out[name] = Interval(float(estimate[j]), float(low), float(high), 0.95, n)
    return out


def identity_accuracy(train_ids: np.ndarray, train_y: np.ndarray, test_ids: np.ndarray, test_y: np.ndarray) -> float:
    """Accuracy of answering each held-out token's commonest label among the training tokens with
    the same id (the commonest label overall for an id never seen): how much of the word-start
    task token identity alone explains."""
    train_ids, train_y = np.asarray(train_ids), np.asarray(train_y)
    values, counts = np.unique(train_y, return_counts=True)
    fallback = values[np.argmax(counts)]
    table: dict[int, object] = {}
    for token in np.unique(train_ids):
        labels, n = np.unique(train_y[train_ids == token], return_counts=True)
        table[int(token)] = labels[np.argmax(n)]
    guess = np.array([table.get(int(t), fallback) for t in np.asarray(test_ids)])
    return float(np.mean(guess == np.asarray(test_y))) if len(guess) else float("nan")


def labelled_token_ids(objective: Objective, data: "TaskData") -> np.ndarray:
    """``(n,)``: the id of every labelled token, in the order of :func:`features`'s word-start rows."""
    out = []
    for batch, labels in zip(objective.batches, data.word_start):
        ids = batch["inputs"]["input_ids"].cpu().numpy()  # (B, T)
        out.append(ids[labels != IGNORE])
    return np.concatenate(out)


def training_halves(n: int, n_splits: int, seed: int = 0) -> list[np.ndarray]:
    """The two halves of each of ``n_splits`` random splits of ``n`` training queries, in order
    (split 0 half A, split 0 half B, ...); split 0 is the one ``seed`` alone draws."""
    if n_splits < 1:
        raise ValueError(f"the probes need at least one split of their training queries, got {n_splits}")
    out = []
    for s in range(n_splits):
        order = np.random.default_rng(seed + s).permutation(n)
        out += [order[: n // 2], order[n // 2:]]
    return out


@dataclass
class TaskProbes:
    """Both tasks' probes, fitted on the training queries, and the labels of the held-out queries
    (aligned with the batches of the held-out :class:`~attnlab.analysis.importance.Objective`)."""

    probes: dict[str, Probe]
    data: TaskData
    chance: dict[str, float]
    n_train: int
    refits: list[dict[str, Probe]] = field(default_factory=list)  # split 0 half A, split 0 half B, split 1 half A, ...
    identity_accuracy: float = float("nan")

    def losses(self, states: list[tuple[torch.Tensor, torch.Tensor]]) -> np.ndarray:
        """A states reducer (:func:`attnlab.analysis.importance.single_head_states`): ``(N, tasks)``
        per-query losses, minus the log-odds of the right label (:func:`per_query_losses`)."""
        return per_query_losses(self.probes, states, self.data)

    def refit_losses(self, states: list[tuple[torch.Tensor, torch.Tensor]]) -> np.ndarray:
        """The same reducer for the refitted probes: ``(S, 2, N, tasks)`` (split, half)."""
        out = _query_losses(self.refits, features(states, self.data), len(self.data.family))  # (2S, N, tasks)
        return out.reshape((len(self.refits) // 2, 2) + out.shape[1:])


def fit_probes(m: LoadedModel, train: Sequence[Annotated], held_out: Objective, test: Sequence[Annotated], *,
               batch_size: int = 64, seed: int = 0, n_splits: int = N_SPLITS) -> TaskProbes:
    """Fit both probes on the full model's final states of ``train`` (one pass), refit each on the
    two halves of ``n_splits`` random splits of ``train`` (from ``seed``; the refits read the same
    cached features, no further pass), and label ``test``, the queries whose texts ``held_out``
    holds (in order)."""
    if set(q.text for q in train) & set(q.text for q in test):
        raise ValueError("the training and the held-out queries must not share a text")
    fit_on = make_objective(m, [q.text for q in train], kind="sentence", batch_size=batch_size)
    train_data = task_data(m, fit_on, train)
    train_feats = features(fit_on.full_states(), train_data)
    probes = {task: fit_probe(x, y) for task, (x, y, _q) in train_feats.items()}
    refits = [{task: fit_probe(x[np.isin(q, part)], y[np.isin(q, part)], start=probes[task])
               for task, (x, y, q) in train_feats.items()}
              for part in training_halves(len(train), n_splits, seed)]
    data = task_data(m, held_out, test)
    test_y = {task: y for task, (_x, y, _q) in features(held_out.full_states(), data).items()}
    chance = {}
    for task, (_x, y, _q) in train_feats.items():
        values, counts = np.unique(y, return_counts=True)
        chance[task] = float(np.mean(test_y[task] == values[np.argmax(counts)]))
    identity = identity_accuracy(labelled_token_ids(fit_on, train_data), train_feats["word start"][1],
                                 labelled_token_ids(held_out, data), test_y["word start"])
    return TaskProbes(probes, data, chance, len(train), refits, identity)


def task_study(m: LoadedModel, task_probes: TaskProbes, held_out: Objective, *, masked: np.ndarray | None = None,
               refits: np.ndarray | None = None, progress: bool = False, threads: int | None = None,
               seed: int = 0) -> TaskStudy:
    """Every head's cost to both probes (and to their refits) on the held-out queries.

    ``masked``: ``(L, H, N, tasks)`` from :func:`attnlab.analysis.importance.single_head_states`
    with :meth:`TaskProbes.losses`, and ``refits`` ``(L, H, S, 2, N, tasks)`` with
    :meth:`TaskProbes.refit_losses` (passes made together with other reducers); measured here
    when not given (one batched pass per layer for both).
    """
    full_states = held_out.full_states()
    full = task_probes.losses(full_states)  # (N, tasks)
    feats = features(full_states, task_probes.data)
    accuracy = {task: task_probes.probes[task].accuracy(x, y) for task, (x, y, _q) in feats.items()}
    if masked is None or (refits is None and task_probes.refits):
        swept = single_head_states(m, held_out, {"tasks": task_probes.losses, "refits": task_probes.refit_losses},
                                   progress=progress, threads=threads)
        masked, refits = swept["tasks"], swept["refits"]
    masked = np.asarray(masked, dtype=float)  # (L, H, N, tasks)
    costs = {task: np.moveaxis(masked[..., j] - full[None, None, :, j], 2, 0)  # (N, L, H)
             for j, task in enumerate(TASKS)}
    refit_costs = {}
    if task_probes.refits:
        refit_full = task_probes.refit_losses(full_states)  # (S, 2, N, tasks)
        refits = np.asarray(refits, dtype=float)  # (L, H, S, 2, N, tasks)
        refit_costs = {task: np.moveaxis(refits[..., j] - refit_full[None, None, ..., j], (2, 3, 4), (0, 1, 2))
                       for j, task in enumerate(TASKS)}  # (S, 2, N, L, H)
    return TaskStudy(list(TASKS), costs, accuracy, dict(task_probes.chance), task_probes.n_train,
                     held_out.n_texts, int(len(feats["word start"][1])), seed, refit_costs,
                     task_probes.identity_accuracy)
