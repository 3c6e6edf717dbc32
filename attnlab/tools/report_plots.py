"""Figures of ``attnlab report`` drawn from saved records (no model needed)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from attnlab.analysis.faithfulness import VIEW_LABELS
from attnlab.core.language import _
from attnlab.course.attention_limits_result import AttentionLimitsResult
from attnlab.course.lesson_results import DiversityResult


def plot_dispersion_by_layer(diversity: DiversityResult) -> Figure:
    """Lesson 09's within-layer dispersion per layer with its interval over texts, on all keys and, when
    measured, on the content keys."""
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    layers = np.asarray(diversity.layers) + 1  # (L,), 1-based
    readings = [(_("all keys"), diversity.dispersion, "o-")]
    if diversity.content_dispersion is not None:
        readings.append((_("content keys"), diversity.content_dispersion, "s--"))
    for name, interval, style in readings:
        est = np.atleast_1d(np.asarray(interval.estimate, dtype=float))  # (L,)
        low = np.atleast_1d(np.asarray(interval.low, dtype=float))
        high = np.atleast_1d(np.asarray(interval.high, dtype=float))
        ax.plot(layers, est, style, label=name)
        ax.fill_between(layers, low, high, alpha=0.2)
    ax.set_xlabel(_("layer"))
    ax.set_ylabel(_("mean JS distance between heads"))
    ax.set_xticks(layers)
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(_("Within-layer dispersion ({n} texts)").format(n=diversity.n_queries), fontsize=10)
    fig.tight_layout()
    return fig


def plot_view_rho(limits: AttentionLimitsResult) -> Figure:
    """Lesson 13's scoreboard from its record: mean Spearman rho of each view with the effect of leaving a
    token out (positions kept), with its interval over queries, best first."""
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    views = list(limits.view_ranking)
    rho = [limits.view_rho[v] for v in views]
    est = np.array([float(r.estimate) for r in rho])  # (V,)
    err = np.array([[e - float(r.low) for e, r in zip(est, rho)], [float(r.high) - e for e, r in zip(est, rho)]])
    ax.bar(range(len(views)), est, color="steelblue")
    ax.errorbar(range(len(views)), est, yerr=np.nan_to_num(err), fmt="none", color="black", capsize=4)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(views)), [_(VIEW_LABELS.get(v, v)) for v in views], fontsize=8)
    ax.set_ylim(-1.05, 1.05)
    ax.set_ylabel(_("Spearman rho with the effect\nof leaving the token out"))
    ax.set_title(_("Which view tracks the model? ({n} queries, 95% intervals)").format(n=limits.scored_queries),
                 fontsize=10)
    fig.tight_layout()
    return fig
