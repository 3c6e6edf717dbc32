"""Figures of lesson 13: sink mass by layer, raw vs norm-based maps, the faithfulness
scoreboard, mean-map replacement cost against fixedness, and heads replaced together."""

from __future__ import annotations

from attnlab.core.language import _
from attnlab.analysis.faithfulness import Scoreboard, scoreboard
from attnlab.analysis.mean_map_replacement import MapReplacement, TogetherCurves, mean_map_replacement, replace_together
from attnlab.analysis.norm_attention import norm_attention
from attnlab.analysis.sinks import SinkProfile, sink_profile
from attnlab.core.models import LoadedModel
from attnlab.core.streaming import mean_attention
from attnlab.data.corpus import texts as corpus_texts
from attnlab.data.examples import example_for
from attnlab.data.querygen import same_length_queries
from attnlab.viz.attention_limits_plots import (plot_raw_vs_norm, plot_replacement_cost, plot_scoreboard,
                                                plot_sink_mass, plot_together)

from . import FigureContext, figure

LESSON = "13_attention_limits.ipynb"


def with_question_mark(m: LoadedModel, texts: list[str]) -> list[str]:
    """Search queries end without punctuation; a question mark gives the punctuation sink a token."""
    mark = "？" if m.language == "zh" else " ?"
    return [t + mark for t in texts]


def shared_profile(ctx: FigureContext) -> SinkProfile:
    m = ctx.model
    texts = with_question_mark(m, corpus_texts(m.language, ctx.pick(200, 16)))
    return ctx.memo("sinks13", lambda: sink_profile(m, texts))


def shared_board(ctx: FigureContext) -> Scoreboard:
    m = ctx.model
    return ctx.memo("board13", lambda: scoreboard(m, corpus_texts(m.language, ctx.pick(80, 8), seed=1)))


def shared_papa(ctx: FigureContext) -> tuple[MapReplacement, TogetherCurves]:
    """One head at a time and heads together, on the same held-out queries and mean maps."""
    m = ctx.model
    layers = ctx.pick(None, [m.n_layers - 1])

    def compute() -> tuple[MapReplacement, TogetherCurves]:
        n_mean, n_held_out = ctx.pick(2000, 100), ctx.pick(32, 4)
        queries = list(same_length_queries(m, n_mean + n_held_out))  # distinct: the held-out ones are new
        mean = mean_attention(m, queries[:n_mean], layers=layers, progress=False)
        held_out = queries[n_mean:]
        return (mean_map_replacement(m, held_out, mean),
                replace_together(m, held_out, mean, n_random=ctx.pick(5, 2)))

    return ctx.memo("papa13", compute)


@figure("sink_mass_by_layer", lesson=LESSON,
        caption="Share of attention on [CLS]/[SEP] (or <s>/</s>), punctuation and words per layer, raw and "
                "norm-based, beside the size of what each kind of token contributes")
def sink_mass_by_layer(ctx: FigureContext):
    return plot_sink_mass(shared_profile(ctx))


@figure("raw_vs_norm_maps", lesson=LESSON,
        caption="The example query in the layer with the most attention on special tokens: raw weights "
                "beside norm-based weights (Kobayashi et al. 2020), heads combined")
def raw_vs_norm_maps(ctx: FigureContext):
    m = ctx.model
    layer = shared_profile(ctx).sink_layer()
    na = norm_attention(m, with_question_mark(m, [example_for(m)]))
    return plot_raw_vs_norm(na.weights[0, layer].mean(dim=0).numpy(), na.combined[0, layer].numpy(), na.tokens[0],
                            title=_("layer {number}, heads combined").format(number=layer + 1))


@figure("faithfulness_scoreboard", lesson=LESSON,
        caption="Spearman correlation of raw attention, norm-based attention, rollout, value zeroing (Mohebbi) "
                "and the whole-model knockout with five references (leave one out keeping positions, deletion, "
                "gradient x input, the embedding zeroed, gradient x input without the token in the pool), "
                "on the same queries, with 95% intervals over queries")
def faithfulness_scoreboard(ctx: FigureContext):
    return plot_scoreboard(shared_board(ctx))


@figure("mean_map_replacement_cost", lesson=LESSON,
        caption="Cost of replacing one head's map by its mean map (and, as a control, by another query's map) "
                "against the head's fixedness")
def mean_map_replacement_cost(ctx: FigureContext):
    return plot_replacement_cost(shared_papa(ctx)[0])


@figure("heads_replaced_together", lesson=LESSON,
        caption="Cumulative cost of replacing heads by their mean maps together, most fixed first, least fixed "
                "first and in random orders, against the tolerance")
def heads_replaced_together(ctx: FigureContext):
    return plot_together(shared_papa(ctx)[1])
