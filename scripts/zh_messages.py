"""Is every message the course prints in the Chinese catalogue?

    python scripts/zh_messages.py           # list the messages with no Chinese entry (exit 1 if any)
    python scripts/zh_messages.py --update  # append an empty entry for each to the .po, for a translator
    python scripts/zh_messages.py --unused  # also list catalogue entries no source file uses any more

Messages are the literals passed to ``_()`` / ``ngettext()`` and the claims of
``ClaimVerdict`` (see ``attnlab/tools/messages.py``). The catalogue is
``attnlab/locale/zh/LC_MESSAGES/attnlab.po``; it needs no build step (the
package compiles it in memory at first use).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attnlab.core.language import po_path, read_po  # noqa: E402
from attnlab.tools.messages import po_entry, untranslated, unused  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="append empty entries for the missing messages")
    parser.add_argument("--unused", action="store_true", help="list entries no source file uses")
    args = parser.parse_args(argv)
    missing = untranslated("zh")
    for group in missing:
        print(f"no Chinese entry: {group[0].msgid!r}  ({', '.join(m.where for m in group)})")
    if args.unused:
        for key in unused("zh"):
            print(f"unused entry: {key!r}")
    if args.update and missing:
        path = po_path("zh")
        text = path.read_text(encoding="utf-8").rstrip("\n") + "\n"
        known = read_po(text, untranslated=True)  # an empty entry already there is not added twice
        added = [po_entry(g) for g in missing if g[0].key not in known]
        path.write_text(text + "".join("\n" + e for e in added), encoding="utf-8")
        print(f"appended {len(added)} empty entr{'y' if len(added) == 1 else 'ies'} to {path.relative_to(ROOT)}")
    print(f"{len(missing)} message(s) without a Chinese entry")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
