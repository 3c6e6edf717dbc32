"""How much does the model need each head? Three measures.

1. **Gradient importance** (Michel et al. 2019): with a gate ``xi_h`` on every
   head (``xi = 1``: the unmodified model, see :mod:`attnlab.core.gates`),
   ``I_h = E_x |dL/dxi_h|``. One backward pass per batch gives the gradient for
   *all* heads at once. As in the authors' code the absolute value is taken
   per batch, and scores can be normalised per layer (L2 over the layer's heads).
2. **Single-head ablation**: mask one head, measure how much the loss rises;
   ``layers x heads`` forward passes over the same texts.
3. **Confidence** (Voita et al. 2019): the mean over query tokens of a head's
   largest attention weight.

The loss ``L`` is an :class:`Objective`, built once by :func:`make_objective`
so that every measure (and every pruning step in :mod:`attnlab.analysis.pruning`) sees
exactly the same texts, masks and batches:

``"sentence"`` and ``"token"`` (representation preservation)
    How far the pruned model's final hidden states move away from the full
    model's on the same text, ``1 - cos``: of the mean-pooled sentence vector
    (``"sentence"``), or of each token's vector averaged over the text's real
    tokens (``"token"``). Both are 0 for the unmodified model and at most 2, so
    a tolerance is an absolute number (0.01: the cosine with the full model
    stays above 0.99), and every text has its own value (:meth:`Objective.per_text`).
    One forward pass gives both. Their gradient at the unmodified model is
    exactly 0 (it is their minimum), so their head importance is measured by
    removing heads (:func:`ablation_per_text`), not by gradients.

``"mlm"``
    Masked-language-model cross-entropy, when the checkpoint has an MLM head
    (bert-base-chinese does). About 15% of each text's ordinary tokens (at
    least one) are replaced by the mask token, chosen by a seeded generator;
    the loss is the cross-entropy of predicting them.
``"contrastive"``
    For models without an MLM head, such as the bundled all-MiniLM-L6-v2
    sentence encoder. Its own training objective was contrastive (in-batch
    negatives, cosine similarity times 20), so the loss asks the same question:
    each query's mean-pooled embedding must be closer to a lightly perturbed
    copy of itself (one word dropped, chosen by a seeded generator; texts of
    one or two words are kept whole) than to the other queries' copies in the
    batch: ``L = CE(20 * cos(a_i, p_j), j = i)`` (InfoNCE). Unlike the distance
    between the gated and the ungated embedding, whose gradient at ``xi = 1``
    is exactly zero (it is at its minimum), this loss has a real gradient at
    the unmodified model and rises when heads that tell queries apart are
    removed. On the bundled model the unpruned loss is close to 0 (dropping
    one word hardly moves a sentence embedding), so relative thresholds on it
    sit at the noise level: use it to see the gradient method at work, and the
    representation objectives to prune.

CPU threads. These measures run many small forward passes, on torch's own
thread setting by default (``threads=None``). On an idle two-core machine two
threads ran a batch of 64 short texts 1.75x faster than one (0.49 s against
0.86 s, multilingual-e5-small); on a machine busy with other work, competing
threads can make each pass several times slower: pass ``threads=1`` there
(the setting is restored afterwards).
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from attnlab.analysis.stats import Interval, correlation, interval_from_samples, resample_counts
from attnlab.core.checks import check_positive_int
from attnlab.core.distributions import ALL_KEYS, CONTENT_KEYS, KEY_READINGS, special_mask, special_token_ids
from attnlab.core.extract import check_texts, iter_attention_batches
from attnlab.core.gates import gate_heads, gates_for, mask_heads, ones_gates
from attnlab.core.language import N_, _
from attnlab.core.memo import memo
from attnlab.core import memory
from attnlab.core.models import LoadedModel, load_masked_lm, masked_lm_head
from attnlab.core.run import copies_that_fit, encode, precision_context, recompute_in_backward, repeat_batch, run

CONTRASTIVE_SCALE = 20.0  # all-MiniLM-L6-v2's training scale (temperature 0.05)
MASK_FRACTION = 0.15
#: the objectives whose loss is how far the final hidden states move (0 for the full model)
REPRESENTATION_KINDS = ("sentence", "token")
KINDS = ("auto", "mlm", "contrastive") + REPRESENTATION_KINDS
KIND_LABELS = {"sentence": N_("sentence"), "token": N_("token"), "contrastive": N_("contrastive"),
               "mlm": N_("masked LM")}  # marked: an objective's name as printed

# An objective's description is stored in English (it is saved with the results) and shown
# through ``translated``, which finds these templates filled in.
SENTENCE_DESCRIPTION = N_("1 - cos between the pruned and the full model's mean-pooled sentence vector, "
                          "on {n} texts")
TOKEN_DESCRIPTION = N_("1 - cos between the pruned and the full model's token vectors (mean over real tokens), "
                       "on {n} texts")
MLM_DESCRIPTION = N_("masked-LM cross-entropy on {n} texts ({share} of tokens masked, seed {seed})")
CONTRASTIVE_DESCRIPTION = N_("contrastive InfoNCE on {n} texts: each mean-pooled query embedding vs a copy "
                             "with one word dropped, against the other {others} in its batch "
                             "(scale {scale}, seed {seed})")


def kind_label(kind: str) -> str:
    """An objective's name (``"sentence"``, ``"token"``, ``"contrastive"``, ``"mlm"``) in the
    reader's language; any other name unchanged."""
    return _(KIND_LABELS[kind]) if kind in KIND_LABELS else kind


