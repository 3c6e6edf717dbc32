"""The Chinese figures (figures/zh/) are drawn from the current catalogue and show no English prose."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.core.language import _, current_language, listening, set_language
from attnlab.course.figures import drawn_strings
from attnlab.tools import zh_figures

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = zh_figures.read_manifest(ROOT / "figures" / "zh")


def _redraw_hint(files: list[str]) -> str:
    names = " ".join(sorted({f.rsplit(".", 1)[0] for f in files}))
    return f"draw them again: attnlab figures --lang zh --only {names}"


def test_zh_figures_current():
    """Every string a committed Chinese figure was drawn with is what the catalogue shows now."""
    stale = {e["file"]: zh_figures.stale_strings(e) for e in ENTRIES}
    stale = {f: s for f, s in stale.items() if s}
    assert stale == {}, f"{len(stale)} Chinese figure(s) drawn from older strings ({_redraw_hint(list(stale))}):\n" + \
        "\n".join(f"{f}: {s[:3]}" for f, s in stale.items())


def test_a_figure_drawn_from_older_strings_is_found(chinese):
    """The check fails for a figure whose recorded string differs from the catalogue's, or that has none."""
    with listening() as heard:
        shown = _("layer {layer}, head {head}")
    entry = {"file": "x.png", "strings": drawn_strings(heard)}
    assert shown != "layer {layer}, head {head}" and zh_figures.stale_strings(entry) == []
    older = {"file": "x.png", "strings": [["layer {layer}, head {head}", "第 {layer} 层的第 {head} 个头"]]}
    assert zh_figures.stale_strings(older) == ["layer {layer}, head {head}"]
    assert zh_figures.stale_strings({"file": "x.png"}) == ["<no strings recorded>"]


def test_stale_strings_reads_the_chinese_catalogue_and_restores_the_language():
    before = current_language()
    set_language("en")
    try:
        entry = {"strings": [["layer {layer}, head {head}", "第 {layer} 层第 {head} 个头"]]}
        assert zh_figures.stale_strings(entry) == [] and current_language() == "en"
    finally:
        set_language(before)


def test_listening_records_plural_lookups_and_nests(chinese):
    from attnlab.core.language import ngettext

    with listening() as outer:
        _("head")
        with listening() as inner:
            ngettext("{n} head", "{n} heads", 2)
    assert list(inner) == [("{n} head", "{n} heads", 2)] and list(outer) == [("head",)]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_zh_figure_holds_no_english_word(entry):
    """No Chinese figure holds an English word other than model names, code identifiers and units."""
    assert "texts" in entry, f"{entry['file']}: no texts recorded ({_redraw_hint([entry['file']])})"
    assert zh_figures.english_words(entry["texts"]) == []


@pytest.mark.parametrize("text, english", [
    ("H1: heterogeneous", ["heterogeneous"]), ("previous: L1 H3", ["previous"]), ("forward LSTM", ["forward"]),
    ("最大的位置份额 prev 0.10", ["prev"]),
    ("multilingual-e5-small 的模式图鉴", []), ("var(q.k) 随 d_k 增长", []), ("$\\mathdefault{10^{2}}$", []),
    ("[CLS]+[SEP] 份额", []), ("08_layer_averaging（请先运行这一课）", []), ("每次 12 ms", []),
    ("双向 LSTM；注意力 rollout；Spearman ρ", []), ("第 1 层第 7 个头（L1 H7）", []),
])
def test_english_words_finds_prose_and_leaves_names_code_and_units(text, english):
    assert zh_figures.english_words([text]) == english
