"""Take your work with you: a student's results and attempts in one file, and back again.

A Colab or Binder session forgets everything when it ends (Colab after about 90 minutes
idle or 12 hours in all, Binder after about 10 minutes without a browser tab, or at
most 6 hours): the ``results`` folder (:func:`attnlab.course.results.results_dir`) with
the lessons' saved results and ``exercises/``, the checked attempts, goes with it. One
file carries it::

    attnlab work take                      # writes attnlab-work-<date>-<time>.zip here
    attnlab work bring attnlab-work-20261205-1012.zip   # puts it back into the results folder

In a lesson, :func:`offer` (the last cell) packs the file and, on Colab, starts its
download; on Binder it says where the file is (right-click it in the file browser,
Download). :func:`bring_back_here` (the cell after the Colab set-up) restores any ``attnlab-work-*.zip``
the student uploaded next to the notebook, once.

The zip holds ``attnlab-work.json`` (what it is, when it was made, and each file's SHA-256)
and the files under ``results/``. Bringing back checks all of it first: a file that is not
such a zip, a member outside ``results/``, a link, a checksum that does not match, or more
than :data:`MAX_BYTES` in all stops with one sentence and writes nothing. A file already in
the results folder with other content is kept beside it (``<name>.before-<time>``), never lost.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from attnlab.core import door
from attnlab.core.atomic import write_text_atomic
from attnlab.core.language import _
from attnlab.course.results import results_dir

KIND = "attnlab-work"
SCHEMA = 1
MANIFEST = "attnlab-work.json"
PREFIX = "results/"
#: the most bytes a work file may hold, all files together
MAX_BYTES = 200_000_000
#: the most files a work file may hold
MAX_FILES = 20_000


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(folder: Path) -> list[Path]:
    """The plain files under ``folder`` (no links), sorted."""
    out = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            if path.is_file() and not path.is_symlink():
                out.append(path)
    return out


def take(out: str | Path | None = None, folder: str | Path | None = None) -> Path:
    """Pack the results folder (``folder``, default :func:`results_dir`) into one zip and return its path:
    ``out`` if given (a folder or a file name), else ``attnlab-work-<date>-<time>.zip`` here."""
    folder = Path(folder) if folder is not None else results_dir()
    if not folder.is_dir():
        raise ValueError(f"there is no work to take yet: {folder} does not exist (run a lesson first)")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = Path(out) if out is not None else Path.cwd()
    if target.is_dir():
        target = target / f"{KIND}-{stamp}.zip"
    files, total = {}, 0
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in _files(folder):
            data = path.read_bytes()
            total += len(data)
            if total > MAX_BYTES or len(files) >= MAX_FILES:
                raise ValueError(f"{folder} holds more than {MAX_BYTES // 1_000_000} MB or {MAX_FILES} files: "
                                 "that is not a student's work")
            name = PREFIX + path.relative_to(folder).as_posix()
            archive.writestr(name, data)
            files[name] = _sha256(data)
        manifest = {"kind": KIND, "schema": SCHEMA, "created": stamp, "files": files}
        archive.writestr(MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False))
    return target


def _checked(archive: zipfile.ZipFile, where: str) -> dict[str, bytes]:
    """Every file of a work zip, read and checked against its manifest (nothing written)."""
    try:
        manifest = json.loads(archive.read(MANIFEST).decode("utf-8"))
    except (KeyError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where} is not a work file of this course (no {MANIFEST} in it)") from exc
    if manifest.get("kind") != KIND or manifest.get("schema") != SCHEMA or not isinstance(manifest.get("files"), dict):
        raise ValueError(f"{where} is not a work file of this course ({MANIFEST} is not one)")
    if len(manifest["files"]) > MAX_FILES:
        raise ValueError(f"{where} lists more than {MAX_FILES} files")
    out, total = {}, 0
    for name, digest in manifest["files"].items():
        parts = PurePosixPath(name).parts
        if not name.startswith(PREFIX) or name.startswith("/") or ".." in parts or "\\" in name or len(parts) < 2:
            raise ValueError(f"{where} names {name!r}, outside results/: nothing was brought back")
        try:
            info = archive.getinfo(name)
        except KeyError as exc:
            raise ValueError(f"{where} lists {name} but does not hold it: nothing was brought back") from exc
        if (info.external_attr >> 16) & 0o170000 == 0o120000:
            raise ValueError(f"{where} holds {name} as a link: nothing was brought back")
        total += info.file_size
        if total > MAX_BYTES:
            raise ValueError(f"{where} holds more than {MAX_BYTES // 1_000_000} MB: nothing was brought back")
        data = archive.read(info)
        if _sha256(data) != digest:
            raise ValueError(f"{where}: {name} does not match its checksum (damaged): nothing was brought back")
        out[name[len(PREFIX):]] = data
    return out


def bring(path: str | Path, folder: str | Path | None = None) -> list[Path]:
    """Put a work file's results back into ``folder`` (default :func:`results_dir`); return the files written.
    An existing file with other content is kept beside it as ``<name>.before-<time>``."""
    path = Path(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{path} is not a readable zip ({exc})") from exc
    with archive:
        files = _checked(archive, path.name)
    folder = Path(folder) if folder is not None else results_dir()
    written, stamp = [], int(time.time())
    for relative, data in files.items():
        target = folder / relative
        if target.is_file() and target.read_bytes() == data:
            continue
        if target.exists():
            os.replace(target, target.with_name(f"{target.name}.before-{stamp}"))
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.bringing")
        partial.write_bytes(data)
        os.replace(partial, target)
        written.append(target)
    return written


def offer() -> Path | None:
    """A lesson's last cell: on Colab or Binder, pack the work and offer it (Colab starts the download);
    elsewhere the results folder stays where it is and nothing is packed."""
    which = door.which_door()
    if which not in (door.COLAB, door.BINDER):
        print(_("Your work is kept in {folder}.").format(folder=results_dir()))
        return None
    if not results_dir().is_dir():
        print(_("No work to take yet: run the lesson's cells first."))
        return None
    packed = take()
    try:
        from google.colab import files  # deferred: exists only on Colab
    except ImportError:
        files = None
    if which == door.COLAB and files is not None:
        files.download(str(packed))
        print(_("{name} is downloading: keep it, and next time upload it and run the lesson from the top: your work comes back.").format(
            name=packed.name))
    else:
        print(_("{path} holds your work: in the file browser, right-click it and choose Download. Next time, "
                "upload it next to the lesson and run the lesson from the top.").format(path=packed))
    return packed


def bring_back_here(folder: str | Path = ".") -> list[Path]:
    """A lesson's bring-back cell, near the top: restore each ``attnlab-work-*.zip`` in ``folder`` (uploaded by the student) once,
    marking it done (``<zip>.brought``)."""
    written: list[Path] = []
    for packed in sorted(Path(folder).glob(f"{KIND}-*.zip")):
        done = packed.with_name(packed.name + ".brought")
        if done.exists():
            continue
        files = bring(packed)
        write_text_atomic(done, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        print(_("{name}: your work is back ({n} files) in {folder}.").format(name=packed.name, n=len(files),
                                                                            folder=results_dir()))
        written += files
    return written


def _take_cmd(args: argparse.Namespace) -> int:
    print(f"your work: {take(args.out)}")
    return 0


def _bring_cmd(args: argparse.Namespace) -> int:
    written = bring(args.file)
    print(f"{len(written)} files brought back into {results_dir()}")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``attnlab work take`` and ``attnlab work bring FILE``."""
    p = subparsers.add_parser("work", help="take your results and attempts with you (Colab, Binder), or bring them back")
    sub = p.add_subparsers(dest="work_command", required=True)
    t = sub.add_parser("take", help="pack the results folder into one zip to download")
    t.add_argument("--out", default=None, help="a folder or file name (default: attnlab-work-<date>-<time>.zip here)")
    t.set_defaults(func=_take_cmd)
    b = sub.add_parser("bring", help="put a packed zip's results back into the results folder")
    b.add_argument("file", help="the attnlab-work-*.zip you took")
    b.set_defaults(func=_bring_cmd)
