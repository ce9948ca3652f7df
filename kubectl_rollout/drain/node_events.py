"""Kubernetes Events on a node, so `kubectl describe node` tells what the drain did (and the one Event
writer the drain's events on workloads share).

Recording is best effort: a user allowed to drain but not to create events
still gets the drain.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from kubectl_rollout.kube import object_events
from kubectl_rollout.kube.cluster_access import Cluster

REPORTING_CONTROLLER = "rollout-plus.kubectl.io/drain"


def record_event(
    cluster: Cluster,
    involved: client.V1ObjectReference,
    *,
    namespace: str,
    reason: str,
    message: str,
    warning: bool = False,
) -> None:
    """One Event of the drain about ``involved``, kept in ``namespace``; best effort."""
    object_events.record_event(
        cluster,
        involved,
        namespace=namespace,
        reason=reason,
        message=message,
        action="Drain",
        reporting_controller=REPORTING_CONTROLLER,
        warning=warning,
    )


def record_node_event(cluster: Cluster, node: Any, *, reason: str, message: str, warning: bool = False) -> None:
    record_event_on_node(cluster, node.metadata.name, reason=reason, message=message, warning=warning)


def record_event_on_node(cluster: Cluster, name: str, *, reason: str, message: str, warning: bool = False) -> None:
    """One Event on node ``name``; best effort."""
    involved = client.V1ObjectReference(kind="Node", name=name, uid=name, api_version="v1")
    # Node events live in "default", as the kubelet's and kubectl's do.
    record_event(cluster, involved, namespace="default", reason=reason, message=message, warning=warning)
