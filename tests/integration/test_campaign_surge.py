"""A running campaign asked to drain a node through a surge (``jobs surge``), against the real control plane:
the node a PDB holds drains with extra replicas first, the PDB never below its minimum, the count restored;
bad requests change nothing; a request survives an agent killed with SIGKILL."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import manifests
import pytest
from cluster_setup import deploy
from integration.test_agent import _follow, _wait_gone, agent_dir  # noqa: F401  (agent_dir: a fixture)
from integration.test_drain import add_pdb, only_schedulable, pods_on
from invariants import HealthyPods
from plugin import run_plugin

from kubectl_rollout.agent.client import cluster_calls, connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events import surge as surge_events
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.eviction import EvictionBlocked, PodFailed
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted
from kubectl_rollout.jobs.spec import CampaignJob, Connection, DrainOptions, JobKind, JobSpec, NodeOrder, OnBlocked
from kubectl_rollout.kube.cluster_access import Cluster

pytestmark = pytest.mark.timeout(240)


def _campaign(kubeconfig: Path, namespace: str, nodes: tuple[str, ...], *, soak: float = 0.0) -> JobSpec:
    """The nodes one at a time, in the order given, each waiting for its PDBs as long as it takes."""
    return JobSpec(
        kind=JobKind.CAMPAIGN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        campaign=CampaignJob(
            nodes=nodes,
            budget="1",
            order=NodeOrder.GIVEN,
            soak=soak,
            on_blocked=OnBlocked.WAIT,
            drain=DrainOptions(timeout=0),
        ),
    )


def _singleton_on(cluster: Cluster, namespace: str, target: str, others: list[str]) -> Any:
    """Deployment web: one pod, on ``target``, behind a PDB of minAvailable 1 (no eviction ever allowed)."""
    with only_schedulable(cluster, target, others):
        deploy(cluster, namespace, "web", 1, pool=namespace, annotations={manifests.READY_AFTER: "1s"})
        add_pdb(cluster, namespace, "web", app="web", expected=1, min_available=1)
    (pod,) = pods_on(cluster, target)
    return pod


def _of(seen: list[Envelope], kind: type[Any]) -> list[Any]:
    return [e.event for e in seen if isinstance(e.event, kind)]


def _replicas(cluster: Cluster, namespace: str) -> int:
    return int(cluster.apps.read_namespaced_deployment("web", namespace).spec.replicas)


def _held_by_web(kubeconfig: Path, namespace: str, first: str, target: str, pod: Any) -> tuple[Any, list[Envelope]]:
    """The campaign of ``first`` then ``target`` submitted to the agent, and its events until web's PDB holds
    ``pod`` on ``target`` (the first node, with no pod, is done by then)."""
    with connect(name="test") as agent:
        job = agent.submit(_campaign(kubeconfig, namespace, (first, target)))
    seen = _follow(job.id, until=lambda e: isinstance(e, EvictionBlocked) and e.pod.name == pod.metadata.name and e.pdb)
    return job, seen


def _ended_well(seen: list[Envelope]) -> None:
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished


def _drained_and_restored(cluster: Cluster, namespace: str, target: str) -> None:
    """No pod of the test left on ``target``, and web's count back at 1."""
    assert [p for p in pods_on(cluster, target) if p.metadata.namespace == namespace] == []
    assert _replicas(cluster, namespace) == 1


