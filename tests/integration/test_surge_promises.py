"""README promises of `drain --surge` that had no test (issue 19): a count someone else changes mid-drain is left
alone (only the record goes), and a second drain never surges a Deployment another one is surging.

What the Deployment went through is read from its own watch stream (every spec.replicas and surge record it had,
in the API server's order), not from the drains' output.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import manifests
import watching
from cluster_setup import deploy, until_scheduler_skips
from integration.test_drain import add_pdb, by_type, node_state, only_schedulable, pods_on
from kubernetes import watch
from plugin import RunningPlugin, run_plugin

from kubectl_rollout.kube import record_names
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.watched_collection import stop_watch


class DeploymentHistory:
    """Every (spec.replicas, surge-by label) a Deployment had, from before the drains until ``stop``, in the
    API server's order; the watch resumes from its last resourceVersion when a stream ends, and a watch that
    fails fails the test at ``stop``."""

    def __init__(self, cluster: Cluster, namespace: str, name: str) -> None:
        self.cluster, self.namespace, self.name = cluster, namespace, name
        self.states: list[tuple[int, str | None]] = []
        self._seen_version = ""
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._watch = watch.Watch()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _note(self, deployment: Any) -> None:
        labels = deployment.metadata.labels or {}
        state = (int(deployment.spec.replicas), labels.get(record_names.SURGED_BY))
        with self._changed:
            if not self.states or self.states[-1] != state:
                self.states.append(state)
            self._seen_version = deployment.metadata.resource_version
            self._changed.notify_all()

    def start(self) -> DeploymentHistory:
        listing = self.cluster.apps.list_namespaced_deployment(
            self.namespace, field_selector=f"metadata.name={self.name}"
        )
        for deployment in listing.items:
            self._note(deployment)
        self._version = listing.metadata.resource_version
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                for event in self._watch.stream(
                    self.cluster.apps.list_namespaced_deployment,
                    self.namespace,
                    field_selector=f"metadata.name={self.name}",
                    resource_version=self._version,
                    timeout_seconds=60,
                ):
                    self._version = event["object"].metadata.resource_version
                    self._note(event["object"])
        except Exception as err:
            if not self._stopping.is_set():
                self.error = err
        finally:
            with self._changed:
                self._changed.notify_all()

    def stop(self, timeout: float = 30) -> list[tuple[int, str | None]]:
        """Once the watch has delivered the Deployment as it is now: the states it went through."""
        now = self.cluster.apps.read_namespaced_deployment(self.name, self.namespace).metadata.resource_version
        with self._changed:
            caught_up = self._changed.wait_for(
                lambda: self._seen_version == now or self.error is not None or not self._thread.is_alive(),
                timeout=timeout,
            )
        self._stopping.set()
        stop_watch(self._watch)
        self._thread.join(10)
        if self.error is not None:
            raise self.error
        assert caught_up, "the Deployment's watch stopped before the test ended"
        return self.states


class Drain:
    """`drain ... -o jsonl` in the background, its events read as they come."""

    def __init__(self, kubeconfig: Path, *args: str) -> None:
        self.plugin = RunningPlugin("drain", *args, "-o", "jsonl", kubeconfig=kubeconfig)
        self.events: list[dict[str, Any]] = []

    def until(self, kind: str, timeout: float = 120) -> dict[str, Any]:
        """Read events until one of type ``kind``."""

        def takes(line: str) -> bool:
            if not line.startswith("{"):
                return False
            self.events.append(json.loads(line))
            return self.events[-1]["type"] == kind

        self.plugin.wait_for(takes, timeout=timeout, what=f"a {kind} event")
        return self.events[-1]

    def finish(self, timeout: float = 120) -> tuple[int, str]:
        taken = len(self.plugin.stdout)
        result = self.plugin.finish(timeout)
        rest = result.stdout.splitlines()[taken:]
        self.events += [json.loads(line) for line in rest if line.startswith("{")]
        return result.returncode, result.stderr

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]


def kube_events(cluster: Cluster, namespace: str, name: str) -> list[Any]:
    return [
        e
        for e in cluster.core.list_namespaced_event(namespace).items
        if e.involved_object.kind == "Deployment" and e.involved_object.name == name
    ]


# Pods that linger 2 s after their eviction, and one eviction at a time: a gap between two evictions of one
# surged Deployment, in which somebody else changes its count.
_LINGER = {manifests.ON_SIGTERM: "ignore", manifests.READY_AFTER: "1s"}


def test_a_count_changed_by_someone_else_mid_drain_is_left_alone_and_only_the_record_removed(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    target, spare = dedicated_nodes(2)
    with only_schedulable(cluster, target, [spare]):
        deploy(
            cluster,
            namespace,
            "web",
            2,
            pool=namespace,
            annotations=_LINGER,
            pod_spec={"terminationGracePeriodSeconds": 2},
        )
        add_pdb(cluster, namespace, "web", app="web", expected=2, min_available=2)
    history = DeploymentHistory(cluster, namespace, "web").start()

    drain = Drain(kubeconfig, target, "--surge", "--max-concurrent-evictions", "1", "--timeout", "90s")
    started = drain.until("SurgeStarted")
    assert (started["original"], started["replicas"]) == (2, 4)
    drain.until("PodEvicted")
    # The drain lowered the count to 3 with that eviction; a person now scales the Deployment, as
    # `kubectl scale --replicas 5` does (a merge patch, no test of the old value).
    cluster.apps.patch_namespaced_deployment("web", namespace, {"spec": {"replicas": 5}})
    code, stderr = drain.finish()

    assert code == 0, stderr
    states = history.stop()
    (restored,) = drain.of_type("SurgeRestored")
    surged_by = restored["drain"]
    # Raised with its record, lowered by one per eviction until someone else's 5, and never touched again:
    # the next eviction's JSON patch failed its test, and the end removed the record alone.
    assert states == [(2, None), (4, surged_by), (3, surged_by), (5, surged_by), (5, None)], states
    assert (restored["replicas"], restored["count_restored"], restored["leftover"]) == (5, False, False)
    deployment = cluster.apps.read_namespaced_deployment("web", namespace)
    assert deployment.spec.replicas == 5
    assert not {k for k in deployment.metadata.labels or {} if k.startswith("rollout-plus.kubectl.io/surge")}
    (said,) = [e for e in kube_events(cluster, namespace, "web") if e.reason == "SurgeRestored"]
    assert said.message == f"Surge of drain {surged_by} ended; the count had been changed to 5 and was left so"
    assert [p for p in pods_on(cluster, target) if p.metadata.namespace == namespace] == []
    assert len(drain.of_type("PodEvicted")) == 2


def test_a_second_drain_never_surges_a_deployment_another_drain_is_surging(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    """Two drains of two nodes that both hold a pod of one Deployment. The first surges it and is held up while
    its extra pod cannot be scheduled (the other nodes are cordoned), so its surge is live (its record on the
    Deployment, its Lease renewed) for as long as the test wants; the second drain runs meanwhile."""
    first, second, spare = dedicated_nodes(3)
    with only_schedulable(cluster, first, [second, spare]):
        deploy(cluster, namespace, "web", 1, pool=namespace, annotations={manifests.READY_AFTER: "1s"})
    with only_schedulable(cluster, second, [first, spare]):
        cluster.apps.patch_namespaced_deployment("web", namespace, {"spec": {"replicas": 2}})
        watching.until(
            cluster.apps.list_namespaced_deployment,
            lambda d: d.metadata.name == "web" and (d.status.available_replicas or 0) == 2,
            namespace=namespace,
            timeout=60,
            what="web at 2",
        )
    add_pdb(cluster, namespace, "web", app="web", expected=2, min_available=2)
    history = DeploymentHistory(cluster, namespace, "web").start()
    # No room for an extra pod anywhere: the first drain's surge stays live until the spare node takes pods.
    for node in (second, spare):
        cluster.core.patch_node(node, {"spec": {"unschedulable": True}})
        until_scheduler_skips(cluster, node)

    one = Drain(kubeconfig, first, "--surge", "--timeout", "90s")
    assert one.until("SurgeStarted")["replicas"] == 3
    record = cluster.apps.read_namespaced_deployment("web", namespace).metadata.labels[record_names.SURGED_BY]

    other = run_plugin("drain", second, "--surge", "--timeout", "2s", "-o", "jsonl", kubeconfig=kubeconfig)

    # Only now may the first drain's extra pod run: it was surging all along the second drain.
    assert by_type(other, "SurgeStarted") == []
    cluster.core.patch_node(spare, {"spec": {"unschedulable": None}})
    code, stderr = one.finish()

    assert code == 0, stderr
    states = history.stop()
    # One surge only, the first drain's, recorded as its own; the second one left the count and record alone.
    assert states == [(2, None), (3, record), (2, record), (2, None)], states
    assert one.of_type("SurgeRestored")[0]["drain"] == record
    assert other.returncode == 1  # its pod waited for the PDB, as without --surge, until its timeout
    (skipped,) = by_type(other, "SurgeSkipped")
    assert skipped["workload"]["name"] == "web"
    # Named as the live surge it is, from the first drain's Lease (not as a leftover to restore).
    assert skipped["reason"].startswith(f"Deployment {namespace}/web is being surged by "), skipped["reason"]
    assert f"lease {namespace}/rollout-plus.surge.web valid for" in skipped["reason"]
    assert skipped["reason"].endswith("another drain is surging it; its pods wait for their PDB")
    assert by_type(other, "SurgeRestored") == []
    assert [p.metadata.name for p in pods_on(cluster, second) if p.metadata.namespace == namespace]
    assert node_state(cluster, second)[0] is True
