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

from typing import Sequence

import numpy as np
import torch

from attnlab.core.extract import Attention, check_texts
from attnlab.core.models import LoadedModel


def valid_group_counts(n_heads: int) -> list[int]:
    """Every ``h'`` that divides ``n_heads``, largest first (12 -> [12, 6, 4, 3, 2, 1])."""
    return [g for g in range(n_heads, 0, -1) if n_heads % g == 0]


def _check_groups(m: LoadedModel, n_groups: int) -> int:
    if isinstance(n_groups, bool) or not isinstance(n_groups, int):
        raise TypeError(f"n_groups must be an int, got {type(n_groups).__name__}")
    if n_groups < 1 or m.n_heads % n_groups:
        raise ValueError(
            f"n_groups={n_groups} does not divide this model's {m.n_heads} heads; "
            f"choose one of {valid_group_counts(m.n_heads)}."
        )
    return n_groups


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
    n_groups = _check_groups(m, n_groups)
    texts, _ = check_texts(m, texts)
    if getattr(m.model.config, "position_embedding_type", "absolute") not in ("absolute", None):
        raise ValueError("regrouping supports absolute position embeddings only "
                         "(relative-position scores are not part of Q K^T).")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
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


# --------------------------------------------------------------------------- statistics and verdict

#: statistics reported per h' (names of :class:`attnlab.analysis.head_stats.HeadStats` fields, plus "focus")
SUMMARY_FIELDS = ("self_mass", "cls_mass", "sep_mass", "entropy_ratio", "confidence")


def group_summary(att: Attention) -> dict[str, float]:
    """Statistics of regrouped maps, averaged over layers and groups.

    Uses :func:`attnlab.analysis.head_stats.head_stats` and reports ``self_mass``,
    ``cls_mass``, ``sep_mass``, ``confidence`` (mean largest weight per row),
    ``entropy_ratio`` (row entropy / entropy of uniform attention: 1 = flat)
    and ``focus``: the largest of the self, [CLS] and [SEP] masses, with
    ``focus_on`` naming which one it is.
    """
    from attnlab.analysis.head_stats import head_stats

    stats = head_stats(att)
    out = {
        "self_mass": float(np.mean(stats.self_mass)),
        "cls_mass": float(np.mean(stats.cls_mass)),
        "sep_mass": float(np.mean(stats.sep_mass)),
        "entropy_ratio": float(np.mean(stats.entropy) / np.mean(stats.uniform_entropy)),
        "confidence": float(np.mean(stats.confidence)),
    }
    masses = {"self": out["self_mass"], "[CLS]": out["cls_mass"], "[SEP]": out["sep_mass"]}
    out["focus_on"] = max(masses, key=masses.get)
    out["focus"] = masses[out["focus_on"]]
    return out


def focus_by_layer(att: Attention) -> list[tuple[str, float]]:
    """Per layer: which single token gets the most attention (self, [CLS] or [SEP]) and how much,
    averaged over the layer's heads and all rows (:func:`attnlab.analysis.head_stats.head_stats`)."""
    from attnlab.analysis.head_stats import head_stats

    stats = head_stats(att)
    out = []
    for layer in range(stats.self_mass.shape[0]):
        masses = {"self": float(stats.self_mass[layer].mean()), "[CLS]": float(stats.cls_mass[layer].mean()),
                  "[SEP]": float(stats.sep_mass[layer].mean())}
        top = max(masses, key=masses.get)
        out.append((top, masses[top]))
    return out


def regroup_summaries(m: LoadedModel, texts: Sequence[str] | str, group_counts: Sequence[int] | None = None,
                      *, batch_size: int = 32, progress: bool = False) -> dict[int, dict[str, float]]:
    """:func:`group_summary` for each ``h'`` (default: every divisor of ``H``), over ``texts``."""
    counts = list(group_counts) if group_counts is not None else valid_group_counts(m.n_heads)
    iterator = counts
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(counts, desc="regrouping", unit="h'")
    return {g: group_summary(regroup_attention(m, texts, g, batch_size=batch_size)) for g in iterator}


def summary_table(summaries: dict[int, dict[str, float]]) -> str:
    """One row per h': the statistics of :func:`group_summary`."""
    lines = [f"{'heads':>5} {'self':>6} {'[CLS]':>6} {'[SEP]':>6} {'entropy/uniform':>15} {'confidence':>10}  most attended"]
    for g, s in summaries.items():
        lines.append(f"{g:>5} {s['self_mass']:>6.3f} {s['cls_mass']:>6.3f} {s['sep_mass']:>6.3f} "
                     f"{s['entropy_ratio']:>15.3f} {s['confidence']:>10.3f}  {s['focus_on']}")
    return "\n".join(lines)


