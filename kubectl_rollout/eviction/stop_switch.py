"""A switch that stops the removal of some pods apart from the job's cancel, and says why.

A campaign stops one node's drain to drain it again through a surge (``jobs surge``), the other nodes of the
wave going on. That is no failure: the pods left are handed over to the next drain of the node, and saying
"cancelled" and "unable to drain node" for them told the user the opposite of what happened.
"""

from __future__ import annotations

import threading


class StopSwitch(threading.Event):
    """Set by ``stop``; ``why`` is what the stopped pods' removal ended with; ``handed_over``: the pods left go
    to another drain of the node, so their removal did not fail."""

    def __init__(self) -> None:
        super().__init__()
        self.why = "cancelled"
        self.handed_over = False

    def stop(self, why: str, *, handed_over: bool = False) -> None:
        """Stop, saying why: the first reason given stands, but a stop for good (a cancel) overrides a hand-over,
        which then does not happen."""
        if not self.is_set() or (self.handed_over and not handed_over):
            self.why, self.handed_over = why, handed_over
        self.set()
