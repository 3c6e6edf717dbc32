"""Repository hygiene: links resolve, the repository slug lives in one place."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

from attnlab._meta import REPO

ROOT = Path(__file__).resolve().parents[1]
DOCS = [p for p in [ROOT / "README.md", ROOT / "README.zh-CN.md", ROOT / "docs" / "teaching.md",
                    ROOT / "docs" / "teaching.zh-CN.md", ROOT / "figures" / "README.md"] if p.exists()]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _local_targets(text: str) -> list[str]:
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:|^#", t)]


@pytest.mark.parametrize("doc", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_markdown_links_resolve(doc):
    missing = [t for t in _local_targets(doc.read_text(encoding="utf-8"))
               if not (doc.parent / t.split("#")[0]).exists()]
    assert missing == [], f"{doc.name} links to missing files: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_links_resolve(path):
    book = nbformat.read(str(path), as_version=4)
    text = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    missing = [t for t in _local_targets(text) if not (path.parent / t.split("#")[0]).exists()]
    assert missing == [], f"{path.name} links to missing files: {missing}"


def test_launch_badges_use_the_one_slug():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    slugs = set(re.findall(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/", readme))
    slugs |= set(re.findall(r"mybinder\.org/v2/gh/([^/]+/[^/]+)/", readme))
    assert slugs == {REPO}


def test_every_lesson_is_listed_in_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in NOTEBOOKS if f"notebooks/{p.name}" not in readme] == []


def test_ci_calls_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in readme and "bash scripts/test.sh" in ci


def test_readme_gallery_images_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    images = re.findall(r'<img src="([^"]+)"', readme)
    assert images, "the README has a gallery"
    assert [i for i in images if not (ROOT / i).exists()] == []


def test_every_gallery_image_is_in_the_manifest():
    import json

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    manifest = {e["file"] for e in json.loads((ROOT / "figures" / "manifest.json").read_text(encoding="utf-8"))}
    images = {Path(i).name for i in re.findall(r'<img src="figures/([^"]+)"', readme)}
    assert images <= manifest
