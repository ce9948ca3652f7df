"""The events of evicting one pod, shared by the drain and the restart by eviction (see ``base``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event, PodRef


class DryRun(enum.StrEnum):
    """kubectl's --dry-run: none, client (nothing is sent) or server (the API server checks, changes nothing)."""

    NONE = "none"
    CLIENT = "client"
    SERVER = "server"


class EvictionMethod(enum.StrEnum):
    EVICT = "evict"
    #: --disable-eviction: DELETE instead, bypassing PodDisruptionBudgets
    DELETE = "delete"


class BlockReason(enum.StrEnum):
    """Why the API server refused an eviction for now (the refusals worth retrying)."""

    PDB_BLOCKED = "pdb-blocked"
    PDB_STATUS_STALE = "pdb-status-stale"
    THROTTLED = "throttled"
    NAMESPACE_TERMINATING = "namespace-terminating"
    SERVER_UNAVAILABLE = "server-unavailable"


@dataclass(frozen=True, kw_only=True)
class EvictionStarted(Event):
    TYPE = "EvictionStarted"

    pod: PodRef
    attempt: int
    method: EvictionMethod = EvictionMethod.EVICT
    dry_run: DryRun = DryRun.NONE


@dataclass(frozen=True, kw_only=True)
class EvictionBlocked(Event):
    """The API server refused for now; the engine retries."""

    TYPE = "EvictionBlocked"

    pod: PodRef
    reason: BlockReason
    message: str
    pdb: str | None = None
    healthy: int | None = None
    needed: int | None = None
    #: the pods the PDB selects (its status.expectedPods), when the engine read the PDB
    expected: int | None = None
    #: when this pod was first blocked (epoch seconds)
    since: float = 0.0
    attempts: int = 0
    #: the latest time of the next attempt (epoch seconds); a PDB update may come sooner
    next_try_by: float = 0.0
    #: what the server asked for, when it did
    retry_after: float | None = None

    def coalesce_key(self) -> str | None:
        # A pod blocked again only updates its blocker line.
        return f"blocked:{self.pod}"


@dataclass(frozen=True, kw_only=True)
class UnhealthyPod:
    """A pod a PodDisruptionBudget selects and does not count as healthy."""

    #: the pod and the node it is bound to ("" when it is not scheduled)
    pod: PodRef
    #: why it is not healthy: a container's waiting reason (CrashLoopBackOff, ImagePullBackOff, ...), "not Ready",
    #: "Pending", "Pending (not scheduled)", "terminating", "Succeeded" or "Failed"
    reason: str
    #: since when (epoch seconds): its Ready condition's lastTransitionTime, else its creation; 0 when unknown
    since: float = 0.0


@dataclass(frozen=True, kw_only=True)
class PdbPodsUnhealthy(Event):
    """The pods of a PDB that holds an eviction which it does not count as healthy, sent when they change.

    ``pods`` names at most the first few (the longest unhealthy first); ``unhealthy`` counts them all. An empty
    ``pods`` with ``unhealthy`` 0 says they are all healthy again.
    """

    TYPE = "PdbPodsUnhealthy"

    #: "namespace/name"
    pdb: str
    pods: tuple[UnhealthyPod, ...] = ()
    unhealthy: int = 0
    #: the pods its selector selects now
    selected: int = 0

    def coalesce_key(self) -> str | None:
        return f"pdb-pods:{self.pdb}"


@dataclass(frozen=True, kw_only=True)
class PodEvicted(Event):
    """The eviction (or deletion) was accepted; the pod is terminating."""

    TYPE = "PodEvicted"

    pod: PodRef
    method: EvictionMethod = EvictionMethod.EVICT
    dry_run: DryRun = DryRun.NONE


@dataclass(frozen=True, kw_only=True)
class PodGone(Event):
    TYPE = "PodGone"

    pod: PodRef
    #: seconds from the first eviction attempt to the pod's disappearance
    after: float
    #: how it was removed: kubectl prints "pod/x evicted" or, under --disable-eviction, "pod/x deleted"
    method: EvictionMethod = EvictionMethod.EVICT


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
    #: the removal was accepted and the pod was still terminating when it failed (a timeout)
    terminating: bool = False

    @property
    def error(self) -> str:
        """kubectl's error for this pod, the form in which a drain failure lists it."""
        if self.terminating:
            return (
                f'error when waiting for pod "{self.pod.name}" in namespace "{self.pod.namespace}" '
                f"to terminate: {self.reason}"
            )
        return f'error when evicting pods/"{self.pod.name}" -n "{self.pod.namespace}": {self.reason}'
