"""The offline model kit: model folders with a checksum manifest.

A folder prepared for a classroom holds the model and tokenizer files plus
``attnlab-manifest.json``: ``{"model": name, "files": {relative path: sha256}}``.
:func:`verify_folder` checks it when the folder is loaded, so a half-copied
USB stick gives a clear error instead of a strange model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

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


def write_manifest(folder: str | Path, model_name: str) -> Path:
    """Write the checksum manifest of every file in ``folder``; return its path."""
    folder = Path(folder)
    files = {
        str(p.relative_to(folder)): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    out = folder / MANIFEST
    out.write_text(json.dumps({"model": model_name, "files": files}, indent=2), encoding="utf-8")
    return out


def verify_folder(folder: str | Path) -> bool:
    """Check a folder against its manifest.

    Returns:
        True when a manifest exists and every file matches; False when the
        folder has no manifest (a plain ``save_pretrained`` folder).

    Raises:
        KitError: a listed file is missing or its checksum differs.
    """
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.exists():
        return False
    listed = json.loads(manifest.read_text(encoding="utf-8")).get("files", {})
    for rel, expected in listed.items():
        path = folder / rel
        if not path.exists():
            raise KitError(
                f"Model folder {folder} is incomplete: {rel} is missing. "
                "Copy the whole folder again from the machine that ran `attnlab download`."
            )
        if sha256_file(path) != expected:
            raise KitError(
                f"Model folder {folder} is corrupt: {rel} does not match its checksum. "
                "Copy it again, or re-run `attnlab download MODEL --to DIR`."
            )
    return True
