"""`kubectl rollout-plus drain` against the real control plane.

Each test gets its own kwok nodes (``dedicated_nodes``) so that no other
test's pods share them, and runs the plugin as a separate process.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from access_review import allowed
from cluster_setup import create_namespace, deploy, until_scheduler_skips
from invariants import HealthyPods, is_healthy
from plugin import RunningPlugin, events, run_plugin
from timeline import Timeline, cordoned, marked_for_deletion

from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.pods import is_ready


def add_pdb(cluster: Cluster, namespace: str, name: str, *, app: str, expected: int, **spec: Any) -> None:
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, manifests.pdb(name, app=app, **spec))
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: (
            p.metadata.name == name
            and p.status is not None
            and p.status.observed_generation == p.metadata.generation
            and p.status.expected_pods == expected
        ),
        namespace=namespace,
        timeout=30,
        what=f"PDB {name} processed",
    )


@contextlib.contextmanager
def only_schedulable(cluster: Cluster, node: str, others: list[str]) -> Iterator[None]:
    """Create pods inside the block and they all land on ``node``; afterwards the others take pods again."""
    for other in others:
        cluster.core.patch_node(other, {"spec": {"unschedulable": True}})
    try:
        for other in others:
            until_scheduler_skips(cluster, other)
        yield
    finally:
        for other in others:
            cluster.core.patch_node(other, {"spec": {"unschedulable": None}})


def pods_on(cluster: Cluster, node: str) -> list[Any]:
    return cluster.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items


def node_state(cluster: Cluster, node: str) -> tuple[bool, str]:
    fresh = cluster.core.read_node(node)
    return bool(fresh.spec.unschedulable), fresh.metadata.resource_version


def drain(kubeconfig: Path, *args: str, timeout: float = 180) -> Any:
    return run_plugin("drain", *args, "-o", "jsonl", kubeconfig=kubeconfig, timeout=timeout)


def by_type(result: Any, kind: str) -> list[dict[str, Any]]:
    return [e for e in events(result) if e["type"] == kind]


def evictions_answered(cluster: Cluster, code: int) -> int:
    """How many eviction requests the API server has answered with ``code`` since it started (its own
    metrics): a refusal leaves nothing else in the cluster to see."""
    response = cluster.api_client.call_api("/metrics", "GET", _preload_content=False, auth_settings=["BearerToken"])
    total = 0
    for line in response.data.decode().splitlines():
        if (
            line.startswith("apiserver_request_total{")
            and f'code="{code}"' in line
            and 'resource="pods"' in line
            and 'subresource="eviction"' in line
        ):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


# --- the main scenario ----------------------------------------------------------------------------


def test_pdb_contended_drain_completes_without_breaking_any_budget(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    target, spare = dedicated_nodes(2)
    apps = ("web", "api", "db")
    with only_schedulable(cluster, target, [spare]):
        for app in apps:
            deploy(cluster, namespace, app, 4, pool=namespace, annotations={manifests.READY_AFTER: "1s"})
            add_pdb(cluster, namespace, app, app=app, expected=4, max_unavailable=1)
    assert len(pods_on(cluster, target)) == 12
    watcher = HealthyPods(cluster, namespace).start()
    result = drain(kubeconfig, target)
    watcher.settle(dict.fromkeys(apps, 4))
    minimum = watcher.stop()

    assert result.returncode == 0, result.stderr
    assert [p for p in pods_on(cluster, target) if p.metadata.namespace == namespace] == []
    # maxUnavailable 1 of 4: at least 3 healthy at every moment the watch saw.
    assert minimum == dict.fromkeys(apps, 3), minimum
    assert watcher.events > 0
    assert node_state(cluster, target)[0] is True
    assert by_type(result, "NodeDrained")[0]["node"] == target


def test_blocked_pods_are_explained_with_pdb_counts(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    target, spare = dedicated_nodes(2)
    with only_schedulable(cluster, target, [spare]):
        deploy(cluster, namespace, "web", 3, pool=namespace, annotations={manifests.READY_AFTER: "1s"})
        add_pdb(cluster, namespace, "web-pdb", app="web", expected=3, max_unavailable=1)
    budgets = Timeline().watch("pdb", cluster.policy.list_namespaced_pod_disruption_budget, namespace=namespace)

    text = run_plugin("drain", target, kubeconfig=kubeconfig)
    budgets.stop()

    assert text.returncode == 0, text.stderr
    assert f"node/{target} cordoned" in text.stdout
    assert f"node/{target} drained" in text.stdout
    blocked = [line for line in text.stderr.splitlines() if "PodDisruptionBudget" in line]
    assert blocked, text.stderr
    assert f"PodDisruptionBudget {namespace}/web-pdb" in blocked[0]
    assert "blocked since" in blocked[0]
    # The counts are the budget's own, as the cluster wrote them while it allowed no disruption: maxUnavailable
    # 1 of 3 needs 2 healthy. Healthy is 3 right after the eviction spent the one disruption (the API server
    # writes that status itself, the evicted pod not yet gone), 2 once the disruption controller recounted
    # while the replacement was not Ready yet: either is what the budget said at that moment.
    no_room = {
        (w.obj.status.current_healthy, w.obj.status.desired_healthy)
        for w in budgets.writes("pdb")
        if w.obj.status is not None and w.obj.status.disruptions_allowed == 0
    }
    explained = [line for line in blocked if "allows no disruption now" in line]
    assert explained, text.stderr
    for line in explained:
        counts = re.search(r"\(healthy (\d+), needs (\d+)\)", line)
        assert counts is not None, line
        said = (int(counts.group(1)), int(counts.group(2)))
        assert said[1] == 2, line
        assert said in no_room, (line, no_room)


# --- kubectl's filters ----------------------------------------------------------------------------


def test_daemonset_pods_need_ignore_daemonsets(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    cluster.apps.create_namespaced_daemon_set(
        namespace, manifests.daemonset("agent", pod_spec=manifests.placement(namespace))
    )
    deploy(cluster, namespace, "web", 1, pool=namespace, node=target)
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.labels.get("app") == "agent" and p.status.phase == "Running",
        namespace=namespace,
        timeout=30,
        what="the DaemonSet pod",
    )
    before = {p.metadata.name for p in pods_on(cluster, target)}

    refused = run_plugin("drain", target, kubeconfig=kubeconfig)
    assert refused.returncode == 1
    assert (
        "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "
        f"{namespace}/agent-" in refused.stderr
    )
    assert {p.metadata.name for p in pods_on(cluster, target)} == before

    cluster.core.patch_node(target, {"spec": {"unschedulable": None}})
    accepted = run_plugin("drain", target, "--ignore-daemonsets", kubeconfig=kubeconfig)
    assert accepted.returncode == 0, accepted.stderr
    assert f"Warning: ignoring DaemonSet-managed Pods: {namespace}/agent-" in accepted.stderr
    left = [p.metadata.labels["app"] for p in pods_on(cluster, target) if p.metadata.deletion_timestamp is None]
    assert left == ["agent"]


def test_emptydir_pods_need_delete_emptydir_data(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "cache", 1, pool=namespace, pod_spec={"volumes": [{"name": "scratch", "emptyDir": {}}]})

    refused = run_plugin("drain", target, kubeconfig=kubeconfig)
    assert refused.returncode == 1
    assert "cannot delete Pods with local storage (use --delete-emptydir-data to override): " in refused.stderr

    accepted = run_plugin("drain", target, "--delete-emptydir-data", kubeconfig=kubeconfig)
    assert accepted.returncode == 0, accepted.stderr
    assert "Warning: deleting Pods with local storage: " in accepted.stderr


def test_a_bare_emptydir_pod_under_force_gets_kubectls_no_controller_warning_too(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    spec = {**manifests.placement(namespace), "volumes": [{"name": "scratch", "emptyDir": {}}]}
    cluster.core.create_namespaced_pod(namespace, manifests.pod("scratchpad", spec=spec))
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.name == "scratchpad" and p.status.phase == "Running",
        namespace=namespace,
        timeout=30,
        what="pod scratchpad running",
    )

    result = run_plugin("drain", target, "--force", "--delete-emptydir-data", kubeconfig=kubeconfig)

    assert result.returncode == 0, result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    # kubectl's line (the last filter's) and ours (the first filter's), for the same pod.
    assert f"deleting Pods that declare no controller: {namespace}/scratchpad" in warning
    assert f"deleting Pods with local storage: {namespace}/scratchpad" in warning
    assert "pod/scratchpad evicted" in result.stdout
    assert pods_on(cluster, target) == []


def test_unreplicated_pods_need_force_and_finished_pods_never_do(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    cluster.core.create_namespaced_pod(namespace, manifests.pod("bare", spec=manifests.placement(namespace)))
    cluster.core.create_namespaced_pod(
        namespace,
        manifests.pod(
            "finished",
            restart_policy="Never",
            annotations={manifests.BEHAVIOUR: "succeed"},
            spec=manifests.placement(namespace),
        ),
    )
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.name == "finished" and p.status.phase == "Succeeded",
        namespace=namespace,
        timeout=30,
        what="pod finished",
    )
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.name == "bare" and p.status.phase == "Running",
        namespace=namespace,
        timeout=30,
        what="pod bare running",
    )

    refused = run_plugin("drain", target, kubeconfig=kubeconfig)
    assert refused.returncode == 1
    assert (
        f"cannot delete Pods that declare no controller (use --force to override): {namespace}/bare" in refused.stderr
    )
    assert "finished" not in refused.stderr  # finished pods are always removable
    assert {p.metadata.name for p in pods_on(cluster, target)} == {"bare", "finished"}

    forced = run_plugin("drain", target, "--force", kubeconfig=kubeconfig)
    assert forced.returncode == 0, forced.stderr
    assert f"Warning: deleting Pods that declare no controller: {namespace}/bare" in forced.stderr
    assert pods_on(cluster, target) == []


def test_pod_selector_limits_what_is_evicted(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 2, pool=namespace)
    deploy(cluster, namespace, "db", 2, pool=namespace)

    result = drain(kubeconfig, target, "--pod-selector", "app=web")

    assert result.returncode == 0, result.stderr
    gone = {e["pod"]["name"].rsplit("-", 2)[0] for e in by_type(result, "PodGone")}
    assert gone == {"web"}
    assert len(by_type(result, "PodGone")) == 2
    remaining = {p.metadata.labels["app"] for p in pods_on(cluster, target) if p.metadata.deletion_timestamp is None}
    assert remaining == {"db"}


def test_disable_eviction_deletes_despite_a_pdb(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 2, pool=namespace)
    add_pdb(cluster, namespace, "strict", app="web", expected=2, max_unavailable=0)

    names = sorted(p.metadata.name for p in pods_on(cluster, target))

    result = run_plugin("drain", target, "--disable-eviction", "--timeout", "60s", kubeconfig=kubeconfig)

    assert result.returncode == 0, result.stderr
    # kubectl's words for a deletion: no "evicting pod" line, and "pod/x deleted", never "evicted".
    assert "evicting" not in result.stdout
    assert "evicted" not in result.stdout
    assert sorted(line for line in result.stdout.splitlines() if line.startswith("pod/")) == [
        f"pod/{name} deleted" for name in names
    ]
    assert "blocked" not in result.stderr
    assert not set(names) & {p.metadata.name for p in pods_on(cluster, target)}


def test_grace_period_overrides_the_pods_own(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(
        cluster,
        namespace,
        "slowstop",
        1,
        pool=namespace,
        annotations={manifests.ON_SIGTERM: "ignore"},
        pod_spec={"terminationGracePeriodSeconds": 120},
    )
    pods = Timeline().watch("pod", cluster.core.list_namespaced_pod, namespace=namespace)

    result = drain(kubeconfig, target, "--grace-period", "2")
    pods.stop()

    assert result.returncode == 0, result.stderr
    marked = next(w for w in pods.writes("pod") if w.obj.metadata.deletion_timestamp is not None)
    gone = next(w for w in pods.writes("pod") if w.type == "DELETED" and w.name == marked.name)
    # The API server took the grace period we asked for the pod's deletion, not its own 120 s ...
    asked = marked.obj.metadata.deletion_grace_period_seconds
    assert asked == 2, f"the API server was asked for a grace period of {asked} s"
    # ... and the pod, which ignores SIGTERM, lived through exactly that: not killed at once, not kept 120 s.
    assert 1.5 <= gone.at - marked.at < 60, gone.at - marked.at
    (reported,) = by_type(result, "PodGone")
    assert reported["pod"]["name"] == marked.name
    assert 2.0 <= reported["after"] < 5.0, reported


# --- dry runs and plans -----------------------------------------------------------------------------


def snapshot(cluster: Cluster, namespace: str, node: str) -> dict[str, str]:
    versions = {f"node/{node}": cluster.core.read_node(node).metadata.resource_version}
    for pod in cluster.core.list_namespaced_pod(namespace).items:
        versions[f"pod/{pod.metadata.name}"] = pod.metadata.resource_version
    for pdb in cluster.policy.list_namespaced_pod_disruption_budget(namespace).items:
        versions[f"pdb/{pdb.metadata.name}"] = pdb.metadata.resource_version
    return versions


@pytest.mark.parametrize("mode", ["client", "server"])
def test_dry_run_changes_nothing(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, mode: str
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 3, pool=namespace)
    add_pdb(cluster, namespace, "web", app="web", expected=3, max_unavailable=1)
    before = snapshot(cluster, namespace, target)

    result = run_plugin("drain", target, f"--dry-run={mode}", kubeconfig=kubeconfig)

    assert result.returncode == 0, result.stderr
    suffix = "(dry run)" if mode == "client" else "(server dry run)"
    assert f"node/{target} cordoned {suffix}" in result.stdout
    assert result.stdout.count(f"evicting pod {namespace}/web-") >= 3
    assert snapshot(cluster, namespace, target) == before


def test_plan_lists_every_pod_with_its_verdict(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    import json

    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 2, pool=namespace)
    add_pdb(cluster, namespace, "web", app="web", expected=2, max_unavailable=0)
    deploy(cluster, namespace, "api", 1, pool=namespace)
    add_pdb(cluster, namespace, "api-a", app="api", expected=1, max_unavailable=1)
    add_pdb(cluster, namespace, "api-b", app="api", expected=1, max_unavailable=1)
    cluster.core.create_namespaced_pod(namespace, manifests.pod("bare", spec=manifests.placement(namespace)))
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.name == "bare" and is_ready(p),
        namespace=namespace,
        timeout=30,
        what="pod bare Ready",
    )
    before = snapshot(cluster, namespace, target)

    result = run_plugin("drain", target, "--plan", "-o", "json", kubeconfig=kubeconfig)

    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    (node,) = plan["nodes"]
    verdicts = {p["pod"]["name"].split("-")[0]: (p["verdict"], p["reason"], p["pdbs"]) for p in node["pods"]}
    assert verdicts["web"][0] == "blocked"
    assert "allows 0 disruptions" in verdicts["web"][1]
    assert verdicts["api"][0] == "error"
    assert f"{namespace}/api-a" in verdicts["api"][1]
    assert f"{namespace}/api-b" in verdicts["api"][1]
    assert verdicts["bare"][0] == "error"
    assert any("Pods that declare no controller" in e for e in node["errors"])
    assert snapshot(cluster, namespace, target) == before


# --- failures -----------------------------------------------------------------------------------------


def test_timeout_fails_leaves_the_node_cordoned_and_lists_the_pods(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 2, pool=namespace)
    add_pdb(cluster, namespace, "web", app="web", expected=2, max_unavailable=0)

    started = time.monotonic()
    result = run_plugin("drain", target, "--timeout", "3s", kubeconfig=kubeconfig)
    elapsed = time.monotonic() - started

    assert result.returncode == 1
    assert elapsed < 30
    assert node_state(cluster, target)[0] is True
    assert "left cordoned" in result.stderr
    pods = sorted(p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items)
    # kubectl's error per pod, its Go duration form, and its aggregate of the two in the node's line.
    errors = [f'error when evicting pods/"{name}" -n "{namespace}": global timeout reached: 3s' for name in pods]
    for error, name in zip(errors, pods, strict=True):
        assert error in result.stderr.splitlines()
        assert f"pod {namespace}/{name}: global timeout reached: 3s" in result.stderr
    assert f'error: unable to drain node "{target}" due to error: [{", ".join(errors)}], continuing command...' in (
        result.stderr
    )


def test_a_pod_still_terminating_at_the_timeout_is_worded_like_kubectl(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(
        cluster,
        namespace,
        "slowstop",
        1,
        pool=namespace,
        annotations={manifests.ON_SIGTERM: "ignore"},
        pod_spec={"terminationGracePeriodSeconds": 120},
    )
    (name,) = [p.metadata.name for p in pods_on(cluster, target)]

    result = run_plugin("drain", target, "--timeout", "3s", kubeconfig=kubeconfig)

    assert result.returncode == 1
    error = f'error when waiting for pod "{name}" in namespace "{namespace}" to terminate: global timeout reached: 3s'
    assert error in result.stderr.splitlines()
    assert f'error: unable to drain node "{target}" due to error: {error}, continuing command...' in result.stderr
    assert node_state(cluster, target)[0] is True


def test_uncordon_on_failure(cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    add_pdb(cluster, namespace, "web", app="web", expected=1, max_unavailable=0)

    result = run_plugin("drain", target, "--timeout", "2s", "--uncordon-on-failure", kubeconfig=kubeconfig)

    assert result.returncode == 1
    assert f"node/{target} uncordoned" in result.stdout
    assert node_state(cluster, target)[0] is False


def test_two_pdbs_on_one_pod_fail_fast_naming_both(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    add_pdb(cluster, namespace, "first", app="web", expected=1, max_unavailable=1)
    add_pdb(cluster, namespace, "second", app="web", expected=1, max_unavailable=1)

    started = time.monotonic()
    result = drain(kubeconfig, target)
    elapsed = time.monotonic() - started

    assert result.returncode == 1
    assert elapsed < 20  # no endless retry
    (failed,) = by_type(result, "PodFailed")
    assert f"{namespace}/first" in failed["reason"]
    assert f"{namespace}/second" in failed["reason"]
    assert len(by_type(result, "EvictionStarted")) == 1


@pytest.mark.serial  # counts the API server's 403 answers to evictions, which any test's drain adds to
def test_terminating_namespace_is_waited_out_like_kubectl(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    doomed = f"{namespace}-doomed"[:63]
    create_namespace(cluster, doomed)
    held = manifests.deployment("held", replicas=1, pod_spec=manifests.placement(namespace))
    held["spec"]["template"]["metadata"]["finalizers"] = ["rollout-plus.test/hold"]
    cluster.apps.create_namespaced_deployment(doomed, held)
    pod = watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.status.phase == "Running",
        namespace=doomed,
        timeout=30,
        what="held pod running",
    )
    cluster.core.delete_namespace(doomed)
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.deletion_timestamp is not None,
        namespace=doomed,
        timeout=30,
        what="the pod to be terminating",
    )

    refused_before = evictions_answered(cluster, 403)

    # Released only once the drain has been refused (403, NamespaceTerminating) and so is waiting the pod
    # out: its EvictionStarted line, then the API server's count of 403 answers to an eviction.
    drain = RunningPlugin("drain", target, "--timeout", "60s", "-o", "jsonl", kubeconfig=kubeconfig)
    try:
        drain.wait_for(
            lambda line: '"EvictionStarted"' in line and pod.metadata.name in line,
            timeout=60,
            what=f"the eviction of {pod.metadata.name}",
        )
        watching.eventually(
            lambda: evictions_answered(cluster, 403) > refused_before,
            timeout=30,
            what="the API server to refuse the eviction (403)",
        )
        cluster.core.patch_namespaced_pod(pod.metadata.name, doomed, {"metadata": {"finalizers": None}})
    finally:
        result = drain.finish(timeout=90)

    assert result.returncode == 0, result.stderr
    assert [e["pod"]["name"] for e in by_type(result, "PodGone")] == [pod.metadata.name]
    assert len(by_type(result, "EvictionStarted")) == 1  # refused once, then waited out: no retry
    assert by_type(result, "PodFailed") == []


def test_unhealthy_pod_eviction_policy_always_allow_lets_a_never_ready_pod_go(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    target, other = dedicated_nodes(2)
    # Two healthy pods elsewhere, one never-ready pod on the target, one PDB over all three
    # that needs 3 healthy: the budget is already broken, so only AlwaysAllow lets the sick pod go.
    deploy(cluster, namespace, "steady", 2, pool=namespace, node=other, labels={"tier": "shop"})
    deploy(
        cluster,
        namespace,
        "sick",
        1,
        pool=namespace,
        node=target,
        labels={"tier": "shop"},
        annotations={manifests.BEHAVIOUR: "never-ready"},
        wait=False,
    )
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.labels.get("app") == "sick" and p.status.phase == "Running",
        namespace=namespace,
        timeout=30,
        what="sick pod running",
    )
    budget = manifests.pdb("shop", app="unused", min_available=3)
    budget["spec"]["selector"] = {"matchLabels": {"tier": "shop"}}

    budget["spec"]["unhealthyPodEvictionPolicy"] = "IfHealthyBudget"
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, budget)
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status is not None and p.status.expected_pods == 3,
        namespace=namespace,
        timeout=30,
        what="PDB processed",
    )
    blocked = drain(kubeconfig, target, "--timeout", "3s")
    assert blocked.returncode == 1
    assert by_type(blocked, "PodGone") == []

    cluster.policy.patch_namespaced_pod_disruption_budget(
        "shop", namespace, {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}
    )
    plan = run_plugin("drain", target, "--plan", "-o", "json", kubeconfig=kubeconfig)
    assert "AlwaysAllow" in plan.stdout
    allowed = drain(kubeconfig, target, "--timeout", "30s")
    assert allowed.returncode == 0, allowed.stderr
    assert [e["pod"]["name"].split("-")[0] for e in by_type(allowed, "PodGone")] == ["sick"]


# --- several nodes ---------------------------------------------------------------------------------------


def test_node_batch_waits_for_evicted_workloads_between_batches(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    first, second, spare = dedicated_nodes(3)
    with only_schedulable(cluster, first, [second, spare]):
        deploy(cluster, namespace, "web", 2, pool=namespace, annotations={manifests.READY_AFTER: "2s"})
    with only_schedulable(cluster, second, [first, spare]):
        deploy(cluster, namespace, "api", 2, pool=namespace, annotations={manifests.READY_AFTER: "2s"})
    timeline = (
        Timeline()
        .watch("pod", cluster.core.list_namespaced_pod, namespace=namespace)
        .watch("node", cluster.core.list_node, label_selector=f"{manifests.POOL_LABEL}={namespace}")
    )

    result = drain(kubeconfig, first, second, "--node-batch", "1")
    timeline.stop()

    assert result.returncode == 0, result.stderr
    # What the cluster did, in its order: the second node was cordoned only once web, evicted from the first,
    # had its 2 pods Ready elsewhere again.
    second_cordoned = timeline.first(lambda w, _: w.kind == "node" and w.name == second and cordoned(w.obj))
    assert second_cordoned is not None
    pods = timeline.state_after(second_cordoned)["pod"].values()
    web = [p for p in pods if p.metadata.labels.get("app") == "web" and p.spec.node_name != first and is_healthy(p)]
    assert len(web) == 2, f"{second} was cordoned while web had {len(web)} of its 2 pods Ready off {first}"
    # Our events say the same.
    kinds = [e["type"] for e in events(result)]
    first_batch_end = kinds.index("NodeDrained")
    second_batch = kinds.index("BatchStarted", first_batch_end)
    assert "WorkloadsAvailable" in kinds[first_batch_end:second_batch]
    # Nodes are cordoned batch by batch, not all up front.
    cordoned_said = [e["node"] for e in by_type(result, "NodeCordoned")]
    assert cordoned_said == [first, second]
    assert kinds.index("NodeCordoned", first_batch_end) > first_batch_end


def one_pod_on_each(cluster: Cluster, namespace: str, nodes: list[str]) -> None:
    """A one-replica Deployment on each of ``nodes`` (its pod Running there): something each drain must evict."""
    for i, node in enumerate(nodes):
        deploy(cluster, namespace, f"on{i}", 1, pool=namespace, node=node, wait=False)
    watching.until_collection(
        cluster.core.list_namespaced_pod,
        lambda pods: sorted(p.spec.node_name for p in pods if p.status.phase == "Running") == sorted(nodes),
        namespace=namespace,
        timeout=60,
        what="one pod running on each node",
    )


def cordons_before_the_first_eviction(timeline: Timeline, nodes: list[str]) -> list[str]:
    """The nodes that were not cordoned yet when the cluster marked the first of their pods for deletion."""
    evicted = timeline.first(lambda w, _: w.kind == "pod" and w.obj.spec.node_name in nodes and marked_for_deletion(w))
    assert evicted is not None, "no pod of these nodes was evicted"
    cordons = {
        node: timeline.first(lambda w, _, node=node: w.kind == "node" and w.name == node and cordoned(w.obj))
        for node in nodes
    }
    return [node for node, write in cordons.items() if write is None or write.revision > evicted.revision]


def test_several_nodes_by_selector_are_all_cordoned_first(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    nodes = dedicated_nodes(2)
    one_pod_on_each(cluster, namespace, nodes)
    timeline = (
        Timeline()
        .watch("pod", cluster.core.list_namespaced_pod, namespace=namespace)
        .watch("node", cluster.core.list_node, label_selector=f"{manifests.POOL_LABEL}={namespace}")
    )

    result = drain(kubeconfig, "-l", f"{manifests.POOL_LABEL}={namespace}")
    timeline.stop()

    assert result.returncode == 0, result.stderr
    # In the cluster: both nodes cordoned before the first pod of either was evicted.
    late = cordons_before_the_first_eviction(timeline, nodes)
    assert late == [], f"not yet cordoned when the cluster took the first pod: {late}"
    kinds = [e["type"] for e in events(result)]
    # The job's own events frame the drain's: both nodes are cordoned before anything else happens.
    assert kinds[0] == "JobStarted"
    assert kinds[-1] == "JobFinished"
    assert kinds[1:3] == ["NodeCordoned", "NodeCordoned"]
    assert sorted(e["node"] for e in by_type(result, "NodeDrained")) == sorted(nodes)


def test_drain_records_events_on_the_node(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)

    assert run_plugin("drain", target, kubeconfig=kubeconfig).returncode == 0

    recorded = cluster.core.list_namespaced_event("default", field_selector=f"involvedObject.name={target}").items
    reasons = [e.reason for e in recorded if e.source and e.source.component == "kubectl-rollout-plus"]
    assert {"Cordoned", "Draining", "Drained"} <= set(reasons)


# --- bad input ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["no-such-node"], 1, 'node "no-such-node" not found'),
        ([], 2, "drain needs NODE names or -l/--selector"),
        (["NODE", "-l", "a=b"], 2, "cannot specify both a node name and a --selector option"),
        (["NODE", "--timeout", "-5s"], 2, "negative duration"),
        (["NODE", "--pod-selector", "app in (web"], 2, "is not a valid label selector"),
        (["-l", "bad key=x"], 2, "is not a valid label selector"),
    ],
)
def test_bad_input_is_one_clear_line_and_changes_nothing(
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
    args: list[str],
    code: int,
    message: str,
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    before = snapshot(cluster, namespace, target)
    args = [target if a == "NODE" else a for a in args]

    result = run_plugin("drain", *args, kubeconfig=kubeconfig)

    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(cluster, namespace, target) == before


#: the permissions a drain of named nodes checks before its first change (docs/rbac/drain.yaml), worded as its refusal
DRAIN_NEEDS = (
    "get nodes",
    "list pods",
    "list poddisruptionbudgets.policy",
    "watch pods",
    "watch poddisruptionbudgets.policy",
    "patch nodes",
    "create pods/eviction",
)


def test_no_permission_names_what_is_missing_and_changes_nothing(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    before = snapshot(cluster, namespace, target)

    for context, user, groups in (
        ("rollout-plus-nobody", "nobody", ()),
        ("rollout-plus-viewer", "viewer", ("rollout-plus:viewers",)),
    ):
        result = run_plugin("drain", target, "--context", context, kubeconfig=kubeconfig)

        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        # Exactly what the cluster's authorizer refuses this user among what a drain needs, in one line.
        missing = [need for need in DRAIN_NEEDS if not allowed(cluster, need, user=user, groups=groups)]
        assert missing, f"{user} may do all a drain needs"
        assert lines[0] == (
            f'error: context "{context}" may not {", ".join(missing)}, which kubectl rollout-plus drain needs; '
            "nothing was changed. Use a context with these permissions (docs/rbac.md has a Role for each command)"
        )
        assert snapshot(cluster, namespace, target) == before


def pdb_held_by_a_never_ready_pod(cluster: Cluster, namespace: str, target: str, other: str) -> Any:
    """One Ready pod on ``target``, one never-Ready pod on ``other``, and PDB ``shop`` over both that needs 1
    healthy: the sick pod is why the healthy one may not go. Returns the sick pod."""
    deploy(cluster, namespace, "front", 1, pool=namespace, node=target, labels={"tier": "shop"})
    deploy(
        cluster,
        namespace,
        "sick",
        1,
        pool=namespace,
        node=other,
        labels={"tier": "shop"},
        annotations={manifests.BEHAVIOUR: "never-ready"},
        wait=False,
    )
    sick = watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.labels.get("app") == "sick" and p.status.phase == "Running",
        namespace=namespace,
        timeout=30,
        what="sick pod running",
    )
    budget = manifests.pdb("shop", app="unused", min_available=1)
    budget["spec"]["selector"] = {"matchLabels": {"tier": "shop"}}
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, budget)
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status is not None and p.status.expected_pods == 2 and p.status.observed_generation == 1,
        namespace=namespace,
        timeout=30,
        what="PDB processed",
    )
    return sick


def test_a_held_eviction_names_the_pdbs_unhealthy_pod_its_node_and_why(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    target, other = dedicated_nodes(2)
    sick = pdb_held_by_a_never_ready_pod(cluster, namespace, target, other)

    held = drain(kubeconfig, target, "--timeout", "4s")

    assert held.returncode == 1
    assert by_type(held, "PodGone") == []
    reports = by_type(held, "PdbPodsUnhealthy")
    # Said once: the pods did not change while the drain retried.
    assert len(reports) == 1, reports
    (report,) = reports
    assert (report["pdb"], report["unhealthy"], report["selected"]) == (f"{namespace}/shop", 1, 2)
    (named,) = report["pods"]
    ready = next((c for c in sick.status.conditions or [] if c.type == "Ready"), None)
    since = ready.last_transition_time if ready is not None else sick.metadata.creation_timestamp
    assert named["pod"] == {"namespace": namespace, "name": sick.metadata.name, "node": other}
    assert named["reason"] == "not Ready"
    assert named["since"] == pytest.approx(since.timestamp(), abs=1)
