"""One reading of a language for every entry: each ``--lang`` option, the hub's configuration, the Windows
launcher and ``course.sh`` read it with :func:`attnlab.core.language.normalise_language`; :func:`speaking`
is the only save/set/restore of the language; ``make_report(lang=...)`` speaks that language."""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from attnlab.core import language
from attnlab.core.language import SPELLINGS, current_language, normalise_language

ROOT = Path(__file__).resolve().parent.parent
#: where the course's commands live
COMMAND_FOLDERS = ("attnlab", "benchmarks", "scripts")
#: an option that names a language, as its source adds it
LANGUAGE_OPTION = re.compile(r"""add_argument\(\s*["'](--lang|--language)["']""")


class _Parsed(Exception):
    """Raised in place of parsing: the parser a command's ``main`` built has been caught."""


def _sources_with_a_language_option() -> dict[Path, int]:
    """Every Python file of the course's commands that adds a language option, and how many it adds."""
    found = {}
    for folder in COMMAND_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            count = len(LANGUAGE_OPTION.findall(path.read_text(encoding="utf-8")))
            if count:
                found[path] = count
    return found


def _module(path: Path):
    """The module at ``path``: the package's by its name, a script or benchmark under a name of its own
    (they are not package members)."""
    relative = path.relative_to(ROOT).with_suffix("")
    if relative.parts[0] == "attnlab":
        return importlib.import_module(".".join(relative.parts))
    name = "course_command_" + "_".join(relative.parts)
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def _parsers(paths: list[Path], monkeypatch) -> list[argparse.ArgumentParser]:
    """The parsers of the ``attnlab`` command (the package's modules add their sub-commands to it) and of
    every file in ``paths`` with a ``main`` of its own: each ``main`` is run until it parses, and its parser
    caught there."""
    from attnlab.tools import cli

    caught = [cli.build_parser()]

    def catch(self, *args, **kwargs):
        caught.append(self)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
    for path in paths:
        module = _module(path)
        if module is cli or not callable(getattr(module, "main", None)) or hasattr(module, "add_cli"):
            continue  # a sub-command of the attnlab command (the count of options found says it was reached)
        with pytest.raises(_Parsed):
            module.main([])
    return caught


def _language_options(parser: argparse.ArgumentParser) -> list[tuple[argparse.ArgumentParser, argparse.Action]]:
    """Every ``--lang``/``--language`` option of ``parser`` and of its sub-commands, with its parser."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _language_options(sub)
        elif {"--lang", "--language"} & set(action.option_strings):
            found.append((parser, action))
    return found


def _every_spelling() -> list[tuple[str, str]]:
    """(spelling, code) for each accepted spelling, also upper-case and with ``_`` for ``-``."""
    return [(variant, code) for code, spellings in SPELLINGS.items() for spelling in spellings
            for variant in dict.fromkeys((spelling, spelling.upper(), spelling.replace("-", "_")))]


def test_every_lang_option_normalises(monkeypatch):
    """Every language option of the package's, the benchmarks' and the scripts' commands, found by walking
    their parsers, reads each spelling the normaliser accepts as the normaliser does, and refuses what it
    refuses with its sentence."""
    sources = _sources_with_a_language_option()
    options = [o for parser in _parsers(list(sources), monkeypatch) for o in _language_options(parser)]
    assert len(options) == sum(sources.values()), (len(options), sources)  # the walk found every one
    for parser, action in options:
        where = f"{parser.prog} {action.option_strings[0]}"
        for spelling, code in _every_spelling():
            assert normalise_language(spelling) == code
            assert parser._get_values(action, [spelling]) == code, (where, spelling)
        for refused in ("zh-TW", "fr", "english please"):
            with pytest.raises(argparse.ArgumentError, match="unknown language"):
                parser._get_values(action, [refused])


def test_attnlab_report_accepts_zh_cn(capsys, tmp_path):
    """``attnlab report --lang zh-CN`` is read as Chinese, and the table it prints is in Chinese; the
    language speaking before comes back afterwards."""
    from attnlab.tools import cli

    before = current_language()
    assert cli.build_parser().parse_args(["report", "--lang", "zh-CN"]).lang == "zh"
    assert cli.main(["report", "--lang", "zh_CN", "--compare", str(tmp_path)]) == 2  # no finished report there
    assert current_language() == before
    with pytest.raises(SystemExit):
        cli.main(["report", "--lang", "zh-TW"])
    assert "unknown language 'zh-TW'" in capsys.readouterr().err


def test_the_hub_and_the_windows_launcher_read_the_language_with_the_normaliser():
    """The class server's configuration and course.bat hand the teacher's spelling to the normaliser, and
    course.sh hands the language on one way (ATTNLAB_LANG) to the commands it starts."""
    from attnlab.tools import bundle

    hub = (ROOT / "classroom" / "hub" / "jupyterhub_config.py").read_text(encoding="utf-8")
    assert re.search(r'LANG = normalise_language\(os\.environ\.get\("ATTNLAB_HUB_LANG"', hub)
    launcher = bundle.windows_scripts("3.11")["course.bat"]
    assert r"-m attnlab.core.language" in launcher and 'if "%CODE%"=="zh"' in launcher
    assert '"%1"=="zh"' not in launcher  # no reading of its own
    course = (ROOT / "scripts" / "course.sh").read_text(encoding="utf-8")
    assert course.count("-m attnlab.core.language \"$lang\"") == 1  # normalised once
    assert "attnlab figures --lang" not in course  # by ATTNLAB_LANG alone


def _restores_by_hand(tree: ast.AST) -> list[str]:
    """Functions that both read the language speaking now and set another: a save/set/restore by hand."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            called = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
                      for n in ast.walk(node) if isinstance(n, ast.Call)}
            if {"current_language", "set_language"} <= called:
                found.append(node.name)
    return found


