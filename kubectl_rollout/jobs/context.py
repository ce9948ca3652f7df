"""What every running job is handed besides its spec: where its events go and the switches that steer it.

One object instead of four parameters threaded through the job loop, the
kinds' bodies and the engines under them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.jobs.surge_requests import SurgeRequests


@dataclass(frozen=True, kw_only=True)
class JobContext:
    #: where the job's events go
    emit: Emit
    #: set to stop the job cooperatively: engines look at it between steps, never in the middle of a write
    cancel: threading.Event = field(default_factory=threading.Event)
    #: the job's pause switch (``jobs pause``): while it is set, a drain or a restart starts no new eviction
    #: and a rollout job pauses the workload it drives; None: the job cannot be paused from outside
    paused: threading.Event | None = None
    #: the identity the job's Leases are held under. A runner that resumes its own jobs after a crash (the
    #: agent) passes one that stays the same across its restarts, so that a resumed job takes back the Lease it
    #: held at once instead of waiting for it to lapse. None: one of this process's own.
    lease_holder: str | None = None
    #: the nodes a person asks a running campaign to drain through a surge (``jobs surge``); None: this job
    #: takes no such request (it runs in a terminal, or it is no campaign)
    surge_requests: SurgeRequests | None = None
    #: the job's id, for what the job hands to others (a campaign's hooks get it in their environment)
    job_id: str = ""

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()
