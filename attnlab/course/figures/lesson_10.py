"""Figures of lesson 10: regrouped heads of the example, and perplexity against the number of heads."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "10_how_many_heads.ipynb"


def _regrouped(ctx: FigureContext):
    if "regrouped" not in ctx.cache:
        from attnlab.data.examples import example_for
        from attnlab.analysis.regroup import regroup_all, valid_group_counts

        m = ctx.model
        ctx.cache["regrouped"] = regroup_all(m, [example_for(m)], valid_group_counts(m.n_heads))
    return ctx.cache["regrouped"]


@figure("regroup_layers", lesson=LESSON,
        caption="The example's first-layer attention with the heads regrouped into 12, 6, 4, 3, 2 and 1 wider heads")
def regroup_layers(ctx: FigureContext):
    from attnlab.analysis.regroup import plot_regrouped

    return plot_regrouped(_regrouped(ctx), 0, 0)


@figure("regroup_to_two", lesson=LESSON,
        caption="Every layer of the example with the heads forced into 2 (the source article's experiment)")
def regroup_to_two(ctx: FigureContext):
    from attnlab.viz.plot import plot_heads_grid

    two = _regrouped(ctx)[2]
    return plot_heads_grid(two[0], two.tokens[0], vmax=1.0, suptitle=f"{ctx.model.n_heads} heads forced into 2")


@figure("head_count_perplexity", lesson=LESSON,
        caption="Validation perplexity of small transformers trained with 1-32 heads (seed range), "
                "beside Vaswani et al.'s Table 3 row (A)")
def head_count_perplexity(ctx: FigureContext):
    from attnlab.scratch.head_count_training import (
        HEAD_COUNTS,
        TrainConfig,
        head_count_study,
        plot_head_count,
        smoke_config,
    )

    config = ctx.pick(TrainConfig(), smoke_config())
    study = head_count_study(HEAD_COUNTS, ctx.pick((0, 1, 2), (0, 1)), config=config)
    return plot_head_count(study)
