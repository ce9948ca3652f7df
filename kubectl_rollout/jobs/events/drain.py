"""The drain's events (see ``base`` for the envelope and the rules for changing them)."""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event, PodRef


@dataclass(frozen=True, kw_only=True)
class PodPlan:
    """One pod's pre-flight verdict."""

    pod: PodRef
    #: "evict", "delete" (--disable-eviction), "skip", "blocked" (will wait for a PDB) or "error"
    verdict: str
    reason: str = ""
    #: PDBs selecting the pod, as "namespace/name"
    pdbs: tuple[str, ...] = ()
    priority: int = 0


@dataclass(frozen=True, kw_only=True)
class NodePlan:
    node: str
    cordoned: bool
    pods: tuple[PodPlan, ...]
    #: kubectl's "cannot delete ..." lines; a node with errors is not drained
    errors: tuple[str, ...] = ()
    warnings: str = ""


@dataclass(frozen=True, kw_only=True)
class DrainPlanned(Event):
    TYPE = "DrainPlanned"

    nodes: tuple[NodePlan, ...]
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class NodeCordoned(Event):
    TYPE = "NodeCordoned"

    node: str
    #: False when the node was cordoned already
    changed: bool
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class NodeUncordoned(Event):
    TYPE = "NodeUncordoned"

    node: str
    changed: bool
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class DrainWarning(Event):
    TYPE = "DrainWarning"

    node: str
    message: str


@dataclass(frozen=True, kw_only=True)
class EvictionStarted(Event):
    TYPE = "EvictionStarted"

    pod: PodRef
    attempt: int
    #: "evict" or "delete"
    method: str = "evict"
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class EvictionBlocked(Event):
    """The API server refused for now; the engine retries."""

    TYPE = "EvictionBlocked"

    pod: PodRef
    #: pdb-blocked, pdb-status-stale, throttled, namespace-terminating
    reason: str
    message: str
    pdb: str | None = None
    healthy: int | None = None
    needed: int | None = None
    #: when this pod was first blocked (epoch seconds)
    since: float = 0.0
    attempts: int = 0
    #: the latest time of the next attempt (epoch seconds); a PDB update may come sooner
    next_try_by: float = 0.0
    #: what the server asked for, when it did
    retry_after: float | None = None


@dataclass(frozen=True, kw_only=True)
class PodEvicted(Event):
    """The eviction (or deletion) was accepted; the pod is terminating."""

    TYPE = "PodEvicted"

    pod: PodRef
    method: str = "evict"
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class PodGone(Event):
    TYPE = "PodGone"

    pod: PodRef
    #: seconds from the first eviction attempt to the pod's disappearance
    after: float


@dataclass(frozen=True, kw_only=True)
class PodSkippedWaiting(Event):
    """--skip-wait-for-delete-timeout: deleted long ago, no longer waited for."""

    TYPE = "PodSkippedWaiting"

    pod: PodRef
    seconds: int


@dataclass(frozen=True, kw_only=True)
class PodFailed(Event):
    TYPE = "PodFailed"

    pod: PodRef
    reason: str


@dataclass(frozen=True, kw_only=True)
class NodeDrained(Event):
    TYPE = "NodeDrained"

    node: str
    evicted: int
    seconds: float
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class NodeDrainFailed(Event):
    TYPE = "NodeDrainFailed"

    node: str
    reason: str
    #: pods still on the node that the drain meant to remove, "namespace/name"
    pending: tuple[str, ...]
    #: the node's state after the failure
    cordoned: bool


@dataclass(frozen=True, kw_only=True)
class BatchStarted(Event):
    TYPE = "BatchStarted"

    index: int
    nodes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WaitingForWorkloads(Event):
    """--node-batch: before the next batch, the evicted workloads must be available again."""

    TYPE = "WaitingForWorkloads"

    #: "Kind namespace/name (available/desired)"
    workloads: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WorkloadsAvailable(Event):
    TYPE = "WorkloadsAvailable"

    workloads: tuple[str, ...]
    seconds: float


@dataclass(frozen=True, kw_only=True)
class DrainFinished(Event):
    TYPE = "DrainFinished"

    drained: tuple[str, ...]
    failed: tuple[str, ...]
    seconds: float

    @property
    def succeeded(self) -> bool:
        return not self.failed
