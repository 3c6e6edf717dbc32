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
on two disjoint halves of the training queries (:attr:`TaskProbes.refits`), and
a task's **reliability** is the agreement of the two refits' rankings on two
disjoint halves of the held-out queries: both kinds of noise at once
(:func:`refit_agreements`). The agreement of two tasks, measured the same way
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
from typing import Protocol, Sequence

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from attnlab.analysis.importance import (
    Objective,
    importance_agreement,
    make_objective,
    pooled,
    single_head_states,
    split_half_agreement,
)
from attnlab.analysis.stats import Interval, correlation, resample_counts
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record

#: the two tasks, as stored (English) and as printed
TASKS = ("family", "word start")
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
        change of the representation pushes it; 0 for a label the probe never saw."""
        logp = self.log_probs(x)  # (n, C)
        column = {c: i for i, c in enumerate(self.classes.tolist())}
        idx = np.array([column.get(v, -1) for v in np.asarray(y).tolist()])
        out = np.zeros(len(idx))
        for row in np.flatnonzero(idx >= 0):
            right = logp[row, idx[row]]
            others = np.delete(logp[row], idx[row])
            out[row] = right - np.logaddexp.reduce(others)
        return out

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        """Share of examples whose most probable class is their label."""
        return float(np.mean(self.classes[np.argmax(self.log_probs(x), axis=1)] == np.asarray(y)))


def fit_probe(x: np.ndarray, y: np.ndarray, *, c: float = PROBE_C) -> Probe:
    """A :class:`Probe` fitted on features ``x`` ``(n, D)`` and labels ``y`` ``(n,)`` (at least two classes)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y)
    if len(np.unique(y)) < 2:
        raise ValueError("a probe needs at least two classes in its training labels")
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-8
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
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
    out = np.full((len(data.family), len(TASKS)), np.nan)
    for j, (task, (x, y, query)) in enumerate(features(states, data).items()):
        losses = -probes[task].log_odds(x, y)  # (n,)
        total = np.bincount(query, weights=losses, minlength=len(out))
        count = np.bincount(query, minlength=len(out))
        np.divide(total, count, out=out[:, j], where=count > 0)
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
        refit_costs: task -> ``(2, N, L, H)``: the same costs under the two probes refitted on
            disjoint halves of the training queries (empty in a record from before them).
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


    def refit_agreements(self, *, n_boot: int = 1000) -> dict[str, Interval]:
        """:func:`refit_agreements` of this study's refitted probes (both tasks)."""
        if set(self.refit_costs) != set(self.tasks):
            raise ValueError("this task study has no refitted probes (measured before them)")
        return refit_agreements(self.refit_costs, self.tasks, n_boot=n_boot, seed=self.seed)


