"""A student's work in one file: the results folder and the lesson notebooks packed into a zip, and back.

The zip holds ``attnlab-work.json`` (what it is, when it was made, what it holds, and each file's SHA-256),
the files under ``results/`` and the notebooks under ``notebooks/``: the lessons in the working folder and,
on Colab, the open notebook as Colab keeps it (read through Colab's own API). A notebook brought back never
replaces one that is there with other content: it is written beside it (``<name>.brought-<time>.ipynb``).
Bringing back checks all of it first: a file that is not such a zip, a member outside ``results/``, a
link, a checksum that does not match, or more than :data:`MAX_BYTES` in all stops with one sentence and
writes nothing. A file already in the results folder with other content is kept beside it
(``<name>.before-<time>``), never lost.

Every function is given the results folder; :mod:`attnlab.tools.take_work` is what students and lessons call
(the course's results folder by default, the last cell's offer, the bring-back cell, ``attnlab work``).
A save point (:mod:`attnlab.course.results`, :mod:`attnlab.course.attempts`) calls
:func:`pack_at_save_point`.
"""

from __future__ import annotations


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


def sha256(data: bytes) -> str:
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


def take(folder: str | Path, out: str | Path | None = None, notebooks: dict[str, bytes] | None = None) -> Path:
    """Pack the results folder ``folder`` and the student's notebooks
    (``notebooks``, default :func:`open_notebooks` of the working folder) into one zip and return its path:
    ``out`` if given (a folder or a file name), else ``attnlab-work-<date>-<time>.zip`` here."""
    folder = Path(folder)
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
        manifest = {"kind": KIND, "schema": SCHEMA, "created": stamp, "contents": holds,
                    "what": "results/: the lessons' saved results and exercises/ (checked attempts); "
                            "notebooks/: the lesson notebooks as they were when packed",
                    "files": {name: sha256(data) for name, data in members}}
        archive.writestr(MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False))
    os.replace(partial, target)
    return target


def holds(path: str | Path) -> dict[str, Any]:
    """What the work file ``path`` says it holds: ``{"results": n, "notebooks": [names]}``."""
    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read(MANIFEST).decode("utf-8"))
    return manifest.get("contents") or {"results": len(manifest.get("files", {})), "notebooks": []}


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
        if sha256(data) != digest:
            raise ValueError(f"{where}: {name} does not match its checksum (damaged): nothing was brought back")
        out[name] = data
    return out


def bring(path: str | Path, folder: str | Path, notebooks_to: str | Path = ".") -> list[Path]:
    """Put a work file's results back into the results folder ``folder`` and its notebooks into
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
    folder = Path(folder)
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


def pack_at_save_point(folder: Path) -> Path | None:
    """A save point (a lesson saved a result, an answer was checked): on Colab or Binder, rewrite
    :data:`LATEST` in the working folder with everything so far, so a session that ends before the last
    cell still leaves the work to download. Elsewhere nothing happens; a pack that fails says why and the
    lesson goes on."""
    if door.which_door() not in (door.COLAB, door.BINDER):
        return None
    try:
        return mark_brought(take(folder, Path.cwd() / LATEST))
    except (OSError, ValueError) as exc:
        warnings.warn(f"the work could not be packed into {LATEST} ({exc})", stacklevel=2)
        return None


def mark_brought(packed: Path) -> Path:
    """Mark a file packed in this session as brought back already: the bring-back cell leaves it alone
    until another file of that name (an upload from an earlier session) takes its place."""
    write_text_atomic(packed.with_name(packed.name + ".brought"), sha256(packed.read_bytes()) + "\n")
    return packed
