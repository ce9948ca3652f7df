"""The Nodes and Workloads screens inside the TUI's own app, over its own asyncio connection to a real agent:
keys 2 and 3 switch to them, a drain started from the Nodes screen opens its job's screen, --readonly holds."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cluster_setup import deploy
from integration.test_agent import agent_dir
from integration.test_agent_cluster import _pool
from rich.text import Text
from tui_cluster_host import until

from kubectl_rollout.jobs.spec import Connection
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.tui.app import RolloutPlusApp, agent_connect
from kubectl_rollout.tui.cluster_scope import ClusterScope
from kubectl_rollout.tui.screens.dialogs.drain_plan import DrainPlanDialog
from kubectl_rollout.tui.screens.evictions import EvictionsScreen
from kubectl_rollout.tui.screens.nodes import NodesScreen
from kubectl_rollout.tui.screens.workloads import WorkloadsScreen
from kubectl_rollout.tui.widgets.live_table import LiveTable

__all__ = ["agent_dir"]


def _app(kubeconfig: Path, namespace: str, *, readonly: bool = False) -> RolloutPlusApp:
    scope = ClusterScope(
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        node_selector=_pool(namespace),
        readonly=readonly,
    )
    return RolloutPlusApp(agent_connect(), readonly=readonly, cluster=scope)


def _cells(screen: Any, key: str) -> list[str]:
    row = screen.query_one(LiveTable).get_row(key)
    return [cell.plain if isinstance(cell, Text) else str(cell) for cell in row]


def test_keys_2_and_3_open_the_cluster_screens_and_a_drain_opens_its_job(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    (node,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace, node=node)
    app = _app(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.source is not None, what="the agent")
            await pilot.press("3")
            await until(pilot, lambda: isinstance(app.screen, WorkloadsScreen) and app.screen.loads, what="workloads")
            assert _cells(app.screen, "deployment/web")[:4] == ["deploy", "web", "1", "1/1"]

            await pilot.press("2")
            await until(pilot, lambda: isinstance(app.screen, NodesScreen) and app.screen.loads, what="nodes")
            assert _cells(app.screen, node)[:4] == [node, "Ready", "1", "evict 1 pod"]
            await pilot.press("d")
            await until(pilot, lambda: isinstance(app.screen, DrainPlanDialog), what="the plan")
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, EvictionsScreen), what="the drain's job screen")
            job_id = app.screen.job_id
            await until(pilot, lambda: app.store.view(job_id).finished is not None, timeout=120, what="the drain")
            assert app.store.infos[job_id].target == f"node/{node}"
        assert cluster.core.read_node(node).spec.unschedulable is True

    asyncio.run(scenario())


def test_readonly_app_hides_the_cluster_screens_actions(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    (node,) = dedicated_nodes(1)
    app = _app(kubeconfig, namespace, readonly=True)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.source is not None, what="the agent")
            await pilot.press("2")
            await until(pilot, lambda: isinstance(app.screen, NodesScreen) and app.screen.loads, what="nodes")
            screen = app.screen
            assert {screen.check_action(a, ()) for a in ("cordon", "uncordon", "drain")} == {False}
            await pilot.press("c", "d")
            await pilot.pause(0.2)
            assert app.screen is screen
        assert not cluster.core.read_node(node).spec.unschedulable

    asyncio.run(scenario())
