"""Progress events of the eviction-based restart, beside the eviction events it shares with drain.

See ``base`` for the envelope and the rules for changing it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.eviction import DryRun


@dataclass(frozen=True, kw_only=True)
class RestartPlanned(Event):
    TYPE = "RestartPlanned"

    #: "deployment/NAME", "statefulset/NAME" or "daemonset/NAME"
    workload: str
    namespace: str
    #: the pods, in the order they will be replaced
    pods: tuple[str, ...]
    dry_run: DryRun = DryRun.NONE
    #: continuing an unfinished restart (``--resume``): only pods older than its cutoff go
    resumed: bool = False
    #: pods left alone because the restart being resumed already replaced them
    already_replaced: int = 0
    #: an unfinished earlier restart was recorded on the workload; this one starts over
    supersedes_unfinished: bool = False


@dataclass(frozen=True, kw_only=True)
class WaitingToStart(Event):
    """The workload is mid-rollout or degraded; the first eviction waits until it is not."""

    TYPE = "WaitingToStart"

    workload: str
    namespace: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class WaitingForReplacement(Event):
    TYPE = "WaitingForReplacement"

    pod: PodRef
    #: Ready pods of the workload (not being deleted) against the replicas it wants
    ready: int
    desired: int

    def coalesce_key(self) -> str | None:
        return f"replacement:{self.pod}"


@dataclass(frozen=True, kw_only=True)
class PodReplaced(Event):
    TYPE = "PodReplaced"

    pod: PodRef
    #: 1-based position in the plan, and the plan's length
    index: int
    total: int
    #: from the eviction request until the workload was fully available again
    seconds: float


@dataclass(frozen=True, kw_only=True)
class RestartFinished(Event):
    TYPE = "RestartFinished"

    workload: str
    namespace: str
    replaced: int
    #: why the restart stopped early; empty when every pod was replaced
    failure: str = ""
    seconds: float = 0.0
    dry_run: DryRun = DryRun.NONE
    #: the workload keeps a record of this unfinished restart: ``--resume`` continues it
    resumable: bool = False
