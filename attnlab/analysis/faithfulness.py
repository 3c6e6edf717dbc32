"""A faithfulness scoreboard: which reading of attention tracks what the model does?

For each query, every non-special token ``j`` gets a score from five *views*:

* ``raw``: the attention it receives in the last layer, heads averaged, averaged
  over all query rows;
* ``norm``: the same with the last layer's norm-based weights
  ``||sum_h alpha_ij^h f_h(x_j)||`` (Kobayashi et al. 2020), each row rescaled to 1;
* ``rollout``: the column of the rollout after the last layer (Abnar & Zuidema
  2020), averaged over rows;
* ``value_zeroing``: Mohebbi et al.'s (2023) measure. In ONE layer ``l``, zero the
  value vector of token ``j`` in every head and run that layer from the unchanged
  states of layer ``l - 1``; ``C_l[i, j]`` is the cosine distance (float64) of
  token ``i``'s layer output from the unchanged one. Rows of ``C_l`` are
  rescaled to sum to 1 and the layers are combined by rollout (without an added
  identity: the layer output already contains the residual), as in the authors'
  code; the score is the column of the last layer, averaged over rows;
* ``knockout``: zero token ``j``'s value vectors in every layer and head *at once*
  and take the mean cosine distance of the other tokens' last hidden states
  (a whole-model intervention, not Mohebbi's measure).

Each view is compared with the token's **effect**, three references (none of them a ground
truth: each is one intervention or approximation, and they disagree with one another;
:meth:`Scoreboard.reference_agreement` gives the **agreement between the references**). That
agreement is not a ceiling: a view equal to one reference scores rho = 1 against it whatever the
references' agreement; it says how much a view's score depends on which reference is chosen:

* ``masked`` (leave one out, positions kept): token ``j`` is masked from the
  attention of every layer (no token can read it; every other token keeps its
  position) and left out of the mean pool of both runs; the effect is the cosine
  distance of the two pooled vectors. Attention can only see how much the others
  read ``j``, and this is exactly that.
* ``deleted``: token ``j`` is deleted from the input (later tokens move one
  position) and the mean of the last hidden states is compared with the full
  run's. This also loses ``j``'s own output from the pool, so it partly measures
  how unusual ``j``'s own vector is.
* ``grad_input``: gradient x input on the sentence vector, a **first-order
  reference**: how far the direction of the sentence vector ``s / ||s||`` moves,
  to first order, when token ``j``'s input (word) embedding ``e_j`` is taken
  away, ``|| d(s/||s||)/d e_j . e_j ||``: one Jacobian-vector product
  (:func:`grad_input`). It does not mask attention, but its Jacobian runs
  through every attention layer, it is linear (one step along ``e_j``, not the
  token really taken away), and it includes ``j``'s own path through the
  residual stream into the pool.
* ``zeroed``: the embedding ``e_j`` really set to zero (its position embedding
  stays), the cosine distance of the sentence vectors: what gradient x input
  approximates to first order (:func:`zeroed_embedding`).
* ``grad_input_others``: gradient x input with ``j`` left out of the mean pool
  (the pool of the other tokens only), so ``j``'s own residual path does not count
  (:func:`grad_input` with ``leave_out=True``).

**Special tokens** ([CLS]/[SEP], ``<s>``/``</s>``) are not ranked with the
words (they are in every text), but they get a row of their own:
:meth:`Scoreboard.special_share` is the share of each view's total score, and
of each ground truth's total effect, that falls on the special tokens. Raw
attention puts much of its weight there (the sinks); if the effects put little,
that row is where attention's best-known failure shows.

The Spearman correlation of scores and effects, per query, says how well a view
ranks tokens by what they do. Every view is compared on the same queries (a
query is left out when any view or ground truth is constant on it); means get a
bootstrap interval over queries, and differences between views are paired.

Only numbers here; the verdicts are in :mod:`attnlab.course.claims.attention_limits`.

Shapes: ``L`` layers, ``T`` tokens of one query, ``k`` of them non-special, ``d`` width.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from attnlab.analysis.interventions import cosine_distance, last_hidden, pooled, sentence_vectors, zero_values
from attnlab.analysis.norm_attention import norm_attention, row_shares
from attnlab.analysis.rollout import rollout
from attnlab.analysis.stats import Interval, bootstrap_mean, correlation
from attnlab.core.extract import check_texts
from attnlab.core.language import N_
from attnlab.core.models import LoadedModel
from attnlab.core.run import encode, run

#: The views, in the order of the scoreboard.
VIEWS = ("raw", "norm", "rollout", "value_zeroing", "knockout")
VIEW_LABELS = {"raw": N_("raw attention"), "norm": N_("norm-based"), "rollout": N_("rollout"),
               "value_zeroing": N_("value zeroing (Mohebbi)"), "knockout": N_("whole-model knockout")}
#: The references: leave one out keeping positions (the main one), deletion, and gradient x input
#: on the sentence vector (a first-order reference).
TRUTHS = ("masked", "deleted", "grad_input", "zeroed", "grad_input_others")
TRUTH_LABELS = {"masked": N_("leave one out, positions kept"), "deleted": N_("token deleted"),
                "grad_input": N_("gradient × input on the sentence vector"),
                "zeroed": N_("embedding zeroed"),
                "grad_input_others": N_("gradient × input, token left out of the pool")}
#: Fewest non-special tokens a query needs (with 3 or 4, rho takes only a handful of values).
MIN_TOKENS = 5
#: Token copies scored in one pass (every token of a few queries of similar length). Gradient x input
#: keeps every activation of its pass for the Jacobian-vector product: on bert-base's shape 24 queries
#: took 34 s with a peak of 1.4 GB at 32 rows, 34 s and 2.0 GB at 64, 43 s and 5.8 GB at 256.
ROWS_PER_GROUP = 32


@dataclass
class QueryScores:
    """One query's tokens (non-special), each view's score and each token's effects."""

    text: str
    tokens: list[str]
    positions: list[int]
    scores: dict[str, np.ndarray]  # view -> (k,)
    effects: dict[str, np.ndarray]  # ground truth -> (k,)
    # view or ground truth -> share of its total over all tokens that falls on the special tokens
    special: dict[str, float] = field(default_factory=dict)

    @property
    def effect(self) -> np.ndarray:
        """``(k,)``: the main ground truth (leave one out with positions kept)."""
        return self.effects["masked"]


