"""The offline model kit: model folders with a checksum manifest.

A classroom behind a firewall cannot reach the model hub. The kit moves a
model there on a USB stick or a shared drive:

1. On a machine with internet (once)::

       attnlab download bert-base-chinese --to kit/bert-base-chinese

   loads the model and tokenizer, saves them as safetensors with
   ``save_pretrained`` (with the masked-LM head when the checkpoint has one)
   and writes ``attnlab-manifest.json``: the SHA-256 of
   every file, the model's name, the attnlab / transformers / torch versions
   and the date. ``MODEL`` may also be ``bundled`` (the offline MiniLM) or a
   local folder, which is how the kit is tested without a network.

2. Copy the folder to each classroom machine and check the copy::

       attnlab verify kit/bert-base-chinese      # or: attnlab download --check DIR

3. Use it::

       ATTNLAB_MODEL=kit/bert-base-chinese jupyter lab     # every lesson's load_model("auto")
       al.load_model("kit/bert-base-chinese")              # or explicitly

   :func:`attnlab.load_model` calls :func:`verify_folder` on every folder, so
   a half-copied stick gives a clear error naming the file instead of a
   strange model.
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

from attnlab.core.manifest import MANIFEST, KitError, sha256_file, write_manifest, read_manifest, verify_folder, _redownload_hint

#: Files copied along from a local source folder when present (model card, licence).
_CARRY_ALONG = ("README.md", "LICENSE", "LICENSE.txt", "LICENSE.md", "NOTICE")


@dataclass
class KitReport:
    """What :func:`check_kit` found in a folder."""

    folder: Path
    model: str
    n_files: int
    n_bytes: int
    created: str
    versions: dict

    def summary(self) -> str:
        made = f", made {self.created}" if self.created else ""
        by = ", ".join(f"{k} {v}" for k, v in self.versions.items())
        return (
            f"{self.folder}: {self.model}, {self.n_files} files, {self.n_bytes / 1e6:.1f} MB, "
            f"all checksums match{made}" + (f" ({by})" if by else "")
        )


def check_kit(folder: str | Path) -> KitReport:
    """Verify a kit folder and describe it.

    Raises:
        KitError: the folder does not exist, has no manifest, or a file is
            missing or corrupt.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise KitError(f"{folder} is not a folder. Give the folder made by `attnlab download MODEL --to DIR`.")
    if not verify_folder(folder):
        raise KitError(
            f"{folder} has no {MANIFEST}, so it cannot be verified (it may be a plain "
            "save_pretrained folder; load_model can still use it). Make a checked kit with "
            "`attnlab download MODEL --to DIR`."
        )
    record = read_manifest(folder) or {}
    files = record.get("files", {})
    size = sum((folder / rel).stat().st_size for rel in files)
    return KitReport(folder, str(record.get("model", "?")), len(files), size,
                     str(record.get("created", "")), dict(record.get("versions", {})))


def download_model(model: str, to: str | Path, *, force: bool = False, verbose: bool = True) -> Path:
    """Save ``model`` (and its tokenizer) as a verified offline kit folder.

    Args:
        model: a hub id such as ``"bert-base-chinese"`` (needs the hub, or the
            local cache), ``"bundled"`` (copies the offline MiniLM), ``"auto"``
            or a local model folder.
        to: the folder to create. It must not exist or be empty, unless
            ``force`` (then files in it are replaced).
        verbose: print what happens.

    Returns:
        The folder, ready for ``load_model(folder)`` / ``ATTNLAB_MODEL=folder``.

    Raises:
        KitError: ``to`` is a file or a non-empty folder (without ``force``).
        attnlab.ModelLoadError: the model cannot be loaded (e.g. offline).
    """
    from attnlab.core.models import BUNDLED, quiet_transformers, bundled_model_path, load_model

    out = Path(to).expanduser()
    if out.exists() and not out.is_dir():
        raise KitError(f"{out} is a file; give a folder name for --to.")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise KitError(f"{out} is not empty. Choose a new folder, or pass --force to replace its files.")
    m = load_model(model, verbose=verbose)  # loads, verifies a source kit, checks attention maps
    if m.source == "local folder" and Path(m.path).resolve() == out.resolve():
        raise KitError(f"{out} is the folder being downloaded from; choose another --to folder.")
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    to_save = _with_mlm_head(m)
    with quiet_transformers():
        to_save.save_pretrained(out, safe_serialization=True)
        m.tokenizer.save_pretrained(out)
    source_dir = bundled_model_path() if m.source == BUNDLED else Path(m.path) if m.source == "local folder" else None
    if source_dir is not None:
        for name in _CARRY_ALONG:
            if (source_dir / name).is_file() and not (out / name).exists():
                shutil.copy2(source_dir / name, out / name)
    for path in out.rglob("*"):
        if path.is_file():  # safetensors writes 0600; a shared classroom folder must be readable
            path.chmod(path.stat().st_mode | 0o444)
    name = "all-MiniLM-L6-v2" if m.source == BUNDLED else m.name
    write_manifest(out, name, source=m.source)
    if verbose:
        report = check_kit(out)
        print(f"attnlab: saved {report.model} to {out} ({report.n_files} files, {report.n_bytes / 1e6:.1f} MB).")
        print(f"Use it offline with ATTNLAB_MODEL={out} or load_model({str(out)!r}); "
              f"check a copy with `attnlab verify {out}`.")
    return out


def _with_mlm_head(m: Any) -> Any:
    """The module to save: the encoder plus its trained masked-LM head when the
    checkpoint has one (lesson 11 scores heads with the MLM loss), else the encoder."""
    try:
        from attnlab.analysis.importance import mlm_model

        mlm = mlm_model(m)
    except Exception:  # noqa: BLE001 - no MLM head to keep: save the encoder alone
        mlm = None
    return mlm if mlm is not None else m.model


# --------------------------------------------------------------------------- command line


def _download_cmd(args: argparse.Namespace) -> int:
    from attnlab.core.models import ModelLoadError, NoAttentionError

    if args.check:
        return _verify_cmd(argparse.Namespace(folder=args.check))
    if not args.model or not args.to:
        print("attnlab download: give MODEL and --to DIR (or --check DIR to verify a folder).")
        return 2
    try:
        download_model(args.model, args.to, force=args.force)
    except (KitError, ModelLoadError, NoAttentionError) as exc:
        print(f"attnlab download: {exc}")
        return 1
    return 0


def _verify_cmd(args: argparse.Namespace) -> int:
    try:
        report = check_kit(args.folder)
    except KitError as exc:
        print(f"FAILED: {exc}")
        return 1
    print(f"ok: {report.summary()}")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``attnlab download`` and ``attnlab verify``."""
    p = subparsers.add_parser(
        "download",
        help="save a model as an offline kit folder (run once where there is internet)",
        description="Save MODEL and its tokenizer to DIR as safetensors with a checksum manifest. "
        "MODEL: a hub id (bert-base-chinese), 'bundled', 'auto' or a local folder.",
    )
    p.add_argument("model", nargs="?", help="hub id, 'bundled', 'auto' or a local model folder")
    p.add_argument("--to", metavar="DIR", help="folder to create")
    p.add_argument("--force", action="store_true", help="replace files in a non-empty DIR")
    p.add_argument("--check", metavar="DIR", help="only verify an existing kit folder")
    p.set_defaults(func=_download_cmd)

    p = subparsers.add_parser("verify", help="check a kit folder against its checksum manifest")
    p.add_argument("folder", help="folder made by `attnlab download`")
    p.set_defaults(func=_verify_cmd)
