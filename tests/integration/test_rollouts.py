"""Client-side rollouts of managed workloads, against the real control plane.

The plugin runs as a separate process; a watch follows every pod throughout
and proves the fenceposts: never more than replicas + maxSurge pods, never
fewer than replicas - maxUnavailable Ready. Where it says so, the same
manifest also runs as a real Deployment (the server's controller) in another
namespace and the two end states are compared.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
import yaml
from invariants import PodCensus
from kubernetes import client
from plugin import run_plugin

from kubectl_rollout.cluster_access import Cluster
from kubectl_rollout.replica_math import max_surge, max_unavailable


def workload(
    name: str,
    replicas: int,
    *,
    surge: int | str | None = None,
    unavailable: int | str | None = None,
    recreate: bool = False,
    ready_after: str = "1s",
    extra: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    document = manifests.deployment(
        name, replicas=replicas, annotations={manifests.READY_AFTER: ready_after, **(extra or {})}
    )
    if recreate:
        document["spec"]["strategy"] = {"type": "Recreate"}
    elif surge is not None or unavailable is not None:
        rolling: dict[str, Any] = {}
        if surge is not None:
            rolling["maxSurge"] = surge
        if unavailable is not None:
            rolling["maxUnavailable"] = unavailable
        document["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": rolling}
    document["spec"].update(spec)
    return document


def apply(
    kubeconfig: Path, namespace: str, document: dict[str, Any], tmp_path: Path, *args: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"{document['metadata']['name']}-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(document))
    return run_plugin("apply", "-f", str(path), "-n", namespace, *args, kubeconfig=kubeconfig, timeout=timeout)


def with_image(document: dict[str, Any], image: str) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return changed


def replica_sets(cluster: Cluster, namespace: str, app: str) -> dict[str, tuple[int, int, str]]:
    """name -> (revision, spec.replicas, image)"""
    found = {}
    for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector=f"app={app}").items:
        revision = int((rs.metadata.annotations or {}).get("deployment.kubernetes.io/revision", "0"))
        found[rs.metadata.name] = (revision, rs.spec.replicas, rs.spec.template.spec.containers[0].image)
    return found


def shape(cluster: Cluster, namespace: str, app: str) -> list[tuple[int, int, str]]:
    """ReplicaSets as (revision, replicas, image), names aside: comparable between controller and plugin."""
    return sorted(replica_sets(cluster, namespace, app).values())


@pytest.fixture
def twin(cluster: Cluster, namespace: str) -> Any:
    """A second namespace where the server's own Deployment controller runs the same manifest."""
    name = f"{namespace[:50]}-ctl"
    cluster.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    watching.until(
        cluster.core.list_namespaced_service_account,
        lambda sa: sa.metadata.name == "default",
        namespace=name,
        timeout=30,
        what="default service account",
    )
    yield name
    cluster.core.delete_namespace(name)


def controller_rollout(cluster: Cluster, namespace: str, document: dict[str, Any], image: str | None = None) -> None:
    name = document["metadata"]["name"]
    if image is None:
        cluster.apps.create_namespaced_deployment(namespace, document)
    else:
        cluster.apps.patch_namespaced_deployment(
            name, namespace, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
        )
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (
            d.metadata.name == name
            and d.status.observed_generation == d.metadata.generation
            and d.status.updated_replicas == d.spec.replicas
            and d.status.replicas == d.spec.replicas
            and (d.status.available_replicas or 0) == d.spec.replicas
        ),
        namespace=namespace,
        timeout=120,
        what=f"the controller's rollout of {name}",
    )


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable"),
    [(6, 2, 1), (8, "25%", "25%"), (5, 0, 2), (5, 2, 0)],
    ids=["absolute", "percent", "max-surge-0", "max-unavailable-0"],
)
def test_rolling_update_keeps_the_fenceposts_and_matches_the_controller(
    cluster: Cluster,
    namespace: str,
    twin: str,
    kubeconfig: Path,
    tmp_path: Path,
    replicas: int,
    surge: int | str,
    unavailable: int | str,
) -> None:
    document = workload("web", replicas, surge=surge, unavailable=unavailable)
    created = apply(kubeconfig, namespace, document, tmp_path)
    assert created.returncode == 0, created.stderr
    assert 'deployment "web" successfully rolled out' in created.stdout

    census = PodCensus(cluster, namespace, "web").start()
    updated = apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path)
    census.stop()

    assert updated.returncode == 0, updated.stderr
    assert census.most <= replicas + max_surge(replicas, surge, unavailable), census.most
    assert census.fewest_ready is not None
    assert census.fewest_ready >= replicas - max_unavailable(replicas, surge, unavailable), census.fewest_ready

    controller_rollout(cluster, twin, document)
    controller_rollout(cluster, twin, document, image="registry.example/app:v2")
    assert (
        shape(cluster, namespace, "web")
        == shape(cluster, twin, "web")
        == [(1, 0, manifests.IMAGE), (2, replicas, "registry.example/app:v2")]
    )
    ours = json.loads(run_plugin("status", "web", "-n", namespace, "-o", "json", kubeconfig=kubeconfig).stdout)
    theirs = cluster.apps.read_namespaced_deployment("web", twin).status
    assert {c["type"]: c["reason"] for c in ours["status"]["conditions"]} == {
        c.type: c.reason for c in theirs.conditions
    }


