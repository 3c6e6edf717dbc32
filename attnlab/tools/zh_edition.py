"""The Chinese edition of the lessons, built from the English ones: one source of truth for the code.

Each English lesson ``notebooks/NN_name.ipynb`` has a translation catalogue
``notebooks/zh/translations/NN_name.md``: a sequence of blocks, one per
markdown cell, keyed by the cell's stable id and by a fingerprint of the
English text it was translated from::

    <!-- cell: c05-03 | en: 1a2b3c4d -->
    (the Chinese markdown of cell c05-03, any number of lines)

``en`` is the first 8 hex digits of the SHA-256 of the English cell's source
(UTF-8), the text of its generated numbers (``<!-- numbers:NAME -->...<!-- /numbers -->``) left out. :func:`build` writes ``notebooks/zh/NN_name.ipynb``: the English
notebook's cells in the same order, code cells untouched (same ids, same
source), markdown cells replaced by their translation, and one extra code cell
(id ``zh-lang``) after the Colab set-up cell that switches the printed
language to Chinese. :func:`check` lists what keeps the edition from being in
step: a markdown cell with no translation, a translation made from English
that has changed since (stale), a block whose cell id no longer exists, a code
comment still in English.

Code comments are translated like printed messages: one shared gettext file,
``notebooks/zh/translations/comments.po``, maps each English comment (its text
after ``# ``) to Chinese. :func:`translate_comments` swaps only the comment
tokens of a cell, so the code a Chinese reader runs is the English lesson's code,
token for token. A comment with no entry stays English and :func:`check` reports
it (``"english comment"``); ``noqa`` and ``type:`` directives are code, not prose.

``scripts/zh_notebooks.py`` is the command line; ``tests/test_zh_edition.py``
fails while any lesson has a problem or a committed Chinese notebook is not
what :func:`build` writes.
"""

from __future__ import annotations

import copy
import hashlib
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import nbformat

from attnlab.core.language import lessons_folder, read_po
from attnlab.tools.english_prose import words

#: id of the code cell that makes a Chinese lesson print in Chinese
LANG_CELL_ID = "zh-lang"
LANG_CELL_SOURCE = (
    "# 中文版：本课打印的结论、练习反馈和图中的文字都用中文（al.set_language(\"en\") 换回英文）。\n"
    "import attnlab as al\n"
    "\n"
    "al.set_language(\"zh\")"
)
COLAB_MARKER = "# Colab set-up"

#: the catalogue of code comments, relative to ``notebooks/zh/translations``
COMMENTS_FILE = "comments.po"
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_DIRECTIVE = re.compile(r"\b(?:noqa(?::\s*[A-Z]+\d+(?:,\s*[A-Z]+\d+)*)?|type:\s*ignore(?:\[[\w-]+\])?"
                        r"|pragma:[\w -]+|fmt:\s*(?:on|off|skip))")
