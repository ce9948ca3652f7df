"""A managed workload's ReplicaSets: named NAME-HASH, owned by the record, annotated like the controller's.

Annotations are the Deployment controller's (``deployment.kubernetes.io/revision``,
``desired-replicas``, ``max-replicas``, ``revision-history``) so that tools
reading them (kubectl rollout history, dashboards) understand ours too. Which
ReplicaSet runs the workload's template is decided as the controller decides
it: by comparing templates as the API server stored them (``server_defaults``);
our ``rollout-plus.kubectl.io/template-hash`` annotation records that identity.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.jobs.events.rollout import ReplicaSetRow
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import SURGE_LABELS, WORKLOAD_LABEL
from kubectl_rollout.kube.serialization import to_plain
from kubectl_rollout.rollout.plan import ManagedReplicaSet, annotations_to_copy, revision_history, surge_annotation
from kubectl_rollout.rollout.record import Record
from kubectl_rollout.rollout.server_defaults import defaulted_template
from kubectl_rollout.rollout.state import REPLICA_FAILURE, Condition, ReplicaSetView
from kubectl_rollout.rollout.template_hash import HASH_LABEL, pod_template_hash, template_identity, without_hash_label

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
TEMPLATE_HASH = "rollout-plus.kubectl.io/template-hash"
#: the template exactly as applied (the ReplicaSet's own copy is defaulted by the API server); undo restores it
TEMPLATE = "rollout-plus.kubectl.io/template"


def current_identity(cluster: Cluster, record: Record) -> str:
    """Identifies the workload's template among its ReplicaSets: its identity as the API server defaults it.

    Records written before the defaulted template was kept, or while the server would not default it, ask the
    server now (once per process and template).
    """
    template = record.defaulted_template or defaulted_template(cluster, record.spec)
    # The server would not default it (see defaulted_template): the template as written is the best we know.
    return template_identity(template if template is not None else record.spec.template)


def _int(annotations: Mapping[str, str], key: str) -> int | None:
    try:
        return int(annotations[key])
    except (KeyError, ValueError):
        return None


class TemplateIdentities:
    """Each ReplicaSet's template identity, worked out once per spec it had (uid, generation), not at every pass.

    Working it out turns the template's model into JSON and hashes it: two thirds of
    a driver's CPU when it did so for every ReplicaSet at every pass (about 640
    passes in an image change of 100 replicas).
    """

    def __init__(self) -> None:
        self._known: dict[tuple[str, int], str] = {}

    def of(self, rs: Any) -> str:
        key = (rs.metadata.uid or rs.metadata.name, rs.metadata.generation or 0)
        identity = self._known.get(key)
        if identity is None:
            identity = self._known[key] = template_identity(template_without_hash(rs))
        return identity


def to_managed(rs: Any, *, identities: TemplateIdentities | None = None) -> ManagedReplicaSet:
    """``identities``: the driver's, kept from pass to pass."""
    annotations = rs.metadata.annotations or {}
    status = rs.status
    return ManagedReplicaSet(
        name=rs.metadata.name,
        # The template the ReplicaSet runs, as the API server stored it: compared, not the one it was applied as.
        template_hash=(identities.of(rs) if identities is not None else template_identity(template_without_hash(rs))),
        replicas=rs.spec.replicas or 0,
        current=(status.replicas or 0) if status else 0,
        available=(status.available_replicas or 0) if status else 0,
        created=rs.metadata.creation_timestamp.timestamp() if rs.metadata.creation_timestamp else 0.0,
        revision=_int(annotations, REVISION) or 0,
        desired_replicas=_int(annotations, DESIRED_REPLICAS),
        max_replicas=_int(annotations, MAX_REPLICAS),
        annotations=dict(annotations),
        min_ready_seconds=rs.spec.min_ready_seconds or 0,
        deleting=rs.metadata.deletion_timestamp is not None,
        unobserved=(rs.metadata.generation or 0) > ((status.observed_generation or 0) if status else 0),
    )


