"""Events of the job itself, whatever it runs: the first and the last of every stream."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event


class JobState(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True, kw_only=True)
class JobStarted(Event):
    TYPE = "JobStarted"

    #: drain, restart or rollout
    kind: str
    #: what the job acts on, for a person (``node/a``, ``deployment/web``)
    target: str
    context: str | None = None
    namespace: str | None = None
    #: the job continues after a restart of whatever ran it (the agent's resume)
    resumed: bool = False


@dataclass(frozen=True, kw_only=True)
class JobFinished(Event):
    """Always the last event of a job."""

    TYPE = "JobFinished"

    state: JobState
    exit_code: int
    summary: str = ""
    #: the error that ended the job, when the engine raised one instead of reporting it
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class JobPaused(Event):
    """No new step starts (a drain or a restart: no new eviction) until ``JobResumed``; those in flight go on."""

    TYPE = "JobPaused"

    #: who asked, for a person ("jobs pause", "resumed paused")
    by: str = ""


@dataclass(frozen=True, kw_only=True)
class JobResumed(Event):
    TYPE = "JobResumed"

    by: str = ""
