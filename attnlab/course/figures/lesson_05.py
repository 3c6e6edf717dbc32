"""Figures of lesson 05 (reading head heatmaps): taxonomy map, pattern zoo, example line view."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "05_reading_heatmaps.ipynb"


def _labels(ctx: FigureContext):
    """Survey + labels of ``ctx.model``, computed once per figure run."""
    if "05_labels" not in ctx.cache:
        from attnlab.analysis.taxonomy import classify_heads, sample_texts, survey_stats, survey_texts

        m = ctx.model
        n_texts = ctx.pick(300, 30)
        n_pairs = min(ctx.pick(100, 10), len(sample_texts(m.language)) - 1)
        stats = survey_stats(m, survey_texts(m.language, n_texts), n_pairs=n_pairs)
        ctx.cache["05_labels"] = classify_heads(stats)
    return ctx.cache["05_labels"]


@figure("taxonomy_map", lesson=LESSON,
        caption="Every head of the model labelled with its attention pattern, decided by its statistics")
def taxonomy_map(ctx: FigureContext):
    labels = _labels(ctx)
    return labels.plot(title=f"Head taxonomy of {ctx.model.name} ({labels.stats.n_texts} inputs)")


@figure("pattern_zoo", lesson=LESSON,
        caption="The clearest head of each pattern type, as a heatmap and as a line view")
def pattern_zoo(ctx: FigureContext):
    from attnlab.analysis.taxonomy import plot_pattern_zoo

    return plot_pattern_zoo(ctx.model, _labels(ctx))


@figure("example_line_view", lesson=LESSON,
        caption="Line view of the example query: one head of each pattern in one layer")
def example_line_view(ctx: FigureContext):
    from attnlab.analysis.taxonomy import plot_example_lines

    return plot_example_lines(ctx.model, _labels(ctx))
