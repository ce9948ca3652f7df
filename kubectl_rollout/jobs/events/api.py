"""Events of the job's connection to its API server: it stopped answering, and it answers again.

Any job may emit them, between any two of its other events; the job goes on
where it was once the server answers (``kubectl_rollout.kube.api_outage``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event


@dataclass(frozen=True, kw_only=True)
class ApiUnreachable(Event):
    """The first request that got no answer; sent once per outage."""

    TYPE = "ApiUnreachable"

    #: the API server's URL
    server: str
    #: when it stopped answering, seconds since the epoch
    since: float
    #: what the connection did ("connection refused", "connection reset", "timed out", ...)
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class ApiReachable(Event):
    """The first answer after ``ApiUnreachable``: the job goes on."""

    TYPE = "ApiReachable"

    server: str
    #: how long it was unreachable, from the first failed request to the first answer
    down_seconds: float
