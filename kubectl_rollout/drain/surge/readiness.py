"""Whether a surge's extra pods are Ready, and when the surge is to be given up, why in a person's words.

Readiness is the raised object's ``status.availableReplicas``: for a ReplicaSet
the ReplicaSet controller's own count (minReadySeconds included), for a
Deployment the Deployment controller's sum of it. A ReplicaSet that cannot
create the pods (a ResourceQuota: its ReplicaFailure condition) gives the
surge up at once; extra pods still not Ready after the wait are explained by
their Pending pods' scheduling messages (no room on other nodes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster


def readiness(
    cluster: Cluster,
    raised: Any,
    *,
    kind: str,
    namespace: str,
    selector: Mapping[str, str],
    target: int,
    waited: float,
    ready_timeout: float,
) -> str | None:
    """None: still waiting; "": Ready; otherwise why the surge is given up.

    ``raised``: the object whose count was raised (a ``kind``) as now, None once deleted; ``selector``: its
    pods' labels; ``target``: the available replicas that mean every extra pod is Ready."""
    if raised is None:
        return f"the {kind} was deleted"
    status = raised.status
    available = (status.available_replicas or 0) if status else 0
    if available >= target:
        return ""
    labels = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    failure = next((c for c in (status.conditions or []) if c.type == "ReplicaFailure"), None) if status else None
    if failure is not None and failure.status == "True":
        return f"its ReplicaSet cannot create the extra pods: {_replica_failure(cluster, namespace, labels, failure)}"
    if waited < ready_timeout:
        return None
    return _why_not_ready(cluster, namespace, labels, waited)


def _replica_failure(cluster: Cluster, namespace: str, selector: str, fallback: Any) -> str:
    """The ReplicaSet's own ReplicaFailure message (quota refusals are worded there), else the Deployment's copy."""
    listing = call_with_retry(cluster.apps.list_namespaced_replica_set, namespace, label_selector=selector or None)
    for replica_set in listing.items:
        for condition in (replica_set.status.conditions if replica_set.status else None) or []:
            if condition.type == "ReplicaFailure" and condition.status == "True":
                return f"{condition.reason}: {condition.message}"
    return f"{fallback.reason}: {fallback.message}"


def _why_not_ready(cluster: Cluster, namespace: str, selector: str, waited: float) -> str:
    pods = call_with_retry(cluster.core.list_namespaced_pod, namespace, label_selector=selector or None).items
    pending = [p for p in pods if p.status is not None and p.status.phase == "Pending"]
    unscheduled = [
        c.message
        for p in pending
        for c in (p.status.conditions or [])
        if c.type == "PodScheduled" and c.status == "False" and c.message
    ]
    if unscheduled:
        return (
            f"{len(unscheduled)} extra pod(s) stayed Pending for {waited:.0f}s, no room on other nodes "
            f"({unscheduled[0]})"
        )
    return f"the extra pods were not Ready after {waited:.0f}s ({len(pending)} Pending)"
