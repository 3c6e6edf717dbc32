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
    labels = [str(i + 1) for i in range(len(verdicts))] if labels is None else list(labels)
    details = [""] * len(verdicts) if details is None else list(details)
    claims = [_wrap(_("{label}. {claim}").format(label=label, claim=_(v.claim)), 80) for v, label in zip(verdicts, labels)]
    notes = [_wrap(detail, 110) if detail else [] for detail in details]
    # each row as tall as its text, in lines of the claim's font (a detail line is 0.8 of one), at least 3
    heights = [max(3.0, len(c) + 0.8 * len(n) + 1.0) for c, n in zip(claims, notes)]
    tops = [sum(heights[:i]) for i in range(len(heights))]
    fig, ax = plt.subplots(figsize=(10, 0.19 * sum(heights) + 0.8))
    ax.set_xlim(0, 1)
    ax.set_ylim(sum(heights), -0.5)
    ax.axis("off")
    for v, claim, note, top, height in zip(verdicts, claims, notes, tops, heights):
        ax.add_patch(plt.Rectangle((0.0, top + 0.3), 0.17, height - 0.6, color=colours.get(v.verdict, GREY)))
        ax.text(0.085, top + height / 2, _(v.verdict), ha="center", va="center", color="white", fontsize=10,
                weight="bold")
        ax.text(0.19, top + 0.4, "\n".join(claim), va="top", fontsize=10)
        if note:
            ax.text(0.19, top + 0.6 + len(claim), "\n".join(note), va="top", fontsize=8, color="#424242")
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
