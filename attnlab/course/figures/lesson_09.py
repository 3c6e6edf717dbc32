"""Figures of lesson 09: heads embedded by MDS, the within-layer dispersion per layer, and that curve
beside the model's untrained twin's."""

from __future__ import annotations

from attnlab.analysis.diversity import HeadDistances, depth_trend, head_distances, shuffled_baseline
from attnlab.core.twins import shuffled_for_a_while
from attnlab.course.figures import FigureContext, figure
from attnlab.data.querygen import same_length_queries
from attnlab.viz.diversity_plots import plot_dispersion, plot_dispersion_beside_twin, plot_mds

LESSON = "09_head_diversity.ipynb"


def shared_queries(ctx: FigureContext) -> list[str]:
    """The lesson's same-length queries (2,000; 60 in smoke mode)."""
    return list(same_length_queries(ctx.model, ctx.pick(2000, 60)))


def shared_distances(ctx: FigureContext) -> HeadDistances:
    """Head distances over same-length queries, computed once per build."""
    return ctx.memo("dist09", lambda: head_distances(ctx.model, shared_queries(ctx), progress=False))


def twin_distances(ctx: FigureContext) -> HeadDistances:
    """The same head distances on the model's shuffled untrained twin (the same queries), computed once."""
    def measure() -> HeadDistances:
        queries = shared_queries(ctx)
        with shuffled_for_a_while(ctx.model) as twin:  # the model's own weights, put back afterwards
            return head_distances(twin, queries, progress=False)

    return ctx.memo("twin_dist09", measure)


@figure("head_mds", lesson=LESSON,
        caption="Every head as a point: 2-D MDS of Clark et al.'s Jensen-Shannon head distances, coloured by layer")
def head_mds(ctx: FigureContext):
    return plot_mds(shared_distances(ctx))


@figure("layer_dispersion", lesson=LESSON,
        caption="Mean distance between the heads of each layer, with bootstrap intervals over queries, "
                "beside heads dealt to layers at random")
def layer_dispersion(ctx: FigureContext):
    hd = shared_distances(ctx)
    return plot_dispersion(depth_trend(hd, n_boot=ctx.pick(1000, 200)),
                           shuffled_baseline(hd, n_perm=ctx.pick(2000, 200)))


@figure("dispersion_beside_twin", lesson=LESSON,
        caption="Mean distance between the heads of each layer, the model beside its untrained twin (weights "
                "shuffled within each tensor): as measured, and each over its own lower third")
def dispersion_beside_twin(ctx: FigureContext):
    model, twin = shared_distances(ctx), twin_distances(ctx)
    n_boot = ctx.pick(1000, 200)
    return plot_dispersion_beside_twin(model.layers, depth_trend(model, n_boot=n_boot).dispersion,
                                       depth_trend(twin, n_boot=n_boot).dispersion, model_name=ctx.model.name)
