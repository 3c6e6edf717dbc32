"""The Chinese edition of the lessons: what is left to translate, and the notebooks built from it.

    python scripts/zh_notebooks.py --check          # every lesson: missing / stale / unknown cells (exit 1 if any)
    python scripts/zh_notebooks.py --stub 05        # the English text of lesson 05's cells still to translate
    python scripts/zh_notebooks.py --stub all       #   ... of every lesson
    python scripts/zh_notebooks.py --build          # write notebooks/zh/NN_name.ipynb for every lesson
    python scripts/zh_notebooks.py --build 00 01    #   ... for some

Translations live in ``notebooks/zh/translations/NN_name.md``, one block per
markdown cell (format in ``attnlab/tools/zh_edition.py``); code comments in
``notebooks/zh/translations/comments.po``, one entry per English comment
(``--check`` lists each English comment with no entry, ``--stub`` prints the
entry to fill in). ``--stub`` prints
each missing or stale cell as a ready block (marker with the English text's
fingerprint, then the English to replace), and for a stale cell the English it
was translated from (found in the git history) beside the English now.
Built notebooks are committed without outputs; ``tests/test_zh_edition.py``
fails when one is not what ``--build`` writes.
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attnlab.tools.zh_edition import COMMENTS_FILE, Lesson, Problem, english_hash, format_block, lessons  # noqa: E402


def old_english(lesson: Lesson, cell_id: str, en_hash: str, depth: int = 200) -> str | None:
    """The English text of ``cell_id`` whose fingerprint is ``en_hash``, from the git history."""
    rel = lesson.english.relative_to(ROOT).as_posix()
    try:
        commits = subprocess.run(["git", "log", f"-{depth}", "--format=%H", "--", rel], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    for commit in commits:
        shown = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode != 0:
            continue
        try:
            cells = json.loads(shown.stdout)["cells"]
        except (ValueError, KeyError):
            continue
        for cell in cells:
            source = "".join(cell.get("source", ""))
            if cell.get("id") == cell_id and english_hash(source) == en_hash:
                return source
    return None


def describe(lesson: Lesson, problem: Problem) -> str:
    """One problem, with what a translator needs to fix it."""
    lines = [str(problem)]
    if problem.kind in ("missing", "stale"):
        if problem.kind == "stale":
            before = old_english(lesson, problem.cell_id, problem.old_hash)
            if before is None:
                lines.append(f"  (the English it was translated from, fingerprint {problem.old_hash}, "
                             "is not in the git history)")
            else:
                lines.append("  English then -> now:")
                lines += ["    " + d for d in difflib.unified_diff(
                    before.splitlines(), problem.english.splitlines(), "then", "now", lineterm="", n=1)][2:]
        lines.append("  block to write (replace the English with Chinese):")
        lines += ["    " + line for line in format_block(problem.cell_id, english_hash(problem.english),
                                                          problem.english).rstrip("\n").splitlines()]
    if problem.kind == "english comment":
        quoted = problem.english.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f"  entry to add to notebooks/zh/translations/{COMMENTS_FILE}:")
        lines += [f'    msgid "{quoted}"', '    msgstr ""']
    return "\n".join(lines)


def report(selected: list[Lesson], *, verbose: bool) -> int:
    total = 0
    for lesson in selected:
        try:
            problems = lesson.problems()
        except ValueError as exc:  # a malformed catalogue file
            print(f"{lesson.name}: {exc}")
            total += 1
            continue
        markdown = sum(c.cell_type == "markdown" for c in lesson.read_english().cells)
        done = markdown - sum(p.kind in ("missing", "stale") for p in problems)
        english = sum(p.kind == "english comment" for p in problems)
        current = "" if lesson.is_current() else "; notebooks/zh copy not built from this (run --build)"
        print(f"{lesson.name}: {done}/{markdown} markdown cells translated and current, "
              f"{english} English comment(s) in code cells{current}")
        total += bool(current)
        for problem in problems:
            print(describe(lesson, problem) if verbose else "  " + str(problem))
        total += len(problems)
    return total


def build(selected: list[Lesson]) -> None:
    for lesson in selected:
        lesson.chinese.parent.mkdir(parents=True, exist_ok=True)
        text = lesson.built_text()
        if lesson.chinese.exists() and lesson.chinese.read_text(encoding="utf-8") == text:
            continue
        lesson.chinese.write_text(text, encoding="utf-8")
        print(f"wrote {lesson.chinese.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--check", action="store_true", help="report every lesson's untranslated cells")
    group.add_argument("--stub", metavar="NN", help="print the cells of lesson NN (or 'all') still to translate")
    group.add_argument("--build", action="store_true", help="write notebooks/zh/*.ipynb")
    parser.add_argument("lessons", nargs="*", help="lesson numbers (default: all)")
    args = parser.parse_args(argv)
    if args.stub:
        selected = lessons(ROOT, None if args.stub == "all" else [args.stub])
        if not selected:
            parser.error(f"no lesson starts with {args.stub!r}")
        return 1 if report(selected, verbose=True) else 0
    selected = lessons(ROOT, args.lessons or None)
    if args.build:
        build(selected)
        return 0
    problems = report(selected, verbose=False)
    print(f"{problems} problem(s)" + (": `--stub NN` prints what to translate" if problems else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
