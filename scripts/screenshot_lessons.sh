#!/usr/bin/env bash
# Reading check: execute every lesson, export it to HTML, and render each page to PNG
# in headless Chromium, so a person can look at what a student sees.
#
#   bash scripts/screenshot_lessons.sh            # all lessons (ATTNLAB_SMOKE=1 for a quick pass)
#   bash scripts/screenshot_lessons.sh 05 06      # only some
#
# Needs Debian's chromium and poppler-utils (apt-get install chromium poppler-utils
# fonts-wqy-microhei). Output: build/screens/<lesson>-<page>.png
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${ATTNLAB_NO_VENV:-0}" != "1" ]; then bash scripts/setup.sh; . .venv/bin/activate; fi
python scripts/run_lessons.py "$@"
mkdir -p build/html build/screens
profile=$(mktemp -d)
for nb in build/notebooks/*.ipynb; do
  name=$(basename "$nb" .ipynb)
  if [ $# -gt 0 ]; then
    keep=0; for p in "$@"; do case "$name" in "$p"*) keep=1;; esac; done
    [ $keep = 1 ] || continue
  fi
  jupyter nbconvert --to html --log-level=WARN --output-dir build/html "$nb"
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run \
    --disable-component-update --disable-sync --user-data-dir="$profile" \
    --no-pdf-header-footer --print-to-pdf="build/html/$name.pdf" "file://$PWD/build/html/$name.html" 2>/dev/null
  rm -f build/screens/"$name"-*.png
  pdftoppm -png -r 70 "build/html/$name.pdf" "build/screens/$name"
  echo "$name: $(ls build/screens/"$name"-*.png | wc -l) page(s)"
done
rm -rf "$profile"
