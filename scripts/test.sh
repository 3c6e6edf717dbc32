#!/usr/bin/env bash
# The tests in one command: unit tests, then every lesson executed in smoke mode.
#   bash scripts/test.sh              everything
#   bash scripts/test.sh -m "not notebooks"   only the unit tests (any pytest arguments work)
#
# The tests run in parallel, one worker per core (at most 4: each worker holds a model and
# runs lesson kernels): ATTNLAB_TEST_WORKERS=1 runs them one after another. Each worker's
# torch gets its share of the cores, so workers do not fight over threads.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh course,lab,dev
if [ "${ATTNLAB_NO_VENV:-0}" != "1" ]; then . .venv/bin/activate; fi
cores=$(python -c "import os; print(len(os.sched_getaffinity(0)))")
workers=${ATTNLAB_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}
if [ "$workers" -le 1 ]; then
  exec python -m pytest "$@"
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( cores / workers > 1 ? cores / workers : 1 ))}
# loadgroup: tests that share a server (the browser test's JupyterLab) stay on one worker
exec python -m pytest -n "$workers" --dist loadgroup "$@"
