"""Kubernetes Events about an object, so that ``kubectl describe`` and a second operator see what the plugin did.

Recording is best effort: a user allowed to act but not to create events still
gets the action done; a failed write is logged, never raised.
"""

from __future__ import annotations

import logging
import socket
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster

log = logging.getLogger(__name__)


def record_event(
    cluster: Cluster,
    involved: client.V1ObjectReference,
    *,
    namespace: str,
    reason: str,
    message: str,
    action: str,
    reporting_controller: str,
    warning: bool = False,
) -> None:
    """One Event about ``involved``, kept in ``namespace``; best effort."""
    now = datetime.now(UTC)
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name=f"{involved.name}.", namespace=namespace),
        involved_object=involved,
        reason=reason,
        message=message,
        type="Warning" if warning else "Normal",
        source=client.V1EventSource(component="kubectl-rollout-plus"),
        reporting_component=reporting_controller,
        reporting_instance=socket.gethostname(),
        action=action,
        first_timestamp=now,
        last_timestamp=now,
        count=1,
    )
    try:
        call_with_retry(cluster.core.create_namespaced_event, namespace, event)
    except (ApiException, OSError) as err:
        log.debug("could not record event %s on %s %s: %s", reason, involved.kind, involved.name, err)
