"""Notebook helpers for authors of the course.

    python scripts/nb.py sync     # rewrite every lesson's standard cells (Colab, bring back, take away) and
                                  # every README badge from attnlab/_meta.py
    python scripts/nb.py strip    # remove outputs and execution counts
    python scripts/nb.py check    # exit 1 if a notebook has outputs, or a Colab cell or badge is stale

``sync`` writes the English lessons' Colab cells (install the course at the
version's tag), rebuilds the Chinese lessons from them (scripts/zh_notebooks.py),
and points every Colab and Binder badge of README.md and README.zh-CN.md at the
version's tag: a fork changes ``REPO`` (and a release ``VERSION``) in
``attnlab/_meta.py`` and runs ``sync``.

From Python, ``new_notebook(cells)`` builds a lesson whose first cell is the
standard Colab install cell: ``cells`` is a list of ``("md", text)`` or
``("code", source)``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attnlab._meta import GIT_URL, TAG, binder_url, colab_url, requirement  # noqa: E402
from attnlab.core.language import lessons_folder  # noqa: E402

COLAB_MARKER = "# Colab set-up"
BRING_BACK_MARKER = "# Bring your work back"
TAKE_WORK_MARKER = "# Take your work with you"
READMES = (ROOT / "README.md", ROOT / "README.zh-CN.md")
#: a Colab or Binder badge's address of a lesson, whatever repository and version it names now
BADGE = re.compile(r"https://colab\.research\.google\.com/github/[^/\s)]+/[^/\s)]+/blob/[^/\s)]+/"
                   r"notebooks/(?P<czh>zh/)?(?P<cname>[0-9]{2}_[a-z0-9_]+\.ipynb)"
                   r"|https://mybinder\.org/v2/gh/[^/\s)]+/[^/\s)]+/[^?\s)]+\?urlpath=lab/tree/"
                   r"notebooks/(?P<bzh>zh/)?(?P<bname>[0-9]{2}_[a-z0-9_]+\.ipynb)")


def colab_cell_source(url: str = GIT_URL, tag: str = TAG) -> str:
    """The first cell of every lesson: on Colab, install the course at this version's tag."""
    return (
        f"{COLAB_MARKER}: on Google Colab, install the course at the version of this notebook (the tag below),\n"
        "# with its offline Chinese model (Colab's own torch is kept); elsewhere nothing happens.\n"
        "# On Colab, first save a copy in Drive (File > Save a copy in Drive): only that copy keeps your edits\n"
        "# when the session ends; the last cell packs your results and this notebook to download.\n"
        "import sys\n"
        "if \"google.colab\" in sys.modules:\n"
        f"    %pip install -q \"{requirement(url, tag)}\"\n"
    )


def bring_back_cell_source() -> str:
    """The cell after the Colab cell (after the language cell in the Chinese edition): bring back the work a
    student took from an earlier Colab or Binder session (:mod:`attnlab.tools.take_work`)."""
    return (
        f"{BRING_BACK_MARKER}: an attnlab-work-*.zip taken from an earlier Colab or Binder session and\n"
        "# uploaded next to this notebook comes back into the results folder, once (the last cell packs it).\n"
        "from attnlab.tools.take_work import bring_back_here\n"
        "bring_back_here()\n"
    )


def take_work_cell_source() -> str:
    """The last cell of every lesson: on Colab or Binder, pack the student's results and attempts into
    one file to download (the bring-back cell near the top restores it next time); elsewhere say where they are kept."""
    return (
        f"{TAKE_WORK_MARKER}: on Colab or Binder your results and checked attempts are packed into one\n"
        "# attnlab-work-<date>-<time>.zip to download (upload it next time and run the lesson from the top);\n"
        "# elsewhere they stay in the results folder.\n"
        "from attnlab.tools.take_work import offer\n"
        "offer()\n"
    )


def _badge(match: re.Match) -> str:
    if match.group("cname"):
        return colab_url(match.group("cname"), "zh" if match.group("czh") else "en")
    return binder_url(match.group("bname"), "zh" if match.group("bzh") else "en")


def synced_readme(text: str) -> str:
    """``text`` with every lesson badge pointing at this repository and version."""
    return BADGE.sub(_badge, text)


