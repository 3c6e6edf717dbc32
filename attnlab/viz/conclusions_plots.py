"""Lesson 12's figure: each conclusion with its verdict as a coloured tag."""

from __future__ import annotations

import textwrap
from typing import Mapping, Sequence

import matplotlib.pyplot as plt

from attnlab.core.language import _

GREY = "#9e9e9e"


def plot_verdicts(verdicts: Sequence, colours: Mapping[str, str], *, model_name: str = "",
                  labels: Sequence[str] | None = None, details: Sequence[str] | None = None):
    """A one-look summary of computed verdicts.

    Args:
        verdicts: objects with ``claim`` and ``verdict`` (e.g.
            :class:`attnlab.course.verdicts.ClaimVerdict`), drawn top to bottom.
        colours: verdict word -> colour of its tag (grey for a word not listed).
        model_name: added to the title.
        labels: one label per verdict (e.g. "3a"); default 1, 2, 3, ...
        details: one line per verdict drawn under its claim, e.g. the number and interval it
            was decided on (:func:`attnlab.course.evidence.deciding_number`).

    Returns:
        The figure.
    """
    fig, ax = plt.subplots(figsize=(10, (1.1 if details else 0.85) * len(verdicts) + 0.8))
    ax.set_xlim(0, 1)
    ax.set_ylim(len(verdicts), -0.6)
    ax.axis("off")
    labels = [str(i + 1) for i in range(len(verdicts))] if labels is None else list(labels)
    details = [""] * len(verdicts) if details is None else list(details)
    for i, (v, label, detail) in enumerate(zip(verdicts, labels, details)):
        ax.add_patch(plt.Rectangle((0.0, i - 0.38), 0.17, 0.76, color=colours.get(v.verdict, GREY)))
        ax.text(0.085, i, _(v.verdict), ha="center", va="center", color="white", fontsize=10, weight="bold")
        claim = _("{label}. {claim}").format(label=label, claim="\n".join(_wrap(_(v.claim), 80)))
        ax.text(0.19, i - (0.12 if detail else 0.0), claim, va="center", fontsize=10)
        if detail:
            ax.text(0.19, i + 0.3, "\n".join(_wrap(detail, 110)), va="center", fontsize=8, color="#424242")
    title = _("The source article's six conclusions, checked on {model}") if model_name else _(
        "The source article's six conclusions, checked")
    ax.set_title(title.format(model=model_name), loc="left", fontsize=12)
    fig.tight_layout()
    return fig


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` columns; Chinese characters take two columns and may break anywhere."""
    if any("\u4e00" <= ch <= "\u9fff" for ch in text):
        return textwrap.wrap(text, width // 2, break_long_words=True)
    return textwrap.wrap(text, width)
