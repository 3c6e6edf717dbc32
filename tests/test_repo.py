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


GALLERIES = [("README.md", "figures"), ("README.zh-CN.md", "figures/zh")]


@pytest.mark.parametrize("readme_name, folder", GALLERIES, ids=[g[0] for g in GALLERIES])
def test_readme_gallery_images_exist(readme_name, folder):
    readme = (ROOT / readme_name).read_text(encoding="utf-8")
    images = re.findall(r'<img src="([^"]+)"', readme)
    assert images, "the README has a gallery"
    assert [i for i in images if not i.startswith(folder + "/") or "/" in i[len(folder) + 1:]] == [], \
        f"{readme_name} shows the figures of {folder}/ only"
    assert [i for i in images if not (ROOT / i).exists()] == []


@pytest.mark.parametrize("readme_name, folder", GALLERIES, ids=[g[0] for g in GALLERIES])
def test_every_gallery_image_is_in_the_manifest(readme_name, folder):
    import json

    readme = (ROOT / readme_name).read_text(encoding="utf-8")
    manifest = {e["file"] for e in json.loads((ROOT / folder / "manifest.json").read_text(encoding="utf-8"))}
    images = {Path(i).name for i in re.findall(rf'<img src="{folder}/([^"]+)"', readme)}
    assert images <= manifest


def test_the_chinese_gallery_holds_every_figure_drawn_in_chinese():
    """figures/zh/ has a Chinese twin of every figure of figures/, from a full run (not smoke)."""
    import json

    english = json.loads((ROOT / "figures" / "manifest.json").read_text(encoding="utf-8"))
    chinese = {e["file"]: e for e in json.loads((ROOT / "figures" / "zh" / "manifest.json").read_text(encoding="utf-8"))}
    assert sorted(e["file"] for e in english if e["file"] not in chinese) == []
    assert [f for f, e in chinese.items() if e["lang"] != "zh" or e["smoke"]] == []
    assert [f for f in chinese if not (ROOT / "figures" / "zh" / f).exists()] == []


PACKAGE_PATH = re.compile(r"\battnlab/[\w/]+\.py\b")


@pytest.mark.parametrize("path", DOCS + NOTEBOOKS, ids=[p.name for p in DOCS + NOTEBOOKS])
def test_package_files_named_in_docs_and_lessons_exist(path):
    """A lesson that sends the reader to attnlab/x.py must name a file that exists."""
    text = path.read_text(encoding="utf-8")
    missing = sorted({p for p in PACKAGE_PATH.findall(text) if not (ROOT / p).exists()})
    assert missing == [], f"{path.name} names files that do not exist: {missing}"


@pytest.mark.slow
def test_the_course_command_opens_jupyterlab_even_as_root(tmp_path):
    """`bash scripts/course.sh` starts a server that answers (with --allow-root when run as root)."""
    import os
    import signal
    import subprocess
    import time
    import urllib.request

    from attnlab.tools.local_http import free_port

    port = free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"), BROWSER="true")
    stamp = ROOT / ".venv" / ".attnlab-installed"
    if os.environ.get("ATTNLAB_NO_VENV") == "1" or not stamp.exists() \
            or stamp.stat().st_mtime < (ROOT / "pyproject.toml").stat().st_mtime:
        pytest.skip("needs the set-up .venv of scripts/setup.sh (the launch must not install anything)")
    proc = subprocess.Popen(
        ["bash", "scripts/course.sh", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         "--ServerApp.token=", "--ServerApp.password="],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.time() + 90
        status = None
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2) as r:
                    status = r.status
                    break
            except OSError:
                time.sleep(0.5)
        assert status == 200, f"JupyterLab did not answer; it printed:\n{proc.stdout.read() if proc.poll() is not None else ''}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    if os.getuid() == 0:
        assert "--allow-root" in out
