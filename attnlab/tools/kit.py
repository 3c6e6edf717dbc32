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
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from attnlab.analysis.importance import mlm_model
from attnlab.core.language import language_option
from attnlab.core.manifest import (
    MANIFEST,
    KitError,
    check_key,
    read_manifest,
    unlisted_files,
    verify_folder,
    write_manifest,
)
from attnlab.core.models import (
    BUNDLED,
    LoadedModel,
    ModelLoadError,
    NoAttentionError,
    bundled_model_path,
    load_model,
    quiet_transformers,
)

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
    unlisted: list[str]  # files in the folder that the manifest does not list

    def summary(self) -> str:
        made = f", made {self.created}" if self.created else ""
        by = ", ".join(f"{k} {v}" for k, v in self.versions.items())
        extra = (f"; {len(self.unlisted)} file(s) not in the manifest: {', '.join(self.unlisted[:5])}"
                 if self.unlisted else "")
        return (
            f"{self.folder}: {self.model}, {self.n_files} files, {self.n_bytes / 1e6:.1f} MB, "
            f"all checksums match{made}" + (f" ({by})" if by else "") + extra
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
    if read_manifest(folder) is None:
        raise KitError(
            f"{folder} has no {MANIFEST}, so it cannot be verified (it may be a plain "
            "save_pretrained folder; load_model can still use it). Make a checked kit with "
            "`attnlab download MODEL --to DIR`."
        )
    verify_folder(folder, require=True)
    record = read_manifest(folder)
    files = record["files"]
    size = sum((folder / rel).stat().st_size for rel in files)
    return KitReport(folder, str(record.get("model", "?")), len(files), size,
                     str(record.get("created", "")), dict(record.get("versions", {})),
                     unlisted_files(folder, record))


def download_model(model: str, to: str | Path, *, force: bool = False, verbose: bool = True,
                   language: str = "") -> Path:
    """Save ``model`` (and its tokenizer) as a verified offline kit folder.

    Args:
        model: a hub id such as ``"bert-base-chinese"`` (needs the hub, or the
            local cache), ``"bundled"`` (copies the offline MiniLM), ``"auto"``
            or a local model folder.
        to: the folder to create. It must not exist or be empty, unless
            ``force`` and it is already a kit: then only the files its old
            manifest lists are replaced, and other files are reported, never
            touched or listed.
        verbose: print what happens.
        language: ``"zh"`` or ``"en"``, recorded in the manifest; default: the loaded model's
            (read from the source's manifest, else from its vocabulary).

    Returns:
        The folder, ready for ``load_model(folder)`` / ``ATTNLAB_MODEL=folder``.

    Raises:
        KitError: ``to`` is a file, or a non-empty folder (without ``force``,
            or with ``force`` when it is not a kit).
        attnlab.ModelLoadError: the model cannot be loaded (e.g. offline).
    """
    out = Path(to).expanduser()
    if out.exists() and not out.is_dir():
        raise KitError(f"{out} is a file; give a folder name for --to.")
    old = None
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise KitError(f"{out} is not empty. Choose a new folder, or pass --force to replace a kit made before.")
        old = read_manifest(out)
        if old is None:
            raise KitError(f"{out} is not empty and is not a kit (no {MANIFEST}): --force only replaces "
                           "a kit folder. Choose a new folder.")
    m = load_model(model, verbose=verbose)  # loads, verifies a source kit, checks attention maps
    if m.source == "local folder" and Path(m.path).resolve() == out.resolve():
        raise KitError(f"{out} is the folder being downloaded from; choose another --to folder.")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        written = _save_kit_files(m, staging)
        out.mkdir(exist_ok=True)
        if old is not None:
            for rel in old["files"]:
                (out / check_key(out, rel)).unlink(missing_ok=True)
        for rel in written:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, out / rel)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    name = "all-MiniLM-L6-v2" if m.source == BUNDLED else m.name
    write_manifest(out, name, source=m.source, files=[out / rel for rel in written], language=language or m.language)
    others = unlisted_files(out, read_manifest(out))
    if verbose:
        report = check_kit(out)
        print(f"attnlab: saved {report.model} to {out} ({report.n_files} files, {report.n_bytes / 1e6:.1f} MB).")
        if others:
            print(f"attnlab: {len(others)} other file(s) in {out} are not part of the kit and were left "
                  f"alone: {', '.join(others[:5])}")
        print(f"Use it offline with ATTNLAB_MODEL={shlex.quote(str(out))} or load_model({str(out)!r}); "
              f"check a copy with `attnlab verify {shlex.quote(str(out))}`.")
    return out


def _save_kit_files(m: LoadedModel, folder: Path) -> list[str]:
    """Write the model, its tokenizer and its licence files into an empty ``folder``;
    return the relative names written. Symbolic links in the source are never followed."""
    with quiet_transformers():
        _with_mlm_head(m).save_pretrained(folder, safe_serialization=True)
        m.tokenizer.save_pretrained(folder)
    source_dir = bundled_model_path() if m.source == BUNDLED else Path(m.path) if m.source == "local folder" else None
    if source_dir is not None:
        for name in _CARRY_ALONG:
            src = source_dir / name
            if src.is_file() and not src.is_symlink() and not (folder / name).exists():
                shutil.copyfile(src, folder / name, follow_symlinks=False)
    written = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            path.chmod(0o644)  # safetensors writes 0600; a shared classroom folder must be readable
            written.append(path.relative_to(folder).as_posix())
    return written


def _with_mlm_head(m: LoadedModel) -> torch.nn.Module:
    """The module to save: the encoder plus its trained masked-LM head when the
    checkpoint has one (lesson 11 scores heads with the MLM loss), else the encoder."""
    try:
        mlm = mlm_model(m)
    except Exception:  # noqa: BLE001 - no MLM head to keep: save the encoder alone
        mlm = None
    return mlm if mlm is not None else m.model


# --------------------------------------------------------------------------- command line


def _download_cmd(args: argparse.Namespace) -> int:
    if args.check:
        return _verify_cmd(argparse.Namespace(folder=args.check))
    if not args.model or not args.to:
        print("attnlab download: give MODEL and --to DIR (or --check DIR to verify a folder).")
        return 2
    try:
        download_model(args.model, args.to, force=args.force, language=args.language or "")
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
    p.add_argument("--language", type=language_option, default=None,
                   help="the language to record in the kit (default: the model's own)")
    p.set_defaults(func=_download_cmd)

    p = subparsers.add_parser("verify", help="check a kit folder against its checksum manifest")
    p.add_argument("folder", help="folder made by `attnlab download`")
    p.set_defaults(func=_verify_cmd)
