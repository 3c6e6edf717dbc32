"""Lesson 12's figure: the six conclusions with their computed verdicts (from the saved results;
lessons that have not been run for this model are not re-run, and their conclusions say so), each
claim about the model held against its untrained twin when a report saved one or the package ships one."""

from __future__ import annotations

from attnlab.course.evidence import VERDICT_COLOURS, all_conclusions, gather, row_titles, summary_line
from attnlab.course.twin_evidence import twin_for
from attnlab.viz.conclusions_plots import plot_verdicts

from . import FigureContext, figure


@figure("conclusions", lesson="12_conclusions.ipynb",
        caption="The source article's six conclusions (3, 4 and 5 in two readings each), with the verdict "
                "computed from the run and the number and interval it was decided on")
def conclusions_figure(ctx: FigureContext):
    twin = twin_for(ctx.model, allow_run=False)  # a saved or shipped twin; no run while drawing
    verdicts = all_conclusions(gather(ctx.model, progress=False), twin.rows, twin_name=twin.name)
    return plot_verdicts(list(verdicts.values()), VERDICT_COLOURS, model_name=ctx.model.name,
                         labels=row_titles(verdicts), details=[summary_line(v) for v in verdicts.values()])
