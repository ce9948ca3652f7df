"""The job runner against the real control plane: no credential in a spec or an event; a prompt cancel."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import manifests
import watching
from kubernetes import watch

from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.eviction import EvictionStarted, PodGone
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted, JobState
from kubectl_rollout.jobs.events.stream import EventStream
from kubectl_rollout.jobs.runner import run_job
from kubectl_rollout.jobs.spec import Connection, DrainJob, DrainOptions, JobKind, JobSpec
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.watched_collection import stop_watch

OPERATOR = "rollout-plus-operator"


def _place(
    cluster: Cluster, namespace: str, node: str, spare: str, *, replicas: int, ready_after: str, max_unavailable: int
) -> None:
    """``replicas`` pods of Deployment web on ``node``, behind a PDB; replacements can go to ``spare``."""
    body = manifests.deployment(
        "web",
        replicas=replicas,
        annotations={manifests.READY_AFTER: ready_after},
        pod_spec=manifests.placement(namespace),
    )
    cluster.core.patch_node(spare, {"spec": {"unschedulable": True}})
    try:
        cluster.apps.create_namespaced_deployment(namespace, body)
        watching.until(
            cluster.apps.list_namespaced_deployment,
            lambda d: (d.status.available_replicas or 0) == replicas,
            namespace=namespace,
            timeout=90,
            what="web available",
        )
    finally:
        cluster.core.patch_node(spare, {"spec": {"unschedulable": None}})
    cluster.policy.create_namespaced_pod_disruption_budget(
        namespace, manifests.pdb("web", app="web", max_unavailable=max_unavailable)
    )
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status is not None and p.status.expected_pods == replicas,
        namespace=namespace,
        timeout=30,
        what="the PDB processed",
    )


def _token_of(kubeconfig: Path, user: str) -> str:
    document = json.loads(kubeconfig.read_text())
    return str(next(u["user"]["token"] for u in document["users"] if u["name"] == user))


def test_a_job_spec_and_every_event_hold_no_credential(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    node, spare = dedicated_nodes(2)
    _place(cluster, namespace, node, spare, replicas=2, ready_after="0s", max_unavailable=1)
    token = _token_of(kubeconfig, OPERATOR)
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=(str(kubeconfig),), context=OPERATOR, namespace=namespace),
        drain=DrainJob(nodes=(node,), options=DrainOptions(timeout=120)),
    )
    seen: list[Envelope] = []

    result = run_job(spec, EventStream("secret-test", seen.append).emit, threading.Event())

    assert result.state is JobState.SUCCEEDED, result
    assert token not in spec.to_json()
    assert token not in JobSpec.from_json(spec.to_json()).to_json()
    assert len(seen) > 5
    for envelope in seen:
        assert token not in json.dumps(envelope.as_dict())
    assert isinstance(seen[0].event, JobStarted)
    assert isinstance(seen[-1].event, JobFinished)


class _Deletions:
    """When each pod of the namespace was first seen marked for deletion (watch arrival, monotonic)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.marked: dict[str, float] = {}
        self._stopping = False
        self._watch = watch.Watch()
        listing = cluster.core.list_namespaced_pod(namespace)
        self._thread = threading.Thread(
            target=self._run, args=(cluster, namespace, listing.metadata.resource_version), daemon=True
        )
        self._thread.start()

    def _run(self, cluster: Cluster, namespace: str, resource_version: str) -> None:
        stream = self._watch.stream(
            cluster.core.list_namespaced_pod, namespace, resource_version=resource_version, timeout_seconds=300
        )
        try:
            for item in stream:
                pod = item["object"]
                if pod.metadata.deletion_timestamp is not None:
                    self.marked.setdefault(pod.metadata.name, time.monotonic())
        except Exception:
            if not self._stopping:
                raise

    def stop(self) -> None:
        self._stopping = True
        stop_watch(self._watch)


def test_cancelling_a_drain_stops_new_evictions_within_a_second_and_leaves_the_node_cordoned(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    node, spare = dedicated_nodes(2)
    # Six pods behind maxUnavailable 1, replacements Ready only after 4 s: the drain goes one pod at a time.
    _place(cluster, namespace, node, spare, replicas=6, ready_after="4s", max_unavailable=1)
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        drain=DrainJob(nodes=(node,)),
    )
    seen: list[tuple[float, Envelope]] = []
    first_gone = threading.Event()

    def sink(envelope: Envelope) -> None:
        seen.append((time.monotonic(), envelope))
        if isinstance(envelope.event, PodGone):
            first_gone.set()

    cancel = threading.Event()
    deletions = _Deletions(cluster, namespace)
    outcome: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: outcome.update(result=run_job(spec, EventStream("cancel-test", sink).emit, cancel))
    )
    runner.start()
    try:
        assert first_gone.wait(60), "the drain never evicted a pod"
        cancelled_at = time.monotonic()
        cancel.set()
        runner.join(30)
        assert not runner.is_alive(), "the drain did not stop within 30 s of the cancel"
        time.sleep(2)  # any eviction that slipped through would show in the watch by now
    finally:
        cancel.set()
        runner.join()
        deletions.stop()

    result = outcome["result"]
    assert result.state is JobState.CANCELLED, result
    assert result.exit_code == 1
    late = [e.event for t, e in seen if isinstance(e.event, EvictionStarted) and t > cancelled_at + 1.0]
    assert late == [], late
    # What the cluster saw, not what we logged: no pod was marked for deletion a second after the cancel.
    assert deletions.marked, "the watch saw no eviction at all"
    assert max(deletions.marked.values()) <= cancelled_at + 1.0, deletions.marked
    remaining = [p for p in cluster.core.list_namespaced_pod(namespace).items if p.spec.node_name == node]
    assert remaining, "every pod left the node: the cancel came too late to prove anything"
    assert cluster.core.read_node(node).spec.unschedulable is True
    assert isinstance(seen[-1][1].event, JobFinished)


def test_a_job_on_a_missing_node_fails_with_kubectls_words_and_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        drain=DrainJob(nodes=(f"{namespace}-no-such-node",)),
    )
    seen: list[Envelope] = []
    result = run_job(spec, EventStream("missing", seen.append).emit, threading.Event())
    assert result.state is JobState.FAILED
    assert result.exit_code == 1
    assert result.error.startswith(f'node "{namespace}-no-such-node" not found; nothing was changed')
    assert [type(e.event) for e in seen] == [JobStarted, JobFinished]
    assert not [n for n in cluster.core.list_node().items if n.metadata.name.startswith(namespace)]
