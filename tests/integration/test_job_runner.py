"""The job runner against the real control plane: no credential in a spec or an event; a prompt cancel."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import manifests
import watching
from cluster_setup import until_scheduler_skips
from watching import Follower

from kubectl_rollout.job_loop.loop import run_job
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.eviction import EvictionStarted, PodEvicted, PodGone
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted, JobState
from kubectl_rollout.jobs.events.stream import EventStream
from kubectl_rollout.jobs.spec import Connection, DrainJob, DrainOptions, JobKind, JobSpec
from kubectl_rollout.kube.cluster_access import Cluster

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
        until_scheduler_skips(cluster, spare)
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

    result = run_job(spec, JobContext(emit=EventStream("secret-test", seen.append).emit))

    assert result.state is JobState.SUCCEEDED, result
    assert token not in spec.to_json()
    assert token not in JobSpec.from_json(spec.to_json()).to_json()
    assert len(seen) > 5
    for envelope in seen:
        assert token not in json.dumps(envelope.as_dict())
    assert isinstance(seen[0].event, JobStarted)
    assert isinstance(seen[-1].event, JobFinished)


class _Deletions(Follower):
    """The pods of the namespace the cluster ever marked for deletion."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        super().__init__()
        self.cluster, self.namespace = cluster, namespace
        self.marked: set[str] = set()

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.core.list_namespaced_pod, {"namespace": self.namespace}

    def _seed(self, items: list[Any]) -> None:
        for pod in items:
            self._apply("ADDED", pod)

    def _apply(self, kind: str, pod: Any) -> None:
        if pod.metadata.deletion_timestamp is not None:
            self.marked.add(pod.metadata.name)

    def start(self) -> _Deletions:
        self._follow()
        return self

    def stop(self) -> set[str]:
        self._end()  # caught up with the cluster as it is now: a mark made before this is in ``marked``
        return set(self.marked)


def test_cancelling_a_drain_stops_new_evictions_within_a_second_and_leaves_the_node_cordoned(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    node, spare = dedicated_nodes(2)
    # Six pods behind maxUnavailable 1, replacements Ready only after 4 s: the drain goes one pod at a time, and
    # when the first pod is gone the next waits for its PDB (4 s), so no eviction is under way at the cancel.
    _place(cluster, namespace, node, spare, replicas=6, ready_after="4s", max_unavailable=1)
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        drain=DrainJob(nodes=(node,)),
    )
    seen: list[Envelope] = []
    first_gone = threading.Event()

    def sink(envelope: Envelope) -> None:
        seen.append(envelope)
        if isinstance(envelope.event, PodGone):
            first_gone.set()

    cancel = threading.Event()
    deletions = _Deletions(cluster, namespace).start()
    outcome: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: outcome.update(
            result=run_job(spec, JobContext(emit=EventStream("cancel-test", sink).emit, cancel=cancel))
        )
    )
    runner.start()
    try:
        assert first_gone.wait(60), "the drain never evicted a pod"
        # The events after this index came after the cancel (the sink runs in the job's thread, in order).
        at_cancel = len(seen)
        cancel.set()
        runner.join(30)
        assert not runner.is_alive(), "the drain did not stop within 30 s of the cancel"
    finally:
        cancel.set()
        runner.join()
        marked = deletions.stop()

    result = outcome["result"]
    assert result.state is JobState.CANCELLED, result
    assert result.exit_code == 1
    # Not one eviction after the cancel, in our events or in the cluster: no attempt after it, and the pods
    # marked for deletion (all of them, watched until after the job ended) are exactly those evicted before it.
    late = [e.event for e in seen[at_cancel:] if isinstance(e.event, EvictionStarted)]
    assert late == [], late
    evicted_before = {e.event.pod.name for e in seen[:at_cancel] if isinstance(e.event, PodEvicted)}
    assert evicted_before, "the drain evicted nothing before the cancel"
    assert marked == evicted_before, (marked, evicted_before)
    remaining = [p for p in cluster.core.list_namespaced_pod(namespace).items if p.spec.node_name == node]
    assert remaining, "every pod left the node: the cancel came too late to prove anything"
    assert cluster.core.read_node(node).spec.unschedulable is True
    assert isinstance(seen[-1].event, JobFinished)


def test_a_job_on_a_missing_node_fails_with_kubectls_words_and_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        drain=DrainJob(nodes=(f"{namespace}-no-such-node",)),
    )
    seen: list[Envelope] = []
    result = run_job(spec, JobContext(emit=EventStream("missing", seen.append).emit))
    assert result.state is JobState.FAILED
    assert result.exit_code == 1
    assert result.error.startswith(f'node "{namespace}-no-such-node" not found; nothing was changed')
    assert [type(e.event) for e in seen] == [JobStarted, JobFinished]
    assert not [n for n in cluster.core.list_node().items if n.metadata.name.startswith(namespace)]
