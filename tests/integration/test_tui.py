"""The TUI headless (``App.run_test`` with a Pilot) against a real agent running real jobs on the control plane.

Each test has its own agent (the ``agent_dir`` fixture of test_agent.py); the
app talks to it over its socket exactly as ``kubectl rollout-plus tui`` does.
What a test checks is read from the widgets the person sees (tables, the
blocker panel, the footer's bindings) and from the agent (paused, cancelled).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import manifests
from integration.test_agent import _drain_spec, _place, agent_dir
from integration.test_agent_rollouts import _apply_spec, _workload
from integration.test_drain import pdb_held_by_a_never_ready_pod
from textual.pilot import Pilot
from textual.widgets import Footer

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.tui.app import RolloutPlusApp, agent_connect
from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen
from kubectl_rollout.tui.screens.evictions import EvictionsScreen
from kubectl_rollout.tui.screens.jobs import JobsScreen
from kubectl_rollout.tui.screens.live_screen import LiveScreen
from kubectl_rollout.tui.screens.rollout import RolloutScreen
from kubectl_rollout.tui.widgets.blocker_panel import BlockerPanel
from kubectl_rollout.tui.widgets.live_table import LiveTable

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py

SIZE = (80, 24)


def on_a_loop(test: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    """Run an async test on its own event loop (pytest sees the same signature, so the same fixtures)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