def test_recreate_never_runs_old_and_new_pods_together(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 4, recreate=True)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    census = PodCensus(cluster, namespace, "web").start()
    result = apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path)
    census.stop()

    assert result.returncode == 0, result.stderr
    assert not census.templates_together
    assert census.most <= 4
    assert shape(cluster, namespace, "web") == [(1, 0, manifests.IMAGE), (2, 4, "registry.example/app:v2")]


def test_undo_reuses_the_old_replica_set_and_history_lists_change_causes(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 3, surge=1, unavailable=0)
    document["metadata"]["annotations"] = {"kubernetes.io/change-cause": "v1"}
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    second = with_image(document, "registry.example/app:v2")
    second["metadata"]["annotations"] = {"kubernetes.io/change-cause": "v2"}
    assert apply(kubeconfig, namespace, second, tmp_path).returncode == 0
    before = replica_sets(cluster, namespace, "web")

    undone = run_plugin("undo", "web", "-n", namespace, kubeconfig=kubeconfig)

    assert undone.returncode == 0, undone.stderr
    after = replica_sets(cluster, namespace, "web")
    assert set(after) == set(before)  # the old ReplicaSet came back; none was created
    assert sorted(after.values()) == [(2, 0, "registry.example/app:v2"), (3, 3, manifests.IMAGE)]
    history = run_plugin("history", "web", "-n", namespace, kubeconfig=kubeconfig)
    assert history.stdout.splitlines()[1:] == ["REVISION  CHANGE-CAUSE", "2         v2", "3         v2"]
    missing = run_plugin("undo", "web", "--to-revision", "7", "-n", namespace, kubeconfig=kubeconfig)
    assert missing.returncode == 1
    assert "unable to find the specified revision 7" in missing.stderr
    assert replica_sets(cluster, namespace, "web") == after


def test_crash_looping_new_pods_fail_fast_and_auto_rollback_returns(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 3, surge=1, unavailable=0)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    broken = with_image(document, "registry.example/app:broken")
    broken["spec"]["template"]["metadata"]["annotations"].update(
        {manifests.BEHAVIOUR: "crash-loop", manifests.RESTART_EVERY: "1s"}
    )

    started = time.monotonic()
    failed = apply(kubeconfig, namespace, broken, tmp_path, "--fail-after-restarts", "2", "--auto-rollback")
    elapsed = time.monotonic() - started

    assert failed.returncode == 1
    assert "CrashLoopBackOff" in failed.stdout + failed.stderr
    assert "rolled back to revision 1" in failed.stderr
    assert elapsed < 60
    rses = sorted(replica_sets(cluster, namespace, "web").values())
    assert rses[-1] == (3, 3, manifests.IMAGE)  # revision 1's ReplicaSet, now revision 3, holds every replica


