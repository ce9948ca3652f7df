"""A job's event stream: stamps each event an engine emits with the job's id, the next sequence number
and the time, and hands the envelope on."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

from kubectl_rollout.jobs.events.base import Envelope, Event, stamp_time


class EventStream:
    """Thread-safe: engines emit from worker threads (one per eviction, watches)."""

    def __init__(
        self,
        job_id: str,
        sink: Callable[[Envelope], None],
        *,
        next_seq: int = 1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.job_id = job_id
        self._sink = sink
        self._next_seq = next_seq
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def emit(self, event: Event) -> None:
        # The lock covers the sink too: sequence numbers reach every consumer in order.
        with self._lock:
            envelope = Envelope(job=self.job_id, seq=self._next_seq, at=stamp_time(self._clock()), event=event)
            self._next_seq += 1
            self._sink(envelope)

    __call__ = emit


def new_job_id() -> str:
    """A job id: short enough to type (``jobs attach ID``), random enough never to repeat on one machine."""
    return uuid.uuid4().hex[:12]
