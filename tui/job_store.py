"""Every job the TUI knows; events are gathered as they arrive and folded at each flush, in one batch per job.

A 5000-pod drain sends some 15000 events: folded one by one, each would copy
the pod map; gathered, a flush folds each job's new events at once
(``fold_many``) and the app repaints once. Each event's emission time (its
envelope's ``at``) and the time the TUI's reader handed it over are kept until
that flush, so the latency to the screen showing it can be measured from both:
from the reader (the TUI's own share), and from the job emitting it (time in
the agent, the socket, and lines waiting while the TUI's loop was busy count
too).
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
        #: when the events gathered since the last flush were emitted and received
        self._arrivals: list[Arrival] = []

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
        self._arrivals.append(Arrival(envelope.at, received))

    def _fold_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for job_id, envelopes in pending.items():
            before = self.views.get(job_id) or new_view(job=job_id)
            after = fold_many(before, envelopes)
            if after is not before:
                self.views[job_id] = after
                self._changed.add(job_id)

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

    def take_changed(self) -> tuple[set[str], list[Arrival]]:
        """Fold what arrived; the jobs changed since the last call, and when each of their new events was
        emitted and received."""
        self._fold_pending()
        changed, arrivals = self._changed, self._arrivals
        self._changed, self._arrivals = set(), []
        return changed, arrivals
