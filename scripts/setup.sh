#!/usr/bin/env bash
# Set up the course's Python environment in .venv (once; later runs reuse it).
#
#   bash scripts/setup.sh                 the course: attnlab with its lessons' packages and JupyterLab
#   bash scripts/setup.sh course,lab,dev  ... and the test tools (what scripts/test.sh asks for)
#
# - creates .venv with the Python found as $PYTHON (default python3), unless
#   ATTNLAB_NO_VENV=1 (Binder, conda, an environment you manage yourself);
# - installs torch 2.13.0 only when no torch is importable (an existing torch, e.g. a CUDA build,
#   is kept): on Linux with no NVIDIA GPU the CPU build (attnlab/tools/install_torch.py says which and why);
# - installs attnlab (editable) with the extras asked for.
# Nothing here needs a model hub: the offline models come from PyPI. PIP_INDEX_URL (a PyPI mirror)
# is honoured; ATTNLAB_TORCH_INDEX names a mirror of PyTorch's CPU index; ATTNLAB_MIRROR=cn sets both
# to mainland China's mirrors (scripts/mirror.sh).
# Before anything is created or downloaded, scripts/check_machine.py says in one sentence (exit code 3)
# why a machine cannot run the course: Python older than 3.10, no venv module, an Intel Mac, 32-bit or
# ARM Windows, under 4 GB of memory.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mirror.sh

extras="${1:-course,lab}"
case "$extras" in
  *[!a-z,]*|"") echo "attnlab: setup.sh takes extras such as course,lab,dev, not '$extras'" >&2; exit 2 ;;
esac

PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "attnlab: no $PYTHON here: install Python 3.11 (python.org, your system's packages or conda), then run this again." >&2
  exit 3
fi
stamp=.venv/.attnlab-installed-${extras//,/-}
if [ "${ATTNLAB_NO_VENV:-0}" = "1" ]; then stamp=${TMPDIR:-/tmp}/.attnlab-installed-$(id -u)-${extras//,/-}; fi
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then
  exit 0
fi
"$PYTHON" scripts/check_machine.py || exit $?
if [ "${ATTNLAB_NO_VENV:-0}" != "1" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "attnlab: creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
  fi
  # shellcheck disable=SC1091
  . .venv/bin/activate
  PYTHON=python
fi
"$PYTHON" attnlab/tools/install_torch.py
echo "attnlab: installing attnlab with the extras $extras"
"$PYTHON" -m pip install -q -e ".[$extras]"
touch "$stamp"
