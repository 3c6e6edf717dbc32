"""Take your work with you: a student's notebooks, results and attempts in one file, and back again.

A Colab or Binder session forgets everything when it ends (Colab after about 90 minutes
idle or 12 hours in all, Binder after about 10 minutes without a browser tab, or at
most 6 hours): the lesson notebooks the student wrote in, and the ``results`` folder
(:func:`attnlab.course.results.results_dir`) with the lessons' saved results and
``exercises/``, the checked attempts, go with it. One file carries them::

    attnlab work take                      # writes attnlab-work-<date>-<time>.zip here
    attnlab work bring attnlab-work-20261205-1012.zip   # puts it back into the results folder

In a lesson, :func:`offer` (the last cell) packs the file and, on Colab, starts its
download; on Binder it says where the file is (right-click it in the file browser,
Download). Each save point packs it too, so a session that dies before the last cell still
leaves it: on Colab and Binder every saved result and checked answer rewrites
``attnlab-work-latest.zip`` next to the notebook (:func:`pack_at_save_point`).
:func:`bring_back_here` (the cell after the Colab set-up) restores any ``attnlab-work-*.zip``
the student uploaded next to the notebook, once for each content.

The zip holds ``attnlab-work.json`` (what it is, when it was made, what it holds, and each
file's SHA-256), the files under ``results/`` and the notebooks under ``notebooks/``: the
lessons in the working folder and, on Colab, the open notebook as Colab keeps it (read
through Colab's own API). A notebook brought back never replaces one that is there with
other content: it is written beside it (``<name>.brought-<time>.ipynb``). Bringing back checks all of it first: a file that is not
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
import warnings
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
NOTEBOOKS = "notebooks/"
#: the file each save point rewrites (Colab, Binder)
LATEST = f"{KIND}-latest.zip"
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


def open_notebooks(here: str | Path = ".") -> dict[str, bytes]:
    """The student's notebooks, ``{file name: content}``: every ``*.ipynb`` in ``here`` and, on Colab, the
    open notebook as Colab keeps it (its own API; where that does not answer, the first cell's advice to
    save a copy in Drive is what keeps it)."""
    found = {path.name: path.read_bytes() for path in sorted(Path(here).glob("*.ipynb"))
             if path.is_file() and not path.is_symlink()}
    if door.which_door() == door.COLAB:
        try:
            from google.colab import _message  # deferred: exists only on Colab

            reply = _message.blocking_request("get_ipynb", request="", timeout_sec=10)
            notebook = reply.get("ipynb") if isinstance(reply, dict) else None
            if isinstance(notebook, dict):
                name = Path(str(notebook.get("metadata", {}).get("colab", {}).get("name") or "colab_notebook")).stem
                found[f"{name}.ipynb"] = json.dumps(notebook, ensure_ascii=False).encode("utf-8")
        except Exception:  # noqa: BLE001 - an older runtime, no answer: the notebook stays in Drive only
            pass
    return found


def describe(holds: dict[str, Any]) -> str:
    """What a work file holds, in one sentence in the reader's language."""
    names = ", ".join(holds["notebooks"]) or _("none")
    return _("It holds {results} files of results and checked attempts, and {n} notebooks: {names}.").format(
        results=holds["results"], n=len(holds["notebooks"]), names=names)


def take(out: str | Path | None = None, folder: str | Path | None = None,
         notebooks: dict[str, bytes] | None = None) -> Path:
    """Pack the results folder (``folder``, default :func:`results_dir`) and the student's notebooks
    (``notebooks``, default :func:`open_notebooks` of the working folder) into one zip and return its path:
    ``out`` if given (a folder or a file name), else ``attnlab-work-<date>-<time>.zip`` here."""
    folder = Path(folder) if folder is not None else results_dir()
    notebooks = open_notebooks() if notebooks is None else notebooks
    if not folder.is_dir() and not notebooks:
        raise ValueError(f"there is no work to take yet: {folder} does not exist (run a lesson first)")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = Path(out) if out is not None else Path.cwd()
    if target.is_dir():
        target = target / f"{KIND}-{stamp}.zip"
    members = [(PREFIX + path.relative_to(folder).as_posix(), path.read_bytes())
               for path in (_files(folder) if folder.is_dir() else [])]
    members += [(NOTEBOOKS + name, data) for name, data in sorted(notebooks.items())]
    if sum(len(data) for _name, data in members) > MAX_BYTES or len(members) > MAX_FILES:
        raise ValueError(f"{folder} and the notebooks hold more than {MAX_BYTES // 1_000_000} MB or {MAX_FILES} "
                         "files: that is not a student's work")
    holds = {"results": sum(name.startswith(PREFIX) for name, _data in members),
             "notebooks": sorted(notebooks)}
    partial = target.with_name(f".{target.name}.packing")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
        manifest = {"kind": KIND, "schema": SCHEMA, "created": stamp, "holds": holds,
                    "what": "results/: the lessons' saved results and exercises/ (checked attempts); "
                            "notebooks/: the lesson notebooks as they were when packed",
                    "files": {name: _sha256(data) for name, data in members}}
        archive.writestr(MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False))
    os.replace(partial, target)
    return target


