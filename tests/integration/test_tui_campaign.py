"""The campaign's screen against a real agent running a real campaign on the control plane.

Three kwok nodes in three zones, one node at a time; the first node holds the one pod of Deployment ``solo``
behind a PDB ``minAvailable: 1``, so the first wave waits for it. The screen must show the waves (the first
current, the others to come), the node blocked first, and the blocker panel naming ``solo``; ``p`` pauses the
campaign in the agent, ``c`` (confirmed) cancels it, and ``--readonly`` refuses both. A window that closes
while a node drains: the screen says no node starts, which node finishes or was stopped, and when it opens.
What the cluster did is checked by watches: the nodes out at once (``NodesOut``) and the healthy pods
(``HealthyPods``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import manifests
import pytest
from cluster_setup import deploy
from integration.test_agent import agent_dir
from integration.test_campaign import ZONES, NodesOut, two_windows
from integration.test_drain import add_pdb, only_schedulable, pods_on
from integration.test_tui import SIZE, column, on_a_loop, until
from invariants import HealthyPods
from textual.pilot import Pilot

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.campaign.order import ZONE_LABEL
from kubectl_rollout.jobs.spec import AtWindowEnd, CampaignJob, Connection, DrainOptions, JobKind, JobSpec, NodeOrder
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.tui.app import RolloutPlusApp, agent_connect
from kubectl_rollout.tui.screens.campaign import CampaignScreen
from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen
from kubectl_rollout.tui.widgets.blocker_panel import BlockerPanel
from kubectl_rollout.tui.widgets.live_table import LiveTable

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py


def _held_pool(cluster: Cluster, namespace: str, dedicated_nodes: Any) -> list[str]:
    """Three nodes in three zones; Deployment solo's one pod (PDB minAvailable 1) on the first, Deployment web's
    three pods anywhere in the pool. The nodes, in the campaign's order."""
    # solo lands on the only node of the pool; the others come after, for its replacement to go to.
    nodes = dedicated_nodes(1)
    deploy(cluster, namespace, "solo", 1, pool=namespace)
    nodes += dedicated_nodes(2)
    for node, zone in zip(nodes, ZONES, strict=True):
        cluster.core.patch_node(node, {"metadata": {"labels": {ZONE_LABEL: zone}}})
    deploy(cluster, namespace, "web", 3, pool=namespace)
    add_pdb(cluster, namespace, "solo", app="solo", expected=1, min_available=1)
    return nodes


def _submit(kubeconfig: Path, namespace: str, nodes: list[str], *, soak: float = 0.0) -> str:
    spec = JobSpec(
        kind=JobKind.CAMPAIGN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        campaign=CampaignJob(nodes=tuple(nodes), budget="1", per_zone=True, order=NodeOrder.GIVEN, soak=soak),
    )
    with connect(name="test") as agent:
        return agent.submit(spec).id


def _agent_job(job_id: str) -> Any:
    with connect(name="test", start=False) as agent:
        return agent.show(job_id)


async def _campaign_screen(pilot: Pilot[Any], app: RolloutPlusApp) -> CampaignScreen:
    screen = await until(
        pilot,
        lambda: isinstance(app.screen, CampaignScreen) and app.screen.query(BlockerPanel) and app.screen,
        what="the campaign's screen",
    )
    assert isinstance(screen, CampaignScreen)
    return screen


async def _first_wave_held(pilot: Pilot[Any], screen: CampaignScreen, namespace: str, first: str) -> None:
    """Until the screen shows the first wave held by solo's PDB."""
    nodes = screen.query_one("#campaign-nodes", LiveTable)
    panel = screen.query_one(BlockerPanel)
    await until(pilot, lambda: column(nodes, "STATE").get(first) == "blocked", what=f"{first} blocked", timeout=90)
    await until(pilot, lambda: f"Deployment {namespace}/solo" in panel.plain, what="the panel naming solo")


