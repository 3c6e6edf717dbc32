"""attnlab.core.memory: freed tensor memory goes back to the system (glibc only)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from attnlab.core import memory

# A 16 MB tensor freed makes glibc raise its mmap threshold; 200 MB of 4 MB tensors with small
# (200 KB) tensors between them then come from the heap, and freeing them leaves the pages resident
# unless the threshold was fixed first. Prints the resident growth in MB.
FRAGMENT = textwrap.dedent("""
    import sys
    import torch
    from attnlab.core.memory import return_freed_memory

    def resident_mb():
        return int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) // 1024

    applied = return_freed_memory() if sys.argv[1] == "fix" else False
    big = torch.ones(4 << 20); del big
    before = resident_mb()
    pairs = [(torch.ones(1 << 20), torch.ones(50_000)) for _ in range(50)]
    small = [s for _b, s in pairs]
    del pairs
    print(applied, resident_mb() - before)
""")

needs_glibc = pytest.mark.skipif(memory._glibc() is None, reason="the C library is not glibc")


def _run(mode: str, **env: str) -> tuple[bool, int]:
    out = subprocess.run([sys.executable, "-c", FRAGMENT, mode], capture_output=True, text=True, check=True,
                         env={**os.environ, **env}).stdout.split()
    return out[0] == "True", int(out[1])


@needs_glibc
def test_freed_tensors_stay_resident_without_the_fix_and_go_back_with_it():
    applied, kept = _run("leave")
    assert not applied and kept >= 150  # the 200 MB stay with the process
    applied, kept = _run("fix")
    assert applied and kept <= 20       # returned to the system


@needs_glibc
def test_save_memory_0_leaves_the_allocator_alone():
    applied, kept = _run("fix", ATTNLAB_SAVE_MEMORY="0")
    assert not applied and kept >= 150


@pytest.mark.parametrize("env, limit, tight", [
    ("", None, False),            # no container limit: speed first
    ("", 2 << 30, True),          # Binder's 2 GB
    ("", 16 << 30, False),        # a roomy container
    ("1", None, True),            # asked for
    ("0", 2 << 30, False),        # refused, even on 2 GB
])
def test_memory_is_tight_in_a_small_container_or_when_asked(monkeypatch, env, limit, tight):
    monkeypatch.setenv("ATTNLAB_SAVE_MEMORY", env)
    monkeypatch.setattr(memory.door, "memory_room", lambda: None if limit is None else (limit, 1 << 30))
    assert memory.memory_is_tight() is tight


def test_elsewhere_it_does_nothing(monkeypatch):
    monkeypatch.setattr(memory, "_glibc", lambda: None)
    monkeypatch.setattr(memory, "_applied", False)
    assert memory.return_freed_memory() is False
    assert memory.trim() is False