def _finite(costs: np.ndarray) -> np.ndarray:
    costs = np.asarray(costs, dtype=float)
    return costs[np.isfinite(costs).all(axis=(1, 2))]


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman correlation of two ``(L*H,)`` head scores."""
    return correlation(x, y, "spearman")


def refit_agreements(refit_costs: dict[str, np.ndarray], tasks: Sequence[str], *, n_boot: int = 1000,
                     seed: int = 0) -> dict[str, Interval]:
    """Reliabilities, the cross-task agreement and its disattenuated value, from refitted probes.

    The held-out queries are split into two fixed halves (``seed``); on half 1 each task's
    head ranking comes from its probe refitted on training half A, on half 2 from its probe
    refitted on training half B. So two rankings of one task differ by both the queries and the
    probe's training sample.

    Args:
        refit_costs: task -> ``(2, N, L, H)`` per-query head costs under refits A and B.
        tasks: the two tasks, ``(a, b)``.

    Returns:
        ``{"reliability a": ..., "reliability b": ..., "across": ..., "disattenuated": ...}``:
        Spearman of task a's refit-A ranking (half 1) with its refit-B ranking (half 2), the
        same for b, the mean of the two cross-task pairs ``(a_A, b_B)`` and ``(b_A, a_B)``,
        and ``across / sqrt(reliability a * reliability b)`` (NaN when a reliability is not
        positive); intervals from resampling the queries within each half.
    """
    a, b = tasks
    keep = np.ones(np.shape(refit_costs[a])[1], dtype=bool)
    for t in tasks:
        keep &= np.isfinite(np.asarray(refit_costs[t], dtype=float)).all(axis=(0, 2, 3))
    costs = {t: np.asarray(refit_costs[t], dtype=float)[:, keep].reshape(2, int(keep.sum()), -1) for t in tasks}
    n = int(keep.sum())
    if n < 4:
        raise ValueError(f"a split-half comparison needs at least 4 queries, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    first, second = order[: n // 2], order[n // 2:]

    def numbers(w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
        """``(4,)`` from weights over the queries of each half (resample counts / size)."""
        a1, a2 = w1 @ costs[a][0, first], w2 @ costs[a][1, second]  # (L*H,) each
        b1, b2 = w1 @ costs[b][0, first], w2 @ costs[b][1, second]
        rel_a, rel_b = _rho(a1, a2), _rho(b1, b2)
        across = 0.5 * (_rho(a1, b2) + _rho(b1, a2))
        dis = across / np.sqrt(rel_a * rel_b) if rel_a > 0 and rel_b > 0 else float("nan")
        return np.array([rel_a, rel_b, across, dis])

    estimate = numbers(np.full(len(first), 1.0 / len(first)), np.full(len(second), 1.0 / len(second)))
    w1 = resample_counts(len(first), n_boot, seed) / len(first)  # (B, N1)
    w2 = resample_counts(len(second), n_boot, seed + 1) / len(second)  # (B, N2)
    boots = np.stack([numbers(x, y) for x, y in zip(w1, w2)])  # (B, 4)
    out = {}
    for j, name in enumerate(("reliability a", "reliability b", "across", "disattenuated")):
        column = boots[:, j]
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


@dataclass
class TaskProbes:
    """Both tasks' probes, fitted on the training queries, and the labels of the held-out queries
    (aligned with the batches of the held-out :class:`~attnlab.analysis.importance.Objective`)."""

    probes: dict[str, Probe]
    data: TaskData
    chance: dict[str, float]
    n_train: int
    refits: list[dict[str, Probe]] = field(default_factory=list)
    identity_accuracy: float = float("nan")

    def losses(self, states: list[tuple[torch.Tensor, torch.Tensor]]) -> np.ndarray:
        """A states reducer (:func:`attnlab.analysis.importance.single_head_states`): ``(N, tasks)``
        per-query losses, minus the log-odds of the right label (:func:`per_query_losses`)."""
        return per_query_losses(self.probes, states, self.data)

    def refit_losses(self, states: list[tuple[torch.Tensor, torch.Tensor]]) -> np.ndarray:
        """The same reducer for the two refitted probes: ``(2, N, tasks)``."""
        return np.stack([per_query_losses(refit, states, self.data) for refit in self.refits])


def fit_probes(m: LoadedModel, train: Sequence[Annotated], held_out: Objective, test: Sequence[Annotated], *,
               batch_size: int = 64, seed: int = 0) -> TaskProbes:
    """Fit both probes on the full model's final states of ``train`` (one pass), refit each on two
    disjoint halves of ``train`` (fixed by ``seed``), and label ``test``, the queries whose texts
    ``held_out`` holds (in order)."""
    if set(q.text for q in train) & set(q.text for q in test):
        raise ValueError("the training and the held-out queries must not share a text")
    fit_on = make_objective(m, [q.text for q in train], kind="sentence", batch_size=batch_size)
    train_data = task_data(m, fit_on, train)
    train_feats = features(fit_on.full_states(), train_data)
    probes = {task: fit_probe(x, y) for task, (x, y, _q) in train_feats.items()}
    halves = np.random.default_rng(seed).permutation(len(train))
    refits = []
    for part in (halves[: len(train) // 2], halves[len(train) // 2:]):  # two disjoint training halves
        refits.append({task: fit_probe(x[np.isin(q, part)], y[np.isin(q, part)])
                       for task, (x, y, q) in train_feats.items()})
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
    """Every head's cost to both probes (and to their two refits) on the held-out queries.

    ``masked``: ``(L, H, N, tasks)`` from :func:`attnlab.analysis.importance.single_head_states`
    with :meth:`TaskProbes.losses`, and ``refits`` ``(L, H, 2, N, tasks)`` with
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
        refit_full = task_probes.refit_losses(full_states)  # (2, N, tasks)
        refits = np.asarray(refits, dtype=float)  # (L, H, 2, N, tasks)
        refit_costs = {task: np.moveaxis(refits[..., j] - refit_full[None, None, :, :, j], (2, 3), (0, 1))  # (2, N, L, H)
                       for j, task in enumerate(TASKS)}
    return TaskStudy(list(TASKS), costs, accuracy, dict(task_probes.chance), task_probes.n_train,
                     held_out.n_texts, int(len(feats["word start"][1])), seed, refit_costs,
                     task_probes.identity_accuracy)