def to_view(rs: Any) -> ReplicaSetView:
    status = rs.status
    failure = None
    for cond in (status.conditions or []) if status else []:
        if cond.type == "ReplicaFailure":
            # ReplicaSetToDeploymentCondition: whatever its status; both times are its transition time.
            since = cond.last_transition_time.timestamp() if cond.last_transition_time else 0.0
            failure = Condition(
                type=REPLICA_FAILURE,
                status=cond.status,
                reason=cond.reason or "",
                message=cond.message or "",
                last_update_time=since,
                last_transition_time=since,
            )
    return ReplicaSetView(
        name=rs.metadata.name,
        replicas=rs.spec.replicas or 0,
        current=(status.replicas or 0) if status else 0,
        ready=(status.ready_replicas or 0) if status else 0,
        available=(status.available_replicas or 0) if status else 0,
        failure=failure,
    )


def rows(replica_sets: list[Any], new_name: str) -> tuple[ReplicaSetRow, ...]:
    """The workload's ReplicaSets as progress events carry them, newest revision first."""
    found = []
    for rs in replica_sets:
        status = rs.status
        found.append(
            ReplicaSetRow(
                name=rs.metadata.name,
                revision=_int(rs.metadata.annotations or {}, REVISION) or 0,
                desired=rs.spec.replicas or 0,
                current=(status.replicas or 0) if status else 0,
                ready=(status.ready_replicas or 0) if status else 0,
                available=(status.available_replicas or 0) if status else 0,
                updated=rs.metadata.name == new_name,
            )
        )
    return tuple(sorted(found, key=lambda row: (-row.revision, row.name)))


def owned(replica_sets: list[Any], record: Record) -> list[Any]:
    return [
        rs
        for rs in replica_sets
        if any(ref.uid == record.uid and ref.controller for ref in rs.metadata.owner_references or [])
    ]


def pod_template_hash_of(rs: Any) -> str:
    return str((rs.metadata.labels or {}).get(HASH_LABEL, ""))


def _manifest(record: Record, replicas: int, revision: int, collision_count: int, identity: str) -> dict[str, Any]:
    spec = record.spec
    pth = pod_template_hash(spec.template, collision_count)
    template = copy.deepcopy(dict(spec.template))
    template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pth
    selector = copy.deepcopy(dict(spec.selector))
    selector.setdefault("matchLabels", {})[HASH_LABEL] = pth
    annotations = {
        REVISION: str(revision),
        DESIRED_REPLICAS: str(spec.replicas),
        MAX_REPLICAS: str(surge_annotation(spec)),
        TEMPLATE_HASH: identity,
        TEMPLATE: json.dumps(spec.template, sort_keys=True, separators=(",", ":")),
    }
    annotations.update(annotations_to_copy(spec.annotations, annotations))
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{spec.name}-{pth}",
            "namespace": spec.namespace,
            "labels": {**template["metadata"]["labels"], WORKLOAD_LABEL: spec.name},
            "annotations": annotations,
            "ownerReferences": [to_plain(record.owner_reference())],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": spec.min_ready_seconds,
            "selector": selector,
            "template": template,
        },
    }


def _server_message(err: ApiException) -> str:
    try:
        return str(json.loads(err.body or "").get("message") or err.reason)
    except (TypeError, ValueError, AttributeError):
        return str(err.body or err.reason)


