"""Every lesson runs top to bottom in smoke mode, and is committed clean."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def shared_results(tmp_path_factory):
    """One results folder for the whole run: lessons execute in order, so lesson 12
    reads what lessons 05-11 saved, as it does for a student going through the course."""
    return tmp_path_factory.mktemp("results")


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_smoke_mode(path, shared_results):
    import nbformat
    from nbclient import NotebookClient

    book = nbformat.read(str(path), as_version=4)
    env_before = dict(os.environ)
    os.environ["ATTNLAB_SMOKE"] = "1"
    os.environ.pop("MPLBACKEND", None)  # inline backend, as in Jupyter
    os.environ["ATTNLAB_RESULTS"] = str(shared_results)
    try:
        client = NotebookClient(book, timeout=900, kernel_name="python3",
                                resources={"metadata": {"path": str(ROOT / "notebooks")}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
