"""Figures of lesson 10: regrouped heads of the example, and perplexity against the number of heads."""

from __future__ import annotations

from attnlab.analysis.regroup import regroup_all, valid_group_counts
from attnlab.course.claims.head_count import VASWANI_ROW_A
from attnlab.data.examples import example_for
from attnlab.scratch.head_count_training import HEAD_COUNTS, TrainConfig, head_count_study, smoke_config
from attnlab.viz.head_count_plots import plot_head_count, plot_regrouped
from attnlab.viz.plot import plot_heads_grid

from . import FigureContext, figure

LESSON = "10_how_many_heads.ipynb"


def _regrouped(ctx: FigureContext):
    m = ctx.model
    return ctx.memo("regrouped", lambda: regroup_all(m, [example_for(m)], valid_group_counts(m.n_heads)))


@figure("regroup_layers", lesson=LESSON,
        caption="The example's first-layer attention with the heads regrouped into 12, 6, 4, 3, 2 and 1 wider heads")
def regroup_layers(ctx: FigureContext):
    return plot_regrouped(_regrouped(ctx), 0, 0)


@figure("regroup_to_two", lesson=LESSON,
        caption="Every layer of the example with the heads forced into 2 (the source article's experiment)")
def regroup_to_two(ctx: FigureContext):
    two = _regrouped(ctx)[2]
    return plot_heads_grid(two[0], two.tokens[0], vmax=1.0, suptitle=f"{ctx.model.n_heads} heads forced into 2")


@figure("head_count_perplexity", lesson=LESSON,
        caption="Validation perplexity of small transformers trained with 1-32 heads (seed range), "
                "beside Vaswani et al.'s Table 3 row (A) (a translation model)")
def head_count_perplexity(ctx: FigureContext):
    config = ctx.pick(TrainConfig(), smoke_config())
    study = head_count_study(HEAD_COUNTS, ctx.pick((0, 1, 2), (0, 1)), config=config)
    return plot_head_count(study, reference={h: ppl for h, (ppl, _bleu) in VASWANI_ROW_A.items()},
                           reference_title="Vaswani et al. 2017, Table 3 row (A): translation, d_model = 512",
                           reference_label="dev perplexity (EN-DE)")
