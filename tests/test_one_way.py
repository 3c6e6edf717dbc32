"""One way to do each thing: one reading of a language (package, run_lessons, course.sh), one lessons
folder per edition, one ``is_punctuation``, one ``set_language`` (the font follows), the report's model
resolved by ``load_model`` only, and the door's advice printed by ``tools/``, not ``core/``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from attnlab.core import language
from attnlab.core.language import lessons_folder, normalise_language
from attnlab.tools import run_lessons

ROOT = Path(__file__).resolve().parents[1]

#: the spellings of Chinese the course accepts, in any case
CHINESE = ("zh", "zh-CN", "zh_CN", "chinese", "中文")
#: what it refuses: Traditional Chinese (the course is in Simplified Chinese) and anything else
REFUSED = ("zh-TW", "klingon")
#: the sentence of a refusal names every accepted spelling
NAMED = ("en", "English", "zh", "zh-CN", "zh_CN", "chinese", "中文")

#: stands in for a program on the PATH: records its arguments and ATTNLAB_LANG in $CALLS, exits 0
RECORDER = '#!/usr/bin/env bash\necho "$(basename "$0") $* | lang=${ATTNLAB_LANG:-}" >> "$CALLS"\n'


def _refusal_ok(text: str, spelling: str) -> bool:
    line = text.strip()
    return f"'{spelling}'" in line and all(name in line for name in NAMED) and line.count(".") == 1


def _course_copy(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """course.sh in a folder of its own whose setup.sh and ``python`` only record being called; the real
    ``python3`` of the machine (no virtual environment) reads the language with the package beside it."""
    course = tmp_path / "course"
    (course / "scripts").mkdir(parents=True)
    for name in ("course.sh", "mirror.sh"):
        shutil.copy2(ROOT / "scripts" / name, course / "scripts" / name)
    (course / "scripts" / "setup.sh").write_text(RECORDER)
    (course / "attnlab").symlink_to(ROOT / "attnlab", target_is_directory=True)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("python", "pip", "jupyter", "attnlab"):
        (stubs / name).write_text(RECORDER)
        (stubs / name).chmod(0o755)
    calls = tmp_path / "calls.txt"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNLAB_", "PIP_", "HF_", "PYTHON"))}
    env = {**clean, "PATH": f"{stubs}{os.pathsep}{clean['PATH']}", "CALLS": str(calls), "ATTNLAB_NO_VENV": "1"}
    return course, env, calls


def test_language_normalised_once(tmp_path, monkeypatch, capsys):
    """The five spellings of Chinese, and ``zh-TW``, through the package, run_lessons and course.sh."""
    # the package: one normaliser, which set_language and ATTNLAB_LANG go through
    before = language.current_language()
    try:
        for spelling in CHINESE + tuple(s.upper() for s in CHINESE):
            assert normalise_language(spelling) == "zh", spelling
            assert language.set_language(spelling) == "zh" and language.current_language() == "zh"
            monkeypatch.setenv("ATTNLAB_LANG", spelling)
            assert language.environment_language() == "zh", spelling
        for spelling in ("en", "English", "EN"):
            assert normalise_language(spelling) == "en" and language.set_language(spelling) == "en"
        for spelling in REFUSED:
            with pytest.raises(ValueError) as refused:
                language.set_language(spelling)
            assert _refusal_ok(str(refused.value), spelling), str(refused.value)
            monkeypatch.setenv("ATTNLAB_LANG", spelling)
            with pytest.raises(ValueError):
                language.environment_language()
    finally:
        language.set_language(before)
    assert lessons_folder(ROOT, "chinese") == ROOT / "notebooks" / "zh"
    assert lessons_folder(ROOT, "English") == ROOT / "notebooks"

    # run_lessons: each spelling of ATTNLAB_LANG takes the Chinese lessons; zh-TW is refused before any kernel
    for spelling in CHINESE:
        monkeypatch.setenv("ATTNLAB_LANG", spelling)
        assert {b.parent for b in run_lessons.lessons(["00", "05"])} == {ROOT / "notebooks" / "zh"}, spelling
    monkeypatch.setenv("ATTNLAB_LANG", "zh-TW")
    started = []
    monkeypatch.setattr(run_lessons, "run", lambda *a, **k: started.append(a))
    assert run_lessons.main(["00"]) == 2 and started == []
    assert _refusal_ok(capsys.readouterr().err.removeprefix("attnlab: "), "zh-TW")

    # course.sh: the same reading before any set-up; a refusal exits 2 having installed nothing
    course, env, calls = _course_copy(tmp_path)
    for spelling in CHINESE + ("English",):
        calls.unlink(missing_ok=True)
        done = subprocess.run(["bash", "scripts/course.sh", "--lang", spelling, "run", "00"], cwd=course, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        setup, ran = calls.read_text().splitlines()
        assert setup.startswith("setup.sh ") and ran.startswith("python scripts/run_lessons.py 00 ")
        assert ran.endswith(f"lang={'en' if spelling == 'English' else 'zh'}"), (spelling, ran)
    calls.unlink()
    for spelling in REFUSED:
        done = subprocess.run(["bash", "scripts/course.sh", "--lang", spelling, "run", "00"], cwd=course, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and not calls.exists(), (done.returncode, done.stderr)
        assert done.stderr.startswith("attnlab: ") and _refusal_ok(done.stderr.removeprefix("attnlab: "), spelling)
    done = subprocess.run(["bash", "scripts/course.sh", "run", "00"], cwd=course, env={**env, "ATTNLAB_LANG": "zh-TW"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and not calls.exists() and not (course / ".venv").exists()


def test_one_is_punctuation():
    """head_stats and sinks sort tokens by one rule: a SentencePiece ``▁`` before punctuation is punctuation."""
    from attnlab.analysis import head_stats, sinks, token_roles

    assert head_stats.is_punctuation is sinks.is_punctuation is token_roles.is_punctuation
    expected = {"\u2581,": True, ",": True, "，": True, "\u2581": False, "a": False}
    assert {t: token_roles.is_punctuation(t) for t in expected} == expected
    assert token_roles.is_punctuation("##.") and not token_roles.is_punctuation("##")


def test_one_set_language_and_the_font_follows(monkeypatch):
    """``al.set_language`` is core's one switch; the figures' CJK font follows it from viz, which listens."""
    import attnlab as al
    from attnlab.viz import fonts

    assert al.set_language is language.set_language and not hasattr(fonts, "set_language")
    picked = []
    monkeypatch.setattr(fonts, "use_cjk_font", lambda warn=True: picked.append(language.current_language()))
    before = language.current_language()
    try:
        language.set_language("en")
        assert picked == []
        language.set_language("中文")
        assert picked == ["zh"]
    finally:
        language.set_language(before)


def test_a_model_config_is_read_where_load_model_would_load_it(tmp_path):
    """The check before loading reads the configuration where load_model's own resolution (models.locate)
    points: the bundled MiniLM's folder for "bundled", a folder by its path, and no hub for a path that
    names no folder (load_model refuses it the same way)."""
    from attnlab.core import models

    bundled = models.config_of("bundled")
    assert bundled == json.loads((models.bundled_model_path() / "config.json").read_text(encoding="utf-8"))
    assert bundled["model_type"] == "bert"
    decoder = tmp_path / "tiny-gpt2"
    decoder.mkdir()
    (decoder / "config.json").write_text('{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_head": 12}')
    assert models.locate(str(decoder)) == models.ModelPlace("folder", str(decoder))
    assert "decoder-only" in models.refusal(str(decoder), models.config_of(str(decoder)))
    missing = str(tmp_path / "no" / "such-model")
    with pytest.raises(models.ModelLoadError):
        models.locate(missing)
    assert models.config_of(missing) is None
    with pytest.raises(models.ModelLoadError, match="never a hub id"):
        models.load_model(missing, verbose=False)


def test_one_load_model_and_the_door_advice_worded_by_tools(monkeypatch, capsys):
    """al.load_model is core's one load_model; on Colab with little memory left it prints, under its line
    saying which model runs, the runtime line and the memory warning that tools/door_advice words from
    core's door facts (core's models module words neither)."""
    import inspect

    import attnlab as al
    from attnlab.core import door, models
    from attnlab.tools import door_advice

    assert al.load_model is models.load_model
    defined = [path.relative_to(ROOT).as_posix() for path in (ROOT / "attnlab").rglob("*.py")
               if "def load_model(" in path.read_text(encoding="utf-8")]
    assert defined == ["attnlab/core/models.py"]
    monkeypatch.setenv("ATTNLAB_DOOR", "colab")
    monkeypatch.setattr(door, "memory_warning", lambda *a, **k: "Only 0.3 GB of this session's 2.0 GB are free.")
    m = al.load_model("bundled", check=False)
    said = capsys.readouterr().out.splitlines()
    assert "all-MiniLM" in said[0]
    assert said[1:] == door_advice.door_advice(m) == [
        door.colab_line(m.name, on_gpu=False), "Only 0.3 GB of this session's 2.0 GB are free."]
    al.load_model("bundled", check=False, verbose=False)
    assert capsys.readouterr().out == ""
    source = inspect.getsource(models)
    assert "colab_line" not in source and "memory_warning" not in source


def _course_imports(path: Path) -> set[str]:
    """The attnlab.course modules a file imports (also inside functions)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attnlab.course"):
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("attnlab.course")}
    return found


def test_records_sit_below_the_claims():
    """Inside course/, the lessons' records are plain data below the claims and the builders above them:
    lesson_results imports no claim and no builder, and no claim imports a builder."""
    course = ROOT / "attnlab" / "course"
    builders = {"attnlab.course.attention_limits_result", "attnlab.course.record_builders",
                "attnlab.course.registry", "attnlab.course.report_parts", "attnlab.course.evidence"}
    below = _course_imports(course / "lesson_results.py")
    assert not {m for m in below if m.startswith("attnlab.course.claims")} and not below & builders, below
    for claim in sorted((course / "claims").glob("*.py")):
        assert not _course_imports(claim) & builders, claim.name
