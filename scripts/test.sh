#!/usr/bin/env bash
# The tests in one command: unit tests, then every lesson executed in smoke mode.
#   bash scripts/test.sh              everything
#   bash scripts/test.sh -m "not notebooks"   only the unit tests (any pytest arguments work)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${ATTNLAB_NO_VENV:-0}" != "1" ]; then . .venv/bin/activate; fi
exec python -m pytest "$@"
