"""The drain engine's progress events: typed, immutable, and serialisable.

Every front end consumes the same stream: the human printer, ``-o jsonl``
(one ``as_dict()`` per line), the agent's journal and the TUI. The JSON form
is ``{"type": <class name>, "at": <RFC 3339 time>, ...fields}``; fields are
documented on each class and never removed within a major version.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Event:
    #: seconds since the epoch when the event happened
    at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        body = dataclasses.asdict(self)
        body["at"] = datetime.fromtimestamp(self.at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {"type": type(self).__name__, **body}


@dataclass(frozen=True, kw_only=True)
class PodRef:
    namespace: str
    name: str
    node: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


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
    nodes: tuple[NodePlan, ...]
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class NodeCordoned(Event):
    node: str
    #: False when the node was cordoned already
    changed: bool
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class NodeUncordoned(Event):
    node: str
    changed: bool
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class DrainWarning(Event):
    node: str
    message: str


@dataclass(frozen=True, kw_only=True)
class EvictionStarted(Event):
    pod: PodRef
    attempt: int
    #: "evict" or "delete"
    method: str = "evict"
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class EvictionBlocked(Event):
    """The API server refused for now; the engine retries."""

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

    pod: PodRef
    method: str = "evict"
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class PodGone(Event):
    pod: PodRef
    #: seconds from the first eviction attempt to the pod's disappearance
    after: float


@dataclass(frozen=True, kw_only=True)
class PodSkippedWaiting(Event):
    """--skip-wait-for-delete-timeout: deleted long ago, no longer waited for."""

    pod: PodRef
    seconds: int


@dataclass(frozen=True, kw_only=True)
class PodFailed(Event):
    pod: PodRef
    reason: str


@dataclass(frozen=True, kw_only=True)
class NodeDrained(Event):
    node: str
    evicted: int
    seconds: float
    dry_run: str = "none"


@dataclass(frozen=True, kw_only=True)
class NodeDrainFailed(Event):
    node: str
    reason: str
    #: pods still on the node that the drain meant to remove, "namespace/name"
    pending: tuple[str, ...]
    #: the node's state after the failure
    cordoned: bool


@dataclass(frozen=True, kw_only=True)
class BatchStarted(Event):
    index: int
    nodes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WaitingForWorkloads(Event):
    """--node-batch: before the next batch, the evicted workloads must be available again."""

    #: "Kind namespace/name (available/desired)"
    workloads: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WorkloadsAvailable(Event):
    workloads: tuple[str, ...]
    seconds: float


@dataclass(frozen=True, kw_only=True)
class DrainFinished(Event):
    drained: tuple[str, ...]
    failed: tuple[str, ...]
    seconds: float

    @property
    def succeeded(self) -> bool:
        return not self.failed
