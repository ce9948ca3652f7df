"""The crash-safe record of a surge, kept on the object whose count was raised.

That object is a Deployment, or the one ReplicaSet of a managed workload (the
disruption controller measures a PDB over a ReplicaSet without a Deployment
owner against that ReplicaSet's own count, so raising it is raising the
workload). The code is the same for both kinds (``RecordedKind``).

Three labels (``kube.record_names``), written in the same request that raises
the replica count (so the count is never raised without its record, not even
for an instant):

- ``SURGE_ORIGINAL``: the count before the surge;
- ``SURGE_ADDED``: how many replicas the surge added;
- ``SURGED_BY``: the id of the drain job that surged.

Labels rather than annotations: a Deployment's annotations bump its
generation and are copied onto its ReplicaSets (a stale copy would outlive
the restore), and a label can be listed across all namespaces in one request
per kind, which is how a later drain, ``uncordon`` or the agent's resume find
a record that a killed drain left behind. (A ReplicaSet's labels are not
copied anywhere: neither the Deployment controller nor the rollout driver
reads them to make pods or ReplicaSets.)

Every change of the count is a JSON patch whose ``test`` operation checks that
the count is still the one this drain set: if anybody else changed it (a
person, a GitOps controller), the drain stops touching it and only removes its
record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.label_selectors import selector_to_string
from kubectl_rollout.kube.record_names import SURGE_ADDED, SURGE_LABELS, SURGE_ORIGINAL, SURGED_BY


def _pointer(label: str) -> str:
    return "/metadata/labels/" + label.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class RecordedKind:
    """A kind of object a surge raises: how to read, patch and list it (apps/v1, namespaced)."""

    kind: str
    _resource: str

    def _call(self, cluster: Cluster, verb: str) -> Callable[..., Any]:
        return getattr(cluster.apps, f"{verb}_namespaced_{self._resource}")  # type: ignore[no-any-return]

    def read(self, cluster: Cluster, namespace: str, name: str) -> Any:
        return call_with_retry(self._call(cluster, "read"), name, namespace)

    def patch(self, cluster: Cluster, namespace: str, name: str, body: Any) -> Any:
        return call_with_retry(self._call(cluster, "patch"), name, namespace, body)

    def lister(self, cluster: Cluster) -> Callable[..., Any]:
        """The list function of one namespace (for a watch)."""
        return self._call(cluster, "list")

    def list_labelled(self, cluster: Cluster, label: str) -> list[Any]:
        """Every object of this kind with ``label``, across all namespaces, in one request."""
        listing = getattr(cluster.apps, f"list_{self._resource}_for_all_namespaces")
        return list(call_with_retry(listing, label_selector=label).items)


DEPLOYMENT = RecordedKind("Deployment", "deployment")
REPLICA_SET = RecordedKind("ReplicaSet", "replica_set")
#: every kind a surge record may sit on, in the order leftovers are restored
KINDS = (DEPLOYMENT, REPLICA_SET)


def kind_named(kind: str) -> RecordedKind:
    return next(k for k in KINDS if k.kind == kind)


@dataclass(frozen=True, kw_only=True)
class SurgeRecord:
    #: the kind of the object the record sits on: "Deployment" or "ReplicaSet"
    kind: str
    namespace: str
    name: str
    original: int
    added: int
    drain: str
    #: the object's controller owner (a ReplicaSet's: its managed workload's record ConfigMap); "" for none
    owner_kind: str = ""
    owner_name: str = ""
    #: the object's pod selector as a label selector string ("" when it has none or cannot be written so)
    selector: str = ""


def record_of(obj: Any, kind: RecordedKind = DEPLOYMENT) -> SurgeRecord | None:
    labels = obj.metadata.labels or {}
    if SURGE_ORIGINAL not in labels:
        return None
    try:
        original, added = int(labels[SURGE_ORIGINAL]), int(labels.get(SURGE_ADDED, "0"))
    except ValueError:
        original, added = -1, 0
    owner = next((ref for ref in obj.metadata.owner_references or [] if ref.controller), None)
    return SurgeRecord(
        kind=kind.kind,
        namespace=obj.metadata.namespace,
        name=obj.metadata.name,
        original=original,
        added=added,
        drain=labels.get(SURGED_BY, ""),
        owner_kind=owner.kind if owner is not None else "",
        owner_name=owner.name if owner is not None else "",
        selector=selector_text(obj.spec.selector if obj.spec is not None else None),
    )


#: the operators of a label selector's expressions (a selector with any other is not written, see below)
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def selector_text(selector: Any) -> str:
    """A ``V1LabelSelector`` as the string ``label_selector=`` takes; "" for none, and for an operator this does
    not know (nothing is listed by a selector that would pick more than the object's pods)."""
    if selector is None:
        return ""
    expressions = [
        {"key": e.key, "operator": e.operator, "values": sorted(e.values or [])}
        for e in selector.match_expressions or []
    ]
    if any(e["operator"] not in _OPERATORS for e in expressions):
        return ""
    return selector_to_string({"matchLabels": selector.match_labels or {}, "matchExpressions": expressions})


class CountChanged(Exception):
    """The count is not the one this drain set (or read): somebody else changed it."""


def _json_patch(
    cluster: Cluster, kind: RecordedKind, namespace: str, name: str, operations: list[dict[str, Any]]
) -> Any:
    try:
        # A list body is sent as application/json-patch+json; a failed "test" is answered 422.
        return kind.patch(cluster, namespace, name, operations)
    except ApiException as err:
        if err.status in (409, 422):
            raise CountChanged(f"{kind.kind.lower()} {namespace}/{name}") from err
        raise


def begin(cluster: Cluster, obj: Any, *, added: int, drain: str, kind: RecordedKind = DEPLOYMENT) -> Any:
    """Record the original count and raise it by ``added``, in one request; CountChanged if it moved."""
    original = obj.spec.replicas if obj.spec.replicas is not None else 1
    labels_exist = obj.metadata.labels is not None
    operations: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": obj.metadata.resource_version}
    ]
    if not labels_exist:
        operations.append({"op": "add", "path": "/metadata/labels", "value": {}})
    operations += [
        {"op": "add", "path": _pointer(SURGE_ORIGINAL), "value": str(original)},
        {"op": "add", "path": _pointer(SURGE_ADDED), "value": str(added)},
        {"op": "add", "path": _pointer(SURGED_BY), "value": drain},
        {"op": "replace", "path": "/spec/replicas", "value": original + added},
    ]
    return _json_patch(cluster, kind, obj.metadata.namespace, obj.metadata.name, operations)


