"""A campaign's soft taint on the nodes it has still to drain, against the real control plane and scheduler.

A watcher follows every change of the test's nodes (``NodeTaints``, beside the campaign's other tests):
whether each is cordoned and which campaign's taint it carries, so that what held *while* the campaign ran is
checked, not only its end. (The wait between two windows, which lifts the taints, is checked by the window
test there.)
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import manifests
import pytest
from cluster_setup import deploy
from integration.test_agent import _follow, _wait_gone, agent_dir  # noqa: F401  (agent_dir: a fixture)
from integration.test_campaign import NodeTaints, by_type, campaign, state_of
from integration.test_drain import only_schedulable
from plugin import RunningPlugin, run_plugin

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted
from kubectl_rollout.jobs.spec import CampaignJob, Connection, JobKind, JobSpec, NodeOrder
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import CAMPAIGN_TAINT, CAMPAIGN_TAINT_EFFECT


@pytest.mark.timeout(300)
def test_the_nodes_of_later_waves_carry_the_taint_and_no_evicted_pod_is_evicted_again(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    # Two waves of two nodes; a fifth node of the pool is not in the campaign (room outside it).
    first, second, third, fourth, spare = dedicated_nodes(5)
    wave_one, wave_two = (first, second), (third, fourth)
    # the pods start on the campaign's nodes only (only_schedulable keeps them off the spare)
    with only_schedulable(cluster, first, [spare]):
        deploy(cluster, namespace, "web", 8, pool=namespace, annotations={manifests.READY_AFTER: "1s"})
    originals = {
        p.metadata.name: p.spec.node_name
        for p in cluster.core.list_namespaced_pod(namespace, label_selector="app=web").items
    }
    assert set(originals.values()) <= {*wave_one, *wave_two}, originals
    names = [*wave_one, *wave_two]
    planned = run_plugin(
        "campaign", *names, "--budget", "2", "--order", "given", "--plan", "-o", "json", kubeconfig=kubeconfig
    )
    assert planned.returncode == 0, planned.stderr
    pending = json.loads(planned.stdout)["pending_taint"]
    assert pending.startswith(f"{CAMPAIGN_TAINT}="), pending
    assert pending.endswith(f":{CAMPAIGN_TAINT_EFFECT}"), pending
    taints = NodeTaints(cluster, namespace).start()
    try:
        result = campaign(kubeconfig, *names, "--budget", "2", "--order", "given")
    finally:
        taints.stop()
    assert result.returncode == 0, result.stderr
    job = by_type(result, "JobStarted")[0]["job"]
    # While any node of wave 1 was cordoned (its drain, its soak, its uncordon one node after the other), both
    # nodes of wave 2 carried this job's taint, and the node outside the campaign never did.
    during_wave_one = [s for s in taints.history if any(s[n][0] for n in wave_one)]
    assert during_wave_one, taints.history
    for snapshot in during_wave_one:
        assert all(snapshot[n][1] == job for n in wave_two), snapshot
    assert spare not in taints.ever_tainted()
    # The pods evicted in wave 1 went to the node outside the campaign, not to wave 2's: every pod evicted was
    # one of those there before the campaign, each evicted once.
    evicted = [e["pod"]["name"] for e in by_type(result, "PodEvicted")]
    assert sorted(evicted) == sorted(originals), (evicted, originals)
    # After the campaign: no node carries the taint; the pool's own taint (another key) was never touched.
    pool_taint = f"{manifests.POOL_LABEL}:NoSchedule"
    for name, (cordoned, ours, others) in taints.now.items():
        assert (cordoned, ours) == (False, None), name
        assert others == (pool_taint,), (name, others)
    assert all(pool_taint in others for snapshot in taints.history for (_, _, others) in snapshot.values())
    tainted = by_type(result, "PendingTainted")
    assert tainted[0]["nodes"] == names
    assert tainted[0]["taint"] == f"{CAMPAIGN_TAINT}={job}:{CAMPAIGN_TAINT_EFFECT}"


def soaking_campaign(kubeconfig: Path, nodes: list[str]) -> tuple[RunningPlugin, str]:
    """A campaign of ``nodes`` one at a time with a long soak, and its job id, once the first node's soak
    counts: wave 1 done draining, the other nodes still to come."""
    running = RunningPlugin(
        "campaign", *nodes, "--order", "given", "--soak", "10m", "-o", "jsonl", kubeconfig=kubeconfig
    )
    running.wait_for(lambda line: '"SoakCounting"' in line, timeout=60, what="the first wave's soak")
    return running, json.loads(running.stdout[0])["job"]


@pytest.mark.timeout(180)
def test_a_cancelled_campaign_takes_its_taints_off(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    nodes = dedicated_nodes(3)
    running, job = soaking_campaign(kubeconfig, nodes)
    assert {n: state_of(cluster.core.read_node(n))[1] for n in nodes[1:]} == dict.fromkeys(nodes[1:], job)
    running.process.send_signal(signal.SIGINT)
    result = running.finish(timeout=60)
    assert result.returncode != 0
    assert [state_of(cluster.core.read_node(n))[1] for n in nodes] == [None] * 3
    untainted = [json.loads(line) for line in result.stdout.splitlines() if '"PendingUntainted"' in line]
    assert untainted, result.stdout
    # all three: the first node's wave had not finished with it (its soak), the others had not started
    assert sorted(untainted[-1]["nodes"]) == sorted(nodes), untainted


@pytest.mark.timeout(180)
def test_uncordon_takes_off_the_taint_a_killed_campaign_left(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    nodes = dedicated_nodes(3)
    running, job = soaking_campaign(kubeconfig, nodes)
    running.process.kill()  # SIGKILL: no cleanup of any kind
    running.finish(timeout=30)
    # the first node in its soak (cordoned), the others still to come: all three keep the killed job's taint
    assert [state_of(cluster.core.read_node(n))[:2] for n in nodes] == [(True, job), (False, job), (False, job)]
    result = run_plugin("uncordon", nodes[0], nodes[1], kubeconfig=kubeconfig)
    assert result.returncode == 0, result.stderr
    assert f"node/{nodes[0]} uncordoned, taint of campaign {job} removed" in result.stdout
    assert f"node/{nodes[1]} already uncordoned, taint of campaign {job} removed" in result.stdout
    for name in nodes[:2]:
        assert state_of(cluster.core.read_node(name)) == (False, None, (f"{manifests.POOL_LABEL}:NoSchedule",))
    # the node not uncordoned keeps its leftover until someone does
    assert state_of(cluster.core.read_node(nodes[2]))[1] == job


@pytest.mark.timeout(180)
def test_with_no_taint_pending_no_node_is_ever_tainted(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    nodes = dedicated_nodes(2)
    taints = NodeTaints(cluster, namespace).start()
    try:
        result = campaign(kubeconfig, *nodes, "--order", "given", "--no-taint-pending")
    finally:
        taints.stop()
    assert result.returncode == 0, result.stderr
    assert taints.ever_tainted() == set()
    assert by_type(result, "CampaignPlanned")[0]["pending_taint"] == ""
    assert by_type(result, "PendingTainted") == []
    # the watcher did see the campaign at work: each node cordoned, then not
    assert any(s[nodes[1]][0] for s in taints.history)
    assert not taints.now[nodes[1]][0]


@pytest.mark.timeout(180)
def test_a_campaign_resumed_after_an_agent_sigkill_takes_its_taints_over_and_lifts_them_at_its_end(
    agent_dir: AgentPaths,  # noqa: F811  (the fixture imported above)
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    nodes = dedicated_nodes(3)
    spec = JobSpec(
        kind=JobKind.CAMPAIGN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        campaign=CampaignJob(nodes=tuple(nodes), budget="1", soak=600.0, order=NodeOrder.GIVEN),
    )
    taints = NodeTaints(cluster, namespace).start()
    try:
        with connect(name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(spec)
        before = _follow(job.id, until=lambda e: isinstance(e, ev.SoakCounting))
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        with connect(name="test") as agent:  # a new agent: it resumes the campaign from the journal
            assert agent.agent["pid"] != pid
        resumed = _follow(job.id, from_seq=before[-1].seq + 1, until=lambda e: isinstance(e, ev.SoakCounting))
        with connect(name="test") as agent:
            agent.cancel(job.id)
        after = _follow(job.id, from_seq=resumed[-1].seq + 1)
    finally:
        taints.stop()
    assert [s.event.resumed for s in before + resumed if isinstance(s.event, JobStarted)] == [False, True]
    # the resumed run names the taints it took over: every node it has not finished, the same job's value
    (took_over,) = [e.event for e in resumed if isinstance(e.event, ev.PendingTainted)]
    assert sorted(took_over.nodes) == sorted(nodes)
    assert took_over.taint == f"{CAMPAIGN_TAINT}={job.id}:{CAMPAIGN_TAINT_EFFECT}"
    assert isinstance(after[-1].event, JobFinished)
    # Each node carried the taint from the first run's start to the resumed run's cancel, without a gap across
    # the kill: its value went None -> the job -> None, once.
    for name in nodes:
        values = [snapshot[name][1] for snapshot in taints.history]
        changes = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
        assert changes == [None, job.id, None], (name, changes)
