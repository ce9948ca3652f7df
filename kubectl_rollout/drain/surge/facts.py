"""What the surge reads of the owners of the pods a drain is to remove, for ``decision.decide``.

For each owner (a Deployment, a managed workload, or any other kind, which the
decision then turns down): its count, the room its PDBs give now and by their
spec, a HorizontalPodAutoscaler that targets it, GitOps marks, a surge record
left on it, and a Lease held on it (another drain surging it, or a managed
workload's driver at work). A managed workload is read through its record and
its ReplicaSets (``managed``). Reading changes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.pod_owners import OwnerLookup
from kubectl_rollout.drain.surge.decision import WorkloadFacts, budget_room, gitops_marker
from kubectl_rollout.drain.surge.leases import driver_lease, surge_lease
from kubectl_rollout.drain.surge.managed import ManagedWorkload, read_managed, steady_replica_set
from kubectl_rollout.drain.surge.record import DEPLOYMENT, REPLICA_SET, RecordedKind, record_of
from kubectl_rollout.eviction.pdb_watch import PdbWatch
from kubectl_rollout.jobs.events.base import PodRef
from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.pods import controller_of


@dataclass(kw_only=True)
class Owner:
    """One owner of pods on the drained nodes, as the surge saw it: its pods, its PDBs, what a surge would raise."""

    ref: WorkloadRef
    pods: list[PodRef] = field(default_factory=list)
    #: the ReplicaSets of those pods
    pod_replica_sets: set[str] = field(default_factory=set)
    deployment: Any | None = None
    #: a managed workload: as read, and its one ReplicaSet with pods when no rollout is under way
    managed: ManagedWorkload | None = None
    replica_set: Any | None = None
    disruptions_allowed: int | None = None
    budgets: list[Any] = field(default_factory=list)

    def surged_object(self) -> tuple[RecordedKind, Any] | None:
        """What a surge raises: the Deployment, or the managed workload's ReplicaSet; None when neither."""
        if self.deployment is not None:
            return DEPLOYMENT, self.deployment
        if self.replica_set is not None:
            return REPLICA_SET, self.replica_set
        return None


class FactReader:
    """Reads the owners of one node's (or node batch's) pods and their facts; what it read once it keeps."""

    def __init__(self, cluster: Cluster, pdbs: PdbWatch) -> None:
        self.cluster = cluster
        self.pdbs = pdbs
        self._owners = OwnerLookup(cluster)
        self._autoscalers: dict[str, dict[str, str]] = {}

    def _autoscaler_of(self, ref: WorkloadRef) -> str | None:
        if ref.namespace not in self._autoscalers:
            api = client.AutoscalingV2Api(self.cluster.api_client)
            listing = call_with_retry(api.list_namespaced_horizontal_pod_autoscaler, ref.namespace)
            self._autoscalers[ref.namespace] = {
                h.spec.scale_target_ref.name: h.metadata.name
                for h in listing.items
                if h.spec.scale_target_ref.kind == ref.kind
            }
        name = self._autoscalers[ref.namespace].get(ref.name)
        return f"{ref.namespace}/{name}" if name else None

    def owners(self, pods: Iterable[tuple[Any, str]]) -> list[Owner]:
        owners: dict[WorkloadRef, Owner] = {}
        for pod, node in pods:
            ref = self._owners.owner_of(pod)
            owner = owners.setdefault(ref, Owner(ref=ref))
            owner.pods.append(PodRef(namespace=pod.metadata.namespace, name=pod.metadata.name, node=node))
            controller = controller_of(pod)
            if controller is not None and controller.kind == "ReplicaSet":
                owner.pod_replica_sets.add(controller.name)
            for budget in self.pdbs.selecting(pod):
                if all(b.metadata.uid != budget.metadata.uid for b in owner.budgets):
                    owner.budgets.append(budget)
                allowed = (budget.status.disruptions_allowed or 0) if budget.status else 0
                owner.disruptions_allowed = (
                    allowed if owner.disruptions_allowed is None else min(owner.disruptions_allowed, allowed)
                )
        return sorted(owners.values(), key=lambda o: o.ref)

    def facts(self, owner: Owner) -> WorkloadFacts:
        ref = owner.ref
        facts = WorkloadFacts(
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            pods_on_nodes=len(owner.pods),
            disruptions_allowed=owner.disruptions_allowed,
        )
        if owner.disruptions_allowed is None:
            return facts
        if ref.kind == "ManagedWorkload":
            return self._managed_facts(owner, facts)
        if ref.kind != "Deployment":
            return facts
        try:
            deployment = call_with_retry(self.cluster.apps.read_namespaced_deployment, ref.name, ref.namespace)
        except ApiException as err:
            if err.status == 404:
                return facts
            raise
        owner.deployment = deployment
        desired = deployment.spec.replicas if deployment.spec.replicas is not None else 1
        status = deployment.status
        # Pods of an older template still running: a rollout is under way. (A scale in progress, such as a
        # leftover surge just restored, is not one: every pod is of the current template.)
        rolling_out = status is not None and (status.updated_replicas or 0) < (status.replicas or 0)
        # A record here now is another drain's live surge (the leftovers of dead ones were restored before the
        # plan): said in that drain's words, from its Lease, rather than as a leftover.
        recorded = record_of(deployment) is not None
        held = surge_lease(self.cluster, ref.namespace, ref.name).held() if recorded else None
        return WorkloadFacts(
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            replicas=desired,
            pods_on_nodes=len(owner.pods),
            disruptions_allowed=owner.disruptions_allowed,
            room_by_spec=self._room_by_spec(owner, desired),
            autoscaler=self._autoscaler_of(ref),
            gitops=gitops_marker(deployment.metadata.labels or {}, deployment.metadata.annotations or {}),
            leftover_record=recorded and held is None,
            rolling_out=rolling_out,
            lease_held=held.message if held is not None else "",
        )

    @staticmethod
    def _room_by_spec(owner: Owner, replicas: int) -> int | None:
        rooms = [
            budget_room(min_available=b.spec.min_available, max_unavailable=b.spec.max_unavailable, replicas=replicas)
            for b in owner.budgets
        ]
        known = [r for r in rooms if r is not None]
        return min(known) if known else None

    def _managed_facts(self, owner: Owner, facts: WorkloadFacts) -> WorkloadFacts:
        """A managed workload: its record, its ReplicaSets (one with pods, the template's, or a rollout is under
        way) and its driver's Lease (held: a driver is at work, or another drain surges it)."""
        ref = owner.ref
        workload = read_managed(self.cluster, ref.namespace, ref.name)
        if workload is None:
            return facts
        owner.managed = workload
        owner.replica_set, why = steady_replica_set(workload, owner.pod_replica_sets)
        held = driver_lease(self.cluster, ref.namespace, ref.name).held()
        return dataclasses.replace(
            facts,
            replicas=workload.replicas,
            room_by_spec=self._room_by_spec(owner, workload.replicas),
            gitops=gitops_marker(workload.labels, workload.annotations),
            # under a held driver Lease, a record is that holder's live surge: the Lease says whose
            leftover_record=held is None
            and any(record_of(rs, REPLICA_SET) is not None for rs in workload.replica_sets),
            rolling_out=bool(why),
            rollout_detail=why,
            lease_held=held.message if held is not None else "",
        )
