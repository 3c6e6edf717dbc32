"""Figures of lesson 10: regrouped heads of the example, where attention goes, and perplexity
against the number of heads in two designs."""

from __future__ import annotations

import math

from attnlab.analysis.regroup import regroup_all, regroup_summaries, valid_group_counts
from attnlab.core.language import _
from attnlab.course import results
from attnlab.course.claims.head_count import VASWANI_ROW_A
from attnlab.course.lesson_results import HeadCountResult
from attnlab.data.corpus import texts
from attnlab.data.examples import example_for
from attnlab.scratch.head_count_training import (
    FIXED_D_HEAD,
    HEAD_COUNTS,
    LookupLanguage,
    TrainConfig,
    fixed_head_size,
    head_count_study,
    smoke_config,
)
from attnlab.viz.head_count_plots import plot_head_count, plot_regrouped, plot_summaries
from attnlab.viz.plot import plot_heads_grid

from . import FigureContext, figure

LESSON = "10_how_many_heads.ipynb"


def _regrouped(ctx: FigureContext):
    m = ctx.model
    return ctx.memo("regrouped", lambda: regroup_all(m, [example_for(m)], valid_group_counts(m.n_heads)))


@figure("regroup_layers", lesson=LESSON,
        caption="The example's first-layer attention with the heads regrouped into fewer, wider heads")
def regroup_layers(ctx: FigureContext):
    return plot_regrouped(_regrouped(ctx), 0, 0)


@figure("regroup_to_two", lesson=LESSON,
        caption="Every layer of the example with the heads forced into 2 (the source article's experiment)")
def regroup_to_two(ctx: FigureContext):
    two = _regrouped(ctx)[2]
    fig = plot_heads_grid(two[0], two.tokens[0], vmax=1.0, suptitle=_("{heads} heads forced into 2").format(
        heads=ctx.model.n_heads))
    fig.colorbar(fig.axes[0].images[0], ax=fig.axes, shrink=0.5, label=_("attention weight"))
    return fig


@figure("regroup_destinations", lesson=LESSON,
        caption="Where attention goes (self, previous, next, the special tokens at both ends, other) as the heads are merged")
def regroup_destinations(ctx: FigureContext):
    m = ctx.model
    saved = results.load(HeadCountResult.file_name, HeadCountResult, model=m)
    summaries = saved.summaries() if saved is not None else regroup_summaries(
        m, texts(m.language, ctx.pick(500, 40), seed=0))
    return plot_summaries(summaries, ends=m.end_tokens).figure


@figure("head_count_perplexity", lesson=LESSON,
        caption="Validation perplexity of small transformers trained with 1-32 heads at a fixed width and at a "
                "fixed head size (seed range), beside Vaswani et al.'s Table 3 row (A) (a translation model, "
                "not bert-base)")
def head_count_perplexity(ctx: FigureContext):
    saved = results.load(HeadCountResult.file_name, HeadCountResult, model=ctx.model)
    language = LookupLanguage()
    if saved is not None and saved.perplexity_fixed_head:
        designs = {"fixed width": saved.perplexities("fixed width"),
                   "fixed head size": saved.perplexities("fixed head size")}
        d_model, d_head = saved.d_model, saved.d_head
    else:  # lesson 10 has not saved its runs for this model and mode: train them here
        config = ctx.pick(TrainConfig(), smoke_config())
        seeds = ctx.pick((0, 1, 2, 3, 4), (0, 1))
        width = head_count_study(HEAD_COUNTS, seeds, language=language, config=config)
        size = head_count_study(HEAD_COUNTS, seeds, language=language, config=fixed_head_size(config), reuse=width)
        designs = {"fixed width": width.perplexities_by_heads(), "fixed head size": size.perplexities_by_heads()}
        d_model, d_head = config.d_model, FIXED_D_HEAD
    return plot_head_count(designs, best_possible=math.exp(language.best_loss()),
                           head_sizes={"fixed width": f"d_k = {d_model} / h", "fixed head size": f"d_k = {d_head}"},
                           reference={h: ppl for h, (ppl, _bleu) in VASWANI_ROW_A.items()},
                           reference_title=_("Vaswani et al. 2017, Table 3 row (A): EN-DE translation,\n"
                                             "d_model = 512, fixed width (not bert-base)"),
                           reference_label=_("dev perplexity (EN-DE)"))
