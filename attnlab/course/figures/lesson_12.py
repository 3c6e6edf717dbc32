"""Lesson 12's figure: the six conclusions with their computed verdicts."""

from __future__ import annotations

from . import FigureContext, figure


@figure("conclusions", lesson="12_conclusions.ipynb",
        caption="The source article's six conclusions, with the verdict computed from the run")
def conclusions_figure(ctx: FigureContext):
    from attnlab.course.conclusions import all_conclusions, gather, plot_verdicts

    evidence = gather(ctx.model, progress=False)
    return plot_verdicts(all_conclusions(evidence), model_name=ctx.model.name)
