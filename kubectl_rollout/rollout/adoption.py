"""Taking a Deployment over as a managed workload, and handing it back, without restarting a pod.

``adopt``: record the Deployment's spec, delete the Deployment with the
Orphan policy (its ReplicaSets and pods stay), then make the record the
controller owner of those ReplicaSets. ``release``: delete the record with the
Orphan policy, then create a Deployment with the same template; the server's
controller adopts the orphaned ReplicaSets because their templates match.
Pods never notice either way.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.record_names import WORKLOAD_LABEL, record_name
from kubectl_rollout.kube.serialization import to_plain
from kubectl_rollout.kube.watched_collection import WatchedCollection
from kubectl_rollout.rollout import replica_sets
from kubectl_rollout.rollout.record import Record, exists, read, save_spec, save_status
from kubectl_rollout.rollout.spec import parse_workload
from kubectl_rollout.rollout.state import RolloutStatus
from kubectl_rollout.rollout.template_hash import template_identity

#: annotations the Deployment controller owns; they do not belong in a manifest
CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/revision", "kubectl.kubernetes.io/last-applied-configuration")


class AdoptionError(UserFacingError):
    pass


def manifest_of(deployment: Any) -> dict[str, Any]:
    """The Deployment as a manifest: its spec as the API server holds it, without controller bookkeeping."""
    metadata = deployment.metadata
    annotations = {k: v for k, v in (metadata.annotations or {}).items() if k not in CONTROLLER_ANNOTATIONS}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": metadata.name,
            "namespace": metadata.namespace,
            "labels": metadata.labels or {},
            "annotations": annotations,
        },
        "spec": to_plain(deployment.spec),
    }


def _wait_gone(cluster: Cluster, list_func: Any, namespace: str, name: str, timeout: float = 60) -> None:
    collection = WatchedCollection(
        list_func, namespace=namespace, field_selector=f"metadata.name={name}", description=name
    ).start()
    try:
        if not collection.wait_until(lambda c: not c.objects_locked(), timeout, None):
            raise AdoptionError(f"{name} was not deleted within {timeout:.0f}s; its finalizers may be stuck")
    finally:
        collection.stop()


def _wait_orphaned(cluster: Cluster, namespace: str, names: list[str], owner_uid: str, timeout: float = 60) -> None:
    """The garbage collector removes the old owner's reference; wait (watching) for it on every ReplicaSet."""
    collection = WatchedCollection(
        cluster.apps.list_namespaced_replica_set, namespace=namespace, description=f"ReplicaSets in {namespace}"
    ).start()

    def orphaned(c: WatchedCollection) -> bool:
        for name in names:
            rs = c.objects_locked().get((namespace, name))
            if rs is not None and any(ref.uid == owner_uid for ref in rs.metadata.owner_references or []):
                return False
        return True

    try:
        if not collection.wait_until(orphaned, timeout, None):
            raise AdoptionError(f"the garbage collector did not orphan {', '.join(names)} within {timeout:.0f}s")
    finally:
        collection.stop()


def adopt(cluster: Cluster, namespace: str, name: str) -> Record:
    try:
        deployment = call_with_retry(cluster.apps.read_namespaced_deployment, name, namespace)
    except ApiException as err:
        if err.status == 404:
            raise AdoptionError(
                f'deployment "{name}" not found in namespace "{namespace}"; nothing was changed'
            ) from err
        raise
    if exists(cluster, namespace, name):
        raise AdoptionError(f'managed workload "{name}" already exists in namespace "{namespace}"; nothing was changed')
    owned = [
        rs
        for rs in call_with_retry(cluster.apps.list_namespaced_replica_set, namespace).items
        if any(ref.uid == deployment.metadata.uid and ref.controller for ref in rs.metadata.owner_references or [])
    ]
    manifest = manifest_of(deployment)
    spec = parse_workload(manifest, default_namespace=namespace)
    record = save_spec(cluster, manifest, spec, None)

    call_with_retry(
        cluster.apps.delete_namespaced_deployment,
        name,
        namespace,
        body=client.V1DeleteOptions(propagation_policy="Orphan"),
    )
    _wait_gone(cluster, cluster.apps.list_namespaced_deployment, namespace, name)
    _wait_orphaned(cluster, namespace, [rs.metadata.name for rs in owned], deployment.metadata.uid)

    current = json.dumps(spec.template, sort_keys=True)
    for rs in owned:
        template = replica_sets.template_without_hash(rs)
        is_new = json.dumps(template, sort_keys=True) == current
        patch = {
            "metadata": {
                "labels": {WORKLOAD_LABEL: name},
                "annotations": {
                    replica_sets.TEMPLATE_HASH: template_identity(template),
                    replica_sets.TEMPLATE: json.dumps(
                        spec.template if is_new else template, sort_keys=True, separators=(",", ":")
                    ),
                },
                "ownerReferences": [to_plain(record.owner_reference())],
            }
        }
        call_with_retry(cluster.apps.patch_namespaced_replica_set, rs.metadata.name, namespace, patch)
    status = RolloutStatus.from_dict(to_plain(deployment.status))
    return save_status(cluster, read(cluster, namespace, name), status)


def release(cluster: Cluster, namespace: str, name: str) -> Any:
    record = read(cluster, namespace, name)
    try:
        call_with_retry(cluster.apps.read_namespaced_deployment, name, namespace)
    except ApiException as err:
        if err.status != 404:
            raise
    else:
        raise AdoptionError(f'a Deployment "{name}" already exists in namespace "{namespace}"; nothing was changed')
    mine = [
        rs.metadata.name
        for rs in replica_sets.owned(
            call_with_retry(
                cluster.apps.list_namespaced_replica_set, namespace, label_selector=f"{WORKLOAD_LABEL}={name}"
            ).items,
            record,
        )
    ]
    call_with_retry(
        cluster.core.delete_namespaced_config_map,
        record_name(name),
        namespace,
        body=client.V1DeleteOptions(propagation_policy="Orphan"),
    )
    _wait_gone(cluster, cluster.core.list_namespaced_config_map, namespace, record_name(name))
    _wait_orphaned(cluster, namespace, mine, record.uid)
    manifest = dict(record.manifest)
    manifest["metadata"] = {k: v for k, v in manifest["metadata"].items() if k in ("name", "labels", "annotations")}
    return call_with_retry(cluster.apps.create_namespaced_deployment, namespace, manifest)