def holds(path: str | Path) -> dict[str, Any]:
    """What the work file ``path`` says it holds: ``{"results": n, "notebooks": [names]}``."""
    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read(MANIFEST).decode("utf-8"))
    return manifest.get("holds") or {"results": len(manifest.get("files", {})), "notebooks": []}


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
        notebook = name.startswith(NOTEBOOKS) and len(parts) == 2 and name.endswith(".ipynb")
        if (not (name.startswith(PREFIX) or notebook) or name.startswith("/") or ".." in parts or "\\" in name
                or len(parts) < 2):
            raise ValueError(f"{where} names {name!r}, outside results/ and notebooks/: nothing was brought back")
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
        out[name] = data
    return out


def bring(path: str | Path, folder: str | Path | None = None, notebooks_to: str | Path = ".") -> list[Path]:
    """Put a work file's results back into ``folder`` (default :func:`results_dir`) and its notebooks into
    ``notebooks_to``; return the files written. An existing result with other content is kept beside it as
    ``<name>.before-<time>``; an existing notebook with other content stays, and the brought one is written
    beside it as ``<name>.brought-<time>.ipynb``."""
    path = Path(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{path} is not a readable zip ({exc})") from exc
    with archive:
        files = _checked(archive, path.name)
    folder = Path(folder) if folder is not None else results_dir()
    written, stamp = [], int(time.time())
    for name, data in files.items():
        if name.startswith(NOTEBOOKS):
            target = Path(notebooks_to) / name[len(NOTEBOOKS):]
            if target.exists() and target.read_bytes() != data:
                target = target.with_name(f"{target.stem}.brought-{stamp}.ipynb")
        else:
            target = folder / name[len(PREFIX):]
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


def pack_at_save_point() -> Path | None:
    """A save point (a lesson saved a result, an answer was checked): on Colab or Binder, rewrite
    :data:`LATEST` in the working folder with everything so far, so a session that ends before the last
    cell still leaves the work to download. Elsewhere nothing happens; a pack that fails says why and the
    lesson goes on."""
    if door.which_door() not in (door.COLAB, door.BINDER):
        return None
    try:
        return _mark_brought(take(Path.cwd() / LATEST))
    except (OSError, ValueError) as exc:
        warnings.warn(f"the work could not be packed into {LATEST} ({exc})", stacklevel=2)
        return None


def _mark_brought(packed: Path) -> Path:
    """Mark a file packed in this session as brought back already: the bring-back cell leaves it alone
    until another file of that name (an upload from an earlier session) takes its place."""
    write_text_atomic(packed.with_name(packed.name + ".brought"), _sha256(packed.read_bytes()) + "\n")
    return packed


def offer() -> Path | None:
    """A lesson's last cell: on Colab or Binder, pack the work and offer it (Colab starts the download);
    elsewhere the results folder stays where it is and nothing is packed."""
    which = door.which_door()
    if which not in (door.COLAB, door.BINDER):
        print(_("Your work is kept in {folder}.").format(folder=results_dir()))
        return None
    if not results_dir().is_dir() and not open_notebooks():
        print(_("No work to take yet: run the lesson's cells first."))
        return None
    packed = _mark_brought(take())
    print(describe(holds(packed)))
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
    """A lesson's bring-back cell, near the top: restore each ``attnlab-work-*.zip`` in ``folder`` (uploaded by
    the student) once for each content, marking it done (``<zip>.brought`` holds the zip's SHA-256)."""
    written: list[Path] = []
    for packed in sorted(Path(folder).glob(f"{KIND}-*.zip")):
        done = packed.with_name(packed.name + ".brought")
        digest = _sha256(packed.read_bytes())
        if done.is_file() and done.read_text(encoding="utf-8").strip() == digest:
            continue
        files = bring(packed, notebooks_to=folder)
        write_text_atomic(done, digest + "\n")
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
