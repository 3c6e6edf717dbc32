"""Lesson 11's figures speak Chinese in the Chinese edition: every text of the head-score map and
of the pruning curves, drawn on small planted inputs with the language set to zh, is free of
English prose (``attnlab/tools/english_prose.py``)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attnlab.analysis.pruning import PruningStudy  # noqa: E402
from attnlab.core import language  # noqa: E402
from attnlab.core.language import _  # noqa: E402
from attnlab.tools import english_prose  # noqa: E402
from attnlab.tools.figure_texts import texts_of  # noqa: E402
from attnlab.viz import pruning_plots  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Glyph .* missing from font")  # CJK fonts vary by machine


def _study(relative: bool) -> PruningStudy:
    """A planted study: 2 layers x 3 heads, 3 fractions, 4 random seeds."""
    fractions = np.array([0.0, 0.5, 1.0])
    return PruningStudy(
        fractions=fractions, importance=np.arange(6.0).reshape(2, 3),
        curves={"importance": np.array([0.0, 0.01, 0.3]), "reverse": np.array([0.0, 0.2, 0.3]),
                "random": np.array([[0.0, 0.05, 0.3], [0.0, 0.08, 0.3], [0.0, 0.1, 0.3], [0.0, 0.06, 0.3]])},
        base_loss=0.5 if relative else 0.0, prunable={"importance": 0.5, "reverse": 0.0, "random": 0.0},
        tolerance=0.02, objective="planted", relative=relative, prunable_heads=3)


def _english(fig) -> list[str]:
    texts = texts_of(fig)
    assert texts, "the figure should show some text"
    return [t for t in texts if english_prose.is_prose(t)]


@pytest.mark.parametrize("relative", [False, True])
def test_pruning_curves_show_only_chinese(chinese, relative):
    ax = pruning_plots.plot_pruning_curves(_study(relative))
    assert _english(ax.figure) == []


def test_head_scores_show_only_chinese(chinese):
    ax = pruning_plots.plot_head_scores(np.arange(6.0).reshape(2, 3),
                                        title=_("Importance: 1 - cos when the head alone is masked"),
                                        label=_("1 - cos with the full model's sentence vector"))
    assert _english(ax.figure) == []


def test_the_english_figure_is_english():
    """The check can fail: the same figure in English shows English prose."""
    before = language.current_language()
    language.set_language("en")
    try:
        ax = pruning_plots.plot_pruning_curves(_study(False))
        assert _english(ax.figure) != []
    finally:
        language.set_language(before)
        plt.close("all")
