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

Only the maps are regrouped; nothing downstream is recomputed (each layer's
input is the unmodified model's), which is what "the same Q and K, fewer
heads" means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from attnlab.analysis.head_stats import head_stats_of
from attnlab.core.checks import check_positive_int
from attnlab.core.extract import Attention, check_texts
from attnlab.core.models import LoadedModel
from attnlab.core.records import Record


def valid_group_counts(n_heads: int) -> list[int]:
    """Every ``h'`` that divides ``n_heads``, largest first (12 -> [12, 6, 4, 3, 2, 1])."""
    return [g for g in range(n_heads, 0, -1) if n_heads % g == 0]


def check_group_count(m: LoadedModel, n_groups: int) -> int:
    """``n_groups`` as an ``int`` when it divides ``m.n_heads`` (numpy ints accepted), else a clear error."""
    n_groups = check_positive_int(n_groups, "n_groups")
    if m.n_heads % n_groups:
        raise ValueError(
            f"n_groups={n_groups} does not divide this model's {m.n_heads} heads; "
            f"choose one of {valid_group_counts(m.n_heads)}."
        )
    return n_groups


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
    handles = []

    def record(_module, _args, output):
        recorded[id(_module)].append(output.detach())

    seen = set()
    for p in parts:
        for module in (p.query, p.key):
            if id(module) not in seen:
                seen.add(id(module))
                recorded[id(module)] = []
                handles.append(module.register_forward_hook(record))
    try:
        with torch.no_grad():
            m.model(**inputs)
    finally:
        for h in handles:
            h.remove()
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
    texts, _ = check_texts(m, texts)
    if getattr(m.model.config, "position_embedding_type", "absolute") not in ("absolute", None):
        raise ValueError("regrouping supports absolute position embeddings only "
                         "(relative-position scores are not part of Q K^T).")
    enc = m.tokenizer(texts)
    lengths = [len(ids) for ids in enc["input_ids"]]
    t_max = max(lengths)
    out = torch.zeros(len(texts), m.n_layers, n_groups, t_max, t_max)  # (N, L, h', T, T)
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        inputs = m.encode(batch)
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


# --------------------------------------------------------------------------- statistics


@dataclass
class GroupSummary(Record):
    """Where regrouped attention goes, averaged over layers, groups and query rows.

    Attributes:
        n_groups: ``h'``, the number of heads after regrouping.
        self_mass, cls_mass, sep_mass: mean weight on the token itself, on [CLS], on [SEP].
        entropy_ratio: mean row entropy / entropy of uniform attention (1 = flat).
        confidence: mean largest weight of a row.
    """

    n_groups: int
    self_mass: float
    cls_mass: float
    sep_mass: float
    entropy_ratio: float
    confidence: float

    @property
    def masses(self) -> dict[str, float]:
        """The three single-token masses by name: ``"self"``, ``"[CLS]"``, ``"[SEP]"``."""
        return {"self": self.self_mass, "[CLS]": self.cls_mass, "[SEP]": self.sep_mass}

    @property
    def focus_on(self) -> str:
        """Which single token gets the most attention: ``"self"``, ``"[CLS]"`` or ``"[SEP]"``."""
        masses = self.masses
        return max(masses, key=masses.get)

    @property
    def focus(self) -> float:
        """The largest of the self, [CLS] and [SEP] masses."""
        return self.masses[self.focus_on]


def group_summary(att: Attention) -> GroupSummary:
    """Statistics of regrouped maps ``[texts, layers, h', T, T]``, averaged over layers and groups.

    Uses lesson 05's :func:`attnlab.analysis.head_stats.head_stats_of` (``[layers, h']`` per statistic).
    """
    stats = head_stats_of(att)
    return GroupSummary(
        n_groups=int(att.tensor.shape[2]),
        self_mass=float(np.mean(stats.self_mass)),
        cls_mass=float(np.mean(stats.cls_mass)),
        sep_mass=float(np.mean(stats.sep_mass)),
        entropy_ratio=float(np.mean(stats.entropy) / np.mean(stats.uniform_entropy)),
        confidence=float(np.mean(stats.confidence)),
    )


def focus_by_layer(att: Attention) -> list[tuple[str, float]]:
    """Per layer: which single token gets the most attention (self, [CLS] or [SEP]) and how much,
    averaged over the layer's heads and all rows (:func:`attnlab.analysis.head_stats.head_stats_of`)."""
    stats = head_stats_of(att)
    out = []
    for layer in range(stats.self_mass.shape[0]):
        masses = {"self": float(stats.self_mass[layer].mean()), "[CLS]": float(stats.cls_mass[layer].mean()),
                  "[SEP]": float(stats.sep_mass[layer].mean())}
        top = max(masses, key=masses.get)
        out.append((top, masses[top]))
    return out


def regroup_summaries(m: LoadedModel, texts: Sequence[str] | str, group_counts: Sequence[int] | None = None,
                      *, batch_size: int = 32, progress: bool = False) -> dict[int, GroupSummary]:
    """:func:`group_summary` for each ``h'`` (default: every divisor of ``H``), over ``texts``."""
    counts = list(group_counts) if group_counts is not None else valid_group_counts(m.n_heads)
    iterator = tqdm(counts, desc="regrouping", unit="h'") if progress else counts
    return {int(g): group_summary(regroup_attention(m, texts, g, batch_size=batch_size)) for g in iterator}


def summary_table(summaries: dict[int, GroupSummary]) -> str:
    """One row per h': the statistics of :class:`GroupSummary`."""
    lines = [f"{'heads':>5} {'self':>6} {'[CLS]':>6} {'[SEP]':>6} {'entropy/uniform':>15} {'confidence':>10}  most attended"]
    for g, s in summaries.items():
        lines.append(f"{g:>5} {s.self_mass:>6.3f} {s.cls_mass:>6.3f} {s.sep_mass:>6.3f} "
                     f"{s.entropy_ratio:>15.3f} {s.confidence:>10.3f}  {s.focus_on}")
    return "\n".join(lines)
