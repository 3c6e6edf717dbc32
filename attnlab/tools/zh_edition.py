"""The Chinese edition of the lessons, built from the English ones: one source of truth for the code.

Each English lesson ``notebooks/NN_name.ipynb`` has a translation catalogue
``notebooks/zh/translations/NN_name.md``: a sequence of blocks, one per
markdown cell, keyed by the cell's stable id and by a fingerprint of the
English text it was translated from::

    <!-- cell: c05-03 | en: 1a2b3c4d -->
    (the Chinese markdown of cell c05-03, any number of lines)

``en`` is the first 8 hex digits of the SHA-256 of the English cell's source
(UTF-8). :func:`build` writes ``notebooks/zh/NN_name.ipynb``: the English
notebook's cells in the same order, code cells untouched (same ids, same
source), markdown cells replaced by their translation, and one extra code cell
(id ``zh-lang``) after the Colab set-up cell that switches the printed
language to Chinese. :func:`check` lists what keeps the edition from being in
step: a markdown cell with no translation, a translation made from English
that has changed since (stale), a block whose cell id no longer exists.

``scripts/zh_notebooks.py`` is the command line; ``tests/test_zh_edition.py``
fails while any lesson has a problem or a committed Chinese notebook is not
what :func:`build` writes.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

#: id of the code cell that makes a Chinese lesson print in Chinese
LANG_CELL_ID = "zh-lang"
LANG_CELL_SOURCE = (
    "# 中文版：本课打印的结论、练习反馈和图中的文字都用中文（al.set_language(\"en\") 换回英文）。\n"
    "import attnlab as al\n"
    "\n"
    "al.set_language(\"zh\")"
)
COLAB_MARKER = "# Colab set-up"

_MARKER = re.compile(r"^<!-- cell: (?P<id>[A-Za-z0-9_.-]+) \| en: (?P<hash>[0-9a-f]{8}) -->[ \t]*$", re.M)
_ANY_MARKER = re.compile(r"^<!--\s*cell:.*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def english_hash(source: str) -> str:
    """First 8 hex digits of the SHA-256 of ``source`` (UTF-8): the fingerprint a block records."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:8]


@dataclass(frozen=True)
class Block:
    """One translated cell: its id, the fingerprint of the English it was made from, the Chinese text."""

    cell_id: str
    en_hash: str
    text: str
    line: int = 0  # where its marker is in the catalogue file (1-based)


def parse(text: str, name: str = "translation") -> list[Block]:
    """The blocks of a catalogue file's ``text``, in order.

    Raises ValueError (naming ``name`` and the line) for a malformed marker, a
    cell id given twice, or text before the first marker other than HTML
    comments (it would belong to no cell and be lost).
    """
    markers = list(_MARKER.finditer(text))
    good = {m.start() for m in markers}
    for bad in _ANY_MARKER.finditer(text):
        if bad.start() not in good:
            line = text.count("\n", 0, bad.start()) + 1
            raise ValueError(f"{name}:{line}: malformed marker {bad.group(0)!r}; "
                             "write <!-- cell: cNN-MM | en: 8 hex digits -->")
    preamble = text[: markers[0].start()] if markers else text
    if _COMMENT.sub("", preamble).strip():
        raise ValueError(f"{name}: text before the first <!-- cell: ... --> marker belongs to no cell")
    blocks: list[Block] = []
    seen: dict[str, int] = {}
    for k, m in enumerate(markers):
        end = markers[k + 1].start() if k + 1 < len(markers) else len(text)
        line = text.count("\n", 0, m.start()) + 1
        cell_id = m.group("id")
        if cell_id in seen:
            raise ValueError(f"{name}:{line}: cell {cell_id} is translated twice (first at line {seen[cell_id]})")
        seen[cell_id] = line
        body = text[m.end():end].strip("\n").rstrip()
        blocks.append(Block(cell_id, m.group("hash"), body, line))
    return blocks


def format_block(cell_id: str, en_hash: str, text: str) -> str:
    """One block as it is written in a catalogue file (ends with a blank line)."""
    return f"<!-- cell: {cell_id} | en: {en_hash} -->\n{text.strip()}\n\n"


