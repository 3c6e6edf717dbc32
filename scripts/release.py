"""Cut a release of the course: check that everything naming the version agrees, then tag it.

    python scripts/release.py            # check, then create the tag v<VERSION> on the current commit
    python scripts/release.py --check    # check only; create nothing

The version and the repository live in ``attnlab/_meta.py``. Before tagging, this checks that

* the package's version is ``_meta.VERSION`` (pyproject.toml reads it from there) and the tag is
  ``v`` + that version;
* every lesson's first cell (both editions) installs the course at that tag (``scripts/nb.py``);
* every Colab and Binder badge of both READMEs opens that tag of ``_meta.REPO``;
* lesson 12's download of the lessons (``attnlab.tools.lesson_runner.fetch_command``) clones that tag;
* the commit is what would be tagged: no tracked file is changed but not committed;
* the tag does not exist yet.

It refuses, with one line per problem and exit code 1, when one fails. After the tag is made,
``git push origin <tag>`` publishes it (a fork: see docs/install.md, "Teachers who fork the course").
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import nb  # noqa: E402  scripts/nb.py
from attnlab import _meta  # noqa: E402

REFUSED = 1


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def version_problems() -> list[str]:
    found = []
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", _meta.VERSION):
        found.append(f"attnlab/_meta.py: VERSION {_meta.VERSION!r} is not of the form 1.2.3")
    if _meta.TAG != f"v{_meta.VERSION}":
        found.append(f"attnlab/_meta.py: TAG {_meta.TAG!r} is not 'v' + VERSION ({_meta.VERSION})")
    dynamic = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {}).get(
        "setuptools", {}).get("dynamic", {}).get("version", {})
    if dynamic.get("attr") != "attnlab._meta.VERSION":
        found.append("pyproject.toml: the version is not read from attnlab._meta.VERSION")
    return found


def cell_and_badge_problems() -> list[str]:
    """Lessons whose first cell or outputs are stale, and README badges not at this tag."""
    return [msg for path in nb.all_notebooks() for msg in nb.problems(path)] + nb.readme_problems()


def lesson_12_problems() -> list[str]:
    """Lesson 12 fetches the lessons of this version with git: that command must name this tag."""
    from attnlab.tools import lesson_runner

    saved = os.environ.pop(lesson_runner.COURSE_GIT_ENV, None)
    try:
        command = lesson_runner.fetch_command(Path("course"))
    finally:
        if saved is not None:
            os.environ[lesson_runner.COURSE_GIT_ENV] = saved
    branch = command[command.index("--branch") + 1]
    if branch != _meta.TAG or _meta.GIT_URL not in command:
        return [f"lesson 12 downloads {branch} from {command[-2]}, not {_meta.TAG} from {_meta.GIT_URL}"]
    return []


def git_problems() -> list[str]:
    changed = _git("status", "--porcelain", "--untracked-files=no")
    if changed.returncode:
        return [f"{ROOT} is not a git repository ({changed.stderr.strip()})"]
    found = []
    if changed.stdout.strip():
        files = [line[3:] for line in changed.stdout.splitlines()]
        found.append(f"{len(files)} tracked file(s) changed but not committed, e.g. {files[0]}: commit them first")
    if _git("rev-parse", "-q", "--verify", f"refs/tags/{_meta.TAG}").returncode == 0:
        found.append(f"the tag {_meta.TAG} exists already: raise VERSION in attnlab/_meta.py and run "
                     "`python scripts/nb.py sync`")
    return found


def problems() -> list[str]:
    """Every reason not to tag this commit as ``_meta.TAG`` (empty: it can be tagged)."""
    return version_problems() + cell_and_badge_problems() + lesson_12_problems() + git_problems()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="check only; create no tag")
    args = ap.parse_args(argv)
    found = problems()
    for line in found:
        print(f"release: {line}", file=sys.stderr)
    if found:
        print(f"release: {_meta.TAG} not tagged ({len(found)} problem(s) above).", file=sys.stderr)
        return REFUSED
    if args.check:
        print(f"release: {_meta.TAG} can be tagged: version, cells, badges and lesson 12's download agree.")
        return 0
    made = _git("tag", "-a", _meta.TAG, "-m", f"attnlab {_meta.VERSION}")
    if made.returncode:
        print(f"release: git could not create {_meta.TAG}: {made.stderr.strip()}", file=sys.stderr)
        return REFUSED
    print(f"release: tagged {_meta.TAG}. Publish it with: git push origin {_meta.TAG}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
