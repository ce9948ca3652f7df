"""The agent's memory and the C allocator: a finished job's pages given back to the system.

A drain of 5000 pods holds tens of MiB of the kubernetes client's pod models
while it runs, allocated by up to 256 eviction threads per node. When it ends,
Python frees them, but with its own small-object allocator the few objects
that outlive a job pin the 1 MiB arenas the pods filled, and the agent stayed
~80 MiB above its idle size for the rest of its life. So the agent runs on
malloc alone (``PYTHONMALLOC=malloc``, set by the client that spawns it:
``agent/client/starting.py``; ``agent start --foreground`` runs in the user's
interpreter as it was started), with at most two malloc arenas
(``mallopt(M_ARENA_MAX)``, at start, before any thread: plenty for threads
that mostly wait on the network, and fewer places for freed pages to hide),
and its idle watcher calls ``malloc_trim(0)`` once no job runs and no client
is attached, which returns the free pages of every arena (since glibc 2.8 also
free chunks inside a heap, not only at its top). Where the C library has
neither function (macOS, musl) only the collection runs.
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
