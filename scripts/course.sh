#!/usr/bin/env bash
# The course in one command, on the bundled offline model unless ATTNLAB_MODEL says otherwise.
#
#   bash scripts/course.sh            set up, then open the course in JupyterLab
#   bash scripts/course.sh run        set up, then execute every lesson headless into build/notebooks/
#   bash scripts/course.sh figures    set up, then regenerate every figure in figures/
#
# ATTNLAB_SMOKE=1 makes `run` and `figures` quick (small sizes).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${ATTNLAB_NO_VENV:-0}" != "1" ]; then . .venv/bin/activate; fi

case "${1:-lab}" in
  lab)
    shift || true
    extra=()
    if [ "$(id -u)" = "0" ]; then
      # Docker images and classroom servers often run as root, which JupyterLab refuses by default.
      echo "attnlab: running as root, so JupyterLab is started with --allow-root" >&2
      extra+=(--allow-root)
    fi
    exec jupyter lab "${extra[@]}" "$@" notebooks/00_tour.ipynb ;;
  run)
    shift; exec python scripts/run_lessons.py "$@" ;;
  figures)
    shift
    if [ "${ATTNLAB_SMOKE:-0}" = "1" ]; then set -- --smoke "$@"; fi
    exec attnlab figures "$@" ;;
  *)
    echo "usage: bash scripts/course.sh [lab|run|figures]" >&2; exit 2 ;;
esac
