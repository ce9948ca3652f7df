"""The drain screen a person meets when one pod of many is held by a PDB, against a real agent and cluster.

The case users met: forty pods evicted, one pod of Deployment ``solo`` behind a
PDB ``minAvailable: 1``, at 80x24. The held pod must be on screen (not the
41st row), the blocker panel must name ``solo`` (not a placeholder) and say
what ``--surge`` would do, and ``s`` (confirmed) must drain the node with
``--surge``: the drain ends, with the PDB's pods never fewer than its minimum
(a watch on every pod event proves it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import manifests
from cluster_setup import deploy
from integration.test_agent import _drain_spec, agent_dir
from integration.test_drain import add_pdb
from integration.test_rollouts import apply as apply_workload
from integration.test_tui import SIZE, on_a_loop, until
from invariants import HealthyPods
from textual.pilot import Pilot

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.jobs.spec import JobSpec
from kubectl_rollout.jobs.views.drain import DrainView
from kubectl_rollout.jobs.views.pods import PodState
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.tui.app import RolloutPlusApp, agent_connect
from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen
from kubectl_rollout.tui.screens.evictions import EvictionsScreen
from kubectl_rollout.tui.widgets.blocker_panel import BlockerPanel
from kubectl_rollout.tui.widgets.live_table import LiveTable

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py

#: pods evicted without a PDB before the held one shows
MANY = 40


def _forty_and_one(cluster: Cluster, namespace: str, dedicated_nodes: Any) -> tuple[str, str]:
    """Deployment ``many`` (40 pods, no PDB) and Deployment ``solo`` (1 pod, PDB minAvailable 1) on one node,
    and a second node where a surge's extra pod can go; the drained node and the held pod's name."""
    (node,) = dedicated_nodes(1)
    # solo lands on the only node of the pool; the second node comes after, for the surge's extra pod.
    deploy(cluster, namespace, "solo", 1, pool=namespace)
    deploy(cluster, namespace, "many", MANY, pool=namespace, node=node, timeout=120)
    dedicated_nodes(1)
    add_pdb(cluster, namespace, "solo", app="solo", expected=1, min_available=1)
    (held,) = cluster.core.list_namespaced_pod(namespace, label_selector="app=solo").items
    assert held.spec.node_name == node
    return node, held.metadata.name


def _drain_in_the_tui(kubeconfig: Path, node: str, namespace: str) -> tuple[str, RolloutPlusApp]:
    """A drain of ``node`` submitted to the agent, and the TUI that opens on it."""
    with connect(name="test") as agent:
        job_id = agent.submit(_drain_spec(kubeconfig, node, namespace)).id
    return job_id, RolloutPlusApp(agent_connect(), open_job=job_id)


async def _drain_screen(pilot: Pilot[Any], app: RolloutPlusApp) -> EvictionsScreen:
    """The drain's screen, once composed (its blocker panel is there to read)."""
    screen = await until(
        pilot,
        lambda: isinstance(app.screen, EvictionsScreen) and app.screen.query(BlockerPanel) and app.screen,
        what="the drain's screen",
    )
    assert isinstance(screen, EvictionsScreen)
    return screen


async def _s_then_yes(pilot: Pilot[Any], app: RolloutPlusApp, job_id: str) -> EvictionsScreen:
    """Press s, answer the question with y: the drain with --surge's screen, in the place of job ``job_id``'s."""
    await pilot.press("s")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
    await pilot.press("y")
    screen = await until(
        pilot,
        lambda: isinstance(app.screen, EvictionsScreen) and app.screen.job_id != job_id and app.screen,
        what="the drain with --surge on screen",
        timeout=90,
    )
    assert isinstance(screen, EvictionsScreen)
    return screen


async def _until_succeeded(pilot: Pilot[Any], app: RolloutPlusApp, job_id: str) -> None:
    """Until the drain with --surge has finished, and succeeded; else what its pods and surges were."""

    def described() -> str:
        view = app.store.view(job_id)
        body = view.body
        assert isinstance(body, DrainView)
        pods = {key: (str(p.state), p.blocker.message if p.blocker else "") for key, p in body.pods.items()}
        return f"{view.state} {view.finished}; pods {pods}; surging {dict(body.surging)}; not {dict(body.not_surged)}"

    try:
        await until(pilot, lambda: app.store.view(job_id).finished is not None, what="the drain", timeout=150)
    except AssertionError as err:
        raise AssertionError(f"{err}: {described()}") from err
    finished = app.store.view(job_id).finished
    assert finished is not None
    assert finished.state == "succeeded", described()