@dataclass
class Scoreboard:
    """Spearman correlation between each view's scores and each ground truth, per query.

    Attributes:
        rho: ground truth -> view -> ``(N,)``, on the same ``N`` queries for every view.
        queries: the scores behind each correlation (the ``N`` paired queries).
        skipped: texts with fewer than :data:`MIN_TOKENS` non-special tokens.
        constant: texts left out because some view or ground truth was constant on them.
    """

    rho: dict[str, dict[str, np.ndarray]]
    queries: list[QueryScores] = field(default_factory=list)
    skipped: int = 0
    constant: int = 0

    def interval(self, view: str, truth: str = "masked", *, seed: int = 0) -> Interval:
        """Mean Spearman rho of one view with its bootstrap interval over queries."""
        return bootstrap_mean(self.rho[_check_truth(truth)][_check_view(view)], seed=seed)

    def intervals(self, truth: str = "masked", *, seed: int = 0) -> dict[str, Interval]:
        return {view: self.interval(view, truth, seed=seed) for view in VIEWS}

    def paired(self, a: str, b: str, truth: str = "masked", *, seed: int = 0) -> Interval:
        """Mean over queries of ``rho_a - rho_b`` (the same queries), with its interval."""
        rho = self.rho[_check_truth(truth)]
        return bootstrap_mean(rho[_check_view(a)] - rho[_check_view(b)], seed=seed)

    def special_share(self, name: str, *, seed: int = 0) -> Interval:
        """The share of a view's total score (or a ground truth's total effect) over all tokens that
        falls on the special tokens, mean over queries with its bootstrap interval."""
        if name not in VIEWS + TRUTHS:
            raise ValueError(f"name must be a view {VIEWS} or a ground truth {TRUTHS}, got {name!r}")
        return bootstrap_mean(np.array([q.special[name] for q in self.queries]), seed=seed)

    def reference_agreement(self, a: str, b: str, *, seed: int = 0) -> Interval:
        """Mean over queries of the Spearman correlation between two references' effects on the same
        tokens, with its bootstrap interval over queries: how far the references themselves agree.
        Not a ceiling on a view's correlation with either (a view equal to one reference scores 1
        against it); where it is low, a view's score depends on which reference is chosen."""
        a, b = _check_truth(a), _check_truth(b)
        rho = np.array([correlation(q.effects[a], q.effects[b], "spearman") for q in self.queries])
        return bootstrap_mean(rho[np.isfinite(rho)], seed=seed)

    def best_held_out(self, views: Sequence[str], truth: str = "masked", *, seed: int = 0) -> tuple[str, Interval]:
        """The best of ``views`` chosen on one half of the queries, and its mean rho on the other half.

        Choosing the best view and reporting its score on the same queries flatters it (the
        winner of several noisy means is biased upwards); here the halves are fixed by ``seed``
        and the interval resamples the scoring half's queries.
        """
        rho = self.rho[_check_truth(truth)]
        views = [_check_view(v) for v in views]
        n = len(rho[views[0]])
        if n < 4:
            raise ValueError(f"a held-out choice needs at least 4 queries, got {n}")
        order = np.random.default_rng(seed).permutation(n)
        choose, score = order[: n // 2], order[n // 2:]
        best = max(views, key=lambda v: float(np.mean(rho[v][choose])))
        return best, bootstrap_mean(rho[best][score], seed=seed)

    def ranking(self, truth: str = "masked") -> list[str]:
        """Views from the best mean rho to the worst."""
        rho = self.rho[_check_truth(truth)]
        return sorted(VIEWS, key=lambda v: -float(np.mean(rho[v])))


def _check_view(view: str) -> str:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    return view


def _check_truth(truth: str) -> str:
    if truth not in TRUTHS:
        raise ValueError(f"ground truth must be one of {TRUTHS}, got {truth!r}")
    return truth


def _one_hot(positions: Sequence[int] | torch.Tensor, t: int) -> torch.Tensor:
    """``(k, T)`` bool: row ``r`` is True at ``positions[r]`` (on the device of a tensor of positions)."""
    positions = torch.as_tensor(positions, dtype=torch.long)
    chosen = torch.zeros(len(positions), t, dtype=torch.bool, device=positions.device)
    chosen[torch.arange(len(positions), device=positions.device), positions] = True
    return chosen


@dataclass
class _Copies:
    """Copies of the texts of one padded batch, one copy per listed token of each text.

    ``inputs``: ``(R, T)`` each, row ``r`` a copy of text ``text[r]``; ``position[r]`` is the token that
    row changes; ``real`` ``(R, T)`` bool marks each copy's real (not padding) tokens; ``rows[b]`` lists
    the rows of text ``b``, in the order of its positions."""

    inputs: dict[str, torch.Tensor]
    text: torch.Tensor
    position: torch.Tensor
    real: torch.Tensor
    rows: list[list[int]]

    @property
    def chosen(self) -> torch.Tensor:
        """``(R, T)`` bool: each row's changed token."""
        return _one_hot(self.position, self.real.shape[1])

    def split(self, values: torch.Tensor) -> list[np.ndarray]:
        """``(R,)`` values, one per row, as one ``(k_b,)`` array per text."""
        values = values.detach().double().cpu().numpy()
        return [values[rows] for rows in self.rows]


def _copies_of(inputs: dict[str, torch.Tensor], positions: Sequence[Sequence[int]]) -> _Copies:
    """:class:`_Copies` of a padded batch ``inputs`` (``(B, T)`` each) for ``positions[b]`` of text ``b``."""
    if len(positions) != inputs["input_ids"].shape[0]:
        raise ValueError(f"{len(positions)} lists of positions for {inputs['input_ids'].shape[0]} texts")
    device = inputs["input_ids"].device
    text = torch.tensor([b for b, listed in enumerate(positions) for _p in listed], dtype=torch.long, device=device)
    position = torch.tensor([int(p) for listed in positions for p in listed], dtype=torch.long, device=device)
    rows, start = [], 0
    for listed in positions:
        rows.append(list(range(start, start + len(listed))))
        start += len(listed)
    copies = {name: value[text].clone() for name, value in inputs.items()}  # (R, T) each
    return _Copies(copies, text, position, copies["attention_mask"].bool(), rows)


def _of_one_text(batched: Callable[..., list], m: LoadedModel, inputs: dict[str, torch.Tensor], *args, **kwargs):
    """``batched(m, inputs, *args, **kwargs)``, a function of every text of a padded batch, for the one
    text of ``inputs`` (``(1, T)`` tensors; a larger batch is refused): its first answer."""
    if inputs["input_ids"].shape[0] != 1:
        raise ValueError(f"one text's encoding expected, (1, T) tensors; got {tuple(inputs['input_ids'].shape)}")
    return batched(m, inputs, *args, **kwargs)[0]


# --------------------------------------------------------------------------- ground truths


def masked_leave_one_out(m: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[int]) -> np.ndarray:
    """``(k,)``: leave one out keeping positions. Token ``positions[r]`` is masked from the
    attention of every layer (its attention-mask entry set to 0), and the mean of the last hidden
    states over the *other* tokens is compared (cosine distance) with the same mean of the unchanged run.

    Args:
        inputs: one text's encoding, ``(1, T)`` tensors without padding.
        positions: the tokens to leave out, one at a time.
    """
    return _of_one_text(_masked_leave_one_out, m, inputs, [positions])


def _masked_leave_one_out(m: LoadedModel, inputs: dict[str, torch.Tensor],
                          positions: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """:func:`masked_leave_one_out` of every text of a padded batch (``positions[b]`` for text ``b``), one pass."""
    copies = _copies_of(inputs, positions)
    others = copies.real & ~copies.chosen  # (R, T): the real tokens kept in both pools
    base = last_hidden(m, inputs)[copies.text]  # (R, T, d)
    copies.inputs["attention_mask"] = copies.inputs["attention_mask"] * others.to(copies.inputs["attention_mask"].dtype)
    changed = last_hidden(m, copies.inputs)  # (R, T, d)
    return copies.split(cosine_distance(pooled(changed, others), pooled(base, others)))


def leave_one_out(m: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[int]) -> np.ndarray:
    """``(k,)``: deletion. Cosine distance of the sentence representation when each listed token
    is removed from the input (the tokens after it move one position to the left).

    Args:
        inputs: one text's encoding, ``(1, T)`` tensors without padding.
        positions: the token positions to remove, one at a time.
    """
    return _of_one_text(_leave_one_out, m, inputs, [positions])


def _leave_one_out(m: LoadedModel, inputs: dict[str, torch.Tensor],
                   positions: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """:func:`leave_one_out` of every text of a padded batch, one pass: each copy is its text without
    one token, padded at the end to ``T - 1``."""
    copies = _copies_of(inputs, positions)
    base = sentence_vectors(m, inputs)[copies.text]  # (R, d)
    slots = torch.arange(copies.real.shape[1] - 1, device=copies.position.device)[None, :]  # (1, T - 1)
    index = slots + (slots >= copies.position[:, None]).long()  # (R, T - 1): every token but the deleted one
    # (R, T - 1) each; past a shorter text's last token the slots hold its padding, masked as before
    shorter = {name: value.gather(1, index) for name, value in copies.inputs.items()}
    return copies.split(cosine_distance(sentence_vectors(m, shorter), base))


def grad_input(m: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[int], *,
               leave_out: bool = False) -> np.ndarray:
    """``(k,)``: gradient x input on the sentence vector, a first-order reference.

    For each listed token ``j``: ``|| J_j e_j ||`` where ``e_j`` ``(d,)`` is its input (word) embedding and
    ``J_j`` the Jacobian of the unit sentence vector ``s / ||s||`` (``s``: the mean of the last hidden
    states, :func:`~attnlab.analysis.interventions.sentence_vectors`) with respect to ``e_j``: how far the
    direction of the sentence vector moves, to first order, when the token's embedding is taken away
    (its position embedding stays). All ``k`` tokens in one Jacobian-vector product over ``k`` copies.
    The Jacobian runs through every attention layer; the move is linear in ``e_j``.

    Args:
        inputs: one text's encoding, ``(1, T)`` tensors without padding.
        positions: the tokens to score.
        leave_out: pool only the *other* tokens, so that ``j``'s own path through the residual
            stream into the pool does not count.
    """
    return _of_one_text(_grad_input, m, inputs, [positions], leave_out=leave_out)


def _grad_input(m: LoadedModel, inputs: dict[str, torch.Tensor],
                positions: Sequence[Sequence[int]], *, leave_out: bool = False) -> list[np.ndarray]:
    """:func:`grad_input` of every text of a padded batch, in one Jacobian-vector product."""
    copies = _copies_of(inputs, positions)
    with torch.no_grad():
        embeds = m.model.get_input_embeddings()(copies.inputs["input_ids"])  # (R, T, d)
    tangent = torch.zeros_like(embeds)  # (R, T, d): row r moves its token position[r] only
    rows = torch.arange(len(copies.position), device=embeds.device)
    tangent[rows, copies.position] = embeds[rows, copies.position]
    others = {name: value for name, value in copies.inputs.items() if name != "input_ids"}  # (R, T) each
    mask = others["attention_mask"] * (~copies.chosen).to(others["attention_mask"].dtype) if leave_out \
        else others["attention_mask"]  # (R, T): the tokens pooled

    def direction(x: torch.Tensor) -> torch.Tensor:
        out = run(m, {"inputs_embeds": x, **others}, keep=("output",), grad=True).output
        s = pooled(out.last_hidden_state, mask)  # (R, d)
        return s / s.norm(dim=-1, keepdim=True)

    with torch.enable_grad():
        _unit, moved = torch.autograd.functional.jvp(direction, embeds, tangent)  # (R, d) each
    return copies.split(moved.double().norm(dim=-1))


def zeroed_embedding(m: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[int]) -> np.ndarray:
    """``(k,)``: the cosine distance of the sentence vector when token ``j``'s input (word)
    embedding is set to zero (its position embedding stays): the change gradient x input
    approximates to first order."""
    return _of_one_text(_zeroed_embedding, m, inputs, [positions])


def _zeroed_embedding(m: LoadedModel, inputs: dict[str, torch.Tensor],
                      positions: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """:func:`zeroed_embedding` of every text of a padded batch, one pass."""
    copies = _copies_of(inputs, positions)
    base = sentence_vectors(m, inputs)[copies.text]  # (R, d)
    with torch.no_grad():
        embeds = m.model.get_input_embeddings()(copies.inputs["input_ids"])  # (R, T, d)
        embeds = embeds * (~copies.chosen).unsqueeze(-1).to(embeds.dtype)  # row r: token position[r] zeroed
        others = {name: value for name, value in copies.inputs.items() if name != "input_ids"}
        out = run(m, {"inputs_embeds": embeds, **others}, keep=("output",)).output
        changed = pooled(out.last_hidden_state, others["attention_mask"])  # (R, d)
    return copies.split(cosine_distance(changed, base))


# --------------------------------------------------------------------------- interventions as views


def knockout(m: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[int]) -> np.ndarray:
    """``(k,)``: whole-model knockout. For each listed token, zero its value vectors in every layer
    and head at once and return the mean cosine distance of the *other* tokens' last hidden states
    from the unchanged run."""
    return _of_one_text(_knockout, m, inputs, [positions])


def _knockout(m: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """:func:`knockout` of every text of a padded batch, one pass."""
    copies = _copies_of(inputs, positions)
    chosen = copies.chosen  # (R, T): row r zeroes its token position[r]
    base = last_hidden(m, inputs)[copies.text]  # (R, T, d)
    with zero_values(m, chosen):
        changed = last_hidden(m, copies.inputs)  # (R, T, d)
    distance = cosine_distance(changed, base)  # (R, T)
    others = (copies.real & ~chosen).double()  # (R, T): the other real tokens
    return copies.split((distance * others).sum(dim=1) / others.sum(dim=1))


def value_zeroing_maps(m: LoadedModel, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mohebbi et al.'s value-zeroing matrices ``(L, T, T)`` (float64), rows rescaled to sum to 1.

    ``[l, i, j]``: cosine distance of token ``i``'s output of layer ``l`` when token ``j``'s value
    vector is zeroed in every head of layer ``l`` alone (the layers before run unchanged, so layer
    ``l`` starts from the unchanged previous-layer states), divided by the row's sum.

    Per layer one pass of ``T`` copies of the text (copy ``j`` zeroes token ``j``) through that
    layer alone: it starts from the unchanged pass's input of the layer and stops after it.
    """
    return _of_one_text(_value_zeroing_maps, m, inputs)


def _value_zeroing_maps(m: LoadedModel, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """:func:`value_zeroing_maps` of every text of a padded batch, ``(L, T_b, T_b)`` each: per layer one
    pass of every token's copy of every text."""
    lengths = [int(n) for n in inputs["attention_mask"].sum(dim=1)]
    copies = _copies_of(inputs, [range(n) for n in lengths])
    n_layers, rows = m.n_layers, len(copies.position)
    base = run(m, inputs, keep=("hidden",)).hidden  # {0..L}: (B, T, d) each
    out = [torch.zeros(n_layers, n, n, dtype=torch.float64) for n in lengths]
    for layer in range(n_layers):
        # (L, R, T): only this layer zeroes
        where = torch.zeros(n_layers, rows, copies.real.shape[1], dtype=torch.bool, device=copies.real.device)
        where[layer] = copies.chosen
        start_at = (layer, base[layer][copies.text].contiguous()) if layer else None  # (R, T, d)
        with zero_values(m, where):
            after = run(m, copies.inputs, keep=("hidden",), layers=[layer], start_at=start_at).hidden[layer + 1]
        distance = cosine_distance(after, base[layer + 1][copies.text]).cpu()  # (R, T): row = token j zeroed, col i
        for b, n in enumerate(lengths):
            out[b][layer] = distance[copies.rows[b], :n].T  # rows i, columns j
    return [row_shares(maps) for maps in out]


def value_zeroing(m: LoadedModel, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """``(T,)``: Mohebbi's value zeroing combined by rollout, each token's column after the last
    layer averaged over rows (float64)."""
    return _value_zeroing_combined(value_zeroing_maps(m, inputs))


def _value_zeroing_combined(maps: torch.Tensor) -> torch.Tensor:
    """``(T,)`` from one text's value-zeroing matrices ``(L, T, T)``: rollout, last layer, mean over rows."""
    return rollout(maps, residual=0.0)[-1].mean(dim=0)  # (T,)


# --------------------------------------------------------------------------- the scoreboard


def query_scores(m: LoadedModel, text: str) -> QueryScores | None:
    """Every view's score and every effect of each non-special token of ``text``, and the share of each
    that falls on the special tokens (None when it has fewer than :data:`MIN_TOKENS` non-special tokens)."""
    return queries_scores(m, [text])[0]


def queries_scores(m: LoadedModel, texts: Sequence[str]) -> list[QueryScores | None]:
    """:func:`query_scores` of every text, several texts a pass: texts of similar length are grouped
    (about :data:`ROWS_PER_GROUP` copies a pass, one per token) and each measure runs
    once per group on the padded batch; the same numbers as one text at a time, up to rounding."""
    out: list[QueryScores | None] = [None] * len(texts)
    lengths = [len(ids) for ids in m.tokenizer(list(texts))["input_ids"]]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])  # similar lengths together: little padding
    group: list[int] = []
    for i in order + [None]:
        if i is not None and (not group or sum(lengths[j] for j in group) + lengths[i] <= ROWS_PER_GROUP):
            group.append(i)
            continue
        for j, scored in zip(group, _group_scores(m, [texts[j] for j in group])):
            out[j] = scored
        group = [i] if i is not None else []
    return out


def _group_scores(m: LoadedModel, texts: list[str]) -> list[QueryScores | None]:
    """:func:`query_scores` of a few texts, each measure in one pass over the padded batch."""
    inputs = encode(m, texts).inputs  # (B, T) each, padded at the end
    lengths = [int(n) for n in inputs["attention_mask"].sum(dim=1)]
    ids = [inputs["input_ids"][b, :n].tolist() for b, n in enumerate(lengths)]
    tokens = [m.tokenizer.convert_ids_to_tokens(row) for row in ids]
    words = [[j for j, tok in enumerate(row) if tok not in m.special_tokens] for row in tokens]
    kept = [b for b in range(len(texts)) if len(words[b]) >= MIN_TOKENS]
    out: list[QueryScores | None] = [None] * len(texts)
    if not kept:
        return out
    inputs = {name: value[kept][:, :max(lengths[b] for b in kept)] for name, value in inputs.items()}  # (B', T')
    # words first, then the special tokens: every token of each text
    everyone = [words[b] + [j for j in range(lengths[b]) if j not in set(words[b])] for b in kept]
    na = norm_attention(m, [texts[b] for b in kept], batch_size=len(kept))
    zeroing = _value_zeroing_maps(m, inputs)  # (L, T_b, T_b) each
    effects = {"knockout": _knockout(m, inputs, everyone), "masked": _masked_leave_one_out(m, inputs, everyone),
               "deleted": _leave_one_out(m, inputs, everyone), "grad_input": _grad_input(m, inputs, everyone),
               "zeroed": _zeroed_embedding(m, inputs, everyone),
               "grad_input_others": _grad_input(m, inputs, everyone, leave_out=True)}
    for i, b in enumerate(kept):
        n, k = lengths[b], len(words[b])
        weights = na.weights[i, :, :, :n, :n]  # (L, H, n, n)
        received = {
            "raw": weights[-1].mean(dim=0).mean(dim=0),  # (n,): heads, then query rows averaged
            "norm": row_shares(na.combined[i, -1, :n, :n]).mean(dim=0),  # (n,)
            "rollout": rollout(weights)[-1].mean(dim=0),  # (n,)
            "value_zeroing": _value_zeroing_combined(zeroing[i]),  # (n,)
        }
        every = {view: values[everyone[i]].numpy() for view, values in received.items()}  # (n,) each
        every.update({name: values[i] for name, values in effects.items()})
        shares = {name: float(v[k:].sum() / v.sum()) if v.sum() > 0 else float("nan") for name, v in every.items()}
        out[b] = QueryScores(text=texts[b], tokens=[tokens[b][j] for j in words[b]], positions=words[b],
                             scores={view: every[view][:k] for view in VIEWS},
                             effects={truth: every[truth][:k] for truth in TRUTHS}, special=shares)
    return out


def correlations(q: QueryScores) -> dict[str, dict[str, float]]:
    """Ground truth -> view -> Spearman rho of one query (NaN where either side is constant), for the
    ground truths the query has."""
    return {truth: {view: correlation(q.scores[view], q.effects[truth]) for view in VIEWS}
            for truth in TRUTHS if truth in q.effects}


def board_from(queries: Sequence[QueryScores], skipped: int = 0) -> Scoreboard:
    """The :class:`Scoreboard` of scored queries, keeping only those on which every view and
    ground truth gives a correlation (so all views are compared on the same queries)."""
    kept, rhos = [], []
    for q in queries:
        rho = correlations(q)
        if all(np.isfinite(r) for by_view in rho.values() for r in by_view.values()):
            kept.append(q)
            rhos.append(rho)
    if not kept:
        raise ValueError("no query gives a correlation for every view: use more or longer texts")
    truths = [t for t in TRUTHS if all(t in r for r in rhos)]
    rho = {truth: {view: np.array([r[truth][view] for r in rhos]) for view in VIEWS} for truth in truths}
    return Scoreboard(rho=rho, queries=kept, skipped=skipped, constant=len(queries) - len(kept))


def scoreboard(m: LoadedModel, texts: Sequence[str] | str) -> Scoreboard:
    """The faithfulness scoreboard of ``texts`` (see the module docstring)."""
    texts, _ = check_texts(m, texts)
    queries = [q for q in queries_scores(m, texts) if q is not None]
    if not queries:
        raise ValueError(f"no text has {MIN_TOKENS} or more non-special tokens: use longer texts")
    return board_from(queries, skipped=len(texts) - len(queries))
