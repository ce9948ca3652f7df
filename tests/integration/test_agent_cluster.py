"""The agent's cluster methods (nodes, plan, cordon, uncordon, workloads, history, abort) against the real
control plane, through a real agent (its own ROLLOUT_PLUS_AGENT_DIR per test).

Every node the tests look at is a dedicated kwok node of the test (``-l rollout-plus.test/pool=NAMESPACE``),
and every verdict is the API server's and the PDB controller's, read back through the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from cluster_setup import deploy
from integration.test_agent import agent_dir

from kubectl_rollout.agent.client import AgentClient, cluster_calls, connect
from kubectl_rollout.agent.protocol import ErrorCode, Method, ProtocolError
from kubectl_rollout.jobs.cluster_rows import NodeVerdict, WorkloadKind
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.drain import NodeCordoned, Verdict
from kubectl_rollout.jobs.events.job import JobFinished, JobState
from kubectl_rollout.jobs.events.rollout import ContainerImage, ReplicaSetCreated
from kubectl_rollout.jobs.spec import (
    ActionKind,
    Connection,
    DrainJob,
    DrainOptions,
    JobKind,
    JobSpec,
    RolloutAction,
)
from kubectl_rollout.kube.cluster_access import Cluster

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py

V2 = "registry.example/app:v2"


def _connection(kubeconfig: Path, namespace: str) -> Connection:
    return Connection(kubeconfig=(str(kubeconfig),), namespace=namespace)


def _pool(namespace: str) -> str:
    return f"{manifests.POOL_LABEL}={namespace}"


def _pdb(cluster: Cluster, namespace: str, app: str, *, max_unavailable: int, expected: int) -> None:
    cluster.policy.create_namespaced_pod_disruption_budget(
        namespace, manifests.pdb(app, app=app, max_unavailable=max_unavailable)
    )
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.metadata.name == app and p.status is not None and p.status.expected_pods == expected,
        namespace=namespace,
        timeout=30,
        what=f"PDB {app} processed",
    )


def _follow(agent: AgentClient, job_id: str, *, until: Callable[[Any], bool] | None = None) -> list[Envelope]:
    seen = []
    for envelope in agent.attach(job_id):
        seen.append(envelope)
        if until is not None and until(envelope.event):
            break
    return seen


def managed_workload(name: str, namespace: str, *, replicas: int, ready_after: str = "0s") -> dict[str, Any]:
    """A managed workload's manifest whose pods run on the test's dedicated nodes."""
    document = manifests.deployment(
        name,
        replicas=replicas,
        annotations={manifests.READY_AFTER: ready_after},
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        pod_spec=manifests.placement(namespace),
    )
    document["metadata"]["namespace"] = namespace
    document["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    return document


def apply_managed(agent: AgentClient, connection: Connection, document: dict[str, Any]) -> None:
    """Create a managed workload through an agent job and wait until its rollout completed."""
    spec = JobSpec(
        kind=JobKind.ROLLOUT, connection=connection, rollout=RolloutAction(kind=ActionKind.APPLY, manifest=document)
    )
    job = agent.submit(spec)
    finished = _follow(agent, job.id)[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished


# --- nodes and plans -------------------------------------------------------------------------------------------


def test_nodes_have_pod_counts_and_the_drain_plans_verdict(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    blocked, free, empty = dedicated_nodes(3)
    deploy(cluster, namespace, "web", 2, pool=namespace, node=blocked)
    deploy(cluster, namespace, "api", 1, pool=namespace, node=free)
    _pdb(cluster, namespace, "web", max_unavailable=0, expected=2)
    connection = _connection(kubeconfig, namespace)
    with connect(name="test") as agent:
        unplanned = agent.run(cluster_calls.nodes(connection, selector=_pool(namespace)))
        planned = agent.run(cluster_calls.nodes(connection, selector=_pool(namespace), plan=True))

    assert [(r.name, r.pods, r.cordoned, r.ready, r.verdict) for r in unplanned] == [
        (blocked, 2, False, True, NodeVerdict.UNKNOWN),
        (free, 1, False, True, NodeVerdict.UNKNOWN),
        (empty, 0, False, True, NodeVerdict.UNKNOWN),
    ]
    rows = {row.name: row for row in planned}
    assert rows[blocked].verdict is NodeVerdict.BLOCKED
    assert rows[blocked].blocking == (f"{namespace}/web",)
    assert rows[blocked].detail == f"blocked by PDB {namespace}/web (healthy 2, needs 2): 2 of 2 pods wait"
    assert (rows[free].verdict, rows[free].detail) == (NodeVerdict.EVICT, "evict 1 pod")
    assert (rows[empty].verdict, rows[empty].detail) == (NodeVerdict.EVICT, "nothing to evict")
    # A plan changes nothing.
    assert not any(cluster.core.read_node(name).spec.unschedulable for name in (blocked, free, empty))


def test_a_node_with_an_unreplicated_pod_gets_the_error_verdict(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    (node,) = dedicated_nodes(1)
    bare = manifests.pod("lonely", spec=manifests.placement(namespace, node))
    cluster.core.create_namespaced_pod(namespace, bare)
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.name == "lonely" and p.status.phase == "Running",
        namespace=namespace,
        timeout=30,
        what="pod lonely running",
    )
    with connect(name="test") as agent:
        (row,) = agent.run(
            cluster_calls.nodes(_connection(kubeconfig, namespace), selector=_pool(namespace), plan=True)
        )
    assert row.verdict is NodeVerdict.ERROR
    assert "cannot delete" in row.detail
    assert f"{namespace}/lonely" in row.detail


def test_plan_lists_every_pod_with_its_verdict_and_an_unknown_node_is_named(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    (node,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 2, pool=namespace, node=node)
    _pdb(cluster, namespace, "web", max_unavailable=1, expected=2)
    connection = _connection(kubeconfig, namespace)
    with connect(name="test") as agent:
        planned = agent.run(cluster_calls.plan(connection, [node], options=DrainOptions(ignore_daemonsets=True)))
        with pytest.raises(ProtocolError) as caught:
            agent.run(cluster_calls.plan(connection, [node, "no-such-node"]))

    (node_plan,) = planned.nodes
    assert node_plan.node == node
    assert not node_plan.cordoned
    assert sorted((p.pod.name.startswith("web-"), p.verdict, p.pdbs) for p in node_plan.pods) == [
        (True, Verdict.EVICT, (f"{namespace}/web",)),
        (True, Verdict.EVICT, (f"{namespace}/web",)),
    ]
    assert caught.value.code == ErrorCode.CLUSTER_ERROR
    assert (
        caught.value.message
        == 'node "no-such-node" not found; nothing was changed. List the nodes with kubectl get nodes'
    )
    assert not cluster.core.read_node(node).spec.unschedulable


def test_cordon_and_uncordon_change_the_node_and_an_unknown_node_changes_nothing(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    node, other = dedicated_nodes(2)
    connection = _connection(kubeconfig, namespace)
    with connect(name="test") as agent:
        cordoned = agent.run(cluster_calls.cordon(connection, node, cordoned=True))
        assert cordoned.name == node
        assert cordoned.cordoned
        assert cluster.core.read_node(node).spec.unschedulable is True
        assert not cluster.core.read_node(other).spec.unschedulable

        uncordoned = agent.run(cluster_calls.cordon(connection, node, cordoned=False))
        assert not uncordoned.cordoned
        assert not cluster.core.read_node(node).spec.unschedulable

        for cordon in (True, False):
            with pytest.raises(ProtocolError) as caught:
                agent.run(cluster_calls.cordon(connection, f"{namespace}-missing", cordoned=cordon))
            assert caught.value.code == ErrorCode.CLUSTER_ERROR
            assert caught.value.message.startswith(f'node "{namespace}-missing" not found; nothing was changed')
        with pytest.raises(ProtocolError) as missing_name:
            agent.call(Method.CORDON, connection={"kubeconfig": [str(kubeconfig)]})
        assert missing_name.value.code == ErrorCode.INVALID_PARAMS
        with pytest.raises(ProtocolError) as no_connection:
            agent.call(Method.NODES)
        assert no_connection.value.code == ErrorCode.INVALID_PARAMS
        assert "connection" in no_connection.value.message

    assert [n.metadata.name for n in cluster.core.list_node(label_selector=_pool(namespace)).items] == [node, other]
    assert not any(cluster.core.read_node(name).spec.unschedulable for name in (node, other))
    events = cluster.core.list_namespaced_event("default", field_selector=f"involvedObject.name={node}").items
    assert {e.reason for e in events} >= {"Cordoned", "Uncordoned"}


def test_uncordon_is_refused_while_a_drain_job_drains_the_node(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    (node,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace, node=node)
    _pdb(cluster, namespace, "web", max_unavailable=0, expected=1)
    connection = _connection(kubeconfig, namespace)
    spec = JobSpec(
        kind=JobKind.DRAIN, connection=connection, drain=DrainJob(nodes=(node,), options=DrainOptions(timeout=120))
    )
    with connect(name="test") as agent:
        job = agent.submit(spec)
        with connect(name="test") as follower:
            _follow(follower, job.id, until=lambda e: isinstance(e, NodeCordoned))
        (row,) = agent.run(cluster_calls.nodes(connection, selector=_pool(namespace)))
        assert row.cordoned
        assert row.drained_by == job.id
        with pytest.raises(ProtocolError) as caught:
            agent.run(cluster_calls.cordon(connection, node, cordoned=False))
        assert caught.value.code == ErrorCode.CONFLICT
        assert f"job {job.id} is draining node/{node}" in caught.value.message
        assert cluster.core.read_node(node).spec.unschedulable is True
        agent.cancel(job.id)
    with connect(name="test") as agent:
        assert _follow(agent, job.id)[-1].event.state is JobState.CANCELLED


# --- workloads -------------------------------------------------------------------------------------------------


def test_workloads_lists_managed_workloads_and_deployments_with_their_rollout_state(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    connection = _connection(kubeconfig, namespace)
    deploy(cluster, namespace, "api", 2, pool=namespace)
    with connect(name="test") as agent:
        apply_managed(agent, connection, managed_workload("web", namespace, replicas=3))
        rows = agent.run(cluster_calls.workloads(connection))
        elsewhere = agent.run(cluster_calls.workloads(connection, namespace=f"{namespace}-nothing-here"))

    assert elsewhere == []
    api, web = rows
    assert (api.kind, api.name, api.revision, api.replicas, api.updated, api.ready, api.available) == (
        WorkloadKind.DEPLOYMENT, "api", 1, 2, 2, 2, 2,
    )  # fmt: skip
    assert (api.phase, api.message, api.images) == (
        "Complete",
        'deployment "api" successfully rolled out',
        (f"app={manifests.IMAGE}",),
    )
    assert (web.kind, web.namespace, web.revision, web.replicas, web.updated, web.ready, web.available) == (
        WorkloadKind.MANAGED, namespace, 1, 3, 3, 3, 3,
    )  # fmt: skip
    assert (web.paused, web.phase, web.message, web.driven_by) == (
        False,
        "Complete",
        'deployment "web" successfully rolled out',
        "",
    )
    assert {(c.type, c.status, c.reason) for c in web.conditions} == {
        ("Available", "True", "MinimumReplicasAvailable"),
        ("Progressing", "True", "NewReplicaSetAvailable"),
    }


def test_history_lists_revisions_and_an_unknown_workload_is_named(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    connection = _connection(kubeconfig, namespace)
    with connect(name="test") as agent:
        apply_managed(agent, connection, managed_workload("web", namespace, replicas=1))
        set_image = RolloutAction(
            kind=ActionKind.SET_IMAGE,
            name="web",
            namespace=namespace,
            images=(ContainerImage(container="app", image=V2),),
        )
        job = agent.submit(JobSpec(kind=JobKind.ROLLOUT, connection=connection, rollout=set_image))
        assert _follow(agent, job.id)[-1].event.exit_code == 0
        revisions = agent.run(cluster_calls.history(connection, "web"))
        with pytest.raises(ProtocolError) as caught:
            agent.run(cluster_calls.history(connection, "nope"))

    assert [(r.number, r.images, r.current) for r in revisions] == [
        (1, (f"app={manifests.IMAGE}",), False),
        (2, (f"app={V2}",), True),
    ]
    assert all(r.replica_set.startswith("web-") for r in revisions)
    assert caught.value.code == ErrorCode.CLUSTER_ERROR
    assert caught.value.message.startswith(f'managed workload "nope" not found in namespace "{namespace}"')


def replica_set_sizes(cluster: Cluster, namespace: str, app: str) -> dict[str, tuple[str, int]]:
    """The ReplicaSets of ``app`` as the cluster has them now: name -> (image, spec.replicas)."""
    listing = cluster.apps.list_namespaced_replica_set(namespace, label_selector=f"app={app}")
    return {rs.metadata.name: (rs.spec.template.spec.containers[0].image, rs.spec.replicas) for rs in listing.items}


def test_abort_cancels_the_job_that_drives_the_rollout_and_nothing_else(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    connection = _connection(kubeconfig, namespace)

    def set_image(name: str) -> JobSpec:
        action = RolloutAction(
            kind=ActionKind.SET_IMAGE,
            name=name,
            namespace=namespace,
            images=(ContainerImage(container="app", image=V2),),
        )
        return JobSpec(kind=JobKind.ROLLOUT, connection=connection, rollout=action)

    with connect(name="test") as agent:
        # Two workloads, created side by side: web, whose rollout is aborted, and api, whose rollout must go on.
        created = [
            agent.submit(
                JobSpec(
                    kind=JobKind.ROLLOUT,
                    connection=connection,
                    rollout=RolloutAction(kind=ActionKind.APPLY, manifest=doc),
                )
            )
            for doc in (
                managed_workload("web", namespace, replicas=3, ready_after="2s"),
                managed_workload("api", namespace, replicas=2, ready_after="1s"),
            )
        ]
        assert [_follow(agent, job.id)[-1].event.exit_code for job in created] == [0, 0]
        with pytest.raises(ProtocolError) as idle:
            agent.run(cluster_calls.abort(connection, "web"))
        assert idle.value.code == ErrorCode.NO_SUCH_JOB
        assert f'no job of this agent drives the rollout of workload/web in namespace "{namespace}"' in (
            idle.value.message
        )

        other = agent.submit(set_image("api"))
        job = agent.submit(set_image("web"))
        with connect(name="test") as follower:
            for started in (other, job):
                _follow(follower, started.id, until=lambda e: isinstance(e, ReplicaSetCreated))
        driven = {row.name: row.driven_by for row in agent.run(cluster_calls.workloads(connection))}
        assert driven == {"web": job.id, "api": other.id}

        aborted = agent.run(cluster_calls.abort(connection, "web"))
        assert aborted.id == job.id
        assert aborted.cancel_requested
        finished = _follow(agent, job.id)[-1].event
        # web as the cluster has it once its job ended; api's rollout still runs
        stopped_at = replica_set_sizes(cluster, namespace, "web")
        other_finished = _follow(agent, other.id)[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.state is JobState.CANCELLED
    # Nothing else: api's job went on to the end, and in the cluster its rollout is complete ...
    assert isinstance(other_finished, JobFinished)
    assert (other_finished.state, other_finished.exit_code) == (JobState.SUCCEEDED, 0)
    assert sorted(replica_set_sizes(cluster, namespace, "api").values()) == [(manifests.IMAGE, 0), (V2, 2)]
    # ... while web's stopped part-way: no ReplicaSet of it created or resized since its job ended, the new
    # revision not complete.
    assert replica_set_sizes(cluster, namespace, "web") == stopped_at
    new_size = next(replicas for image, replicas in stopped_at.values() if image == V2)
    assert new_size < 3, stopped_at
    with connect(name="test") as agent:
        rows = {row.name: row for row in agent.run(cluster_calls.workloads(connection))}
    assert rows["web"].driven_by == rows["api"].driven_by == ""
    assert rows["web"].revision == 2


def test_a_context_without_permission_gets_a_clear_error_and_the_node_stays(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    (node,) = dedicated_nodes(1)
    viewer = Connection(kubeconfig=(str(kubeconfig),), context="rollout-plus-viewer", namespace=namespace)
    with connect(name="test") as agent:
        with pytest.raises(ProtocolError) as caught:
            agent.run(cluster_calls.cordon(viewer, node, cordoned=True))
        workloads = agent.run(cluster_calls.workloads(viewer))
    assert caught.value.code == ErrorCode.CLUSTER_ERROR
    assert 'User "viewer" cannot get resource "nodes"' in caught.value.message
    assert "use a context with this permission" in caught.value.message
    assert not cluster.core.read_node(node).spec.unschedulable
    assert workloads == []  # the viewer may read workloads: there are none in the namespace


def test_pods_names_each_replica_sets_pods_bounded_with_counts(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    connection = _connection(kubeconfig, namespace)
    with connect(name="test") as agent:
        apply_managed(agent, connection, managed_workload("web", namespace, replicas=3))
        everything = agent.run(cluster_calls.pods(connection, "web"))
        bounded = agent.run(cluster_calls.pods(connection, "web", limit=1))
        with pytest.raises(ProtocolError) as caught:
            agent.run(cluster_calls.pods(connection, "nope"))
        with pytest.raises(ProtocolError) as bad_limit:
            agent.run(cluster_calls.pods(connection, "web", limit=-1))

    live = cluster.core.list_namespaced_pod(namespace, label_selector="app=web").items
    (rs,) = everything
    assert rs.revision == 1
    assert (rs.total, rs.ready) == (3, 3)
    assert {(p.name, p.node, p.ready, p.reason) for p in rs.pods} == {
        (p.metadata.name, p.spec.node_name, True, "") for p in live
    }
    assert all(p.metadata.owner_references[0].name == rs.replica_set for p in live)
    (one,) = bounded
    assert (len(one.pods), one.total, one.ready) == (1, 3, 3)
    assert caught.value.code == ErrorCode.CLUSTER_ERROR
    assert caught.value.message.startswith('managed workload "nope" not found')
    assert bad_limit.value.code == ErrorCode.INVALID_PARAMS
