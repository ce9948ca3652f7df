"""Printing a rollout job's events for people.

stdout carries the rollout's state in ``kubectl rollout status``' words (one
line each time it changes, or each time the driver acted) and the command's
own result lines (``workload/web configured``); stderr carries what the driver
did, indented (``  scale web-5d8f6c7b9 to 3``), what held it back, and how the
job ended when it did not succeed. The driver's actions of one pass share a
line, printed with the state they led to.
"""

from __future__ import annotations

import threading
from typing import TextIO

from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Event


def describe_action(event: ev.ReplicaSetAction) -> str:
    """What the driver did to one ReplicaSet, as one phrase."""
    if isinstance(event, ev.ReplicaSetCreated):
        return f"create the new ReplicaSet at {event.replicas} (revision {event.revision})"
    if isinstance(event, ev.ReplicaSetScaled):
        return f"scale {event.name} to {event.to_replicas}"
    if isinstance(event, ev.RevisionAssigned):
        return f"{event.name} becomes revision {event.revision}"
    return f"delete {event.name} (beyond revisionHistoryLimit)"


def following_line(event: ev.FollowingDriver) -> str:
    if not event.holder:
        return f"lease {event.lease} was just taken by another process; following its progress"
    return (
        f'managed workload "{event.workload}" is being driven by {event.holder} '
        f"(lease {event.lease} valid for {event.seconds_left:.0f}s more); following its progress"
    )


class RolloutPrinter:
    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self._lock = threading.Lock()
        #: the driver's actions of the pass under way, printed with the state they lead to
        self._actions: list[str] = []
        #: the last state line of the driver in charge (a driver that takes over starts afresh)
        self._message = ""
        self._following = False
        #: the last state line printed while following another driver
        self._followed = ""

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle(event)

    def _line(self, stream: TextIO, text: str) -> None:
        stream.write(text + "\n")
        stream.flush()

    def _flush_actions(self) -> None:
        if self._actions:
            self._line(self.err, "  " + "; ".join(self._actions))
            self._actions.clear()

    def _aside(self, text: str) -> None:
        """A line about what holds the driver, then where it stands (unchanged)."""
        self._line(self.err, f"  {text}")
        if self._message:
            self._line(self.out, self._message)

    def _handle(self, event: Event) -> None:
        if isinstance(event, ev.ReplicaSetCreated | ev.ReplicaSetScaled | ev.RevisionAssigned | ev.ReplicaSetDeleted):
            self._actions.append(describe_action(event))
        elif isinstance(event, ev.RolloutProgressed):
            self._flush_actions()
            if self._following:
                self._followed = event.message
            else:
                self._message = event.message
            if event.message:
                self._line(self.out, event.message)
        elif isinstance(event, ev.ScaleDownHeldByPdb):
            self._aside(f"scale-down held back by PodDisruptionBudget {', '.join(str(p) for p in event.pdbs)}")
        elif isinstance(event, ev.RollingBack):
            self._aside(f"rolling back to revision {event.to_revision} ({event.replica_set})")
        elif isinstance(event, ev.FollowingDriver):
            if not self._followed:
                self._line(self.err, following_line(event))
            self._following = True
        elif isinstance(event, ev.TookOver):
            self._following = False
            self._message = ""
        elif isinstance(event, ev.SpecChanged):
            self._spec_changed(event)
        elif isinstance(event, ev.RolloutFinished):
            self._flush_actions()
            self._finished(event)

    def _spec_changed(self, event: ev.SpecChanged) -> None:
        if event.change is ev.SpecChange.APPLY:
            self._line(self.out, f"workload/{event.workload} {'created' if event.created else 'configured'}")
        elif event.change is ev.SpecChange.UNDO:
            self._line(self.err, f"workload/{event.workload} rolling back to revision {event.to_revision}")
        elif event.change is ev.SpecChange.PAUSE:
            self._line(self.out, f"workload/{event.workload} paused")
        elif event.change is ev.SpecChange.RESUME:
            self._line(self.out, f"workload/{event.workload} resumed")

    def _finished(self, event: ev.RolloutFinished) -> None:
        if event.outcome in (ev.RolloutOutcome.ERROR, ev.RolloutOutcome.RECORDED):
            return  # an error is the command's to print (once, kubectl-style); a recorded change said so already
        if event.outcome is ev.RolloutOutcome.PAUSED:
            self._line(self.err, event.message)
        elif not event.succeeded:
            self._line(self.err, f"error: {event.message}")
