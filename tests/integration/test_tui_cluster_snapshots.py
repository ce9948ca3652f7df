"""SVG snapshots of the Nodes and Workloads screens (and the drain plan) at 80x24 and 200x50.

The data is real (a real agent, the real control plane) and stable: fixed names (namespace tui-snap, nodes
tui-snap-n0..n2, a StatefulSet for a pod name that never changes), every pod placed on a chosen node, and
nothing on screen that depends on the clock. Update with ``--snapshot-update`` after checking the change.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from cluster_setup import create_namespace, delete_pods, deploy, remove_node
from integration.test_agent import agent_dir
from integration.test_agent_cluster import _pdb, managed_workload
from kubernetes import client as k8s
from textual.pilot import Pilot
from tui_cluster_host import ScreenHost, until

from kubectl_rollout.job_loop.loop import run_job
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.spec import ActionKind, Connection, JobKind, JobSpec, RolloutAction
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.tui.cluster_scope import ClusterScope
from kubectl_rollout.tui.screens.cluster_table import ClusterTableScreen
from kubectl_rollout.tui.screens.dialogs.drain_plan import DrainPlanDialog
from kubectl_rollout.tui.screens.nodes import NodesScreen
from kubectl_rollout.tui.screens.workloads import WorkloadsScreen

#: pytest-xdist: one namespace of a fixed name for stable snapshots, set up once: one worker owns it
pytestmark = pytest.mark.xdist_group("tui-snapshots")

__all__ = ["agent_dir"]

NAMESPACE = "tui-snap"
NODES = [f"{NAMESPACE}-n{i}" for i in range(3)]


def _gone(read: Any, *args: Any) -> bool:
    try:
        read(*args)
    except k8s.ApiException as err:
        if err.status == 404:
            return True
        raise
    return False


def _clean(cluster: Cluster) -> None:
    """Remove what an earlier run left (a namespace deletion takes a while), and wait until it is gone."""
    if not _gone(cluster.core.read_namespace, NAMESPACE):
        delete_pods(cluster, NAMESPACE)
        cluster.core.delete_namespace(NAMESPACE)
    for node in NODES:
        if not _gone(cluster.core.read_node, node):
            remove_node(cluster, node)
    watching.until(
        cluster.core.list_namespace,
        lambda _ns: (
            _gone(cluster.core.read_namespace, NAMESPACE) and all(_gone(cluster.core.read_node, n) for n in NODES)
        ),
        timeout=180,
        what=f"namespace {NAMESPACE} and its nodes gone",
    )


def _statefulset(name: str, node: str) -> dict[str, Any]:
    template = manifests.pod_template(name, spec=manifests.placement(NAMESPACE, node))
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "serviceName": name, "selector": {"matchLabels": {"app": name}}, "template": template},
    }


@pytest.fixture(scope="module")
def world(cluster: Cluster, kubeconfig: Path) -> Iterator[Connection]:
    """n0 (cordoned): Deployment api, 2 pods; n1: StatefulSet db, 1 pod, held by a PDB; n2: managed workload web."""
    _clean(cluster)
    create_namespace(cluster, NAMESPACE)
    for node in NODES:
        cluster.core.create_node(manifests.dedicated_node(node, pool=NAMESPACE))
    for node in NODES:
        watching.until(
            cluster.core.list_node,
            lambda n, want=node: (
                n.metadata.name == want
                and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
            ),
            timeout=30,
            what=f"node {node} Ready",
        )
    connection = Connection(kubeconfig=(str(kubeconfig),), namespace=NAMESPACE)
    try:
        deploy(cluster, NAMESPACE, "api", 2, pool=NAMESPACE, node=NODES[0])
        cluster.apps.create_namespaced_stateful_set(NAMESPACE, _statefulset("db", NODES[1]))
        watching.until(
            cluster.apps.list_namespaced_stateful_set,
            lambda s: (s.status.available_replicas or 0) == 1,
            namespace=NAMESPACE,
            timeout=60,
            what="db available",
        )
        _pdb(cluster, NAMESPACE, "db", max_unavailable=0, expected=1)
        web = managed_workload("web", NAMESPACE, replicas=2)
        web["spec"]["template"]["spec"].update(manifests.placement(NAMESPACE, NODES[2]))
        apply = RolloutAction(kind=ActionKind.APPLY, manifest=web)
        spec = JobSpec(kind=JobKind.ROLLOUT, connection=connection, rollout=apply)
        assert run_job(spec, JobContext(emit=lambda _event: None)).exit_code == 0
        cluster.core.patch_node(NODES[0], {"spec": {"unschedulable": True}})
        yield connection
    finally:
        delete_pods(cluster, NAMESPACE)
        cluster.core.delete_namespace(NAMESPACE)
        for node in NODES:
            remove_node(cluster, node)


def _host(screen: type[ClusterTableScreen[Any]], connection: Connection) -> ScreenHost:
    scope = ClusterScope(connection=connection, node_selector=f"{manifests.POOL_LABEL}={NAMESPACE}", refresh_every=0)
    return ScreenHost(screen, scope)


async def _loaded(pilot: Pilot[Any]) -> None:
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, ClusterTableScreen) and app.screen.loads > 0, what="the rows")
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_nodes_screen(agent_dir: Any, world: Connection, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(_host(NodesScreen, world), terminal_size=size, run_before=_loaded)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_workloads_screen(agent_dir: Any, world: Connection, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(_host(WorkloadsScreen, world), terminal_size=size, run_before=_loaded)


def test_drain_plan_of_a_node_a_pdb_holds(agent_dir: Any, world: Connection, snap_compare: Any) -> None:
    async def plan_of_n1(pilot: Pilot[Any]) -> None:
        await _loaded(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, NodesScreen)
        screen.table.cursor_row = 1
        await pilot.press("d")
        await until(pilot, lambda: isinstance(pilot.app.screen, DrainPlanDialog), what="the plan")
        await pilot.pause()

    assert snap_compare(_host(NodesScreen, world), terminal_size=(80, 24), run_before=plan_of_n1)
