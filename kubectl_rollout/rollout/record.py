"""A managed workload's record in the cluster: the ConfigMap ``rollout-plus.NAME``.

The record holds the spec (the Deployment manifest as applied), a generation
counter and the status, and it is the controller owner of the workload's
ReplicaSets: the server's Deployment controller never claims them, and
deleting the record garbage-collects everything. Nothing lives on the client,
so any driver on any machine can pick a rollout up where another left it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.record_names import WORKLOAD_LABEL, record_name
from kubectl_rollout.rollout.server_defaults import defaulted_template
from kubectl_rollout.rollout.spec import InvalidManifest, WorkloadSpec, parse_workload
from kubectl_rollout.rollout.state import RolloutStatus, Target

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "kubectl-rollout-plus"
CHANGE_CAUSE = "kubernetes.io/change-cause"
#: the record's keys a spec change carries over as they are: a canary's state (rollout/canary/) outlives the
#: change that ends it (an undo returns to its stable ReplicaSet; a new change replaces its stable one)
KEPT_ACROSS_SPEC_CHANGES = ("canary",)
#: progressDeadlineSeconds of math.MaxInt32 means no deadline at all (HasProgressDeadline)
NO_DEADLINE = 2**31 - 1


class WorkloadNotFound(UserFacingError):
    pass


@dataclass(frozen=True)
class Record:
    config_map: Any
    manifest: dict[str, Any]
    spec: WorkloadSpec
    generation: int
    status: RolloutStatus
    #: the pod template as the API server defaults it (None in records written before it was kept)
    defaulted_template: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    @property
    def uid(self) -> str:
        return str(self.config_map.metadata.uid)

    @property
    def resource_version(self) -> str:
        return str(self.config_map.metadata.resource_version)

    def target(self) -> Target:
        """What the status is measured against."""
        spec = self.spec
        return Target(
            name=spec.name,
            generation=self.generation,
            replicas=spec.replicas,
            max_surge=spec.max_surge,
            max_unavailable=spec.max_unavailable,
            progress_deadline_seconds=None
            if spec.progress_deadline_seconds == NO_DEADLINE
            else spec.progress_deadline_seconds,
            paused=spec.paused,
            rolling=spec.rolling,
        )

    def owner_reference(self) -> client.V1OwnerReference:
        return client.V1OwnerReference(
            api_version="v1",
            kind="ConfigMap",
            name=self.config_map.metadata.name,
            uid=self.uid,
            controller=True,
            block_owner_deletion=True,
        )


def from_config_map(config_map: Any) -> Record:
    data = config_map.data or {}
    manifest = json.loads(data["manifest"])
    return Record(
        config_map=config_map,
        manifest=manifest,
        spec=parse_workload(manifest, default_namespace=config_map.metadata.namespace),
        generation=int(data.get("generation", "1")),
        status=RolloutStatus.from_dict(json.loads(data.get("status") or "{}")),
        defaulted_template=json.loads(data["template"]) if data.get("template") else None,
    )


def read(cluster: Cluster, namespace: str, name: str) -> Record:
    try:
        config_map = call_with_retry(cluster.core.read_namespaced_config_map, record_name(name), namespace)
    except ApiException as err:
        if err.status == 404:
            raise _not_found(namespace, name) from err
        raise
    return from_config_map(config_map)


def _not_found(namespace: str, name: str) -> WorkloadNotFound:
    return WorkloadNotFound(
        f'managed workload "{name}" not found in namespace "{namespace}" (no ConfigMap {record_name(name)}); '
        "create it with kubectl rollout-plus apply -f, or adopt a Deployment with adopt deployment/NAME"
    )


def exists(cluster: Cluster, namespace: str, name: str) -> bool:
    try:
        read(cluster, namespace, name)
    except WorkloadNotFound:
        return False
    return True


def _body(
    manifest: dict[str, Any],
    generation: int,
    status: RolloutStatus,
    spec: WorkloadSpec,
    template: dict[str, Any] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {
            "name": record_name(spec.name),
            "namespace": spec.namespace,
            "labels": {MANAGED_BY: MANAGER, WORKLOAD_LABEL: spec.name},
        },
        "data": {
            "manifest": json.dumps(manifest, sort_keys=True),
            "generation": str(generation),
            "status": json.dumps(status.as_dict(), sort_keys=True),
        },
    }
    if template is not None:
        body["data"]["template"] = json.dumps(template, sort_keys=True)
    return body


def next_generation(previous: dict[str, Any], manifest: dict[str, Any], generation: int) -> int:
    """The generation after storing ``manifest`` over ``previous``, as the API server counts a Deployment's
    (registry/apps/deployment/strategy.go PrepareForUpdate): one more when the spec changed or when the
    annotations did, since annotations are copied to the ReplicaSets; an empty map is the same as none."""

    def canonical(value: Any) -> str:
        return json.dumps(value or {}, sort_keys=True)

    spec_changed = canonical(previous.get("spec")) != canonical(manifest.get("spec"))
    annotations_changed = canonical(previous.get("metadata", {}).get("annotations")) != canonical(
        manifest.get("metadata", {}).get("annotations")
    )
    return generation + 1 if spec_changed or annotations_changed else generation


def save_spec(cluster: Cluster, manifest: dict[str, Any], spec: WorkloadSpec, previous: Record | None) -> Record:
    """Create the record, or store a new spec; the generation grows when the spec or the annotations changed."""
    if previous is None:
        body = _body(manifest, 1, RolloutStatus(), spec, defaulted_template(cluster, spec))
        created = call_with_retry(cluster.core.create_namespaced_config_map, spec.namespace, body)
        return from_config_map(created)
    _check_selector_unchanged(previous.spec, spec)
    same_template = json.dumps(previous.spec.template, sort_keys=True) == json.dumps(spec.template, sort_keys=True)
    template: dict[str, Any] | None
    if same_template and previous.defaulted_template is not None:
        template = previous.defaulted_template
    else:
        template = defaulted_template(cluster, spec)
    generation = next_generation(previous.manifest, manifest, previous.generation)
    body = _body(manifest, generation, previous.status, spec, template)
    body["metadata"]["resourceVersion"] = previous.resource_version
    for key in KEPT_ACROSS_SPEC_CHANGES:
        kept = (previous.config_map.data or {}).get(key)
        if kept is not None:
            body["data"][key] = kept
    try:
        replaced = call_with_retry(
            cluster.core.replace_namespaced_config_map, record_name(spec.name), spec.namespace, body
        )
    except ApiException as err:
        if err.status == 404:  # deleted since it was read
            raise _not_found(spec.namespace, spec.name) from err
        raise
    return from_config_map(replaced)


def _selector(spec: WorkloadSpec) -> str:
    """The selector as canonical JSON; empty matchLabels / matchExpressions say nothing, as if left out."""
    return json.dumps({k: v for k, v in spec.selector.items() if v}, sort_keys=True)


def _check_selector_unchanged(previous: WorkloadSpec, spec: WorkloadSpec) -> None:
    """spec.selector is immutable in apps/v1: the API server refuses to change a Deployment's, and so do we.

    The ReplicaSets and pods of the workload were made to match the old
    selector; a new one would orphan them (or adopt pods that are not ours).
    """
    if _selector(previous) == _selector(spec):
        return
    raise InvalidManifest(
        f'Deployment "{spec.name}" is invalid: spec.selector: Invalid value: {_selector(spec)}: field is immutable '
        f"(the workload's selector is {_selector(previous)}); nothing was changed. To change the selector, "
        f"delete the workload with kubectl rollout-plus delete {spec.name} -n {spec.namespace} and apply it again"
    )


class StaleRecord(Exception):
    """The record changed since it was read: a status computed from it would overwrite newer news."""


def save_status(cluster: Cluster, record: Record, status: RolloutStatus) -> Record:
    """Write the status alone (a merge patch of one key), only over the version it was computed from.

    The resourceVersion in the patch is a precondition: a driver reading the
    record from a watch cache that lags its own last write gets 409 instead of
    writing an older status back (StaleRecord), and waits for the cache.
    """
    return patch_data(cluster, record, {"status": json.dumps(status.as_dict(), sort_keys=True)})


def patch_data(cluster: Cluster, record: Record, data: dict[str, str | None]) -> Record:
    """Merge ``data`` into the record's (None removes a key), over the version read: StaleRecord when it changed."""
    patch = {"metadata": {"resourceVersion": record.resource_version}, "data": data}
    try:
        patched = call_with_retry(
            cluster.core.patch_namespaced_config_map, record_name(record.name), record.namespace, patch
        )
    except ApiException as err:
        if err.status == 409:
            raise StaleRecord(record.name) from err
        raise
    return from_config_map(patched)
