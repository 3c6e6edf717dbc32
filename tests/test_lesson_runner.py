"""The headless lesson runner: each lesson's kernel ends with it, also after an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from attnlab.tools.lesson_runner import execute_notebook, lesson_kernel  # noqa: E402


def _book(*sources: str):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return book


def _kernel_pid(book) -> int:
    """The pid printed by the notebook's first cell."""
    return int("".join(o.get("text", "") for o in book.cells[0].outputs).strip())


def _running(pid: int) -> bool:
    """Is ``pid`` a live process (not gone, not a zombie waiting to be reaped)?"""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not Path("/proc").is_dir()  # no /proc here: the signal test is all there is
    state = next((line for line in status.read_text().splitlines() if line.startswith("State:")), "")
    return "zombie" not in state and "(dead)" not in state


def test_the_kernel_ends_with_the_notebook(tmp_path):
    book = _book("import os; print(os.getpid())", "x = 1")
    execute_notebook(book, tmp_path, timeout=120)
    pid = _kernel_pid(book)
    assert pid != os.getpid()
    assert not _running(pid)


def test_the_kernel_and_its_socket_folder_end_after_an_error(tmp_path):
    from nbclient.exceptions import CellExecutionError

    book = _book("import os; print(os.getpid())", "raise ValueError('a broken lesson')")
    seen = {}
    with pytest.raises(CellExecutionError, match="a broken lesson"):
        with lesson_kernel(book, tmp_path, timeout=120) as client:
            seen["sockets"] = Path(client.km.ip).parent
            assert seen["sockets"].is_dir()
            for index, cell in enumerate(book.cells):
                client.execute_cell(cell, index)
    pid = _kernel_pid(book)
    assert not _running(pid)
    assert not seen["sockets"].exists()


def test_a_model_set_aside_holds_no_weights_and_comes_back_bit_for_bit(tiny_en):
    """While lesson 12 re-runs a lesson, its own model's weights wait on disk (one model in memory)."""
    import torch

    from attnlab.tools.lesson_runner import model_set_aside

    enc = tiny_en.encode(["the cat sat on the mat"])
    with torch.no_grad():
        before = tiny_en.model(**enc).last_hidden_state.clone()
    params = dict(tiny_en.model.named_parameters())
    copies = {k: p.detach().clone() for k, p in params.items()}
    with model_set_aside(tiny_en):
        assert sum(p.numel() for p in tiny_en.model.parameters()) == 0
    assert all(dict(tiny_en.model.named_parameters())[k] is params[k] for k in params)  # same objects
    assert all(torch.equal(params[k], copies[k]) for k in params)
    with torch.no_grad():
        assert torch.equal(tiny_en.model(**enc).last_hidden_state, before)
