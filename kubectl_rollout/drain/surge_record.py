"""The crash-safe record of a surge, kept on the surged Deployment itself.

Three labels, written in the same request that raises the replica count (so
the count is never raised without its record, not even for an instant):

- ``rollout-plus.kubectl.io/surge-original-replicas``: the count before the surge;
- ``rollout-plus.kubectl.io/surge-added``: how many replicas the surge added;
- ``rollout-plus.kubectl.io/surge-by``: the id of the drain job that surged.

Labels rather than annotations: a Deployment's annotations bump its
generation and are copied onto its ReplicaSets (a stale copy would outlive
the restore), and a label can be listed across all namespaces in one request,
which is how a later drain, ``uncordon`` or the agent's resume find a record
that a killed drain left behind.

Every change of the count is a JSON patch whose ``test`` operation checks that
the count is still the one this drain set: if anybody else changed it (a
person, a GitOps controller), the drain stops touching it and only removes its
record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster

ORIGINAL = "rollout-plus.kubectl.io/surge-original-replicas"
ADDED = "rollout-plus.kubectl.io/surge-added"
SURGED_BY = "rollout-plus.kubectl.io/surge-by"


def _pointer(label: str) -> str:
    return "/metadata/labels/" + label.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True, kw_only=True)
class SurgeRecord:
    namespace: str
    name: str
    original: int
    added: int
    drain: str


def record_of(deployment: Any) -> SurgeRecord | None:
    labels = deployment.metadata.labels or {}
    if ORIGINAL not in labels:
        return None
    try:
        original, added = int(labels[ORIGINAL]), int(labels.get(ADDED, "0"))
    except ValueError:
        original, added = -1, 0
    return SurgeRecord(
        namespace=deployment.metadata.namespace,
        name=deployment.metadata.name,
        original=original,
        added=added,
        drain=labels.get(SURGED_BY, ""),
    )


class CountChanged(Exception):
    """The count is not the one this drain set (or read): somebody else changed it."""


def _json_patch(cluster: Cluster, namespace: str, name: str, operations: list[dict[str, Any]]) -> Any:
    try:
        # A list body is sent as application/json-patch+json; a failed "test" is answered 422.
        return call_with_retry(cluster.apps.patch_namespaced_deployment, name, namespace, operations)
    except ApiException as err:
        if err.status in (409, 422):
            raise CountChanged(f"deployment {namespace}/{name}") from err
        raise


def begin(cluster: Cluster, deployment: Any, *, added: int, drain: str) -> Any:
    """Record the original count and raise it by ``added``, in one request; CountChanged if it moved."""
    original = deployment.spec.replicas if deployment.spec.replicas is not None else 1
    labels_exist = deployment.metadata.labels is not None
    operations: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": deployment.metadata.resource_version}
    ]
    if not labels_exist:
        operations.append({"op": "add", "path": "/metadata/labels", "value": {}})
    operations += [
        {"op": "add", "path": _pointer(ORIGINAL), "value": str(original)},
        {"op": "add", "path": _pointer(ADDED), "value": str(added)},
        {"op": "add", "path": _pointer(SURGED_BY), "value": drain},
        {"op": "replace", "path": "/spec/replicas", "value": original + added},
    ]
    return _json_patch(cluster, deployment.metadata.namespace, deployment.metadata.name, operations)


def set_count(cluster: Cluster, namespace: str, name: str, *, expected: int, replicas: int) -> Any:
    """Move the count from ``expected`` (what this drain last set) to ``replicas``; CountChanged otherwise."""
    return _json_patch(
        cluster,
        namespace,
        name,
        [
            {"op": "test", "path": "/spec/replicas", "value": expected},
            {"op": "replace", "path": "/spec/replicas", "value": replicas},
        ],
    )


def _remove_labels(deployment: Any) -> list[dict[str, Any]]:
    labels = deployment.metadata.labels or {}
    return [{"op": "remove", "path": _pointer(key)} for key in (ORIGINAL, ADDED, SURGED_BY) if key in labels]


@dataclass(frozen=True, kw_only=True)
class Restored:
    record: SurgeRecord
    #: the count now
    replicas: int
    #: False when somebody else had changed the count: it was left alone, only the record removed
    count_restored: bool
    #: gone: the Deployment was deleted meanwhile
    gone: bool = False


def restore(cluster: Cluster, namespace: str, name: str, *, expected: int | None = None) -> Restored | None:
    """Put the recorded count back and remove the record; None when there is no record.

    ``expected``: the count this drain last set; None (a leftover of a killed
    drain, whose last step is unknown) accepts any count between the original
    and original + added, the only counts a surge ever sets.
    """
    for _ in range(5):
        try:
            deployment = call_with_retry(cluster.apps.read_namespaced_deployment, name, namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        record = record_of(deployment)
        if record is None:
            return None
        current = deployment.spec.replicas if deployment.spec.replicas is not None else 1
        ours = (
            current == expected
            if expected is not None
            else record.original >= 0 and record.original <= current <= record.original + record.added
        )
        operations = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": deployment.metadata.resource_version}
        ]
        operations += _remove_labels(deployment)
        if ours and current != record.original:
            operations.append({"op": "replace", "path": "/spec/replicas", "value": record.original})
        try:
            _json_patch(cluster, namespace, name, operations)
        except CountChanged:
            continue  # changed between our read and our write: read again
        return Restored(record=record, replicas=record.original if ours else current, count_restored=ours)
    raise CountChanged(f"deployment {namespace}/{name}")


def leftovers(cluster: Cluster) -> list[SurgeRecord]:
    """Every surge record in the cluster (one request): what killed drains left behind."""
    listing = call_with_retry(cluster.apps.list_deployment_for_all_namespaces, label_selector=ORIGINAL)
    records = [record_of(d) for d in listing.items]
    return sorted((r for r in records if r is not None), key=lambda r: (r.namespace, r.name))
