"""`kubectl rollout-plus restart KIND/NAME` (eviction-based) against the real control plane.

A watch over every pod of the namespace runs throughout each restart and
proves the workload never had fewer than all-but-one of its pods healthy,
while every pod is replaced and no new revision appears.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import manifests
import watching
from cluster_setup import deploy
from invariants import HealthyPods, is_healthy
from kubernetes import client
from plugin import events, run_plugin
from timeline import Timeline, marked_for_deletion

from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.restart.record import RESTART_CUTOFF


def restart(kubeconfig: Path, namespace: str, *args: str, timeout: float = 180) -> Any:
    return run_plugin("restart", *args, "-n", namespace, kubeconfig=kubeconfig, timeout=timeout)


def restart_in_background(kubeconfig: Path, namespace: str, target: str) -> subprocess.Popen[str]:
    """A restart whose ``-o jsonl`` events the test reads as they come."""
    command = [sys.executable, "-m", "kubectl_rollout", "restart", target, "-n", namespace, "-o", "jsonl"]
    return subprocess.Popen([*command, "--kubeconfig", str(kubeconfig)], stdout=subprocess.PIPE, text=True)


def uids(cluster: Cluster, namespace: str, app: str) -> dict[str, str]:
    pods = cluster.core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
    return {p.metadata.uid: p.metadata.name for p in pods if p.metadata.deletion_timestamp is None}


def test_deployment_pods_are_replaced_one_at_a_time_without_a_new_revision(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    deploy(cluster, namespace, "web", 3, annotations={manifests.READY_AFTER: "1s"})
    cluster.policy.create_namespaced_pod_disruption_budget(
        namespace, manifests.pdb("web", app="web", max_unavailable=1)
    )
    before = uids(cluster, namespace, "web")
    replica_sets = [rs.metadata.name for rs in cluster.apps.list_namespaced_replica_set(namespace).items]
    generation = cluster.apps.read_namespaced_deployment("web", namespace).metadata.generation
    watcher = HealthyPods(cluster, namespace).start()

    result = restart(kubeconfig, namespace, "deployment/web", "-o", "jsonl")
    watcher.settle({"web": 3})
    minimum = watcher.stop()

    assert result.returncode == 0, result.stderr
    after = uids(cluster, namespace, "web")
    assert len(after) == 3
    assert not set(after) & set(before), (before, after)
    assert minimum == {"web": 2}, minimum
    assert [rs.metadata.name for rs in cluster.apps.list_namespaced_replica_set(namespace).items] == replica_sets
    assert cluster.apps.read_namespaced_deployment("web", namespace).metadata.generation == generation
    kinds = [e["type"] for e in events(result)]
    # The job's own events frame the restart's.
    assert kinds[0] == "JobStarted"
    assert kinds[-1] == "JobFinished"
    assert kinds[1] == "RestartPlanned"
    assert kinds[-2] == "RestartFinished"
    assert kinds.count("PodReplaced") == 3
    # One at a time: each replacement is available before the next eviction starts.
    evictions = [i for i, kind in enumerate(kinds) if kind == "EvictionStarted"]
    replaced = [i for i, kind in enumerate(kinds) if kind == "PodReplaced"]
    assert all(r < e for r, e in zip(replaced, evictions[1:], strict=False)), kinds


def replaced_one_at_a_time(timeline: Timeline, before: dict[str, str], key: Callable[[Any], str]) -> list[str]:
    """What the cluster did to the pods of ``before`` (uid -> name): the ``key`` (a pod's name, its node) of each in
    the order the cluster marked them for deletion, each key's new pod Ready before the next old pod was taken."""
    order: list[str] = []
    awaited: str | None = None  # the key of the last pod taken, until a new pod of that key is Ready
    for write, _ in timeline.replay():
        pod = write.obj
        if pod.metadata.uid in before and marked_for_deletion(write):
            if key(pod) in order:
                continue  # the same pod again, on its way out
            assert awaited is None, (
                f"{key(pod)} was taken while {awaited} had no Ready replacement yet (so far {order})"
            )
            order.append(key(pod))
            awaited = key(pod)
        elif awaited is not None and pod.metadata.uid not in before and key(pod) == awaited and is_healthy(pod):
            awaited = None
    assert awaited is None, f"{awaited} never had a Ready replacement (order {order})"
    return order


def test_statefulset_pods_go_from_the_highest_ordinal_and_come_back_under_their_names(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    cluster.apps.create_namespaced_stateful_set(namespace, manifests.statefulset("db", replicas=3))
    watching.until(
        cluster.apps.list_namespaced_stateful_set,
        lambda s: s.metadata.name == "db" and (s.status.available_replicas or 0) == 3,
        namespace=namespace,
        timeout=60,
        what="statefulset db available",
    )
    before = uids(cluster, namespace, "db")
    pods = Timeline().watch("pod", cluster.core.list_namespaced_pod, namespace=namespace, label_selector="app=db")

    result = restart(kubeconfig, namespace, "sts/db", "-o", "jsonl")
    pods.stop()

    assert result.returncode == 0, result.stderr
    # In the cluster: db-2 first, and each came back (a new pod under the same name) Ready before the next went.
    assert replaced_one_at_a_time(pods, before, lambda pod: pod.metadata.name) == ["db-2", "db-1", "db-0"]
    order = [e["pod"]["name"] for e in events(result) if e["type"] == "PodReplaced"]
    assert order == ["db-2", "db-1", "db-0"]
    after = uids(cluster, namespace, "db")
    assert sorted(after.values()) == ["db-0", "db-1", "db-2"]
    assert not set(after) & set(before)


def test_a_budget_that_allows_no_disruption_stops_the_restart_and_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    deploy(cluster, namespace, "web", 2)
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, manifests.pdb("web", app="web", min_available=2))
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status is not None and p.status.expected_pods == 2,
        namespace=namespace,
        timeout=30,
        what="the PDB's status",
    )
    before = uids(cluster, namespace, "web")

    result = restart(kubeconfig, namespace, "deployment/web", "--timeout", "4s")

    assert result.returncode == 1
    assert f"PodDisruptionBudget {namespace}/web" in result.stderr, result.stderr
    assert "restart stopped after 0 pods" in result.stderr, result.stderr
    assert "--resume" not in result.stderr
    assert uids(cluster, namespace, "web") == before
    assert RESTART_CUTOFF not in (cluster.apps.read_namespaced_deployment("web", namespace).metadata.labels or {})


