"""Every lesson runs top to bottom in smoke mode, and is committed clean.

Each lesson runs with its own empty results folder, so no test depends on
another having run first. Lesson 12 reads what lessons 05-11 saved: its
folder is seeded with hand-made records of those lessons for the model the
notebook will load (tests/lesson_records.py), so it judges all six
conclusions without re-running any lesson.

The record each lesson that lesson 12 reads saved in its smoke run is then
compared with the record ``attnlab report``'s part builds from the same model
and inputs (``test_records_compared_on_notebooks``, on the same worker).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

import attnlab as al
import lab_runs  # tests/lab_runs.py
import lesson_records as rec  # tests/lesson_records.py
from attnlab.course import registry, report_parts, results
from attnlab.tools.lesson_runner import execute_notebook
from record_comparison import contained, left_out, plain  # tests/record_comparison.py

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
sys.path.insert(0, str(ROOT / "scripts"))

#: the lessons whose saved record is compared with the report's: each record lesson 12 reads, by its file name
#: (the lesson's notebook is named the same)
COMPARED = {r.name: r for r in registry.EVIDENCE}
#: what each of those notebooks measured with, as expressions of its own names, read in its kernel after its
#: last cell: the precision of its forward passes, the sizes of the report's part (sized parts: one look,
#: minimum and maximum the notebook's count) and the fields it chooses rather than measures
NOTEBOOK_INPUTS = {
    "patterns": {"precision": '"fp32"', "sizes": {"n_boot": "n_boot"}},
    "perturbation": {"precision": "precision", "sizes": {"queries": "[n_queries, n_queries]", "n_boot": "n_boot"},
                     "chosen": {"chosen_layer": "layer"}},
    "averaging": {"precision": '"fp32"',
                  "sizes": {"queries": "[MIN_UNITS * SHARD, N_QUERIES]", "shard": "SHARD", "control": "N_CONTROL",
                            "n_boot": "al.pick(1000, 100)", "norm_queries": "N_NORM"}},
    "diversity": {"precision": "precision", "sizes": {"texts": "[N_QUERIES, N_QUERIES]", "n_boot": "n_boot"}},
    "head_count": {"precision": '"fp32"', "sizes": {"texts": "n_texts", "seeds": "list(seeds)"}},
    "pruning": {"precision": "precision",
                "sizes": {"importance_texts": "n_importance", "eval_texts": "n_eval", "probe_texts": "n_probe",
                          "covering_sets": "al.pick(20, 4)"}},
    "attention_limits": {"precision": '"fp32"',
                         "sizes": {"sink_texts": "N_SINK_TEXTS", "intervene": "N_INTERVENE", "scored": "N_SCORED",
                                   "mean_queries": "N_MEAN", "replace": "N_REPLACE", "orders": "N_ORDERS"}},
}
#: the file in a lesson's results folder its inputs are written to
INPUTS_FILE = "notebook_inputs.json"
#: the results folder of each compared lesson that ran in smoke mode in this session (on this worker)
RUNS: dict[str, Path] = {}


def with_group(stem: str, *values) -> object:
    """A parameter for ``stem``'s lesson: the compared lessons' run and comparison on one worker, in order."""
    marks = [pytest.mark.xdist_group(f"lesson_{stem}")] if stem in COMPARED else []
    return pytest.param(*values, id=f"{stem}.ipynb" if values and isinstance(values[0], Path) else stem, marks=marks)


def inputs_cell(key: str) -> str:
    """The code that writes the notebook's :data:`NOTEBOOK_INPUTS` into its results folder as JSON."""
    spec = NOTEBOOK_INPUTS[key]
    def mapping(exprs: dict[str, str]) -> str:
        return "{" + ", ".join(f"{name!r}: {expr}" for name, expr in exprs.items()) + "}"
    return (f"import json as _json\nfrom attnlab.course import results as _results\n"
            f"(_results.results_dir() / {INPUTS_FILE!r}).write_text(_json.dumps({{"
            f"'precision': {spec['precision']}, 'sizes': {mapping(spec['sizes'])}, "
            f"'chosen': {mapping(spec.get('chosen', {}))}}}), encoding='utf-8')\n")


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
            results.save(type(record).file_name, record, model=m)
        rec.save_hand_made_twin(m)
    finally:
        if before is None:
            os.environ.pop("ATTNLAB_RESULTS", None)
        else:
            os.environ["ATTNLAB_RESULTS"] = before


