"""Figures of lesson 02: variance of q.k and softmax saturation against d_k."""

from __future__ import annotations

from attnlab.core.language import _
from attnlab.course.figures import FigureContext, figure
from attnlab.course.claims.scaling import VARIANCE_TOLERANCE
from attnlab.scratch.scaling import saturation_curve, variance_interval
from attnlab.viz.scaling_plots import plot_saturation, plot_variance

LESSON = "02_why_scale.ipynb"
D_KS = [4, 16, 64, 256, 1024]


@figure("qk_variance", lesson=LESSON,
        caption="Measured variance of q.k for random unit-variance vectors against d_k (hollow markers, 95% "
                "bootstrap intervals) with the theory var = d_k (dashed); right: measured / d_k with the "
                "lesson's 10% band")
def qk_variance(ctx: FigureContext):
    n = ctx.pick(20_000, 3_000)
    measured = [variance_interval(d, n_samples=n, n_boot=ctx.pick(1000, 200)) for d in D_KS]
    return plot_variance(D_KS, measured, tolerance=VARIANCE_TOLERANCE,
                         title=_("var(q.k) grows like d_k ({n} pairs each)").format(n=n))


@figure("softmax_saturation", lesson=LESSON,
        caption="Entropy, largest weight and gradient norm of the softmax against d_k, "
                "with and without the 1/sqrt(d_k) factor (random unit-variance q and k, 16 keys)")
def softmax_saturation(ctx: FigureContext):
    rows = ctx.pick(1000, 200)
    unscaled = saturation_curve(D_KS, scaled=False, n_rows=rows)
    scaled = saturation_curve(D_KS, scaled=True, n_rows=rows)
    return plot_saturation(unscaled, scaled, suptitle=_("Without scaling the softmax saturates as d_k grows"))