def new_notebook(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    out = [nbformat.v4.new_code_cell(colab_cell_source()), nbformat.v4.new_code_cell(bring_back_cell_source())]
    for kind, src in cells:
        src = src.strip("\n")
        out.append(nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src))
    out.append(nbformat.v4.new_code_cell(take_work_cell_source()))
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
    """The English lessons (the Chinese ones are built from them)."""
    return sorted(lessons_folder(ROOT, "en").glob("*.ipynb"))


def all_notebooks() -> list[Path]:
    """The lessons of both editions."""
    return notebooks() + sorted(lessons_folder(ROOT, "zh").glob("*.ipynb"))


def readme_problems() -> list[str]:
    found = []
    for readme in READMES:
        text = readme.read_text(encoding="utf-8")
        stale = {m.group(0) for m in BADGE.finditer(text) if m.group(0) != _badge(m)}
        if stale:
            found.append(f"{readme.name}: {len(stale)} badge address(es) not at {TAG} of this repository, "
                         f"e.g. {sorted(stale)[0]} (run `python scripts/nb.py sync`)")
    return found


def problems(path: Path) -> list[str]:
    nb = nbformat.read(str(path), as_version=4)
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count")):
            found.append(f"{path.name}: cell {i} has outputs or an execution count (run `python scripts/nb.py strip`)")
    def code_of(text: str) -> list[str]:  # the Chinese edition translates the comments, never the code
        return [line for line in text.strip().splitlines() if not line.lstrip().startswith("#")]

    english = path.parent.name != "zh"
    standard = ((0, colab_cell_source(), "first cell is not the standard Colab cell"),
                (1 if english else 2, bring_back_cell_source(), "the cell after the Colab (and language) cell is "
                 "not the standard bring-your-work-back cell"),
                (-1, take_work_cell_source(), "last cell is not the standard take-your-work cell"))
    for index, source, what in standard:
        if len(nb.cells) < 3 or code_of(nb.cells[index].source) != code_of(source) or (
                english and nb.cells[index].source.strip() != source.strip()):
            found.append(f"{path.name}: {what} (run `python scripts/nb.py sync`)")
    return found


def sync_standard_cells(nb: nbformat.NotebookNode, stem: str) -> None:
    """Write a lesson's standard cells: the first (Colab set-up), the second (bring your work back) and the
    last (take your work with you)."""
    if nb.cells and nb.cells[0].source.startswith(COLAB_MARKER):
        nb.cells[0].source = colab_cell_source()
    else:
        nb.cells.insert(0, nbformat.v4.new_code_cell(colab_cell_source()))
    if len(nb.cells) > 1 and nb.cells[1].source.startswith(BRING_BACK_MARKER):
        nb.cells[1].source = bring_back_cell_source()
    else:
        back = nbformat.v4.new_code_cell(bring_back_cell_source())
        back["id"] = f"c{stem}-bring-back"
        nb.cells.insert(1, back)
    if nb.cells[-1].cell_type == "code" and nb.cells[-1].source.startswith(TAKE_WORK_MARKER):
        nb.cells[-1].source = take_work_cell_source()
    else:
        last = nbformat.v4.new_code_cell(take_work_cell_source())
        last["id"] = f"c{stem}-take-work"
        nb.cells.append(last)


def _rebuild_chinese() -> None:
    """Write the Chinese lessons anew from the English ones (their Colab cells come along)."""
    from attnlab.tools.zh_edition import lessons

    for lesson in lessons(ROOT):
        lesson.chinese.write_text(lesson.built_text(), encoding="utf-8")


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "check"
    if cmd in ("sync", "strip"):
        for p in notebooks():
            nb = nbformat.read(str(p), as_version=4)
            if cmd == "sync":
                sync_standard_cells(nb, p.stem.split("_")[0])
            strip(nb)
            nbformat.write(nb, str(p))
        if cmd == "sync":
            _rebuild_chinese()
            for readme in READMES:
                readme.write_text(synced_readme(readme.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if cmd == "check":
        bad = [msg for p in all_notebooks() for msg in problems(p)] + readme_problems()
        print("\n".join(bad) if bad else f"{len(all_notebooks())} notebooks and {len(READMES)} READMEs clean")
        return 1 if bad else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
