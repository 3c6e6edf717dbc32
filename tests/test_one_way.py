"""One way to do each thing: one reading of a language (package, run_lessons, course.sh), one lessons
folder per edition, one ``is_punctuation``, one ``set_language`` (the font follows), the report's model
resolved by ``load_model`` only, and the door's advice printed by ``tools/``, not ``core/``."""

from __future__ import annotations

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
            assert normalise_language(spelling) == "en"
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

