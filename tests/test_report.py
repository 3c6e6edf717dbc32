"""``attnlab report``: the six conclusions on any encoder, its refusals, its resumption and ``--compare``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from attnlab.core.language import current_language, set_language
from attnlab.course.evidence import LABELS
from attnlab.course.lesson_results import ConclusionsResult
from attnlab.course.report_parts import doubling_looks, grow_until_settled
from attnlab.course.evidence import NOT_ABOUT_THE_MODEL
from attnlab.course.verdicts import FAILS, HOLDS, UNSURE, WORDS
from attnlab.tools import cli
from attnlab.tools.report import compare_table, read_report
from attnlab.tools.testing import save_tiny_model

#: anything that would make the page reach outside itself
EXTERNAL = re.compile(r"""(https?|ftp|wss?)://|(src|href|action)\s*=\s*["']?//|<script[^>]+src=|<link[^>]+href=|@import|url\(""",
                      re.I)


def _report(args: list[str]) -> int:
    before = current_language()
    try:
        return cli.main(["report", *args])
    finally:
        set_language(before)


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """Random 3-layer BERTs with 4 heads, one reading English word pieces, one Chinese characters."""
    root = tmp_path_factory.mktemp("report_models")
    return {lang: save_tiny_model(root / f"tiny_{lang}", language=lang, n_layers=3, n_heads=4, hidden=32)
            for lang in ("en", "zh")}


#: the tests that read the tiny models' reports run on one test worker, so the reports are made once
tiny_report_group = pytest.mark.xdist_group("tiny-reports")


@pytest.fixture(scope="module")
def tiny_reports(tiny_models, tmp_path_factory) -> dict[str, Path]:
    """``attnlab report --smoke`` on each tiny model, in its own language."""
    root = tmp_path_factory.mktemp("reports")
    out = {}
    for lang, model in tiny_models.items():
        out[lang] = root / lang
        assert _report(["--model", str(model), "--smoke", "--lang", lang, "--out", str(out[lang])]) == 0
    return out


def check_report(folder: Path, *, model: str | None = None) -> dict:
    """The files exist, the JSON has every claim with a verdict word, the page reaches nothing outside."""
    for name in ("index.html", "report.md", "report.json"):
        assert (folder / name).is_file(), name
    record = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert record["schema"] == 3 and record["name"] == "report" and record["smoke"] is True
    data = record["data"]
    assert list(data["claims"]) == list(LABELS)
    saved = ConclusionsResult.from_record(data)  # the conclusions in lesson 12's shape, beside the settings
    assert saved.labels == list(LABELS) == list(saved.claims)
    assert [v.verdict for v in saved.verdicts] == [c["verdict"] for c in data["claims"].values()]
    for label, claim in data["claims"].items():
        assert claim["verdict"] in WORDS, label
        if claim["verdict"] == UNSURE and not claim["deciding"]:
            pytest.fail(f"claim {label} cannot tell without saying why")
    settings = data["settings"]
    for key in ("model", "query_language", "report_language", "precision", "device", "seconds"):
        assert key in settings, key
    if model is not None:
        assert settings["model"] == model
    for part in settings["parts"].values():
        assert part["seconds"] >= 0 and part["sizes"]
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert EXTERNAL.search(page) is None, EXTERNAL.search(page).group(0)
    assert page.count("data:image/png;base64,") >= 1
    for label in LABELS:
        assert label in (folder / "report.md").read_text(encoding="utf-8")
    return data


@tiny_report_group
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_report_smoke_on_a_tiny_bert(tiny_reports, tiny_models, lang):
    data = check_report(tiny_reports[lang], model=str(tiny_models[lang]))
    settings = data["settings"]
    assert settings["query_language"] == lang and settings["report_language"] == lang
    assert settings["layers"] == 3 and settings["heads"] == 4
    measured = [name for name, part in settings["parts"].items() if part["origin"] == "measured"]
    assert len(measured) >= 6, settings["parts"]  # every part but, at most, one a 3-layer model cannot take
    sized = {name: part["stopping"] for name, part in settings["parts"].items() if part["stopping"]}
    assert {"perturbation", "averaging", "diversity"} <= set(sized)
    for stop in sized.values():  # the rule's record: looks grow, the numbers rest on what was read
        assert stop["looks"] == sorted(stop["looks"]) and stop["used"] <= stop["maximum"]
    if lang == "zh":
        assert "成立" in (tiny_reports[lang] / "index.html").read_text(encoding="utf-8")


