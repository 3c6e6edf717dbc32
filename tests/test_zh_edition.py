"""The Chinese edition stays in step with the English one, and speaks Chinese.

* Drift: every Chinese notebook is built from its English lesson and a
  translation catalogue (``attnlab/tools/zh_edition.py``); these tests fail when
  a code cell differs, a markdown cell has no (or a stale) translation, a
  translated cell id no longer exists, or the committed notebook is not what
  ``python scripts/zh_notebooks.py --build`` writes.
* Messages: every message the course prints has a Chinese entry, with the same
  placeholders; the in-memory ``.mo`` compiler is read back by ``gettext``.
* Each Chinese lesson runs in smoke mode with no English verdict word in its output,
  and shows only Chinese: no English prose (``attnlab/tools/english_prose.py``) in what it
  prints or in the text of any figure it draws.
"""

from __future__ import annotations

import gettext
import io
import json
import re
import string
import struct
import sys
from pathlib import Path

import nbformat
import pytest

from attnlab.core import language
from attnlab.core.language import _, compile_mo, read_po
from attnlab.tools import course_numbers, english_prose, figure_texts, lesson_runner, messages, zh_edition
from attnlab.tools.zh_edition import Block, build, check, english_hash, parse

import lab_runs  # tests/lab_runs.py
import zh_course  # tests/zh_course.py

ROOT = Path(__file__).resolve().parents[1]
LESSONS = zh_edition.lessons(ROOT)
IDS = [lesson.name for lesson in LESSONS]
sys.path.insert(0, str(ROOT / "scripts"))
ENGLISH_VERDICT = re.compile(r"\b(holds|does not hold|cannot tell)\b", re.IGNORECASE)


# --------------------------------------------------------------------------- catalogue format, on fixtures


def _english_book() -> nbformat.NotebookNode:
    book = nbformat.v4.new_notebook()
    cells = [nbformat.v4.new_code_cell("# Colab set-up: ...\nimport sys"),
             nbformat.v4.new_markdown_cell("# Title\n\nSome *English*."),
             nbformat.v4.new_code_cell("print(1 + 1)"),
             nbformat.v4.new_markdown_cell("More English.")]
    for k, cell in enumerate(cells):
        cell["id"] = f"c99-{k:02d}"
    book.cells = cells
    return book


def test_fingerprint_is_the_first_8_hex_digits_of_sha256():
    assert english_hash("abc") == "ba7816bf"  # the FIPS 180-2 test vector of SHA-256("abc")
    assert english_hash("") == "e3b0c442"  # SHA-256 of the empty string
    assert english_hash("a") != english_hash("a ")


def test_parse_reads_blocks_in_order_and_trims_blank_lines():
    text = ("<!-- translated by hand -->\n\n"
            "<!-- cell: c99-01 | en: 0123abcd -->\n\n# 标题\n\n一些*中文*。\n\n\n"
            "<!-- cell: c99-03 | en: ffffffff -->\n更多中文。\n")
    blocks = parse(text)
    assert [(b.cell_id, b.en_hash, b.text) for b in blocks] == [
        ("c99-01", "0123abcd", "# 标题\n\n一些*中文*。"), ("c99-03", "ffffffff", "更多中文。")]
    assert blocks[0].line == 3


@pytest.mark.parametrize("text, why", [
    ("<!-- cell: c99-01 | en: 0123abcd -->\na\n<!-- cell: c99-01 | en: 0123abcd -->\nb\n", "twice"),
    ("<!-- cell: c99-01 | en: 0123abc -->\na\n", "malformed"),
    ("<!-- cell: c99-01 en: 0123abcd -->\na\n", "malformed"),
    ("stray words\n<!-- cell: c99-01 | en: 0123abcd -->\na\n", "before the first"),
])
def test_parse_rejects_what_would_lose_a_translation(text, why):
    with pytest.raises(ValueError, match=why):
        parse(text, "fixture.md")


def _complete(book: nbformat.NotebookNode) -> list[Block]:
    return [Block(c.id, english_hash(c.source), f"中文 {c.id}") for c in book.cells if c.cell_type == "markdown"]


def test_check_is_quiet_for_a_complete_current_translation():
    book = _english_book()
    assert check(book, _complete(book)) == []


def test_check_finds_missing_stale_unknown_and_code_cells():
    book = _english_book()
    blocks = [Block("c99-01", english_hash("# Title\n\nOld English."), "旧的"),  # stale
              Block("c99-02", english_hash("print(1 + 1)"), "代码"),  # a code cell
              Block("c99-77", "00000000", "已删除的格")]  # gone
    found = {(p.kind, p.cell_id) for p in check(book, blocks, "99_fixture")}
    assert found == {("stale", "c99-01"), ("missing", "c99-03"), ("not markdown", "c99-02"),
                     ("unknown", "c99-77")}
    stale = next(p for p in check(book, blocks) if p.kind == "stale")
    assert stale.english == "# Title\n\nSome *English*." and stale.old_hash == english_hash("# Title\n\nOld English.")


def test_build_keeps_the_code_and_puts_the_language_cell_after_the_colab_cell():
    book = _english_book()
    zh = build(book, _complete(book)[:1])
    assert [c.id for c in zh.cells] == ["c99-00", zh_edition.LANG_CELL_ID, "c99-01", "c99-02", "c99-03"]
    assert zh.cells[1].cell_type == "code" and 'al.set_language("zh")' in zh.cells[1].source
    assert zh.cells[2].source == "中文 c99-01"
    assert zh.cells[3].source == "print(1 + 1)"
    assert zh.cells[4].source == "More English."  # untranslated: kept (check() reports it)
    assert book.cells[1].source == "# Title\n\nSome *English*."  # the English notebook is not touched
    no_colab = _english_book()
    no_colab.cells.pop(0)
    assert build(no_colab, []).cells[0].id == zh_edition.LANG_CELL_ID


def test_the_language_cell_really_switches_the_language(chinese):
    language.set_language("en")
    exec(compile(zh_edition.LANG_CELL_SOURCE, "zh-lang", "exec"), {})
    assert language.current_language() == "zh"


def test_stub_prints_a_ready_block_with_the_english_text(capsys, tmp_path, monkeypatch):
    import zh_notebooks  # scripts/zh_notebooks.py

    (tmp_path / "notebooks").mkdir()
    nbformat.write(_english_book(), str(tmp_path / "notebooks" / "99_fixture.ipynb"))
    monkeypatch.setattr(zh_notebooks, "ROOT", tmp_path)
    assert zh_notebooks.main(["--stub", "99"]) == 1
    out = capsys.readouterr().out
    assert f"<!-- cell: c99-03 | en: {english_hash('More English.')} -->" in out and "More English." in out
    zh_notebooks.main(["--build"])
    assert (tmp_path / "notebooks" / "zh" / "99_fixture.ipynb").exists()
    assert zh_notebooks.main(["--check"]) == 1  # still untranslated, but built


# --------------------------------------------------------------------------- the course's own Chinese edition


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_every_markdown_cell_has_a_current_translation(lesson):
    problems = lesson.problems()
    assert problems == [], (
        f"{len(problems)} cell(s) of {lesson.name} need translating in {lesson.translation.relative_to(ROOT)} "
        f"(`python scripts/zh_notebooks.py --stub {lesson.name[:2]}` prints them):\n"
        + "\n".join(str(p) for p in problems))


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_code_cells_are_the_english_ones_with_chinese_comments(lesson):
    """Same cells, same code token for token; only the comments differ, and none is English."""
    assert lesson.chinese.exists(), f"{lesson.chinese.name} missing: run python scripts/zh_notebooks.py --build"
    english = [(c.id, zh_edition.without_comments(c.source)) for c in lesson.read_english().cells
               if c.cell_type == "code"]
    zh_cells = [c for c in nbformat.read(str(lesson.chinese), as_version=4).cells
                if c.cell_type == "code" and c.id != zh_edition.LANG_CELL_ID]
    assert [(c.id, zh_edition.without_comments(c.source)) for c in zh_cells] == english
    still_english = [f"{c.id}: # {text}" for c in zh_cells for _s, _e, text in zh_edition.comments(c.source)
                     if zh_edition.is_english_comment(text)]
    assert still_english == [], "English comments in the Chinese code cells:\n" + "\n".join(still_english)


