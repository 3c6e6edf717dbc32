"""What removing the position embeddings does to each head (the study of lesson 07).

The intervention itself is :func:`attnlab.core.position.no_position`.
"""


from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from attnlab.analysis.compare import Interval, bootstrap_mean, similarity


from attnlab.core.position import no_position, _torch_model


# --------------------------------------------------------------------------- per-head change


@dataclass
class PositionStudy:
    """Similarity of every head's map with and without position embeddings.

    Attributes:
        similarity: ``[N, L, H]`` - ``sim(with, without)`` per query and head
            (see :func:`attnlab.analysis.compare.similarity`).
        texts: the N texts.
    """

    similarity: np.ndarray
    texts: list[str]
    model_name: str = ""

    def change(self, **boot) -> Interval:
        """``1 - similarity`` per head ``[L, H]`` with a bootstrap interval over texts."""
        return bootstrap_mean(1.0 - self.similarity, **boot)


def position_change(m, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> PositionStudy:
    """How much each head's map changes when the position embeddings are removed.

    Args:
        m: a loaded model.
        texts: the queries (strings or :class:`~attnlab.data.corpus.Query`).
        batch_size: texts per forward pass.

    Returns:
        :class:`PositionStudy` with ``similarity`` ``[N, L, H]``.
    """
    from attnlab.core.extract import attention

    texts = [getattr(t, "text", t) for t in texts]
    with_pos = attention(m, texts, batch_size=batch_size, progress=progress)
    with no_position(m):
        without = attention(m, texts, batch_size=batch_size, progress=progress)
    sims = np.stack([similarity(with_pos[i], without[i]).numpy() for i in range(len(texts))])  # (N, L, H)
    return PositionStudy(sims, texts, m.name)


# --------------------------------------------------------------------------- outputs


def hidden_states(m, text: str) -> torch.Tensor:
    """Final hidden states ``[n, d]`` of one text (special tokens included)."""
    inputs = m.encode([text])
    with torch.no_grad():
        out = _torch_model(m)(**inputs)
    return out.last_hidden_state[0].float()


def output_similarity(m, texts: Sequence[str]) -> np.ndarray:
    """Cosine similarity of each text's final hidden states with vs without positions.

    Returns:
        ``(N,)``: per text, the mean over tokens of the cosine between the two
        hidden vectors of each token.
    """
    out = []
    for t in texts:
        t = getattr(t, "text", t)
        h = hidden_states(m, t)
        with no_position(m):
            h0 = hidden_states(m, t)
        out.append(torch.nn.functional.cosine_similarity(h, h0, dim=-1).mean().item())
    return np.asarray(out)


def equivariance_gap(m, original: str, permuted: str, perm) -> float:
    """Largest difference between the permuted text's hidden states and the
    original's hidden states permuted the same way.

    Zero (up to rounding) means the model only saw a bag of tokens: the output
    of each token does not depend on where it stands.

    Args:
        perm: token permutation, ``new_tokens[i] == old_tokens[perm[i]]``.
    """
    h_old = hidden_states(m, original)  # (n, d)
    h_new = hidden_states(m, permuted)  # (n, d)
    if h_old.shape != h_new.shape:
        raise ValueError(f"the texts have {h_old.shape[0]} and {h_new.shape[0]} tokens: not a permutation")
    p = torch.as_tensor(np.asarray(perm), dtype=torch.long)
    return float((h_new - h_old[p]).abs().max())


# --------------------------------------------------------------------------- verdict


def head_correlation(x, y, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                     method: str = "spearman") -> dict:
    """Correlation across heads of two per-head measures, with a bootstrap over heads.

    Args:
        x, y: ``[L, H]`` (or flat) per-head values.
        method: ``"spearman"`` (rank) or ``"pearson"``.

    Returns:
        ``{"r", "lo", "hi", "level", "n_heads", "method"}``.
    """
    from scipy import stats

    a, b = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if a.shape != b.shape or a.size < 3:
        raise ValueError(f"x and y need the same number (>= 3) of heads, got {a.size} and {b.size}")
    corr = (lambda u, v: stats.spearmanr(u, v)[0]) if method == "spearman" else (lambda u, v: stats.pearsonr(u, v)[0])
    if method not in ("spearman", "pearson"):
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    r = float(corr(a, b))
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, a.size, a.size)
        if np.ptp(a[idx]) == 0 or np.ptp(b[idx]) == 0:
            continue
        boots.append(corr(a[idx], b[idx]))
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return {"r": r, "lo": float(lo), "hi": float(hi), "level": level, "n_heads": int(a.size), "method": method}


