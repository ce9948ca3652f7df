"""A restart by eviction's current state, folded from its events: the plan, each pod, the wait."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kubectl_rollout.jobs.events import restart as restart_events
from kubectl_rollout.jobs.events.base import Envelope, Event, PodRef
from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.jobs.events.eviction import PdbPodsUnhealthy
from kubectl_rollout.jobs.views.blockers import OwnerFacts
from kubectl_rollout.jobs.views.pods import PodState, PodView, fold_pod, with_pdb_pods

_NO_PODS: Mapping[str, PodView] = MappingProxyType({})

#: the kinds a restart by eviction takes (``kind/name``, lower case as kubectl writes them), as the API names them
_KINDS = {"deployment": "Deployment", "statefulset": "StatefulSet", "daemonset": "DaemonSet"}


@dataclass(frozen=True, kw_only=True)
class RestartView:
    job: str = ""
    last_seq: int = 0
    started_at: float | None = None
    updated_at: float | None = None
    workload: str = ""
    namespace: str = ""
    #: the pods to replace, "namespace/name", in order
    order: tuple[str, ...] = ()
    pods: Mapping[str, PodView] = field(default_factory=lambda: _NO_PODS)
    already_replaced: int = 0
    #: why the first eviction waits (mid-rollout, degraded); empty once it started
    waiting_to_start: str = ""
    #: the pod whose replacement is awaited, with the workload's ready/desired counts
    waiting_for: restart_events.WaitingForReplacement | None = None
    finished: restart_events.RestartFinished | None = None
    #: per PDB that held an eviction, the pods it did not count as healthy when last looked at
    pdb_pods: Mapping[str, PdbPodsUnhealthy] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def owner_facts(self) -> OwnerFacts:
        """Every pod's workload is the one restarted (``workload`` is ``kind/name``, as the command took it);
        a restart has no --surge."""
        kind, _, name = self.workload.partition("/")
        if not name:
            return OwnerFacts(surge_applies=False)
        owner = WorkloadRef(kind=_KINDS.get(kind.lower(), kind), namespace=self.namespace, name=name)
        return OwnerFacts(owners=dict.fromkeys(self.pods, owner), surge_applies=False)

    @property
    def replaced(self) -> int:
        return sum(1 for p in self.pods.values() if p.state is PodState.REPLACED)

    @property
    def left(self) -> int:
        return len(self.order) - self.replaced


def fold(view: RestartView, envelope: Envelope) -> RestartView:
    if envelope.seq <= view.last_seq:
        return view
    stamped = dataclasses.replace(
        view,
        job=envelope.job,
        last_seq=envelope.seq,
        started_at=view.started_at if view.started_at is not None else envelope.at,
        updated_at=envelope.at,
    )
    pods = fold_pod(stamped.pods, envelope.event)
    if pods is not None:
        return dataclasses.replace(stamped, pods=pods)
    return _fold_restart(stamped, envelope.event)


def _fold_restart(view: RestartView, event: Event) -> RestartView:
    if isinstance(event, restart_events.RestartPlanned):
        refs = [PodRef(namespace=event.namespace, name=name) for name in event.pods]
        pods = dict(view.pods)
        for ref in refs:
            pods.setdefault(str(ref), PodView(pod=ref))
        return dataclasses.replace(
            view,
            workload=event.workload,
            namespace=event.namespace,
            order=tuple(map(str, refs)),
            pods=pods,
            already_replaced=event.already_replaced,
        )
    if isinstance(event, restart_events.WaitingToStart):
        return dataclasses.replace(view, waiting_to_start=event.reason)
    if isinstance(event, restart_events.WaitingForReplacement):
        return dataclasses.replace(view, waiting_for=event, waiting_to_start="")
    if isinstance(event, restart_events.PodReplaced):
        pods = dict(view.pods)
        key = str(event.pod)
        pods[key] = dataclasses.replace(pods.get(key) or PodView(pod=event.pod), state=PodState.REPLACED)
        return dataclasses.replace(view, pods=pods, waiting_for=None)
    if isinstance(event, PdbPodsUnhealthy):
        return dataclasses.replace(view, pdb_pods=with_pdb_pods(view.pdb_pods, event))
    if isinstance(event, restart_events.RestartFinished):
        return dataclasses.replace(view, finished=event, waiting_for=None, waiting_to_start="")
    return view
