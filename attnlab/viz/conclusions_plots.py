"""Lesson 12's figure: each conclusion with its verdict as a coloured tag."""

from __future__ import annotations

import textwrap
from typing import Mapping, Sequence

import matplotlib.pyplot as plt

GREY = "#9e9e9e"


def plot_verdicts(verdicts: Sequence, colours: Mapping[str, str], *, model_name: str = "",
                  labels: Sequence[str] | None = None):
    """A one-look summary of computed verdicts.

    Args:
        verdicts: objects with ``claim`` and ``verdict`` (e.g.
            :class:`attnlab.course.verdicts.ClaimVerdict`), drawn top to bottom.
        colours: verdict word -> colour of its tag (grey for a word not listed).
        model_name: added to the title.
        labels: one label per verdict (e.g. "3a"); default 1, 2, 3, ...

    Returns:
        The figure.
    """
    fig, ax = plt.subplots(figsize=(10, 0.85 * len(verdicts) + 0.8))
    ax.set_xlim(0, 1)
    ax.set_ylim(len(verdicts), -0.6)
    ax.axis("off")
    labels = [str(i + 1) for i in range(len(verdicts))] if labels is None else list(labels)
    for i, (v, label) in enumerate(zip(verdicts, labels)):
        ax.add_patch(plt.Rectangle((0.0, i - 0.38), 0.17, 0.76, color=colours.get(v.verdict, GREY)))
        ax.text(0.085, i, v.verdict, ha="center", va="center", color="white", fontsize=10, weight="bold")
        ax.text(0.19, i, f"{label}. " + "\n".join(textwrap.wrap(v.claim, 80)), va="center", fontsize=10)
    title = "The source article's six conclusions, checked"
    ax.set_title(title + (f" on {model_name}" if model_name else ""), loc="left", fontsize=12)
    fig.tight_layout()
    return fig
