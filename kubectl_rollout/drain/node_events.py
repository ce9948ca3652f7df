"""Kubernetes Events on a node, so `kubectl describe node` tells what the drain did (and the one Event
writer the drain's events on workloads share).

Recording is best effort: a user allowed to drain but not to create events
still gets the drain.
"""

from __future__ import annotations

import logging
import socket
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster

log = logging.getLogger(__name__)

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
    now = datetime.now(UTC)
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name=f"{involved.name}.", namespace=namespace),
        involved_object=involved,
        reason=reason,
        message=message,
        type="Warning" if warning else "Normal",
        source=client.V1EventSource(component="kubectl-rollout-plus"),
        reporting_component=REPORTING_CONTROLLER,
        reporting_instance=socket.gethostname(),
        action="Drain",
        first_timestamp=now,
        last_timestamp=now,
        count=1,
    )
    try:
        call_with_retry(cluster.core.create_namespaced_event, namespace, event)
    except (ApiException, OSError) as err:
        log.debug("could not record event %s on %s %s: %s", reason, involved.kind, involved.name, err)


def record_node_event(cluster: Cluster, node: Any, *, reason: str, message: str, warning: bool = False) -> None:
    name = node.metadata.name
    involved = client.V1ObjectReference(kind="Node", name=name, uid=name, api_version="v1")
    # Node events live in "default", as the kubelet's and kubectl's do.
    record_event(cluster, involved, namespace="default", reason=reason, message=message, warning=warning)
