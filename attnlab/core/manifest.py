"""Checksum manifests of model folders: write one, read one, verify a folder against it.

Used by :func:`attnlab.core.models.load_model` on every local folder and by the
model kit (:mod:`attnlab.tools.kit`).
"""


from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "attnlab-manifest.json"



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
    from importlib import metadata

    out = {}
    for dist in ("attnlab", "transformers", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def write_manifest(folder: str | Path, model_name: str, *, source: str = "") -> Path:
    """Write the checksum manifest of every file in ``folder``; return its path.

    The manifest records ``model`` (the name to re-download it by), ``files``
    (relative path -> SHA-256), ``versions`` (attnlab, transformers, torch),
    ``created`` (UTC date and time) and, when given, ``source`` (where the
    files came from).
    """
    folder = Path(folder)
    files = {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    record: dict[str, Any] = {
        "model": model_name,
        "files": files,
        "versions": _versions(),
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if source:
        record["source"] = source
    out = folder / MANIFEST
    out.write_text(json.dumps(record, indent=2), encoding="utf-8")
    return out


def read_manifest(folder: str | Path) -> dict | None:
    """The manifest of ``folder`` as a dict, or None when there is none.

    Raises:
        KitError: the manifest exists but is not valid JSON with a ``files`` table.
    """
    path = Path(folder) / MANIFEST
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KitError(
            f"Model folder {folder} has a damaged {MANIFEST} ({exc.msg if hasattr(exc, 'msg') else exc}). "
            "Copy the whole folder again from the machine that ran `attnlab download`."
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        raise KitError(
            f"Model folder {folder}: {MANIFEST} has no 'files' table. "
            "Copy the whole folder again from the machine that ran `attnlab download`."
        )
    return record


def _redownload_hint(folder: Path, record: dict) -> str:
    name = record.get("model") or "MODEL"
    if record.get("source") == "bundled":
        name = "bundled"
    return f"`attnlab download {name} --to {folder}`"


def verify_folder(folder: str | Path) -> bool:
    """Check a folder against its manifest.

    Returns:
        True when a manifest exists and every file matches; False when the
        folder has no manifest (a plain ``save_pretrained`` folder).

    Raises:
        KitError: a listed file is missing or its checksum differs; the
            message names the file and says what to do.
    """
    folder = Path(folder)
    record = read_manifest(folder)
    if record is None:
        return False
    again = _redownload_hint(folder, record)
    for rel, expected in record["files"].items():
        path = folder / rel
        if not path.exists():
            raise KitError(
                f"Model folder {folder} is incomplete: {rel} is missing. "
                "Copy the whole folder again from the machine that ran `attnlab download` "
                f"(or re-create it there with {again})."
            )
        if sha256_file(path) != expected:
            raise KitError(
                f"Model folder {folder} is corrupt: {rel} does not match its checksum "
                "(the copy was interrupted or the file was changed). Copy the folder again, "
                f"or re-create it with {again} on a machine with internet."
            )
    return True


# --------------------------------------------------------------------------- download


