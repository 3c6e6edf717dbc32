"""Make the untrained twins the package ships (``attnlab/course/reference/twins/``), with their reports.

    python scripts/twin_references.py --smoke                  # smoke-mode twins of the offline models
    python scripts/twin_references.py                          # full size: also writes docs/reports/<model>/
    python scripts/twin_references.py --model bundled --smoke  # one model

Each run is ``attnlab report`` with its default shuffled twin (:func:`attnlab.tools.report.make_report`):
the report measures the model, then its untrained twin, and saves the twin's evidence in the results
folder; that file is copied to ``attnlab/course/reference/twins/<model>.<mode>.json``, where lesson 12
finds it for a student who has run no report. A full-size run also leaves its report in
``docs/reports/<model>/``, which ``python scripts/course_numbers.py`` quotes in the READMEs and guides.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attnlab.core.models import MULTILINGUAL, load_model  # noqa: E402
from attnlab.course.twin_evidence import TWIN_RESULT, reference_file  # noqa: E402
from attnlab.tools.report import make_report  # noqa: E402

#: the models that run offline here: the offline default and the bundled English model
MODELS = (MULTILINGUAL, "bundled")
#: where a full-size report of each is kept (docs/reports/<folder>)
REPORT_FOLDERS = {MULTILINGUAL: "multilingual-e5-small", "bundled": "all-MiniLM-L6-v2"}


def make_twin(model: str, *, smoke: bool) -> Path:
    """Run the report on ``model`` (smoke or full size) and ship its twin; returns the shipped file."""
    os.environ["ATTNLAB_SMOKE"] = "1" if smoke else "0"
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ATTNLAB_RESULTS"] = str(Path(tmp) / "results")
        out = Path(tmp) / "report" if smoke else ROOT / "docs" / "reports" / REPORT_FOLDERS[model]
        if not smoke and out.exists():
            shutil.rmtree(out)  # a fresh report: no part read back from an earlier version
        make_report(model, out=out, lang="en")
        m = load_model(model, verbose=False, check=False)
        target = reference_file(m, smoke=smoke)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(os.environ["ATTNLAB_RESULTS"]) / f"{TWIN_RESULT}.json", target)
        if not smoke:
            shutil.rmtree(out / "parts" / "shards", ignore_errors=True)
            shutil.rmtree(out / "twin" / "parts" / "shards", ignore_errors=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=MODELS, action="append", help="one model (default: both)")
    parser.add_argument("--smoke", action="store_true", help="smoke sizes (what the tests and smoke runs read)")
    args = parser.parse_args(argv)
    for model in args.model or MODELS:
        print(f"{model}: wrote {make_twin(model, smoke=args.smoke).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