def pair_label(name: str) -> str:
    """Two objectives' names joined by ``" vs "`` (``"sentence vs token"``, a key of the
    agreements lesson 11 saves) in the reader's language."""
    first, _sep, second = name.partition(" vs ")
    if not second:
        return kind_label(name)
    return _("{first} vs {second}").format(first=kind_label(first), second=kind_label(second))


# --------------------------------------------------------------------------- objectives


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block on ``n`` CPU threads (None: leave torch's setting alone)."""
    if n is None:
        yield
        return
    n = check_positive_int(n, "threads")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass
class Objective:
    """A fixed loss over fixed texts: ``loss(batch)`` for each prepared batch.

    Attributes:
        kind: ``"mlm"``, ``"contrastive"``, ``"sentence"`` or ``"token"``.
        batches: prepared model inputs (tensors), one dict per batch (for the
            representation kinds also the full model's outputs, ``"reference"``).
        sizes: number of texts in each batch (for weighted means).
        description: one line saying what the loss is.
        precision: of its passes, ``"fp32"`` (exact) or a reduced one (see
            :func:`attnlab.core.run.run`); :meth:`at_precision` gives a copy at another.
    """

    kind: str
    batches: list[dict[str, Any]]
    sizes: list[int]
    description: str
    _m: LoadedModel = field(repr=False, default=None)
    _mlm: Any = field(repr=False, default=None)
    precision: str = "fp32"

    def at_precision(self, precision: str) -> "Objective":
        """The same objective (the same batches and references) whose passes run at ``precision``."""
        return self if precision == self.precision else replace(self, precision=precision)

    def first_batch(self) -> "Objective":
        """The same objective on its first batch only (its first ``sizes[0]`` texts)."""
        return self.one_batch(0)

    def one_batch(self, i: int) -> "Objective":
        """The same objective on batch ``i`` only (its ``sizes[i]`` texts)."""
        return replace(self, batches=self.batches[i:i + 1], sizes=self.sizes[i:i + 1])

    @property
    def n_texts(self) -> int:
        return int(sum(self.sizes))

    @property
    def absolute(self) -> bool:
        """True when the loss is 0 for the full model and tolerances are absolute numbers."""
        return self.kind in REPRESENTATION_KINDS

    def _forward(self, batch: dict[str, Any], model: torch.nn.Module | None = None,
                 start_at: tuple[int, torch.Tensor] | None = None) -> Any:
        """The output object of one pass over ``batch`` (of ``model``: the MLM model, or
        ``m.model`` by default), through :func:`attnlab.core.run.run`; the autograd graph is kept
        when gradients are enabled (as in :meth:`losses`). ``start_at``: see :func:`run`."""
        return run(self._m, batch["inputs"], keep=("output",), model=model,
                   grad=torch.is_grad_enabled(), start_at=start_at, precision=self.precision).output

    def layer_inputs(self, batch: dict[str, Any]) -> list[torch.Tensor]:
        """The input of every layer, ``[hidden state l for l in 0 .. L - 1]`` (each ``(B, T, d)``), of the
        unchanged model on ``batch``, from one pass."""
        model = self._mlm if self.kind == "mlm" else None
        cache = run(self._m, batch["inputs"], keep=("hidden",), layers=None, model=model, precision=self.precision)
        return [cache.hidden[layer] for layer in range(self._m.n_layers)]

    def text_losses(self, batch: dict[str, Any],
                    start_at: tuple[int, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        """The loss of each text of one batch, ``{name: (B,)}``.

        Representation kinds give ``{"sentence": (B,), "token": (B,)}`` (one forward pass);
        ``"contrastive"`` gives ``{"contrastive": (B,)}``, each query's InfoNCE term; ``"mlm"``
        gives ``{"mlm": (B,)}``, the mean cross-entropy over each text's masked tokens. The
        batch loss (:meth:`batch_loss`) is the mean of these (for ``"mlm"``, weighted by the
        masked tokens of each text). ``start_at`` (see :func:`attnlab.core.run.run`) begins the
        pass part-way, on the hidden state of an unchanged lower part.
        """
        if not self.from_final_states:  # an MLM model whose head this course cannot split off
            return {"mlm": self._mlm_text_losses(batch, start_at)}
        return self.losses_of_states(batch, self._forward(batch, start_at=start_at).last_hidden_state)

    @property
    def from_final_states(self) -> bool:
        """True when every text's loss follows from the encoder's final hidden states alone
        (:meth:`losses_of_states`): always, except an MLM model whose head is not known."""
        return self.kind != "mlm" or self._mlm_head() is not None

    def _mlm_head(self) -> Any | None:
        """The masked-LM head on the shared encoder's final states, or None."""
        return masked_lm_head(self._mlm) if self._mlm is not self._m.model else None

    def losses_of_states(self, batch: dict[str, Any], hidden: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{name: (B,)}`` as :meth:`text_losses`, from the final hidden states ``hidden``
        ``(rows of batch, T, D)`` of one pass over ``batch`` (a contrastive batch holds its texts
        and then their copies, ``2B`` rows)."""
        if self.kind == "mlm":
            labels = batch["labels"]  # (B, T), -100 where nothing is predicted
            counts = (labels != -100).sum(1).clamp_min(1)  # (B,)
            rows, cols = torch.nonzero(labels != -100, as_tuple=True)  # (M,) each: the masked positions
            with precision_context(self.precision, hidden.device):  # the head at the passes' precision
                logits = self._mlm_head()(hidden[rows, cols]).to(hidden.dtype)  # (M, V): only the predicted positions
            ce = torch.nn.functional.cross_entropy(logits, labels[rows, cols], reduction="none")  # (M,)
            return {"mlm": torch.zeros(labels.shape[0], dtype=ce.dtype, device=ce.device).index_add(0, rows, ce)
                    / counts}
        if self.kind == "contrastive":
            mask = batch["inputs"]["attention_mask"].to(hidden.dtype)  # (2B, T)
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # (2B, D)
            pooled = torch.nn.functional.normalize(pooled, dim=-1)
            n = pooled.shape[0] // 2
            sims = CONTRASTIVE_SCALE * pooled[:n] @ pooled[n:].T  # (B, B): query i against copy j
            target = torch.arange(n, device=sims.device)
            return {"contrastive": torch.nn.functional.cross_entropy(sims, target, reduction="none")}
        return representation_losses(hidden, batch["reference"], batch["inputs"]["attention_mask"])

    def _mlm_text_losses(self, batch: dict[str, Any], start_at: tuple[int, torch.Tensor] | None) -> torch.Tensor:
        """``(B,)``: each text's mean cross-entropy over its masked tokens, every position through the
        whole MLM model (for an MLM head this course cannot split off; otherwise
        :meth:`losses_of_states` projects only the masked positions)."""
        labels = batch["labels"]  # (B, T), -100 where nothing is predicted
        counts = (labels != -100).sum(1).clamp_min(1)  # (B,)
        logits = self._forward(batch, self._mlm, start_at).logits  # (B, T, V)
        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100,
                                               reduction="none")  # (B, T), 0 where ignored
        return ce.sum(1) / counts

    def per_text(self, layer_inputs: Sequence[tuple[int, torch.Tensor]] | None = None) -> dict[str, np.ndarray]:
        """Every text's loss over all batches, ``{name: (N,)}`` (names as :meth:`text_losses`), no gradients.

        ``layer_inputs``: one ``(layer, hidden)`` per batch (from :meth:`layer_inputs`): each
        batch's pass begins at that layer; right only where nothing below it is changed."""
        out: dict[str, list[np.ndarray]] = {}
        starts = [None] * len(self.batches) if layer_inputs is None else list(layer_inputs)
        if len(starts) != len(self.batches):
            raise ValueError(f"{len(starts)} layer inputs for {len(self.batches)} batches")
        with torch.no_grad():
            for batch, start_at in zip(self.batches, starts):
                for kind, values in self.text_losses(batch, start_at).items():
                    out.setdefault(kind, []).append(values.double().cpu().numpy())
        return {kind: np.concatenate(parts) for kind, parts in out.items()}

    def final_states(self, layer_inputs: Sequence[tuple[int, torch.Tensor]] | None = None
                     ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The model's final hidden states on every batch, as the model is now (with any gates
        or masks in force), no gradients: one ``(hidden (B, T, D), attention mask (B, T))``
        per batch (a contrastive batch holds its texts and then their copies, ``2B`` rows).

        ``layer_inputs``: as in :meth:`per_text` (each pass begins at that layer)."""
        starts = [None] * len(self.batches) if layer_inputs is None else list(layer_inputs)
        if len(starts) != len(self.batches):
            raise ValueError(f"{len(starts)} layer inputs for {len(self.batches)} batches")
        out = []
        with torch.no_grad():
            for batch, start_at in zip(self.batches, starts):
                hidden = self._forward(batch, start_at=start_at).last_hidden_state  # (B, T, D)
                out.append((hidden, batch["inputs"]["attention_mask"]))
        return out

    def full_states(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The unchanged model's final hidden states, as :meth:`final_states` gives them with nothing
        masked: kept from when a representation objective was made (no pass); for another objective
        one pass now (call it with nothing masked)."""
        if not self.absolute:
            return self.final_states()
        return [(batch["reference"], batch["inputs"]["attention_mask"]) for batch in self.batches]

    def sentence_vectors(self, layer_inputs: Sequence[tuple[int, torch.Tensor]] | None = None) -> np.ndarray:
        """``(N, D)``: every text's mean-pooled final hidden state (over its real tokens), as the
        model is now (:meth:`final_states`); float64."""
        return sentence_vectors_of(self.final_states(layer_inputs))

    def batch_loss(self, batch: dict[str, Any]) -> torch.Tensor:
        """Scalar loss of one prepared batch (graph kept: call ``backward`` on it)."""
        if self.absolute:
            return self.text_losses(batch)[self.kind].mean()
        if self.kind == "mlm":  # the mean over every masked token of the batch
            weights = (batch["labels"] != -100).sum(1)  # (B,) masked tokens of each text
            return (self.text_losses(batch)["mlm"] * weights).sum() / weights.sum().clamp_min(1)
        return self.text_losses(batch)["contrastive"].mean()  # anchors and positives in one forward pass

    def losses(self) -> Iterator[tuple[torch.Tensor, int]]:
        """Yield ``(loss, batch size)`` for every batch, with gradients enabled."""
        for batch, size in zip(self.batches, self.sizes):
            yield self.batch_loss(batch), size

    def evaluate(self) -> float:
        """Mean loss over all texts (batch losses weighted by batch size), no gradients."""
        total = 0.0
        with torch.no_grad():
            for batch, size in zip(self.batches, self.sizes):
                total += float(self.batch_loss(batch)) * size
        return total / self.n_texts


def representation_losses(hidden: torch.Tensor, reference: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """``{"sentence": (B,), "token": (B,)}``: ``1 - cos`` of the mean-pooled vectors, and of each
    real token's vector averaged over the text, between ``hidden`` and the full model's
    ``reference`` (both ``(B, T, D)``; ``mask`` ``(B, T)``)."""
    mask = mask.to(hidden.dtype)  # (B, T)
    n = mask.sum(1)  # (B,) real tokens
    pooled_hidden = (hidden * mask[..., None]).sum(1) / n[:, None]  # (B, D)
    ref_pooled = (reference * mask[..., None]).sum(1) / n[:, None]  # (B, D)
    sentence = 1 - torch.nn.functional.cosine_similarity(pooled_hidden, ref_pooled, dim=-1)  # (B,)
    per_token = 1 - torch.nn.functional.cosine_similarity(hidden, reference, dim=-1)  # (B, T)
    token = (per_token * mask).sum(1) / n  # (B,)
    return {"sentence": sentence, "token": token}


def pooled(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B, D)``: the mean of ``hidden`` ``(B, T, D)`` over each row's real tokens (``mask`` ``(B, T)``)."""
    weights = mask.to(hidden.dtype)[..., None]  # (B, T, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1)


def mlm_model(m: LoadedModel) -> Any | None:
    """:func:`attnlab.core.models.load_masked_lm` of ``m``, loaded once per model and run mode
    (:func:`attnlab.core.memo.memo`) and dropped with ``m`` (``m`` itself is not modified)."""
    return memo(m, "masked_lm", (), lambda: load_masked_lm(m))


def _mask_tokens(m: LoadedModel, inputs: dict[str, torch.Tensor], gen: torch.Generator) -> tuple[dict, torch.Tensor]:
    ids = inputs["input_ids"].clone()  # (B, T)
    special = torch.zeros_like(ids, dtype=torch.bool)
    for sid in m.tokenizer.all_special_ids:
        special |= ids == sid
    labels = torch.full_like(ids, -100)
    for row in range(ids.shape[0]):
        candidates = torch.nonzero(~special[row]).flatten()
        if len(candidates) == 0:
            continue
        k = max(1, int(round(MASK_FRACTION * len(candidates))))
        chosen = candidates[torch.randperm(len(candidates), generator=gen)[:k]]
        labels[row, chosen] = ids[row, chosen]
        ids[row, chosen] = m.tokenizer.mask_token_id
    return {**inputs, "input_ids": ids}, labels


def perturbed_view(text: str, rng: random.Random) -> str:
    """The text with one word dropped (texts of one or two words are returned whole).

    Chinese text without spaces is treated one character per word.
    """
    words = text.split() if " " in text.strip() else list(text.strip())
    if len(words) < 3:
        return text
    drop = rng.randrange(len(words))
    kept = words[:drop] + words[drop + 1 :]
    return (" " if " " in text.strip() else "").join(kept)


def make_objective(
    m: LoadedModel,
    texts: Sequence[str] | str,
    *,
    kind: str = "auto",
    batch_size: int = 16,
    seed: int = 0,
) -> Objective:
    """Prepare the loss used by importance, ablation and pruning.

    Args:
        m: the loaded model.
        texts: the texts to average over.
        kind: ``"auto"`` (MLM when the checkpoint has an MLM head, else
            contrastive), ``"mlm"``, ``"contrastive"``, or a representation
            objective, ``"sentence"`` or ``"token"`` (see the module docstring).
        batch_size: texts per batch. For ``"contrastive"`` this is also the
            number of candidates each query is told apart from (at least 2).
        seed: fixes the masked positions / dropped words.

    Returns:
        An :class:`Objective`.
    """
    texts = check_texts(m, texts)[0]
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    batch_size = check_positive_int(batch_size, "batch_size")
    if kind in REPRESENTATION_KINDS:
        return _representation_objective(m, texts, kind, batch_size)
    mlm = mlm_model(m) if kind in ("auto", "mlm") else None
    if kind == "mlm" and mlm is None:
        raise ValueError(
            f"{m.name} has no masked-language-model head in its checkpoint; use kind='contrastive'."
        )
    if mlm is not None and m.tokenizer.mask_token_id is None:
        mlm = None
    chunks = [texts[s : s + batch_size] for s in range(0, len(texts), batch_size)]
    batches, sizes = [], []
    if mlm is not None:
        gen = torch.Generator().manual_seed(seed)
        for chunk in chunks:
            inputs, labels = _mask_tokens(m, encode(m, chunk).inputs, gen)
            batches.append({"inputs": inputs, "labels": labels.to(m.device)})
            sizes.append(len(chunk))
        desc = MLM_DESCRIPTION.format(n=len(texts), share=f"{MASK_FRACTION:.0%}", seed=seed)
        return Objective("mlm", batches, sizes, desc, _m=m, _mlm=mlm)
    if len(texts) < 2:
        raise ValueError("the contrastive objective needs at least 2 texts (each is told apart from the others)")
    if len(chunks) > 1 and len(chunks[-1]) < 2:  # a lone last text has nothing to be told apart from
        last = chunks.pop()
        chunks[-1] = chunks[-1] + last
    rng = random.Random(seed)
    for chunk in chunks:
        views = [perturbed_view(t, rng) for t in chunk]
        batches.append({"inputs": encode(m, list(chunk) + views).inputs})
        sizes.append(len(chunk))
    desc = CONTRASTIVE_DESCRIPTION.format(n=len(texts), others=min(batch_size, len(texts)) - 1,
                                          scale=f"{CONTRASTIVE_SCALE:g}", seed=seed)
    return Objective("contrastive", batches, sizes, desc, _m=m)


def _representation_objective(m: LoadedModel, texts: list[str], kind: str, batch_size: int) -> Objective:
    """The full model's final hidden states are recorded now, as the reference: build the
    objective outside any ``mask_heads`` block."""
    batches, sizes = [], []
    for s in range(0, len(texts), batch_size):
        chunk = texts[s : s + batch_size]
        inputs = encode(m, chunk).inputs
        # (B, T, D): the full model; cloned out of inference mode so later losses can take gradients
        reference = run(m, inputs, keep=("output",)).output.last_hidden_state.clone()
        batches.append({"inputs": inputs, "reference": reference})
        sizes.append(len(chunk))
    desc = (SENTENCE_DESCRIPTION if kind == "sentence" else TOKEN_DESCRIPTION).format(n=len(texts))
    return Objective(kind, batches, sizes, desc, _m=m)


def _as_objective(m: LoadedModel, data: Sequence[str] | str | Objective, **kw) -> Objective:
    return data if isinstance(data, Objective) else make_objective(m, data, **kw)


# --------------------------------------------------------------------------- measures


@contextlib.contextmanager
def frozen_weights(*modules: torch.nn.Module) -> Iterator[None]:
    """No weight of ``modules`` takes gradients inside the block; restored on exit, also after an error.

    A backward pass for the head gates alone then records only what the gates' gradient needs,
    not what every weight's would: on multilingual-e5-small, one batch of 64 short texts peaked
    127 MB lower, with the same gradients to the last bit.
    """
    params = [p for module in modules for p in module.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def gate_gradients(m: LoadedModel, data: Sequence[str] | Objective, *, gates: torch.Tensor | None = None,
                   progress: bool = False, threads: int | None = None, **objective_kw) -> torch.Tensor:
    """``dL/dxi`` of every batch: ``(batches, layers, heads)``, signed, at ``gates`` (default all 1).

    One forward and one backward pass per batch, whatever the number of heads. The forward pass
    keeps only each layer's input and the backward pass runs the layer again
    (:func:`attnlab.core.run.recompute_in_backward`): on bert-base-chinese's shape one batch of
    64 texts raised the peak by 177 MB instead of 451 MB, with the same gradients to the bit.
    """
    objective = _as_objective(m, data, **objective_kw)
    base = ones_gates(m, dtype=next(m.model.parameters()).dtype) if gates is None else gates
    base = base.detach().clone().requires_grad_(True)  # (L, H)
    grads = []
    modules = [m.model] + ([objective._mlm] if objective._mlm is not None else [])
    iterator = objective.losses()
    if progress:
        iterator = tqdm(iterator, total=len(objective.batches), desc=_("importance"), unit=_("batch"))
    with frozen_weights(*modules), gate_heads(m, base), recompute_in_backward(m), torch_threads(threads):
        for loss, _size in iterator:
            (grad,) = torch.autograd.grad(loss, base)
            grads.append(grad.detach().clone())
    return torch.stack(grads)  # (batches, L, H)


def head_importance(m: LoadedModel, texts: Sequence[str] | Objective, *, normalize: bool = True,
                    progress: bool = False, threads: int | None = None, **objective_kw) -> np.ndarray:
    """Michel et al.'s head importance ``I_h = E |dL/dxi_h|`` for every head.

    Args:
        m: the loaded model.
        texts: texts (an :class:`Objective` is built with ``objective_kw``:
            ``kind``, ``batch_size``, ``seed``) or a prepared :class:`Objective`.
        normalize: divide each layer's scores by their L2 norm (as Michel et
            al.'s code does), so layers with large gradients do not dominate.

    Returns:
        ``[layers, heads]`` numpy array; larger = the loss depends more on the head.
    """
    objective = _as_objective(m, texts, **objective_kw)
    grads = gate_gradients(m, objective, progress=progress, threads=threads)  # (batches, L, H)
    weights = torch.tensor(objective.sizes, dtype=grads.dtype)[:, None, None]
    scores = (grads.abs() * weights).sum(0) / weights.sum()  # (L, H)
    if normalize:
        scores = scores / scores.norm(dim=1, keepdim=True).clamp_min(1e-20)
    return scores.double().numpy()


def ablation_effects(m: LoadedModel, texts: Sequence[str] | Objective, *, progress: bool = False,
                     threads: int | None = None, **objective_kw) -> tuple[np.ndarray, float]:
    """Loss change when each head alone is masked: ``layers x heads`` forward passes.

    Returns:
        ``(effects [layers, heads], base_loss)``; ``effects[l, h] = L(without head) - L``.
    """
    objective = _as_objective(m, texts, **objective_kw)
    effects = np.zeros((m.n_layers, m.n_heads))
    pairs = [(l, h) for l in range(m.n_layers) for h in range(m.n_heads)]
    iterator = tqdm(pairs, desc=_("ablating heads"), unit=_("head")) if progress else pairs
    with torch_threads(threads):
        base = objective.evaluate()
        for layer, head in iterator:
            with mask_heads(m, [(layer, head)]):
                effects[layer, head] = objective.evaluate() - base
    return effects, base


def ablation_per_text(m: LoadedModel, objective: Objective, *, progress: bool = False,
                      threads: int | None = None, fill: torch.Tensor | None = None,
                      keep: dict[str, "StatesReducer"] | None = None, layers: Sequence[int] | None = None,
                      heads: Sequence[int] | None = None, precision: str = "fp32") -> dict[str, np.ndarray]:
    """Loss change of every text when each head alone is masked: zero-ablation, or with
    ``fill`` (``[layers, heads, d_head]`` from :func:`attnlab.core.gates.head_output_means`)
    mean-ablation, the head's output replaced by its mean over reference texts.

    A representation objective gives the ``"sentence"`` and the ``"token"`` loss at once;
    ``"contrastive"`` and ``"mlm"`` give their own per-text loss (:meth:`Objective.text_losses`).
    Masking a head of layer ``l`` leaves layers ``0 .. l - 1`` as they are, so each pass begins
    at layer ``l``, on the unchanged model's hidden state there (:meth:`Objective.layer_inputs`):
    the same numbers as whole passes, in a little over half the time on a 12-layer model. Each
    pass also masks every head of the layer at once, each in its own copy of the batch
    (:func:`single_head_states`), whenever the loss follows from the final states
    (:attr:`Objective.from_final_states`); otherwise one pass per head.

    ``keep``: more reducers of the same masked final states (as in :func:`single_head_states`,
    e.g. every text's sentence vector), so that another measure needs no sweep of its own; each
    adds ``{name: (L, H, ...)}`` to the result (batched path only).

    ``layers``, ``heads``: mask only these heads of these layers (default all); the arrays then
    hold those only, in that order. ``precision``: of every pass, the unchanged model's included, so
    that each effect is a difference of two losses measured alike (``"bf16"`` about halves the
    time where it is native; :func:`attnlab.course.checks.precision_check` compares it with fp32).

    Returns:
        ``{name: (N, L, H)}``: ``L_text(without head) - L_text``; and ``keep``'s arrays.
    """
    keep = dict(keep or {})
    if keep and not objective.from_final_states:
        raise ValueError("keep needs an objective whose loss follows from the final states")
    objective = objective.at_precision(precision)
    layers = _checked_indices(layers, m.n_layers, "layers")
    heads = _checked_indices(heads, m.n_heads, "heads")
    with torch_threads(threads):
        base = objective.per_text()  # {kind: (N,)}; 0 up to rounding for a representation objective
    kinds = list(base)
    if objective.from_final_states:
        def losses(states: list[tuple[torch.Tensor, torch.Tensor]]) -> np.ndarray:
            parts = [objective.losses_of_states(batch, hidden) for (hidden, _mask), batch in zip(states, objective.batches)]
            return np.stack([np.concatenate([p[k].double().cpu().numpy() for p in parts]) for k in kinds],
                            axis=1)  # (N, kinds)
        sweep = single_head_states(m, objective, {**keep, "": losses}, progress=progress, threads=threads,
                                   fill=fill, layers=layers, heads=heads)  # {"": (L, H, N, kinds), and keep's}
        kept = {name: sweep[name] for name in keep}
        return {**{kind: np.moveaxis(sweep[""][..., j], 2, 0) - base[kind][:, None, None]
                   for j, kind in enumerate(kinds)}, **kept}
    bar = tqdm(total=len(layers) * len(heads), desc=_("ablating heads"), unit=_("head"), disable=not progress)
    with torch_threads(threads), bar:
        out = {kind: np.zeros((objective.n_texts, len(layers), len(heads))) for kind in kinds}
        inputs = [objective.layer_inputs(batch) for batch in objective.batches]  # every layer's input, per batch
        for i, layer in enumerate(layers):
            # each batch's input of this layer (run keeps no graph); layer 0: whole passes
            starts = [(layer, per_layer[layer]) for per_layer in inputs] if layer else None
            for j, head in enumerate(heads):
                with mask_heads(m, [(layer, head)], fill):
                    for kind, values in objective.per_text(starts).items():
                        out[kind][:, i, j] = values - base[kind]
                bar.update(1)
    return out


def _checked_indices(chosen: Sequence[int] | None, count: int, name: str) -> list[int]:
    """``chosen`` layers (or heads) as a list of distinct indices below ``count`` (default: all, in order)."""
    if chosen is None:
        return list(range(count))
    out = [int(i) for i in chosen]
    if not out or len(set(out)) != len(out) or not all(0 <= i < count for i in out):
        raise ValueError(f"{name} must be distinct indices from 0 to {count - 1}, got {list(chosen)}")
    return out


StatesReducer = Callable[[list[tuple[torch.Tensor, torch.Tensor]]], np.ndarray]


def masked_states(m: LoadedModel, objective: Objective, heads: Sequence[tuple[int, int]],
                  reduce: StatesReducer, *, threads: int | None = None) -> np.ndarray:
    """``reduce(objective.final_states())`` with the listed heads masked together
    (:func:`attnlab.core.gates.mask_heads`; an empty list: the full model)."""
    with torch_threads(threads), mask_heads(m, heads):
        return np.asarray(reduce(objective.final_states()))


def copies_per_pass(objective: Objective, rows_per_pass: int | None = None) -> int:
    """How many copies of the objective's largest batch fit in one pass of ``rows_per_pass`` rows (at least 1)."""
    rows = max(batch["inputs"]["input_ids"].shape[0] for batch in objective.batches)
    return copies_that_fit(rows, None if rows_per_pass is None else check_positive_int(rows_per_pass, "rows_per_pass"),
                           m=objective._m)


def _copies_pass(m: LoadedModel, objective: Objective, batch: dict[str, Any], gates: torch.Tensor,
                 fill: torch.Tensor | None, start: torch.Tensor | None = None, layer: int = 0) -> list[torch.Tensor]:
    """One pass over ``len(gates)`` copies of ``batch``, copy ``j`` with the gates ``gates[j]`` ``(L, H)``.

    ``start``: the unchanged model's input of ``layer`` ``(B, T, d)`` (nothing below ``layer`` may be
    gated); the pass then begins there. Returns each copy's final hidden states ``(B, T, D)``."""
    copies, size = gates.shape[0], batch["inputs"]["input_ids"].shape[0]
    inputs = repeat_batch(batch["inputs"], copies)  # (copies * B, T) each
    rows = gates.repeat_interleave(size, dim=0)  # (copies * B, L, H): one row of gates per text of each copy
    start_at = None if start is None else (layer, start.repeat(copies, 1, 1))
    with gate_heads(m, rows, fill):
        hidden = objective._forward({"inputs": inputs}, start_at=start_at).last_hidden_state  # (copies * B, T, D)
    return [hidden[j * size:(j + 1) * size] for j in range(copies)]


def single_head_states(m: LoadedModel, objective: Objective, reduce: StatesReducer | dict[str, StatesReducer], *,
                       heads_per_pass: int | None = None, progress: bool = False,
                       threads: int | None = None, fill: torch.Tensor | None = None,
                       layers: Sequence[int] | None = None,
                       heads: Sequence[int] | None = None) -> np.ndarray | dict[str, np.ndarray]:
    """``(L, H, ...)``: ``reduce`` of the final states with each head alone masked.

    ``reduce`` maps :meth:`Objective.final_states` (a list of ``(hidden, mask)`` per batch) to
    an array, e.g. every text's sentence vector ``(N, D)``; a dict of reducers gives a dict of
    such arrays from the same passes. Every batch is repeated once per
    head of a layer (``heads_per_pass`` at a time; default :func:`copies_per_pass`, at most the
    layer's heads) with one row of gates per copy (:func:`attnlab.core.gates.gate_heads`), so one
    pass masks each of those heads in its own copy. As in :func:`ablation_per_text`, a head of
    layer ``l`` leaves the layers below unchanged, so the passes begin at layer ``l`` on the
    unchanged model's hidden state there. The same numbers as one pass per head, in a fraction of
    the time. ``fill`` (``[layers, heads, d_head]``): a masked head leaves its mean output, not 0
    (:func:`attnlab.core.gates.head_output_means`). ``layers``, ``heads``: mask only these heads of
    these layers (default all), giving ``(len(layers), len(heads), ...)``. The passes run at
    ``objective.precision``.
    """
    layers = _checked_indices(layers, m.n_layers, "layers")
    chosen = _checked_indices(heads, m.n_heads, "heads")
    per_pass = (copies_per_pass(objective) if heads_per_pass is None
                else check_positive_int(heads_per_pass, "heads_per_pass"))
    reducers = reduce if isinstance(reduce, dict) else {"": reduce}
    rows: list[dict[str, np.ndarray]] = []
    bar = tqdm(total=len(layers) * len(chosen), desc=_("ablating heads"), unit=_("head"), disable=not progress)
    with torch_threads(threads), bar, torch.no_grad():
        # every layer's input, per batch (none needed when only layer 0's heads are masked)
        inputs = ([objective.layer_inputs(batch) for batch in objective.batches] if max(layers) > 0
                  else [None] * len(objective.batches))
        for layer in layers:
            states: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _h in chosen]  # per chosen head
            for batch, per_layer in zip(objective.batches, inputs):
                start = per_layer[layer] if layer else None  # (B, T, d)
                for first in range(0, len(chosen), per_pass):
                    group = range(first, min(len(chosen), first + per_pass))  # places in chosen
                    gates = ones_gates(m).repeat(len(group), 1, 1)  # (copies, L, H)
                    for j, place in enumerate(group):
                        gates[j, layer, chosen[place]] = 0.0
                    hidden = _copies_pass(m, objective, batch, gates, fill, start, layer)
                    for place, copy in zip(group, hidden):  # (B, T, D) of each copy
                        states[place].append((copy, batch["inputs"]["attention_mask"]))
            for per_head in states:
                rows.append({name: np.asarray(r(per_head)) for name, r in reducers.items()})
                bar.update(1)
    out = {name: np.stack([row[name] for row in rows]).reshape((len(layers), len(chosen)) + rows[0][name].shape)
           for name in reducers}  # (L, H, ...) each
    memory.trim()  # the sweep's activations are freed: give their pages back now
    return out if isinstance(reduce, dict) else out[""]


def head_sets_states(m: LoadedModel, objective: Objective, sets: Sequence[Sequence[tuple[int, int]]],
                     reduce: Callable[[list[tuple[torch.Tensor, torch.Tensor]]], Any], *,
                     sets_per_pass: int | None = None, threads: int | None = None,
                     fill: torch.Tensor | None = None) -> list[Any]:
    """``[reduce(final states with sets[i] masked together) for each i]``, several sets a pass.

    Each set of heads is masked in its own copy of every batch (``sets_per_pass`` copies a pass;
    default :func:`copies_per_pass`), so small batches of texts make full passes: the same numbers
    as :func:`masked_states` set by set, up to rounding. ``reduce`` as in :func:`single_head_states`
    (one list of ``(hidden, mask)``, aligned with ``objective.batches``); its result is returned as
    it is. ``fill``: as in :func:`attnlab.core.gates.mask_heads`."""
    per_pass = copies_per_pass(objective) if sets_per_pass is None else check_positive_int(sets_per_pass,
                                                                                             "sets_per_pass")
    out: list[Any] = []
    with torch_threads(threads), torch.no_grad():
        for first in range(0, len(sets), per_pass):
            group = sets[first:first + per_pass]
            gates = torch.stack([gates_for(m, heads) for heads in group])  # (copies, L, H)
            states: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _s in group]
            for batch in objective.batches:
                for j, hidden in enumerate(_copies_pass(m, objective, batch, gates, fill)):
                    states[j].append((hidden, batch["inputs"]["attention_mask"]))
            out.extend(reduce(s) for s in states)
    return out


def text_losses_of(objective: Objective) -> Callable[[list[tuple[torch.Tensor, torch.Tensor]]], dict[str, np.ndarray]]:
    """A reducer for :func:`head_sets_states`: every text's loss ``{name: (N,)}`` as
    :meth:`Objective.per_text`, from final states aligned with ``objective.batches``."""
    def losses(states: list[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, np.ndarray]:
        parts = [objective.losses_of_states(batch, hidden) for (hidden, _mask), batch in zip(states, objective.batches)]
        return {kind: np.concatenate([p[kind].double().cpu().numpy() for p in parts]) for kind in parts[0]}
    return losses


def sentence_vectors_of(states: list[tuple[torch.Tensor, torch.Tensor]]) -> np.ndarray:
    """A :data:`StatesReducer`: ``(N, D)`` mean-pooled final states of every text, float64."""
    return np.concatenate([pooled(hidden, mask).double().cpu().numpy() for hidden, mask in states])


def importance_agreement(a: np.ndarray, b: np.ndarray, *, paired: bool, n_boot: int = 1000, level: float = 0.95,
                         seed: int = 0) -> Interval:
    """Spearman correlation across heads of two importance maps, each a mean over texts.

    Args:
        a, b: ``(N_a, L, H)`` and ``(N_b, L, H)`` per-text effects.
        paired: the same texts on both sides (e.g. two objectives): each
            resample draws the same texts for both. Otherwise (e.g. the two
            halves of a split) each side is resampled on its own.

    Returns:
        The correlation of ``a.mean(0)`` and ``b.mean(0)`` with a bootstrap
        interval over texts (:func:`attnlab.analysis.stats.resample_counts`).
    """
    a = np.asarray(a, dtype=float).reshape(len(a), -1)  # (N_a, L*H)
    b = np.asarray(b, dtype=float).reshape(len(b), -1)  # (N_b, L*H)
    if paired and len(a) != len(b):
        raise ValueError(f"paired maps need the same texts, got {len(a)} and {len(b)}")
    estimate = correlation(a.mean(0), b.mean(0), "spearman")
    weights_a = resample_counts(len(a), n_boot, seed) / len(a)  # (B, N_a)
    weights_b = weights_a if paired else resample_counts(len(b), n_boot, seed + 1) / len(b)
    means_a, means_b = weights_a @ a, weights_b @ b  # (B, L*H) each
    boots = np.array([correlation(x, y, "spearman") for x, y in zip(means_a, means_b)])
    return interval_from_samples(estimate, boots, level=level, n=min(len(a), len(b)))


def split_half_agreement(effects: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> Interval:
    """How stable an importance ranking is: the rank correlation of the importance measured
    on two random halves of the texts (``effects``: ``(N, L, H)`` per-text effects).

    The halves are fixed by ``seed``; the interval comes from resampling the
    texts within each half (:func:`importance_agreement`).
    """
    effects = np.asarray(effects, dtype=float)
    if len(effects) < 4:
        raise ValueError("a split-half comparison needs at least 4 texts")
    order = np.random.default_rng(seed).permutation(len(effects))
    half = len(effects) // 2
    return importance_agreement(effects[order[:half]], effects[order[half:]], paired=False, n_boot=n_boot,
                                seed=seed)


def head_confidence(m: LoadedModel, texts: Sequence[str] | str, *, batch_size: int = 32,
                    keys: str = ALL_KEYS) -> np.ndarray:
    """Voita et al.'s confidence: mean over query tokens of each head's largest weight, ``[layers, heads]``.

    Averaged over all real query rows of all texts (padding excluded).

    Args:
        keys: ``ALL_KEYS`` (the rows as computed, special tokens included) or ``CONTENT_KEYS``: each
            row renormalised over the non-special keys (:func:`attnlab.core.distributions.content_keys`;
            Voita et al. left the end-of-sentence token out), so that a head resting on ``<s>`` is as
            confident as the part of its row that reads the text. A row with no weight on any content
            key says nothing about the text and is left out (per head).
    """
    if keys not in KEY_READINGS:
        raise ValueError(f"keys must be one of {KEY_READINGS}, got {keys!r}")
    total = torch.zeros(m.n_layers, m.n_heads, dtype=torch.float64)
    rows = torch.zeros(m.n_layers, m.n_heads, dtype=torch.float64)
    special_ids = special_token_ids(m.tokenizer)
    for batch in iter_attention_batches(m, texts, batch_size=batch_size):
        maps = batch.maps.double()  # (B, L, H, T, T); 0 on padding rows and columns
        if keys == CONTENT_KEYS:
            content = (~special_mask(batch.input_ids, special_ids)).double()  # (B, T): padding is special too
            maps = maps * content[:, None, None, None, :]  # (B, L, H, T, T): special columns zeroed
            mass = maps.sum(dim=-1)  # (B, L, H, T)
            peak = torch.where(mass > 0, maps.amax(dim=-1) / mass.clamp_min(1e-300), 0.0)  # (B, L, H, T)
            total += peak.sum(dim=(0, 3))
            rows += (mass > 0).double().sum(dim=(0, 3))
        else:
            total += maps.amax(dim=-1).sum(dim=(0, 3))  # (L, H)
            rows += float(batch.lengths.sum())
    return (total / rows.clamp_min(1)).numpy()
