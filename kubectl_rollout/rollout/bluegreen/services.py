"""The active and preview Services of a blue-green workload: checked before anything is written, and switched
by adding the ReplicaSet's ``pod-template-hash`` to their selector.

A Service selects a ReplicaSet's pods when its selector is a part of the
workload's pod labels (``app: web``) plus that ReplicaSet's
``pod-template-hash``, the label every pod of a managed workload carries
(``rollout.template_hash``). Switching is one merge patch of that one key;
the rest of the selector is the user's and is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.rollout.bluegreen.format import (
    ACTIVE_SERVICE,
    PREVIEW_SERVICE,
    BlueGreen,
    InvalidBlueGreen,
    blue_green_of,
)
from kubectl_rollout.rollout.spec import parse_workload
from kubectl_rollout.rollout.template_hash import HASH_LABEL


class ServiceMissing(UserFacingError):
    """A blue-green workload's Service is gone while it is driven: nothing more is switched."""


def _labels(labels: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items())) or "none"


def _read(cluster: Cluster, namespace: str, name: str) -> Any | None:
    try:
        return call_with_retry(cluster.core.read_namespaced_service, name, namespace)
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def check_manifest(cluster: Cluster, manifest: Mapping[str, Any]) -> None:
    """A manifest about to be applied: when it asks for blue-green, its settings and its Services are checked
    (``check_services``), before anything is written."""
    spec = parse_workload(manifest, default_namespace=cluster.namespace)
    settings = blue_green_of(spec.annotations, workload=spec.name, strategy_type=spec.strategy)
    if settings is not None:
        check_services(cluster, settings=settings, namespace=spec.namespace, workload=spec.name, template=spec.template)


def check_services(cluster: Cluster, *, settings: BlueGreen, namespace: str, workload: str, template: Any) -> None:
    """Before any write: each Service exists in the namespace and its selector (the pod-template-hash aside) is
    a part of the workload's pod labels; InvalidBlueGreen (exit 2) naming the workload, the Service and what to
    do otherwise."""
    pod_labels: Mapping[str, str] = ((template or {}).get("metadata") or {}).get("labels") or {}
    for key, name in ((ACTIVE_SERVICE, settings.active_service), (PREVIEW_SERVICE, settings.preview_service)):
        if name is None:
            continue
        role = "active" if key == ACTIVE_SERVICE else "preview"
        service = _read(cluster, namespace, name)
        if service is None:
            raise InvalidBlueGreen(
                f'workload "{workload}": its {role} Service "{name}" ({key}) does not exist in namespace '
                f'"{namespace}"; create it with a selector on the workload\'s pod labels ({_labels(pod_labels)}), '
                "or name another one; nothing was changed"
            )
        selector = dict(service.spec.selector or {})
        selector.pop(HASH_LABEL, None)
        if not selector:
            raise InvalidBlueGreen(
                f'workload "{workload}": its {role} Service "{name}" has no selector (beside {HASH_LABEL}): its '
                f"endpoints are not chosen by labels; give it a selector on the workload's pod labels "
                f"({_labels(pod_labels)}); nothing was changed"
            )
        foreign = {key: value for key, value in selector.items() if pod_labels.get(key) != value}
        if foreign:
            raise InvalidBlueGreen(
                f'workload "{workload}": its {role} Service "{name}" selects {_labels(foreign)}, which the '
                f"workload's pods (labels {_labels(pod_labels)}) do not carry, so it would never select them; "
                "make its selector a part of the pod labels; nothing was changed"
            )


def _missing(*, namespace: str, service: str, workload: str) -> ServiceMissing:
    return ServiceMissing(
        f'workload "{workload}": its Service "{service}" is gone from namespace "{namespace}"; create it '
        "again (the rollout goes on from where it stands), or remove the blue-green annotations"
    )


def selected_hash(cluster: Cluster, *, namespace: str, service: str, workload: str) -> str:
    """The pod-template-hash the Service selects ("" when it selects every pod of the workload)."""
    found = _read(cluster, namespace, service)
    if found is None:
        raise _missing(namespace=namespace, service=service, workload=workload)
    return str((found.spec.selector or {}).get(HASH_LABEL, ""))


def select(cluster: Cluster, *, namespace: str, service: str, workload: str, pod_template_hash: str) -> None:
    """Point the Service at the pods carrying ``pod_template_hash`` (one key of its selector)."""
    patch = {"spec": {"selector": {HASH_LABEL: pod_template_hash}}}
    try:
        call_with_retry(cluster.core.patch_namespaced_service, service, namespace, patch)
    except ApiException as err:
        if err.status == 404:
            raise _missing(namespace=namespace, service=service, workload=workload) from err
        raise
