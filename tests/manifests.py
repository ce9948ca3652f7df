"""Small builders for the objects tests create, as plain dicts the client accepts.

Pod behaviour under kwok is chosen by annotation (hack/kwok/stages.yaml):
``rollout-plus.test/ready-after``, ``rollout-plus.test/behaviour``, ``rollout-plus.test/complete-after``,
``rollout-plus.test/on-sigterm``.
"""

from __future__ import annotations

from typing import Any

IMAGE = "registry.example/app:v1"
READY_AFTER = "rollout-plus.test/ready-after"
BEHAVIOUR = "rollout-plus.test/behaviour"
RESTART_EVERY = "rollout-plus.test/restart-every"
#: with BEHAVIOUR succeed or fail: the pod ends after this long ("4s"; default at once)
COMPLETE_AFTER = "rollout-plus.test/complete-after"
ON_SIGTERM = "rollout-plus.test/on-sigterm"


POOL_LABEL = "rollout-plus.test/pool"


def dedicated_node(name: str, *, pool: str) -> dict[str, Any]:
    """A kwok node only the pods of ``placement(pool)`` may run on."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok", POOL_LABEL: pool},
        },
        "spec": {"taints": [{"key": POOL_LABEL, "value": pool, "effect": "NoSchedule"}]},
    }


def placement(pool: str, node: str | None = None) -> dict[str, Any]:
    """Pod spec fields that put a pod on the dedicated nodes of ``pool`` (or on one of them)."""
    selector = {POOL_LABEL: pool}
    if node is not None:
        selector["kubernetes.io/hostname"] = node
    return {
        "nodeSelector": selector,
        "tolerations": [{"key": POOL_LABEL, "operator": "Equal", "value": pool, "effect": "NoSchedule"}],
    }


def pod_template(
    app: str,
    annotations: dict[str, str] | None = None,
    image: str = IMAGE,
    spec: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app, **(labels or {})}, "annotations": annotations or {}},
        "spec": {"containers": [{"name": "app", "image": image}], "terminationGracePeriodSeconds": 30, **(spec or {})},
    }


def deployment(
    name: str,
    *,
    replicas: int,
    annotations: dict[str, str] | None = None,
    strategy: dict[str, Any] | None = None,
    min_ready_seconds: int = 0,
    pod_spec: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": pod_template(name, annotations, spec=pod_spec, labels=labels),
        "minReadySeconds": min_ready_seconds,
    }
    if strategy is not None:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


def statefulset(
    name: str,
    *,
    replicas: int,
    annotations: dict[str, str] | None = None,
    pod_spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """StatefulSet ``name``, its pods labelled app=NAME and Ready 1 s after they start unless ``annotations``
    say otherwise (``pod_spec``: e.g. ``placement(pool)``)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": pod_template(name, {READY_AFTER: "1s"} if annotations is None else annotations, spec=pod_spec),
        },
    }


def daemonset(name: str, *, pod_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": pod_template(name, spec=pod_spec)},
    }


def pdb(
    name: str,
    *,
    app: str,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    unhealthy_pod_eviction_policy: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if unhealthy_pod_eviction_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_pod_eviction_policy
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec}


def pod(
    name: str,
    *,
    annotations: dict[str, str] | None = None,
    restart_policy: str = "Always",
    grace_period: int = 30,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    template = pod_template(name, annotations, spec=spec)
    template["metadata"]["name"] = name
    template["spec"]["restartPolicy"] = restart_policy
    template["spec"]["terminationGracePeriodSeconds"] = grace_period
    return {"apiVersion": "v1", "kind": "Pod", **template}


def eviction(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
