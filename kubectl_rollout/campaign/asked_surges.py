"""The nodes a person asked a running campaign to drain through a surge, and what each request does.

A campaign's node that a PDB holds waits (``--on-blocked wait``) or is dealt with at ``--timeout``. A person
who sees that the workload can surge asks for it (``jobs surge``, the screen's ``s``); the campaign must then
drain that node through a surge without touching the others: a node draining now has its drain stopped (its
own switch, not the wave's) and is drained again with ``--surge`` (what it evicted stays evicted); a node not
draining yet is drained with ``--surge`` from its start; a node draining through a surge already is left as it
is. Only threads and sets here, no cluster: the engine does the draining.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from kubectl_rollout.eviction.stop_switch import StopSwitch

#: what a node's drain stopped for a surge request says of itself
STOPPED_FOR_SURGE = "stopped to drain the node again through a surge (jobs surge)"


class Phase(enum.Enum):
    #: not draining in this run (a later wave, its wave's hooks, or its drain over)
    IDLE = "idle"
    #: its drain without a surge runs
    DRAINING = "draining"
    #: it drains through a surge
    SURGING = "surging"


class Move(enum.Enum):
    #: drained with --surge when its drain starts (now, or again after a window's end)
    AT_START = "at-start"
    #: its drain is stopped, then it is drained again with --surge
    STOP_AND_SURGE = "stop-and-surge"
    #: it surges already
    NOTHING = "nothing"


def move_for(phase: Phase) -> Move:
    """What a surge request does to a node in ``phase``."""
    if phase is Phase.DRAINING:
        return Move.STOP_AND_SURGE
    if phase is Phase.SURGING:
        return Move.NOTHING
    return Move.AT_START


class AskedSurges:
    """The nodes asked for, and the switch of each node's drain without a surge; safe across threads (the agent
    asks on its thread, the campaign drains on one per node)."""

    def __init__(self, asked: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._asked: set[str] = set(asked)
        self._draining: dict[str, StopSwitch] = {}
        self._surging: set[str] = set()
        self._all_stopped = False

    def phase(self, node: str) -> Phase:
        with self._lock:
            return self._phase(node)

    def _phase(self, node: str) -> Phase:
        if node in self._surging:
            return Phase.SURGING
        if node in self._draining:
            return Phase.DRAINING
        return Phase.IDLE

    def asked(self, node: str) -> bool:
        with self._lock:
            return node in self._asked

    def ask(self, nodes: Iterable[str]) -> dict[str, Move]:
        """Take a request up; what it does to each node."""
        moves: dict[str, Move] = {}
        with self._lock:
            for node in nodes:
                moves[node] = move_for(self._phase(node))
                self._asked.add(node)
                if moves[node] is Move.STOP_AND_SURGE:
                    self._draining[node].stop(STOPPED_FOR_SURGE, handed_over=True)
        return moves

    def start_drain(self, node: str) -> StopSwitch | None:
        """A node's drain starts: None when it is to surge (asked for), else the switch that stops its drain
        without a surge, set already when every drain is being stopped (a cancel, a window's end)."""
        with self._lock:
            if node in self._asked:
                return None
            stop = self._draining[node] = StopSwitch()
            if self._all_stopped:
                stop.stop("cancelled")
            return stop

    def end_drain(self, node: str) -> bool:
        """A node's drain without a surge ended: whether it was asked to surge meanwhile and nothing stops every
        drain (then, unless it drained after all, it is drained again through a surge)."""
        with self._lock:
            self._draining.pop(node, None)
            return node in self._asked and not self._all_stopped

    @contextmanager
    def surging(self, node: str) -> Iterator[None]:
        """While ``node`` drains through a surge: a request for it changes nothing."""
        with self._lock:
            self._surging.add(node)
        try:
            yield
        finally:
            with self._lock:
                self._surging.discard(node)

    def stop_all(self) -> None:
        """Every drain stops (the job's cancel, a window's end): those of nodes draining now and starting later."""
        with self._lock:
            self._all_stopped = True
            for stop in self._draining.values():
                stop.stop("cancelled")

    def go_on(self) -> None:
        """Drains may start again (the next wave, the next window)."""
        with self._lock:
            self._all_stopped = False
