"""Can this machine run the course? One sentence, and exit code 3, for each machine that cannot,
said before anything is downloaded (scripts/setup.sh runs it with the Python it is about to use).

    python3 scripts/check_machine.py      # prints nothing and exits 0 on a machine that can

It uses the standard library only and the syntax of old Pythons (it must speak on a Python too old
for the course). The machines it refuses:

* Python older than 3.10 (macOS's own ``python3``, old Linux releases);
* a Python without ``venv``/``ensurepip`` (Debian and Ubuntu without ``python3-venv``);
* an Intel Mac with no torch installed (PyTorch publishes no current wheel for macOS on x86_64);
* 32-bit Python, or Windows on ARM (no torch wheel on PyPI for either);
* less memory than :data:`MIN_MEMORY_BYTES` (a lesson's kernel peaks at the highest peak measured,
  ``door.lesson_needs_mb`` in ``attnlab/core/numbers.json``; JupyterLab and the system need the rest);
  ``ATTNLAB_LOW_MEMORY_OK=1`` goes on anyway.

``ATTNLAB_NO_VENV=1`` (conda, Binder, an environment of one's own) skips the ``venv`` check.
"""

import importlib.util
import json
import os
import platform
import struct
import sys

#: exit code of a machine the course cannot use (2 is a usage error)
UNUSABLE = 3
MIN_PYTHON = (3, 10)
#: the least memory the course runs in: a machine sold with 4 GB reports a little less as its total (the
#: kernel keeps some)
MIN_MEMORY_BYTES = int(3.5 * 1024 ** 3)
#: the course's generated numbers (the highest kernel peak measured is ``door.lesson_needs_mb``)
NUMBERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "attnlab", "core", "numbers.json")
OTHER_DOORS = "Colab or Binder (docs/install.md) run the course in a browser instead"


def memory_bytes():
    """The machine's physical memory in bytes, or None where it cannot be read."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        pass
    if sys.platform == "win32":
        import ctypes

        class Status(ctypes.Structure):
            _fields_ = [("length", ctypes.c_ulong), ("load", ctypes.c_ulong), ("total", ctypes.c_ulonglong),
                        ("avail", ctypes.c_ulonglong), ("rest", ctypes.c_ulonglong * 5)]

        status = Status()
        status.length = ctypes.sizeof(Status)
        if ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
            return int(status.total)
    return None


def has_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def python_problem():
    if tuple(sys.version_info[:2]) >= MIN_PYTHON:
        return ""
    found = "%d.%d" % tuple(sys.version_info[:2])
    if sys.platform == "darwin":
        return ("attnlab: this python3 is Python %s and the course needs 3.10 or newer; macOS's own python3 is "
                "too old: install Python 3.11 from python.org or with `brew install python@3.11`, then run "
                "`PYTHON=python3.11 bash scripts/course.sh`." % found)
    return ("attnlab: this python3 is Python %s and the course needs 3.10 or newer: install Python 3.11 (your "
            "system's packages, python.org or conda) and run `PYTHON=python3.11 bash scripts/course.sh`." % found)


def venv_problem():
    if os.environ.get("ATTNLAB_NO_VENV") == "1" or (has_module("venv") and has_module("ensurepip")):
        return ""
    package = "python%d.%d-venv" % tuple(sys.version_info[:2])
    return ("attnlab: this Python cannot create virtual environments (its venv module or ensurepip is "
            "missing); on Debian or Ubuntu install it with `sudo apt install %s` (or python3-venv), "
            "then run the command again." % package)


def platform_problem():
    machine = platform.machine().lower()
    if struct.calcsize("P") == 4:
        return ("attnlab: this is a 32-bit Python, and torch exists for 64-bit Pythons only: install the "
                "64-bit Python 3.11 (python.org's \"Windows installer (64-bit)\") and run it again; " + OTHER_DOORS + ".")
    if sys.platform == "win32" and machine in ("arm64", "aarch64"):
        return ("attnlab: this is Windows on ARM, for which PyPI has no torch wheel: use WSL2 (Ubuntu on ARM "
                "has one, docs/install.md) or " + OTHER_DOORS + ".")
    if sys.platform == "darwin" and machine == "x86_64" and not has_module("torch"):
        return ("attnlab: this is an Intel Mac, and PyTorch publishes no current torch wheel for Intel Macs "
                "(the last was 2.2): " + OTHER_DOORS + ", or install a torch of your own and run with "
                "ATTNLAB_NO_VENV=1.")
    return ""


def lesson_peak_mb():
    """The highest kernel peak of a lesson measured on the offline default, in MB, from the course's numbers
    (None where the file is missing or unreadable)."""
    try:
        with open(NUMBERS, encoding="utf-8") as f:
            return int(json.load(f)["door"]["lesson_needs_mb"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def memory_problem():
    total = memory_bytes()
    if total is None or total >= MIN_MEMORY_BYTES or os.environ.get("ATTNLAB_LOW_MEMORY_OK") == "1":
        return ""
    peak = lesson_peak_mb()
    why = " (a lesson's kernel alone peaks at {:,} MB)".format(peak) if peak is not None else ""
    return ("attnlab: this machine has %.1f GiB of memory and the course needs %.1f GiB%s: %s; "
            "ATTNLAB_LOW_MEMORY_OK=1 goes on anyway." % (total / 1024 ** 3, MIN_MEMORY_BYTES / 1024 ** 3, why,
                                                         OTHER_DOORS))


def problems():
    """Every reason this machine cannot run the course (empty: it can)."""
    return [p for p in (python_problem(), venv_problem(), platform_problem(), memory_problem()) if p]


def main():
    found = problems()
    for line in found:
        print(line, file=sys.stderr)
    return UNUSABLE if found else 0


if __name__ == "__main__":
    sys.exit(main())
