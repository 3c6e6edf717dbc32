"""The course to read without running it: every executed lesson of both editions as static HTML, with an index.

    python scripts/course_html.py                  # every lesson, both editions, into build/html/
    python scripts/course_html.py 00 05            # only these lessons
    python scripts/course_html.py --lang zh        # one edition
    python scripts/course_html.py --out DIR        # somewhere else

(``bash scripts/course.sh html`` runs this.) Each page is made from the executed copy that
``bash scripts/course.sh run`` (``build/notebooks/``) and ``bash scripts/course.sh --lang zh run``
(``build/notebooks/zh/``) write, outputs and figures included (figures are embedded in the page, so
a page is one file that opens offline, on a phone too). A lesson with no executed copy is run first,
headless, in the run mode of the environment (``ATTNLAB_SMOKE=1`` for the quick one); ``--rerun``
runs every chosen lesson again. The index lists both editions and says when and in which mode each
page was executed.
"""

from __future__ import annotations

import argparse
import datetime
import html
import json
import os
import sys
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from attnlab.core.language import LANGUAGES, edition_folder, language_option, speaking
from attnlab.tools import run_lessons

ROOT = Path(__file__).resolve().parents[1]
EDITIONS = LANGUAGES
TITLES = {"en": "attnlab: multi-head self-attention, lesson by lesson",
          "zh": "attnlab：逐课理解多头自注意力"}


def lesson_title(book: nbformat.NotebookNode) -> str:
    """The first heading of the lesson (its title), without the ``#``."""
    for cell in book.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def run_mode(book: nbformat.NotebookNode) -> str:
    """``"smoke"`` or ``"full"``, from the mode line the lesson printed (``"?"`` when it printed none)."""
    for cell in book.cells:
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            if "ATTNLAB_SMOKE=1" in text:
                return "smoke"
            if text.startswith(("full mode", "完整模式")):
                return "full"
    return "?"


def figures_in(book: nbformat.NotebookNode) -> int:
    """How many figures (image outputs) the executed lesson holds."""
    return sum(1 for cell in book.cells for output in cell.get("outputs", [])
               if any(k.startswith("image/") for k in output.get("data", {})))


def build_pages(prefixes: list[str], langs: list[str], out: Path, build: Path, rerun: bool = False) -> list[dict]:
    """Write ``out/<lang>/<lesson>.html`` for each chosen lesson; return one entry per page for the index."""
    exporter = HTMLExporter(template_name="lab")
    pages = []
    for lang in langs:
        folder = edition_folder(build, lang)
        for source in run_lessons.lessons(prefixes, lang, ROOT):
            executed = folder / source.name
            if rerun or not executed.exists():
                print(f"running {source.relative_to(ROOT)} first (no executed copy in {folder})", flush=True)
                with speaking(lang):
                    run_lessons.run(source, folder)
            book = nbformat.read(str(executed), as_version=4)
            body, _resources = exporter.from_notebook_node(book, resources={"metadata": {"name": source.stem}})
            target = out / lang / f"{source.stem}.html"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
            when = datetime.datetime.fromtimestamp(executed.stat().st_mtime, datetime.timezone.utc)
            pages.append({"lang": lang, "lesson": source.stem, "title": lesson_title(book),
                          "page": f"{lang}/{target.name}", "mode": run_mode(book), "figures": figures_in(book),
                          "executed": when.strftime("%Y-%m-%d %H:%M UTC")})
            print(f"wrote {target.relative_to(out)} ({pages[-1]['figures']} figures, {pages[-1]['mode']} mode)",
                  flush=True)
    return pages


def write_index(pages: list[dict], out: Path) -> Path:
    """``out/index.html``: both editions' lessons, each with its mode and time of execution."""
    sections = []
    for lang in EDITIONS:
        mine = [p for p in pages if p["lang"] == lang]
        if not mine:
            continue
        heading = "English" if lang == "en" else "中文版"
        items = "\n".join(
            f'<li><a href="{html.escape(p["page"])}">{html.escape(p["title"] or p["lesson"])}</a> '
            f'<small>({html.escape(p["mode"])}, {html.escape(p["executed"])}, {p["figures"]} figures)</small></li>'
            for p in mine)
        sections.append(f'<section lang="{"zh-CN" if lang == "zh" else "en"}"><h2>{heading}</h2>\n'
                        f"<ol start=\"0\">\n{items}\n</ol></section>")
    index = out / "index.html"
    index.write_text(f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(TITLES['en'])}</title>
<style>body {{ font-family: sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em; line-height: 1.5 }}
small {{ color: #666 }}</style></head>
<body><h1>{html.escape(TITLES['en'])}</h1><p>{html.escape(TITLES['zh'])}</p>
<p>Every lesson executed, with its outputs and figures: read it without running it. 每一课都已执行，输出和图都在页面里。</p>
{chr(10).join(sections)}
</body></html>
""", encoding="utf-8")
    (out / "pages.json").write_text(json.dumps(pages, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lessons", nargs="*", help="lesson name prefixes, e.g. 00 05 (default: all)")
    ap.add_argument("--lang", type=language_option, action="append", help="an edition: en or zh (default: both)")
    ap.add_argument("--out", default=str(ROOT / "build" / "html"), help="where the pages go (default build/html)")
    ap.add_argument("--executed", default=str(ROOT / "build" / "notebooks"),
                    help="the executed copies (default build/notebooks; the Chinese ones in its zh/)")
    ap.add_argument("--rerun", action="store_true", help="run every chosen lesson again first")
    args = ap.parse_args(argv)
    os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend keeps figures in the outputs
    out = Path(args.out).resolve()
    pages = build_pages(args.lessons, args.lang or list(EDITIONS), out, Path(args.executed).resolve(), args.rerun)
    if not pages:
        print(f"no lesson starts with {args.lessons}", file=sys.stderr)
        return 2
    index = write_index(pages, out)
    print(f"{len(pages)} page(s); open {index}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