#: lessons another test runs in smoke mode anyway, on the worker of its group: 04 in JupyterLab (the browser
#: test, tests/lab_runs.py). (Lesson 05, which the course to read's command also runs, keeps its own run: its
#: record is compared with the report's, :data:`COMPARED`, so that run must save what it measured with.)
RUN_ELSEWHERE = {lab_runs.LESSON: lab_runs.GROUP}


def run_elsewhere(path: Path):
    """The executed lesson ``path`` as another test of this worker ran it (:data:`RUN_ELSEWHERE`), or None:
    for every other lesson, and for lesson 04 where the browser test recorded no run here."""
    if path.stem == lab_runs.LESSON:
        shared = lab_runs.RUNS.get("en")
        return shared.book if shared is not None else None
    return None


@pytest.mark.notebooks
@pytest.mark.parametrize("path", [pytest.param(p, marks=RUN_ELSEWHERE[p.stem], id=p.name) if p.stem in RUN_ELSEWHERE
                                  else with_group(p.stem, p) for p in NOTEBOOKS])
def test_notebook_runs_in_smoke_mode(path, tmp_path, monkeypatch):
    """Lesson 04 is read from the run the browser test makes of it (:data:`RUN_ELSEWHERE`)."""
    import nbformat

    shared = run_elsewhere(path)
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
    if path.stem in COMPARED:  # after the last cell: what it measured with, for the comparison with the report
        book.cells.append(nbformat.v4.new_code_cell(inputs_cell(COMPARED[path.stem].key)))
    execute_notebook(book, ROOT / "notebooks")
    if path.stem in COMPARED:
        RUNS[path.stem] = results_dir
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


def moved(value: object) -> object:
    """A plain value with its first number moved by one, or None when it holds no number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value + 1
    items = (list(value.items()) if isinstance(value, dict)
             else list(enumerate(value)) if isinstance(value, list) else [])
    for key, item in items:
        changed = moved(item)
        if changed is not None:
            copy = dict(value) if isinstance(value, dict) else list(value)
            copy[key] = changed
            return copy
    return None


def planted(notebook, report):
    """The notebook's record with the first number of the first field the report fills moved by one."""
    for f in dataclasses.fields(report):
        changed = None if left_out(report, f) else moved(plain(getattr(notebook, f.name)))
        if changed is not None:
            return type(notebook).from_record({**notebook.to_record(), f.name: changed})
    raise AssertionError(f"{type(report).__name__}: no number to move")


@pytest.mark.notebooks
@pytest.mark.parametrize("lesson", [with_group(stem, stem) for stem in COMPARED])
def test_records_compared_on_notebooks(lesson, monkeypatch):
    """The record the lesson's smoke run saved holds the record ``attnlab report``'s part builds on the same model
    and inputs (the notebook may save more: its own fields and keys); a number moved in it is caught."""
    folder = RUNS.get(lesson)
    if folder is None:
        pytest.skip(f"{lesson}.ipynb did not run in smoke mode in this session")
    record = COMPARED[lesson]
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    notebook = results.load(record.name, record.kind, folder=folder)
    assert notebook is not None, f"{lesson}.ipynb saved no {record.name}"
    inputs = json.loads((folder / INPUTS_FILE).read_text(encoding="utf-8"))
    m = al.load_model("auto", verbose=False)  # the model the notebook loaded
    monkeypatch.setattr(report_parts, "sizes_of", lambda part: inputs["sizes"])
    made, _stopping = report_parts.PARTS[record.key][2](m, precision=inputs["precision"])
    made = dataclasses.replace(made, **inputs["chosen"])
    found = contained(made, notebook)
    assert not found, f"{lesson}: the notebook's record and the report's differ at\n" + "\n".join(found[:20])
    assert contained(made, planted(notebook, made)), "a planted difference is not seen"
