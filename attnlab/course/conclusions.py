"""The source article's six conclusions, checked against the numbers of this run.

Lesson 12 restates each conclusion, gathers the evidence that lessons 05-11
saved with :mod:`attnlab.course.results` (for the model that is running, in the same
run mode), re-runs a lesson headless when its results are missing, and
computes a verdict for each: "holds", "does not hold" or "cannot tell", with
the numbers behind it. Nothing here is a sentence about a result typed in
advance: every verdict is a function of the evidence.

The six conclusions (paraphrased from the source article):

1. Most heads learn a fixed pattern; only a few capture lexical or syntactic information.
2. Lower layers are more diverse; heads of upper layers converge.
3. Fewer heads make attention collapse onto the token itself (or onto [CLS]).
4. Multi-head attention works like an ensemble of weak learners (a random forest).
5. More heads is not always better.
6. Heads without visible lexical or syntactic structure may still help the task.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from attnlab.course import results
from attnlab.core.models import LoadedModel
from attnlab.course.verdicts import ClaimVerdict, combine

#: Lessons whose saved results the conclusions read.
SOURCES = (
    "05_reading_heatmaps",
    "06_perturbation",
    "08_layer_averaging",
    "09_head_diversity",
    "10_how_many_heads",
    "11_pruning_heads",
)

CLAIMS = {
    1: "most heads learn a fixed pattern; only a few capture lexical or syntactic information",
    2: "lower layers are more diverse; heads of upper layers converge",
    3: "with fewer heads, attention collapses onto the token itself (or onto a single token such as [CLS])",
    4: "multi-head attention is an ensemble of weak learners: no single head matters much, together they do",
    5: "more heads is not always better",
    6: "heads without visible lexical/syntactic structure may still help the task",
}


# --------------------------------------------------------------------------- gathering


@dataclass
class Evidence:
    """Saved results of earlier lessons for one model and run mode.

    Attributes:
        data: lesson name -> its saved record (None when unavailable).
        origin: lesson name -> ``"saved"``, ``"recomputed"`` or ``"missing"``.
    """

    data: dict[str, dict | None]
    origin: dict[str, str]

    def get(self, name: str) -> dict | None:
        return self.data.get(name)

    def table(self) -> str:
        return "\n".join(f"  {name:24s} {self.origin[name]}" for name in self.data)


def notebooks_dir() -> Path | None:
    """The course's ``notebooks/`` folder, if this is a checkout of the course."""
    for candidate in (Path.cwd(), Path.cwd().parent, Path(__file__).resolve().parents[1] / "notebooks"):
        folder = candidate if candidate.name == "notebooks" else candidate / "notebooks"
        if (folder / "00_tour.ipynb").exists():
            return folder
    return None


def model_setting(m: LoadedModel) -> str:
    """The ``ATTNLAB_MODEL`` value that makes a lesson load the same model as ``m``."""
    if m.source == "bundled":
        return "bundled"
    return m.path or m.name