class ReplicaSetCreateFailed(Exception):
    """The API server refused the new ReplicaSet itself (quota, admission, validation): the controller reports it
    as Progressing False / ReplicaSetCreateError and tries again on the next sync."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f'Failed to create new replica set "{name}": {message}')
        self.name = name


@dataclass(frozen=True, kw_only=True)
class Creation:
    replica_set: Any
    #: the collision count it was created with
    collision_count: int
    #: it was there already, ours: the driver's ReplicaSet watch had not delivered its own earlier create yet
    already_there: bool


def create(cluster: Cluster, record: Record, *, replicas: int, revision: int, collision_count: int) -> Creation:
    """Create the new ReplicaSet; on a name taken by another template, count a collision and retry."""
    identity = current_identity(cluster, record)
    while True:
        body = _manifest(record, replicas, revision, collision_count, identity)
        try:
            created = call_with_retry(cluster.apps.create_namespaced_replica_set, record.namespace, body)
            return Creation(replica_set=created, collision_count=collision_count, already_there=False)
        except ApiException as err:
            if err.status != 409:
                message = _server_message(err)
                if err.status in (400, 403, 422) and "cannot create resource" not in message:
                    # Refused for what it is (a quota, an admission webhook, validation), not for who asks.
                    raise ReplicaSetCreateFailed(body["metadata"]["name"], message) from err
                raise
        existing = call_with_retry(cluster.apps.read_namespaced_replica_set, body["metadata"]["name"], record.namespace)
        ours = to_managed(existing).template_hash == identity and owned([existing], record)
        if ours:
            return Creation(replica_set=existing, collision_count=collision_count, already_there=True)
        collision_count += 1


def scale(cluster: Cluster, record: Record, name: str, replicas: int) -> None:
    """Set a ReplicaSet's count, with the controller's desired-/max-replicas annotations.

    It also drops a ``drain --surge`` record left on it (``kube.record_names``): a driver holds the workload's
    Lease, which a live surging drain would hold, so the record is a killed drain's, and the count the driver
    sets now is the one to keep; a later restore then finds nothing to put back.
    """
    patch = {
        "metadata": {
            "annotations": {
                DESIRED_REPLICAS: str(record.spec.replicas),
                MAX_REPLICAS: str(surge_annotation(record.spec)),
            },
            # null deletes a label in a merge patch, and is a no-op where it is absent
            "labels": dict.fromkeys(SURGE_LABELS),
        },
        "spec": {"replicas": replicas},
    }
    call_with_retry(cluster.apps.patch_namespaced_replica_set, name, record.namespace, patch)


def copy_annotations(cluster: Cluster, record: Record, name: str, annotations: Mapping[str, str]) -> None:
    patch = {"metadata": {"annotations": dict(annotations)}}
    call_with_retry(cluster.apps.patch_namespaced_replica_set, name, record.namespace, patch)


def set_min_ready_seconds(cluster: Cluster, record: Record, name: str, seconds: int) -> None:
    call_with_retry(
        cluster.apps.patch_namespaced_replica_set, name, record.namespace, {"spec": {"minReadySeconds": seconds}}
    )


def set_revision(cluster: Cluster, record: Record, rs: Any, revision: int) -> None:
    """Undo: an old ReplicaSet becomes the newest revision, remembering the ones it held."""
    annotations = rs.metadata.annotations or {}
    changed = {REVISION: str(revision), **annotations_to_copy(record.spec.annotations, annotations)}
    if annotations.get(REVISION):
        history = revision_history(annotations.get(REVISION_HISTORY, ""), annotations[REVISION])
        if history is not None:
            changed[REVISION_HISTORY] = history
    patch: dict[str, Any] = {"metadata": {"annotations": changed}}
    call_with_retry(cluster.apps.patch_namespaced_replica_set, rs.metadata.name, record.namespace, patch)


def delete(cluster: Cluster, record: Record, name: str) -> None:
    try:
        call_with_retry(cluster.apps.delete_namespaced_replica_set, name, record.namespace)
    except ApiException as err:
        if err.status != 404:
            raise


def template_of(rs: Any) -> dict[str, Any]:
    """A ReplicaSet's pod template as it was applied (for undo and history)."""
    kept = (rs.metadata.annotations or {}).get(TEMPLATE)
    if kept:
        return dict(json.loads(kept))
    return template_without_hash(rs)


def template_without_hash(rs: Any) -> dict[str, Any]:
    """A ReplicaSet's pod template as its workload's spec holds it: without the hash label added to it."""
    return without_hash_label(to_plain(rs.spec.template))
