"""Lesson 04 as the browser test ran it in JupyterLab, in each edition, for the headless checks of the same
lesson: every lesson runs in smoke mode (tests/test_notebooks.py) and the Chinese edition shows only Chinese
(tests/test_zh_edition.py). Those checks read the browser's run where the browser test recorded one in this
test process (its tests and theirs share one test worker, the ``browser`` xdist group, and come after it),
so that lesson 04 runs once per edition instead of twice. Where there was none (no Chromium, a run that
stopped on an error, the checks run alone), they run the lesson themselves, as for every other lesson.
"""

from __future__ import annotations

from dataclasses import dataclass

import nbformat
import pytest

from attnlab.tools import figure_texts

#: the lesson the browser test runs in JupyterLab
LESSON = "04_multi_head_splitting"
#: the browser test's worker: the tests that read its runs share it
GROUP = pytest.mark.xdist_group("browser")


@dataclass
class LabRun:
    """One edition's run of :data:`LESSON` in JupyterLab: the executed notebook (without the cell that
    records the figures' texts) and every figure's texts as that cell recorded them ([] where none did)."""

    book: nbformat.NotebookNode
    figures: list[dict]


#: edition ("en", "zh") -> its run, recorded by tests/test_browser.py in this process
RUNS: dict[str, LabRun] = {}


def record(edition: str, notebook: dict, figures: list[dict]) -> LabRun:
    """Keep ``edition``'s executed notebook (JupyterLab's model of it, as JSON) and its figures' texts for
    the headless checks; the figure hook's cell is taken out, as :func:`attnlab.tools.lesson_runner.execute_recording`
    takes it out."""
    book = nbformat.from_dict(notebook)
    book.cells = [c for c in book.cells if c.get("id") != figure_texts.HOOK_ID]
    RUNS[edition] = LabRun(book=book, figures=figures)
    return RUNS[edition]


def ran_clean(book: nbformat.NotebookNode) -> list[str]:
    """What keeps ``book`` from being a complete run: each code cell that did not run or that shows an error
    (an empty list for a lesson that ran top to bottom, as a headless run that raised nothing)."""
    problems = []
    for cell in book.cells:
        if cell.cell_type != "code":
            continue
        if cell.get("execution_count") is None:
            problems.append(f"{cell.get('id')}: did not run")
        problems += [f"{cell.get('id')}: {o.get('ename')}: {o.get('evalue')}" for o in cell.get("outputs", [])
                     if o.get("output_type") == "error"]
    return problems
