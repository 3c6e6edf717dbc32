"""`attnlab figures --smoke` regenerates every figure listed in the committed manifest,
and every figure name is registered exactly once."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import pytest

from attnlab.course import figures
from attnlab.course.figures import discover
from attnlab.tools.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
FIGURE_MODULES = ROOT / "attnlab" / "course" / "figures"


def figure_names_in_source(folder: Path) -> list[str]:
    """Every name given to ``@figure("name", ...)`` in the ``lesson_*.py`` files of ``folder``,
    read statically (so a duplicate is seen even where one registration would overwrite another)."""
    names = []
    for path in sorted(folder.glob("lesson_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "figure"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                names.append(node.args[0].value)
    return names


def duplicates(names: list[str]) -> list[str]:
    return sorted(n for n, count in Counter(names).items() if count > 1)


def test_every_lesson_figure_is_registered_once():
    names = figure_names_in_source(FIGURE_MODULES)
    assert duplicates(names) == []
    specs = discover()
    assert sorted(specs) == sorted(names)  # every decorated maker registered, nothing else
    assert len(specs) >= 20
    assert all((ROOT / "notebooks" / s.lesson).exists() for s in specs.values())


def test_the_once_check_sees_a_duplicate(tmp_path):
    (tmp_path / "lesson_01.py").write_text('@figure("a", lesson="x", caption="")\ndef f(ctx): ...\n')
    (tmp_path / "lesson_02.py").write_text('@figure("b", lesson="x", caption="")\ndef g(ctx): ...\n'
                                           '@figure("a", lesson="x", caption="")\ndef h(ctx): ...\n')
    assert duplicates(figure_names_in_source(tmp_path)) == ["a"]


def test_registering_a_name_twice_is_refused(monkeypatch):
    monkeypatch.setattr(figures, "REGISTRY", {})
    figures.figure("twice", lesson="x.ipynb", caption="first")(lambda ctx: None)
    with pytest.raises(ValueError, match="registered twice"):
        figures.figure("twice", lesson="x.ipynb", caption="second")(lambda ctx: None)


@pytest.mark.slow
def test_smoke_build_regenerates_the_committed_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "results"))
    out = tmp_path / "figures"
    assert cli_main(["figures", "--smoke", "--model", "bundled", "--out", str(out)]) == 0
    committed = {e["file"] for e in json.loads((ROOT / "figures" / "manifest.json").read_text(encoding="utf-8"))}
    made = {p.name for p in out.glob("*.png")}
    assert committed <= made, f"not regenerated: {sorted(committed - made)}"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert {e["file"] for e in manifest} == made
    assert all(e["smoke"] and e["lesson"].endswith(".ipynb") for e in manifest)
    assert all((out / name).stat().st_size > 5_000 for name in made)  # real images, not empty canvases


def test_committed_figures_come_from_a_full_run_on_the_offline_default():
    """The gallery shows what a newcomer's offline run shows: the Chinese-reading default, full mode."""
    from attnlab.core.models import MULTILINGUAL

    manifest = json.loads((ROOT / "figures" / "manifest.json").read_text(encoding="utf-8"))
    assert {e["model"] for e in manifest} == {MULTILINGUAL}
    assert not any(e["smoke"] for e in manifest)
    assert {e["file"] for e in manifest} == {p.name for p in (ROOT / "figures").glob("*.png")}
