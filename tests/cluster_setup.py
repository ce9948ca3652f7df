"""Creating what integration tests start from, and waiting until it is usable: namespaces, Deployments."""

from __future__ import annotations

import time
from typing import Any

import manifests
import pytest
import urllib3
import watching
from kubernetes import client

from kubectl_rollout.kube.api_outage import is_connection_error
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


def remove_node(cluster: Cluster, name: str) -> None:
    """Delete a node and its Lease, for a test that creates a node of the same name again: kwok (v0.8.0), finding
    the old Lease there when it creates the new node's, retries its update on a stale copy every 10 s and renews
    no other node's Lease meanwhile, until every node of the cluster is NotReady (a rehearsal saw it)."""
    for delete, args in (
        (cluster.core.delete_node, (name,)),
        (cluster.coordination.delete_namespaced_lease, (name, "kube-node-lease")),
    ):
        try:
            delete(*args)
        except client.ApiException as err:
            if err.status != 404:
                raise


def delete_workloads(cluster: Cluster, namespace: str) -> None:
    """Delete the Deployments, ReplicaSets, StatefulSets and DaemonSets of ``namespace``, leaving their pods:
    with their owners gone, a pod deleted is not made again. Deleting the pods of live workloads first is a
    race with their controllers (a rehearsal's teardown of 600 pods deleted and re-created them for six minutes,
    each request cut off at the API server's 60 s)."""
    orphan = client.V1DeleteOptions(propagation_policy="Orphan")
    for delete in (
        cluster.apps.delete_collection_namespaced_deployment,
        cluster.apps.delete_collection_namespaced_stateful_set,
        cluster.apps.delete_collection_namespaced_daemon_set,
        cluster.apps.delete_collection_namespaced_replica_set,
    ):
        call_with_retry(delete, namespace, body=orphan)


def delete_pods(cluster: Cluster, namespace: str, *, timeout: float = 300) -> None:
    """Delete every pod of ``namespace`` at once (grace 0), asking again until one request gets through.

    The API server deletes a collection one pod after another within its request timeout (60 s): on a loaded
    machine a few hundred pods outlast it, and the answer is a 504, or no answer at all when the timeout and
    the handler's own error race to write it (a rehearsal's teardown failed on that, 600 pods). Each request
    goes on from what the last one deleted."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            call_with_retry(cluster.core.delete_collection_namespaced_pod, namespace, grace_period_seconds=0)
            return
        except (client.ApiException, urllib3.exceptions.HTTPError, OSError) as err:
            cut_short = is_connection_error(err) or (isinstance(err, client.ApiException) and err.status == 504)
            if not cut_short or time.monotonic() > deadline:
                raise


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


def until_scheduler_skips(cluster: Cluster, node: str, *, timeout: float = 60) -> None:
    """Wait until the scheduler itself treats cordoned ``node`` as unschedulable.

    A cordon is in the API server at once but reaches the scheduler through its informer: a pod created right
    after the patch can still land on the node (under load, one did). A probe pod that only ``node`` could
    take, tolerating its other taints, is refused by the scheduler for the cordon once its cache has it; every
    pod scheduled after that sees the cordon too."""
    taints = cluster.core.read_node(node).spec.taints or []
    tolerations = [
        {"key": t.key, "operator": "Equal", "value": t.value or "", "effect": t.effect}
        for t in taints
        if t.key != "node.kubernetes.io/unschedulable"
    ]
    name = f"cordon-probe-{node}"[:63]
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"cordon-probe": "true"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": tolerations,
            "containers": [{"name": "probe", "image": manifests.IMAGE}],
            "terminationGracePeriodSeconds": 0,
        },
    }
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        call_with_retry(cluster.core.create_namespaced_pod, "default", probe)
        try:
            decided = watching.until(
                cluster.core.list_namespaced_pod,
                lambda p: p.metadata.name == name and (bool(p.spec.node_name) or _refused_for_cordon(p)),
                namespace="default",
                field_selector=f"metadata.name={name}",
                timeout=max(1.0, deadline - time.monotonic()),
                what=f"the scheduler to decide on a probe for cordoned node {node}",
            )
        finally:
            call_with_retry(cluster.core.delete_namespaced_pod, name, "default", grace_period_seconds=0)
            watching.until_deleted(cluster.core.list_namespaced_pod, name, namespace="default", timeout=timeout)
        if not decided.spec.node_name:
            return
        # bound: the scheduler had not seen the cordon yet; ask again
    pytest.fail(f"the scheduler still placed pods on cordoned node {node} after {timeout}s")


def _refused_for_cordon(pod: Any) -> bool:
    return any(
        c.type == "PodScheduled" and c.status == "False" and "unschedulable" in (c.message or "")
        for c in (pod.status.conditions or [])
    )
