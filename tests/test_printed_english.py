"""Static check: no lesson code cell, and no package function, shows English prose outside ``_()``.

The executed check of the Chinese edition (``tests/test_zh_edition.py``) reads what one
run prints, in smoke mode; branches a full run takes (lesson 10's long training, a
progress bar) stay unread there. :mod:`attnlab.tools.printed_english` reads the source
instead, so every branch is covered, and this test runs in CI without a model.
"""

from __future__ import annotations

import pytest

from attnlab.tools import printed_english
from attnlab.tools.printed_english import findings_in, is_english


@pytest.mark.parametrize("source, shown", [
    ('print(f"Model {m.name}, {n} texts")', ["Model ", " texts"]),
    ('print("diagonal:", d)', ["diagonal:"]),
    ('print(f"{h} heads: mean perplexity {p:.3f}")', [" heads: mean perplexity "]),
    ('print("{n} rows".format(n=3))', ["{n} rows"]),
    ('print(", ".join(["a b", "two words"]))', ["two words"]),
    ('for s in tqdm(xs, desc="position study", unit="round"): pass', ["position study", "round"]),
    ('bar.set_description("mean attention")', ["mean attention"]),
    ('bar.write(f"stopped after {n} queries")', ["stopped after ", " queries"]),
])
def test_english_shown_outside_the_catalogue_is_found(source, shown):
    assert [f.text for f in findings_in(source, "cell")] == shown


@pytest.mark.parametrize("source", [
    'print(_("Model {model}, {n} texts").format(model=m, n=3))',  # through the catalogue
    'print(_("diagonal:"), d)',
    'print(translated(reason))',
    'for s in tqdm(xs, desc=_("position study"), unit=_("round")): pass',
    'print(f"{_(\'layer\'):>5} {x:8.2f}")',
    'print(f"L{layer + 1} H{head + 1}: {score:.2f} [{low:.2f}, {high:.2f}]")',  # numbers and symbols
    'print(row["fixed"], kind == "zero")',  # a key and a comparison are data
    'print(table(rows, "lexical"))',  # passed to a function: data
    'print("  ".join(f"{kind_word(k):>9}" for k in ("lexical", "syntactic")))',  # looped over: data
    'print("模型：", name)',  # Chinese
    'print("all-MiniLM-L6-v2 LSTM")',  # allowed names
    'x = "an English sentence that is never shown"',
])
def test_translated_text_data_and_names_are_not_findings(source):
    assert findings_in(source, "cell") == []


def test_is_english_needs_a_prose_word_and_no_chinese():
    assert is_english("sequences:") and is_english("saved to")
    assert not is_english("x") and not is_english("d_k = ") and not is_english(" | ")
    assert not is_english("序列：") and not is_english("layer=0, head=6")


def test_no_lesson_and_no_package_function_shows_english_outside_the_catalogue():
    found = printed_english.findings()
    assert found == [], (f"{len(found)} English literal(s) shown without _() (wrap them in _() and add the "
                         "Chinese to attnlab/locale/zh/LC_MESSAGES/attnlab.po):\n" + "\n".join(map(str, found)))


def test_the_check_reads_the_lessons_and_the_package(tmp_path):
    package = tmp_path / "attnlab"
    (package / "analysis").mkdir(parents=True)
    (package / "tools").mkdir()
    (package / "analysis" / "study.py").write_text('def f():\n    print("half the heads moved")\n')
    (package / "tools" / "cli.py").write_text('print("the command line speaks English")\n')
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    import nbformat

    book = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('%matplotlib inline\nprint("saved to", path)')
    cell["id"] = "c99-01"
    book.cells = [cell]
    nbformat.write(book, str(notebooks / "99_fixture.ipynb"))
    found = [str(f) for f in printed_english.findings(package, notebooks)]
    assert found == ["attnlab/analysis/study.py:2: 'half the heads moved'",
                     "notebooks/99_fixture.ipynb:c99-01:2: 'saved to'"]