async def until(pilot: Pilot[Any], check: Callable[[], Any], *, what: str, timeout: float = 60) -> Any:
    """Let the app run until ``check()`` is truthy; fails naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        await pilot.pause(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def cells(table: LiveTable, key: str) -> list[str]:
    return [getattr(c, "plain", str(c)) for c in table.get_row(key)]


def column(table: LiveTable, name: str) -> dict[str, str]:
    index = table.column_names.index(name)
    return {key: cells(table, key)[index] for key in table.row_keys}


def _blocked_drain(cluster: Cluster, namespace: str, node: str, kubeconfig: Path, *, replicas: int = 2) -> str:
    """A drain of ``node`` whose pods a PDB (minAvailable = replicas) blocks until the test relaxes it."""
    _place(cluster, namespace, node, replicas=replicas)
    cluster.policy.create_namespaced_pod_disruption_budget(
        namespace, manifests.pdb("web", app="web", min_available=replicas)
    )
    with connect(name="test") as agent:
        return agent.submit(_drain_spec(kubeconfig, node, namespace)).id


def _agent_job(job_id: str) -> Any:
    with connect(name="test", start=False) as agent:
        return agent.show(job_id)


def _screen(app: RolloutPlusApp, kind: type) -> Any:
    """The app's screen once it is of ``kind`` and, a live screen, composed (its footer, yielded last, is there):
    on a loaded machine a pushed screen is on top a moment before its widgets."""
    screen = app.screen
    composed = not isinstance(screen, LiveScreen) or screen.query(Footer)
    return screen if isinstance(screen, kind) and composed else None


@on_a_loop
async def test_the_drain_screen_shows_the_blocking_pdb_and_p_pauses_and_resumes_the_job(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (node,) = dedicated_nodes(1)
    job_id = _blocked_drain(cluster, namespace, node, kubeconfig)
    app = RolloutPlusApp(agent_connect(), open_job=job_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await until(pilot, lambda: _screen(app, EvictionsScreen), what="the drain screen")
        pods = screen.query_one("#pods", LiveTable)
        await until(pilot, lambda: len(pods.row_keys) == 2, what="the node's two pods in the table")
        await until(
            pilot,
            lambda: (
                set(column(pods, "PDB").values()) == {"web 2/2"} and set(column(pods, "STATE").values()) == {"blocked"}
            ),
            what="both pods blocked by PDB web 2/2",
        )
        panel = screen.query_one(BlockerPanel)
        await until(pilot, lambda: f"PDB {namespace}/web" in panel.plain, what="the blocker panel naming the PDB")
        assert "2/2 healthy/needed" in panel.plain
        assert "never:" in panel.plain, panel.plain
        assert "can never allow a disruption" in panel.plain, panel.plain
        assert f"kubectl -n {namespace} patch pdb web" in panel.plain
        # The engine looked at the PDB's pods: both Ready, so only the budget itself holds them.
        await until(pilot, lambda: "all of its pods are healthy now" in panel.plain, what="the PDB's pods looked at")

        await pilot.press("p")
        await until(pilot, lambda: _agent_job(job_id).paused, what="the agent to say the job is paused")
        await until(pilot, lambda: "paused" in screen.query_one("#job-header").render().plain, what="'paused' shown")
        await pilot.press("p")
        await until(pilot, lambda: not _agent_job(job_id).paused, what="the agent to say the job is resumed")

        # The PDB gets room: the pods go and the node is drained, live.
        cluster.policy.patch_namespaced_pod_disruption_budget(
            "web", namespace, {"spec": {"minAvailable": None, "maxUnavailable": 2}}
        )
        nodes = screen.query_one("#nodes", LiveTable)
        await until(pilot, lambda: column(nodes, "STATE").get(node) == "drained", what=f"{node} drained")
        assert set(column(pods, "STATE").values()) == {"gone"}
        assert panel.display is False
        await until(pilot, lambda: app.screen.active_bindings.get("c") and not app.screen.active_bindings["c"].enabled,
                    what="c greyed out once the job is over")  # fmt: skip


@on_a_loop
async def test_the_blocker_panel_names_the_pdbs_never_ready_pod_and_its_node(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    target, other = dedicated_nodes(2)
    sick = pdb_held_by_a_never_ready_pod(cluster, namespace, target, other)
    with connect(name="test") as agent:
        job_id = agent.submit(_drain_spec(kubeconfig, target, namespace)).id
    app = RolloutPlusApp(agent_connect(), open_job=job_id)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await until(pilot, lambda: _screen(app, EvictionsScreen), what="the drain screen")
            panel = screen.query_one(BlockerPanel)
            named = f"unhealthy: {sick.metadata.name} on {other}: not Ready since"
            await until(pilot, lambda: named in panel.plain, what="the panel naming the never-Ready pod")
            assert f"PDB {namespace}/shop" in panel.plain
            assert f"kubectl -n {namespace} describe pod {sick.metadata.name}" in panel.plain
    finally:
        with connect(name="test", start=False) as agent:
            agent.cancel(job_id)


@on_a_loop
async def test_cancel_asks_first_and_readonly_offers_no_action(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (node,) = dedicated_nodes(1)
    job_id = _blocked_drain(cluster, namespace, node, kubeconfig, replicas=1)

    readonly = RolloutPlusApp(agent_connect(), open_job=job_id, readonly=True)
    async with readonly.run_test(size=SIZE) as pilot:
        screen = await until(pilot, lambda: _screen(readonly, EvictionsScreen), what="the drain screen")
        await until(pilot, lambda: screen.view.last_seq > 0, what="the job's events")
        assert not {"c", "p"} & set(readonly.screen.active_bindings), "read-only still offers c or p"
        await pilot.press("c", "p")
        await pilot.pause(0.5)
        assert not isinstance(readonly.screen, ConfirmScreen)
        assert (_agent_job(job_id).state, _agent_job(job_id).paused) == ("running", False)

    app = RolloutPlusApp(agent_connect(), open_job=job_id)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: _screen(app, EvictionsScreen), what="the drain screen")
        await until(pilot, lambda: app.screen.active_bindings.get("c"), what="c offered")
        await pilot.press("c")
        await until(pilot, lambda: _screen(app, ConfirmScreen), what="the confirmation")
        await pilot.press("n")
        await until(pilot, lambda: _screen(app, EvictionsScreen), what="back on the drain screen")
        assert not _agent_job(job_id).cancel_requested, "'n' cancelled the job"
        await pilot.press("c")
        await until(pilot, lambda: _screen(app, ConfirmScreen), what="the confirmation again")
        await pilot.press("y")
        await until(pilot, lambda: _agent_job(job_id).state == "cancelled", what="the agent to cancel the job")
        header = app.screen.query_one("#job-header")
        await until(pilot, lambda: "cancelled" in header.render().plain, what="'cancelled' on the screen")


@on_a_loop
async def test_the_jobs_screen_lists_the_agents_jobs_enter_opens_one_and_quit_leaves_it_running(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (node,) = dedicated_nodes(1)
    job_id = _blocked_drain(cluster, namespace, node, kubeconfig, replicas=1)
    app = RolloutPlusApp(agent_connect())
    async with app.run_test(size=SIZE) as pilot:
        screen = await until(pilot, lambda: _screen(app, JobsScreen), what="the jobs screen")
        table = screen.query_one(LiveTable)
        await until(pilot, lambda: job_id in table.row_keys, what="the job listed")
        await until(pilot, lambda: column(table, "CLIENTS")[job_id] == "1", what="the TUI counted as attached")
        row = dict(zip(table.column_names, cells(table, job_id), strict=True))
        assert (row["KIND"], row["STATE"], row["TARGET"]) == ("drain", "running", f"node/{node}")
        assert row["BY"].startswith("test (pid "), row
        await pilot.press("enter")
        drain = await until(pilot, lambda: _screen(app, EvictionsScreen), what="Enter to open the drain screen")
        assert drain.job_id == job_id
        await pilot.press("escape")
        await until(pilot, lambda: _screen(app, JobsScreen), what="Escape back to the jobs")
        await pilot.press("slash", *"no-such-job")
        await until(pilot, lambda: table.row_keys == [], what="the filter to hide every row")
        await pilot.press("escape")
        await until(pilot, lambda: job_id in table.row_keys, what="Escape to clear the filter")
        await pilot.press("q")
    assert _agent_job(job_id).state == "running", "leaving the TUI stopped the job"


@on_a_loop
async def test_the_rollout_screen_follows_a_rollout_to_its_end(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    document = _workload(3, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, "1s")
    with connect(name="test") as agent:
        job_id = agent.submit(_apply_spec(kubeconfig, namespace, document)).id
    app = RolloutPlusApp(agent_connect(), open_job=job_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await until(pilot, lambda: _screen(app, RolloutScreen), what="the rollout screen")
        # A rollout job pauses as the agent has always allowed (its workload is paused): the key says so too.
        await until(
            pilot,
            lambda: screen.view.finished is not None or app.screen.active_bindings["p"].enabled,
            what="p enabled while the rollout job runs",
        )
        tree = screen.query_one("#replica-sets")
        await until(
            pilot, lambda: any("rev 1" in str(n.label) for n in tree.root.children), what="revision 1 in the tree"
        )
        await until(pilot, lambda: screen.view.finished is not None, what="the rollout to finish", timeout=120)
        await pilot.pause(0.5)
        (rs,) = tree.root.children
        assert "avl █████ 3/3" in str(rs.children[0].label), rs.children[0].label
        conditions = screen.query_one("#conditions").render().plain
        assert "Available True MinimumReplicasAvailable" in conditions, conditions
        assert "successfully rolled out" in screen.query_one("#deadline").render().plain

        # Under its ReplicaSet, the pods as the cluster has them: asked of the agent while the screen is open.
        live = cluster.core.list_namespaced_pod(namespace, label_selector="app=web").items
        expected = {f"● {p.metadata.name} {p.spec.node_name}" for p in live if p.metadata.deletion_timestamp is None}
        assert len(expected) == 3
        await until(pilot, lambda: set(_pod_leaves(tree)) == expected, what="the three Ready pods in the tree")


def _pod_leaves(tree: Any) -> list[str]:
    """The pod lines under the tree's ReplicaSets (the tree is rebuilt when it changes: read it afresh)."""
    return [
        leaf.label.plain for rs in tree.root.children for leaf in rs.children if leaf.label.plain.startswith(("●", "○"))
    ]


@on_a_loop
async def test_the_rollout_tree_shows_a_crash_looping_pod_with_its_restarts_and_reason(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    document = _workload(1, {"type": "Recreate"}, "0s", **{manifests.BEHAVIOUR: "crash-loop"})
    with connect(name="test") as agent:
        job_id = agent.submit(_apply_spec(kubeconfig, namespace, document)).id
    app = RolloutPlusApp(agent_connect(), open_job=job_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await until(pilot, lambda: _screen(app, RolloutScreen), what="the rollout screen")
        tree = screen.query_one("#replica-sets")

        def crash_looping() -> list[str]:
            return [line for line in _pod_leaves(tree) if "CrashLoopBackOff" in line and "restart" in line]

        (line,) = await until(pilot, crash_looping, what="the pod shown crash-looping with its restarts")
        (pod,) = cluster.core.list_namespaced_pod(namespace, label_selector="app=web").items
        assert line.startswith(f"○ {pod.metadata.name} {pod.spec.node_name}  "), line
