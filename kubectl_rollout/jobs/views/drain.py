"""A drain job's current state, folded from its events: per node, per pod, the batch and the wait."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events import surge as surge_events
from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.events.eviction import EvictionBlocked, PdbPodsUnhealthy
from kubectl_rollout.jobs.views.blockers import OwnerFacts
from kubectl_rollout.jobs.views.pods import PodState, PodView, fold_pod, fold_pod_into, with_pdb_pods


class NodeState(enum.StrEnum):
    SCHEDULABLE = "schedulable"
    CORDONED = "cordoned"
    DRAINING = "draining"
    DRAINED = "drained"
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True)
class NodeView:
    name: str
    state: NodeState = NodeState.SCHEDULABLE
    cordoned: bool = False
    #: pods the drain removes from this node, "namespace/name", in eviction order
    pods: tuple[str, ...] = ()
    evicted: int = 0
    seconds: float = 0.0
    reasons: tuple[str, ...] = ()
    #: pods the failed drain left on the node
    pending: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


_EMPTY: Mapping[str, NodeView] = MappingProxyType({})
_NO_PODS: Mapping[str, PodView] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class DrainView:
    job: str = ""
    last_seq: int = 0
    started_at: float | None = None
    updated_at: float | None = None
    nodes: Mapping[str, NodeView] = field(default_factory=lambda: _EMPTY)
    pods: Mapping[str, PodView] = field(default_factory=lambda: _NO_PODS)
    plan: drain_events.DrainPlanned | None = None
    batch: int = 0
    #: --node-batch: the evicted workloads not yet available again
    waiting_for: tuple[drain_events.WorkloadAvailability, ...] = ()
    finished: drain_events.DrainFinished | None = None
    #: the PodDisruptionBudgets ("namespace/name") that refused or held an eviction at some point
    blocked_by: tuple[str, ...] = ()
    #: the workload of each pod a PDB held ("namespace/name" -> its owner), as the engine read it
    owners: Mapping[str, drain_events.WorkloadRef] = field(default_factory=lambda: MappingProxyType({}))
    #: per PDB that held an eviction, the pods it did not count as healthy when last looked at
    pdb_pods: Mapping[str, PdbPodsUnhealthy] = field(default_factory=lambda: MappingProxyType({}))
    #: --surge: the plan's decisions per workload
    surge_plan: tuple[surge_events.SurgePlan, ...] = ()
    #: --surge: workloads raised now, "Kind ns/name" -> replicas
    surging: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: --surge: pods ("namespace/name") whose workload was not surged, with why
    not_surged: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: --surge: workloads whose count was restored, leftovers of killed drains included
    restored: tuple[surge_events.SurgeRestored, ...] = ()

    @property
    def owner_facts(self) -> OwnerFacts:
        """What the blocker advice needs of the owners and the surges."""
        return OwnerFacts(owners=self.owners, not_surged=self.not_surged, surging=self.surging)

    def pods_in(self, state: PodState) -> list[PodView]:
        return [p for p in self.pods.values() if p.state is state]

    @property
    def blocking_pdbs(self) -> dict[str, list[PodView]]:
        """Each PDB that blocks pods now, with those pods."""
        blocked: dict[str, list[PodView]] = {}
        for pod in self.pods.values():
            if pod.state is PodState.BLOCKED and pod.blocker is not None and pod.blocker.pdb:
                blocked.setdefault(pod.blocker.pdb, []).append(pod)
        return blocked


def fold(view: DrainView, envelope: Envelope) -> DrainView:
    """``view`` after ``envelope``; events of other jobs' kinds are ignored."""
    if envelope.seq <= view.last_seq:
        return view  # replayed: an attach from an older sequence number
    event = envelope.event
    stamped = dataclasses.replace(
        view,
        job=envelope.job,
        last_seq=envelope.seq,
        started_at=view.started_at if view.started_at is not None else envelope.at,
        updated_at=envelope.at,
    )
    pods = fold_pod(stamped.pods, event)
    if pods is not None:
        if isinstance(event, EvictionBlocked) and event.pdb and event.pdb not in stamped.blocked_by:
            return dataclasses.replace(stamped, pods=pods, blocked_by=(*stamped.blocked_by, event.pdb))
        return dataclasses.replace(stamped, pods=pods)
    return _fold_drain(stamped, event)


