"""Figures of lesson 11: the head-importance map and the pruning curves (heads ranked on one set
of texts, pruned on another; lesson 11's saved result when it exists)."""

from __future__ import annotations

from attnlab.analysis import costs_nothing
from attnlab.analysis.importance import ablation_per_text, make_objective
from attnlab.analysis.pruning import pruning_study
from attnlab.core.language import _
from attnlab.course import results
from attnlab.course.lesson_results import PruningResult
from attnlab.data.corpus import texts
from attnlab.viz.pruning_plots import plot_head_scores, plot_pruning_curves

from . import FigureContext, figure

LESSON = "11_pruning_heads.ipynb"


def _study(ctx: FigureContext):
    m = ctx.model

    def compute():
        saved = results.load(PruningResult.file_name, PruningResult, model=m)
        if saved is not None and saved.study is not None and saved.study.per_text:
            return saved.study
        n_importance, n_eval = ctx.pick(128, 12), ctx.pick(128, 12)
        pool = texts(m.language, n_importance + n_eval, seed=1)  # distinct queries: the two sets are disjoint
        ranking = make_objective(m, pool[:n_importance], kind="sentence", batch_size=64)
        importance = ablation_per_text(m, ranking)["sentence"].mean(axis=0)  # (L, H)
        held_out = make_objective(m, pool[n_importance:], kind="sentence", batch_size=64)
        tolerance = costs_nothing.for_texts(m, pool[n_importance:]).tolerance  # 5% of the 1 - cos between texts (22% of the distance)
        return pruning_study(m, held_out, importance=importance, n_random=ctx.pick(20, 3), tolerance=tolerance)

    return ctx.memo("pruning_study_11", compute)


@figure("head_importance_map", lesson=LESSON,
        caption="Head importance: how far the sentence vector moves (1 - cos) when the head alone is masked, "
                "layers x heads, on the texts used for ranking")
def head_importance_map(ctx: FigureContext):
    ax = plot_head_scores(_study(ctx).importance, title=_("Head importance: 1 - cos when the head alone is masked"),
                          label=_("1 - cos with the full model's sentence vector"))
    ax.set_xlabel(_("head"))
    ax.set_ylabel(_("layer"))
    return ax.figure


@figure("pruning_curves", lesson=LESSON,
        caption="1 - cos with the full model as heads are masked: least important first, random orders "
                "(median and 10th-90th percentile band), most important first")
def pruning_curves(ctx: FigureContext):
    return plot_pruning_curves(_study(ctx)).figure
