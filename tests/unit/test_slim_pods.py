"""What a drain keeps of a pod (``slim_pod``) answers every reader of the drain as the pod's model did.

Each case is a pod's JSON as the API sends it (fields it omits left out);
each is read both ways, as the client's model and as a ``SlimPod``, by every
function the drain calls on its pods, and the answers compared.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from kubectl_rollout.campaign import pod_rules
from kubectl_rollout.drain import pod_filters
from kubectl_rollout.drain.pod_filters import DaemonSetLookup, FilterOptions, judge, make_filters
from kubectl_rollout.drain.surge import first_to_go
from kubectl_rollout.eviction.order import is_critical, priority_of
from kubectl_rollout.eviction.pdb_pods import unhealthy_since, why_unhealthy
from kubectl_rollout.kube.label_selectors import selector_matches
from kubectl_rollout.kube.pods import (
    controller_of,
    deleted_long_ago,
    deletion_progress,
    is_available,
    is_daemonset_pod,
    is_finished,
    is_ready,
    qualified,
    ready_since,
)
from kubectl_rollout.kube.slim_pods import KEPT_ANNOTATIONS, SlimPod, slim_pod

NOW = datetime(2026, 11, 26, 19, 0, 0, tzinfo=UTC)
REPLICA_SET = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4f", "uid": "rs-uid", "controller": True}
DAEMON_SET = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-uid", "controller": True}
READY = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-26T18:59:30Z"}


def _pod(
    *,
    metadata: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-5d4f-abcde", "namespace": "shop", "uid": "pod-uid", **(metadata or {})},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "registry.example/web:v2"}]}
        | (spec or {}),
    }
    if status is not None:
        pod["status"] = status
    return pod


CASES = {
    "running, Ready, of a ReplicaSet": _pod(
        metadata={
            "labels": {"app": "web", "pod-template-hash": "5d4f"},
            "ownerReferences": [REPLICA_SET],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}" * 100},
        },
        spec={"priority": 1000, "priorityClassName": "high"},
        status={"phase": "Running", "conditions": [READY]},
    ),
    "no status": _pod(metadata={"ownerReferences": [REPLICA_SET]}),
    "empty status, no phase yet": _pod(status={}),
    "not Ready": _pod(status={"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}),
    "Ready with no transition time": _pod(
        status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    ),
    "bare, no labels, no owners": _pod(status={"phase": "Running"}),
    "an owner that is not the controller": _pod(
        metadata={"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c-uid"}]},
        status={"phase": "Running"},
    ),
    "DaemonSet pod": _pod(metadata={"ownerReferences": [DAEMON_SET]}, status={"phase": "Running"}),
    "finished DaemonSet pod": _pod(metadata={"ownerReferences": [DAEMON_SET]}, status={"phase": "Succeeded"}),
    "mirror pod": _pod(metadata={"annotations": {"kubernetes.io/config.mirror": "abc"}}, status={"phase": "Running"}),
    "emptyDir volume": _pod(
        metadata={"ownerReferences": [REPLICA_SET]},
        spec={"volumes": [{"name": "config", "configMap": {"name": "c"}}, {"name": "scratch", "emptyDir": {}}]},
        status={"phase": "Running"},
    ),
    "emptyDir with a medium and a limit": _pod(
        spec={"volumes": [{"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]},
        status={"phase": "Failed"},
    ),
    "other volumes only": _pod(spec={"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]}),
    "deleted long ago": _pod(
        metadata={"deletionTimestamp": "2026-11-26T18:50:00Z", "ownerReferences": [REPLICA_SET]},
        status={"phase": "Running", "conditions": [READY]},
    ),
    "deleted just now": _pod(
        metadata={"deletionTimestamp": "2026-11-26T18:59:59Z"}, status={"phase": "Running", "conditions": [READY]}
    ),
    "system critical": _pod(spec={"priority": 2_000_001_000, "priorityClassName": "system-node-critical"}),
    "critical class, no priority": _pod(spec={"priorityClassName": "system-cluster-critical"}),
    "karpenter do-not-disrupt": _pod(
        metadata={"annotations": {"karpenter.sh/do-not-disrupt": "true", "other": "x"}}, status={"phase": "Running"}
    ),
    "Cluster API drain label": _pod(
        metadata={"labels": {"cluster.x-k8s.io/drain": "skip"}}, status={"phase": "Running"}
    ),
    "Cluster API drain annotation": _pod(
        metadata={"annotations": {"cluster.x-k8s.io/drain": "wait-completed"}}, status={"phase": "Pending"}
    ),
    "our drain rule, finished": _pod(
        metadata={"annotations": {"rollout-plus.io/drain": "do-not-disrupt"}}, status={"phase": "Succeeded"}
    ),
    "created, not Ready yet": _pod(
        metadata={"creationTimestamp": "2026-11-26T18:58:00Z"},
        status={"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
    ),
    "created, Ready since": _pod(
        metadata={"creationTimestamp": "2026-11-26T18:58:00Z"}, status={"phase": "Running", "conditions": [READY]}
    ),
    "crash-looping container after a running one": _pod(
        status={
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {
                    "name": "side",
                    "ready": True,
                    "restartCount": 0,
                    "image": "i",
                    "imageID": "",
                    "state": {"running": {}},
                },
                {
                    "name": "app",
                    "ready": False,
                    "restartCount": 4,
                    "image": "i",
                    "imageID": "",
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                },
            ],
        }
    ),
    "init container waiting, no reason": _pod(
        status={
            "phase": "Pending",
            "initContainerStatuses": [
                {
                    "name": "init",
                    "ready": False,
                    "restartCount": 0,
                    "image": "i",
                    "imageID": "",
                    "state": {"waiting": {}},
                }
            ],
            "containerStatuses": [
                {"name": "app", "ready": False, "restartCount": 0, "image": "i", "imageID": "", "state": {}},
            ],
        }
    ),
    "container status with no state": _pod(
        status={
            "phase": "Pending",
            "containerStatuses": [{"name": "app", "ready": False, "restartCount": 0, "image": "i", "imageID": ""}],
        }
    ),
}

SELECTORS = [
    client.V1LabelSelector(match_labels={"app": "web"}),
    client.V1LabelSelector(match_expressions=[client.V1LabelSelectorRequirement(key="app", operator="DoesNotExist")]),
    client.V1LabelSelector(),
]

FILTER_OPTIONS = [
    FilterOptions(),
    FilterOptions(force=True, ignore_daemonsets=True, delete_emptydir_data=True, skip_wait_for_delete_timeout=60),
]


def _model(pod: dict[str, Any]) -> Any:
    return client.ApiClient().deserialize(SimpleNamespace(data=json.dumps(pod)), "V1Pod")


def _answers(pod: Any) -> dict[str, Any]:
    """What every reader of the drain says of ``pod``."""
    controller = controller_of(pod)
    verdicts = [
        judge(
            pod, [*make_filters(options, {("shop", "agent"): DaemonSetLookup(found=True)}, NOW), pod_rules.rule_filter]
        )
        for options in FILTER_OPTIONS
    ]
    return {
        "qualified": qualified(pod),
        "uid": pod.metadata.uid,
        "node": pod.spec.node_name,
        "controller": None if controller is None else (controller.api_version, controller.kind, controller.name),
        "controller uid": None if controller is None else controller.uid,
        "finished": is_finished(pod),
        "daemonset": is_daemonset_pod(pod),
        "deleted long ago": deleted_long_ago(pod, 60, NOW),
        "deletion": [deletion_progress(uid, pod, 60, NOW) for uid in ("pod-uid", "another")],
        "ready": is_ready(pod),
        # without a transition time it is "now", which differs between two calls
        "ready since": ready_since(pod) if is_ready(pod) and pod.status.conditions[0].last_transition_time else None,
        "available": [is_available(pod, seconds, NOW) for seconds in (0, 10, 60)],
        "priority": priority_of(pod),
        "critical": is_critical(pod),
        "selected": [selector_matches(selector, pod.metadata.labels) for selector in SELECTORS],
        "verdicts": verdicts,
        "rule": pod_rules.rule_of(pod),
        "ruled": pod_rules.ruled(pod),
        "created": pod.metadata.creation_timestamp,
        "why unhealthy": why_unhealthy(pod),
        # without a creation or transition time it is 0.0 (its "since" is then unknown), the same both ways
        "unhealthy since": unhealthy_since(pod) if not is_ready(pod) else None,
    }


@pytest.mark.parametrize("case", CASES)
def test_the_drain_reads_the_same_as_from_the_model(case: str) -> None:
    raw = CASES[case]
    assert _answers(slim_pod(raw)) == _answers(_model(raw))


@pytest.mark.parametrize("case", CASES)
def test_the_raw_fields_are_the_models(case: str) -> None:
    """Field by field, with the model's None where the API omitted something."""
    raw, model = CASES[case], _model(CASES[case])
    slim = slim_pod(raw)
    assert slim.metadata.labels == model.metadata.labels
    assert slim.metadata.deletion_timestamp == model.metadata.deletion_timestamp
    assert [(r.kind, r.name, r.uid, r.controller) for r in slim.metadata.owner_references or []] == [
        (r.kind, r.name, r.uid, r.controller) for r in model.metadata.owner_references or []
    ]
    assert (slim.metadata.owner_references is None) == (model.metadata.owner_references is None)
    assert (slim.status is None) == (model.status is None)
    if model.status is not None:
        assert slim.status is not None
        assert slim.status.phase == model.status.phase
        assert [(c.type, c.status, c.last_transition_time) for c in slim.status.conditions or []] == [
            (c.type, c.status, c.last_transition_time) for c in model.status.conditions or []
        ]
    assert slim.spec is not None
    assert [(v.name, v.empty_dir is None) for v in slim.spec.volumes or []] == [
        (v.name, v.empty_dir is None) for v in model.spec.volumes or []
    ]
    assert [(v.empty_dir.medium, v.empty_dir.size_limit) for v in slim.spec.volumes or [] if v.empty_dir] == [
        (v.empty_dir.medium, v.empty_dir.size_limit) for v in model.spec.volumes or [] if v.empty_dir
    ]
    kept = {k: v for k, v in (model.metadata.annotations or {}).items() if k in KEPT_ANNOTATIONS}
    assert dict(slim.metadata.annotations or {}) == kept


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, {"name": "", "namespace": "", "uid": "", "spec": None, "status": None}),
        ({"metadata": None, "spec": None, "status": None}, {"name": "", "namespace": "", "spec": None, "status": None}),
        ({"metadata": {"name": "p"}, "spec": {}, "status": {}}, {"name": "p", "volumes": None, "conditions": None}),
        ({"metadata": {"annotations": {"unread": "x"}}}, {"annotations": None, "labels": None}),
        ({"metadata": {"labels": {}}}, {"labels": {}}),
    ],
)
def test_what_the_api_omits_is_none(raw: dict[str, Any], expected: dict[str, Any]) -> None:
    pod = slim_pod(raw)
    fields = {
        "name": pod.metadata.name,
        "namespace": pod.metadata.namespace,
        "uid": pod.metadata.uid,
        "labels": None if pod.metadata.labels is None else dict(pod.metadata.labels),
        "annotations": pod.metadata.annotations,
        "spec": pod.spec,
        "status": pod.status,
        "volumes": pod.spec.volumes if pod.spec else None,
        "conditions": pod.status.conditions if pod.status else None,
    }
    assert {key: fields[key] for key in expected} == expected


def test_the_kept_annotations_are_those_the_drain_reads() -> None:
    read = {
        pod_filters.MIRROR_POD_ANNOTATION,
        pod_rules.DO_NOT_DISRUPT,
        pod_rules.CLUSTER_API_DRAIN,
        pod_rules.OWN_DRAIN,
        first_to_go.DELETION_COST,
    }
    assert read == KEPT_ANNOTATIONS


def test_a_slim_pod_cannot_change() -> None:
    pod = slim_pod(CASES["running, Ready, of a ReplicaSet"])
    assert isinstance(pod, SlimPod)
    with pytest.raises(AttributeError):
        pod.metadata.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        pod.metadata.labels["app"] = "other"  # type: ignore[index]