@tiny_report_group
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_report_on_an_untrained_model_holds_no_claim_about_the_model(tiny_reports, lang):
    """The tiny models are random: measured against their shuffled twins, no claim about what training
    produced may hold; the twin's parts ran, and every row says what its twin gave."""
    data = json.loads((tiny_reports[lang] / "report.json").read_text(encoding="utf-8"))["data"]
    twin = data["settings"]["twin"]
    assert twin["kind"] == "shuffled" and "untrained twin" in twin["name"]
    assert {p["origin"] for p in twin["parts"].values()} <= {"measured", "failed"}
    about_the_model = [label for label in LABELS if label not in NOT_ABOUT_THE_MODEL]
    assert [label for label in about_the_model if data["claims"][label]["verdict"] == HOLDS] == []
    assert all(data["claims"][label]["twin"] for label in LABELS)
    assert "untrained twin" in (tiny_reports[lang] / "report.md").read_text(encoding="utf-8") or lang == "zh"


@tiny_report_group
def test_report_resumes_from_its_saved_parts(tiny_reports, tiny_models, tmp_path):
    """A second run reads every part back; a part whose file is gone, or whose saved settings differ from
    this run's, is measured again."""
    folder = tmp_path / "again"
    shutil.copytree(tiny_reports["en"], folder)
    (folder / "parts" / "part_patterns.json").unlink()
    changed = folder / "parts" / "part_perturbation.json"
    record = json.loads(changed.read_text(encoding="utf-8"))
    record["data"]["settings"]["sizes"]["n_boot"] += 1
    changed.write_text(json.dumps(record), encoding="utf-8")
    before = json.loads((folder / "report.json").read_text(encoding="utf-8"))["data"]
    assert _report(["--model", str(tiny_models["en"]), "--smoke", "--lang", "en", "--out", str(folder)]) == 0
    after = json.loads((folder / "report.json").read_text(encoding="utf-8"))["data"]
    origins = {name: part["origin"] for name, part in after["settings"]["parts"].items()}
    assert origins["patterns"] == "measured" and origins["perturbation"] == "measured"
    kept = [name for name, part in before["settings"]["parts"].items()
            if name not in ("patterns", "perturbation") and part["origin"] == "measured"]
    assert kept and all(origins[name] == "saved" for name in kept)
    saved_seconds = sum(before["settings"]["parts"][name]["seconds"] for name in kept)
    assert after["settings"]["seconds"] >= saved_seconds - 0.01 * len(kept)  # the earlier run's time counts
    words = {k: v["verdict"] for k, v in after["claims"].items()}
    assert words == {k: v["verdict"] for k, v in before["claims"].items()}


@tiny_report_group
def test_report_compare_writes_one_table(tiny_reports, tmp_path, capsys):
    folders = [str(tiny_reports["en"]), str(tiny_reports["zh"])]
    assert _report(["--compare", *folders, "--out", str(tmp_path), "--lang", "en"]) == 0
    table = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert table == capsys.readouterr().out
    lines = table.strip().splitlines()
    assert len(lines) == 2 + len(LABELS)
    twins = [f for f in folders if read_report(f)["settings"].get("twin")]
    assert len(twins) == len(folders)  # every report measured its untrained twin: a column each
    assert lines[0].count("|") == 2 + len(folders) + len(twins)
    words = {HOLDS: "HOLDS", FAILS: "DOES NOT HOLD", UNSURE: "CANNOT TELL"}
    for row, label in zip(lines[2:], LABELS):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
        assert cells[0].startswith(label)
        for cell, folder in zip(cells[1::2], folders):
            claim = read_report(folder)["claims"][label]
            assert cell.startswith(f"**{words[claim['verdict']]}**")
        for cell, folder in zip(cells[2::2], folders):
            assert cell == read_report(folder)["claims"][label]["twin"].replace("|", "\\|")
    with pytest.raises(ValueError, match="no finished report"):
        compare_table([str(tmp_path)])


def _decoder_only(path: Path) -> Path:
    from transformers import GPT2Config, GPT2Model

    GPT2Model(GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=100, n_positions=64,
                         bos_token_id=1, eos_token_id=2)).save_pretrained(path)
    return path


def _no_attention(path: Path) -> Path:
    from transformers import FNetConfig, FNetModel  # token mixing by Fourier transforms: no attention at all

    FNetModel(FNetConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, vocab_size=100,
                         max_position_embeddings=64)).save_pretrained(path)
    return path