def test_progress_deadline_exceeded_with_never_ready_pods(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 2, surge=1, unavailable=0, progressDeadlineSeconds=4)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    stuck = with_image(document, "registry.example/app:stuck")
    stuck["spec"]["template"]["metadata"]["annotations"][manifests.BEHAVIOUR] = "never-ready"

    result = apply(kubeconfig, namespace, stuck, tmp_path)

    assert result.returncode == 1
    assert 'deployment "web" exceeded its progress deadline' in result.stdout + result.stderr
    status = json.loads(run_plugin("status", "web", "-n", namespace, "-o", "json", kubeconfig=kubeconfig).stdout)
    progressing = next(c for c in status["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")


def test_a_driver_killed_mid_rollout_is_finished_by_the_next_one(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 6, surge=1, unavailable=0, ready_after="2s")
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    path = tmp_path / "v2.yaml"
    path.write_text(yaml.safe_dump(with_image(document, "registry.example/app:v2")))
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubectl_rollout",
            "apply",
            "-f",
            str(path),
            "-n",
            namespace,
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    watching.until(
        cluster.apps.list_namespaced_replica_set,
        lambda rs: rs.spec.template.spec.containers[0].image.endswith(":v2") and rs.spec.replicas >= 2,
        namespace=namespace,
        timeout=60,
        what="the rollout to be under way",
    )
    driver.send_signal(signal.SIGKILL)
    driver.wait()

    # The lease of the dead driver has to expire before another may drive.
    finished = run_plugin("status", "web", "-w", "-n", namespace, kubeconfig=kubeconfig, timeout=120)
    if finished.returncode != 0 and "is being driven by" in finished.stderr:
        time.sleep(16)
        finished = run_plugin("status", "web", "-w", "-n", namespace, kubeconfig=kubeconfig, timeout=120)

    assert finished.returncode == 0, finished.stderr
    assert shape(cluster, namespace, "web") == [(1, 0, manifests.IMAGE), (2, 6, "registry.example/app:v2")]


def test_pause_holds_the_rollout_and_resume_finishes_it(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 4, surge=1, unavailable=0)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    assert run_plugin("pause", "web", "-n", namespace, kubeconfig=kubeconfig).returncode == 0
    recorded = apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path, "--no-wait")
    assert recorded.returncode == 0
    assert shape(cluster, namespace, "web") == [(1, 4, manifests.IMAGE)]

    resumed = run_plugin("resume", "web", "-n", namespace, kubeconfig=kubeconfig)

    assert resumed.returncode == 0, resumed.stderr
    assert shape(cluster, namespace, "web") == [(1, 0, manifests.IMAGE), (2, 4, "registry.example/app:v2")]
    again = run_plugin("resume", "web", "-n", namespace, kubeconfig=kubeconfig)
    assert again.returncode == 2
    assert "is not paused" in again.stderr


def test_scale_mid_rollout_is_proportional_and_ends_at_the_new_size(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 4, surge=2, unavailable=0, ready_after="3s")
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    assert (
        apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path, "--no-wait").returncode
        == 0
    )
    scaled = run_plugin("scale", "web", "--replicas", "8", "-n", namespace, kubeconfig=kubeconfig)

    assert scaled.returncode == 0, scaled.stderr
    assert shape(cluster, namespace, "web") == [(1, 0, manifests.IMAGE), (2, 8, "registry.example/app:v2")]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(kind="StatefulSet"), "expected an apps/v1 Deployment manifest"),
        (lambda d: d["spec"]["selector"]["matchLabels"].update(app="other"), "`selector` does not match template"),
        (
            lambda d: d["spec"].update(strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
            "may not be 0 when `maxSurge` is 0",
        ),
        (
            lambda d: d["spec"].update(strategy={"rollingUpdate": {"maxUnavailable": "120%"}}),
            "must not be greater than 100%",
        ),
        (lambda d: d["spec"].update(replicas=-3), "spec.replicas: Invalid value: -3"),
    ],
    ids=["not-a-deployment", "selector", "both-zero", "over-100-percent", "negative-replicas"],
)
def test_invalid_manifests_change_nothing(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, change: Any, message: str
) -> None:
    document = workload("web", 2)
    change(document)

    result = apply(kubeconfig, namespace, document, tmp_path)

    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert (
        cluster.core.list_namespaced_config_map(
            namespace, label_selector="app.kubernetes.io/managed-by=kubectl-rollout-plus"
        ).items
        == []
    )
    assert cluster.apps.list_namespaced_replica_set(namespace).items == []