_MARKER = re.compile(r"^<!-- cell: (?P<id>[A-Za-z0-9_.-]+) \| en: (?P<hash>[0-9a-f]{8}) -->[ \t]*$", re.M)
_ANY_MARKER = re.compile(r"^<!--\s*cell:.*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


#: a generated number inside a cell (``<!-- numbers:NAME -->text<!-- /numbers -->``, written in both editions by
#: ``python scripts/course_numbers.py``): the fingerprint leaves its text out
_GENERATED = re.compile(r"(<!-- numbers:[a-z_0-9.]+ -->)[^\n]*?(<!-- /numbers -->)")


def english_hash(source: str) -> str:
    """First 8 hex digits of the SHA-256 of ``source`` (UTF-8) with the text of its generated numbers left
    out: the fingerprint a block records (a new measurement does not make a translation stale)."""
    return hashlib.sha256(_GENERATED.sub(r"\1\2", source).encode("utf-8")).hexdigest()[:8]


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
    ``"unknown"`` (a block whose cell id is not in the English lesson),
    ``"not markdown"`` (a block for a code cell: code is never translated) or
    ``"english comment"`` (a code comment, ``english``, with no Chinese in ``comments.po``).
    """

    lesson: str
    kind: str
    cell_id: str
    english: str = ""
    old_hash: str = ""

    def __str__(self) -> str:
        what = {"missing": "has no translation", "stale": "changed in English since it was translated",
                "unknown": "is translated but no longer exists in the English lesson",
                "not markdown": "is a code cell (code cells are copied, never translated)",
                "english comment": f"has an English comment with no entry in {COMMENTS_FILE}: "
                                   f"{self.english!r}"}[self.kind]
        return f"{self.lesson}: cell {self.cell_id} {what}"


def comments(source: str) -> list[tuple[int, int, str]]:
    """``(start, end, text)`` of every comment token of the Python ``source``: character offsets
    of the ``#`` and of the comment's end, and the text after ``#`` and its spaces.
    A cell that does not tokenize (an unfinished exercise, IPython syntax) has none."""
    starts = [0]
    for line in io.StringIO(source).readlines():  # the lines exactly as tokenize reads them
        starts.append(starts[-1] + len(line))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    out = []
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            start = starts[tok.start[0] - 1] + tok.start[1]
            out.append((start, start + len(tok.string), tok.string.lstrip("#").strip()))
    return out


def is_english_comment(text: str) -> bool:
    """True when a comment's ``text`` is English a Chinese reader would have to read: it has an
    English prose word (not code, a variable or a directive such as ``noqa: E731``) and no Chinese."""
    if _CJK.search(text):
        return False
    text = _DIRECTIVE.sub(" ", text)
    if re.search(r"\b(?:e\.g|i\.e|etc)\.", text):
        return True
    return any(end - start >= 2 for start, end in words(text))


def translate_comments(source: str, table: dict[str, str]) -> str:
    """``source`` with each comment whose text is a key of ``table`` replaced by its translation
    (the ``#`` and the code around it unchanged)."""
    out, at = [], 0
    for start, end, text in comments(source):
        if text in table:
            prefix = source[start:end][: len(source[start:end]) - len(text)]
            out += [source[at:start], prefix, table[text]]
            at = end
    return "".join(out) + source[at:]


def without_comments(source: str) -> list[tuple[int, str]]:
    """The tokens of ``source`` other than comments and line breaks, ``(type, string)``: equal for
    two cells whose code is the same."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [(-1, source)]
    return [(t.type, t.string) for t in tokens if t.type not in (tokenize.COMMENT, tokenize.NL)]


def read_comments(path: Path) -> dict[str, str]:
    """The comment catalogue at ``path`` (``{english: chinese}``; empty when there is none)."""
    if not path.exists():
        return {}
    return {k: v for k, v in read_po(path.read_text(encoding="utf-8")).items() if k}


def comment_problems(english: nbformat.NotebookNode, table: dict[str, str], lesson: str = "") -> list[Problem]:
    """An ``"english comment"`` :class:`Problem` for each English comment ``table`` leaves untranslated."""
    problems = []
    for cell in english.cells:
        if cell.cell_type != "code":
            continue
        for _start, _end, text in comments(cell.source):
            if text not in table and is_english_comment(text):
                problems.append(Problem(lesson, "english comment", cell.id, text))
    return problems


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


def build(english: nbformat.NotebookNode, blocks: list[Block],
          comment_table: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """The Chinese notebook: ``english``'s cells with markdown from ``blocks``, plus the language cell.

    Code cells keep their id and code (outputs and counts cleared), with their
    comments translated from ``comment_table`` (see :func:`translate_comments`); a
    markdown cell with no translation keeps its English text (so the notebook
    still reads, and :func:`check` reports it). The ``zh-lang`` cell goes
    right after the Colab set-up cell (which must run first, to install
    attnlab on Colab), or first when there is none.
    """
    book = copy.deepcopy(english)
    text = {b.cell_id: b.text for b in blocks}
    at = 1 if book.cells and book.cells[0].cell_type == "code" and \
        book.cells[0].source.startswith(COLAB_MARKER) else 0
    for cell in book.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            if comment_table:
                cell.source = translate_comments(cell.source, comment_table)
        elif cell.cell_type == "markdown" and cell.id in text:
            cell.source = text[cell.id]
        cell.metadata.pop("execution", None)
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

    def comment_table(self) -> dict[str, str]:
        return read_comments(self.translation.parent / COMMENTS_FILE)

    def problems(self) -> list[Problem]:
        english = self.read_english()
        return check(english, self.blocks(), self.name) + comment_problems(english, self.comment_table(), self.name)

    def built_text(self) -> str:
        return dumps(build(self.read_english(), self.blocks(), self.comment_table()))

    def is_current(self) -> bool:
        """True when the committed Chinese notebook is exactly what :func:`build` writes now."""
        return self.chinese.exists() and self.chinese.read_text(encoding="utf-8") == self.built_text()


def lessons(root: Path, only: list[str] | None = None) -> list[Lesson]:
    """Every lesson of the course at ``root`` (or those whose names start with one of ``only``)."""
    out = []
    chinese = lessons_folder(root, "zh")
    for english in sorted(lessons_folder(root, "en").glob("[0-9][0-9]_*.ipynb")):
        if only and not any(english.name.startswith(p) for p in only):
            continue
        out.append(Lesson(english, chinese / "translations" / f"{english.stem}.md", chinese / english.name))
    return out
