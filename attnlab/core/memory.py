"""Give freed tensor memory back to the system, so a kernel's peak is what its work needs.

On Linux, PyTorch's CPU tensors come from the C library's ``malloc``. glibc
serves a block of 128 KiB or more with its own ``mmap`` (returned to the system
by ``free``), but each time such a block is freed it raises that threshold to
the block's size, up to 32 MiB. After the first few passes of a model, most
activations (a few MB each) therefore come from the heap, whose freed pages stay
with the process: the resident memory a lesson's kernel reports climbs with
every sweep, though the tensors alive at any moment need far less. On a
2 GB Binder that is the difference between a lesson that fits and one that is
killed.

:func:`return_freed_memory` fixes the threshold at :data:`MMAP_THRESHOLD`
(``mallopt(M_MMAP_THRESHOLD)``, which also stops the raising), so every block
of that size or more goes back to the system when freed; :func:`trim` asks
glibc to return the heap's free pages now (``malloc_trim``). Both do nothing
where the C library is not glibc (macOS, Windows, musl), and
``ATTNLAB_KEEP_MALLOC=1`` leaves the C library's settings alone.
``benchmarks/bench_memory_release.py`` measures what this saves and costs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from functools import lru_cache

#: blocks of at least this many bytes are mapped on their own and returned on free (1 MiB)
MMAP_THRESHOLD = 1 << 20
#: glibc's ``mallopt`` parameter number for the mmap threshold (``malloc.h``)
M_MMAP_THRESHOLD = -3
#: set to 1 to leave the C library's allocator as it is
KEEP_ENV = "ATTNLAB_KEEP_MALLOC"


@lru_cache(maxsize=1)
def _glibc() -> ctypes.CDLL | None:
    """The process's glibc, or None (another system, another C library, or it cannot be opened)."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it (musl does not)
        libc.mallopt, libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


_applied = False


def return_freed_memory(threshold: int = MMAP_THRESHOLD) -> bool:
    """Map every block of ``threshold`` bytes or more on its own, so freeing it returns it to the
    system (once per process; later calls do nothing). True when the setting took effect."""
    global _applied
    if _applied:
        return True
    if os.environ.get(KEEP_ENV, "") == "1":
        return False
    libc = _glibc()
    if libc is None:
        return False
    _applied = bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))
    return _applied


def trim() -> bool:
    """Return the heap's free pages to the system now (glibc only). True when some were returned."""
    if os.environ.get(KEEP_ENV, "") == "1":
        return False
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
