"""Where the TUI's jobs come from: the live agent, or a recording of a job's events (``-o jsonl``).

Screens talk to a ``JobSource`` and never to a socket; a recording behaves
like an agent whose jobs have all finished, and refuses every action.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from kubectl_rollout.agent.client import Lagged
from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.events.base import Envelope


class JobSource(Protocol):
    #: a few words on where the jobs come from, for the title bar
    description: str
    #: whether cancel, pause and resume can work at all (a recording: no)
    can_act: bool

    async def jobs(self) -> list[JobInfo]:
        """Every job, newest first."""
        ...

    def follow(self, job_id: str, *, from_seq: int = 1, coalesce: bool = False) -> AsyncIterator[Envelope | Lagged]:
        """The job's events from ``from_seq``, live until its last; with ``coalesce``, the events there are
        already may come without those a later event of the same object supersedes (the view is the same)."""
        ...

    async def cancel(self, job_id: str) -> JobInfo: ...

    async def pause(self, job_id: str) -> JobInfo: ...

    async def resume(self, job_id: str) -> JobInfo: ...

    async def close(self) -> None: ...