def test_speaking_is_the_only_save_set_restore_of_the_language():
    by_hand = {}
    for folder in COMMAND_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.resolve() == Path(language.__file__).resolve():
                continue
            names = _restores_by_hand(ast.parse(path.read_text(encoding="utf-8")))
            if names:
                by_hand[str(path.relative_to(ROOT))] = names
    assert by_hand == {}
    assert _restores_by_hand(ast.parse("def f():\n    b = current_language()\n    set_language('zh')\n"))  # it finds


def test_make_report_speaks_its_lang(tiny_en, tmp_path, monkeypatch, capsys):
    """``make_report(lang="zh")`` called from Python writes a Chinese report (the parts stubbed as not
    measured: the words are what is tested), tags it ``zh`` and leaves the language as it was."""
    from attnlab.tools import report

    def not_measured(m, part, folder, **kwargs):
        return report.PartRun(part, None, None, 0.0, "failed", "RuntimeError: not measured in this test")

    monkeypatch.setattr(report, "load_checked", lambda name, device="auto": tiny_en)
    monkeypatch.setattr(report, "run_part", not_measured)
    before = current_language()
    for lang, code in (("zh", "zh"), ("zh-CN", "zh"), ("en", "en")):
        out = report.make_report("tiny", out=tmp_path / lang, lang=lang, twin=None, progress=False)
        assert current_language() == before
        text = (out / "report.md").read_text(encoding="utf-8")
        page = (out / "index.html").read_text(encoding="utf-8")
        assert report.read_report(out)["settings"]["report_language"] == code
        assert f'<html lang="{code}">' in page
        heading = text.splitlines()[0]
        chinese = len(re.findall(r"[\u4e00-\u9fff]", heading))
        assert (chinese > 5) == (code == "zh"), heading
        if code == "zh":
            assert "原文的六条结论" in heading and "无法判断" in text
        else:
            assert "CANNOT TELL" in text
    # the command: --lang zh-CN reads as Chinese, and the table comparing the reports is in Chinese
    from attnlab.tools import cli

    capsys.readouterr()
    assert cli.main(["report", "--lang", "zh-CN", "--compare", str(tmp_path / "zh"), str(tmp_path / "en")]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert re.search(r"[\u4e00-\u9fff]", header) and "claim" not in header, header
    assert current_language() == before
