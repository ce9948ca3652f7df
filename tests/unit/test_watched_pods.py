"""What the rollout driver keeps of a pod (``watched_pod``) says what the pod's model said.

The driver read these facts from the client's models before; each case reads
them both ways from the same JSON and compares.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from kubectl_rollout.rollout.watched_pods import WaitingContainer, WatchedPod, live_pods, watched_pod


def _pod(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-5d4f-abcde",
            "namespace": "shop",
            "uid": "pod-uid",
            "resourceVersion": "12",
            "labels": {"app": "web", "pod-template-hash": "5d4f"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "rollout-plus.web", "uid": "record-uid"},
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-5d4f",
                    "uid": "rs-uid",
                    "controller": True,
                },
            ],
        },
        "spec": {"containers": [{"name": "app", "image": "registry.example/web:v2"}]},
        "status": status,
    }


def _container(name: str, state: dict[str, Any], restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"registry.example/{name}:v2",
        "imageID": "",
        "ready": False,
        "restartCount": restarts,
        "state": state,
    }


CASES = {
    "running": _pod(phase="Running", containerStatuses=[_container("app", {"running": {}})]),
    "no status": _pod(),
    "pending, no phase yet": _pod(conditions=[]),
    "image pull": _pod(
        phase="Pending",
        containerStatuses=[
            _container("sidecar", {"running": {}}),
            _container("app", {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}),
        ],
    ),
    "crash loop": _pod(
        phase="Running",
        containerStatuses=[_container("app", {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4)],
    ),
    "waiting, no reason": _pod(phase="Pending", containerStatuses=[_container("app", {"waiting": {}})]),
    "being deleted": {
        **_pod(phase="Running", containerStatuses=[_container("app", {"running": {}})]),
        "metadata": {
            **_pod()["metadata"],
            "deletionTimestamp": "2026-11-27T10:00:00Z",
            "deletionGracePeriodSeconds": 30,
        },
    },
}


def _model(pod: dict[str, Any]) -> Any:
    return client.ApiClient().deserialize(SimpleNamespace(data=json.dumps(pod)), "V1Pod")


@pytest.mark.parametrize("case", CASES)
def test_the_same_facts_as_the_model(case: str) -> None:
    raw = CASES[case]
    model = _model(raw)
    kept = watched_pod(raw)
    assert kept.name == model.metadata.name
    assert kept.template_hash == (model.metadata.labels or {}).get("pod-template-hash")
    assert kept.controller_uid == next((r.uid for r in model.metadata.owner_references or [] if r.controller), None)
    assert kept.phase == (model.status.phase if model.status else None)
    waiting = [
        WaitingContainer(
            name=c.name,
            image=c.image,
            restart_count=c.restart_count,
            reason=c.state.waiting.reason,
            message=c.state.waiting.message,
        )
        for c in ((model.status.container_statuses or []) if model.status else [])
        if c.state is not None and c.state.waiting is not None
    ]
    assert list(kept.waiting) == waiting
    assert kept.deleting == (model.metadata.deletion_timestamp is not None)


def test_a_bare_pod_has_no_controller() -> None:
    raw = _pod()
    del raw["metadata"]["ownerReferences"]
    assert watched_pod(raw).controller_uid is None


def _kept(name: str, owner: str | None, phase: str | None, *, deleting: bool = False) -> WatchedPod:
    return WatchedPod(name=name, template_hash=None, controller_uid=owner, phase=phase, waiting=(), deleting=deleting)


def test_live_pods_are_those_the_replica_set_controller_counts_active() -> None:
    # FilterActivePods: not Succeeded, not Failed, not marked for deletion; a pod without a phase yet counts.
    pods = [
        _kept("a", "rs-1", "Running"),
        _kept("b", "rs-1", None),
        _kept("c", "rs-1", "Running", deleting=True),
        _kept("d", "rs-1", "Succeeded"),
        _kept("e", "rs-1", "Failed"),
        _kept("f", "rs-2", "Pending"),
        _kept("g", None, "Running"),
    ]
    assert live_pods(pods) == {"rs-1": 2, "rs-2": 1}