@pytest.mark.parametrize("text, english", [
    ("(B, H, T, T)", False), ("(L, H, n, n) each", True), ("noqa: E731", False),
    ("noqa: E731  (L, H) labels so far", True), ("your number, e.g. 0.25", True), ("e.g. 3", True),
    ("(n, n)：每一行和为 1", False), ("q . k", False), ("a", False), ("type: ignore[arg-type]", False),
])
def test_an_english_comment_is_one_with_prose_words_and_no_chinese(text, english):
    assert zh_edition.is_english_comment(text) is english


def test_comments_are_translated_and_the_code_around_them_is_not():
    source = ('x = "# not a comment"  # a string with a hash\n'
              "def f(a):  # (B, T)\n"
              "    #   indented note\n"
              "    return a  # noqa: E731\n")
    table = {"a string with a hash": "带井号的字符串", "indented note": "缩进的注释", "unused": "没用到"}
    out = zh_edition.translate_comments(source, table)
    assert out == ('x = "# not a comment"  # 带井号的字符串\n'
                   "def f(a):  # (B, T)\n"
                   "    #   缩进的注释\n"
                   "    return a  # noqa: E731\n")
    assert zh_edition.without_comments(out) == zh_edition.without_comments(source)
    assert zh_edition.without_comments(out.replace("return a", "return b")) != zh_edition.without_comments(source)
    assert [t for _s, _e, t in zh_edition.comments("if (:\n  # broken")] == []  # no tokens: nothing touched


def test_build_translates_comments_and_check_reports_the_english_ones():
    book = _english_book()
    book.cells[2].source = "print(1 + 1)  # the sum of two ones\ny = 2  # a second line"
    table = {"the sum of two ones": "两个一的和"}
    zh = build(book, _complete(book), table)
    assert zh.cells[3].source == "print(1 + 1)  # 两个一的和\ny = 2  # a second line"
    assert zh.cells[0].source.startswith("# Colab set-up")  # the language cell still follows it
    assert zh.cells[1].id == zh_edition.LANG_CELL_ID
    problems = zh_edition.comment_problems(book, table, "99_fixture")
    assert [(p.kind, p.cell_id, p.english) for p in problems] == [
        ("english comment", "c99-02", "a second line"), ("english comment", "c99-00", "Colab set-up: ...")][::-1]


def test_the_comment_catalogue_reads_back_every_entry_and_has_no_stale_ones():
    table = zh_edition.read_comments(ROOT / "notebooks" / "zh" / "translations" / zh_edition.COMMENTS_FILE)
    used = {text for lesson in LESSONS for c in lesson.read_english().cells if c.cell_type == "code"
            for _s, _e, text in zh_edition.comments(c.source)}
    assert len(table) > 300
    stale = sorted(set(table) - used)
    assert stale == [], "entries of comments.po no English lesson uses any more:\n" + "\n".join(stale)
    assert all(zh_edition._CJK.search(v) for v in table.values())


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_committed_chinese_notebook_is_what_build_writes(lesson):
    assert lesson.is_current(), (f"notebooks/zh/{lesson.english.name} is not built from the current English "
                                 "lesson and translations: run python scripts/zh_notebooks.py --build")


def test_no_chinese_notebook_without_an_english_lesson():
    english = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    orphans = [p.name for p in (ROOT / "notebooks" / "zh").glob("*.ipynb") if p.name not in english]
    stray = [p.name for p in (ROOT / "notebooks" / "zh" / "translations").glob("*.md")
             if f"{p.stem}.ipynb" not in english]
    assert orphans == [] and stray == []


# --------------------------------------------------------------------------- messages


def _fixture_po() -> str:
    return (
        '# a comment\nmsgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
        '"Plural-Forms: nplurals=1; plural=0;\\n"\n\n'
        '#: x.py:1\nmsgid "head"\nmsgstr "头"\n\n'
        'msgid ""\n"two\\n"\n"lines \\"quoted\\""\nmsgstr "两行\\n“引号”"\n\n'
        '#, fuzzy\nmsgid "guess"\nmsgstr "猜的"\n\n'
        'msgid "empty"\nmsgstr ""\n\n'
        'msgid "{n} head"\nmsgid_plural "{n} heads"\nmsgstr[0] "{n} 个头"\n'
    )


def test_read_po_keeps_translations_and_drops_fuzzy_and_empty_ones():
    entries = read_po(_fixture_po())
    assert entries["head"] == "头"
    assert entries['two\nlines "quoted"'] == "两行\n“引号”"
    assert entries["{n} head\0{n} heads"] == "{n} 个头"
    assert "guess" not in entries and "empty" not in entries
    assert "empty" in read_po(_fixture_po(), untranslated=True)
    with pytest.raises(ValueError, match="line 2"):
        read_po('msgid "a"\nmsgstr unquoted\n')


def test_compiled_catalogue_is_read_back_by_gettext():
    mo = compile_mo(read_po(_fixture_po()))
    t = gettext.GNUTranslations(io.BytesIO(mo))
    assert t.gettext("head") == "头"
    assert t.gettext('two\nlines "quoted"') == "两行\n“引号”"
    assert t.gettext("guess") == "guess"  # fuzzy: English
    assert t.ngettext("{n} head", "{n} heads", 1) == t.ngettext("{n} head", "{n} heads", 5) == "{n} 个头"
    assert t.ngettext("apple", "apples", 2) == "apples"  # no entry: English plural rule


def test_compiled_catalogue_has_the_gnu_layout():
    """Read the bytes by hand (independently of gettext): header, sorted keys, NUL-terminated strings."""
    mo = compile_mo({"b": "乙", "a": "甲"})
    magic, revision, n, originals, translations, hash_size, _hash = struct.unpack("<7I", mo[:28])
    assert (magic, revision, n, originals, translations, hash_size) == (0x950412DE, 0, 3, 28, 52, 0)

    def string_at(table: int, k: int) -> bytes:
        length, offset = struct.unpack("<2I", mo[table + 8 * k: table + 8 * k + 8])
        assert mo[offset + length] == 0
        return mo[offset: offset + length]

    assert [string_at(originals, k) for k in range(3)] == [b"", b"a", b"b"]
    assert [string_at(translations, k) for k in range(1, 3)] == ["甲".encode(), "乙".encode()]


def test_language_switch_and_environment(monkeypatch, chinese):
    assert _("HOLDS") == "成立"
    language.set_language("en")
    assert _("HOLDS") == "HOLDS"
    monkeypatch.setenv("ATTNLAB_LANG", "zh_CN")
    language._state.update(lang=None, translation=None)  # as in a fresh process
    assert language.current_language() == "zh" and _("CANNOT TELL") == "无法判断"
    with pytest.raises(ValueError, match="未知的语言|unknown language"):  # the refusal in the reader's language
        language.set_language("klingon")


def extracted(folder: Path, source: str) -> set[str]:
    """The catalogue keys the extractor finds in a module of ``source`` (written as ``folder / "m.py"``)."""
    (folder / "m.py").write_text(source, encoding="utf-8")
    return {m.key for m in messages.messages_in(folder / "m.py", folder)}


def test_the_extractor_finds_messages_and_claims(tmp_path):
    found = extracted(
        tmp_path,
        'from attnlab.core.language import _, ngettext\n'
        'CLAIM = "heads differ"\n'
        'CLAIMS = {1: "first claim"}\n'
        'def f(v, n):\n'
        '    print(_("{n} of {total} heads").format(n=1, total=2))\n'
        '    print(ngettext("one head", "{n} heads", n))\n'
        '    ClaimVerdict.decide(CLAIM, holds=True, fails=False)\n'
        '    ClaimVerdict.missing("a literal claim", "why")\n'
        '    _(v)  # not a literal: nothing to extract\n')
    assert found == {"{n} of {total} heads", "one head\0{n} heads", "heads differ", "a literal claim"}


def test_every_printed_message_has_a_chinese_entry():
    missing = messages.untranslated("zh")
    assert missing == [], (
        f"{len(missing)} message(s) have no Chinese entry in attnlab/locale/zh/LC_MESSAGES/attnlab.po "
        "(`python scripts/zh_messages.py --update` adds empty entries to fill in):\n"
        + "\n".join(f"{g[0].msgid!r} ({g[0].where})" for g in missing))


def _fields(text: str) -> set[str]:
    return {f for _lit, f, _spec, _conv in string.Formatter().parse(text) if f is not None}


