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
``attnlab-work-latest.zip`` next to the notebook (:func:`attnlab.course.work_pack.pack_at_save_point`).
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
from pathlib import Path
from typing import Any

from attnlab.core import door
from attnlab.core.atomic import write_text_atomic
from attnlab.core.language import _
from attnlab.course import work_pack
from attnlab.course.results import results_dir
from attnlab.course.work_pack import KIND, LATEST, MANIFEST, describe, holds, mark_brought, open_notebooks, sha256  # noqa: F401 - MANIFEST: what a pack holds, for its readers


def take(out: str | Path | None = None, folder: str | Path | None = None,
         notebooks: dict[str, bytes] | None = None) -> Path:
    """:func:`attnlab.course.work_pack.take` of ``folder`` (default: the course's results folder)."""
    return work_pack.take(results_dir() if folder is None else folder, out, notebooks)


def bring(path: str | Path, folder: str | Path | None = None, notebooks_to: str | Path = ".") -> list[Path]:
    """:func:`attnlab.course.work_pack.bring` into ``folder`` (default: the course's results folder)."""
    return work_pack.bring(path, results_dir() if folder is None else folder, notebooks_to)


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
    packed = mark_brought(take())
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
        digest = sha256(packed.read_bytes())
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