@dataclass(frozen=True)
class Problem:
    """Why a lesson's Chinese edition is not in step with the English one.

    ``kind`` is ``"missing"`` (a markdown cell with no translation),
    ``"stale"`` (translated from English that has changed since: ``english``
    is the text now, ``old_hash`` the fingerprint the block was made from),
    ``"unknown"`` (a block whose cell id is not in the English lesson) or
    ``"not markdown"`` (a block for a code cell: code is never translated).
    """

    lesson: str
    kind: str
    cell_id: str
    english: str = ""
    old_hash: str = ""

    def __str__(self) -> str:
        what = {"missing": "has no translation", "stale": "changed in English since it was translated",
                "unknown": "is translated but no longer exists in the English lesson",
                "not markdown": "is a code cell (code cells are copied, never translated)"}[self.kind]
        return f"{self.lesson}: cell {self.cell_id} {what}"


def check(english: nbformat.NotebookNode, blocks: list[Block], lesson: str = "") -> list[Problem]:
    """Every :class:`Problem` of one lesson: its English notebook and its catalogue's blocks."""
    cells = {c.id: c for c in english.cells}
    by_id = {b.cell_id: b for b in blocks}
    problems = []
    for cell in english.cells:
        if cell.cell_type != "markdown":
            continue
        block = by_id.get(cell.id)
        if block is None:
            problems.append(Problem(lesson, "missing", cell.id, cell.source))
        elif block.en_hash != english_hash(cell.source):
            problems.append(Problem(lesson, "stale", cell.id, cell.source, block.en_hash))
    for block in blocks:
        if block.cell_id not in cells:
            problems.append(Problem(lesson, "unknown", block.cell_id, old_hash=block.en_hash))
        elif cells[block.cell_id].cell_type != "markdown":
            problems.append(Problem(lesson, "not markdown", block.cell_id))
    return problems


def language_cell() -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(LANG_CELL_SOURCE)
    cell["id"] = LANG_CELL_ID
    return cell


def build(english: nbformat.NotebookNode, blocks: list[Block]) -> nbformat.NotebookNode:
    """The Chinese notebook: ``english``'s cells with markdown from ``blocks``, plus the language cell.

    Code cells keep their id and source (outputs and counts cleared); a
    markdown cell with no translation keeps its English text (so the notebook
    still reads, and :func:`check` reports it). The ``zh-lang`` cell goes
    right after the Colab set-up cell (which must run first, to install
    attnlab on Colab), or first when there is none.
    """
    book = copy.deepcopy(english)
    text = {b.cell_id: b.text for b in blocks}
    for cell in book.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        elif cell.cell_type == "markdown" and cell.id in text:
            cell.source = text[cell.id]
        cell.metadata.pop("execution", None)
    at = 1 if book.cells and book.cells[0].cell_type == "code" and \
        book.cells[0].source.startswith(COLAB_MARKER) else 0
    book.cells.insert(at, language_cell())
    nbformat.validate(book)
    return book


def dumps(book: nbformat.NotebookNode) -> str:
    """The notebook's file text exactly as ``nbformat.write`` writes it."""
    text = nbformat.writes(book)
    return text if text.endswith("\n") else text + "\n"


@dataclass(frozen=True)
class Lesson:
    """One lesson's three files: the English notebook, its catalogue, the built Chinese notebook."""

    english: Path
    translation: Path
    chinese: Path

    @property
    def name(self) -> str:
        return self.english.stem

    def blocks(self) -> list[Block]:
        if not self.translation.exists():
            return []
        return parse(self.translation.read_text(encoding="utf-8"), str(self.translation))

    def read_english(self) -> nbformat.NotebookNode:
        return nbformat.read(str(self.english), as_version=4)

    def problems(self) -> list[Problem]:
        return check(self.read_english(), self.blocks(), self.name)

    def built_text(self) -> str:
        return dumps(build(self.read_english(), self.blocks()))

    def is_current(self) -> bool:
        """True when the committed Chinese notebook is exactly what :func:`build` writes now."""
        return self.chinese.exists() and self.chinese.read_text(encoding="utf-8") == self.built_text()


def lessons(root: Path, only: list[str] | None = None) -> list[Lesson]:
    """Every lesson of the course at ``root`` (or those whose names start with one of ``only``)."""
    out = []
    for english in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        if only and not any(english.name.startswith(p) for p in only):
            continue
        out.append(Lesson(english, root / "notebooks" / "zh" / "translations" / f"{english.stem}.md",
                          root / "notebooks" / "zh" / english.name))
    return out