def test_translations_keep_the_placeholders_of_their_message():
    wrong = [(key, value) for key, value in language.catalogue("zh").items() if key
             for english, chinese in [(key.split("\0")[0], value.split("\0")[0])]
             if _fields(english) != _fields(chinese)]
    assert wrong == []


# --------------------------------------------------------------------------- Chinese lessons in smoke mode


def run_chinese_lesson(lesson, folder: Path) -> tuple[nbformat.NotebookNode, list[dict]]:
    """Execute ``lesson``'s Chinese notebook (environment already set by the caller), recording every
    figure's texts; returns the executed notebook and the figure records."""
    texts = folder / "figure-texts.jsonl"
    return lesson_runner.execute_recording(lesson.chinese, texts), figure_texts.read(texts)


def chinese_lesson_environment(monkeypatch, results_dir: Path) -> None:
    monkeypatch.setenv("ATTNLAB_SMOKE", "1")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # inline backend, as in Jupyter
    monkeypatch.delenv("ATTNLAB_LANG", raising=False)  # the lesson's own first cells must switch
    monkeypatch.setenv("ATTNLAB_RESULTS", str(results_dir))


def _shared_group(lesson):
    """The test worker's group of ``lesson``'s check: that of the run it reads, if another test makes it."""
    if lesson.name in zh_course.LESSONS:
        return pytest.param(lesson, marks=zh_course.GROUP)
    if lesson.name == lab_runs.LESSON:
        return pytest.param(lesson, marks=lab_runs.GROUP)
    return lesson


@pytest.mark.notebooks
@pytest.mark.parametrize("lesson", [_shared_group(lesson) for lesson in LESSONS], ids=IDS)
def test_chinese_lesson_shows_only_chinese(lesson, tmp_path, monkeypatch, request):
    """The lesson runs; no English verdict word, and no English prose (outside english_prose.ALLOWED),
    in what it prints or draws (every figure's texts included). Lessons 05 and 12 are read from the one run
    of them that the doors' test reads too (tests/zh_course.py); lesson 04 from the browser test's run of it
    in JupyterLab where there is one (tests/lab_runs.py)."""
    in_lab = lab_runs.RUNS.get("zh") if lesson.name == lab_runs.LESSON else None
    if lesson.name in zh_course.LESSONS:
        shared = request.getfixturevalue("zh_course_run")
        book, figures = shared.books[lesson.name], shared.figures[lesson.name]
    elif in_lab is not None:
        assert lab_runs.ran_clean(in_lab.book) == []
        book, figures = in_lab.book, in_lab.figures
    else:
        chinese_lesson_environment(monkeypatch, tmp_path / "results")
        book, figures = run_chinese_lesson(lesson, tmp_path)
    lines = figure_texts.reader_lines(book, figures)
    verdicts = [f"{where}: {line.strip()[:160]}" for where, line in lines if ENGLISH_VERDICT.search(line)]
    assert verdicts == [], "English verdict words in the Chinese lesson's output:\n" + "\n".join(verdicts)
    english = [f"{where}: {line.strip()[:160]}" for where, line in lines if english_prose.is_prose(line)]
    assert english == [], (f"{len(english)} line(s) of English prose in the Chinese {lesson.name} "
                           "(translate them through _() and the .po, or add a reasoned entry to "
                           "english_prose.ALLOWED):\n" + "\n".join(english))


def test_no_module_that_translates_rebinds_the_underscore():
    """``_, ax = plt.subplots()`` in a module that imports ``_`` breaks every ``_()`` of that function."""
    import ast

    bad = []
    for path in sorted((ROOT / "attnlab").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = any(isinstance(n, ast.ImportFrom) and n.module == "attnlab.core.language"
                      and any(a.name == "_" for a in n.names) for n in tree.body)
        if imports:
            bad += [f"{path.relative_to(ROOT)}:{n.lineno}" for n in ast.walk(tree)
                    if isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Store)]
    assert bad == [], "rename these throw-away names (e.g. _fig):\n" + "\n".join(bad)


# --------------------------------------------------------------------------- figures


def test_figures_in_chinese_have_chinese_labels_and_the_language_is_restored(tmp_path, monkeypatch):
    import json

    import numpy as np

    from attnlab.course import figures
    from attnlab.viz.plot import plot_head

    seen = []

    def maker(ctx):
        im = plot_head(np.full((2, 2), 0.5), ["a", "b"])
        seen.append((im.axes.get_xlabel(), im.axes.get_ylabel()))
        return im.figure

    monkeypatch.setattr(figures, "REGISTRY", {})
    monkeypatch.setattr(figures, "discover", lambda: figures.REGISTRY)
    figures.figure("fixture_head", lesson="00_tour.ipynb", caption="a fixture")(maker)
    language.set_language("en")
    entries = figures.build_all(object(), tmp_path, lang="zh", progress=False)
    figures.build_all(object(), tmp_path / "en", progress=False)
    assert seen == [("被关注的 token（键）", "查询 token"), ("attended-to token (key)", "query token")]
    assert entries[0]["lang"] == "zh" and (tmp_path / "fixture_head.png").exists()
    assert json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))[0]["lang"] == "zh"
    assert language.current_language() == "en"


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")  # no CJK font is switched on here
def test_lesson_06_and_08_figures_draw_no_english_prose(chinese):
    """The perturbation and fixedness figures, drawn on planted numbers in Chinese: every title, axis,
    colour-bar label and tick is Chinese (or a number, a token, a head label), and the kinds of damage
    and the spaces are named in Chinese."""
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    from test_fixedness import synthetic_shards  # tests/test_fixedness.py
    from test_plot import _study  # tests/test_plot.py

    from attnlab.analysis.compare import DisplacementControl, ExampleMaps
    from attnlab.analysis.fixedness import fixedness_report
    from attnlab.analysis.stats import Interval
    from attnlab.viz import fixedness_plots, perturbation_plots

    est = np.array([[0.2, -0.2, 0.0]])  # (L, H)
    iv = Interval(est, est - 0.05, est + 0.05, 0.95, 30)
    control = DisplacementControl(iv, iv, iv, {"lexical": 1.0, "syntactic": 3.0}, ("lexical", "syntactic"),
                                  "position", 30)
    maps = {k: torch.rand(2, 3, 4, 4).softmax(-1) for k in ("original", "lexical")}  # (L, H, n, n) each
    sims = {k: np.full((2, 3), 0.5) for k in maps}
    example = ExampleMaps(maps, {k: ["[CLS]", "王", "者", "[SEP]"] for k in maps}, {k: "王者" for k in maps}, {},
                          sims, sims)
    report = fixedness_report(synthetic_shards(n_shards=2), control=synthetic_shards(n_shards=2, seed=4), n_boot=20)
    figs = [perturbation_plots.plot_sensitivity_maps(_study(), n_boot=20),
            perturbation_plots.plot_followers(_study(), n_boot=20),
            perturbation_plots.plot_displacement_control(control),
            perturbation_plots.plot_example_rows(example, 1),
            fixedness_plots.plot_fixedness(report, threshold=0.5, fixed=report.fixedness >= 0.5,
                                           below_control=report.difference.high < 0),
            fixedness_plots.plot_fixedness_curve([10, 100], np.full((2, 2), 0.9), [0.5, 0.6], [0, 1],
                                                 control_per_layer=[0.95, 0.96])]
    texts = [t for fig in figs for t in figure_texts.texts_of(fig)]
    plt.close("all")
    assert [t for t in texts if english_prose.is_prose(t)] == []
    assert {"词法破坏，位置空间", "词法加句法破坏，token 空间", "位移相同时的差", "平均变化的直接差",
            "平均注意力图的尖锐度（0 = 平坦）"} <= set(texts)
    assert any(t.startswith("原句\n") for t in texts)  # the example's row label
    assert any(t.startswith("词法破坏与句法破坏对比，位置空间；") for t in texts)
    language.set_language("en")
    assert perturbation_plots.kind_word("both") == "both" and perturbation_plots.space_word("token") == "token space"


