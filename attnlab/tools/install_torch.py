"""Install torch for the course, the right build for this machine (standard library only: it runs
before anything else is installed, as a file, by scripts/setup.sh; the offline bundle imports it).

    python attnlab/tools/install_torch.py            # install torch 2.13.0 unless a torch is importable
    python attnlab/tools/install_torch.py --dry-run  # say what would be installed, install nothing

- A torch that imports already (a CUDA build, Colab's) is kept.
- Linux with no NVIDIA GPU: the CPU build (``torch==2.13.0+cpu``, about 200 MB instead of the
  several-GB CUDA build the default index gives on Linux) from a folder pip already takes wheels
  from (``PIP_FIND_LINKS``, pip's configuration), else from PyTorch's CPU index, or the mirror of it
  that ``ATTNLAB_TORCH_INDEX`` names (``ATTNLAB_MIRROR=cn``: a mainland China mirror, see
  scripts/mirror.sh). The index is asked first, within ``PROBE_SECONDS``; if it cannot be reached,
  nothing is installed and one sentence says what to set (exit code 3): a CUDA build never comes by
  surprise. ``ATTNLAB_TORCH_INDEX=`` (empty) takes the default index's build on purpose.
- Linux with an NVIDIA GPU, macOS, Windows: the default index (CUDA, or the only build there is).
- ``PIP_INDEX_URL`` (a PyPI mirror) is honoured for everything else.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform as host
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

TORCH = "torch==2.13.0"
#: the CPU build's own version: pinned, so that no index can hand over a CUDA build instead
TORCH_CPU = TORCH + "+cpu"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INDEX_ENV = "ATTNLAB_TORCH_INDEX"
#: seconds the CPU index may take to answer before the default index is used instead
PROBE_SECONDS = 5.0
#: exit code when the CPU build cannot be had (as scripts/check_machine.py's for an unusable machine)
NO_CPU_BUILD = 3


class NoCpuIndex(RuntimeError):
    """The CPU index (or its mirror) cannot be reached; the message says what to set."""


def has_nvidia_gpu() -> bool:
    """True when an NVIDIA driver is loaded (Linux) or nvidia-smi is on the PATH."""
    if Path("/proc/driver/nvidia/version").exists():
        return True
    return any((Path(p) / "nvidia-smi").exists() for p in os.environ.get("PATH", "").split(os.pathsep) if p)


def reachable(index: str, seconds: float = PROBE_SECONDS) -> str:
    """'' when ``index`` answers within ``seconds``, else why not (one short phrase)."""
    url = index.rstrip("/") + "/torch/"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=seconds):
            return ""
    except urllib.error.HTTPError as exc:
        return "" if exc.code < 500 else f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return str(reason) or type(exc).__name__


def find_links() -> list[Path]:
    """The local folders pip takes wheels from here (``PIP_FIND_LINKS`` and pip's configuration)."""
    found = os.environ.get("PIP_FIND_LINKS", "").split()
    try:
        listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        listed = ""
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        if key.endswith("find-links"):
            found += value.strip().strip("'\"").split()
    return [Path(f.removeprefix("file://")) for f in found if not f.startswith(("http://", "https://"))]


def local_cpu_wheel() -> Path | None:
    """The CPU build's wheel for this Python, where pip already finds it in a local folder."""
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in find_links():
        for wheel in sorted(folder.glob(f"{TORCH_CPU.replace('==', '-')}-{python}-*{host.machine()}.whl")) if folder.is_dir() else []:
            return wheel
    return None


def plan(platform: str = sys.platform) -> tuple[list[str], str]:
    """The pip arguments that install torch here, and a line saying why (empty: nothing to say).

    Raises:
        NoCpuIndex: Linux with no NVIDIA GPU, and the CPU index cannot be reached.
    """
    chosen = os.environ.get(INDEX_ENV)
    if os.environ.get("PIP_NO_INDEX", "").lower() in ("1", "true", "yes"):
        return [TORCH], f"attnlab: installing {TORCH} from the local wheels ({os.environ.get('PIP_FIND_LINKS', '')})"
    if platform.startswith("linux") and not has_nvidia_gpu() and chosen != "":
        wheel = local_cpu_wheel()
        if wheel is not None:
            return [TORCH_CPU], f"attnlab: installing {TORCH}, the CPU build, from the local wheel {wheel}"
        index = chosen or CPU_INDEX
        start = time.monotonic()
        why = reachable(index)
        if not why:
            extra = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
            return ([TORCH_CPU, "--index-url", index, "--extra-index-url", extra],
                    f"attnlab: installing {TORCH}, the CPU build, from {index}")
        raise NoCpuIndex(f"attnlab: the PyTorch CPU index {index} cannot be reached ({why}, after "
                         f"{time.monotonic() - start:.1f} s), so nothing was installed: set {INDEX_ENV} to a "
                         "reachable mirror of it (in mainland China, --mirror cn or ATTNLAB_MIRROR=cn names one), "
                         f"or {INDEX_ENV}= (empty) to take the default index's torch, which on Linux is the CUDA "
                         "build, several GB.")
    if platform.startswith("linux") and has_nvidia_gpu():
        return [TORCH], f"attnlab: an NVIDIA GPU is here, so {TORCH} comes from the default index (CUDA build)"
    return [TORCH], f"attnlab: installing {TORCH} from the default index"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="say what would be installed, install nothing")
    args = ap.parse_args(argv)
    if importlib.util.find_spec("torch") is not None and not args.dry_run:
        return 0
    try:
        pip_args, line = plan()
    except NoCpuIndex as exc:
        print(exc, file=sys.stderr, flush=True)
        return NO_CPU_BUILD
    print(line, flush=True)
    command = [sys.executable, "-m", "pip", "install", "-q", *pip_args]
    if args.dry_run:
        print(" ".join(command))
        return 0
    return subprocess.call(command)


if __name__ == "__main__":
    raise SystemExit(main())
