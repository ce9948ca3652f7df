"""A job the host runs: its events so far and who watches for more."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubectl_rollout.jobs.events.stream import EventStream
from kubectl_rollout.jobs.kinds import facts_for
from kubectl_rollout.jobs.spec import JobSpec
from kubectl_rollout.jobs.surge_requests import SurgeRequests

#: one event as clients get it: (seq, coalesce key, its encoded notification line)
Line = tuple[int, str | None, bytes]


class LiveJob:
    """A job of the host: its events so far (``lines[i]`` has seq ``i + 1``) and who waits for more.

    ``lines``, ``claims``, ``done`` and ``watchers`` change on the thread that owns the host's state only
    (``JobHost.post``): the job's own thread hands each event over, it never touches them.
    """

    def __init__(self, job_id: str, spec: JobSpec, *, resumed: bool, history: list[Line]) -> None:
        self.id = job_id
        self.spec = spec
        self.resumed = resumed
        self.cancel = threading.Event()
        #: set while paused (``run_job``'s ``paused``)
        self.paused = threading.Event()
        #: a campaign's surge requests (``jobs surge``), journaled before they are handed over here
        self.surge_requests = SurgeRequests()
        #: a campaign's nodes finished in this run (done, skipped, kept): a surge request for one is refused.
        #: Added to on the job's thread, read on the host's (a set's add and membership are atomic)
        self.finished_nodes: set[str] = set()
        #: the job's event stream, made before its thread starts so that the host may emit into it too
        self.stream: EventStream | None = None
        self.lines = history
        self.claims = set(facts_for(spec).claims(spec))
        self.done = False
        #: called when an event joins ``lines`` or the job ends (a transport's streams wake up here)
        self.watchers: set[Callable[[], None]] = set()

    def push(self, seq: int, key: str | None, line: bytes, claim: str | None) -> None:
        self.lines.append((seq, key, line))
        if claim is not None:
            self.claims.add(claim)
        self.wake()

    def finish(self) -> None:
        self.done = True
        self.wake()

    def wake(self) -> None:
        for watcher in list(self.watchers):
            watcher()
