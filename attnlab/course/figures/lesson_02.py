"""Figures of lesson 02: variance of q.k and softmax saturation against d_k."""

from __future__ import annotations

from . import FigureContext, figure

LESSON = "02_why_scale.ipynb"


@figure("qk_variance", lesson=LESSON,
        caption="Measured variance of q.k for random unit-variance vectors against d_k, with the line var = d_k")
def qk_variance(ctx: FigureContext):
    import matplotlib.pyplot as plt

    from attnlab.viz.plot import plot_curves
    from attnlab.scratch.scaling import dot_product_variance

    d_ks = [4, 16, 64, 256, 1024]
    n = ctx.pick(20_000, 3_000)
    measured = [dot_product_variance(d, n_samples=n) for d in d_ks]
    _, ax = plt.subplots(figsize=(5, 3.6))
    plot_curves(d_ks, {"measured var(q.k)": measured, "theory: d_k": [float(d) for d in d_ks]},
                xlabel="d_k", ylabel="variance of q.k", logx=True, logy=True, ax=ax,
                title=f"var(q.k) grows like d_k ({n} pairs each)")
    return ax.figure


@figure("softmax_saturation", lesson=LESSON,
        caption="Entropy, largest weight and gradient norm of the softmax against d_k, "
                "with and without the 1/sqrt(d_k) factor (random unit-variance q and k, 16 keys)")
def softmax_saturation(ctx: FigureContext):
    import matplotlib.pyplot as plt

    from attnlab.viz.plot import plot_curves
    from attnlab.scratch.scaling import saturation_curve

    d_ks = [4, 16, 64, 256, 1024]
    rows = ctx.pick(1000, 200)
    curves = {tag: saturation_curve(d_ks, scaled=tag == "scaled", n_rows=rows) for tag in ("unscaled", "scaled")}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, (field, label) in zip(axes, (("entropy", "entropy (nats)"), ("max_weight", "largest weight"),
                                        ("grad_norm", "softmax Jacobian norm"))):
        plot_curves(d_ks, {tag: getattr(c, field) for tag, c in curves.items()}, xlabel="d_k", ylabel=label,
                    logx=True, ax=ax)
    fig.suptitle("Without scaling the softmax saturates as d_k grows")
    fig.tight_layout()
    return fig