def verdict_invariant_heads_are_positional(corr: dict, *, strong: float = 0.3):
    """The source article's argument: heads that do not change under perturbation
    are the ones that change most without position embeddings.

    Holds when the correlation (between "unchanged under perturbation" and
    "changed without positions") is at least ``strong`` and its whole interval
    lies above 0; does not hold when the upper end of the interval is below
    ``strong`` (at most a weak link, or the opposite); cannot tell otherwise.
    """
    from attnlab.course.verdicts import ClaimVerdict

    if corr["lo"] > 0 and corr["r"] >= strong:
        verdict = "holds"
    elif corr["hi"] < strong:
        verdict = "does not hold"
    else:
        verdict = "cannot tell"
    return ClaimVerdict(
        "heads that keep their pattern under perturbation are position-dominated "
        "(they change most when position embeddings are removed)",
        verdict,
        {f"{corr['method']} r": corr["r"], "CI low": corr["lo"], "CI high": corr["hi"],
         "heads": corr["n_heads"], "strong": strong},
    )


# --------------------------------------------------------------------------- figures


def example_with_without(m, text: str):
    """``(with [L, H, n, n], without [L, H, n, n], tokens)`` for one text."""
    from attnlab.core.extract import attention

    att = attention(m, [text])
    with no_position(m):
        att0 = attention(m, [text])
    return att[0], att0[0], att.tokens[0]


def plot_with_without(m, text: str, layer: int, *, cell: float = 1.25):
    """Every head of one layer: with position embeddings (top row) and without (bottom),
    each titled with the similarity of the two maps. Returns the figure."""
    import matplotlib.pyplot as plt

    from attnlab.viz.fonts import use_cjk_font

    m.check_layer(layer)
    a, a0, _ = example_with_without(m, text)
    sims = similarity(a[layer], a0[layer]).numpy()  # (H,)
    if any(ord(c) > 0x2E80 for c in text):
        use_cjk_font()
    heads = a.shape[1]
    fig, axes = plt.subplots(2, heads, figsize=(cell * heads + 1.2, cell * 2 + 1.0), squeeze=False)
    for h in range(heads):
        for r, (maps, name) in enumerate(((a, "with positions"), (a0, "without"))):
            ax = axes[r, h]
            ax.imshow(maps[layer, h].numpy(), vmin=0, vmax=1, cmap="viridis")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"H{h + 1}\nsim {sims[h]:.2f}", fontsize=7)
            if h == 0:
                ax.set_ylabel(name, fontsize=8)
    fig.suptitle(f"Layer {layer + 1}, {text!r}: with and without position embeddings", fontsize=9)
    fig.tight_layout()
    return fig


def plot_correlation(unchanged, changed, corr: dict | None = None, *, n_layers: int | None = None):
    """Scatter, one point per head: similarity under perturbation (x) against change
    without position embeddings (y), coloured by layer. Returns the figure."""
    import matplotlib.pyplot as plt

    x, y = np.asarray(unchanged, dtype=float), np.asarray(changed, dtype=float)
    layers = np.repeat(np.arange(x.shape[0]), x.shape[1]) if x.ndim == 2 else np.zeros(x.size)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    sc = ax.scatter(x.ravel(), y.ravel(), c=layers + 1, cmap="viridis", s=22)
    fig.colorbar(sc, ax=ax, label="layer")
    ax.set_xlabel("unchanged under perturbation (position-space similarity)")
    ax.set_ylabel("changed without position embeddings (1 - similarity)")
    if corr:
        ax.set_title(f"{corr['method']} r = {corr['r']:.2f} "
                     f"[{corr['lo']:.2f}, {corr['hi']:.2f}] over {corr['n_heads']} heads", fontsize=9)
    fig.tight_layout()
    return fig
