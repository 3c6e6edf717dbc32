"""Head regrouping: what would attention look like with fewer, wider heads?

The source article forces bert-base-chinese's 12 heads into 2 and sees every
token attend to itself. The thought experiment, made exact:

1. Run the unmodified model once and keep every layer's query and key
   projections ``Q, K`` ``(B, T, H * d_head)`` (computed from that layer's
   input hidden states).
2. Cut them into ``h'`` groups of *adjacent* heads instead of ``H`` heads:
   group ``g`` holds heads ``g*H/h' ... (g+1)*H/h' - 1``, so its width is
   ``d_model / h'``.
3. Attention of group ``g``: ``softmax(Q_g K_g^T / sqrt(d_model / h'))`` with
   the model's padding mask.

A group's score is the sum of its member heads' scores (before their
scaling), so when most members prefer "self", the sum prefers "self" too:
that is the article's explanation, and :func:`regroup_attention` lets you
measure it. With ``h' = H`` the result is the model's own attention.

Where the attention goes (:func:`regroup_summaries`): every weight of a row
lands on exactly one of six destinations, the token itself, the previous
token, the next token, the first or the last special token, or any other token
(:data:`DESTINATIONS`), so a collapse onto the neighbours is seen as well as
one onto the token itself or onto a special token.

Only the maps are regrouped; nothing downstream is recomputed (each layer's
input is the unmodified model's), which is what "the same Q and K, fewer
heads" means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from attnlab.analysis.head_stats import ENTROPY_EPS
from attnlab.core.checks import check_positive_int
from attnlab.core.display_width import display_width, pad_left
from attnlab.core.distributions import entropy, smooth
from attnlab.core.extract import Attention, check_texts
from attnlab.core.language import N_, _
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record
from attnlab.core.run import Hook, encode, run


def valid_group_counts(n_heads: int) -> list[int]:
    """Every ``h'`` that divides ``n_heads``, largest first (12 -> [12, 6, 4, 3, 2, 1])."""
    return [g for g in range(n_heads, 0, -1) if n_heads % g == 0]


def check_group_count(m: LoadedModel, n_groups: int) -> int:
    """``n_groups`` as an ``int`` when it divides ``m.n_heads`` (numpy ints accepted), else a clear error."""
    n_groups = check_positive_int(n_groups, "n_groups")
    if m.n_heads % n_groups:
        raise ValueError(
            _("n_groups={n_groups} does not divide this model's {heads} heads; choose one of {valid}.").format(
                n_groups=n_groups, heads=m.n_heads, valid=valid_group_counts(m.n_heads)))
    return n_groups


def check_absolute_positions(m: LoadedModel) -> None:
    """Regrouping needs scores that are exactly ``Q K^T``: absolute position embeddings only."""
    if getattr(m.model.config, "position_embedding_type", "absolute") not in ("absolute", None):
        raise ValueError(_("regrouping supports absolute position embeddings only "
                           "(relative-position scores are not part of Q K^T)."))


def group_width(m: LoadedModel, n_groups: int) -> int:
    """Dimensions of Q and K in one head after regrouping: ``d_model / h'``."""
    return m.hidden_size // check_group_count(m, n_groups)