@on_a_loop
async def test_a_pod_held_among_forty_gone_is_on_screen_named_and_s_surges_it(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    node, held = _forty_and_one(cluster, namespace, dedicated_nodes)
    healthy = HealthyPods(cluster, namespace).start()
    job_id, app = _drain_in_the_tui(kubeconfig, node, namespace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _drain_screen(pilot, app)
        held_key = f"{namespace}/{held}"

        def forty_gone_and_one_held() -> bool:
            body = app.store.view(job_id).body
            assert isinstance(body, DrainView)
            pods = body.pods
            gone = sum(1 for p in pods.values() if p.state is PodState.GONE)
            return gone == MANY and pods.get(held_key) is not None and pods[held_key].state is PodState.BLOCKED

        await until(pilot, forty_gone_and_one_held, what="40 pods gone and solo's pod blocked", timeout=120)
        panel = screen.query_one(BlockerPanel)
        await until(pilot, lambda: f"Deployment {namespace}/solo" in panel.plain, what="the panel naming solo")
        await pilot.pause(0.2)

        # The held pod is the first row, and that row is on screen (the table has room for it at 80x24).
        table = screen.query_one("#pods", LiveTable)
        assert table.row_keys[0] == held_key, table.row_keys[:3]
        assert table.scroll_offset.y == 0
        assert table.size.height >= 2
        assert held in table.render_line(1).text
        states = {getattr(table.get_row(key)[1], "plain", "") for key in table.row_keys[1:]}
        assert states == {"gone"}, states
        assert f"kubectl -n {namespace} scale deployment/solo --replicas=2" in panel.plain, panel.plain
        assert "WORKLOAD" not in panel.plain
        assert f"drain --surge would start 1 extra replica of Deployment {namespace}/solo" in panel.plain
        assert "(press s)" in panel.plain
        assert screen.check_action("surge", ()) is True

        surge_screen = await _s_then_yes(pilot, app, job_id)
        new_id = surge_screen.job_id
        await _until_succeeded(pilot, app, new_id)
        assert app.screen is surge_screen
        await until(pilot, lambda: not surge_screen.query_one(BlockerPanel).display, what="no PDB blocking")

    with connect(name="test") as agent:
        old, new = agent.show(job_id), agent.show(new_id)
    assert old.state == "cancelled", old
    assert new.state == "succeeded", new
    spec = JobSpec.from_dict(new.spec)
    assert spec.drain is not None
    assert spec.drain.options.surge
    assert spec.drain.nodes == (node,)
    # What the cluster did: the node cordoned and empty of both workloads, solo back to its one replica,
    # and solo's healthy pods never below the PDB's minimum at any pod event.
    assert cluster.core.read_node(node).spec.unschedulable is True
    on_node = cluster.core.list_namespaced_pod(namespace, field_selector=f"spec.nodeName={node}").items
    assert on_node == []
    assert cluster.apps.read_namespaced_deployment("solo", namespace).spec.replicas == 1
    healthy.settle({"solo": 1, "many": 0})
    minimum = healthy.stop()
    assert minimum["solo"] >= 1, minimum


@on_a_loop
async def test_leaving_the_screen_after_s_still_starts_the_drain_with_surge(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    """The replacement is the app's work: Escape right after confirming does not leave the node cordoned
    with no drain."""
    (node,) = dedicated_nodes(1)
    deploy(cluster, namespace, "solo", 1, pool=namespace)
    dedicated_nodes(1)
    add_pdb(cluster, namespace, "solo", app="solo", expected=1, min_available=1)
    healthy = HealthyPods(cluster, namespace).start()
    job_id, app = _drain_in_the_tui(kubeconfig, node, namespace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _drain_screen(pilot, app)
        await until(pilot, lambda: screen.check_action("surge", ()) is True, what="s offered", timeout=60)
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        await pilot.press("y", "escape")
        await until(pilot, lambda: not isinstance(app.screen, EvictionsScreen), what="back on the job list")
        again = await until(
            pilot,
            lambda: next((i for i in app.store.infos.values() if i.id != job_id), None),
            what="the drain with --surge submitted",
            timeout=90,
        )
        await _until_succeeded(pilot, app, again.id)
    assert cluster.core.list_namespaced_pod(namespace, field_selector=f"spec.nodeName={node}").items == []
    assert cluster.apps.read_namespaced_deployment("solo", namespace).spec.replicas == 1
    healthy.settle({"solo": 1})
    assert healthy.stop()["solo"] >= 1


@on_a_loop
async def test_a_held_managed_workload_is_named_and_s_surges_its_replica_set(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path
) -> None:
    """A managed workload (the plugin's own apply): the advice scales it with rollout-plus scale, and s drains
    with --surge through its one ReplicaSet, never below one Ready pod, its count back to 1 after."""
    (node,) = dedicated_nodes(1)
    document = manifests.deployment("shop", replicas=1, pod_spec=manifests.placement(namespace))
    applied = apply_workload(kubeconfig, namespace, document, tmp_path)
    assert applied.returncode == 0, applied.stderr
    dedicated_nodes(1)
    add_pdb(cluster, namespace, "shop", app="shop", expected=1, min_available=1)
    (replica_set,) = cluster.apps.list_namespaced_replica_set(namespace).items
    healthy = HealthyPods(cluster, namespace).start()
    job_id, app = _drain_in_the_tui(kubeconfig, node, namespace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _drain_screen(pilot, app)
        panel = screen.query_one(BlockerPanel)
        await until(pilot, lambda: "(press s)" in panel.plain, what="s offered", timeout=60)
        assert f"Give managed workload {namespace}/shop more replicas" in panel.plain, panel.plain
        assert f"kubectl rollout-plus scale shop --replicas=2 -n {namespace}" in panel.plain, panel.plain
        surge_screen = await _s_then_yes(pilot, app, job_id)
        await _until_succeeded(pilot, app, surge_screen.job_id)
    assert cluster.core.list_namespaced_pod(namespace, field_selector=f"spec.nodeName={node}").items == []
    assert cluster.apps.read_namespaced_replica_set(replica_set.metadata.name, namespace).spec.replicas == 1
    healthy.settle({"shop": 1})
    assert healthy.stop()["shop"] >= 1
