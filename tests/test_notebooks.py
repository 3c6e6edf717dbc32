"""Every lesson runs top to bottom in smoke mode, and is committed clean.

Each lesson runs with its own empty results folder, so no test depends on
another having run first. Lesson 12 reads what lessons 05-11 saved: its
folder is seeded with hand-made records of those lessons for the model the
notebook will load (tests/lesson_records.py), so it judges all six
conclusions without re-running any lesson.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import attnlab as al
import lab_runs  # tests/lab_runs.py
import lesson_records as rec  # tests/lesson_records.py
import zh_course  # tests/zh_course.py
from attnlab.course import results
from attnlab.course.lesson_results import RESULT_NAMES
from attnlab.tools.lesson_runner import execute_notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
sys.path.insert(0, str(ROOT / "scripts"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_committed_clean(path):
    import nb  # scripts/nb.py

    assert nb.problems(path) == []


def test_clean_check_catches_outputs(tmp_path):
    """The hygiene check really fails on a notebook with outputs."""
    import nbformat
    import nb

    book = nb.new_notebook([("code", "print(1)")])
    book.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    book.cells[1].execution_count = 1
    path = tmp_path / "dirty.ipynb"
    nbformat.write(book, str(path))
    assert any("outputs" in p for p in nb.problems(path))


def test_a_run_read_from_jupyterlab_must_be_complete():
    """The check of a lesson run read from the browser test (tests/lab_runs.py) fails on a cell that did not
    run and on one that shows an error, as a headless run would stop there."""
    import nbformat

    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell("x = 1", id="ran"), nbformat.v4.new_code_cell("1 / 0", id="failed"),
                  nbformat.v4.new_code_cell("y = 2", id="left")]
    book.cells[0].execution_count, book.cells[1].execution_count = 1, 2
    book.cells[1].outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero")]
    assert lab_runs.ran_clean(book) == ["failed: ZeroDivisionError: division by zero", "left: did not run"]
    book.cells[1].outputs, book.cells[2].execution_count = [], 3
    assert lab_runs.ran_clean(book) == []


def seed_earlier_lessons(folder: Path) -> None:
    """Save records of lessons 05-11 for the model ``"auto"`` loads here, in smoke mode."""
    m = al.load_model("auto", verbose=False)
    shape = {"n_layers": m.n_layers, "n_heads": m.n_heads}
    regroup = [rec.group(m.n_heads, 0.2, 0.3, 0.6), rec.group(2, 0.7, 0.1, 0.3)]
    records = [rec.patterns(**shape), rec.perturbation(**shape), rec.averaging(**shape), rec.diversity(),
               rec.head_count(regroup=regroup), rec.pruning(**shape)]
    before = os.environ.get("ATTNLAB_RESULTS")
    os.environ["ATTNLAB_RESULTS"] = str(folder)
    try:
        for record in records:
            results.save(RESULT_NAMES[type(record)], record, model=m)
        rec.save_hand_made_twin(m)
    finally:
        if before is None:
            os.environ.pop("ATTNLAB_RESULTS", None)
        else:
            os.environ["ATTNLAB_RESULTS"] = before


#: lessons another test runs in smoke mode anyway, on the worker of its group: 04 in JupyterLab (the browser
#: test, tests/lab_runs.py), 05 by the course to read's command (conftest's ``html_course``)
RUN_ELSEWHERE = {lab_runs.LESSON: lab_runs.GROUP, zh_course.LESSONS[0]: zh_course.GROUP}


def run_elsewhere(path: Path, request: pytest.FixtureRequest):
    """The executed lesson ``path`` as another test of this worker ran it (:data:`RUN_ELSEWHERE`), or None:
    for every other lesson, and for lesson 04 where the browser test recorded no run here."""
    import nbformat

    if path.stem == lab_runs.LESSON:
        shared = lab_runs.RUNS.get("en")
        return shared.book if shared is not None else None
    if path.stem == zh_course.LESSONS[0]:
        return nbformat.read(str(request.getfixturevalue("html_course").executed / path.name), as_version=4)
    return None


@pytest.mark.notebooks
@pytest.mark.parametrize("path", [pytest.param(p, marks=RUN_ELSEWHERE[p.stem]) if p.stem in RUN_ELSEWHERE else p
                                  for p in NOTEBOOKS], ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_smoke_mode(path, tmp_path, monkeypatch, request):
    """Lessons 04 and 05 are read from the runs other tests make of them (:data:`RUN_ELSEWHERE`)."""
    import nbformat

    shared = run_elsewhere(path, request)
    if shared is not None:
        assert lab_runs.ran_clean(shared) == []
        return
    results_dir = tmp_path / "results"  # this lesson's own, empty at the start
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # inline backend, as in Jupyter
    monkeypatch.setenv("ATTNLAB_RESULTS", str(results_dir))
    if path.stem == "12_conclusions":
        seed_earlier_lessons(results_dir)
    book = nbformat.read(str(path), as_version=4)
    execute_notebook(book, ROOT / "notebooks")
    if path.stem == "12_conclusions":
        saved = [c for c in book.cells if c.cell_type == "code" and "evidence.table()" in c.source]
        text = "".join(o.get("text", "") for c in saved for o in c.outputs)
        assert "recomputed" not in text and "missing" not in text  # judged on the seeded records only
        twin_cell = [c for c in book.cells if c.cell_type == "code" and "twin_evidence.twin_for" in c.source]
        said = "".join(o.get("text", "") for c in twin_cell for o in c.outputs)
        assert "from your own report" in said  # the seeded twin, not a run made in the test
    if path.stem in TWIN_LINES:  # the untrained twin measured in the lesson, its numbers beside the model's
        twin_cells = [c for c in book.cells if c.cell_type == "code" and "shuffled_for_a_while(m)" in c.source]
        said = "".join(o.get("text", "") for c in twin_cells for o in c.outputs)
        assert twin_cells and all(line in said for line in TWIN_LINES[path.stem]), said
        checked = [c for c in book.cells if c.cell_type == "code" and "against_the_twin" in c.source]
        shown = "".join(o.get("text", "") for c in checked for o in c.outputs)
        assert shown.count("untrained twin") >= 5 and "x floor" in shown, shown


#: lines each lesson with an untrained twin prints beside the model's numbers
TWIN_LINES = {
    "13_attention_limits": ("the untrained twin: the same model", "mean Spearman rho with leaving out: model",
                            "rollout minus raw attention: model", "untrained twin"),
    "08_layer_averaging": ("the untrained twin: the same model",
                           "heads that follow a fixed pattern (fixed or uniform): model", "untrained twin:"),
}
