"""The drain's events (see ``base`` for the envelope and the rules for changing them)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.eviction import DryRun


class Verdict(enum.StrEnum):
    """A pod's pre-flight verdict."""

    EVICT = "evict"
    #: --disable-eviction
    DELETE = "delete"
    #: left alone (DaemonSet pods with --ignore-daemonsets, mirror pods, finished long ago)
    SKIP = "skip"
    #: will wait for a PodDisruptionBudget
    BLOCKED = "blocked"
    #: the node cannot be drained because of this pod (kubectl's "cannot delete ...")
    ERROR = "error"


@dataclass(frozen=True, order=True, kw_only=True)
class WorkloadRef:
    """A replicated workload whose pods a node batch evicted."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True, kw_only=True)
class WorkloadAvailability:
    workload: WorkloadRef
    available: int = 0
    desired: int = 0
    #: deleted while we waited
    gone: bool = False

    def __str__(self) -> str:
        if self.gone:
            return f"{self.workload} (gone)"
        return f"{self.workload} ({self.available}/{self.desired} available)"


@dataclass(frozen=True, kw_only=True)
class PodOwnerKnown(Event):
    """The workload of a pod whose eviction a PodDisruptionBudget refused, read once per pod at its first
    refusal: the blocker's advice names it (``scale deployment/web``, what ``--surge`` would do) instead of
    a placeholder. Not sent when the pod's ReplicaSet cannot be read (the drain's Role need not allow it)."""

    TYPE = "PodOwnerKnown"

    pod: PodRef
    owner: WorkloadRef

    def coalesce_key(self) -> str | None:
        return f"owner:{self.pod}"


@dataclass(frozen=True, kw_only=True)
class PodPlan:
    """One pod's pre-flight verdict."""

    pod: PodRef
    verdict: Verdict
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
    dry_run: DryRun = DryRun.NONE


@dataclass(frozen=True, kw_only=True)
class NodeCordoned(Event):
    TYPE = "NodeCordoned"

    node: str
    #: False when the node was cordoned already
    changed: bool
    dry_run: DryRun = DryRun.NONE


@dataclass(frozen=True, kw_only=True)
class NodeUncordoned(Event):
    TYPE = "NodeUncordoned"

    node: str
    changed: bool
    dry_run: DryRun = DryRun.NONE
    #: the job id of the campaign whose soft taint (rollout-plus.io/campaign) was taken off with the uncordon;
    #: "" when the node had none
    campaign_taint: str = ""


@dataclass(frozen=True, kw_only=True)
class DrainWarning(Event):
    TYPE = "DrainWarning"

    node: str
    message: str


@dataclass(frozen=True, kw_only=True)
class NodeDrainStarted(Event):
    """The node's pods that the drain removes, in eviction order (after the filters)."""

    TYPE = "NodeDrainStarted"

    node: str
    pods: tuple[PodRef, ...]
    dry_run: DryRun = DryRun.NONE


@dataclass(frozen=True, kw_only=True)
class NodeDrained(Event):
    TYPE = "NodeDrained"

    node: str
    evicted: int
    seconds: float
    dry_run: DryRun = DryRun.NONE


@dataclass(frozen=True, kw_only=True)
class NodeDrainStopped(Event):
    """The node's drain was stopped to be taken up again (a campaign drains it through a surge): the pods left
    go to that drain; nothing failed."""

    TYPE = "NodeDrainStopped"

    node: str
    why: str
    #: pods still on the node that the drain meant to remove, "namespace/name"
    pending: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class NodeDrainFailed(Event):
    TYPE = "NodeDrainFailed"

    node: str
    #: kubectl's "cannot delete ..." lines, or why pods could not be removed, one per distinct reason
    reasons: tuple[str, ...]
    #: pods still on the node that the drain meant to remove, "namespace/name"
    pending: tuple[str, ...]
    #: the node's state after the failure
    cordoned: bool

    @property
    def reason(self) -> str:
        return join_errors(self.reasons)


def join_errors(errors: tuple[str, ...] | list[str]) -> str:
    """Several errors in one line as kubectl joins them (apimachinery's ``utilerrors.NewAggregate``):
    one error as it is; several, without repeats, as ``[first, second]``."""
    distinct = list(dict.fromkeys(errors))
    if len(distinct) == 1:
        return distinct[0]
    return "[" + ", ".join(distinct) + "]" if distinct else ""


@dataclass(frozen=True, kw_only=True)
class BatchStarted(Event):
    TYPE = "BatchStarted"

    index: int
    nodes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WaitingForWorkloads(Event):
    """--node-batch: before the next batch, the evicted workloads must be available again."""

    TYPE = "WaitingForWorkloads"

    workloads: tuple[WorkloadAvailability, ...]


@dataclass(frozen=True, kw_only=True)
class WorkloadsAvailable(Event):
    TYPE = "WorkloadsAvailable"

    workloads: tuple[WorkloadRef, ...]
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