@pytest.mark.parametrize("plant, says", [
    (_decoder_only, "decoder-only"),
    (_no_attention, "returns no attention maps"),
    (lambda p: save_tiny_model(p, n_heads=2, hidden=32), "needs at least 4"),
])
def test_report_refuses(plant, says, tmp_path, capsys):
    """Each model gets its one sentence, no traceback, and nothing is measured or written."""
    model = plant(tmp_path / "model")
    capsys.readouterr()  # what saving the planted model printed
    out = tmp_path / "out"
    assert _report(["--model", str(model), "--smoke", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("attnlab report: ")
    assert "Traceback" not in captured.err + captured.out
    assert not out.exists()


def test_doubling_looks():
    assert doubling_looks(12, 48) == [12, 24, 48]
    assert doubling_looks(100, 1000) == [100, 200, 400, 800, 1000]
    assert doubling_looks(5, 5) == [5]
    with pytest.raises(ValueError):
        doubling_looks(10, 5)


@pytest.mark.parametrize("words, stops_at, settled", [
    ([UNSURE, HOLDS, HOLDS, HOLDS, HOLDS, HOLDS], 4, True),  # decided and unchanged at two looks running
    ([HOLDS, FAILS, HOLDS, FAILS, HOLDS, FAILS], 6, False),  # never the same twice: the maximum
    ([UNSURE] * 6, 6, False),                                  # never decided: the maximum
    ([FAILS, FAILS, FAILS, HOLDS, HOLDS, HOLDS], 3, True),
])
def test_grow_until_settled_reads_only_what_the_rule_needs(words, stops_at, settled):
    """Planted verdicts, one per look: the part stops at the first look of a settled run, having measured
    each unit once, in order."""
    looks = doubling_looks(1, 32)  # 1, 2, 4, 8, 16, 32: six looks
    measured = []

    def measure(start, stop):
        measured.append((start, stop))
        return list(range(start, stop))

    def word(units):
        return words[looks.index(len(units))]

    units, stopping = grow_until_settled(1, 32, measure, lambda a, b: a + b, word, unit="queries")
    assert stopping.looks == looks[:stops_at] and stopping.settled is settled
    assert units == list(range(looks[stops_at - 1])) and stopping.used == looks[stops_at - 1]
    assert [b for _, b in measured] == looks[:stops_at] and measured[0][0] == 0
    assert all(a == b for (_, a), (b, _) in zip(measured, measured[1:]))  # each unit measured once
    assert np.array_equal(stopping.words, words[:stops_at])


@pytest.mark.slow
def test_report_smoke_on_the_offline_default(tmp_path, monkeypatch):
    """The offline default (multilingual-e5-small, loaded offline) through the whole smoke report."""
    monkeypatch.setenv("ATTNLAB_OFFLINE", "1")
    monkeypatch.delenv("ATTNLAB_MODEL", raising=False)
    out = tmp_path / "e5"
    assert _report(["--smoke", "--twin", "none", "--out", str(out)]) == 0  # the twin runs on the tiny models
    data = check_report(out)
    assert "e5" in data["settings"]["model"]
    assert all(part["origin"] == "measured" for part in data["settings"]["parts"].values()), data["settings"]["parts"]


@tiny_report_group
@pytest.mark.browser
def test_report_page_opens_in_a_browser(tiny_reports):
    """Chromium opens index.html from disk: the figures decode, and the page asks for nothing outside it."""
    from test_browser import browser_page  # tests/test_browser.py

    page_path = (tiny_reports["zh"] / "index.html").resolve()
    requests, errors = [], []
    with browser_page() as page:
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(page_path.as_uri())
        widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
        headings = page.locator("h1").all_inner_texts()
        verdicts = page.locator("section.verdict").count()
    assert widths and all(w > 100 for w in widths), widths
    assert headings and verdicts == len(LABELS)
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    assert errors == []


def test_every_message_of_the_report_has_a_chinese_translation():
    """Every literal the report passes to ``_()`` (or marks with ``N_``) is in the Chinese catalogue."""
    import ast

    from attnlab.core.language import read_po

    root = Path(__file__).resolve().parents[1]
    catalogue = read_po((root / "attnlab" / "locale" / "zh" / "LC_MESSAGES" / "attnlab.po").read_text(encoding="utf-8"))
    messages = set()
    for module in ("attnlab/tools/report.py", "attnlab/tools/report_plots.py", "attnlab/course/report_parts.py"):
        for node in ast.walk(ast.parse((root / module).read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_", "N_")
                    and node.args and isinstance(node.args[0], ast.Constant)):
                messages.add(node.args[0].value)
    assert len(messages) > 30
    assert sorted(m for m in messages if not catalogue.get(m)) == []