def test_dry_run_lists_the_order_and_changes_nothing(cluster: Cluster, namespace: str, kubeconfig: Path) -> None:
    deploy(cluster, namespace, "web", 2)
    before = uids(cluster, namespace, "web")

    result = restart(kubeconfig, namespace, "deployment/web", "--dry-run=client")

    assert result.returncode == 0, result.stderr
    assert "restarting deployment/web by eviction" in result.stdout
    assert "(dry run)" in result.stdout
    assert all(name in result.stdout for name in before.values())
    assert uids(cluster, namespace, "web") == before


def test_bad_targets_are_refused_with_what_to_do(cluster: Cluster, namespace: str, kubeconfig: Path) -> None:
    deploy(cluster, namespace, "web", 1)
    before = uids(cluster, namespace, "web")

    wrong_kind = restart(kubeconfig, namespace, "pod/web")
    assert wrong_kind.returncode == 2
    assert "use deployment/NAME, statefulset/NAME or daemonset/NAME" in wrong_kind.stderr

    missing = restart(kubeconfig, namespace, "deployment/nope")
    assert missing.returncode == 1
    assert f'deployment/nope not found in namespace "{namespace}"' in missing.stderr
    assert "Traceback" not in missing.stderr

    managed_only = restart(kubeconfig, namespace, "deployment/web", "--auto-rollback")
    assert managed_only.returncode == 2
    assert "--auto-rollback applies only to managed workloads" in managed_only.stderr

    assert uids(cluster, namespace, "web") == before


