"""Every job the TUI knows; events are gathered as they arrive and folded at each flush, in one batch per job.

A 5000-pod drain sends some 15000 events: folded one by one, each would copy
the pod map; gathered, a flush folds each job's new events at once
(``fold_many``) and the app repaints once. Each event's emission time (its
envelope's ``at``) and the time the TUI's reader handed it over are kept until
that flush, so the latency to the screen showing it can be measured from both:
from the reader (the TUI's own share), and from the job emitting it (time in
the agent, the socket, and lines waiting while the TUI's loop was busy count
too).

A job's backlog (the events it has when the TUI attaches; 15000 for a
finished 5000-pod drain) is held until it is all in: folded at once and
painted once, rather than painted again at every flush while it arrives.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.views.job import JobView, fold_many, new_view


class Arrival(NamedTuple):
    """When an event was emitted (its envelope's ``at``) and received by the TUI's reader (epoch seconds)."""

    emitted: float
    received: float


class JobStore:
    def __init__(self) -> None:
        self.infos: dict[str, JobInfo] = {}
        self.views: dict[str, JobView] = {}
        #: the order of the agent's list: newest first
        self.order: list[str] = []
        self._changed: set[str] = set()
        self._pending: dict[str, list[Envelope]] = {}
        #: when each pending event was received by the TUI's reader (epoch seconds), in the same order
        self._received: dict[str, list[float]] = {}
        #: jobs whose backlog is coming: the last sequence number of the backlog, and until when to wait for it
        self._holds: dict[str, tuple[int, float]] = {}

    def set_jobs(self, infos: Iterable[JobInfo]) -> None:
        infos = list(infos)
        order = [info.id for info in infos]
        if order != self.order:
            self._changed.update(set(order) ^ set(self.order))
            self.order = order
        for info in infos:
            if self.infos.get(info.id) != info:
                self.infos[info.id] = info
                self._changed.add(info.id)
            self.views.setdefault(info.id, new_view(job=info.id, kind=info.kind))

    def add(self, envelope: Envelope, *, received: float) -> None:
        """Keep an event, which the reader handed over at ``received`` (epoch seconds), until the next
        ``take_changed`` folds it."""
        self._pending.setdefault(envelope.job, []).append(envelope)
        self._received.setdefault(envelope.job, []).append(received)

    def hold(self, job_id: str, *, until_seq: int, deadline: float) -> None:
        """Fold none of the job's events until event ``until_seq`` is in (the end of the backlog it is
        attached from) or ``deadline`` (monotonic seconds) passed, whichever comes first."""
        self._holds[job_id] = (until_seq, deadline)

    def holding(self, job_id: str, *, now: float) -> bool:
        """Whether the job's events wait for the rest of its backlog."""
        hold = self._holds.get(job_id)
        if hold is None:
            return False
        until_seq, deadline = hold
        if self.last_seq(job_id) >= until_seq or now >= deadline:
            del self._holds[job_id]
            return False
        return True

    def _fold_pending(self, now: float) -> list[Arrival]:
        arrivals: list[Arrival] = []
        for job_id in list(self._pending):
            if self.holding(job_id, now=now):
                continue
            envelopes = self._pending.pop(job_id)
            received = self._received.pop(job_id)
            arrivals += map(Arrival, [e.at for e in envelopes], received)
            before = self.views.get(job_id) or new_view(job=job_id)
            after = fold_many(before, envelopes)
            if after is not before:
                self.views[job_id] = after
                self._changed.add(job_id)
        return arrivals

    def update_job(self, info: JobInfo) -> None:
        """One job's entry as an answer (cancel, pause) gave it, before the next list."""
        if self.infos.get(info.id) != info:
            self.infos[info.id] = info
            self._changed.add(info.id)

    def view(self, job_id: str) -> JobView:
        """The job as of the last flush."""
        return self.views.get(job_id) or new_view(job=job_id)

    def last_seq(self, job_id: str) -> int:
        """The last event received for the job, folded or not yet."""
        pending = self._pending.get(job_id)
        return pending[-1].seq if pending else self.view(job_id).last_seq

    def take_changed(self, *, now: float) -> tuple[set[str], list[Arrival]]:
        """Fold what arrived (but a backlog still coming, see ``hold``; ``now``: monotonic seconds); the jobs
        changed since the last call, and when each of their newly folded events was emitted and received."""
        arrivals = self._fold_pending(now)
        changed, self._changed = self._changed, set()
        return changed, arrivals