def test_jobs_surge_drains_the_blocked_node_through_a_surge_and_bad_requests_change_nothing(
    agent_dir: AgentPaths,  # noqa: F811  (the fixture imported above)
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    first, target, spare = dedicated_nodes(3)
    pod = _singleton_on(cluster, namespace, target, [first, spare])
    healthy = HealthyPods(cluster, namespace).start()
    try:
        # The first node (no pod) is done; the second waits for web's PDB, as long as it takes.
        job, before = _held_by_web(kubeconfig, namespace, first, target, pod)
        assert [e.node for e in _of(before, ev.NodeDone)] == [first]
        for args, words in (
            (("no-such-job",), "no job 'no-such-job'"),
            ((job.id, spare), f"node/{spare} is not in this campaign"),
            ((job.id, first), f"node/{first} is finished in this campaign"),
            ((job.id, "Not_A_Node"), "nodes[0]"),
        ):
            refused = run_plugin("jobs", "surge", *args)
            assert refused.returncode != 0, (args, refused.stdout)
            assert words in refused.stderr, (args, refused.stderr)
            assert "Traceback" not in refused.stderr
        # Nothing changed: nothing journaled, the pod where it was, web's count as it was.
        with connect(name="test") as agent:
            so_far = list(agent.attach(job.id, follow=False))
        assert _of(so_far, ev.SurgeRequested) == []
        assert [p.metadata.name for p in pods_on(cluster, target)] == [pod.metadata.name]
        assert _replicas(cluster, namespace) == 1

        # No node named: the blocked node of the current wave whose workload can surge.
        asked = run_plugin("jobs", "surge", job.id)
        assert asked.returncode == 0, asked.stderr
        assert f"node/{target}" in asked.stdout
        seen = _follow(job.id)
        healthy.settle({"web": 1})
    finally:
        minimum = healthy.stop()
    assert minimum == {"web": 1}  # never below the PDB's minimum
    _ended_well(seen)
    assert [e.nodes for e in _of(seen, ev.SurgeRequested)] == [(target,)]
    assert _of(seen, surge_events.SurgeStarted)
    assert [e.node for e in _of(seen, ev.NodeDone)] == [first, target]
    # The drain stopped for the surge is said as such, not as a failure of the node or of its pod.
    stopped = _of(seen, drain_events.NodeDrainStopped)
    assert [(e.node, e.pending) for e in stopped] == [(target, (f"{namespace}/{pod.metadata.name}",))]
    assert _of(seen, drain_events.NodeDrainFailed) == []
    assert _of(seen, PodFailed) == []
    _drained_and_restored(cluster, namespace, target)


def test_a_surge_request_survives_an_agent_sigkill_and_the_resumed_campaign_surges_the_node(
    agent_dir: AgentPaths,  # noqa: F811  (the fixture imported above)
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    first, target, spare = dedicated_nodes(3)
    _singleton_on(cluster, namespace, target, [first, spare])
    healthy = HealthyPods(cluster, namespace).start()
    try:
        # A 6 s soak after the first wave: the request for the second node, asked as the first wave starts, is
        # journaled, and the agent killed, before the second wave starts (if it started, it surges all the same).
        with connect(name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(_campaign(kubeconfig, namespace, (first, target), soak=6.0))
        _follow(job.id, until=lambda e: isinstance(e, ev.WaveStarted))
        with connect(name="test") as agent:
            agent.run(cluster_calls.surge(job.id, [target]))
        before = _follow(job.id, until=lambda e: isinstance(e, ev.SurgeRequested))
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        # The next client starts a new agent, which resumes the campaign from the journal. Without the request
        # kept, the second node would wait for web's PDB for ever (--on-blocked wait), and the test time out.
        with connect(name="test") as agent:
            assert agent.agent["pid"] != pid
        after = _follow(job.id, from_seq=before[-1].seq + 1)
        healthy.settle({"web": 1})
    finally:
        minimum = healthy.stop()
    assert minimum == {"web": 1}
    finished = after[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, [type(e.event).__name__ for e in after]
    assert [s.resumed for s in _of(before + after, JobStarted)] == [False, True]
    assert _of(after, surge_events.SurgeStarted)
    done = [e.node for e in _of(before + after, ev.NodeDone)]
    assert sorted(done) == sorted([first, target])  # each node done once, across both runs
    _drained_and_restored(cluster, namespace, target)


def test_a_surge_asked_of_a_paused_campaign_raises_nothing_until_it_is_resumed(
    agent_dir: AgentPaths,  # noqa: F811  (the fixture imported above)
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    first, target, spare = dedicated_nodes(3)
    pod = _singleton_on(cluster, namespace, target, [first, spare])
    healthy = HealthyPods(cluster, namespace).start()
    try:
        job, _ = _held_by_web(kubeconfig, namespace, first, target, pod)
        with connect(name="test") as agent:
            agent.pause(job.id)
        asked = run_plugin("jobs", "surge", job.id, target)
        assert asked.returncode == 0, asked.stderr
        # The node's drain is stopped for the surge, and the surge waits: nothing raised while paused.
        waiting = _follow(job.id, until=surge_events.SurgeWaitsForResume)
        assert [e.nodes for e in _of(waiting, surge_events.SurgeWaitsForResume)] == [(target,)]
        assert _replicas(cluster, namespace) == 1
        assert [p.metadata.name for p in pods_on(cluster, target)] == [pod.metadata.name]
        with connect(name="test") as agent:
            agent.resume(job.id)
        seen = _follow(job.id)
        healthy.settle({"web": 1})
    finally:
        minimum = healthy.stop()
    assert minimum == {"web": 1}
    _ended_well(seen)
    order = [type(e.event).__name__ for e in seen]
    assert order.index("SurgeWaitsForResume") < order.index("JobResumed") < order.index("SurgeStarted"), order
    _drained_and_restored(cluster, namespace, target)
