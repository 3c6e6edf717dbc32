"""Figures of lesson 11: the head-importance map and the pruning curves."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "11_pruning_heads.ipynb"


def _objective(ctx: FigureContext):
    if "objective_11" not in ctx.cache:
        from attnlab.data.corpus import texts
        from attnlab.analysis.importance import make_objective

        m = ctx.model
        ctx.cache["objective_11"] = make_objective(m, texts(m.language, ctx.pick(192, 16), seed=1),
                                                   batch_size=ctx.pick(32, 8))
    return ctx.cache["objective_11"]


def _importance(ctx: FigureContext):
    if "importance_11" not in ctx.cache:
        from attnlab.analysis.importance import head_importance

        ctx.cache["importance_11"] = head_importance(ctx.model, _objective(ctx))
    return ctx.cache["importance_11"]


@figure("head_importance_map", lesson=LESSON,
        caption="Head importance |dL/dxi| (Michel et al. 2019), layers x heads, normalised per layer")
def head_importance_map(ctx: FigureContext):
    from attnlab.analysis.importance import plot_head_scores

    ax = plot_head_scores(_importance(ctx), title="Head importance (normalised per layer)", label="importance")
    return ax.figure


@figure("pruning_curves", lesson=LESSON,
        caption="Loss as heads are masked: least important first, random orders, most important first")
def pruning_curves(ctx: FigureContext):
    from attnlab.analysis.pruning import plot_pruning_curves, pruning_study

    study = pruning_study(ctx.model, _objective(ctx), importance=_importance(ctx), n_random=ctx.pick(3, 2))
    return plot_pruning_curves(study).figure
