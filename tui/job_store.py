"""Every job the TUI knows, folded as its events arrive; screens read it at each flush.

Folding is cheap and happens per event; repainting is not, so the store only
remembers which jobs changed (``take_changed``) and the app hands them to the
screen a few times a second. The time each event arrived is kept until that
flush, so the latency from socket to screen can be measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.views.job import JobView, fold, new_view


class JobStore:
    def __init__(self, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.infos: dict[str, JobInfo] = {}
        self.views: dict[str, JobView] = {}
        #: the order of the agent's list: newest first
        self.order: list[str] = []
        self._changed: set[str] = set()
        self._arrivals: list[float] = []
        self._monotonic = monotonic

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

    def add(self, envelope: Envelope) -> None:
        before = self.views.get(envelope.job) or new_view(job=envelope.job)
        after = fold(before, envelope)
        if after is not before:
            self.views[envelope.job] = after
            self._changed.add(envelope.job)
            self._arrivals.append(self._monotonic())

    def update_job(self, info: JobInfo) -> None:
        """One job's entry as an answer (cancel, pause) gave it, before the next list."""
        if self.infos.get(info.id) != info:
            self.infos[info.id] = info
            self._changed.add(info.id)

    def view(self, job_id: str) -> JobView:
        return self.views.get(job_id) or new_view(job=job_id)

    def take_changed(self) -> tuple[set[str], list[float]]:
        """The jobs changed since the last call, and when each event among the changes arrived."""
        changed, arrivals = self._changed, self._arrivals
        self._changed, self._arrivals = set(), []
        return changed, arrivals
