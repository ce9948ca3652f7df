"""Reading the cluster into ``jobs.cluster_rows`` for the cluster queries, and the two node writes.

Everything goes through the engines' own code: the drain verdicts are the
drain engine's dry-run plan, cordon / uncordon are the drain engine's (the
node Event included), a managed workload's state is its record read as the
driver reads it. Runs in a worker thread of the agent, never on its event loop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from kubectl_rollout.drain.cordon import is_cordoned
from kubectl_rollout.drain.engine import DrainEngine, drain_permissions
from kubectl_rollout.eviction.pdb_pods import why_unhealthy
from kubectl_rollout.jobs.cluster_rows import (
    CanaryRecord,
    ConditionRow,
    NodeRow,
    NodeVerdict,
    PodRow,
    RecordedMark,
    ReplicaSetPods,
    RevisionRow,
    WorkloadKind,
    WorkloadPods,
    WorkloadRow,
    node_verdict,
)
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.drain import DrainPlanned
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import DrainOptions
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.label_selectors import selector_to_string
from kubectl_rollout.kube.permissions import Permission, require
from kubectl_rollout.kube.pods import controller_of, is_ready
from kubectl_rollout.kube.record_names import WORKLOAD_LABEL
from kubectl_rollout.rollout import operations, replica_sets
from kubectl_rollout.rollout.canary.record_state import state_of as canary_state_of
from kubectl_rollout.rollout.canary.state import Mark
from kubectl_rollout.rollout.record import MANAGED_BY, MANAGER, Record, from_config_map
from kubectl_rollout.rollout.record import read as read_record
from kubectl_rollout.rollout.state import rollout_phase, status_message

#: pods named per ReplicaSet by ``read_pods`` unless asked otherwise; the rest are counted
PODS_PER_REPLICA_SET = 20

#: the Deployment controller's revision annotation
DEPLOYMENT_REVISION = "deployment.kubernetes.io/revision"


def _ignore(_event: Any) -> None:
    """The engines report what they do as events; a cluster method answers with rows instead."""


# --- nodes -----------------------------------------------------------------------------


def _ready(node: Any) -> bool:
    conditions = (node.status.conditions if node.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def _pod_counts(cluster: Cluster) -> Counter[str]:
    # resourceVersion "0": from the API server's watch cache, not etcd; a table refreshed every few seconds
    # needs no stronger read.
    pods = call_with_retry(cluster.core.list_pod_for_all_namespaces, resource_version="0")
    return Counter(pod.spec.node_name for pod in pods.items if pod.spec and pod.spec.node_name)


def read_nodes(
    cluster: Cluster, *, selector: str = "", plan: bool = False, options: DrainOptions | None = None
) -> list[NodeRow]:
    """Every node (``selector``: those it selects), by name; ``plan``: each with its drain verdict."""
    listing = call_with_retry(cluster.core.list_node, label_selector=selector or None)
    nodes = sorted(listing.items, key=lambda n: n.metadata.name)
    counts = _pod_counts(cluster)
    verdicts: dict[str, tuple[NodeVerdict, str, tuple[str, ...]]] = {}
    if plan and nodes:
        for node_plan in plan_drain(cluster, [n.metadata.name for n in nodes], options=options, nodes=nodes).nodes:
            verdicts[node_plan.node] = node_verdict(node_plan)
    rows = []
    for node in nodes:
        verdict, detail, blocking = verdicts.get(node.metadata.name, (NodeVerdict.UNKNOWN, "", ()))
        rows.append(
            NodeRow(
                name=node.metadata.name,
                cordoned=is_cordoned(node),
                ready=_ready(node),
                pods=counts[node.metadata.name],
                verdict=verdict,
                detail=detail,
                blocking=blocking,
            )
        )
    return rows


def read_node(cluster: Cluster, name: str) -> NodeRow:
    """One node, unplanned; an unknown node fails with the drain's words (nothing was changed)."""
    node = DrainEngine(cluster, DrainOptions(), JobContext(emit=_ignore)).resolve_nodes([name], "")[0]
    pods = call_with_retry(cluster.core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={name}")
    return NodeRow(name=name, cordoned=is_cordoned(node), ready=_ready(node), pods=len(pods.items))


def plan_drain(
    cluster: Cluster, names: Sequence[str], *, options: DrainOptions | None = None, nodes: list[Any] | None = None
) -> DrainPlanned:
    """The drain engine's pre-flight plan for ``names``: changes nothing; an unknown node fails first."""
    engine = DrainEngine(cluster, options or DrainOptions(), JobContext(emit=_ignore))
    try:
        require(cluster, drain_permissions(engine.options, read_only=True), action=command("drain", "--plan"))
        return engine.plan(nodes if nodes is not None else engine.resolve_nodes(list(names), ""))
    finally:
        engine.close()


def set_node_cordoned(cluster: Cluster, name: str, *, cordoned: bool) -> NodeRow:
    """Cordon or uncordon node ``name`` as ``kubectl rollout-plus cordon`` does; the node as it is afterwards."""
    engine = DrainEngine(cluster, DrainOptions(), JobContext(emit=_ignore))
    try:
        node = engine.resolve_nodes([name], "")[0]  # an unknown node fails here, before anything changes
        require(cluster, [Permission("patch", "nodes")], action=command("cordon" if cordoned else "uncordon"))
        (engine.cordon if cordoned else engine.uncordon)(node)
    finally:
        engine.close()
    return read_node(cluster, name)


# --- workloads -------------------------------------------------------------------------


def _images(template: dict[str, Any]) -> tuple[str, ...]:
    containers = (template.get("spec") or {}).get("containers") or []
    return tuple(f"{c.get('name', '')}={c.get('image', '')}" for c in containers)


def _managed_rows(cluster: Cluster, namespace: str) -> list[WorkloadRow]:
    records = call_with_retry(
        cluster.core.list_namespaced_config_map, namespace, label_selector=f"{MANAGED_BY}={MANAGER}"
    )
    sets = call_with_retry(cluster.apps.list_namespaced_replica_set, namespace, label_selector=WORKLOAD_LABEL).items
    rows = []
    for config_map in records.items:
        record = from_config_map(config_map)
        revisions = [replica_sets.to_managed(rs).revision for rs in replica_sets.owned(sets, record)]
        target = record.target()
        status = record.status
        phase = rollout_phase(target, status)
        rows.append(
            WorkloadRow(
                kind=WorkloadKind.MANAGED,
                namespace=record.namespace,
                name=record.name,
                revision=max(revisions, default=0),
                replicas=record.spec.replicas,
                updated=status.updated_replicas,
                ready=status.ready_replicas,
                available=status.available_replicas,
                paused=record.spec.paused,
                phase=phase.value,
                message=status_message(record.name, target, status, phase),
                conditions=tuple(
                    ConditionRow(type=c.type, status=c.status, reason=c.reason, message=c.message)
                    for c in status.conditions
                ),
                images=_images(record.manifest["spec"]["template"]),
            )
        )
    return rows


def deployment_phase(deployment: Any) -> tuple[str, str]:
    """(phase, message) of a Deployment from its Progressing condition, as kubectl rollout status reads it."""
    name = deployment.metadata.name
    status = deployment.status
    conditions = (status.conditions if status else None) or []
    progressing = next((c for c in conditions if c.type == "Progressing"), None)
    if progressing is not None and progressing.reason == "ProgressDeadlineExceeded":
        return "DeadlineExceeded", f'deployment "{name}" exceeded its progress deadline'
    replicas = deployment.spec.replicas if deployment.spec.replicas is not None else 1
    updated = (status.updated_replicas or 0) if status else 0
    available = (status.available_replicas or 0) if status else 0
    total = (status.replicas or 0) if status else 0
    observed = (status.observed_generation or 0) if status else 0
    if observed < (deployment.metadata.generation or 0) or updated < replicas or total > updated:
        return "Progressing", progressing.message if progressing is not None and progressing.message else ""
    if available < updated:
        return "Progressing", f"{available} of {updated} updated replicas are available"
    return "Complete", f'deployment "{name}" successfully rolled out'


def _deployment_rows(cluster: Cluster, namespace: str) -> list[WorkloadRow]:
    rows = []
    for deployment in call_with_retry(cluster.apps.list_namespaced_deployment, namespace).items:
        status = deployment.status
        phase, message = deployment_phase(deployment)
        revision = (deployment.metadata.annotations or {}).get(DEPLOYMENT_REVISION, "0")
        template = cluster.api_client.sanitize_for_serialization(deployment.spec.template)
        rows.append(
            WorkloadRow(
                kind=WorkloadKind.DEPLOYMENT,
                namespace=deployment.metadata.namespace,
                name=deployment.metadata.name,
                revision=int(revision) if revision.isdigit() else 0,
                replicas=deployment.spec.replicas if deployment.spec.replicas is not None else 1,
                updated=(status.updated_replicas or 0) if status else 0,
                ready=(status.ready_replicas or 0) if status else 0,
                available=(status.available_replicas or 0) if status else 0,
                paused=bool(deployment.spec.paused),
                phase=phase,
                message=message,
                conditions=tuple(
                    ConditionRow(type=c.type, status=c.status, reason=c.reason or "", message=c.message or "")
                    for c in (status.conditions if status else None) or []
                ),
                images=_images(template),
            )
        )
    return rows


def read_workloads(cluster: Cluster, namespace: str) -> list[WorkloadRow]:
    """The managed workloads and the Deployments of ``namespace``, by name (managed first on a tie)."""
    rows = _managed_rows(cluster, namespace) + _deployment_rows(cluster, namespace)
    return sorted(rows, key=lambda row: (row.name, row.kind is not WorkloadKind.MANAGED))


def read_history(cluster: Cluster, namespace: str, name: str) -> list[RevisionRow]:
    """The managed workload's revisions, oldest first; the newest is the current one."""
    revisions = operations.history(cluster, namespace, name)
    newest = max((r.number for r in revisions), default=0)
    return [
        RevisionRow(
            number=r.number,
            replica_set=r.replica_set,
            change_cause=r.change_cause or "",
            images=_images(r.template),
            current=r.number == newest,
        )
        for r in revisions
    ]


# --- a workload's pods -------------------------------------------------------------------


def pod_row(pod: Any) -> PodRow:
    statuses = (pod.status.container_statuses if pod.status else None) or []
    return PodRow(
        name=pod.metadata.name,
        node=(pod.spec.node_name if pod.spec else None) or "",
        ready=is_ready(pod) and pod.metadata.deletion_timestamp is None,
        restarts=sum(s.restart_count or 0 for s in statuses),
        reason=why_unhealthy(pod) or "",
    )


def read_pods(
    cluster: Cluster, namespace: str, name: str, *, limit: int = PODS_PER_REPLICA_SET
) -> list[ReplicaSetPods]:
    """Managed workload ``name``'s ReplicaSets, newest revision first, each with its pods: at most ``limit``
    (those not Ready first, then by name) and the counts of all."""
    return _pods_of(cluster, read_record(cluster, namespace, name), limit=limit)


def read_workload_pods(
    cluster: Cluster, namespace: str, name: str, *, limit: int = PODS_PER_REPLICA_SET
) -> WorkloadPods:
    """``read_pods``, and the workload's canary as its record keeps it (one read of the record for both)."""
    record = read_record(cluster, namespace, name)
    return WorkloadPods(replica_sets=tuple(_pods_of(cluster, record, limit=limit)), canary=_canary_of(record))


def _mark(mark: Mark | None) -> RecordedMark | None:
    return None if mark is None else RecordedMark(by=mark.by, at=mark.at)


def _canary_of(record: Record) -> CanaryRecord | None:
    state = canary_state_of(record)
    if state is None:
        return None
    return CanaryRecord(
        steps=state.steps,
        step=state.step,
        step_started_at=state.step_started_at,
        full=state.full,
        paused=_mark(state.paused),
        promoted=_mark(state.promoted),
        aborted=_mark(state.aborted),
        retried=_mark(state.retried),
    )


def _pods_of(cluster: Cluster, record: Record, *, limit: int) -> list[ReplicaSetPods]:
    namespace, name = record.namespace, record.name
    sets = replica_sets.owned(
        call_with_retry(
            cluster.apps.list_namespaced_replica_set, namespace, label_selector=f"{WORKLOAD_LABEL}={name}"
        ).items,
        record,
    )
    # resourceVersion "0": the watch cache; a tree redrawn every two seconds needs no quorum read.
    pods = call_with_retry(
        cluster.core.list_namespaced_pod,
        namespace,
        label_selector=selector_to_string(record.spec.selector),
        resource_version="0",
    ).items
    by_owner: dict[str, list[PodRow]] = {}
    for pod in pods:
        owner = controller_of(pod)
        if owner is not None:
            by_owner.setdefault(owner.uid, []).append(pod_row(pod))
    rows = []
    for rs in sets:
        found = sorted(by_owner.get(rs.metadata.uid, []), key=lambda p: (p.ready, p.name))
        rows.append(
            ReplicaSetPods(
                replica_set=rs.metadata.name,
                revision=replica_sets.to_managed(rs).revision,
                pods=tuple(found[:limit]),
                total=len(found),
                ready=sum(1 for p in found if p.ready),
            )
        )
    return sorted(rows, key=lambda row: (-row.revision, row.replica_set))
