"""Figures of lesson 05 (reading head heatmaps): taxonomy map, pattern zoo, example line view."""

from __future__ import annotations

from attnlab.core.language import _
from attnlab.analysis.taxonomy import HeadLabels, classify_heads, sample_texts, survey_stats, survey_texts
from attnlab.viz.pattern_plots import plot_example_lines, plot_pattern_zoo, plot_taxonomy

from . import FigureContext, figure

LESSON = "05_reading_heatmaps.ipynb"


def _labels(ctx: FigureContext) -> HeadLabels:
    """Survey + labels of ``ctx.model``, computed once per model and mode (:meth:`FigureContext.memo`)."""
    m = ctx.model

    def compute() -> HeadLabels:
        n_texts = ctx.pick(300, 30)
        n_pairs = min(ctx.pick(100, 10), len(sample_texts(m.language)) - 1)
        return classify_heads(survey_stats(m, survey_texts(m.language, n_texts), n_pairs=n_pairs))

    return ctx.memo("05_labels", compute)


@figure("taxonomy_map", lesson=LESSON,
        caption="Every head of the model labelled with its attention pattern, decided by its statistics")
def taxonomy_map(ctx: FigureContext):
    labels = _labels(ctx)
    return plot_taxonomy(labels, title=_("Head taxonomy of {model} ({n} inputs)").format(
        model=ctx.model.name, n=labels.stats.n_texts))


@figure("pattern_zoo", lesson=LESSON,
        caption="The clearest head of each pattern type, as a heatmap and as a line view")
def pattern_zoo(ctx: FigureContext):
    return plot_pattern_zoo(ctx.model, _labels(ctx))


@figure("example_line_view", lesson=LESSON,
        caption="Line view of the example query: one head of each pattern in one layer")
def example_line_view(ctx: FigureContext):
    return plot_example_lines(ctx.model, _labels(ctx))
