"""`attnlab figures --smoke` regenerates every figure listed in the committed manifest."""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.tools.cli import main as cli_main
from attnlab.course.figures import discover

ROOT = Path(__file__).resolve().parents[1]


def test_every_lesson_figure_is_registered_once():
    specs = discover()
    assert len(specs) >= 20
    assert all((ROOT / "notebooks" / s.lesson).exists() for s in specs.values())


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
