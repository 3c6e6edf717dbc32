"""Figures of lesson 11: the head-importance map and the pruning curves."""

from __future__ import annotations

from attnlab.analysis.importance import Objective, head_importance, make_objective
from attnlab.analysis.pruning import pruning_study
from attnlab.data.corpus import texts
from attnlab.viz.pruning_plots import plot_head_scores, plot_pruning_curves

from . import FigureContext, figure

LESSON = "11_pruning_heads.ipynb"


def _objective(ctx: FigureContext) -> Objective:
    m = ctx.model
    return ctx.memo("objective_11", lambda: make_objective(m, texts(m.language, ctx.pick(192, 16), seed=1),
                                                           batch_size=ctx.pick(32, 8)))


def _importance(ctx: FigureContext):
    return ctx.memo("importance_11", lambda: head_importance(ctx.model, _objective(ctx)))


@figure("head_importance_map", lesson=LESSON,
        caption="Head importance |dL/dxi| (Michel et al. 2019), layers x heads, normalised per layer")
def head_importance_map(ctx: FigureContext):
    ax = plot_head_scores(_importance(ctx), title="Head importance (normalised per layer)", label="importance")
    return ax.figure


@figure("pruning_curves", lesson=LESSON,
        caption="Loss as heads are masked: least important first, random orders, most important first")
def pruning_curves(ctx: FigureContext):
    study = pruning_study(ctx.model, _objective(ctx), importance=_importance(ctx), n_random=ctx.pick(3, 2))
    return plot_pruning_curves(study).figure
