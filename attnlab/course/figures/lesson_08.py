"""Figures of lesson 08: the article's mean maps of layers 1-4, fixedness beside the control,
and how the answer settles with the number of queries."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.analysis.fixedness import (
    FixednessCurve,
    FixednessReport,
    decades,
    fixedness_curve,
    fixedness_report,
    leading_pieces,
)
from attnlab.core.streaming import MeanAttention, merge_all, sharded_mean_attention
from attnlab.course import results
from attnlab.course.claims import averaging as claims
from attnlab.course.figures import FigureContext, figure
from attnlab.data.querygen import DEFAULT_N_TOKENS, random_token_queries, same_length_queries
from attnlab.viz.fixedness_plots import plot_fixedness, plot_fixedness_curve, plot_mean_maps

LESSON = "08_layer_averaging.ipynb"

#: Queries per forward pass, as in lesson 08: with the same batches the lesson's
#: finished shards (``results/shards``) are read back instead of computed again.
BATCH_SIZE = 64


@dataclass
class Run:
    """Lesson 08's run: the merged mean, the report with its control, and the curve."""

    whole: MeanAttention
    report: FixednessReport
    curve: FixednessCurve


def lesson_run(ctx: FigureContext) -> Run:
    """Real queries (the first shard cut at 10, 100, ...) and the control, computed once per build."""

    def compute() -> Run:
        m = ctx.model
        total, shard = ctx.pick(claims.COURSE_QUERIES, 200), ctx.pick(1000, 50)
        queries = same_length_queries(m, total, DEFAULT_N_TOKENS)
        pieces = leading_pieces(m, queries, [c for c in decades(shard) if c <= shard])
        saved = results.results_dir() / "shards"
        rest = sharded_mean_attention(m, queries, shard, batch_size=BATCH_SIZE, resume_dir=saved, progress=False)
        control = sharded_mean_attention(m, random_token_queries(m, ctx.pick(claims.COURSE_CONTROL, 100), DEFAULT_N_TOKENS),
                                         shard, batch_size=BATCH_SIZE, resume_dir=saved, progress=False)
        shards = [merge_all(pieces)] + rest
        report = fixedness_report(shards, control=control, n_boot=ctx.pick(1000, 100))
        return Run(merge_all(shards), report, fixedness_curve(pieces + rest, decades(total)))

    return ctx.memo("run08", compute)


@figure("mean_maps_layers_1_4", lesson=LESSON,
        caption="Mean attention maps of layers 1-4 x all heads over many same-length queries "
                "(the source article's figure, one colour scale)")
def mean_maps_layers_1_4(ctx: FigureContext):
    acc = lesson_run(ctx).whole
    return plot_mean_maps(acc, layers=range(min(claims.ARTICLE_LAYERS, len(acc.layers))))


@figure("fixedness_map", lesson=LESSON,
        caption="Per-head fixedness (share of a row's information the mean map explains, against each head's "
                "null) on real queries and on random tokens (the control), their difference, and the sharpness "
                "of the mean map; stars: heads labelled fixed from their interval")
def fixedness_map(ctx: FigureContext):
    report = lesson_run(ctx).report
    return plot_fixedness(report, threshold=claims.FIXED_THRESHOLD, fixed=claims.fixed_mask(report))


@figure("fixedness_vs_queries", lesson=LESSON,
        caption="Per-layer fixedness and the share of heads whose point estimate reaches the threshold against "
                "the number of queries averaged")
def fixedness_vs_queries(ctx: FigureContext):
    run = lesson_run(ctx)
    return plot_fixedness_curve(run.curve.counts, run.curve.per_layer(), fixed_share_curve(run),
                                run.curve.layers, control_per_layer=run.report.control_per_layer.estimate)


def fixed_share_curve(run: Run) -> list[float]:
    """Share of heads whose point fixedness reaches the threshold after each count of the curve
    (uniform heads of the whole run never count)."""
    return claims.point_fixed_share(run.curve.fixedness, run.report.uniform)