def test_a_workload_mid_rollout_is_waited_for_then_left_alone_at_the_timeout(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    deploy(cluster, namespace, "web", 2)
    cluster.apps.patch_namespaced_deployment(
        "web",
        namespace,
        {"spec": {"template": {"metadata": {"annotations": {manifests.BEHAVIOUR: "never-ready"}}}}},
    )
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: d.status.observed_generation == d.metadata.generation and (d.status.updated_replicas or 0) >= 1,
        namespace=namespace,
        timeout=30,
        what="the rollout started",
    )
    before = uids(cluster, namespace, "web")

    result = restart(kubeconfig, namespace, "deployment/web", "--timeout", "3s")

    assert result.returncode == 1
    assert "waiting for deployment/web to settle before the first eviction: it is rolling out" in result.stdout
    assert "deployment/web cannot be restarted now: it is rolling out" in result.stderr, result.stderr
    assert "kubectl rollout status deployment/web" in result.stderr
    assert uids(cluster, namespace, "web") == before


def test_daemonset_pods_are_replaced_node_by_node(cluster: Cluster, namespace: str, kubeconfig: Path) -> None:
    cluster.apps.create_namespaced_daemon_set(namespace, manifests.daemonset("agent"))
    watching.until(
        cluster.apps.list_namespaced_daemon_set,
        lambda d: (
            d.status is not None
            and (d.status.desired_number_scheduled or 0) > 0
            and d.status.number_available == d.status.desired_number_scheduled
        ),
        namespace=namespace,
        timeout=60,
        what="daemonset agent available",
    )
    before = uids(cluster, namespace, "agent")
    pods = Timeline().watch("pod", cluster.core.list_namespaced_pod, namespace=namespace, label_selector="app=agent")

    result = restart(kubeconfig, namespace, "daemonset/agent", "-o", "jsonl")
    pods.stop()

    assert result.returncode == 0, result.stderr
    # In the cluster: one node at a time, in the nodes' order, each node's new pod Ready before the next node's went.
    taken = replaced_one_at_a_time(pods, before, lambda pod: pod.spec.node_name)
    assert len(taken) == len(before) > 1
    assert taken == sorted(taken)
    nodes = [e["pod"]["node"] for e in events(result) if e["type"] == "PodReplaced"]
    assert nodes == taken
    after = uids(cluster, namespace, "agent")
    assert len(after) == len(before)
    assert not set(after) & set(before)


