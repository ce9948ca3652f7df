"""Kubernetes Events on a workload, so `kubectl describe deployment` tells what a surge did to its count.

Best effort, like the node's events: a user allowed to drain but not to
create events still gets the drain.
"""

from __future__ import annotations

import logging
import socket
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.node_events import REPORTING_CONTROLLER
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster

log = logging.getLogger(__name__)

_API_VERSIONS = {"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "ConfigMap": "v1"}


def record_workload_event(
    cluster: Cluster, *, kind: str, namespace: str, name: str, reason: str, message: str, warning: bool = False
) -> None:
    now = datetime.now(UTC)
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name=f"{name}.", namespace=namespace),
        involved_object=client.V1ObjectReference(
            kind=kind, name=name, namespace=namespace, api_version=_API_VERSIONS.get(kind, "v1")
        ),
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
        log.debug("could not record event %s on %s %s/%s: %s", reason, kind, namespace, name, err)
