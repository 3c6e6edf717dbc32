"""Every message the course prints, found in its source, and whether a language's catalogue has it.

Two kinds of text are shown in the reader's language:

* a literal passed to ``_()``, ``N_()`` or ``ngettext()`` from :mod:`attnlab.core.language`;
* what a :class:`~attnlab.course.checks.Check` checked (first argument of ``Check.of``);
* the claim of a :class:`~attnlab.course.verdicts.ClaimVerdict` (first argument,
  or ``claim=``, of ``ClaimVerdict.decide`` / ``ClaimVerdict.missing`` /
  ``ClaimVerdict(...)``), translated when the verdict is printed. A claim
  given as a module-level constant (``CLAIM = "..."``) is followed to its text;
* the names of the numbers a check or a verdict shows (the keywords of
  ``Check.of`` and ``ClaimVerdict.decide``: ``largest_difference = 0.001``).

Read statically with :mod:`ast` (nothing is imported), so a message in a
function no test calls is found too. The code cells of the English lessons
(``notebooks/*.ipynb``, shared with the Chinese edition) are read the same way,
their IPython ``%``/``!`` lines left out.
"""

from __future__ import annotations

import ast
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

from attnlab.core.language import catalogue
from attnlab.course.verdicts import ClaimVerdict

PACKAGE = Path(__file__).resolve().parents[1]
NOTEBOOKS = PACKAGE.parent / "notebooks"
_CALLS = {"_": 1, "N_": 1, "ngettext": 2}  # function -> how many leading literal arguments are messages
_VERDICT_BUILDERS = ("decide", "missing")
_CHECK_BUILDERS = ("of",)
#: keywords of the builders that are not shown numbers (a verdict's claim and its two tests; a check's)
_NOT_NUMBERS = {"what", "passed"} | {name for name, p in inspect.signature(ClaimVerdict.decide).parameters.items()
                                     if p.kind is not inspect.Parameter.VAR_KEYWORD}


@dataclass(frozen=True)
class Message:
    """A message id and where it is written (``attnlab/...py:line``)."""

    msgid: str
    where: str
    plural: str | None = None

    @property
    def key(self) -> str:
        """How the compiled catalogue keys it: ``msgid``, or ``singular NUL plural``."""
        return self.msgid if self.plural is None else f"{self.msgid}\0{self.plural}"


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node.value.value
    return out


def _text(node: ast.AST | None, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return None


def _is_verdict_builder(func: ast.AST) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "ClaimVerdict"
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return ((func.value.id == "ClaimVerdict" and func.attr in _VERDICT_BUILDERS)
                or (func.value.id == "Check" and func.attr in _CHECK_BUILDERS))
    return False


def messages_in(path: Path, root: Path = PACKAGE.parent) -> list[Message]:
    """The messages written in one source file."""
    where = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    return _messages_of(path.read_text(encoding="utf-8"), where)


def notebook_code(path: Path) -> list[tuple[str, str]]:
    """``(cell id, Python source)`` of each code cell of a notebook, each IPython magic or shell line a ``pass``."""
    book = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for cell in book.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        lines = [line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
                 for line in source.split("\n")]
        out.append((cell.get("id", "?"), "\n".join(lines)))
    return out


def messages_in_notebook(path: Path, root: Path = PACKAGE.parent) -> list[Message]:
    """The messages written in the code cells of one notebook (``where`` is ``notebooks/x.ipynb:cell-id:line``)."""
    name = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    return [msg for cell_id, source in notebook_code(path) for msg in _messages_of(source, f"{name}:{cell_id}")]


def _messages_of(source: str, where: str) -> list[Message]:
    tree = ast.parse(source)
    constants = _constants(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name in _CALLS and node.args:
            texts = [_text(a, {}) for a in node.args[: _CALLS[name]]]
            if texts and texts[0] is not None:
                plural = texts[1] if name == "ngettext" and len(texts) > 1 else None
                out.append(Message(texts[0], f"{where}:{node.lineno}", plural))
        elif _is_verdict_builder(node.func):
            claim = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg in ("claim", "what")), None)
            text = _text(claim, constants)
            if text:
                out.append(Message(text, f"{where}:{node.lineno}"))
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("decide", "of"):
                out += [Message(k.arg, f"{where}:{node.lineno}") for k in node.keywords
                        if k.arg is not None and k.arg not in _NOT_NUMBERS]
    return out


def extract(package: Path = PACKAGE, notebooks: Path | None = NOTEBOOKS) -> dict[str, list[Message]]:
    """Every message of the package and of the English lessons' code cells in ``notebooks``
    (none when it is ``None`` or missing), by catalogue key, each with the places it is written."""
    found: dict[str, list[Message]] = {}
    messages = [msg for path in sorted(package.rglob("*.py")) for msg in messages_in(path, package.parent)]
    if notebooks is not None and notebooks.is_dir():
        messages += [msg for path in sorted(notebooks.glob("*.ipynb"))
                     for msg in messages_in_notebook(path, package.parent)]
    for msg in messages:
        found.setdefault(msg.key, []).append(msg)
    return found


def untranslated(lang: str = "zh", package: Path = PACKAGE) -> list[list[Message]]:
    """The messages (grouped by key) that ``lang``'s catalogue does not translate."""
    have = catalogue(lang)
    return [group for key, group in sorted(extract(package).items()) if key not in have]


def unused(lang: str = "zh", package: Path = PACKAGE) -> list[str]:
    """Catalogue entries no source file uses any more (the header aside)."""
    used = set(extract(package))
    return sorted(k for k in catalogue(lang) if k and k not in used)


def po_entry(group: list[Message], translation: str = "") -> str:
    """A ``.po`` entry (empty for a translator to fill in, unless ``translation`` is given),
    with the places the message is used."""
    first = group[0]
    lines = [f"#: {m.where}" for m in group]
    if "{" in first.msgid:
        lines.append("#, python-brace-format")
    lines.append(f"msgid {_quote(first.msgid)}")
    if first.plural is None:
        lines.append(f"msgstr {_quote(translation)}")
    else:
        lines += [f"msgid_plural {_quote(first.plural)}", f"msgstr[0] {_quote(translation)}"]
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    """A .po string literal; multi-line text is written one line per string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    parts = escaped.split("\n")
    if len(parts) == 1:
        return f'"{escaped}"'
    pieces = [p + "\\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    return '""\n' + "\n".join(f'"{p}"' for p in pieces)
