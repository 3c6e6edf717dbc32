"""A lesson with widgets, run in a real browser in each language.

JupyterLab is started from this environment on 127.0.0.1 and opened in headless
Chromium (the Debian package, driven by Playwright's Python package pointed at
its executable; Playwright downloads no browser). For lesson 04 in English and
in its Chinese edition, Run All Cells in smoke mode, then check that

* every cell ran without an error output;
* the widget views render (DOM widgets, not their text fallback);
* changing the explorer's layer (a drop-down) redraws its figure;
* the offline head view draws its tokens (Chinese ones when the model reads Chinese), and its hints and
  control labels are in the edition's language;
* the Chinese edition's narrative and printed verdict are Chinese, the English one's English;
* in the Chinese edition the widgets' labels are Chinese, and so is every figure's text (collected in
  the kernel by ``attnlab.tools.figure_texts``: titles, axes, ticks, legends; no English prose);
* its verdict renders as a card (``check_cards``: the claim, the verdict word in colour, the deciding
  number drawn as an SVG, the numbers folded in a ``<details>``), labelled in Chinese in the Chinese
  edition, with no English key;
* the browser logs no console error and sends no request off 127.0.0.1;
* with the setting `course.sh --lang zh` writes, JupyterLab's own menus are Chinese (the language pack).

Skips, saying why, where Chromium or Playwright is missing; fails instead when
``ATTNLAB_REQUIRE_BROWSER=1`` (CI, which installs both).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

import lab_runs  # tests/lab_runs.py
from attnlab.tools import english_prose, figure_texts, zh_edition
from attnlab.tools.local_http import free_port

pytestmark = [pytest.mark.browser, lab_runs.GROUP]  # one worker holds the JupyterLab

ROOT = Path(__file__).resolve().parents[1]
LESSON = lab_runs.LESSON
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "zh" / f"{LESSON}.md"
CHROMIUM = next((p for p in (os.environ.get("ATTNLAB_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser"), "/usr/bin/chromium") if p and Path(p).exists()), None)
CJK = re.compile(r"[\u3400-\u9fff]")
RUN_TIMEOUT_S = 240
FIGURE_TEXTS = "zh-figure-texts.jsonl"  # what the Chinese copy's figures show, written by its first cell


def _unavailable(why: str) -> None:
    if os.environ.get("ATTNLAB_REQUIRE_BROWSER") == "1":
        pytest.fail(why + " (ATTNLAB_REQUIRE_BROWSER=1)")
    pytest.skip(why)


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the browser test needs Playwright's Python package (pip install playwright; the dev extra has it)")
    if CHROMIUM is None:
        _unavailable("no Chromium installed (Debian: apt-get install chromium; .ci/run installs it)")
    return sync_playwright


@contextmanager
def browser_page(guard=None, *, width: int = 1400, height: int = 1000):
    """A page of headless Chromium (the test skips where there is none, and fails in CI); every request
    goes through ``guard`` when one is given."""
    sync_playwright = _playwright()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            if guard is not None:
                page.route("**/*", guard)
            yield page
        finally:
            browser.close()


def _chinese_blocks(lesson: zh_edition.Lesson) -> list[zh_edition.Block]:
    """The lesson's own translation when it has one, else the fixture's."""
    blocks = lesson.blocks()
    return blocks if blocks else zh_edition.parse(FIXTURE.read_text(encoding="utf-8"), str(FIXTURE))


def _settings_dir(folder: Path) -> Path:
    """The user settings folder of the JupyterLab serving ``folder``."""
    return folder / ".settings"


def _settings(folder: Path) -> Path:
    """User settings of the test's JupyterLab: every cell rendered (no windowing), so every widget is in the page."""
    settings = _settings_dir(folder)
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"windowingMode": "none"}', encoding="utf-8")
    return settings


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving copies of lesson 04 in both languages: (base url, token, folder).

    The Chinese copy starts with a cell that records every figure's texts in ``folder / FIGURE_TEXTS``."""
    _playwright()
    folder = tmp_path_factory.mktemp("lab")
    lesson = next(l for l in zh_edition.lessons(ROOT, [LESSON[:2]]))
    english = lesson.read_english()
    (folder / "zh").mkdir()
    nbformat.write(english, str(folder / f"{LESSON}.ipynb"))
    chinese = zh_edition.build(english, _chinese_blocks(lesson))
    hook = nbformat.v4.new_code_cell(figure_texts.hook_source(folder / FIGURE_TEXTS))
    hook["id"] = "figure-texts"
    chinese.cells.insert(0, hook)
    nbformat.write(chinese, str(folder / "zh" / f"{LESSON}.ipynb"))
    port, token = free_port(), "attnlab-browser-test"
    env = dict(os.environ, ATTNLAB_SMOKE="1", ATTNLAB_RESULTS=str(folder / "results"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               JUPYTER_RUNTIME_DIR=str(folder / ".runtime"), JUPYTER_CONFIG_DIR=str(folder / ".config"),
               JUPYTERLAB_SETTINGS_DIR=str(_settings(folder)), JUPYTERLAB_WORKSPACES_DIR=str(folder / ".ws"),
               BROWSER="true")
    env.pop("ATTNLAB_LANG", None)  # each edition must choose its language itself
    env.pop("MPLBACKEND", None)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}",
           "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.getuid() == 0:
        cmd.append("--allow-root")
    server = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited:\n{server.stdout.read()}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("JupyterLab did not answer within 60 s")
                time.sleep(0.5)
        yield base, token, folder
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.communicate()


