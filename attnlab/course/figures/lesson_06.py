"""Figures of lesson 06: the four-query grid of the example and the sensitivity maps."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "06_perturbation.ipynb"


def shared_study(ctx: FigureContext):
    """The perturbation study over the built-in queries, computed once per build."""
    if "study06" not in ctx.cache:
        from attnlab.analysis.compare import perturbation_study
        from attnlab.data.corpus import queries

        m = ctx.model
        ctx.cache["study06"] = perturbation_study(m, queries(m.language, ctx.pick(1000, 30)))
    return ctx.cache["study06"]


@figure("perturbation_example", lesson=LESSON,
        caption="Every head of one layer for the example query and its lexical, syntactic and combined "
                "perturbations (p/t: position-/token-space similarity to the original)")
def perturbation_example(ctx: FigureContext):
    from attnlab.analysis.compare import example_maps, plot_example_rows
    from attnlab.analysis.perturb import example_perturbations

    ex = example_maps(ctx.model, example_perturbations(ctx.model.language))
    return plot_example_rows(ex, ex.chosen_layer())


@figure("perturbation_sensitivity", lesson=LESSON,
        caption="Per-head sensitivity (1 - similarity) to lexical, syntactic and combined damage, "
                "in position and token space, averaged over many queries")
def perturbation_sensitivity(ctx: FigureContext):
    from attnlab.analysis.compare import plot_sensitivity_maps

    return plot_sensitivity_maps(shared_study(ctx), n_boot=200)


@figure("perturbation_followers", lesson=LESSON,
        caption="Position-followers (P) and content-followers (C): position-space minus token-space "
                "similarity under combined damage")
def perturbation_followers(ctx: FigureContext):
    from attnlab.analysis.compare import plot_followers

    return plot_followers(shared_study(ctx), n_boot=200)
