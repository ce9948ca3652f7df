"""Kubernetes Events on a workload, so `kubectl describe deployment` tells what a surge did to its count.

Best effort, like the node's events: a user allowed to drain but not to
create events still gets the drain.
"""

from __future__ import annotations

from kubernetes import client

from kubectl_rollout.drain.node_events import record_event
from kubectl_rollout.kube.cluster_access import Cluster

_API_VERSIONS = {"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "ConfigMap": "v1"}


def record_workload_event(
    cluster: Cluster, *, kind: str, namespace: str, name: str, reason: str, message: str, warning: bool = False
) -> None:
    involved = client.V1ObjectReference(
        kind=kind, name=name, namespace=namespace, api_version=_API_VERSIONS.get(kind, "v1")
    )
    record_event(cluster, involved, namespace=namespace, reason=reason, message=message, warning=warning)