_OUTPUT_TEXT = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code')
  .map(c => c.model.outputs.toJSON().map(o => [].concat(o.text || []).join('')
      + [].concat((o.data && o.data['text/plain']) || []).join('')).join(''))
  .join('\\n')"""

_READY = """async () => {
  const app = window.jupyterapp;
  await app.started; await app.restored;
  const w = app.shell.currentWidget;
  await w.context.ready; await w.sessionContext.ready;
  return w.sessionContext.session.kernel.name;
}"""

_STATE = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const code = w.content.widgets.filter(c => c.model.type === 'code');
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return {
    errors: code.filter(c => c.model.outputs.toJSON().some(o => o.output_type === 'error')).map(c => c.model.id),
    ran: code.filter(c => c.model.executionCount !== null).length,
    cells: code.length,
    idle: !!kernel && kernel.status === 'idle',
  };
}"""


_RUN_ALL = """() => {
  const app = window.jupyterapp;
  const w = app.shell.currentWidget;
  app.shell.activateById(w.id);  // run-all acts on the notebook that has the focus
  return app.commands.execute('notebook:run-all-cells');
}"""

#: how long the kernel may stay idle with cells left unrun before the run counts as stopped
STALLED_S = 60


def _run_all(page, base: str, token: str, path: str, workspace: str) -> dict:
    """Open ``path`` in a workspace of its own (nothing restored from another test), Run All Cells, and
    return the notebook's state once every cell ran, one raised an error (JupyterLab stops there), or
    the kernel sat idle with cells left unrun for STALLED_S."""
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{path}?reset&token={token}")
    page.wait_for_function("(p) => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext "
                           "&& window.jupyterapp.shell.currentWidget.context.path === p", arg=path, timeout=60_000)
    page.evaluate(_READY)
    page.evaluate(_RUN_ALL)
    deadline, idle_since = time.time() + RUN_TIMEOUT_S, None
    while True:
        state = page.evaluate(_STATE)
        if state["idle"] and (state["ran"] == state["cells"] or state["errors"]):
            return state
        idle_since = (idle_since or time.time()) if state["idle"] else None
        if idle_since and time.time() - idle_since > STALLED_S:
            pytest.fail(f"the kernel is idle but only {state['ran']} of {state['cells']} cells ran: {state}")
        if time.time() > deadline:
            pytest.fail(f"Run All did not finish within {RUN_TIMEOUT_S} s: {state}")
        time.sleep(0.5)


#: the open notebook as JupyterLab's model holds it: nbformat JSON, outputs included
_NOTEBOOK = "() => window.jupyterapp.shell.currentWidget.context.model.toJSON()"


def _shut_down_kernel(page) -> None:
    """Stop the notebook's kernel, so a finished test leaves no kernel holding memory and CPU."""
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")


