"""When the TUI repaints after events arrive: soon after the first of a burst, never more often than a rate.

A fixed timer (4 Hz) makes every event wait for the next tick, 125 ms on
average and up to 250 ms, and wakes the loop when nothing happens. Here an
event arriving while no flush is due asks for one ``gather`` seconds later
(the rest of a burst read from the same socket chunk comes with it), but no
sooner than ``min_interval`` after the previous flush: a steady stream still
costs at most ``1 / min_interval`` repaints a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class FlushPacer:
    #: seconds a flush waits after the event that asked for it, for the rest of its burst
    gather: float
    #: seconds between two flushes at least
    min_interval: float
    _last: float = field(default=-math.inf, init=False)
    _due: float | None = field(default=None, init=False)

    def arrived(self, now: float) -> float | None:
        """Something to show came at ``now`` (monotonic seconds): in how many seconds to flush, or None when a
        flush is due already (it will show this too)."""
        if self._due is not None:
            return None
        self._due = max(now + self.gather, self._last + self.min_interval)
        return self._due - now

    def flushed(self, now: float) -> None:
        """A flush ran at ``now``: what arrives from now on needs another."""
        self._last = now
        self._due = None
