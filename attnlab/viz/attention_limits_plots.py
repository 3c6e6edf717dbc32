"""Lesson 13's figures: sink mass by layer, raw vs norm-based maps, the faithfulness
scoreboard (both ground truths), the cost of replacing a head's map against its fixedness,
and the cumulative cost of replacing heads together.

Layers and heads are labelled 1-based, like every figure of the course.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from attnlab.analysis.faithfulness import TRUTH_LABELS, TRUTHS, VIEW_LABELS, VIEWS, Scoreboard
from attnlab.analysis.mean_map_replacement import MapReplacement, TogetherCurves
from attnlab.analysis.sinks import KINDS, SinkProfile
from attnlab.core.language import _
from attnlab.viz.fonts import cjk_font_for
from attnlab.viz.plot import tick_rotation

_KIND_COLOURS = {"start": "tab:red", "end": "tab:purple", "punct": "tab:orange", "word": "tab:blue",
                 "other": "tab:grey"}


def _kind_label(profile: SinkProfile, kind: str) -> str:
    return {"start": profile.start_token or _("first special token"),
            "end": profile.end_token or _("separator"),
            "punct": _("punctuation"), "word": _("words"), "other": _("other pieces (no letters)")}[kind]


def plot_sink_mass(profile: SinkProfile) -> Figure:
    """Left: share of attention on each kind of token per layer, raw (solid, with a bootstrap
    interval over texts) and norm-based (dashed). Right: the mean size ``||f(x_j)||`` of what
    each kind of token can contribute."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))  # legends go below the axes, never over a line
    for kind in [k for k in KINDS if k in profile.raw]:
        colour, label = _KIND_COLOURS[kind], _kind_label(profile, kind)
        raw = profile.per_layer("raw", kind)
        layers = np.arange(1, len(np.atleast_1d(raw.estimate)) + 1)
        left.plot(layers, raw.estimate, "-o", color=colour, label=_("{kind} (raw)").format(kind=label))
        left.fill_between(layers, raw.low, raw.high, color=colour, alpha=0.15)
        left.plot(layers, profile.per_layer("norm", kind).estimate, "--", color=colour, label=_("{kind} (norm-based)").format(kind=label))
        sizes = profile.value_norm[kind]  # (N, L), NaN where a text has no token of this kind
        seen = np.isfinite(sizes).sum(axis=0)  # (L,)
        right.plot(layers, np.where(seen > 0, np.nansum(sizes, axis=0) / np.maximum(seen, 1), np.nan), "-o",
                   color=colour, label=label)
    left.set_ylim(0, 1)
    left.set_xlabel(_("layer"))
    left.set_ylabel(_("share of each row's attention"))
    left.set_title(_("Where attention goes ({n} texts)").format(n=profile.n_texts), fontsize=10)
    left.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    right.set_xlabel(_("layer"))
    right.set_ylabel(_("mean ||f(x)|| over heads"))
    right.set_title(_("How much each kind of token can move"), fontsize=10)
    right.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
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
    for ax, values, name in ((axes[0], raw, _("raw weights alpha")), (axes[1], norm, _("norm-based ||alpha f(x)||"))):
        im = ax.imshow(values, cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(n), tokens, rotation=tick_rotation(tokens), fontsize=8)
        ax.set_yticks(range(n), tokens, fontsize=8)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel(_("key token (the token looked at)"), fontsize=9)
        ax.set_ylabel(_("query token (the row's owner)"), fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8).set_label(_("share of the row"), fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_scoreboard(board: Scoreboard) -> Figure:
    """Mean Spearman rho of each view with each ground truth (bars, bootstrap interval over the
    same queries): leave one out keeping positions (dark), deletion (light) and, when measured,
    gradient x input on the sentence vector (green, a first-order reference), the embedding zeroed
    and gradient x input with the token out of the pool;
    dots are the queries' rho against the first."""
    fig, ax = plt.subplots(figsize=(10, 3.8))
    rng = np.random.default_rng(0)
    truths = [t for t in TRUTHS if t in board.rho]
    width = 0.76 / len(truths)
    colours = {"masked": "steelblue", "deleted": "lightsteelblue", "grad_input": "darkseagreen",
               "zeroed": "darkkhaki", "grad_input_others": "mediumseagreen"}
    for t, truth in enumerate(truths):
        for x, view in enumerate(VIEWS):
            interval = board.interval(view, truth)
            pos = x + (t - (len(truths) - 1) / 2) * width
            ax.bar(pos, interval.estimate, color=colours[truth], width=width,
                   label=_(TRUTH_LABELS[truth]) if x == 0 else None)
            ax.errorbar(pos, interval.estimate,
                        yerr=[[interval.estimate - interval.low], [interval.high - interval.estimate]],
                        color="black", capsize=4)
            if truth == "masked":
                rho = board.rho[truth][view]
                ax.scatter(pos + rng.uniform(-0.12, 0.12, rho.size), rho, s=5, color="navy", alpha=0.3)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(VIEWS)), [_(VIEW_LABELS[v]) for v in VIEWS], fontsize=8)
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel(_("Spearman rho with the effect\nof leaving the token out"))
    ax.set_title(_("Which view tracks the model? ({n} queries, the same for every view; 95% intervals)")
                 .format(n=len(board.queries)), fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def plot_replacement_cost(replacement: MapReplacement) -> Figure:
    """Each head's fixedness (x) against the cost of replacing its map alone (y, log scale): by its
    mean map (coloured by layer) and by another query's map (grey, the control); the dashed line is
    the tolerance."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    fixed = replacement.fixedness  # (L, H)
    floor = 1e-7  # a cost of exactly 0 still shows on the log axis
    ax.scatter(fixed.ravel(), np.maximum(replacement.mean_control.ravel(), floor), s=12, color="lightgrey",
               label=_("another query's map (control)"))
    colours = plt.cm.viridis(np.linspace(0, 1, max(len(replacement.layers), 2)))
    for li, layer in enumerate(replacement.layers):
        ax.scatter(fixed[li], np.maximum(replacement.mean_cost[li], floor), s=16, color=colours[li],
                   label=_("mean map, layer {layer}").format(layer=layer + 1))
    if replacement.reference.size:
        ax.axhline(replacement.tolerance(), color="black", ls="--", lw=0.8, label=_("tolerance"))
    ax.set_yscale("log")
    ax.set_xlabel(_("fixedness of the head"))
    ax.set_ylabel(_("change of the sentence representation\n(cosine distance)"))
    rho = replacement.within_layer_rho()
    ax.set_title(_("Replacing one head's map: rho(fixedness, cost) within layers = {rho}").format(rho=rho),
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def plot_together(together: TogetherCurves) -> Figure:
    """Cumulative cost of replacing heads by their mean maps together: most fixed first (with its
    interval over texts), least fixed first, and the band of the random orders; the dashed line is
    the tolerance."""
    fig, ax = plt.subplots(figsize=(7, 4.0))
    x = together.fractions
    fixed = together.curve("fixed_first")
    ax.plot(x, fixed.estimate, "-o", color="tab:blue", label=_("most fixed first"))
    ax.fill_between(x, fixed.low, fixed.high, color="tab:blue", alpha=0.2)
    ax.plot(x, together.curve("reverse").estimate, "-s", color="tab:red", label=_("least fixed first"))
    low, high = together.random_band()
    ax.fill_between(x, low, high, color="grey", alpha=0.35,
                    label=_("random orders ({n})").format(n=together.random.shape[0]))
    ax.axhline(together.tolerance(), color="black", ls="--", lw=0.8, label=_("tolerance"))
    share = together.replaceable()
    ax.set_xlabel(_("share of heads replaced by their mean maps together"))
    ax.set_ylabel(_("change of the sentence representation\n(cosine distance)"))
    ax.set_title(_("Heads replaced together: {fraction} of them within the tolerance").format(fraction=share),
                 fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