def _explorer_image(page) -> str:
    imgs = page.locator(".widget-output img")
    return imgs.first.get_attribute("src") if imgs.count() else ""


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_lesson_04_runs_in_the_browser(lab, edition):
    base, token, folder = lab
    path = f"{LESSON}.ipynb" if edition == "en" else f"zh/{LESSON}.ipynb"
    off_machine, console_errors = [], []

    def guard(route):
        host = urlparse(route.request.url).hostname
        if host not in ("127.0.0.1", None) and not route.request.url.startswith(("data:", "blob:")):
            off_machine.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    with browser_page(guard) as page:
        page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: console_errors.append(str(e)))
        state = _run_all(page, base, token, path, workspace=f"test-{edition}")
        assert state["errors"] == [], f"cells with an error output: {state['errors']}"
        # the run, as JupyterLab holds it, for the headless checks of this lesson (tests/lab_runs.py)
        lab_runs.record(edition, page.evaluate(_NOTEBOOK),
                        figure_texts.read(folder / FIGURE_TEXTS) if edition == "zh" else [])

        # widgets: DOM views, not "VBox(children=...)" or a load error
        page.wait_for_selector(".widget-output img", timeout=30_000)
        outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
        fallback = [t for t in outputs if "VBox(children" in t or "Error displaying widget" in t]
        assert fallback == [] and page.locator(".widget-dropdown select").count() >= 2

        # the explorer redraws when its layer changes
        before = _explorer_image(page)
        page.locator(".widget-dropdown select").first.select_option(index=1)
        page.wait_for_function(
            "(b) => { const i = document.querySelector('.widget-output img'); return i && i.src !== b; }",
            arg=before, timeout=30_000)

        # the offline head view drew its token columns
        tokens = page.locator(".al-tok").all_inner_texts()
        assert tokens, "the offline head view drew no tokens"
        example = "".join(tokens)
        if edition == "zh" or CJK.search(example):
            assert CJK.search(example), f"the head view shows no Chinese token: {tokens[:8]}"
        # ... and its texts (controls, hints) are in the edition's language
        view_texts = [t.strip() for t in page.locator(".al-hint, .al-controls > span:not(.al-head)")
                      .all_inner_texts() if t.strip()]
        assert view_texts, "the offline views show no hint or control label"
        if edition == "zh":
            assert all(CJK.search(t) for t in view_texts), f"English in the Chinese views: {view_texts}"
            assert not [t for t in view_texts if english_prose.is_prose(t)]
        else:
            assert any("Left: query tokens" in t for t in view_texts), view_texts

        # the narrative and the printed verdict are in the edition's language (outputs read from the model:
        # cells scrolled out of view need not be in the page)
        text = page.evaluate(_OUTPUT_TEXT)
        markdown = page.locator(".jp-MarkdownOutput").first.inner_text()
        if edition == "zh":
            assert CJK.search(markdown) and "论断：" in text and "Claim:" not in text
        else:
            assert not CJK.search(markdown) and "Claim:" in text
        assert not re.search(r"\b(does not hold|cannot tell)\b", text if edition == "zh" else "")

        # the widgets' labels and the figures' texts are in the edition's language
        labels = {t.strip() for t in page.locator(".widget-label").all_inner_texts() if t.strip()}
        if edition == "zh":
            assert {"文本", "层", "头"} <= labels and not labels & {"text", "layer", "head"}, labels
            shown = [line for record in figure_texts.read(folder / FIGURE_TEXTS)
                     for t in record["texts"] for line in t.splitlines()]
            assert any(CJK.search(t) for t in shown), f"no Chinese text in the figures: {shown[:20]}"
            english = [t for t in shown if english_prose.is_prose(t)]
            assert english == [], f"English prose in the Chinese edition's figures: {english}"
        else:
            assert {"text", "layer", "head"} <= labels, labels

        # the lesson's verdict shows as a card, in the edition's language
        page.wait_for_selector(".jp-OutputArea-output .al-card", timeout=30_000)
        check_cards(page.evaluate(_CARDS), edition)
        _shut_down_kernel(page)
    assert off_machine == [], f"requests left 127.0.0.1: {off_machine}"
    assert console_errors == [], "console errors:\n" + "\n".join(console_errors)


