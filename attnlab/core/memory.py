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
of that size or more goes back to the system when freed. It costs time: each
such block is mapped afresh, its pages zeroed (a sweep of bert-base's shape:
about 100-150 MB lower peak, about 1.5x the time;
``benchmarks/bench_memory_release.py`` measures both). So
:func:`save_memory_if_tight` applies it only where memory is the limit: a
container of at most :data:`TIGHT_BYTES` (Binder's 2 GB), or
``ATTNLAB_SAVE_MEMORY=1``; ``ATTNLAB_SAVE_MEMORY=0`` never. :func:`trim` asks
glibc to return the heap's free pages now (``malloc_trim``; cheap, done after
each sweep, so a kernel left open holds less). Both do nothing where the C
library is not glibc (macOS, Windows, musl).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from functools import lru_cache

from attnlab.core import door

#: blocks of at least this many bytes are mapped on their own and returned on free (1 MiB)
MMAP_THRESHOLD = 1 << 20
#: glibc's ``mallopt`` parameter number for the mmap threshold (``malloc.h``)
M_MMAP_THRESHOLD = -3
#: "1": return freed memory at once (:func:`return_freed_memory`) anywhere; "0": never, and no trims
SAVE_ENV = "ATTNLAB_SAVE_MEMORY"
#: a container with at most this much memory returns freed memory at once (Binder gives 2 GB)
TIGHT_BYTES = 4 << 30


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
    if os.environ.get(SAVE_ENV, "") == "0":
        return False
    libc = _glibc()
    if libc is None:
        return False
    _applied = bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))
    return _applied


def memory_is_tight() -> bool:
    """True under ``ATTNLAB_SAVE_MEMORY=1``, or in a container of at most :data:`TIGHT_BYTES`
    (``ATTNLAB_SAVE_MEMORY=0``: False)."""
    choice = os.environ.get(SAVE_ENV, "")
    if choice in ("0", "1"):
        return choice == "1"
    room = door.memory_room()  # (limit, used) of the container, or None
    return room is not None and room[0] <= TIGHT_BYTES


def save_memory_if_tight() -> bool:
    """:func:`return_freed_memory` where :func:`memory_is_tight`; True when it took effect."""
    return return_freed_memory() if memory_is_tight() else False


def trim() -> bool:
    """Return the heap's free pages to the system now (glibc only). True when some were returned."""
    if os.environ.get(SAVE_ENV, "") == "0":
        return False
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
