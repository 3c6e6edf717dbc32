"""Collect every text a lesson's figures show, while the lesson runs in a kernel.

A test that executes a lesson headless sees its printed output, but not the
words drawn inside its figures (titles, axis labels, tick labels, legends,
suptitles, annotations). Run :func:`install` in the kernel before the lesson's
first cell and every figure created afterwards is remembered; after each cell
its texts are appended to a JSON-lines file, one line per figure::

    {"execution_count": 7, "texts": ["层", "头", "第 1 层的全部头", ...]}

``execution_count`` is the cell's execution count, as the executed notebook
records it, so a text can be traced back to the cell that drew it.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.figure
from IPython import get_ipython

from attnlab.tools import english_prose
from attnlab.viz.plot import texts_of

_state: dict[str, object] = {"path": None, "figures": [], "installed": False}


def _remember(fig) -> None:
    figures = _state["figures"]
    if all(f is not fig for f in figures):  # type: ignore[union-attr]
        figures.append(fig)  # type: ignore[union-attr]


def _after_cell(result) -> None:
    figures, _state["figures"] = _state["figures"], []
    path = Path(str(_state["path"]))
    with path.open("a", encoding="utf-8") as out:
        for fig in figures:  # type: ignore[union-attr]
            try:
                texts = texts_of(fig)
            except Exception as exc:  # a figure that cannot be drawn any more: say so, do not fail the lesson
                texts = [f"<figure could not be drawn: {exc}>"]
            out.write(json.dumps({"execution_count": result.execution_count, "texts": texts},
                                 ensure_ascii=False) + "\n")


def install(path: str | Path) -> None:
    """Start remembering figures in this kernel; after every cell write their texts to ``path``."""
    _state["path"] = str(path)
    if _state["installed"]:
        return
    original = matplotlib.figure.Figure.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _remember(self)

    matplotlib.figure.Figure.__init__ = init
    get_ipython().events.register("post_run_cell", _after_cell)
    _state["installed"] = True


def hook_source(path: str | Path) -> str:
    """The code of a cell that installs the hook (run it before the lesson's first cell)."""
    return f"from attnlab.tools.figure_texts import install\ninstall({str(path)!r})"


HOOK_ID = "figure-texts"


def reader_lines(book, figures: list[dict]) -> list[tuple[str, str]]:
    """``(where, line)`` for every line the reader of an executed notebook ``book`` sees: printed
    text, rich outputs (HTML as its visible text), error messages, and the texts of every figure in
    ``figures`` (:func:`read`'s records; ``where`` = cell id, ``"<id> (figure)"`` for a figure)."""
    by_count = {c.execution_count: c.id for c in book.cells if c.cell_type == "code"}
    out = []
    for cell in book.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = output.get("text", "") + data.get("text/markdown", "")
            if "text/html" in data:
                text += english_prose.visible_text(data["text/html"])
            elif "text/plain" in data and "application/vnd.jupyter.widget-view+json" not in data:
                text += data["text/plain"]
            if output.get("output_type") == "error":
                text += f"{output.get('ename')}: {output.get('evalue')}"
            out += [(cell.id, line) for line in text.splitlines() if line.strip()]
    for record in figures:
        where = f"{by_count.get(record['execution_count'], '?')} (figure)"
        out += [(where, line) for text in record["texts"] for line in text.splitlines() if line.strip()]
    return out


def read(path: str | Path) -> list[dict]:
    """The records :func:`install` wrote: ``[{"execution_count": int, "texts": [str, ...]}, ...]``."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