def run_lesson(name: str, m: LoadedModel, *, timeout: int = 3600) -> None:
    """Execute ``notebooks/<name>.ipynb`` headless with the same model, mode and
    results folder, so that it saves its results for this run."""
    import nbformat
    from nbclient import NotebookClient

    folder = notebooks_dir()
    if folder is None or not (folder / f"{name}.ipynb").exists():
        raise FileNotFoundError(f"lesson notebook {name}.ipynb not found: run it yourself first")
    book = nbformat.read(str(folder / f"{name}.ipynb"), as_version=4)
    saved = {k: os.environ.get(k) for k in ("ATTNLAB_MODEL", "ATTNLAB_RESULTS", "MPLBACKEND")}
    os.environ["ATTNLAB_MODEL"] = model_setting(m)
    os.environ["ATTNLAB_RESULTS"] = str(results.results_dir().resolve())
    os.environ["MPLBACKEND"] = "Agg"
    try:
        NotebookClient(book, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def gather(
    m: LoadedModel,
    names: tuple[str, ...] = SOURCES,
    *,
    recompute: bool = True,
    runner: Callable[[str, LoadedModel], None] = run_lesson,
    progress: bool = True,
) -> Evidence:
    """Load each lesson's saved results for ``m``; re-run the lesson when they are missing.

    Args:
        recompute: re-run missing lessons (headless, same mode); False only reads.
        runner: how to re-run a lesson (tests pass a stand-in).
    """
    data: dict[str, dict | None] = {}
    origin: dict[str, str] = {}
    missing = []
    for name in names:
        data[name] = results.load(name, model=m.name)
        origin[name] = "saved" if data[name] is not None else "missing"
        if data[name] is None:
            missing.append(name)
    if recompute and missing:
        iterator = missing
        if progress:
            from tqdm.auto import tqdm

            iterator = tqdm(missing, desc="re-running lessons", unit="lesson")
        for name in iterator:
            try:
                runner(name, m)
            except Exception as exc:  # noqa: BLE001 - report, then judge with what we have
                print(f"could not re-run {name}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            data[name] = results.load(name, model=m.name)
            if data[name] is not None:
                origin[name] = "recomputed"
    return Evidence(data, origin)


# --------------------------------------------------------------------------- the six verdicts


def _missing(number: int, *names: str) -> ClaimVerdict:
    return ClaimVerdict(CLAIMS[number], "cannot tell",
                        {"missing evidence": ", ".join(names) + " (run those lessons first)"})


def conclusion_1(ev: Evidence, *, most: float = 0.5, few: float = 0.25) -> ClaimVerdict:
    """Fixed patterns dominate and few heads follow content.

    Part A (lesson 08): the share of heads whose per-query maps stay close to
    their mean map ("fixed") exceeds ``most``. Part B (lesson 06): the share of
    heads that follow the tokens rather than the positions under perturbation
    ("content followers") is at most ``few``. Both must hold.
    """
    avg, pert = ev.get("08_layer_averaging"), ev.get("06_perturbation")
    if avg is None or pert is None:
        return _missing(1, *[n for n, d in (("08_layer_averaging", avg), ("06_perturbation", pert)) if d is None])
    n_heads = int(np.asarray(avg["fixedness"]).size)
    fixed_share = len(avg["fixed_heads"]) / n_heads
    content_share = float(pert["content_follower_share"])
    part_a = "holds" if fixed_share > most else "does not hold"
    part_b = "holds" if content_share <= few else "does not hold"
    numbers = {"fixed heads (lesson 08)": f"{fixed_share:.0%}", "content followers (lesson 06)": f"{content_share:.0%}",
               "position followers (lesson 06)": f"{float(pert['position_follower_share']):.0%}",
               "part A: most heads fixed": part_a, "part B: few content heads": part_b}
    taxonomy = ev.get("05_reading_heatmaps")
    if taxonomy is not None:
        numbers["fixed-pattern labels (lesson 05)"] = f"{float(taxonomy['fixed_share']):.0%}"
    return ClaimVerdict(CLAIMS[1], combine([part_a, part_b]), numbers)


def conclusion_2(ev: Evidence) -> ClaimVerdict:
    """Within-layer dispersion of heads shrinks with depth (lesson 09's trend verdict),
    with lesson 08's "more fixed with depth" shown beside it."""
    div = ev.get("09_head_diversity")
    if div is None:
        return _missing(2, "09_head_diversity")
    disp = [float(x) for x in div["dispersion"]]
    numbers = {"dispersion first -> last layer": f"{disp[0]:.3f} -> {disp[-1]:.3f}",
               "slope per layer": f"{float(div['slope']):+.3f} [{div['slope_ci'][0]:+.3f}, {div['slope_ci'][1]:+.3f}]",
               "Spearman rho with depth": f"{float(div['spearman']):+.2f}"}
    avg = ev.get("08_layer_averaging")
    if avg is not None:
        numbers["fixedness grows with depth (lesson 08)"] = avg["verdicts"].get("patterns more fixed with depth", "?")
    return ClaimVerdict(CLAIMS[2], str(div["verdict"]), numbers)


def conclusion_3(ev: Evidence) -> ClaimVerdict:
    """Lesson 10's regrouping verdict (12 heads merged into fewer)."""
    heads = ev.get("10_how_many_heads")
    if heads is None:
        return _missing(3, "10_how_many_heads")
    numbers = {k: _tidy(v) for k, v in heads.get("collapse_numbers", {}).items()}
    return ClaimVerdict(CLAIMS[3], str(heads["collapse_verdict"]), numbers)


def _tidy(value):
    """Saved numbers come back as text; show long decimals with 3 digits."""
    try:
        return f"{float(value):.3f}"
    except (TypeError, ValueError):
        return value


def conclusion_4(ev: Evidence, *, weak: float = 0.25, strong: float = 0.5, matters: float = 0.1) -> ClaimVerdict:
    """No single head matters much, yet together the heads do.

    From lesson 11: ``D`` = the largest loss increase reached on any pruning
    curve (removing many heads). Part A (each head is a weak learner): the
    largest single-head ablation effect is at most ``weak x D``; it does not
    hold when one head alone costs at least ``strong x D``. Part B (the
    ensemble carries the work): removing many heads clearly hurts, ``D`` is at
    least ``matters`` x the unpruned loss.
    """
    pr = ev.get("11_pruning_heads")
    if pr is None:
        return _missing(4, "11_pruning_heads")
    base = float(pr["base_loss"])
    effects = np.asarray(pr["ablation"], dtype=float)
    curves = [np.asarray(c, dtype=float) for key, c in pr["curves"].items() if key != "random"]
    curves += [np.asarray(c, dtype=float) for c in pr["curves"].get("random", [])]
    d = float(max(c.max() for c in curves) - base)
    top = float(effects.max())
    numbers = {"unpruned loss": f"{base:.4f}", "largest single-head effect": f"{top:+.4f}",
               "largest loss increase when pruning many (D)": f"{d:+.4f}",
               "single / D": f"{top / d:.2f}" if d > 0 else "n/a"}
    prunable = pr.get("prunable", {})
    if isinstance(prunable, dict) and "importance" in prunable:
        numbers["prunable at <=1% loss (importance order)"] = f"{float(prunable['importance']):.0%}"
    if d <= 0:
        return ClaimVerdict(CLAIMS[4], "cannot tell", numbers)
    part_a = "holds" if top <= weak * d else ("does not hold" if top >= strong * d else "cannot tell")
    part_b = "holds" if d >= matters * abs(base) else "does not hold"
    numbers.update({"part A: every head is weak": part_a, "part B: together they matter": part_b})
    return ClaimVerdict(CLAIMS[4], combine([part_a, part_b]), numbers)


def conclusion_5(ev: Evidence) -> ClaimVerdict:
    """Lesson 10's training study: is the largest head count the best?"""
    heads = ev.get("10_how_many_heads")
    if heads is None:
        return _missing(5, "10_how_many_heads")
    ppl = {int(h): float(s["ppl_mean"]) for h, s in heads["perplexity"].items()}
    sd = {int(h): float(s["ppl_sd"]) for h, s in heads["perplexity"].items()}
    n_seeds = max(int(s.get("seeds", 1)) for s in heads["perplexity"].values())
    most = max(ppl)
    best = min(ppl, key=ppl.get)
    se = lambda h: sd[h] / np.sqrt(max(n_seeds, 1))  # noqa: E731
    gap = ppl[most] - ppl[best]
    clearly = gap > 2 * np.hypot(se(most), se(best))
    if best != most and clearly:
        verdict = "holds"
    elif best == most and all(ppl[h] - ppl[most] > 2 * np.hypot(se(h), se(most)) for h in ppl if h != most):
        verdict = "does not hold"
    else:
        verdict = "cannot tell"
    numbers = {"best head count": best, f"perplexity at {best} heads": f"{ppl[best]:.3f}",
               f"perplexity at {most} heads": f"{ppl[most]:.3f}", "seeds": n_seeds,
               "row (A) pattern (lesson 10)": heads.get("head_count_verdict", "?")}
    return ClaimVerdict(CLAIMS[5], verdict, numbers)


def conclusion_6(ev: Evidence, *, top_share: float = 0.25) -> ClaimVerdict:
    """Among the most useful heads (top quarter by single-head ablation effect,
    lesson 11), are there heads that do not follow content (lesson 06)?"""
    pert, pr = ev.get("06_perturbation"), ev.get("11_pruning_heads")
    if pert is None or pr is None:
        return _missing(6, *[n for n, d in (("06_perturbation", pert), ("11_pruning_heads", pr)) if d is None])
    labels = np.asarray(pert["follower_labels"])
    effects = np.asarray(pr["ablation"], dtype=float)
    if labels.shape != effects.shape:
        return ClaimVerdict(CLAIMS[6], "cannot tell", {"problem": "lessons 06 and 11 ran on different models"})
    k = max(1, int(round(top_share * effects.size)))
    top = np.argsort(effects.ravel())[::-1][:k]
    non_content = [i for i in top if labels.ravel()[i] != "content"]
    share_all = float((labels != "content").mean())
    examples = ", ".join(f"L{i // labels.shape[1] + 1} H{i % labels.shape[1] + 1}" for i in non_content[:4]) or "none"
    numbers = {f"non-content heads among the top {k}": f"{len(non_content)} ({len(non_content) / k:.0%})",
               "non-content heads overall": f"{share_all:.0%}", "examples": examples,
               "objective": pr.get("objective", "?")[:60]}
    verdict = "holds" if non_content else ("does not hold" if share_all > 0 else "cannot tell")
    return ClaimVerdict(CLAIMS[6], verdict, numbers)


CONCLUSIONS = (conclusion_1, conclusion_2, conclusion_3, conclusion_4, conclusion_5, conclusion_6)


def all_conclusions(ev: Evidence) -> list[ClaimVerdict]:
    """The six verdicts, in the article's order."""
    return [fn(ev) for fn in CONCLUSIONS]


# --------------------------------------------------------------------------- figure

_COLOURS = {"holds": "#2e7d32", "does not hold": "#c62828", "cannot tell": "#9e9e9e"}


def plot_verdicts(verdicts: list[ClaimVerdict], *, model_name: str = ""):
    """A one-look summary: each conclusion with its verdict as a coloured tag."""
    import matplotlib.pyplot as plt
    import textwrap

    fig, ax = plt.subplots(figsize=(10, 0.85 * len(verdicts) + 0.8))
    ax.set_xlim(0, 1)
    ax.set_ylim(len(verdicts), -0.6)
    ax.axis("off")
    for i, v in enumerate(verdicts):
        ax.add_patch(plt.Rectangle((0.0, i - 0.38), 0.17, 0.76, color=_COLOURS.get(v.verdict, "#9e9e9e")))
        ax.text(0.085, i, v.verdict, ha="center", va="center", color="white", fontsize=10, weight="bold")
        ax.text(0.19, i, f"{i + 1}. " + "\n".join(textwrap.wrap(v.claim, 80)), va="center", fontsize=10)
    title = "The source article's six conclusions, checked"
    ax.set_title(title + (f" on {model_name}" if model_name else ""), loc="left", fontsize=12)
    fig.tight_layout()
    return fig
