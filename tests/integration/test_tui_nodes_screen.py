"""The TUI's Nodes screen, headless (Pilot, 80x24), against a real agent and the real control plane.

Each key is pressed as a person would, and what it promises is read back from the cluster (the node's
spec.unschedulable, the agent's jobs, the pods), never from the screen alone.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import manifests
import watching
from cluster_setup import deploy
from integration.test_agent import agent_dir
from integration.test_agent_cluster import _pdb, _pool
from rich.text import Text
from tui_cluster_host import ScreenHost, until

from kubectl_rollout.agent.client import connect
from kubectl_rollout.jobs.events.job import JobFinished, JobState
from kubectl_rollout.jobs.spec import Connection
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.tui.cluster_scope import ClusterScope
from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen
from kubectl_rollout.tui.screens.dialogs.drain_plan import DrainPlanDialog
from kubectl_rollout.tui.screens.nodes import NodesScreen
from kubectl_rollout.tui.widgets.live_table import LiveTable

__all__ = ["agent_dir"]

SIZE = (80, 24)


def _host(kubeconfig: Path, namespace: str, *, readonly: bool = False) -> ScreenHost:
    scope = ClusterScope(
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        node_selector=_pool(namespace),
        readonly=readonly,
        refresh_every=0,
    )
    return ScreenHost(NodesScreen, scope)


def _cell(app: ScreenHost, node: str, column: str) -> str:
    table = app.screen.query_one(LiveTable)
    value = table.get_row(node)[table.column_names.index(column)]
    return value.plain if isinstance(value, Text) else str(value)


def _cordoned(cluster: Cluster, node: str) -> bool:
    return bool(cluster.core.read_node(node).spec.unschedulable)


async def _loaded(pilot: Any, app: ScreenHost) -> NodesScreen:
    await until(pilot, lambda: isinstance(app.screen, NodesScreen) and app.screen.loads > 0, what="the nodes")
    screen = app.screen
    assert isinstance(screen, NodesScreen)
    return screen


def test_the_table_shows_pods_cordoned_state_and_the_drain_verdict(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    blocked, free = dedicated_nodes(2)
    deploy(cluster, namespace, "web", 2, pool=namespace, node=blocked)
    deploy(cluster, namespace, "api", 1, pool=namespace, node=free)
    _pdb(cluster, namespace, "web", max_unavailable=0, expected=2)
    cluster.core.patch_node(free, {"spec": {"unschedulable": True}})
    app = _host(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await _loaded(pilot, app)
            assert [_cell(app, blocked, c) for c in ("STATUS", "PODS", "DRAIN", "JOB")] == [
                "Ready",
                "2",
                f"blocked by PDB {namespace}/web (healthy 2, needs 2): 2 of 2 pods wait",
                "-",
            ]
            assert [_cell(app, free, c) for c in ("STATUS", "PODS", "DRAIN")] == [
                "Ready,SchedulingDisabled",
                "1",
                "evict 1 pod",
            ]

    asyncio.run(scenario())


def test_c_asks_then_cordons_and_u_uncordons_and_no_changes_nothing(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    (node,) = dedicated_nodes(1)
    app = _host(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            assert screen.check_action("cordon", ()) is True
            assert screen.check_action("uncordon", ()) is None  # greyed out: not cordoned

            await pilot.press("c")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
            await pilot.press("n")
            await until(pilot, lambda: app.screen is screen, what="the dialog to close")
            assert not _cordoned(cluster, node)

            await pilot.press("c")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
            await pilot.press("y")
            await until(pilot, lambda: _cell(app, node, "STATUS") == "Ready,SchedulingDisabled", what="cordoned")
            assert _cordoned(cluster, node)
            assert screen.check_action("cordon", ()) is None
            assert screen.check_action("uncordon", ()) is True

            await pilot.press("u")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
            await pilot.press("y")
            await until(pilot, lambda: _cell(app, node, "STATUS") == "Ready", what="uncordoned")
            assert not _cordoned(cluster, node)
        assert app.jobs == []  # cordon is no job

    asyncio.run(scenario())


def test_d_shows_the_plan_and_starts_the_drain_as_an_agent_job_once_confirmed(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    node, spare = dedicated_nodes(2)
    deploy(cluster, namespace, "web", 2, pool=namespace, node=node)
    # Replacements may go to the spare node only once the drain has cordoned this one.
    cluster.apps.patch_namespaced_deployment(
        "web", namespace, {"spec": {"template": {"spec": {"nodeSelector": {manifests.POOL_LABEL: namespace}}}}}
    )
    deploy_ready = lambda d: d.metadata.name == "web" and (d.status.updated_replicas or 0) == 2  # noqa: E731
    watching.until(cluster.apps.list_namespaced_deployment, deploy_ready, namespace=namespace, timeout=60, what="web")
    app = _host(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            screen.table.cursor_row = screen.table.row_keys.index(node)

            await pilot.press("d")
            await until(pilot, lambda: isinstance(app.screen, DrainPlanDialog), what="the plan")
            dialog = app.screen
            assert isinstance(dialog, DrainPlanDialog)
            assert dialog.plan.node == node
            assert sorted(p.verdict.value for p in dialog.plan.pods) == ["evict", "evict"]
            await pilot.press("n")
            await until(pilot, lambda: app.screen is screen, what="the dialog to close")
            assert not _cordoned(cluster, node)
            with connect(name="test") as agent:
                assert agent.jobs() == []

            await pilot.press("d")
            await until(pilot, lambda: isinstance(app.screen, DrainPlanDialog), what="the plan")
            await pilot.press("y")
            await until(pilot, lambda: app.jobs, what="the drain job")
            (job,) = app.jobs
            assert app.submitted[0].open_it
            assert (job.kind, job.target) == ("drain", f"node/{node}")
            with connect(name="test") as agent:
                finished = [e.event for e in agent.attach(job.id)][-1]
            assert isinstance(finished, JobFinished)
            assert finished.state is JobState.SUCCEEDED
            assert _cordoned(cluster, node)
            pods = cluster.core.list_namespaced_pod(namespace, field_selector=f"spec.nodeName={node}").items
            assert [p.metadata.name for p in pods if not p.metadata.deletion_timestamp] == []

            await pilot.press("g")
            await until(pilot, lambda: _cell(app, node, "PODS") == "0", what="the drained node")
            assert _cell(app, node, "STATUS") == "Ready,SchedulingDisabled"
            assert spare

    asyncio.run(scenario())


def test_readonly_hides_every_action_and_keys_change_nothing(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    (node,) = dedicated_nodes(1)
    cluster.core.patch_node(node, {"spec": {"unschedulable": True}})
    app = _host(kubeconfig, namespace, readonly=True)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            for action in ("cordon", "uncordon", "drain"):
                assert screen.check_action(action, ()) is False
            shown = {binding.action for (_n, binding, _e, _t) in screen.active_bindings.values() if binding.show}
            assert shown.isdisjoint({"cordon", "uncordon", "drain"})
            for key in ("c", "u", "d"):
                await pilot.press(key)
                await pilot.pause(0.2)
                assert app.screen is screen
            assert _cordoned(cluster, node)
        with connect(name="test") as agent:
            assert agent.jobs() == []

    asyncio.run(scenario())


def test_slash_filters_the_table_and_escape_clears_it(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    first, second, third = dedicated_nodes(3)
    app = _host(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            assert len(screen.table.row_keys) == 3
            await pilot.press("slash", *second[-2:])
            await until(pilot, lambda: len(screen.table.row_keys) == 1, what="the filter")
            assert _cell(app, second, "NODE") == second
            await pilot.press("escape")
            await until(pilot, lambda: len(screen.table.row_keys) == 3, what="the filter cleared")
            assert screen.table.row_keys == [first, second, third]

    asyncio.run(scenario())
