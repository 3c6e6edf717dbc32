"""Does a report that stops each part early give the verdicts of the course's fixed-size full run?

    python scripts/report_vs_course.py --report report --results results [--model M]

``attnlab report`` grows each sized part (queries, texts, shards) until its verdict settles;
the course's lessons 05-11 measure at fixed, full sizes and lesson 12 judges their saved
results. Given a finished report and the results folder of a full course run on the same
model (``ATTNLAB_RESULTS``, or the course's ``results/``), this prints both verdicts of every
conclusion side by side, with where the report's parts stopped, and how many agree. Exit
status 1 when a verdict differs (0 also when one side could not judge a claim: that is
printed, not hidden).
"""

from __future__ import annotations

import argparse
import os
import sys

from attnlab.core.models import load_model
from attnlab.course.evidence import LABELS, all_conclusions, gather
from attnlab.tools.report import read_report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", required=True, help="a finished report's folder (attnlab report --out)")
    ap.add_argument("--results", required=True, help="the results folder of a full course run")
    ap.add_argument("--model", default=None, help="the model both ran on (default: the report's)")
    args = ap.parse_args()
    report = read_report(args.report)
    if report["settings"].get("smoke"):
        print("note: the report ran in smoke mode")
    os.environ["ATTNLAB_RESULTS"] = args.results
    m = load_model(args.model or report["settings"]["model"], verbose=False)  # the name results are saved under
    evidence = gather(m)  # lesson 12's evidence from the saved results, nothing re-run
    if all(origin == "missing" for origin in evidence.origin.values()):
        raise SystemExit(f"no results of {m.name} in {args.results}: run the course there on that model first")
    course = all_conclusions(evidence)
    print(f"{'claim':6s} {'report (stops early)':28s} {'course (fixed size)':28s}")
    same = differ = 0
    for label in LABELS:
        ours = report["claims"].get(label, {}).get("verdict", "missing")
        theirs = course[label].verdict if label in course else "missing"
        mark = "same" if ours == theirs else "DIFFERENT"
        same, differ = same + (ours == theirs), differ + (ours != theirs)
        print(f"{label:6s} {ours:28s} {theirs:28s} {mark}")
    for part, run in report["settings"].get("parts", {}).items():
        stop = run.get("stopping") if isinstance(run, dict) else None
        if stop:
            print(f"  {part}: stopped at {stop['used']} of {stop['maximum']} {stop['unit']}"
                  f" ({'settled' if stop['settled'] else 'at the maximum'})")
    print(f"{same} of {len(LABELS)} verdicts the same, {differ} different")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