def verdict_fewer_heads_collapse(summaries: dict[int, dict[str, float]], *, n_heads: int, target: int = 2,
                                 margin: float = 0.05):
    """The source article's claim: forcing the heads into fewer (``target``, 2 in the article)
    makes attention collapse onto a single token, itself (or e.g. [CLS]/[SEP]).

    Measured as the change from ``h' = n_heads`` to ``h' = target`` of ``focus``
    (the largest of the self, [CLS] and [SEP] masses) and of ``self_mass``.
    Holds when the focus rises by at least ``margin`` and the maps get sharper
    (entropy ratio does not rise by more than ``margin``); does not hold when
    the focus falls by more than ``margin`` or the maps flatten instead
    (entropy ratio up by more than ``margin`` with no rise in focus);
    otherwise "cannot tell".
    """
    from attnlab.course.verdicts import ClaimVerdict

    if n_heads not in summaries or target not in summaries:
        raise ValueError(f"summaries must include h' = {n_heads} and h' = {target}")
    full, few = summaries[n_heads], summaries[target]
    d_focus = few["focus"] - full["focus"]
    d_self = few["self_mass"] - full["self_mass"]
    d_entropy = few["entropy_ratio"] - full["entropy_ratio"]
    if d_focus >= margin and d_entropy <= margin:
        verdict = "holds"
    elif d_focus <= -margin or (d_entropy > margin and d_focus < margin):
        verdict = "does not hold"
    else:
        verdict = "cannot tell"
    numbers = {
        f"focus at {n_heads} heads": full["focus"], f"focus at {target}": few["focus"],
        f"focus token at {target}": few["focus_on"],
        f"self mass {n_heads} -> {target}": f"{full['self_mass']:.3f} -> {few['self_mass']:.3f} ({d_self:+.3f})",
        f"entropy/uniform {n_heads} -> {target}": f"{full['entropy_ratio']:.3f} -> {few['entropy_ratio']:.3f}",
        "margin": margin,
    }
    return ClaimVerdict(f"forcing {n_heads} heads into {target} makes tokens attend to themselves "
                        "(or to one special token)", verdict, numbers)


# --------------------------------------------------------------------------- figures


def plot_regrouped(regrouped: dict[int, Attention], text_index: int = 0, layer: int = 0, *, cell: float = 1.1):
    """One layer of one text, one row per ``h'``: the ``h'`` maps side by side.

    Args:
        regrouped: ``{h': Attention}`` from :func:`regroup_all`.
        text_index: which text.
        layer: 0-based layer (titles are 1-based).
    """
    import matplotlib.pyplot as plt

    counts = sorted(regrouped, reverse=True)
    width = max(counts)
    tokens = regrouped[counts[0]].tokens[text_index]
    fig, axes = plt.subplots(len(counts), width, figsize=(cell * width + 1.2, cell * len(counts) + 0.8), squeeze=False)
    for r, g in enumerate(counts):
        maps = regrouped[g][text_index][layer]  # (h', n, n)
        for c in range(width):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if c >= g:
                ax.axis("off")
                continue
            ax.imshow(maps[c].numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto")
            if c == 0:
                ax.set_ylabel(f"{g} head{'s' if g > 1 else ''}", fontsize=8)
    fig.suptitle(f"Layer {layer + 1}, '{regrouped[counts[0]].texts[text_index]}' ({len(tokens)} tokens): "
                 "the same Q and K cut into fewer, wider heads", fontsize=9)
    fig.tight_layout()
    return fig


def plot_summaries(summaries: dict[int, dict[str, float]], *, ax=None):
    """Self, [CLS], [SEP] mass and the entropy ratio against the number of heads h'."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.5))
    counts = sorted(summaries)
    for key, label in (("self_mass", "self"), ("cls_mass", "[CLS]"), ("sep_mass", "[SEP]"),
                       ("entropy_ratio", "entropy / uniform"), ("confidence", "confidence")):
        ax.plot(counts, [summaries[g][key] for g in counts], marker="o", label=label,
                linestyle="--" if key in ("entropy_ratio", "confidence") else "-")
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts)
    ax.set_xticklabels([str(g) for g in counts])
    ax.set_xlabel("heads after regrouping (h')")
    ax.set_ylabel("mean over layers, heads, rows")
    ax.legend(fontsize=8)
    ax.set_title("Where attention goes as heads are merged")
    return ax