def test_chinese_figures_name_labels_kinds_and_curves_in_chinese(chinese):
    """Taxonomy cells and legend, the timing legend and the scaling curves: through the catalogue (LSTM stays)."""
    import numpy as np

    from attnlab.analysis.taxonomy import HeadLabels
    from attnlab.scratch.recurrence import Timing
    from attnlab.viz import pattern_plots
    from attnlab.viz.plot import tick_rotation
    from attnlab.viz.recurrence_plots import plot_timing

    labels = np.array([["self", "broad", "vertical"], ["previous", "next", "heterogeneous"]])
    fig = pattern_plots.plot_taxonomy(HeadLabels(labels=labels, reasons=np.full(labels.shape, ""), stats=None))
    assert [t.get_text() for t in fig.axes[0].texts] == ["自", "宽", "竖", "前", "后", "异"]
    assert "宽泛（1）" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ax = plot_timing(Timing([16, 32], 4, 64, {"lstm": [0.002, 0.003], "attention": [0.001, 0.004]}))
    assert {line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")} == {"LSTM", "自注意力"}
    assert tick_rotation(["[CLS]", "王", "者"]) == 0 and tick_rotation(["[CLS]", "the", "cat"]) == 90


def test_lesson_06s_threshold_slider_is_labelled_in_the_readers_language(chinese):
    pytest.importorskip("ipywidgets")
    from attnlab.viz.perturbation_widgets import threshold_slider

    assert threshold_slider(str, [0.1, 0.2], 0.1).children[0].description == "阈值"
    language.set_language("en")
    assert threshold_slider(str, [0.1, 0.2], 0.1).children[0].description == "threshold"
    assert threshold_slider(str, [0.1, 0.2], 0.1, description="change >").children[0].description == "change >"


def test_figures_command_writes_the_chinese_gallery_to_figures_zh(monkeypatch, tmp_path):
    from attnlab.tools import cli

    calls = {}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "load_model", lambda name: "model")
    monkeypatch.setattr(cli, "build_all", lambda m, out, **kw: calls.update(out=out, **kw) or [])
    assert cli.main(["figures", "--lang", "zh", "--smoke"]) == 0
    assert calls["out"] == "figures/zh" and calls["lang"] == "zh"
    assert cli.main(["figures", "--smoke"]) == 0 and calls["out"] == "figures" and calls["lang"] == "en"


def test_sensitivity_tables_show_the_verdict_word_in_the_readers_language(chinese):
    from attnlab.course.claims.sensitivity import format_rows, summary
    from attnlab.course.verdicts import FAILS, HOLDS

    rows = [["threshold", "verdict"], [0.3, HOLDS], [0.5, FAILS]]
    table = format_rows(rows)
    assert "判断" in table and "成立" in table and "不成立" in table and not ENGLISH_VERDICT.search(table)
    assert "不成立" in summary(rows) and rows[1][1] == HOLDS  # the rows themselves stay English
    language.set_language("en")
    assert "does not hold" in format_rows(rows) and "holds" in summary([rows[0], rows[1]])


