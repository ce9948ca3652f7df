"""One eviction request in flight per PodDisruptionBudget; budgets side by side.

The API server accepts an eviction by writing the budget's status (one
disruption fewer, the pod in ``disruptedPods``) under an optimistic-concurrency
check. Two evictions of one budget at once conflict, and the server retries the
loser after a flat 500 ms, up to 20 times (``EvictionsRetry`` in
pkg/registry/core/pod/storage/eviction.go). So N requests sent at once on one
budget that has room for all of them (a surge under ``minAvailable``, a
``maxUnavailable`` of 20 %) take up to (N - 1) x 500 ms inside the server;
sent one after another they take N round trips. The server serialises them
either way, so queueing them here loses nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

#: a budget's (namespace, name)
Budget = tuple[str, str]


class BudgetLanes:
    def __init__(self) -> None:
        self._lanes: dict[Budget, threading.Lock] = {}
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def lane(self, budget: Budget | None) -> Iterator[None]:
        """Hold the budget's lane while its request is sent; None (no budget, or several) holds nothing."""
        if budget is None:
            yield
            return
        with self._guard:
            lock = self._lanes.setdefault(budget, threading.Lock())
        with lock:
            yield
