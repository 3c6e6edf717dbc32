"""Find English prose that a lesson prints without the catalogue: a static check, read with :mod:`ast`.

Every line a Chinese lesson prints goes through :func:`attnlab.core.language._`.
The executed check (``tests/test_zh_edition.py``) sees only the code paths one run
takes; this one reads every code cell of every lesson, and every module of the
package, and lists each string literal that reaches the reader untranslated:

* an argument of ``print`` (or ``tqdm.write``, ``display``, ``Markdown``, ``HTML``);
* the ``desc``, ``unit`` or ``postfix`` of a progress bar (``tqdm(...)``,
  ``bar.set_description(...)``);

when the literal holds an English prose word (:func:`attnlab.tools.english_prose.words`,
two letters or more, not code, not a variable, not an allowed name) and no Chinese.
What is *inside* ``_()``, ``N_()``, ``ngettext()`` or ``translated()`` is translated;
what is passed to another function (``table(rows, "lexical")``), used as a key
(``row["fixed"]``), compared (``kind == "zero"``) or looped over (``for k in ("start", "end")``)
is data, not text shown as it is.
The command-line modules (``attnlab/tools``) speak English on purpose and are not read, except
those a lesson calls (:data:`LESSON_TOOLS`: lesson 00's doctor, lesson 12's lesson runner).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from attnlab.tools import english_prose, messages

TRANSLATING = {"_", "N_", "ngettext", "translated"}
SHOWING = {"print", "write", "display", "Markdown", "HTML"}
PROGRESS = {"tqdm", "trange", "progress", "set_description", "set_description_str", "set_postfix_str"}
PROGRESS_WORDS = ("desc", "unit", "postfix")
TEXT_BUILDERS = {"format", "join", "str", "ljust", "rjust", "center", "strip", "upper", "lower", "capitalize"}
_CJK = re.compile(r"[\u3400-\u9fff]")
#: the modules of ``attnlab/tools`` that lessons call, so read like the rest of the package
LESSON_TOOLS = ("doctor.py", "lesson_runner.py", "figure_texts.py")


@dataclass(frozen=True)
class Finding:
    """An English literal shown untranslated, and where (``file:line`` or ``notebook:cell:line``)."""

    where: str
    text: str

    def __str__(self) -> str:
        return f"{self.where}: {self.text!r}"


def is_english(text: str) -> bool:
    """True when ``text`` holds an English prose word of two letters or more and no Chinese."""
    if _CJK.search(text):
        return False
    return any(end - start >= 2 for start, end in english_prose.words(text))


def _name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _shown_literals(node: ast.AST) -> list[ast.Constant]:
    """The string literals of ``node`` that become shown text as they are written."""
    out: list[ast.Constant] = []

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Call):
            name = _name(n.func)
            if name in TRANSLATING:
                return
            if name in TEXT_BUILDERS:  # "...".format(...), ", ".join(...): the text and its pieces
                if isinstance(n.func, ast.Attribute):
                    visit(n.func.value)
                for a in n.args:
                    visit(a)
                for k in n.keywords:
                    visit(k.value)
            return  # anything else passed to a function is data
        if isinstance(n, (ast.Subscript, ast.Compare, ast.Lambda, ast.comprehension)):
            return  # a key, a comparison, what a loop runs over: data
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.append(n)
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return out


def findings_in(source: str, where: str) -> list[Finding]:
    """Each English literal that ``source`` shows untranslated."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        shown: list[ast.AST] = []
        if name in SHOWING:
            shown += node.args
        if name in PROGRESS:
            shown += [k.value for k in node.keywords if k.arg in PROGRESS_WORDS]
            if name.startswith("set_"):
                shown += node.args[:1]
        for part in shown:
            for literal in _shown_literals(part):
                if is_english(literal.value):
                    out.append(Finding(f"{where}:{getattr(literal, 'lineno', node.lineno)}", literal.value))
    return out


def findings(package: Path = messages.PACKAGE, notebooks: Path | None = messages.NOTEBOOKS) -> list[Finding]:
    """Every English literal shown untranslated by the package (``attnlab/tools`` aside) and by the
    code cells of the lessons in ``notebooks``."""
    root = package.parent
    out = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[:1] == ("tools",) and path.name not in LESSON_TOOLS:
            continue
        out += findings_in(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
    if notebooks is not None and notebooks.is_dir():
        for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")):
            for cell_id, source in messages.notebook_code(path):
                out += findings_in(source, f"{path.relative_to(root)}:{cell_id}")
    return out