def capture_queries_keys(m: LoadedModel, inputs: dict[str, torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """One forward pass of the unmodified model; return every layer's ``Q`` and ``K``.

    Forward hooks on the query and key projections record their outputs in
    call order; a module shared by several layers (ALBERT) is called once per
    layer, in layer order.

    Returns:
        ``(queries, keys)``: lists of ``n_layers`` tensors ``(B, T, H * d_head)``
        (DistilBERT's query is taken before its ``1/sqrt(d_head)`` scaling,
        like everyone else's).
    """
    parts = m.layer_parts()
    recorded: dict[int, list[torch.Tensor]] = {}

    def record(_module, _args, output):
        recorded[id(_module)].append(output.detach())

    hooks = []
    for p in parts:
        for module in (p.query, p.key):
            if id(module) not in recorded:
                recorded[id(module)] = []
                hooks.append(Hook(module, record))
    run(m, inputs, keep=(), hooks=hooks)
    used: dict[int, int] = {}
    queries, keys = [], []
    for p in parts:
        for module, out in ((p.query, queries), (p.key, keys)):
            k = used.get(id(module), 0)
            out.append(recorded[id(module)][k])
            used[id(module)] = k + 1
    return queries, keys


def grouped_attention(q: torch.Tensor, k: torch.Tensor, n_groups: int, key_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Attention of ``n_groups`` adjacent-head groups from one layer's ``Q`` and ``K``.

    Args:
        q, k: ``(B, T, D)`` projections (``D = H * d_head``).
        n_groups: ``h'``; must divide ``D``.
        key_mask: ``(B, T)`` 1 for real tokens, 0 for padding (padding keys get 0 weight).

    Returns:
        ``(B, h', T, T)`` attention, rows summing to 1.
    """
    b, t, d = q.shape
    width = d // n_groups  # the new, wider head
    qg = q.view(b, t, n_groups, width).transpose(1, 2)  # (B, h', T, w)
    kg = k.view(b, t, n_groups, width).transpose(1, 2)  # (B, h', T, w)
    scores = qg @ kg.transpose(-1, -2) / width**0.5  # (B, h', T, T)
    if key_mask is not None:
        blocked = key_mask[:, None, None, :] == 0  # (B, 1, 1, T)
        scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
    return scores.softmax(dim=-1)


def regroup_attention(
    m: LoadedModel,
    texts: Sequence[str] | str,
    n_groups: int,
    *,
    batch_size: int = 32,
) -> Attention:
    """Attention maps as if each layer's ``H`` heads were merged into ``n_groups`` wider heads.

    Args:
        m: the loaded model.
        texts: one string or a list of strings.
        n_groups: ``h'``, a divisor of ``m.n_heads`` (``m.n_heads`` reproduces
            the model's attention; 1 is a single head of width ``d_model``).
        batch_size: texts per forward pass.

    Returns:
        An :class:`~attnlab.core.extract.Attention` whose ``tensor`` is float32
        ``[texts, layers, n_groups, T, T]`` (zeros outside each text), with
        tokens and lengths, so every head statistic works on it unchanged.
    """
    n_groups = check_group_count(m, n_groups)
    batch_size = check_positive_int(batch_size, "batch_size")
    texts, _pairs = check_texts(m, texts)
    check_absolute_positions(m)
    enc = m.tokenizer(texts)
    lengths = [len(ids) for ids in enc["input_ids"]]
    t_max = max(lengths)
    out = torch.zeros(len(texts), m.n_layers, n_groups, t_max, t_max)  # (N, L, h', T, T)
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        inputs = encode(m, batch).inputs
        mask = inputs["attention_mask"]  # (B, T)
        queries, keys = capture_queries_keys(m, inputs)
        t = mask.shape[1]
        for layer, (q, k) in enumerate(zip(queries, keys)):
            maps = grouped_attention(q.float(), k.float(), n_groups, mask)  # (B, h', T, T)
            maps = maps * mask[:, None, :, None]  # zero the padding query rows
            out[start : start + len(batch), layer, :, :t, :t] = maps.cpu()
    tokens = [m.tokenizer.convert_ids_to_tokens(ids) for ids in enc["input_ids"]]
    return Attention(tensor=out, tokens=tokens, lengths=lengths, texts=texts, model_name=f"{m.name} regrouped to {n_groups} heads")


def regroup_all(m: LoadedModel, texts: Sequence[str] | str, group_counts: Sequence[int] | None = None,
                *, batch_size: int = 32) -> dict[int, Attention]:
    """:func:`regroup_attention` for several ``h'`` (default: every divisor of ``H``)."""
    counts = list(group_counts) if group_counts is not None else valid_group_counts(m.n_heads)
    return {g: regroup_attention(m, texts, g, batch_size=batch_size) for g in counts}


# --------------------------------------------------------------------------- where the attention goes


#: where a weight can land, one name per kind of key; every weight lands in exactly one
#: the two ends are named by place, not as [CLS]/[SEP]: each model has its own special tokens (``<s>``, ``</s>``
#: for XLM-R models); a figure shows the model's own (``LoadedModel.end_tokens``)
FIRST_SPECIAL, LAST_SPECIAL = N_("first special token"), N_("last special token")
DESTINATIONS = (N_("self"), N_("previous"), N_("next"), FIRST_SPECIAL, LAST_SPECIAL, N_("other"))  # marked: shown translated
#: the destinations that are one single token (all but "other")
SINGLE_TOKENS = DESTINATIONS[:5]


def destination_index(n: int) -> torch.Tensor:
    """``(n, n)`` ints: which of :data:`DESTINATIONS` key ``j`` is for query ``i``.

    A partition, so the masses of a row add up to 1: the first position is
    the first special token ([CLS] or ``<s>``) and the last is the last special
    token ([SEP] or ``</s>``), for every query, the query's own row included; among the other keys, ``j = i`` is "self", ``j = i - 1``
    "previous", ``j = i + 1`` "next", and the rest "other".
    """
    i = torch.arange(n)[:, None]  # (n, 1) query positions
    j = torch.arange(n)[None, :]  # (1, n) key positions
    index = torch.full((n, n), DESTINATIONS.index("other"), dtype=torch.long)
    index[(j == i + 1).expand(n, n)] = DESTINATIONS.index("next")
    index[(j == i - 1).expand(n, n)] = DESTINATIONS.index("previous")
    index[(j == i).expand(n, n)] = DESTINATIONS.index("self")
    index[:, n - 1] = DESTINATIONS.index(LAST_SPECIAL)
    index[:, 0] = DESTINATIONS.index(FIRST_SPECIAL)
    return index


def text_statistics(maps: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where one text's attention goes, per layer, averaged over heads and query rows.

    Args:
        maps: ``(L, h', n, n)`` attention of one text (its real tokens only).

    Returns:
        ``(masses (L, 6), entropy_ratio (L,), confidence (L,))``: the mass on each of
        :data:`DESTINATIONS`; the mean row entropy divided by ``ln n`` (1 = flat
        rows; rows smoothed as in lesson 05); the mean largest weight of a row.
    """
    n = maps.shape[-1]
    onehot = torch.nn.functional.one_hot(destination_index(n), len(DESTINATIONS)).to(maps.dtype)  # (n, n, 6)
    masses = torch.einsum("lgij,ijc->lc", maps, onehot) / (maps.shape[1] * n)  # (L, 6)
    rows_entropy = entropy(smooth(maps.double(), ENTROPY_EPS))  # (L, h', n)
    ratio = rows_entropy.mean(dim=(1, 2)) / math.log(n) if n > 1 else torch.zeros(maps.shape[0])
    confidence = maps.amax(dim=-1).mean(dim=(1, 2))  # (L,)
    return masses.double().numpy(), ratio.double().numpy(), confidence.double().numpy()


@dataclass
class GroupSummary(Record):
    """Where regrouped attention goes, for one ``h'``.

    Attributes:
        n_groups: ``h'``, the number of heads after regrouping.
        per_text: ``(N, 6)`` mass on each of :data:`DESTINATIONS` for each text,
            averaged over layers, heads and query rows (rows add up to 1).
        per_layer: ``(L, 6)`` the same, averaged over texts instead of layers.
        entropy_per_text: ``(N,)`` mean row entropy / ``ln n`` (1 = flat).
        confidence: mean largest weight of a row.
    """

    n_groups: int
    per_text: np.ndarray
    per_layer: np.ndarray
    entropy_per_text: np.ndarray
    confidence: float

    @property
    def masses(self) -> dict[str, float]:
        """Mean mass of each of :data:`DESTINATIONS` over texts, by name."""
        mean = np.asarray(self.per_text, dtype=float).mean(axis=0)  # (6,)
        return {name: float(v) for name, v in zip(DESTINATIONS, mean)}

    def mass(self, destination: str) -> float:
        """Mean mass on one destination (one of :data:`DESTINATIONS`)."""
        return self.masses[destination]

    def mass_per_text(self, destination: str) -> np.ndarray:
        """``(N,)`` mass on one destination, text by text."""
        return np.asarray(self.per_text, dtype=float)[:, DESTINATIONS.index(destination)]

    @property
    def self_mass(self) -> float:
        return self.mass("self")

    @property
    def entropy_ratio(self) -> float:
        """Mean over texts of the row entropy / uniform entropy."""
        return float(np.mean(self.entropy_per_text))

    @property
    def focus_on(self) -> str:
        """The single-token destination (:data:`SINGLE_TOKENS`) with the most attention."""
        masses = self.masses
        return max(SINGLE_TOKENS, key=masses.get)

    @property
    def focus(self) -> float:
        """The mass on :attr:`focus_on`."""
        return self.masses[self.focus_on]

    def focus_by_layer(self) -> list[tuple[str, float]]:
        """Per layer: the single-token destination with the most attention, and its mass."""
        out = []
        for row in np.asarray(self.per_layer, dtype=float):
            masses = dict(zip(DESTINATIONS, row))
            top = max(SINGLE_TOKENS, key=masses.get)
            out.append((top, float(masses[top])))
        return out


def group_summary(att: Attention) -> GroupSummary:
    """:class:`GroupSummary` of maps ``[texts, layers, h', T, T]`` (each text's real tokens only)."""
    per_text, entropy_ratio, confidence = [], [], []
    for i, n in enumerate(att.lengths):
        masses, ratio, conf = text_statistics(att.tensor[i, :, :, :n, :n])  # (L, 6), (L,), (L,)
        per_text.append(masses)
        entropy_ratio.append(ratio.mean())
        confidence.append(conf.mean())
    stacked = np.stack(per_text)  # (N, L, 6)
    return GroupSummary(n_groups=int(att.tensor.shape[2]), per_text=stacked.mean(axis=1),
                        per_layer=stacked.mean(axis=0), entropy_per_text=np.asarray(entropy_ratio),
                        confidence=float(np.mean(confidence)))


def regroup_summaries(m: LoadedModel, texts: Sequence[str] | str, group_counts: Sequence[int] | None = None,
                      *, batch_size: int = 32, progress: bool = False) -> dict[int, GroupSummary]:
    """:func:`group_summary` for each ``h'`` (default: every divisor of ``H``), over ``texts``.

    One forward pass per batch serves every ``h'`` (the queries and keys are
    the same; only the cut differs), so this costs what one
    :func:`regroup_attention` costs, not one per ``h'``.
    """
    counts = [check_group_count(m, g) for g in (group_counts if group_counts is not None
                                                 else valid_group_counts(m.n_heads))]
    batch_size = check_positive_int(batch_size, "batch_size")
    texts, _pairs = check_texts(m, texts)
    check_absolute_positions(m)
    starts = range(0, len(texts), batch_size)
    collected: dict[int, list[tuple[np.ndarray, float, float]]] = {g: [] for g in counts}
    for start in tqdm(starts, desc=_("regrouping"), unit=_("batch")) if progress else starts:
        inputs = encode(m, texts[start : start + batch_size]).inputs
        mask = inputs["attention_mask"]  # (B, T)
        queries, keys = capture_queries_keys(m, inputs)
        lengths = mask.sum(dim=1).tolist()
        for g in counts:
            maps = torch.stack([grouped_attention(q.float(), k.float(), g, mask) for q, k in zip(queries, keys)],
                               dim=1)  # (B, L, h', T, T)
            for b, n in enumerate(lengths):
                masses, ratio, conf = text_statistics(maps[b, :, :, :n, :n])
                collected[g].append((masses, float(ratio.mean()), float(conf.mean())))
    out = {}
    for g in counts:
        stacked = np.stack([c[0] for c in collected[g]])  # (N, L, 6)
        out[g] = GroupSummary(n_groups=g, per_text=stacked.mean(axis=1), per_layer=stacked.mean(axis=0),
                              entropy_per_text=np.array([c[1] for c in collected[g]]),
                              confidence=float(np.mean([c[2] for c in collected[g]])))
    return out


def summary_table(summaries: dict[int, GroupSummary]) -> str:
    """One row per h': the mass on each destination, the entropy ratio, the confidence, the focus."""
    widths = [max(8, display_width(_(name))) for name in DESTINATIONS]  # by display width: Chinese cells are wide
    header = " ".join(pad_left(_(name), w) for name, w in zip(DESTINATIONS, widths))
    lines = [f"{pad_left(_('heads'), 5)} {header} {pad_left(_('entropy/uniform'), 15)} {pad_left(_('confidence'), 10)}  "
             + _("most attended single token")]
    for g, s in summaries.items():
        masses = " ".join(f"{s.masses[name]:>{w}.3f}" for name, w in zip(DESTINATIONS, widths))
        lines.append(f"{g:>5} {masses} {s.entropy_ratio:>15.3f} {s.confidence:>10.3f}  {_(s.focus_on)}")
    return "\n".join(lines)
