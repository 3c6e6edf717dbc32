"""The course to read (``scripts/course_html.py``): the index and every page open in headless Chromium.

The command builds every lesson; here it builds lesson 05 (figures and the offline head view: every
kind of output a page holds), in smoke mode, in both editions, so that the index links pages of two
languages. The Chinese page is made from the Chinese lesson 05 that the course run of
``tests/zh_course.py`` executed (the command takes an executed copy where there is one), the English
one from a lesson 05 the command runs first itself (where there is none): each edition's lesson runs
once for the tests that read it. Skips or fails where Chromium is missing as the browser test does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import zh_course  # tests/zh_course.py
from test_browser import CJK, browser_page  # tests/test_browser.py

pytestmark = [pytest.mark.browser, zh_course.GROUP]  # on the worker that holds the Chinese course run

ROOT = Path(__file__).resolve().parents[1]
LESSON = "05_reading_heatmaps"


@pytest.fixture(scope="module")
def html_course(zh_course_run, tmp_path_factory):
    """``scripts/course_html.py`` on lesson 05 of both editions, in smoke mode: the Chinese lesson as the
    course run executed it, the English one executed by the command first."""
    out, executed = tmp_path_factory.mktemp("html"), tmp_path_factory.mktemp("executed")
    (executed / "zh").mkdir()
    nbformat.write(zh_course_run.books[LESSON], str(executed / "zh" / f"{LESSON}.ipynb"))
    env = {**os.environ, "ATTNLAB_SMOKE": "1", "ATTNLAB_OFFLINE": "1",
           "ATTNLAB_RESULTS": str(tmp_path_factory.mktemp("results"))}
    env.pop("MPLBACKEND", None)
    built = subprocess.run([sys.executable, str(ROOT / "scripts" / "course_html.py"), LESSON[:2], "--out", str(out),
                            "--executed", str(executed)], cwd=ROOT, env=env, check=True, timeout=1800,
                           capture_output=True, text=True)
    assert f"running notebooks/{LESSON}.ipynb first" in built.stdout  # the English lesson had no executed copy
    assert f"running notebooks/zh/{LESSON}.ipynb" not in built.stdout  # the Chinese one had
    assert (executed / f"{LESSON}.ipynb").is_file()  # the English copy the command executed, kept
    return out


def test_html_course(html_course):
    """The index opens and links every page; every page opens and shows all its lesson's figures."""
    pages = {p["page"]: p for p in json.loads((html_course / "pages.json").read_text(encoding="utf-8"))}
    assert sorted((p["lang"], p["lesson"][:2]) for p in pages.values()) == [("en", "05"), ("zh", "05")]
    off_machine = []

    def guard(route):
        if route.request.url.startswith(("file:", "data:", "blob:")):
            route.continue_()
        else:  # the pages' optional CDN scripts (MathJax, require.js): a page must read without them
            off_machine.append(route.request.url)
            route.abort()

    with browser_page(guard, width=1200, height=900) as page:
        page.goto((html_course / "index.html").as_uri())
        links = page.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
        assert sorted(links) == sorted(pages), links
        for href in links:
            page.goto((html_course / href).as_uri())
            page.wait_for_load_state("load")
            info = pages[href]
            assert info["mode"] == "smoke" and info["figures"] > 0, info
            # every figure is in the page, as image data the browser decoded
            sizes = page.locator("img[src^='data:image/']").evaluate_all(
                "els => els.map(e => [e.naturalWidth, e.naturalHeight])")
            assert len(sizes) >= info["figures"], (href, len(sizes), info["figures"])
            assert all(w > 0 and h > 0 for w, h in sizes), (href, sizes)
            text = page.locator("body").inner_text()
            assert info["title"] and info["title"] in text
            assert "Traceback" not in text, href
            if info["lang"] == "zh":
                assert CJK.search(info["title"]), info["title"]
            else:
                assert not CJK.search(info["title"]), info["title"]
