"""Checksum manifests of model folders: write one, read one, verify a folder against it.

Used by :func:`attnlab.core.models.load_model` on every local folder and by the
model kit (:mod:`attnlab.tools.kit`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import shlex
import stat
from importlib import metadata
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from attnlab.core.atomic import write_text_atomic
from attnlab.core.language import _

MANIFEST = "attnlab-manifest.json"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")



class KitError(RuntimeError):
    """A model folder is incomplete or corrupt; the message says which file."""


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    """Versions of the libraries that wrote the folder (for the manifest)."""
    out = {}
    for dist in ("attnlab", "transformers", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _regular_files(folder: Path) -> list[Path]:
    """Regular files under ``folder`` (symbolic links and special files are skipped), sorted."""
    out = []
    for p in sorted(folder.rglob("*")):
        if p.name == MANIFEST or p.is_symlink():
            continue
        if any(parent.is_symlink() for parent in p.relative_to(folder).parents if str(parent) != "."):
            continue
        if stat.S_ISREG(p.lstat().st_mode):
            out.append(p)
    return out


#: the languages a kit may record (the course's examples and queries follow it)
LANGUAGES = ("zh", "en")


def write_manifest(folder: str | Path, model_name: str, *, source: str = "",
                   files: list[Path] | None = None, language: str = "") -> Path:
    """Write the checksum manifest of ``files`` (default: every regular file in ``folder``).

    The manifest records ``model`` (the name to re-download it by), ``files``
    (relative path -> SHA-256), ``versions`` (attnlab, transformers, torch),
    ``created`` (UTC date and time) and, when given, ``source`` (where the
    files came from) and ``language`` (``"zh"`` or ``"en"``: the language the
    course speaks to the model in, so a folder loads as what it is). Symbolic
    links are never listed or followed. The file is written atomically.
    """
    if language and language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, not {language!r}")
    folder = Path(folder)
    listed = _regular_files(folder) if files is None else [Path(f) for f in files]
    record: dict[str, Any] = {
        "model": model_name,
        "files": {p.relative_to(folder).as_posix(): sha256_file(p) for p in listed},
        "versions": _versions(),
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if source:
        record["source"] = source
    if language:
        record["language"] = language
    return write_text_atomic(folder / MANIFEST, json.dumps(record, indent=2))


def check_key(folder: Path, key: object) -> str:
    """A manifest key as a safe relative path inside ``folder``, or a KitError.

    Decided from the text alone, before the file system is touched, so a
    hostile manifest learns nothing about files outside the folder.
    """
    if not isinstance(key, str) or not key.strip():
        raise KitError(
            _("Model folder {folder}: {manifest} lists an empty file name; the manifest is not valid.").format(
                folder=folder, manifest=MANIFEST))
    pure = PurePosixPath(key)
    if pure.is_absolute() or PureWindowsPath(key).is_absolute() or PureWindowsPath(key).drive \
            or ".." in pure.parts or "\\" in key or "\x00" in key:
        raise KitError(
            _("Model folder {folder}: {manifest} lists {key!r}, which is not a file inside the folder. "
              "This manifest is not trustworthy: do not use this folder.").format(
                folder=folder, manifest=MANIFEST, key=key))
    return key


def read_manifest(folder: str | Path) -> dict | None:
    """The manifest of ``folder`` as a dict, or None when there is none.

    Raises:
        KitError: the manifest exists but is not valid JSON with a ``files``
            table of safe relative names and SHA-256 values.
    """
    folder = Path(folder)
    path = folder / MANIFEST
    if not path.exists():
        return None
    if not path.is_file() or path.is_symlink():
        raise KitError(_("Model folder {folder}: {manifest} is not a regular file.").format(
            folder=folder, manifest=MANIFEST))
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KitError(
            _("Model folder {folder} has a damaged {manifest} ({why}). "
              "Copy the whole folder again from the machine that ran `attnlab download`.").format(
                folder=folder, manifest=MANIFEST, why=exc.msg if hasattr(exc, "msg") else exc)) from None
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        raise KitError(
            _("Model folder {folder}: {manifest} has no 'files' table. "
              "Copy the whole folder again from the machine that ran `attnlab download`.").format(
                folder=folder, manifest=MANIFEST))
    for key, digest in record["files"].items():
        check_key(folder, key)
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise KitError(_("Model folder {folder}: {manifest} gives {key!r} no valid SHA-256.").format(
                folder=folder, manifest=MANIFEST, key=key))
    return record


def redownload_hint(folder: Path, record: dict) -> str:
    """The command that re-creates ``folder`` (names quoted for the shell)."""
    name = record.get("model") or "MODEL"
    if record.get("source") == "bundled":
        name = "bundled"
    return f"`attnlab download {shlex.quote(str(name))} --to {shlex.quote(str(folder))}`"


def _member(folder: Path, rel: str, again: str) -> Path:
    """The regular file ``folder/rel``; KitError when missing, a link or not a regular file."""
    path = folder / rel
    inside = [folder / Path(*PurePosixPath(rel).parts[: i + 1]) for i in range(len(PurePosixPath(rel).parts))]
    if any(p.is_symlink() for p in inside):
        raise KitError(_("Model folder {folder}: {file} is a symbolic link; a kit holds regular files only.").format(
            folder=folder, file=rel))
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        raise KitError(
            _("Model folder {folder} is incomplete: {file} is missing. "
              "Copy the whole folder again from the machine that ran `attnlab download` "
              "(or re-create it there with {again}).").format(folder=folder, file=rel, again=again)) from None
    if not stat.S_ISREG(mode):
        raise KitError(_("Model folder {folder}: {file} is not a regular file.").format(folder=folder, file=rel))
    return path


def unlisted_files(folder: str | Path, record: dict) -> list[str]:
    """Regular files in ``folder`` that its manifest does not list (they were added later)."""
    folder = Path(folder)
    listed = set(record["files"])
    return [p.relative_to(folder).as_posix() for p in _regular_files(folder)
            if p.relative_to(folder).as_posix() not in listed]


def verify_folder(folder: str | Path, *, require: bool = False) -> bool:
    """Check a folder against its manifest.

    Args:
        require: a missing manifest is an error (a kit folder must have one).

    Returns:
        True when a manifest exists and every file matches; False when the
        folder has no manifest (a plain ``save_pretrained`` folder).

    Raises:
        KitError: the manifest is unsafe or damaged, or a listed file is
            missing, not a regular file, or differs from its checksum; the
            message names the file and says what to do.
    """
    folder = Path(folder)
    record = read_manifest(folder)
    if record is None:
        if require:
            raise KitError(
                _("Model folder {folder} has no {manifest}: it is not a complete kit. "
                  "Copy the whole folder again, or make it with `attnlab download`.").format(
                    folder=folder, manifest=MANIFEST))
        return False
    again = redownload_hint(folder, record)
    for rel, expected in record["files"].items():
        path = _member(folder, rel, again)
        if sha256_file(path) != expected:
            raise KitError(
                _("Model folder {folder} is corrupt: {file} does not match its checksum "
                  "(the copy was interrupted or the file was changed). Copy the folder again, "
                  "or re-create it with {again} on a machine with internet.").format(
                    folder=folder, file=rel, again=again))
    return True


def recorded_language(folder: str | Path) -> str | None:
    """The language a kit folder's manifest records (``"zh"`` or ``"en"``), or None when it records
    none (or has no manifest). An unknown value is a KitError."""
    record = read_manifest(folder)
    if record is None or "language" not in record:
        return None
    if record["language"] not in LANGUAGES:
        raise KitError(_("Model folder {folder}: {manifest} records the language {language!r}; "
                         "use one of {languages}.").format(folder=folder, manifest=MANIFEST,
                                                             language=record["language"],
                                                             languages=", ".join(LANGUAGES)))
    return str(record["language"])
