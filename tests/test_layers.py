"""The package is a layered house: each layer imports only the layers below it.

Read statically (nothing is imported), so a violation is found even in a
function that no test calls. See docs/architecture.md for the picture.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "attnlab"

#: bottom to top; a module may import from its own layer and from the layers before it
LAYERS = ("core", "data", "analysis", "scratch", "viz", "course", "tools")


def layer_of(module: str) -> str | None:
    """``"attnlab.analysis.pruning"`` -> ``"analysis"``; None for the top-level files."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def attnlab_imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module top?) for every import of attnlab in ``path``.

    An import inside a function counts as "at the top" when its line says why it
    is deferred (a ``# deferred: ...`` comment), e.g. the doctor, which must run
    when torch itself is broken.
    """
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    here = module_name(path)
    top_level = {id(node) for node in tree.body}
    top_level |= {id(node) for node in ast.walk(tree)
                  if isinstance(node, (ast.Import, ast.ImportFrom)) and "# deferred:" in lines[node.lineno - 1]}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                names = [".".join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module or ""]
        else:
            continue
        for name in names:
            if name == "attnlab" or name.startswith("attnlab."):
                out.append((name, node.lineno, id(node) in top_level))
    return out


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def test_every_module_sits_in_a_layer():
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py", "_meta.py")]
    assert not loose, f"modules outside the layers: {loose}"
    for layer in LAYERS:
        assert (PACKAGE / layer / "__init__.py").exists(), layer


def upward_imports() -> list[str]:
    bad = []
    for path in modules():
        here = layer_of(module_name(path))
        if here is None:
            continue
        for target, line, _ in attnlab_imports(path):
            there = layer_of(target)
            if there is not None and LAYERS.index(there) > LAYERS.index(here):
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({here}) imports {target} ({there})")
    return bad


def test_no_layer_imports_a_higher_one():
    bad = upward_imports()
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_imports_of_the_package_sit_at_module_top():
    inner = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
        for path in modules()
        for target, line, top in attnlab_imports(path)
        if not top
    ]
    assert not inner, "imports of attnlab inside functions hide the layering:\n" + "\n".join(inner)


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    """The layering test can fail: a core module importing course is reported."""
    fake = tmp_path / "attnlab"
    (fake / "core").mkdir(parents=True)
    (fake / "course").mkdir()
    for d in (fake, fake / "core", fake / "course"):
        (d / "__init__.py").write_text("")
    (fake / "core" / "bad.py").write_text("from attnlab.course.verdicts import ClaimVerdict\n")
    (fake / "course" / "fine.py").write_text("from attnlab.core.bad import x\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert upward_imports() == ["attnlab/core/bad.py:1 (core) imports attnlab.course.verdicts (course)"]


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_imports_cleanly(layer):
    import importlib

    importlib.import_module(f"attnlab.{layer}")


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (also inside functions), read statically.

    ``from attnlab.core import config`` counts as an import of ``attnlab.core.config``; a
    module importing its own package (``attnlab.core`` from ``attnlab.core.run``) or the
    top-level ``attnlab`` is not counted.
    """
    paths = {module_name(p): p for p in modules()}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for here, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
                prefix = (".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
                          if node.level else node.module or "")
                targets = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
            else:
                continue
            graph[here] |= {t for t in targets if t in paths and t not in (here, "attnlab")
                            and not here.startswith(t + ".")}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle ``[a, b, ..., a]`` through each module that lies on one (depth-first search)."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" afterwards
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = "open"
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = "done"
                stack.pop()
            elif state.get(nxt) == "open":
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                state[nxt] = "open"
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return cycles


def test_no_module_imports_itself_in_a_circle():
    """Also within a layer: e.g. core.models must not import core.run, which imports core.models."""
    cycles = import_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_finder_sees_a_cycle(tmp_path, monkeypatch):
    fake = tmp_path / "attnlab"
    (fake / "core").mkdir(parents=True)
    for d in (fake, fake / "core"):
        (d / "__init__.py").write_text("")
    (fake / "core" / "a.py").write_text("from attnlab.core import b\n")
    (fake / "core" / "b.py").write_text("def f():\n    from attnlab.core.a import g  # deferred: hides the cycle\n")
    (fake / "core" / "c.py").write_text("from . import a\nfrom attnlab.core.a import f\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    graph = import_graph()
    assert graph["attnlab.core.c"] == {"attnlab.core.a"}
    assert import_cycles(graph) == [["attnlab.core.a", "attnlab.core.b", "attnlab.core.a"]]
