"""Lesson 13's figures: sink mass by layer, raw vs norm-based maps, the faithfulness
scoreboard, and the cost of replacing a head's map against its fixedness.

Layers and heads are labelled 1-based, like every figure of the course.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from attnlab.analysis.faithfulness import VIEW_LABELS, VIEWS, Scoreboard
from attnlab.analysis.mean_map_replacement import MapReplacement
from attnlab.analysis.sinks import KINDS, SinkProfile
from attnlab.viz.fonts import cjk_font_for

_KIND_COLOURS = {"start": "tab:red", "end": "tab:purple", "punct": "tab:orange", "word": "tab:blue"}


def _kind_label(profile: SinkProfile, kind: str) -> str:
    return {"start": profile.start_token or "first special token", "end": profile.end_token or "last special token",
            "punct": "punctuation", "word": "words"}[kind]


def plot_sink_mass(profile: SinkProfile) -> Figure:
    """Left: share of attention on each kind of token per layer, raw (solid, with a bootstrap
    interval over texts) and norm-based (dashed). Right: the mean size ``||f(x_j)||`` of what
    each kind of token can contribute."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    for kind in KINDS:
        colour, label = _KIND_COLOURS[kind], _kind_label(profile, kind)
        raw = profile.per_layer("raw", kind)
        layers = np.arange(1, len(np.atleast_1d(raw.estimate)) + 1)
        left.plot(layers, raw.estimate, "-o", color=colour, label=f"{label} (raw)")
        left.fill_between(layers, raw.low, raw.high, color=colour, alpha=0.15)
        left.plot(layers, profile.per_layer("norm", kind).estimate, "--", color=colour, label=f"{label} (norm-based)")
        right.plot(layers, np.nanmean(profile.value_norm[kind], axis=0), "-o", color=colour, label=label)
    left.set_ylim(0, 1)
    left.set_xlabel("layer")
    left.set_ylabel("share of each row's attention")
    left.set_title(f"Where attention goes ({profile.n_texts} texts)", fontsize=10)
    left.legend(fontsize=7, ncol=2)
    right.set_xlabel("layer")
    right.set_ylabel("mean ||f(x)|| over heads")
    right.set_title("How much each kind of token can move", fontsize=10)
    right.legend(fontsize=7)
    for ax in (left, right):
        ax.set_xticks(layers)
    fig.tight_layout()
    return fig


def plot_raw_vs_norm(raw: np.ndarray, norm: np.ndarray, tokens: Sequence[str], *, title: str = "") -> Figure:
    """Two ``[n, n]`` maps side by side: raw weights and norm-based weights (each row rescaled to
    sum to 1, so both read as "share of the row"). Rows are queries, columns keys."""
    raw, norm = np.asarray(raw, dtype=float), np.asarray(norm, dtype=float)
    n = len(tokens)
    if raw.shape != (n, n) or norm.shape != (n, n):
        raise ValueError(f"raw and norm must be [n, n] with n = len(tokens) = {n}, got {raw.shape} and {norm.shape}")
    cjk_font_for(list(tokens) + [title])
    norm = norm / np.maximum(norm.sum(axis=-1, keepdims=True), 1e-12)
    fig, axes = plt.subplots(1, 2, figsize=(2 * (0.45 * n + 1.8), 0.45 * n + 1.4))
    for ax, values, name in ((axes[0], raw, "raw weights alpha"), (axes[1], norm, "norm-based ||alpha f(x)||")):
        im = ax.imshow(values, cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(n), tokens, rotation=90, fontsize=8)
        ax.set_yticks(range(n), tokens, fontsize=8)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("key token (the token looked at)", fontsize=9)
        ax.set_ylabel("query token (the row's owner)", fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8).set_label("share of the row", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_scoreboard(board: Scoreboard) -> Figure:
    """Mean Spearman rho of each view with the leave-one-out effect (bars, bootstrap interval over
    queries) and every query's rho (dots)."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    rng = np.random.default_rng(0)
    for x, view in enumerate(VIEWS):
        interval = board.interval(view)
        ax.bar(x, interval.estimate, color="lightsteelblue", width=0.6)
        ax.errorbar(x, interval.estimate, yerr=[[interval.estimate - interval.low], [interval.high - interval.estimate]],
                    color="black", capsize=6)
        rho = board.rho[view]
        ax.scatter(x + rng.uniform(-0.2, 0.2, rho.size), rho, s=6, color="tab:blue", alpha=0.35)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(VIEWS)), [VIEW_LABELS[v] for v in VIEWS])
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel("Spearman rho with the effect\nof removing the token")
    ax.set_title(f"Which view tracks the model? ({len(board.queries)} queries; bars: mean with 95% interval)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def plot_replacement_cost(replacement: MapReplacement) -> Figure:
    """Each head's fixedness (x) against the cost of replacing its map (y, log scale): by its
    mean map (coloured by layer) and by another query's map (grey, the control)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    fixed = replacement.fixedness  # (L, H)
    floor = 1e-7  # a cost of exactly 0 still shows on the log axis
    ax.scatter(fixed.ravel(), np.maximum(replacement.mean_control.ravel(), floor), s=12, color="lightgrey",
               label="another query's map (control)")
    colours = plt.cm.viridis(np.linspace(0, 1, max(len(replacement.layers), 2)))
    for li, layer in enumerate(replacement.layers):
        ax.scatter(fixed[li], np.maximum(replacement.mean_cost[li], floor), s=16, color=colours[li],
                   label=f"mean map, layer {layer + 1}")
    ax.set_yscale("log")
    ax.set_xlabel("fixedness of the head (1 = same map for every query)")
    ax.set_ylabel("change of the sentence representation\n(cosine distance)")
    rho = replacement.fixedness_cost_correlation()
    ax.set_title(f"Replacing one head's map: Spearman rho(fixedness, cost) = {rho.estimate:+.2f} "
                 f"[{rho.low:+.2f}, {rho.high:+.2f}]", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
