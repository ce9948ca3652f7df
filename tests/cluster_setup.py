"""Creating what integration tests start from, and waiting until it is usable: namespaces, Deployments."""

from __future__ import annotations

from typing import Any

import manifests
import watching
from kubernetes import client

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster


def create_namespace(cluster: Cluster, name: str, *, timeout: float = 30) -> None:
    """Create namespace ``name`` and wait until pods may be created in it."""
    call_with_retry(cluster.core.create_namespace, client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    # The service-account controller creates "default"; until it has, the
    # ServiceAccount admission plugin refuses every pod in the namespace.
    watching.until(
        cluster.core.list_namespaced_service_account,
        lambda sa: sa.metadata.name == "default",
        namespace=name,
        timeout=timeout,
        what=f"serviceaccount default in {name}",
    )


def deploy(
    cluster: Cluster,
    namespace: str,
    name: str,
    replicas: int,
    *,
    pool: str | None = None,
    node: str | None = None,
    pod_spec: dict[str, Any] | None = None,
    wait: bool = True,
    timeout: float = 60,
    **manifest: Any,
) -> None:
    """Create Deployment ``name`` (``manifests.deployment``) and, unless ``wait`` is off, wait until
    all its replicas are available. ``pool`` (and ``node``) place its pods on the test's dedicated nodes."""
    if pool is not None:
        pod_spec = {**manifests.placement(pool, node), **(pod_spec or {})}
    call_with_retry(
        cluster.apps.create_namespaced_deployment,
        namespace,
        manifests.deployment(name, replicas=replicas, pod_spec=pod_spec, **manifest),
    )
    if wait:
        watching.until(
            cluster.apps.list_namespaced_deployment,
            lambda d: d.metadata.name == name and (d.status.available_replicas or 0) == replicas,
            namespace=namespace,
            timeout=timeout,
            what=f"deployment {name} to have {replicas} available",
        )