def fold_many(view: DrainView, envelopes: Iterable[Envelope]) -> DrainView:
    """``fold`` over every envelope, the same result, with one copy of the pods per run of eviction events.

    A 5000-pod drain has some 15000 eviction events: folding them one by one copies the pod map each time.
    """
    work: dict[str, PodView] | None = None  # private until handed to a view
    first_at = view.started_at
    last: Envelope | None = None
    for envelope in envelopes:
        if envelope.seq <= (last.seq if last is not None else view.last_seq):
            continue
        first_at = first_at if first_at is not None else envelope.at
        last = envelope
        if work is None:
            work = dict(view.pods)
        event = envelope.event
        if isinstance(event, EvictionBlocked) and event.pdb and event.pdb not in view.blocked_by:
            view = dataclasses.replace(view, blocked_by=(*view.blocked_by, event.pdb))
        if fold_pod_into(work, event):
            continue
        view = dataclasses.replace(view, pods=work)
        work = None
        view = fold(view, envelope)
    if last is None:
        return view
    if work is not None:
        view = dataclasses.replace(view, pods=work)
    return dataclasses.replace(view, job=last.job, last_seq=last.seq, started_at=first_at, updated_at=last.at)


def _node(view: DrainView, name: str) -> NodeView:
    return view.nodes.get(name) or NodeView(name=name)


def _with_node(view: DrainView, node: NodeView) -> DrainView:
    nodes = dict(view.nodes)
    nodes[node.name] = node
    return dataclasses.replace(view, nodes=nodes)


def _fold_drain(view: DrainView, event: Event) -> DrainView:
    if isinstance(event, drain_events.DrainPlanned):
        for plan in event.nodes:
            view = _with_node(view, dataclasses.replace(_node(view, plan.node), cordoned=plan.cordoned))
        return dataclasses.replace(view, plan=event)
    if isinstance(event, drain_events.NodeCordoned):
        node = _node(view, event.node)
        state: NodeState = NodeState.CORDONED if node.state is NodeState.SCHEDULABLE else node.state
        return _with_node(view, dataclasses.replace(node, cordoned=True, state=state))
    if isinstance(event, drain_events.NodeUncordoned):
        node = _node(view, event.node)
        state = NodeState.SCHEDULABLE if node.state is NodeState.CORDONED else node.state
        return _with_node(view, dataclasses.replace(node, cordoned=False, state=state))
    if isinstance(event, drain_events.DrainWarning):
        node = _node(view, event.node)
        return _with_node(view, dataclasses.replace(node, warnings=(*node.warnings, event.message)))
    if isinstance(event, drain_events.NodeDrainStarted):
        view = _with_node(
            view,
            dataclasses.replace(_node(view, event.node), state=NodeState.DRAINING, pods=tuple(map(str, event.pods))),
        )
        pods = dict(view.pods)
        for ref in event.pods:
            pods.setdefault(str(ref), PodView(pod=ref))
        return dataclasses.replace(view, pods=pods)
    if isinstance(event, drain_events.NodeDrained):
        node = _node(view, event.node)
        return _with_node(
            view, dataclasses.replace(node, state=NodeState.DRAINED, evicted=event.evicted, seconds=event.seconds)
        )
    if isinstance(event, drain_events.NodeDrainFailed):
        node = _node(view, event.node)
        failed = dataclasses.replace(
            node, state=NodeState.FAILED, cordoned=event.cordoned, reasons=event.reasons, pending=event.pending
        )
        return _with_node(view, failed)
    if isinstance(event, drain_events.BatchStarted):
        return dataclasses.replace(view, batch=event.index, waiting_for=())
    if isinstance(event, drain_events.WaitingForWorkloads):
        return dataclasses.replace(view, waiting_for=event.workloads)
    if isinstance(event, drain_events.WorkloadsAvailable):
        return dataclasses.replace(view, waiting_for=())
    if isinstance(event, surge_events.SurgesPlanned):
        return dataclasses.replace(view, surge_plan=event.surges)
    if isinstance(event, surge_events.SurgeSkipped):
        not_surged = dict(view.not_surged)
        for ref in event.pods:
            not_surged[str(ref)] = event.reason
        return dataclasses.replace(view, not_surged=not_surged)
    if isinstance(event, surge_events.SurgeStarted | surge_events.SurgeReady):
        surging = dict(view.surging)
        surging[str(event.workload)] = event.replicas
        return dataclasses.replace(view, surging=surging)
    if isinstance(event, surge_events.SurgeRestored):
        surging = dict(view.surging)
        surging.pop(str(event.workload), None)
        return dataclasses.replace(view, surging=surging, restored=(*view.restored, event))
    if isinstance(event, PdbPodsUnhealthy):
        return dataclasses.replace(view, pdb_pods=with_pdb_pods(view.pdb_pods, event))
    if isinstance(event, drain_events.PodOwnerKnown):
        return dataclasses.replace(view, owners={**view.owners, str(event.pod): event.owner})
    if isinstance(event, drain_events.DrainFinished):
        return dataclasses.replace(view, finished=event, waiting_for=())
    return view