#: labels a card shows in English that must not appear in the Chinese edition's cards
ENGLISH_CARD_LABELS = re.compile(r"\b(Claim|Details|HOLDS|DOES NOT HOLD|CANNOT TELL|score|threshold|chance_level|"
                                 r"shuffled control|layer_index|head_index|shuffles|It would)\b")

_CARDS = """() => Array.from(document.querySelectorAll('.jp-OutputArea-output .al-card')).map(c => ({
  lang: c.getAttribute('lang'),
  claim: c.querySelector('.al-card-claim').innerText,
  word: c.querySelector('.al-card-word').innerText,
  colour: getComputedStyle(c.querySelector('.al-card-word')).color,
  svg: c.querySelectorAll('svg.al-card-svg circle').length,
  svgWidth: c.querySelector('svg.al-card-svg') ? c.querySelector('svg.al-card-svg').getBoundingClientRect().width : 0,
  change: c.querySelector('.al-card-change').innerText,
  details: c.querySelector('details.al-card-details') ? c.querySelector('details.al-card-details').open : null,
  summary: c.querySelector('details.al-card-details summary').innerText,
  labels: Array.from(c.querySelectorAll('details.al-card-details td:first-child')).map(t => t.textContent),
  text: c.textContent,
}))"""


def check_cards(cards: list[dict], edition: str) -> None:
    """The verdict cards a lesson showed in JupyterLab (read by :data:`_CARDS`) are drawn, coloured and
    labelled in the edition's language."""
    assert cards, "no verdict card in the page"
    words = {"en": {"HOLDS", "DOES NOT HOLD", "CANNOT TELL"}, "zh": {"成立", "不成立", "无法判断"}}[edition]
    for card in cards:
        assert card["lang"] == edition and card["word"].strip() in words, card
        assert card["colour"] in ("rgb(26, 127, 55)", "rgb(207, 34, 46)", "rgb(154, 103, 0)"), card  # the word's colour
        assert card["svg"] == 1 and card["svgWidth"] > 100, card  # the score drawn against its threshold
        assert card["details"] is False and len(card["labels"]) >= 4, card  # the numbers, folded away
        assert card["change"].strip(), card
        if edition == "zh":
            assert card["claim"].startswith("论断：") and CJK.search(card["claim"][3:]) and card["summary"] == "详细数字"
            assert all(CJK.search(label) for label in card["labels"]), card["labels"]
            assert not ENGLISH_CARD_LABELS.search(card["text"]), card["text"]
        else:
            assert card["claim"].startswith("Claim:") and card["summary"] == "Details"
            assert "threshold" in card["labels"], card["labels"]  # the deciding number and what it is held against


def test_the_chinese_launch_opens_jupyterlab_in_chinese(lab):
    """``course.sh --lang zh`` starts JupyterLab with a settings folder whose interface language is zh_CN
    (the language pack is in the course extra): the same setting gives Chinese menus; without it, English.
    Both are read from the lesson test's JupyterLab: its settings folder first as it is, then with the
    setting course.sh writes (JupyterLab reads its settings files at each page load), then as it was."""
    base, token, folder = lab
    script = (ROOT / "scripts" / "course.sh").read_text(encoding="utf-8")
    setting = '{"locale": "zh_CN"}'
    assert "translation-extension/plugin.jupyterlab-settings" in script and setting in script
    assert 'export JUPYTERLAB_SETTINGS_DIR="$zh_settings"' in script
    written = _settings_dir(folder) / "@jupyterlab" / "translation-extension" / "plugin.jupyterlab-settings"
    menus = {}
    try:
        for lang in ("en", "zh"):
            if lang == "zh":
                written.parent.mkdir(parents=True, exist_ok=True)
                written.write_text(setting + "\n", encoding="utf-8")
            with browser_page() as page:
                page.goto(f"{base}/lab/workspaces/menus-{lang}?reset&token={token}")
                page.wait_for_selector(".lm-MenuBar-itemLabel", timeout=120_000)
                menus[lang] = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
    finally:
        written.unlink(missing_ok=True)
    assert {"文件", "编辑", "内核", "帮助"} <= set(menus["zh"]), menus
    assert {"File", "Edit", "Kernel", "Help"} <= set(menus["en"]), menus
