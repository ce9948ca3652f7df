"""The cluster as the agent's ``nodes``, ``workloads``, ``history`` and ``pods`` methods describe it: plain rows.

Pure data with a JSON form (``as_dict`` / ``from_dict``), standard library and
``jobs`` only: the cluster queries (``job_loop.cluster_queries``) build them,
and the agent's client reads them for the TUI, which may import neither an
engine nor the job loop; so they live here, beside every layer. A client
ignores fields it does not know (a newer agent may add some).
``node_verdict`` folds a node's pre-flight drain plan into the one verdict a
table shows.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Self

from kubectl_rollout.jobs.events.base import decode_dataclass, encode_value
from kubectl_rollout.jobs.events.drain import NodePlan, Verdict


class JsonRow:
    """A row dataclass as it crosses the socket: JSON-ready as a dict, and back."""

    def as_dict(self) -> dict[str, Any]:
        return dict(encode_value(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        row: Self = decode_dataclass(cls, data)
        return row


class NodeVerdict(enum.StrEnum):
    """What a drain of the node would do now, as its plan says."""

    #: not planned (``nodes`` without ``plan``)
    UNKNOWN = ""
    #: every pod it would remove can go now (or there is none)
    EVICT = "evict"
    #: at least one pod waits for a PodDisruptionBudget
    BLOCKED = "blocked"
    #: the drain would refuse the node (kubectl's "cannot delete ...", several PDBs on a pod)
    ERROR = "error"


@dataclass(frozen=True, kw_only=True)
class NodeRow(JsonRow):
    name: str
    cordoned: bool
    #: the node's Ready condition is True
    ready: bool
    #: pods bound to the node, finished ones included (as ``kubectl get pods --field-selector spec.nodeName``)
    pods: int
    verdict: NodeVerdict = NodeVerdict.UNKNOWN
    #: the verdict for a person: "evict 3 pods", "blocked by PDB shop/web (healthy 2, needs 2)", the error
    detail: str = ""
    #: the PDBs that block it now, "namespace/name"
    blocking: tuple[str, ...] = ()
    #: the agent job that drains it now ("" when none)
    drained_by: str = ""


@dataclass(frozen=True, kw_only=True)
class ConditionRow:
    type: str
    status: str
    reason: str = ""
    message: str = ""


class WorkloadKind(enum.StrEnum):
    #: a managed workload (its record is the ConfigMap rollout-plus.NAME): every rollout action applies
    MANAGED = "workload"
    #: a Deployment the server's controller drives: only a restart by eviction applies
    DEPLOYMENT = "deployment"


@dataclass(frozen=True, kw_only=True)
class WorkloadRow(JsonRow):
    kind: WorkloadKind
    namespace: str
    name: str
    #: the newest revision (0: none yet)
    revision: int = 0
    #: desired replicas
    replicas: int = 0
    updated: int = 0
    ready: int = 0
    available: int = 0
    paused: bool = False
    #: where the rollout stands (a ``RolloutPhase`` value for a managed workload; Complete / Progressing /
    #: DeadlineExceeded for a Deployment)
    phase: str = ""
    #: kubectl rollout status' line
    message: str = ""
    conditions: tuple[ConditionRow, ...] = ()
    #: "container=image", in the template's order
    images: tuple[str, ...] = ()
    #: the agent job that drives its rollout (or restarts it) now ("" when none)
    driven_by: str = ""

    @property
    def target(self) -> str:
        return f"{self.kind.value}/{self.name}"

    @property
    def containers(self) -> tuple[str, ...]:
        return tuple(image.partition("=")[0] for image in self.images)


@dataclass(frozen=True, kw_only=True)
class RevisionRow(JsonRow):
    number: int
    replica_set: str
    #: kubernetes.io/change-cause, "" when the manifest set none
    change_cause: str = ""
    #: "container=image" of the revision's pod template
    images: tuple[str, ...] = field(default_factory=tuple)
    #: the revision the workload runs (or rolls out to) now
    current: bool = False


@dataclass(frozen=True, kw_only=True)
class PodRow(JsonRow):
    name: str
    #: the node it is bound to ("" when not scheduled)
    node: str = ""
    ready: bool = False
    #: its containers' restarts, summed
    restarts: int = 0
    #: why it is not Ready: a container's waiting reason (CrashLoopBackOff, ImagePullBackOff, ...), "not Ready",
    #: "Pending", "terminating", ...; "" when it is Ready
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class ReplicaSetPods(JsonRow):
    """One ReplicaSet of a workload with its pods: the first few (those not Ready first), and the counts."""

    replica_set: str
    revision: int = 0
    pods: tuple[PodRow, ...] = ()
    #: its pods in all, and how many are Ready (``pods`` may name fewer)
    total: int = 0
    ready: int = 0


@dataclass(frozen=True, kw_only=True)
class RecordedMark(JsonRow):
    """Who did something to a canary ("step": the step itself), and when (epoch seconds)."""

    by: str
    at: float


@dataclass(frozen=True, kw_only=True)
class CanaryRecord(JsonRow):
    """A managed workload's canary as its record keeps it (the ConfigMap's ``canary`` key): what every driver
    and every ``promote`` / ``abort`` / ``retry``, on any machine, wrote."""

    steps: tuple[str, ...] = ()
    #: the current step, 0-based; len(steps): every step is done
    step: int = 0
    step_started_at: float = 0.0
    #: promote --full
    full: bool = False
    paused: RecordedMark | None = None
    promoted: RecordedMark | None = None
    aborted: RecordedMark | None = None
    retried: RecordedMark | None = None


@dataclass(frozen=True, kw_only=True)
class WorkloadPods(JsonRow):
    """The ``pods`` method's answer: the ReplicaSets with their pods, and the canary as the record keeps it
    (None: no canary state on the record; an agent older than this field never says)."""

    replica_sets: tuple[ReplicaSetPods, ...] = ()
    canary: CanaryRecord | None = None


def node_verdict(plan: NodePlan) -> tuple[NodeVerdict, str, tuple[str, ...]]:
    """(verdict, its line for a person, the blocking PDBs) of one node's plan: an error beats a block."""
    errors = list(plan.errors) + [p.reason for p in plan.pods if p.verdict is Verdict.ERROR]
    if errors:
        return NodeVerdict.ERROR, "; ".join(dict.fromkeys(errors)), ()
    blocked = [p for p in plan.pods if p.verdict is Verdict.BLOCKED]
    removed = [p for p in plan.pods if p.verdict in (Verdict.EVICT, Verdict.DELETE, Verdict.BLOCKED)]
    if blocked:
        pdbs = tuple(dict.fromkeys(pdb for p in blocked for pdb in p.pdbs[:1]))
        reason = blocked[0].reason
        counts = reason[reason.find("(healthy") : reason.find(")") + 1] if "(healthy" in reason else ""
        first = f"blocked by PDB {pdbs[0]}" + (f" {counts}" if counts else "")
        more = f" and {len(pdbs) - 1} more" if len(pdbs) > 1 else ""
        return NodeVerdict.BLOCKED, f"{first}{more}: {len(blocked)} of {len(removed)} pods wait", pdbs
    if not removed:
        return NodeVerdict.EVICT, "nothing to evict", ()
    verb = "delete" if any(p.verdict is Verdict.DELETE for p in removed) else "evict"
    return NodeVerdict.EVICT, f"{verb} {len(removed)} pod{'s' if len(removed) != 1 else ''}", ()
