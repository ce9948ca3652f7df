"""``drain --surge`` of a managed workload (kubectl_rollout.drain.surge.managed): whether it is steady
enough to surge, pure tables; and the record format the drain reads, checked against the rollout package
that writes it."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from kubectl_rollout.drain.surge.managed import managed_from, steady_replica_set, why_not_steady
from kubectl_rollout.kube.record_names import record_name, workload_of
from kubectl_rollout.rollout import record
from kubectl_rollout.rollout.spec import parse_workload
from kubectl_rollout.rollout.state import RolloutStatus

STEADY: dict[str, Any] = {
    "replicas": 3,
    "generation": 2,
    "observed_generation": 2,
    "status_replicas": 3,
    "updated_replicas": 3,
    "counts": [("web-new", 3), ("web-old", 0)],
    "pods_of": {"web-new"},
}


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({}, ""),
        # a change recorded (apply / scale without waiting, a killed driver) but not driven yet
        ({"generation": 3}, "generation 3 of its spec is recorded but not driven yet (status at 2)"),
        # pods of an older template: a rollout under way (as a Deployment's updatedReplicas < replicas)
        ({"updated_replicas": 1}, "2 of its 3 pods run an older template"),
        ({"counts": [("web-new", 2), ("web-old", 1)]}, "2 of its ReplicaSets have a count (web-new, web-old)"),
        ({"counts": [("web-new", 0)]}, "0 of its ReplicaSets have a count (none)"),
        # one ReplicaSet, but not at the spec's count: a scale the driver has not finished
        ({"counts": [("web-new", 2)]}, "ReplicaSet web-new has 2 replicas, its spec 3: a scale is under way"),
        # a drained pod of a ReplicaSet already scaled to 0 (terminating, or status not caught up)
        ({"pods_of": {"web-new", "web-old"}}, "pods of ReplicaSet web-old are still on the node"),
    ],
)
def test_why_not_steady(changes: dict[str, Any], why: str) -> None:
    assert why_not_steady(**{**STEADY, **changes}) == why


def _config_map(manifest: dict[str, Any], generation: int, status: RolloutStatus) -> Any:
    """A record as rollout.record writes it."""
    spec = parse_workload(manifest, default_namespace="ns")
    body = record._body(manifest, generation, status, spec, None)
    body["metadata"]["uid"] = "record-uid"
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(**body["metadata"]), data=body["data"])


def _replica_set(name: str, replicas: int, owner_uid: str = "record-uid", labels: dict[str, str] | None = None) -> Any:
    owner = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="rollout-plus.web", uid=owner_uid, controller=True
    )
    return client.V1ReplicaSet(
        metadata=client.V1ObjectMeta(name=name, namespace="ns", owner_references=[owner], labels=labels),
        spec=client.V1ReplicaSetSpec(replicas=replicas, selector=client.V1LabelSelector(match_labels={})),
    )


MANIFEST = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"argocd.argoproj.io/instance": "shop"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "i"}]}},
    },
}


def test_the_drain_reads_the_record_as_the_rollout_package_writes_it() -> None:
    status = RolloutStatus(observed_generation=4, replicas=2, updated_replicas=2, available_replicas=2)
    config_map = _config_map(MANIFEST, 4, status)
    ours, theirs = _replica_set("web-abc", 2), _replica_set("web-xyz", 1, owner_uid="another-record")

    seen = managed_from(config_map, [ours, theirs])

    assert (seen.namespace, seen.name, seen.replicas, seen.generation) == ("ns", "web", 2, 4)
    assert (seen.observed_generation, seen.status_replicas, seen.updated_replicas) == (4, 2, 2)
    assert seen.labels == {"argocd.argoproj.io/instance": "shop"}
    assert seen.replica_sets == (ours,)  # controlled by this record only
    assert steady_replica_set(seen, {"web-abc"}) == (ours, "")
    assert workload_of("ConfigMap", record_name("web")) == "web"
    assert workload_of("ConfigMap", "settings") is None
    assert workload_of("Deployment", "rollout-plus.web") is None


def test_a_record_that_defaults_the_count_to_one_and_has_no_status_yet_is_not_steady() -> None:
    manifest = {**MANIFEST, "spec": {k: v for k, v in MANIFEST["spec"].items() if k != "replicas"}}
    seen = managed_from(_config_map(manifest, 1, RolloutStatus()), [_replica_set("web-abc", 1)])

    assert seen.replicas == 1
    replica_set, why = steady_replica_set(seen, {"web-abc"})
    assert replica_set is None
    assert "not driven yet" in why
