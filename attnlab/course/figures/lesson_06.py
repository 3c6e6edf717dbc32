"""Figures of lesson 06: the four-query grid of the example, the sensitivity maps, the
follower map, and lexical against syntactic damage at equal displacement."""

from __future__ import annotations

from attnlab.analysis.compare import PerturbationStudy, displacement_control, example_maps, perturbation_study
from attnlab.analysis.perturb import example_perturbations
from attnlab.viz.perturbation_plots import (
    plot_displacement_control,
    plot_example_rows,
    plot_followers,
    plot_sensitivity_maps,
)

from . import FigureContext, figure

LESSON = "06_perturbation.ipynb"


def shared_study(ctx: FigureContext) -> PerturbationStudy:
    """The perturbation study over the built-in queries, computed once per build."""
    return ctx.over_queries("study06", perturbation_study)


@figure("perturbation_example", lesson=LESSON,
        caption="Every head of one layer for the example query and its lexical, syntactic and combined "
                "perturbations, with tokens (p/t: position-/token-space similarity to the original)")
def perturbation_example(ctx: FigureContext):
    ex = example_maps(ctx.model, example_perturbations(ctx.model.language))
    return plot_example_rows(ex, ex.chosen_layer())


@figure("perturbation_sensitivity", lesson=LESSON,
        caption="Per-head sensitivity (1 - similarity) to lexical, syntactic and combined damage, "
                "in position and token space, averaged over many queries, on one colour scale")
def perturbation_sensitivity(ctx: FigureContext):
    return plot_sensitivity_maps(shared_study(ctx), n_boot=200)


@figure("perturbation_followers", lesson=LESSON,
        caption="Position-followers (P) and content-followers (C): position-space minus token-space "
                "similarity under combined damage")
def perturbation_followers(ctx: FigureContext):
    return plot_followers(shared_study(ctx), n_boot=200)


@figure("perturbation_displacement", lesson=LESSON,
        caption="Lexical minus syntactic change per head, plain and at equal token displacement")
def perturbation_displacement(ctx: FigureContext):
    return plot_displacement_control(displacement_control(shared_study(ctx), n_boot=300))
