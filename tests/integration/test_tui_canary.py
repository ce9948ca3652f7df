"""The Rollout screen's canary steps against a real agent and the control plane (issue 23).

Managed workload ``web`` (10 replicas, maxSurge and maxUnavailable 25 %) with the steps
``setWeight 20; pause; setWeight 60; pause``; a set image job takes it to the first pause. The screen must list
the steps with the pause current and say ``step 2/4: pause, 2/10 pods``; ``--readonly`` refuses every key; ``P``
(confirmed) promotes it, which the cluster shows as the next step's counts (6 new, 4 old); ``A`` (confirmed)
aborts it: the canary at 0, the stable at 10; a retry run elsewhere (the CLI in-process) shows, read from the record.
``RolloutInvariants`` watches the pods and ReplicaSets throughout.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import manifests
from integration.test_agent import agent_dir
from integration.test_canary import V2, canary_state, counts, created, plugin, workload
from integration.test_tui import SIZE, on_a_loop, until
from invariants import RolloutInvariants
from textual.pilot import Pilot
from textual.widgets import Static

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.jobs.events.rollout import ContainerImage
from kubectl_rollout.jobs.spec import ActionKind, Connection, JobKind, JobSpec, RolloutAction
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.tui.app import RolloutPlusApp, agent_connect
from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen
from kubectl_rollout.tui.screens.rollout import RolloutScreen

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py

STEPS = "setWeight 20; pause; setWeight 60; pause"


def _set_image(kubeconfig: Path, namespace: str) -> str:
    spec = JobSpec(
        kind=JobKind.ROLLOUT,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        rollout=RolloutAction(
            kind=ActionKind.SET_IMAGE, name="web", images=(ContainerImage(container="app", image=V2),)
        ),
    )
    with connect(name="test") as agent:
        return agent.submit(spec).id


async def _rollout_screen(pilot: Pilot[Any], app: RolloutPlusApp) -> RolloutScreen:
    screen = await until(
        pilot,
        lambda: isinstance(app.screen, RolloutScreen) and app.screen.query("#steps") and app.screen,
        what="the Rollout screen, composed",
    )
    assert isinstance(screen, RolloutScreen)
    return screen


def _steps(screen: RolloutScreen) -> str:
    return " ".join(screen.query_one("#steps", Static).render().plain.split())  # type: ignore[attr-defined]


async def _at(pilot: Pilot[Any], screen: RolloutScreen, line: str, *, timeout: float = 90) -> None:
    """Until the steps panel says ``line``."""
    try:
        await until(pilot, lambda: line in _steps(screen), what=repr(line), timeout=timeout)
    except AssertionError as err:
        raise AssertionError(f"{err}; the panel says: {_steps(screen)}") from err


async def _key_then_yes(pilot: Pilot[Any], app: RolloutPlusApp, key: str) -> None:
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what=f"the question of {key}")
    await pilot.press("y")


@on_a_loop
async def test_a_canary_at_a_pause_shows_its_steps_p_promotes_it_a_aborts_it_and_readonly_refuses(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    created(cluster, namespace, kubeconfig, tmp_path, workload(STEPS))
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        job_id = _set_image(kubeconfig, namespace)

        readonly = RolloutPlusApp(agent_connect(), open_job=job_id, readonly=True)
        async with readonly.run_test(size=SIZE) as pilot:
            screen = await _rollout_screen(pilot, readonly)
            await _at(pilot, screen, "step 2/4: pause, 2/10 pods")
            assert "✓ 1 setWeight 20% ▶ 2 pause · 3 setWeight 60% · 4 pause" in _steps(screen)
            assert "paused by the step itself" in _steps(screen)
            for action in ("promote", "promote_full", "abort", "retry"):
                assert screen.check_action("canary", (action,)) is False, action
            await pilot.press("P", "A")
            await pilot.pause(0.3)
            assert readonly.screen is screen  # no question
        assert canary_state(cluster, namespace)["step"] == 1  # still at the pause (0-based)
        assert counts(cluster, namespace) == {V2: (2, 2), manifests.IMAGE: (8, 8)}

        app = RolloutPlusApp(agent_connect(), open_job=job_id)
        async with app.run_test(size=SIZE) as pilot:
            screen = await _rollout_screen(pilot, app)
            await _at(pilot, screen, "step 2/4: pause, 2/10 pods")
            assert screen.check_action("canary", ("promote",)) is True
            assert screen.check_action("canary", ("retry",)) is False

            await _key_then_yes(pilot, app, "P")
            # The promote job drives the canary to its next pause: 6 new pods, 4 old, on the cluster and on screen.
            await until(
                pilot,
                lambda: counts(cluster, namespace) == {V2: (6, 6), manifests.IMAGE: (4, 4)},
                what="the second weight's counts on the cluster",
                timeout=120,
            )
            await _at(pilot, screen, "step 4/4: pause, 6/10 pods")
            assert "✓ 3 setWeight 60% ▶ 4 pause" in _steps(screen)
            assert "promoted by " in _steps(screen)
            assert canary_state(cluster, namespace)["promoted"]["by"]

            await _key_then_yes(pilot, app, "A")
            await until(
                pilot,
                lambda: counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)},
                what="the canary at 0 and the stable back at 10",
                timeout=120,
            )
            await _at(pilot, screen, "aborted at step 4/4")
            await until(pilot, lambda: screen.check_action("canary", ("retry",)) is True, what="R offered once aborted")
            assert screen.check_action("canary", ("promote",)) is False

            # A retry from elsewhere (the CLI in-process, as a CI job runs it: nothing of it reaches this agent's
            # journal): the screen reads it from the workload's record, which the agent reads for it.
            retried = await asyncio.to_thread(plugin, kubeconfig, namespace, "retry", "web")
            assert retried.returncode == 0, retried.stderr
            await _at(pilot, screen, "retried by ")
            await _at(pilot, screen, "step 2/4: pause, 2/10 pods")
            assert screen.check_action("canary", ("promote",)) is True
            assert screen.check_action("canary", ("retry",)) is False
    finally:
        fenceposts.stop()
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    assert canary_state(cluster, namespace)["retried"]["by"]