def test_course_command_refuses_an_unknown_language_before_setting_up():
    import subprocess

    done = subprocess.run(["bash", str(ROOT / "scripts" / "course.sh"), "--lang", "fr"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "unknown language 'fr'" in done.stderr and "zh_CN" in done.stderr


def test_the_extractor_finds_marked_templates_and_what_a_check_checked(tmp_path):
    found = extracted(
        tmp_path,
        'from attnlab.core.language import N_\n'
        'WHAT = "rows sum to 1"\n'
        'def f(n):\n'
        '    why = N_("{n} shards are too few").format(n=n)\n'
        '    Check.of(WHAT, passed=True)\n'
        '    Check.of(what="a literal check", passed=False)\n')
    assert found == {"{n} shards are too few", "rows sum to 1", "a literal check"}


def test_a_reason_with_numbers_is_stored_in_english_and_shown_translated(chinese):
    from attnlab.analysis.stats import Interval, too_few_units
    from attnlab.course.verdicts import ClaimVerdict

    language.set_language("en")
    why = too_few_units(Interval(estimate=0.5, low=0.4, high=0.6, n=4), need=10)
    assert why == "the interval rests on 4 resampled units; deciding needs at least 10"
    verdict = ClaimVerdict.missing("most heads attend to themselves", why)
    language.set_language("zh")
    assert verdict.to_record()["numbers"]["missing"] == why  # the record stays English
    shown = str(verdict)
    assert "区间只基于 4 个重抽样单位" in shown and "至少需要 10 个" in shown
    assert "resampled" not in shown and not ENGLISH_VERDICT.search(shown)
    assert language.translated("no template fills this 3 times") == "no template fills this 3 times"


def test_the_extractor_reads_the_code_cells_of_the_lessons(tmp_path):
    book = nbformat.v4.new_notebook()
    cells = [nbformat.v4.new_code_cell('if True:\n    %pip install -q x\n!ls'),
             nbformat.v4.new_markdown_cell('_("not code")'),
             nbformat.v4.new_code_cell('from attnlab.core.language import _\nprint(_("{n} heads").format(n=3))')]
    for k, cell in enumerate(cells):
        cell["id"] = f"c99-{k:02d}"
    book.cells = cells
    (tmp_path / "notebooks").mkdir()
    nbformat.write(book, str(tmp_path / "notebooks" / "99_fixture.ipynb"))
    found = messages.messages_in_notebook(tmp_path / "notebooks" / "99_fixture.ipynb", tmp_path)
    assert [(m.msgid, m.where) for m in found] == [("{n} heads", "notebooks/99_fixture.ipynb:c99-02:2")]
    (tmp_path / "pkg").mkdir()
    assert set(messages.extract(tmp_path / "pkg", tmp_path / "notebooks")) == {"{n} heads"}
    assert messages.extract(tmp_path / "pkg", None) == {}


def test_the_lessons_own_messages_are_in_the_catalogue_check():
    lesson_05 = [m for group in messages.extract().values() for m in group
                 if m.where.startswith("notebooks/05_reading_heatmaps.ipynb:")]
    assert any(m.msgid.startswith("closest to the line") for m in lesson_05)


def test_the_empty_message_stays_empty_instead_of_showing_the_catalogue_header(chinese):
    assert _("") == "" and language.translated("") == ""
    from attnlab.course.verdicts import ClaimVerdict

    shown = str(ClaimVerdict.decide("some heads change", holds=False, fails=False, first_clear=""))
    assert "Project-Id-Version" not in shown and "最先明确的头 = ）" in shown  # the key labelled, the empty value empty


def test_tables_and_head_reports_show_their_words_in_the_readers_language(chinese):
    import numpy as np

    from attnlab.analysis.compare import heads_report
    from attnlab.analysis.stats import Interval
    from attnlab.course.claims.averaging import fixed_share_table  # noqa: F401  (its header words are marked)
    from attnlab.course.claims.sensitivity import format_rows

    table = format_rows([["threshold", "fixed", "varying", "cannot tell", "uniform"], [0.5, 3, 2, 1, 0]])
    header = table.splitlines()[0].split()
    assert header[1:] == ["固定", "多样", "无法判断", "均匀"] and not ENGLISH_VERDICT.search(table)
    iv = Interval(estimate=np.array([[0.9, 0.1]]), low=np.array([[0.85, 0.05]]), high=np.array([[0.95, 0.15]]), n=10)
    assert heads_report(iv, 0, [1], "change") == "  L1 H2：变化 0.100 [0.050, 0.150]，在本层 2 个头中排第 2"
    language.set_language("en")
    assert heads_report(iv, 0, [1], "change") == "  L1 H2: change 0.100 [0.050, 0.150], rank 2 of 2 in its layer"
    assert format_rows([["threshold", "fixed"], [0.5, 3]]).splitlines()[0].split() == ["threshold", "fixed"]


def test_kinds_of_damage_and_readings_are_named_in_the_readers_language(chinese):
    from attnlab.course.claims.perturbation import kind_word

    assert [kind_word(w) for w in ("lexical", "syntactic", "last", "neither")] == ["词法", "句法", "最后一层", "neither"]
    language.set_language("en")
    assert [kind_word(w) for w in ("lexical", "both", "chosen")] == ["lexical", "both", "chosen"]


def test_a_template_field_used_twice_must_match_the_same_text(chinese):
    template = language.N_("from {x} to {x} and {y}")
    assert language._pattern(template).fullmatch("from 1 to 1 and 2")
    assert not language._pattern(template).fullmatch("from 1 to 3 and 2")


def test_checks_show_their_result_and_what_they_checked_in_the_readers_language(chinese):
    from attnlab.course.claims.scaling import CHECK_VARIANCE
    from attnlab.course.checks import Check

    shown = str(Check.of(CHECK_VARIANCE, passed=False, worst_relative_error=0.25))
    assert shown.startswith("检查：") and "不通过" in shown and "方差为 1 的随机 q 和 k" in shown
    language.set_language("en")
    assert str(Check.of(CHECK_VARIANCE, passed=True)).startswith(f"Check: {CHECK_VARIANCE}: passed")


# --------------------------------------------------------------------------- the English-prose detector


@pytest.mark.parametrize("line, prose", [
    ("Check: rows sum to 1: passed", True),
    ("  * Attention faster than an LSTM for n < d: 无法判断", True),
    ("mean distance within a layer 1.512, between layers 2.381", True),
    ("attnlab 0.1.0 doctor: is this machine ready for the course?", True),
    ("query token (the row's owner)", True),
    ("检查：各行之和为 1：通过", False),
    ('al.set_language("en") 换回英文', False),  # code
    ("['[CLS]', 'the', 'cat', 'sat', 'on']", False),  # token strings
    ("第 1 层的 bootstrap 区间，smoke 模式", False),  # single English terms the glossary keeps
    ("模型 all-MiniLM-L6-v2 (bundled)", False),  # an allowed model name
    ("见 Michel 等的 Are Sixteen Heads Really Better than One?", False),  # an allowed paper title
    ("L1 H7 layer=0 head=6 d_k=64", False),
    ("two words", False),
])
def test_the_detector_finds_english_prose_and_leaves_code_data_and_allowed_names(line, prose):
    assert english_prose.is_prose(line) is prose, english_prose.runs(line)


def test_every_allowed_english_phrase_has_a_reason_and_matches_its_example():
    for allowed in english_prose.ALLOWED:
        assert len(allowed.reason) > 10, allowed
        re.compile(allowed.pattern)
    shown = english_prose.visible_text("<b>层</b><script>var a = 'not shown to the reader';</script>&lt;1")
    assert shown.split() == ["层", "<1"]


@pytest.mark.notebooks
def test_the_figure_hook_collects_every_text_of_every_figure(tmp_path):
    """A planted notebook draws known texts; the hook must report each of them, with its cell."""
    from attnlab.tools.lesson_runner import execute_notebook

    path = tmp_path / "texts.jsonl"
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(figure_texts.hook_source(path)),
                  nbformat.v4.new_code_cell("print('no figure here')"),
                  nbformat.v4.new_code_cell(
                      "import matplotlib.pyplot as plt\n"
                      "fig, ax = plt.subplots()\n"
                      "ax.plot([0, 1], [0, 1], label='曲线')\n"
                      "ax.set_title('标题'); ax.set_xlabel('横轴'); ax.set_ylabel('纵轴')\n"
                      "ax.set_xticks([0, 1], ['甲', '乙'])\n"
                      "ax.legend(title='图例')\n"
                      "ax.annotate('注释', (0.5, 0.5))\n"
                      "fig.suptitle('总标题')\n"
                      "plt.show()")]
    execute_notebook(book, tmp_path)
    records = figure_texts.read(path)
    assert [r["execution_count"] for r in records] == [book.cells[2].execution_count]
    assert {"曲线", "标题", "横轴", "纵轴", "甲", "乙", "图例", "注释", "总标题"} <= set(records[0]["texts"])


# --------------------------------------------------------------------------- one vocabulary


#: Chinese documents under rewrite elsewhere, with why; each is still read by ``test_glossary_covers_docs``,
#: which expects it to fail (strictly) until the rewrite lands, and then this entry goes
PENDING_DOCS: dict[str, str] = {}


def _zh_documents() -> list[str]:
    """Every Chinese document a student or teacher reads, relative to the repository: each README.zh-CN.md
    and every ``docs/*.zh-CN.md`` but the glossary (which names the forms it rules out, to rule them out)."""
    readmes = [p for p in ROOT.rglob("README.zh-CN.md") if not {".venv", "node_modules", ".git"} & set(p.parts)]
    docs = [p for p in (ROOT / "docs").glob("*.zh-CN.md") if p.name != "glossary.zh-CN.md"]
    return sorted(str(p.relative_to(ROOT)) for p in readmes + docs)


def _chinese_texts() -> list[tuple[str, str]]:
    """``(name, text)`` of everything a Chinese reader reads: the markdown of every Chinese notebook,
    the catalogue's translations, the Chinese READMEs and documents (:func:`_zh_documents`) and the
    code comments' catalogue."""
    out = []
    for lesson in LESSONS:
        book = nbformat.read(str(lesson.chinese), as_version=4)
        out += [(f"{lesson.chinese.relative_to(ROOT)}:{c.id}", c.source) for c in book.cells if c.cell_type == "markdown"]
    out += [(f"attnlab.po:{key.split(chr(0))[0][:60]!r}", value) for key, value in language.catalogue("zh").items() if key]
    out += [(name, (ROOT / name).read_text(encoding="utf-8")) for name in _zh_documents() if name not in PENDING_DOCS]
    comments = zh_edition.read_comments(ROOT / "notebooks" / "zh" / "translations" / zh_edition.COMMENTS_FILE)
    out += [(f"comments.po:{key[:60]!r}", value) for key, value in comments.items()]
    return out  # figure texts are catalogue entries (figures draw _() of their labels), so they are in here


#: each drift form the glossary rules out, planted in a sentence, and the variant the check must report
PLANTED_DRIFT = [
    ("上面的敏感度表显示线移动时哪些判断仍然站得住", "线移动"), ("某一层越过一条它其实没有越过的线", "越过一条它其实没有越过的线"),
    ("比原论断更容易过线", "过线"), ("有区间跨过这条线", "这条线"), ("取决于线划在哪里", "线划在哪里"),
    ("形状是 (批, 头, token, 头宽)", "头宽"), ("切成两个更宽的头", "更宽的"), ("拼接成一个宽的头", "一个宽的"),
    ("无法区分头太多和头太窄", "头太窄"), ("所以头越多，每个头就越窄", "头就越窄"), ("隐藏层宽度", "宽度"),
    ("两者都是在同一批查询上的平均", "查询"), ("比例 0.40（对查询重抽样）", "查询"), ("基于 40 个查询的区间", "查询"), ("1,000 条查询上", "条查询"),
    ("本次运行：12 层 x 12 个头", " x "), ("{layers} 层 x {heads} 个头", " x "),
    ("设计 B，固定每个头的大小", "固定每个头的大小"), ("固定头大小时不成立", "固定头大小"),
    ("多头是弱学习器的集成", "弱学习器"), ("各头可以互相替补", "互相替补"), ("树与树之间可以互相顶替", "互相顶替"),
    ("互相补位的头", "互相补位"), ("头越少，越多的注意力落到自身", "自身"), ("自身份额 0.3", "自身"),
    ("上一个 token 的份额", "上一个"), ("下一个 token 的份额", "下一个"), ("非内容头占全部头的份额", "份额"),
    ("两种真实影响", "真实影响"), ("把五种看法放在同一块计分板上", "看法"), ("以冒烟模式运行", "冒烟模式"),
    ("把它携带的内容清零", "清零"), ("每次前向传播的毫秒数", "前向传播"), ("重组后的头数", "重组"),
    ("其他片段（不含字母）", "片段"), ("熵 1.20 nats", "nats"), ("层内分散程度随深度减小", "分散程度"),
    ("“头越多不一定越好”与「每个 token 都关注自己」", "「"), ("0.12 +- 0.03", "+-"),
    ("Spearman rho 为 0.5", "rho"), ("原始权重 alpha", "alpha"), ("去掉位置编码", "位置编码"),
    ("注意力汇聚点", "注意力汇聚点"),
    ("一次冒烟运行", "冒烟运行"), ("冒烟测试时", "冒烟"), ("按每个头的内容质量加权", "内容质量"), ("见敏感性表", "敏感性表"),
    ("忠实度记分表", "记分表"), ("分界线不是 1", "分界线"), ("高于此线即成立", "此线"), ("区间低于它的线", "的线"),
    ("与 LayerNorm 给出的线比较", "给出的线"), ("两种基准真值", "基准真值"), ("13 · 注意力权重没有告诉你的事", "没有告诉你的事"),
    ("在大量查询上测量", "查询"), ("对 30,000 条等长查询取平均", "查询"), ("来自对**查询**重抽样", "查询"),
    ("对查询分片取的区间", "查询"), ("与同一批中的其他查询区分开", "查询"), ("许多内置查询的注意力图", "查询"),
    ("查询噪声和探针噪声", "查询"), ("（40 条输入）", "输入"), ("切成更宽的头", "更宽的"),
]

#: the drift forms whose rewrite depends on the sentence: found, and left by :func:`zh_vocabulary.fix` for a person
BY_HAND = {"头宽", "更宽的", "一个宽的", "头太窄", "头就越窄", "分界线", "此线", "的线", "给出的线"}


@pytest.mark.parametrize("text, variant", PLANTED_DRIFT, ids=[v for _t, v in PLANTED_DRIFT])
def test_glossary_catches_planted_drift(text, variant):
    """Every drift form the glossary rules out is found when planted in a sentence (as a family of forms,
    not one exact string), and :func:`zh_vocabulary.fix` leaves none."""
    from attnlab.tools import zh_vocabulary

    found = [f for _line, f, _v in zh_vocabulary.found_in(text)]
    assert any(variant in f or f in variant for f in found), (text, found)
    if variant in BY_HAND:
        assert zh_vocabulary.fix(text) == text  # no mechanical rewrite ("维度更高（低）的" came from one)
    else:
        assert zh_vocabulary.found_in(zh_vocabulary.fix(text)) == []


def test_glossary_leaves_the_legitimate_uses_of_the_same_characters_alone():
    from attnlab.tools import zh_vocabulary

    fine = ["竖线、对角线、连线视图、曲线和基线", "每条线都向上斜一行", "区间窄得不可信", "查询向量、查询 token、查询行 i",
            "100 条查询句；同一批查询句上", "反向传播", "层内离散度", "各行自身的信息", "每个目标函数自身的一致程度",
            "`rho`、{rho:.2f}、{best_rho}、$\\alpha_{ij}$、alpha_ij", "“头越多不一定越好”", "12 层 × 12 个头，x 的形状",
            "下一个单元格", "在评估文本上一个一个地屏蔽", "它的份额（全部头）", "固定每头维度"]
    assert [(t, zh_vocabulary.found_in(t)) for t in fine if zh_vocabulary.found_in(t)] == []


@pytest.mark.parametrize("text, variant", [
    ("每层 12 层 x 12 个头", " x "), ("取决于线划在哪里", "线划在哪里"), ("注意力汇聚点", "注意力汇聚点"),
    ("1,000 条查询上", "条查询"), ("隐藏层宽度", "宽度"), ("去掉位置编码", "位置编码"),
])
def test_the_vocabulary_check_finds_a_planted_variant_and_fix_removes_it(text, variant):
    from attnlab.tools import zh_vocabulary

    assert [found for _line, found, _v in zh_vocabulary.found_in(text)][:1] == [variant]
    assert zh_vocabulary.found_in(zh_vocabulary.fix(text)) == []


def test_the_vocabulary_check_leaves_the_words_it_recommends_and_code_alone():
    from attnlab.tools import zh_vocabulary

    fine = ("12 层 × 12 个头；汇点；1,000 条查询句；每条查询行；隐藏维度；位置嵌入；连线视图、头视图；"
            "`q = x W_q`；x 的形状；阈值定在哪里；平均注意力图")
    assert zh_vocabulary.found_in(fine) == []


def _glossary_problems(texts: list[tuple[str, str]]) -> list[str]:
    from attnlab.tools import zh_vocabulary

    return [f"{name} (line {line}): {found!r} -> {variant.use.strip()!r} ({variant.reason})"
            f"{' (rewrite by hand)' if variant.by_hand else ''}"
            for name, text in texts for line, found, variant in zh_vocabulary.found_in(text)]


def test_the_chinese_edition_uses_the_glossarys_words():
    """No variant the glossary discourages (docs/glossary.zh-CN.md, 统一用词) in what a Chinese reader reads."""
    from attnlab.tools import zh_vocabulary

    assert all(len(v.reason) > 10 for v in zh_vocabulary.DISCOURAGED)
    bad = _glossary_problems(_chinese_texts())
    assert bad == [], f"{len(bad)} discouraged variant(s); zh_vocabulary.fix() rewrites them:\n" + "\n".join(bad)


@pytest.mark.parametrize("text, variant", PLANTED_DRIFT, ids=[v for _t, v in PLANTED_DRIFT])
def test_glossary_reads_whole_text(text, variant):
    """The edition's check reads whole texts: each listed drift, planted in README.zh-CN with a line break
    inside the variant (as an editor's line wrap would put it), makes the check fail at the right line."""
    readme = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert _glossary_problems([("README.zh-CN.md", readme)]) == []
    start = text.index(variant.strip() or variant)
    # a Chinese variant is wrapped in its middle; an English one before it (a break inside a word is no wrap)
    cut = start if variant.strip().isascii() else start + max(1, len(variant.strip()) // 2)
    wrapped = text[:cut].rstrip() + "\n" + text[cut:].lstrip()
    planted = readme.rstrip("\n") + "\n\n" + wrapped + "\n"
    line = planted.count("\n", 0, len(readme.rstrip("\n")) + 2) + 1
    bad = _glossary_problems([("README.zh-CN.md", planted)])
    assert bad, f"{variant!r} split across a line break is not found"
    assert any(f"(line {line})" in b or f"(line {line + 1})" in b for b in bad), bad


def test_zh_no_bracketed_alternation():
    """No Chinese text a reader sees offers opposites in brackets ("维度更高（低）的"): the checker finds
    a planted one, in one line or across a line break, and leaves brackets that explain alone."""
    from attnlab.tools import zh_vocabulary

    for planted in ("(批, 头, token, 维度更高（低）的)", "区间更宽（或更窄）", "份额增加（减少）时", "维度更\n高（低）的"):
        assert zh_vocabulary.alternations(planted), planted
    fine = "第 08 课（行）、熵（奈特）、固定度（对照）、对角线下方（或上方）的格子、最高占比（上界）、头（词法）"
    assert zh_vocabulary.alternations(fine) == []
    figures = [(f"figures/zh/{e['file']}", "\n".join(e.get("texts", [])))
               for e in json.loads((ROOT / "figures" / "zh" / "manifest.json").read_text(encoding="utf-8"))]
    texts = _chinese_texts() + figures + [("docs/glossary.zh-CN.md", (ROOT / "docs" / "glossary.zh-CN.md").read_text(encoding="utf-8"))]
    bad = [f"{name} (line {line}): {found!r}" for name, text in texts for line, found in zh_vocabulary.alternations(text)]
    assert bad == [], "bracketed alternatives a reader cannot resolve; write the sentence that means one:\n" + "\n".join(bad)


def test_generated_model_and_machine_descriptions_read_in_chinese():
    """The Chinese documents' generated tables name each source's model and machine in Chinese
    (attnlab/core/numbers.json records them in English), and README.zh-CN and the guide carry those words."""
    english = re.compile(r"\b(?:quiet|busy|threads?|core|CPU|with|nothing|else|running|bundled|default|random|"
                         r"model|shape|shared|other|work|another|beside|lessons|each|the)\b")
    numbers = course_numbers.gather()
    for source in numbers["sources"].values():
        for text in (source["model"], source["machine"]):
            shown = course_numbers.described(text, "zh")
            assert not english.search(re.sub(r"`[^`]*`", "", shown)), (text, shown)  # code in backticks stays
    assert course_numbers.described("2-core CPU, quiet", "en") == "2-core CPU, quiet"
    for name in ("README.zh-CN.md", "docs/teaching.zh-CN.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "nothing else running" not in text and "(bundled)" not in text and "2-core" not in text, name


@pytest.mark.parametrize("variable", ["ATTNLAB_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_the_hubs_offline_reason_reads_in_the_readers_language(variable, monkeypatch, chinese):
    """Lesson 00's doctor line says why the hub was not asked: in Chinese, no English clause inside it
    (it printed "拒绝连接（ATTNLAB_OFFLINE is set）")."""
    from attnlab.core import hub

    for name in ("ATTNLAB_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, "1")
    shown = hub.probe("bert-base-chinese").describe()
    assert f"（设置了 {variable}）" in shown, shown
    assert not re.search(r"[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}", shown), shown  # not even two English words
    language.set_language("en")
    assert f"({variable} is set)" in hub.probe("bert-base-chinese").describe()
    assert hub.offline_variable() == variable


def test_head_labels_print_their_counts_in_the_readers_language(chinese):
    """Lesson 05 prints its labels: in Chinese "12 层 × 12 个头", not "12 layers x 12 heads" (the label names
    stay, as the glossary keeps them); repr stays English, for code."""
    import numpy as np

    from attnlab.analysis.taxonomy import HeadLabels

    names = np.array([["vertical", "previous", "vertical"], ["broad", "vertical", "heterogeneous"]])
    heads = HeadLabels(labels=names, reasons=np.full(names.shape, ""), stats=None, thresholds={})
    assert str(heads) == "HeadLabels(2 层 × 3 个头：previous 1, vertical 3, broad 1, heterogeneous 1)"
    assert repr(heads) == "HeadLabels(2 layers x 3 heads: previous 1, vertical 3, broad 1, heterogeneous 1)"
    language.set_language("en")
    assert str(heads) == repr(heads)


@pytest.mark.parametrize("line, found", [
    ("模型仓库 https://huggingface.co 拒绝连接（ATTNLAB_OFFLINE is set）", ["is set"]),
    ("HeadLabels(12 layers x 12 heads: previous 1)", ["heads: previous"]),
    ("two words", ["two words"]),
    ("Check: rows sum to 1: passed", ["Check: rows sum to"]),
    ("把 answer 设为一对从 0 开始的 (layer, head)。", []),  # a tuple of names is code
    ("检查：split_heads(q)[0, h] 等于 q_big[0, :, start:stop]：通过", []),  # a slice
    ("运行 `attnlab download bert-base-chinese --to DIR`，再设置 ATTNLAB_MODEL=DIR", []),  # backticks
    ("positional  special  固定的占比   下限   上限", []),  # lesson 05's keyword arguments, allowed
    ("第 1 层的 bootstrap 区间，smoke 模式", []),
    ("(games, dishes and cities)", ["games, dishes and cities"]),  # not a tuple of names
])
def test_the_full_mode_check_reads_two_english_words_as_english(line, found):
    """scripts/zh_output_check.py reads with issue 54's measure, two English words in a row; code stays code."""
    assert english_prose.runs(line, run=2) == found


def test_a_numbers_key_names_its_probe_task_in_the_readers_language(chinese):
    """Lesson 12's verdict 6b printed "信度，word start": a number's key that names a probe task shows
    the task in Chinese (the key stays English in the saved record)."""
    from attnlab.analysis.probes import TASKS
    from attnlab.core.language import N_
    from attnlab.course.cards import label

    keys = [N_("reliability, {task}").format(task=task) for task in TASKS]  # as conclusion 6b writes them
    assert keys == ["reliability, family", "reliability, word start"]
    assert [label(key) for key in keys] == ["信度，查询句类别", "信度，词首"]


# --------------------------------------------------------------------------- the documents, first-use glosses, floors


#: the forms a native editor found in the documents and the newest lessons, planted in a sentence, and the
#: variant the check must report (the untrained twin, the floor, the teacher's guide's slips)
DOC_DRIFT = [
    ("把模型和它的未训练孪生模型并排画出", "孪生"), ("差值必须超过 0.05 的下限", "下限"), ("每个词片单独计数", "词片"),
    ("见敏感性表", "敏感性表"), ("这条判定不变", "判定"), ("用钩子把位置项去掉", "钩子"), ("注意力展开的假设", "注意力展开"),
    ("整个模型一起敲除则在所有层置零", "整个模型一起敲除"), ("句子向量之间的 1 − cos", "句子向量"),
    ("它自己的隐藏状态仍然参与平均", "隐藏状态"), ("按内容质量加权", "内容质量"), ("同样的汇聚现象", "汇聚现象"),
    ("排序的折半稳定性", "折半"), ("以及对应的英文查询", "英文查询"), ("取自随包附带的完整参照", "完整参照"),
    ("Mohebbi 的 值置零只在一层里", " "), ("一行是某个 query token 对所有 key 做的 softmax", "query"),
    ("规则一共画了四条线", "四条线"), ("区间碰到了某条线", "条线"),
]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=PENDING_DOCS[n]))
                                  if n in PENDING_DOCS else n for n in _zh_documents()])
def test_glossary_covers_docs(name):
    """Each Chinese document a student or teacher reads (READMEs, ``docs/*.zh-CN.md``) is read whole by the
    glossary check, is clean, and each form a native editor found, planted in it, fails the check."""
    from attnlab.tools import zh_vocabulary

    assert name in {n for n, _text in _chinese_texts()}, f"{name} is not read by the edition's glossary check"
    text = (ROOT / name).read_text(encoding="utf-8")
    assert _glossary_problems([(name, text)]) == []
    for sentence, variant in DOC_DRIFT:
        planted = text.rstrip("\n") + "\n\n" + sentence + "\n"
        found = [found for _line, found, _v in zh_vocabulary.found_in(planted)]
        assert any(variant in f or f in variant for f in found), (name, sentence, found)


def test_the_documents_read_are_every_chinese_document():
    """The glossary check reads the Chinese documents by pattern, so a new one is read without a list to update."""
    names = _zh_documents()
    assert {"README.zh-CN.md", "docs/teaching.zh-CN.md", "docs/install.zh-CN.md", "docs/classroom.zh-CN.md"} <= set(names)
    assert "docs/glossary.zh-CN.md" not in names


def _first_use_terms() -> list[tuple[str, str, list[str]]]:
    """``(term, English gloss, compounds that do not count)`` from the glossary's 首次出现时加注英文 table."""
    text = (ROOT / "docs" / "glossary.zh-CN.md").read_text(encoding="utf-8")
    section = text.split("## 首次出现时加注英文", 1)[1]
    rows = [line.strip().strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return [(zh.strip(), en.strip(), [w for w in (c.strip() for c in not_counted.split("、")) if w])
            for zh, en, not_counted in rows[1:]]


def _first_use(term: str, not_counted: list[str], texts: list[tuple[str, str]]) -> tuple[str, str, int] | None:
    """``(name, text, index)`` of the first use of ``term`` in ``texts`` (code spans left out), skipping
    the compounds in ``not_counted``; None when the term is never used."""
    for name, text in texts:
        prose = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), text)  # same length: indices stay
        for m in re.finditer(re.escape(term), prose):
            if not any(prose.startswith(w, i) for w in not_counted
                       for i in range(max(0, m.start() - len(w) + 1), m.start() + 1)):
                return name, prose, m.start()
    return None


def _glossed(prose: str, start: int, term: str, english: str) -> bool:
    """Whether the term at ``start`` is followed (past emphasis and 向量) by a bracket naming ``english``."""
    after = prose[start + len(term):]
    m = re.match(r"[*\s]*(?:向量)?[*\s]*（([^）]*)）", after)
    return bool(m) and english.lower() in m.group(1).lower()


def _course_markdown() -> list[tuple[str, str]]:
    """The Chinese lessons' markdown, in course order (00 to 13), one ``(lesson:cell, text)`` per cell."""
    out = []
    for lesson in LESSONS:
        book = nbformat.read(str(lesson.chinese), as_version=4)
        out += [(f"{lesson.name}:{c.id}", c.source) for c in book.cells if c.cell_type == "markdown"]
    return out


def test_zh_first_use_glosses():
    """Every term the glossary marks carries its English word in brackets where the course first uses it
    (d2l-zh's convention: students need the English words to read the papers)."""
    terms = _first_use_terms()
    assert {"查询", "键", "值", "汇点", "探针", "余量", "容差", "困惑度", "消融", "未训练对照模型", "最小差距"} <= {t for t, _e, _n in terms}
    texts = _course_markdown()
    bad = []
    for term, english, not_counted in terms:
        first = _first_use(term, not_counted, texts)
        assert first is not None, f"{term} is never used: take it out of the glossary's table"
        name, prose, start = first
        if not _glossed(prose, start, term, english):
            bad.append(f"{name}: {prose[max(0, start - 20):start + len(term) + 20]!r} needs （{english}）")
    assert bad == [], "first uses without their English word:\n" + "\n".join(bad)


def test_first_use_check_finds_a_missing_gloss_and_skips_compounds():
    texts = [("a", "这里的阈值和查询句都不算，余量才算。"), ("b", "余量（margin）")]
    name, prose, start = _first_use("余量", [], texts)
    assert name == "a" and not _glossed(prose, start, "余量", "margin")
    assert _first_use("值", ["阈值"], texts[:1]) is None
    assert _first_use("查询", ["查询句"], texts) is None
    name, prose, start = _first_use("余量", [], texts[1:])
    assert _glossed(prose, start, "余量", "margin")
    assert _glossed("*查询向量*（query）", 1, "查询", "query")


FLOOR_WORD, LOWER_END_WORD, AMBIGUOUS_WORD = "最小差距", "下端", "下限"
#: a msgid naming the floor as a word (not a {floor} placeholder alone)
FLOOR_ID = re.compile(r"\bfloors?\b", re.IGNORECASE)
#: a msgid naming an interval's lower end: a number name that ends in "low" / "low end" ("slope low", "gap_low")
LOW_END_ID = re.compile(r"(?:^|[\s_:,])(?:low|low end)$")


def _english_prose(markdown: str) -> str:
    return re.sub(r"`[^`\n]*`", "", markdown)


def test_floor_word_distinct():
    """One Chinese word for the floor (最小差距), another for an interval's lower end (下端); 下限, which said
    both (and both could sit on one card), appears nowhere in the catalogue, the code comments or the lessons."""
    catalogue = {k: v for k, v in language.catalogue("zh").items() if k}
    floors = [k for k in catalogue if FLOOR_ID.search(re.sub(r"\{[^}]*\}", "", k))]
    lows = [k for k in catalogue if LOW_END_ID.search(k)]
    assert len(floors) >= 8 and len(lows) >= 20  # the twin rule's messages and the verdicts' number names
    bad = [f"floor: {k!r} -> {catalogue[k]!r}" for k in floors if FLOOR_WORD not in catalogue[k]]
    bad += [f"lower end: {k!r} -> {catalogue[k]!r}" for k in lows
            if LOWER_END_WORD not in catalogue[k] or FLOOR_WORD in catalogue[k]]
    comments = zh_edition.read_comments(ROOT / "notebooks" / "zh" / "translations" / zh_edition.COMMENTS_FILE)
    texts = [(f"attnlab.po:{k[:50]!r}", v) for k, v in catalogue.items()] + list(comments.items())
    for lesson in LESSONS:
        english = {c.id: c.source for c in nbformat.read(str(lesson.english), as_version=4).cells}
        for cell in nbformat.read(str(lesson.chinese), as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            texts.append((f"{lesson.name}:{cell.id}", cell.source))
            prose = _english_prose(english.get(cell.id, ""))
            if FLOOR_ID.search(prose) and FLOOR_WORD not in cell.source:
                bad.append(f"{lesson.name}:{cell.id} names the floor without {FLOOR_WORD}")
            if re.search(r"\blower end\b", prose) and LOWER_END_WORD not in cell.source:
                bad.append(f"{lesson.name}:{cell.id} names an interval's lower end without {LOWER_END_WORD}")
    bad += [f"{name}: {AMBIGUOUS_WORD}" for name, text in texts if AMBIGUOUS_WORD in text]
    assert bad == [], "\n".join(bad)
    glossary = (ROOT / "docs" / "glossary.zh-CN.md").read_text(encoding="utf-8")
    assert f"| floor | {FLOOR_WORD} |" in glossary and f"| {LOWER_END_WORD} / 上端 |" in glossary


# --------------------------------------------------------------------------- special tokens as the model names them


SPECIAL_NAMED = re.compile(r"\[CLS\]|\[SEP\]")
#: a text that names [CLS] also names the other family's tokens, or the model's own field
BOTH_FAMILIES = re.compile(r"<s>|</s>|cls_token|sep_token|end_tokens")
#: a special token named by one model family's spelling
SPECIAL_OR_ROBERTA = re.compile(r"\[CLS\]|\[SEP\]|<s>|</s>")


def test_special_tokens_named_per_model_in_the_lessons():
    """Every lesson text (both editions) that names [CLS]/[SEP] also names <s>/</s> (or the model's own
    ``m.cls_token`` / ``m.end_tokens``): the offline default shows <s> and </s>, so a text that says only
    [CLS] is wrong on it."""
    bad = []
    for lesson in LESSONS:
        for path in (lesson.english, lesson.chinese):
            for cell in nbformat.read(str(path), as_version=4).cells:
                if cell.cell_type == "markdown" and SPECIAL_NAMED.search(cell.source) \
                        and not BOTH_FAMILIES.search(cell.source):
                    bad.append(f"{path.relative_to(ROOT)}:{cell.id}")
    assert bad == [], "texts that name [CLS]/[SEP] on a model that may show <s>/</s>:\n" + "\n".join(bad)


def _roberta_like(tiny_en):
    """``tiny_en`` as a model whose tokenizer says <s> and </s> (the offline default's pair)."""
    import dataclasses

    return dataclasses.replace(tiny_en, cls_token="<s>", sep_token="</s>")


def test_special_tokens_named_per_model(tiny_en, chinese):
    """A figure or message that names the two end tokens names the running model's: on a model whose
    tokenizer says <s>, nothing says [CLS]; on a BERT model, [CLS] is named; with no model, no token is."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from attnlab.analysis.regroup import DESTINATIONS, GroupSummary
    from attnlab.course.exercises import lesson_01, lesson_04, lesson_05, lesson_06
    from attnlab.viz.head_count_plots import destination_shown, plot_summaries
    from attnlab.viz.plot import ends_shown, texts_of

    e5_like = _roberta_like(tiny_en)
    assert e5_like.end_tokens == ("<s>", "</s>") and tiny_en.end_tokens == (tiny_en.cls_token, tiny_en.sep_token)
    assert tiny_en.end_tokens == ("[CLS]", "[SEP]")
    summary = GroupSummary(n_groups=2, per_text=np.full((3, len(DESTINATIONS)), 1 / len(DESTINATIONS)),
                           per_layer=np.full((2, len(DESTINATIONS)), 1 / len(DESTINATIONS)),
                           entropy_per_text=np.full(3, 0.5), confidence=0.4)
    for model, named, unnamed in ((e5_like, "<s>", "[CLS]"), (tiny_en, "[CLS]", "<s>")):
        ax = plot_summaries({2: summary, 4: summary}, ends=model.end_tokens)
        shown = " ".join(texts_of(ax.figure))
        plt.close(ax.figure)
        assert named in shown and unnamed not in shown, shown
        messages = [str(lesson_01.check_strongest_key(model, None)), str(lesson_04.check_split_shape(model, (0, 0, 0, 0))),
                    str(lesson_06.check_token_permutation(model, [0]))]
        joined = " ".join(messages)
        assert named in joined and unnamed not in joined, messages
    assert "[CLS]" not in ends_shown(None) and "<s>" not in ends_shown(None)
    first, last = DESTINATIONS[3], DESTINATIONS[4]
    assert "[CLS]" not in destination_shown(first, None) and destination_shown(first, ("<s>", "</s>")) == "<s>"
    assert destination_shown(last, ("[CLS]", "[SEP]")) == "[SEP]"
    assert destination_shown("self", ("<s>", "</s>")) == _("self")
    assert not any(SPECIAL_OR_ROBERTA.search(name) for name in DESTINATIONS)  # saved records name the ends by place


def test_no_claim_names_a_special_token():
    """A conclusion's printed claim is the same for every model, so it names the end tokens by place:
    "[CLS]" in a claim is wrong on the offline default, which shows <s>."""
    from attnlab.course.claims import head_patterns
    from attnlab.course.claims.conclusions import CONCLUSIONS

    claims_text = [row.claim for row in CONCLUSIONS] + [head_patterns.CLAIM_FIXED]
    named = [c for c in claims_text if SPECIAL_OR_ROBERTA.search(c) or SPECIAL_OR_ROBERTA.search(_(c))]
    assert named == [], named
    planted = claims_text[0] + " onto [CLS]"
    assert SPECIAL_OR_ROBERTA.search(planted)  # the check sees a planted name


def test_head_labels_name_no_special_token():
    """Lesson 05's reasons are stored without the model, so they name the special tokens by place, never as
    [CLS]/[SEP] (which the offline default does not show)."""
    from attnlab.analysis import taxonomy

    for template in (taxonomy.SPECIAL_REASON, taxonomy.NO_PATTERN_REASON):
        assert not SPECIAL_NAMED.search(template) and not SPECIAL_NAMED.search(_(template))
