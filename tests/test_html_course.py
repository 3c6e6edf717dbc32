"""The course to read (``scripts/course_html.py``): the index and every page open in headless Chromium.

The command builds every lesson; here it builds lesson 05 (figures and the offline head view: every
kind of output a page holds), in smoke mode, in both editions, so that the index links pages of two
languages (conftest's ``html_course`` fixture). The Chinese page is made from the Chinese lesson 05 that
the course run of ``tests/zh_course.py`` executed (the command takes an executed copy where there is one),
the English one from a lesson 05 the command runs first itself (where there is none), which
``test_notebook_runs_in_smoke_mode`` reads too: each edition's lesson runs once for the tests that read it.
Skips or fails where Chromium is missing as the browser test does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zh_course  # tests/zh_course.py
from test_browser import CJK, browser_page  # tests/test_browser.py

pytestmark = [pytest.mark.browser, zh_course.GROUP]  # on the worker that holds the Chinese course run

ROOT = Path(__file__).resolve().parents[1]
LESSON = "05_reading_heatmaps"


def test_html_course(html_course):
    """The index opens and links every page; every page opens and shows all its lesson's figures."""
    html_course = html_course.out
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