def test_unknown_workload_is_one_line(namespace: str, kubeconfig: Path) -> None:
    for args in (["status", "ghost"], ["set", "image", "ghost", "app=x"], ["undo", "ghost"], ["pause", "ghost"]):
        result = run_plugin(*args, "-n", namespace, kubeconfig=kubeconfig)
        assert result.returncode == 1, args
        assert 'managed workload "ghost" not found' in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_delete_removes_the_record_and_everything_it_owns(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    assert apply(kubeconfig, namespace, workload("web", 2), tmp_path).returncode == 0
    assert run_plugin("delete", "web", "-n", namespace, kubeconfig=kubeconfig).returncode == 0
    watching.until_deleted(cluster.core.list_namespaced_config_map, "rollout-plus.web", namespace=namespace, timeout=30)
    # Foreground deletion: the garbage collector removes the ReplicaSets (and their pods) before the record.
    assert cluster.apps.list_namespaced_replica_set(namespace).items == []


def test_adopt_then_release_keeps_every_pod(cluster: Cluster, namespace: str, kubeconfig: Path) -> None:
    document = workload("shop", 3)
    cluster.apps.create_namespaced_deployment(namespace, document)
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (d.status.available_replicas or 0) == 3,
        namespace=namespace,
        timeout=60,
        what="shop available",
    )
    before = {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items}
    census = PodCensus(cluster, namespace, "shop").start()

    adopted = run_plugin("adopt", "deployment/shop", "-n", namespace, kubeconfig=kubeconfig)
    assert adopted.returncode == 0, adopted.stderr
    owners = {
        ref.kind
        for rs in cluster.apps.list_namespaced_replica_set(namespace).items
        for ref in rs.metadata.owner_references
    }
    assert owners == {"ConfigMap"}
    status = run_plugin("status", "shop", "-w", "-n", namespace, kubeconfig=kubeconfig)
    assert status.returncode == 0, status.stderr
    released = run_plugin("release", "shop", "-n", namespace, kubeconfig=kubeconfig)
    assert released.returncode == 0, released.stderr
    watching.until(
        cluster.apps.list_namespaced_replica_set,
        lambda rs: any(ref.kind == "Deployment" for ref in rs.metadata.owner_references or []),
        namespace=namespace,
        timeout=30,
        what="the Deployment controller to adopt the ReplicaSet",
    )
    census.stop()

    assert {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items} == before
    assert census.most == 3
    assert census.fewest_ready == 3


def test_adopting_a_missing_deployment_changes_nothing(namespace: str, kubeconfig: Path, cluster: Cluster) -> None:
    result = run_plugin("adopt", "deployment/ghost", "-n", namespace, kubeconfig=kubeconfig)
    assert result.returncode == 1
    assert (
        result.stderr.strip() == f'error: deployment "ghost" not found in namespace "{namespace}"; nothing was changed'
    )
    assert (
        cluster.core.list_namespaced_config_map(
            namespace, label_selector="app.kubernetes.io/managed-by=kubectl-rollout-plus"
        ).items
        == []
    )


def test_revision_history_limit_prunes_old_replica_sets(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 2, surge=1, unavailable=0, revisionHistoryLimit=1)
    for version in ("v1", "v2", "v3", "v4"):
        result = apply(kubeconfig, namespace, with_image(document, f"registry.example/app:{version}"), tmp_path)
        assert result.returncode == 0, result.stderr
    # The newest plus revisionHistoryLimit old ones, as the controller keeps.
    assert shape(cluster, namespace, "web") == [(3, 0, "registry.example/app:v3"), (4, 2, "registry.example/app:v4")]


def test_min_ready_seconds_holds_the_rollout_until_pods_have_been_ready_that_long(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 2, surge=1, unavailable=0, ready_after="0s", minReadySeconds=3)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    started = time.monotonic()
    result = apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path)
    elapsed = time.monotonic() - started

    assert result.returncode == 0, result.stderr
    # maxSurge 1, maxUnavailable 0: two new pods one after the other, each available 3 s after Ready.
    assert elapsed >= 6.0, elapsed


def test_old_replica_sets_never_shrink_past_a_pdb(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 4, surge=1, unavailable=1)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, manifests.pdb("web", app="web", min_available=4))
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status is not None and p.status.expected_pods == 4,
        namespace=namespace,
        timeout=30,
        what="PDB processed",
    )
    census = PodCensus(cluster, namespace, "web").start()

    result = apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path)
    census.stop()

    assert result.returncode == 0, result.stderr
    # The controller may go down to 3 Ready (maxUnavailable 1); the PDB asks for 4, and gets them.
    assert census.fewest_ready == 4
    assert "held back by PodDisruptionBudget" in result.stderr
