"""The agent's memory and the C allocator: fewer arenas, and the pages a finished job freed given back.

A drain of 5000 pods holds tens of MiB of the kubernetes client's pod models
while it runs, allocated by up to 256 eviction threads per node. glibc's
malloc gives threads arenas of their own (up to 8 per core), and keeps the
pages Python frees in them, so without this the agent's RSS would stay near
its peak for the rest of its life, fragmented over many arenas. Two arenas
(``mallopt(M_ARENA_MAX)``, set once at start, before any thread) are plenty
for threads that mostly wait on the network; ``malloc_trim(0)`` when the last
running job ends returns the free pages of every arena (since glibc 2.8 also
free chunks inside a heap, not only at its top), so it never slows a job.
Where the C library has neither (macOS, musl) only the collection runs.
"""

from __future__ import annotations

import ctypes
import functools
import gc
from typing import Any

#: glibc's mallopt parameter for the largest number of arenas (malloc.h)
M_ARENA_MAX = -8
#: arenas for the agent's threads (glibc's default is 8 per core)
ARENAS = 2


def limit_arenas() -> None:
    """At the agent's start, before its threads: at most ``ARENAS`` malloc arenas."""
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(M_ARENA_MAX, ARENAS)


def release_freed_memory() -> None:
    """Collect cycles, then hand the allocator's free pages back to the system."""
    gc.collect()
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


@functools.cache
def _libc_function(name: str) -> Any:
    try:
        return getattr(ctypes.CDLL(None), name)  # the C library this process runs on
    except (OSError, AttributeError):
        return None