def begin_unless_moved(
    cluster: Cluster, obj: Any, *, original: int, added: int, drain: str, kind: RecordedKind = DEPLOYMENT
) -> Any | None:
    """Record and raise (``begin``); the object as it was raised, or None if its count or record changed
    since the drain looked. Its controller writing its status meanwhile (a scale just restored is still
    settling) changes only the resourceVersion: read again and retry."""
    for _ in range(5):
        try:
            begin(cluster, obj, added=added, drain=drain, kind=kind)
            return obj
        except CountChanged:
            try:
                obj = kind.read(cluster, obj.metadata.namespace, obj.metadata.name)
            except ApiException as err:
                if err.status == 404:
                    return None
                raise
            replicas = obj.spec.replicas if obj.spec.replicas is not None else 1
            if replicas != original or record_of(obj, kind) is not None:
                return None
    return None


def set_count(
    cluster: Cluster, namespace: str, name: str, *, expected: int, replicas: int, kind: RecordedKind = DEPLOYMENT
) -> Any:
    """Move the count from ``expected`` (what this drain last set) to ``replicas``; CountChanged otherwise."""
    return _json_patch(
        cluster,
        kind,
        namespace,
        name,
        [
            {"op": "test", "path": "/spec/replicas", "value": expected},
            {"op": "replace", "path": "/spec/replicas", "value": replicas},
        ],
    )


def _remove_labels(obj: Any) -> list[dict[str, Any]]:
    labels = obj.metadata.labels or {}
    return [{"op": "remove", "path": _pointer(key)} for key in SURGE_LABELS if key in labels]


@dataclass(frozen=True, kw_only=True)
class Restored:
    record: SurgeRecord
    #: the count now
    replicas: int
    #: False when somebody else had changed the count: it was left alone, only the record removed
    count_restored: bool
    #: gone: the object was deleted meanwhile
    gone: bool = False


def restore(
    cluster: Cluster, namespace: str, name: str, *, expected: int | None = None, kind: RecordedKind = DEPLOYMENT
) -> Restored | None:
    """Put the recorded count back and remove the record; None when there is no record.

    ``expected``: the count this drain last set; None (a leftover of a killed
    drain, whose last step is unknown) accepts any count between the original
    and original + added, the only counts a surge ever sets; -1 only removes the record.
    """
    for _ in range(5):
        try:
            obj = kind.read(cluster, namespace, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        record = record_of(obj, kind)
        if record is None:
            return None
        current = obj.spec.replicas if obj.spec.replicas is not None else 1
        ours = (
            current == expected
            if expected is not None
            else record.original >= 0 and record.original <= current <= record.original + record.added
        )
        operations = [{"op": "test", "path": "/metadata/resourceVersion", "value": obj.metadata.resource_version}]
        operations += _remove_labels(obj)
        if ours and current != record.original:
            operations.append({"op": "replace", "path": "/spec/replicas", "value": record.original})
        try:
            _json_patch(cluster, kind, namespace, name, operations)
        except CountChanged:
            continue  # changed between our read and our write: read again
        return Restored(record=record, replicas=record.original if ours else current, count_restored=ours)
    raise CountChanged(f"{kind.kind.lower()} {namespace}/{name}")


def list_records(cluster: Cluster, kind: RecordedKind = DEPLOYMENT) -> list[SurgeRecord]:
    """Every surge record on objects of ``kind`` in the cluster (one request): what killed drains left behind."""
    records = [record_of(obj, kind) for obj in kind.list_labelled(cluster, SURGE_ORIGINAL)]
    return sorted((r for r in records if r is not None), key=lambda r: (r.namespace, r.name))
