"""Lesson 12's figure: the six conclusions with their computed verdicts, each claim about the model held
against its untrained twin. When lesson 12 has saved its verdicts for the model (its run measured or found
the twin), those are drawn; otherwise they are judged here from the lessons' saved results and a twin a
report saved or the package ships (lessons that have not been run are not re-run, and their conclusions
say so)."""

from __future__ import annotations

from attnlab.course import results
from attnlab.course.evidence import VERDICT_COLOURS, all_conclusions, gather, row_titles, summary_line
from attnlab.course.lesson_results import ConclusionsResult
from attnlab.course.twin_evidence import twin_for
from attnlab.course.verdicts import ClaimVerdict
from attnlab.viz.conclusions_plots import plot_verdicts

from . import FigureContext, figure


def judged_verdicts(ctx: FigureContext) -> dict[str, ClaimVerdict]:
    """Lesson 12's saved verdicts for the model, by label; else the verdicts judged from the saved results."""
    saved = results.load(ConclusionsResult.file_name, ConclusionsResult, model=ctx.model)
    if saved is not None and len(saved.labels) == len(saved.verdicts):
        return dict(zip(saved.labels, saved.verdicts))
    twin = twin_for(ctx.model, allow_run=False)  # a saved or shipped twin; no run while drawing
    return all_conclusions(gather(ctx.model, progress=False), twin.rows, twin_name=twin.name)


@figure("conclusions", lesson="12_conclusions.ipynb",
        caption="The source article's six conclusions (3, 4 and 5 in two readings each), with the verdict "
                "computed from the run and the number and interval it was decided on")
def conclusions_figure(ctx: FigureContext):
    verdicts = judged_verdicts(ctx)
    return plot_verdicts(list(verdicts.values()), VERDICT_COLOURS, model_name=ctx.model.name,
                         labels=row_titles(verdicts), details=[summary_line(v) for v in verdicts.values()])