def test_a_restart_begun_while_a_pod_is_missing_waits_for_it_first(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    deploy(cluster, namespace, "web", 3, annotations={manifests.READY_AFTER: "1s"})
    victim = next(iter(uids(cluster, namespace, "web").values()))
    # A quota of two pods keeps the victim's replacement from being created until the restart has said it
    # waits: the pod stays missing however slowly the restart starts (a replacement Ready in 2 s raced it).
    cluster.core.create_namespaced_resource_quota(
        namespace,
        client.V1ResourceQuota(
            metadata=client.V1ObjectMeta(name="hold"), spec=client.V1ResourceQuotaSpec(hard={"pods": "2"})
        ),
    )
    watcher = HealthyPods(cluster, namespace).start()
    cluster.core.delete_namespaced_pod(victim, namespace)

    kinds: list[str] = []
    with restart_in_background(kubeconfig, namespace, "deployment/web") as process:
        assert process.stdout is not None
        for line in process.stdout:
            kinds.append(json.loads(line)["type"])
            if kinds[-1] == "WaitingToStart":
                assert len(uids(cluster, namespace, "web")) == 2  # still missing when the restart said so
                cluster.core.delete_namespaced_resource_quota("hold", namespace)
        returncode = process.wait(timeout=120)
    watcher.settle({"web": 3})
    minimum = watcher.stop()

    assert returncode == 0
    assert "WaitingToStart" in kinds
    assert kinds.index("WaitingToStart") < kinds.index("EvictionStarted")
    # Down to 2 by the deletion; the restart itself never took a second pod while one was missing.
    assert minimum == {"web": 2}, minimum


def test_a_restart_killed_midway_resumes_without_replacing_a_pod_twice(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    deploy(cluster, namespace, "web", 4, annotations={manifests.READY_AFTER: "1s"})
    original = uids(cluster, namespace, "web")
    with restart_in_background(kubeconfig, namespace, "deployment/web") as first:
        assert first.stdout is not None
        for line in first.stdout:
            if json.loads(line)["type"] == "PodReplaced":
                first.kill()  # SIGKILL: no chance to clean up
                break
        first.wait(timeout=30)
    generation = cluster.apps.read_namespaced_deployment("web", namespace).metadata.generation
    labels = cluster.apps.read_namespaced_deployment("web", namespace).metadata.labels or {}
    assert RESTART_CUTOFF in labels, labels
    new_before_resume = set(uids(cluster, namespace, "web")) - set(original)
    assert new_before_resume

    result = restart(kubeconfig, namespace, "deployment/web", "--resume", "-o", "jsonl")

    assert result.returncode == 0, result.stderr
    # the killed run's lease is still valid for a few seconds: the resume waits it out
    planned = next(e for e in events(result) if e["type"] == "RestartPlanned")
    assert planned["type"] == "RestartPlanned", planned
    assert planned["resumed"], planned
    assert planned["already_replaced"] >= 1, planned
    assert set(planned["pods"]) <= set(original.values()), planned
    after = uids(cluster, namespace, "web")
    assert len(after) == 4
    assert not set(after) & set(original), "every original pod is replaced"
    assert new_before_resume <= set(after), "no pod the first run created was replaced again"
    assert cluster.apps.read_namespaced_deployment("web", namespace).metadata.generation == generation
    for rs in cluster.apps.list_namespaced_replica_set(namespace).items:
        assert RESTART_CUTOFF not in {**(rs.metadata.labels or {}), **(rs.metadata.annotations or {})}
    assert RESTART_CUTOFF not in (cluster.apps.read_namespaced_deployment("web", namespace).metadata.labels or {})

    again = restart(kubeconfig, namespace, "deployment/web", "--resume")
    assert again.returncode == 1
    assert "deployment/web has no unfinished restart to resume; nothing was changed" in again.stderr, again.stderr
    assert uids(cluster, namespace, "web") == after


def test_a_viewer_is_told_which_permissions_a_restart_needs_and_nothing_changes(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    deploy(cluster, namespace, "web", 2)
    before = uids(cluster, namespace, "web")

    result = restart(kubeconfig, namespace, "deployment/web", "--context", "rollout-plus-viewer")

    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert 'context "rollout-plus-viewer" may not' in lines[0]
    assert f"create pods/eviction in namespace {namespace}" in lines[0]
    assert f"patch deployments.apps in namespace {namespace}" in lines[0]
    assert uids(cluster, namespace, "web") == before
    assert RESTART_CUTOFF not in (cluster.apps.read_namespaced_deployment("web", namespace).metadata.labels or {})

    # a client-side dry run only reads, which a viewer may
    dry = restart(kubeconfig, namespace, "deployment/web", "--context", "rollout-plus-viewer", "--dry-run=client")
    assert dry.returncode == 0, dry.stderr
    assert uids(cluster, namespace, "web") == before


def test_a_second_restart_of_the_same_workload_waits_for_the_lease_then_refuses(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    deploy(cluster, namespace, "web", 4, annotations={manifests.READY_AFTER: "6s"})
    original = uids(cluster, namespace, "web")
    with restart_in_background(kubeconfig, namespace, "deployment/web") as first:
        assert first.stdout is not None
        for line in first.stdout:
            if json.loads(line)["type"] == "EvictionStarted":
                break

        second = restart(kubeconfig, namespace, "deployment/web", "-o", "jsonl")

        first_rest = first.stdout.read()
        assert first.wait(timeout=120) == 0
    assert second.returncode == 1
    assert "deployment/web is being restarted by" in second.stderr, second.stderr
    assert f"lease {namespace}/rollout-plus.restart.deployment.web" in second.stderr
    assert [e["type"] for e in events(second)] == ["JobStarted", "WaitingToStart", "JobFinished"], second.stdout
    assert '"type": "RestartFinished"' in first_rest
    after = uids(cluster, namespace, "web")
    assert len(after) == 4
    assert not set(after) & set(original)
    assert not cluster.coordination.list_namespaced_lease(namespace).items, "the lease is released at the end"
