"""A running campaign's surge requests (``jobs surge``, the campaign screen's ``s``): the nodes a person asked to
drain through a surge, handed from the agent's thread to the campaign's.

The agent journals each request as a ``SurgeRequested`` event before it hands it over here, so a campaign
resumed after a crash gets the nodes back from its journal (``CampaignJob.surge_nodes``), not from this object.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

#: called with the nodes of each request, on the thread that asks
Listener = Callable[[tuple[str, ...]], None]


class SurgeRequests:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked: list[str] = []
        self._listener: Listener | None = None

    def ask(self, nodes: Iterable[str]) -> None:
        """Ask for these nodes; the listener (the campaign engine) hears of it at once."""
        asked = tuple(nodes)
        with self._lock:
            self._asked += [n for n in asked if n not in self._asked]
            listener = self._listener
        if listener is not None:
            listener(asked)

    def listen(self, listener: Listener) -> tuple[str, ...]:
        """From now on, tell ``listener`` of every request; the nodes asked for before it listened."""
        with self._lock:
            self._listener = listener
            return tuple(self._asked)
