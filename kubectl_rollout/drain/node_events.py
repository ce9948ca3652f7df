"""Kubernetes Events on a node, so `kubectl describe node` tells what the drain did.

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


def record_node_event(cluster: Cluster, node: Any, *, reason: str, message: str, warning: bool = False) -> None:
    now = datetime.now(UTC)
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name=f"{node.metadata.name}.", namespace="default"),
        involved_object=client.V1ObjectReference(
            kind="Node", name=node.metadata.name, uid=node.metadata.name, api_version="v1"
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
        call_with_retry(cluster.core.create_namespaced_event, "default", event)
    except (ApiException, OSError) as err:
        log.debug("could not record event %s on node %s: %s", reason, node.metadata.name, err)