@on_a_loop
async def test_the_campaign_screen_shows_the_waves_and_the_pdb_holding_the_first_and_p_pauses_it(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    first, second, third = _held_pool(cluster, namespace, dedicated_nodes)
    healthy = HealthyPods(cluster, namespace).start()
    out = NodesOut(cluster, namespace).start()
    try:
        job_id = _submit(kubeconfig, namespace, [first, second, third])
        app = RolloutPlusApp(agent_connect(), open_job=job_id)
        async with app.run_test(size=SIZE) as pilot:
            screen = await _campaign_screen(pilot, app)
            await _first_wave_held(pilot, screen, namespace, first)

            waves = screen.query_one("#waves", LiveTable)
            assert waves.row_keys == ["1", "2", "3"]
            assert list(column(waves, "STATE").values()) == ["current", "next", "to come"]
            nodes = screen.query_one("#campaign-nodes", LiveTable)
            assert nodes.row_keys[0] == first  # the blocked node on top
            assert column(nodes, "STATE") == {first: "blocked", second: "waiting", third: "waiting"}
            assert f"held by PDB {namespace}/solo" in column(nodes, "WHY")[first]
            panel = " ".join(screen.query_one(BlockerPanel).plain.split())
            assert f"kubectl -n {namespace} scale deployment/solo --replicas=2" in panel, panel
            assert f"--on-blocked surge would start 1 extra replica of Deployment {namespace}/solo" in panel, panel
            summary = screen.query_one("#campaign-summary").render().plain  # type: ignore[attr-defined]
            assert "wave 1/3 · out 1/1" in summary, summary
            assert "window: none (always open)" in summary, summary
            assert "1 blocked · 2 waiting" in summary, summary
            assert "zones (one at a time):" in summary, summary

            await pilot.press("p")
            await until(pilot, lambda: _agent_job(job_id).paused, what="the agent to say the campaign is paused")
            header = screen.query_one("#job-header")
            await until(pilot, lambda: "paused" in header.render().plain, what="'paused' shown")  # type: ignore[attr-defined]
            # The panel's advice taken (solo scaled to 2): the PDB has room, but the campaign is paused: no new wave
            # starts. The node watch would fail at once on a cordon of the second node; none comes for several
            # times a wave's pace.
            cluster.apps.patch_namespaced_deployment_scale("solo", namespace, {"spec": {"replicas": 2}})
            assert not out.wait(lambda: second in out.cordoned_at, timeout=4), "a wave started while it was paused"
            await pilot.press("p")
            await until(pilot, lambda: not _agent_job(job_id).paused, what="the agent to say it is resumed")

            # Resumed: the first wave drains, the others follow, one node at a time, live.
            try:
                await until(
                    pilot,
                    lambda: set(column(nodes, "STATE").values()) == {"done"},
                    what="every node done on screen",
                    timeout=120,
                )
            except AssertionError as err:
                body = app.store.view(job_id).body
                raise AssertionError(f"{err}: {column(nodes, 'STATE')} {column(nodes, 'WHY')}; {body}") from err
            await until(pilot, lambda: app.store.view(job_id).finished is not None, what="the campaign's end")
            assert list(column(waves, "STATE").values()) == ["done", "done", "done"]
            assert not screen.query_one(BlockerPanel).display
    finally:
        out.stop()
    assert _agent_job(job_id).state == "succeeded"
    # What the cluster did: each node cordoned once, one at a time, one zone at a time, and all uncordoned;
    # solo never below its PDB's minimum.
    assert sorted(out.cordoned_at) == sorted([first, second, third])
    assert out.most_out == 1
    assert out.most_zones == 1
    assert not any(cluster.core.read_node(n).spec.unschedulable for n in (first, second, third))
    healthy.settle({"solo": 2, "web": 3})
    assert healthy.stop()["solo"] >= 1


@on_a_loop
async def test_readonly_refuses_to_steer_the_campaign_and_c_confirmed_cancels_it(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    first, second, third = _held_pool(cluster, namespace, dedicated_nodes)
    out = NodesOut(cluster, namespace).start()
    try:
        job_id = _submit(kubeconfig, namespace, [first, second, third])
        readonly = RolloutPlusApp(agent_connect(), open_job=job_id, readonly=True)
        async with readonly.run_test(size=SIZE) as pilot:
            screen = await _campaign_screen(pilot, readonly)
            await _first_wave_held(pilot, screen, namespace, first)
            assert screen.check_action("pause", ()) is False
            assert screen.check_action("cancel", ()) is False
            await pilot.press("c", "p")
            await pilot.pause(0.3)
            assert readonly.screen is screen  # no question
        job = _agent_job(job_id)
        assert (job.state, job.paused) == ("running", False)

        app = RolloutPlusApp(agent_connect(), open_job=job_id)
        async with app.run_test(size=SIZE) as pilot:
            screen = await _campaign_screen(pilot, app)
            await _first_wave_held(pilot, screen, namespace, first)
            await pilot.press("c")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
            await pilot.press("y")
            await until(pilot, lambda: app.store.view(job_id).finished is not None, what="the campaign's end")
    finally:
        out.stop()
    assert _agent_job(job_id).state == "cancelled"
    # Cancelled in its first wave: the first node stays cordoned (as a cancelled drain leaves it), the others
    # were never touched, and solo's pod is still where it was.
    assert sorted(out.cordoned_at) == [first]
    assert cluster.core.read_node(first).spec.unschedulable
    (solo,) = cluster.core.list_namespaced_pod(namespace, label_selector="app=solo").items
    assert solo.spec.node_name == first


def _summary(screen: CampaignScreen) -> str:
    return " ".join(screen.query_one("#campaign-summary").render().plain.split())  # type: ignore[attr-defined]


@pytest.mark.timeout(420)  # the second window opens a minute after the first closes; then two nodes drain
@pytest.mark.parametrize("at_window_end", [AtWindowEnd.STOP, AtWindowEnd.FINISH])
@on_a_loop
async def test_a_window_that_closes_mid_wave_shows_what_finishes_what_stopped_and_when_it_opens(
    agent_dir: AgentPaths,
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
    at_window_end: AtWindowEnd,
) -> None:
    target, spare = dedicated_nodes(2)
    # Six pods behind maxUnavailable 1, each replacement Ready 8 s after it starts: 40 s and more to drain the
    # node, so the first window (25 s: its wave starts in it even on a loaded CI machine) ends mid-drain. The spare
    # node comes second, so the campaign has a wave to wait for the next window with.
    with only_schedulable(cluster, target, [spare]):
        deploy(cluster, namespace, "web", 6, pool=namespace, annotations={manifests.READY_AFTER: "8s"})
        add_pdb(cluster, namespace, "web", app="web", expected=6, max_unavailable=1)
    stop = at_window_end is AtWindowEnd.STOP
    healthy = HealthyPods(cluster, namespace).start()
    out = NodesOut(cluster, namespace).start()
    try:
        with connect(name="test") as agent:  # the agent is up before the clock of the windows starts
            first_close = time.time() + 25
            # a gap long enough for a loaded machine's screen to show it, and, finishing, for the drain to end in it
            second_open = first_close + 60
            campaign = CampaignJob(
                nodes=(target, spare),
                budget="1",
                order=NodeOrder.GIVEN,
                windows=two_windows(first_close=first_close, second_open=second_open),
                at_window_end=at_window_end,
                drain=DrainOptions(timeout=0),
            )
            connection = Connection(kubeconfig=(str(kubeconfig),), namespace=namespace)
            job_id = agent.submit(JobSpec(kind=JobKind.CAMPAIGN, connection=connection, campaign=campaign)).id
        app = RolloutPlusApp(agent_connect(), open_job=job_id)
        async with app.run_test(size=SIZE) as pilot:
            screen = await _campaign_screen(pilot, app)
            nodes = screen.query_one("#campaign-nodes", LiveTable)
            # draining, then blocked from its second pod on (web's PDB lets one go at a time): a loaded screen may
            # only ever show the second
            await until(
                pilot,
                lambda: column(nodes, "STATE").get(target) in ("draining", "blocked"),
                what="the drain",
                timeout=45,
            )
            assert out.cordoned_at[target][0] < first_close, "the wave started after the window: too slow a machine"
            try:
                await until(pilot, lambda: "closed mid-wave" in _summary(screen), what="the window's end", timeout=30)
            except AssertionError as err:
                raise AssertionError(f"{err}: the summary says {_summary(screen)!r}; {column(nodes, 'STATE')}") from err
            said = _summary(screen)
            assert time.time() >= first_close - 1, said
            assert "window: closed, opens in" in said, said
            assert "closed mid-wave: no new node starts" in said, said
            if stop:
                await until(pilot, lambda: column(nodes, "STATE")[target] == "stopped", what="stopped", timeout=10)
                said = _summary(screen)
                assert f"stopped {target} (cordoned, drained first when it opens)" in said, said
                assert "drained first when it opens" in column(nodes, "WHY")[target]
                # as the cluster has it: cordoned still, some of web's pods on it (the drain was cut)
                assert cluster.core.read_node(target).spec.unschedulable
                assert any(p.metadata.namespace == namespace for p in pods_on(cluster, target))
                assert time.time() < second_open, "the window opened before the screen was read: too slow a machine"
            else:
                assert f"finishing {target}" in said, said
                await until(
                    pilot,
                    lambda: "the wave it cut is through" in _summary(screen),
                    what="the wave through while closed",
                    timeout=60,
                )
                # as the cluster has it, inside the gap: the node drained of web's pods
                assert time.time() < second_open, "the window opened before the drain ended: too slow a machine"
                assert not any(p.metadata.namespace == namespace for p in pods_on(cluster, target))
            # From the second window's opening, as the scenario's own clock has it: the target's drain (stopped)
            # or nothing (finished), then the spare's, each six pods one at a time, Ready 8 s after they start.
            await until(
                pilot,
                lambda: app.store.view(job_id).finished is not None,
                what="the campaign's end",
                timeout=max(0.0, second_open - time.time()) + 150,
            )
            assert column(nodes, "STATE") == {target: "done", spare: "done"}
            assert "closed mid-wave" not in _summary(screen)
        healthy.settle({"web": 6}, timeout=60)
    finally:
        out.stop()
        minimum = healthy.stop()
    assert _agent_job(job_id).state == "succeeded"
    # each node cordoned once (the target across the gap), uncordoned at the end; web never below its PDB's minimum
    assert {n: len(out.cordoned_at[n]) for n in (target, spare)} == {target: 1, spare: 1}
    assert out.most_out == 1
    assert not any(cluster.core.read_node(n).spec.unschedulable for n in (target, spare))
    assert minimum["web"] >= 5, minimum


@on_a_loop
async def test_s_confirmed_drains_the_blocked_node_through_a_surge_and_readonly_offers_no_s(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    first, second, third = _held_pool(cluster, namespace, dedicated_nodes)
    healthy = HealthyPods(cluster, namespace).start()
    try:
        # solo's surged pod lands on a later wave's node, which its PDB then holds: s is rightly offered again
        # there. A surge and the next wave's start took under a second, quicker than a loaded screen's refresh,
        # so the moment s is not offered went unseen; the soak keeps each wave's end on screen for a while.
        job_id = _submit(kubeconfig, namespace, [first, second, third], soak=5.0)
        readonly = RolloutPlusApp(agent_connect(), open_job=job_id, readonly=True)
        async with readonly.run_test(size=SIZE) as pilot:
            screen = await _campaign_screen(pilot, readonly)
            await _first_wave_held(pilot, screen, namespace, first)
            assert screen.check_action("surge", ()) is False
            assert "(press s)" not in screen.query_one(BlockerPanel).plain

        app = RolloutPlusApp(agent_connect(), open_job=job_id)
        async with app.run_test(size=SIZE) as pilot:
            screen = await _campaign_screen(pilot, app)
            await _first_wave_held(pilot, screen, namespace, first)
            await until(pilot, lambda: screen.check_action("surge", ()) is True, what="s offered")
            panel = screen.query_one(BlockerPanel)
            await until(pilot, lambda: "(press s)" in panel.plain, what="the panel's hint naming s")
            await pilot.press("s")
            question = await until(
                pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, what="the question"
            )
            asked = " ".join(question.query_one("#confirm-question").render().plain.split())  # type: ignore[union-attr]
            assert f"node/{first}" in asked, asked
            assert f"Deployment {namespace}/solo" in asked, asked
            await pilot.press("y")
            await until(
                pilot,
                lambda: first in app.store.view(job_id).body.surge_requested,  # type: ignore[union-attr]
                what="the request in the campaign's events",
            )
            await until(pilot, lambda: screen.check_action("surge", ()) is False, what="s no longer offered")
            # solo's pod moves to another node of the pool, whose wave then waits for the same PDB: s again.
            for _ in range(2):
                await until(
                    pilot,
                    lambda: app.store.view(job_id).finished is not None or screen.check_action("surge", ()) is True,
                    what="the campaign's end or the next node held by solo",
                    timeout=150,
                )
                if app.store.view(job_id).finished is not None:
                    break
                await pilot.press("s")
                await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the next question")
                await pilot.press("y")
                await until(pilot, lambda: screen.check_action("surge", ()) is False, what="s no longer offered")
            await until(pilot, lambda: app.store.view(job_id).finished is not None, what="the campaign's end")
    finally:
        minimum = healthy.stop()
    job = _agent_job(job_id)
    assert job.state == "succeeded", job
    assert minimum["solo"] >= 1  # never below its PDB's minimum
    assert cluster.apps.read_namespaced_deployment("solo", namespace).spec.replicas == 1  # restored
    # Every node was drained (solo's pod left each node it was on through a surge) and is back in service.
    assert not any(cluster.core.read_node(n).spec.unschedulable for n in (first, second, third))
