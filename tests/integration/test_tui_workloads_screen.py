"""The TUI's Workloads screen, headless (Pilot, 80x24), against a real agent and the real control plane.

Every key submits (or, for abort, cancels) a real agent job; what it promises is read back from the agent's
jobs and from the cluster (the workload's record, its revisions, its pods).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import manifests
from cluster_setup import deploy
from integration.test_agent import agent_dir
from integration.test_agent_cluster import apply_managed, managed_workload
from rich.text import Text
from textual.widgets import Input
from tui_cluster_host import ScreenHost, until

from kubectl_rollout.agent.client import cluster_calls, connect
from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.events.job import JobFinished, JobState
from kubectl_rollout.jobs.events.rollout import ContainerImage
from kubectl_rollout.jobs.spec import ActionKind, Connection, JobKind, JobSpec, RolloutAction
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.rollout.record import read
from kubectl_rollout.tui.cluster_scope import ClusterScope
from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen
from kubectl_rollout.tui.screens.dialogs.image_form import ImageForm
from kubectl_rollout.tui.screens.dialogs.revision import RevisionDialog
from kubectl_rollout.tui.screens.workloads import WorkloadsScreen
from kubectl_rollout.tui.widgets.live_table import LiveTable

__all__ = ["agent_dir"]

SIZE = (80, 24)
V2 = "registry.example/app:v2"
ACTIONS = ("pause", "undo", "restart", "set_image", "abort")


def _connection(kubeconfig: Path, namespace: str) -> Connection:
    return Connection(kubeconfig=(str(kubeconfig),), namespace=namespace)


def _host(kubeconfig: Path, namespace: str, *, readonly: bool = False) -> ScreenHost:
    scope = ClusterScope(connection=_connection(kubeconfig, namespace), readonly=readonly, refresh_every=0)
    return ScreenHost(WorkloadsScreen, scope)


def _cell(app: ScreenHost, key: str, column: str) -> str:
    table = app.screen.query_one(LiveTable)
    value = table.get_row(key)[table.column_names.index(column)]
    return value.plain if isinstance(value, Text) else str(value)


def _row(app: ScreenHost, key: str, *columns: str) -> list[str]:
    return [_cell(app, key, column) for column in columns]


def _finished(job: JobInfo) -> JobFinished:
    with connect(name="test") as agent:
        last = [e.event for e in agent.attach(job.id)][-1]
    assert isinstance(last, JobFinished)
    return last


async def _loaded(pilot: Any, app: ScreenHost) -> WorkloadsScreen:
    await until(pilot, lambda: isinstance(app.screen, WorkloadsScreen) and app.screen.loads > 0, what="the workloads")
    screen = app.screen
    assert isinstance(screen, WorkloadsScreen)
    return screen


async def _select(pilot: Any, screen: WorkloadsScreen, key: str) -> None:
    screen.table.cursor_row = screen.table.row_keys.index(key)
    await pilot.pause()


async def _confirm(pilot: Any, app: ScreenHost, answer: str) -> None:
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
    await pilot.press(answer)


def _web(agent_dir: Any, kubeconfig: Path, namespace: str, **kwargs: Any) -> None:
    with connect(name="test") as agent:
        apply_managed(agent, _connection(kubeconfig, namespace), managed_workload("web", namespace, **kwargs))


def test_the_table_shows_rollout_state_and_greys_out_what_does_not_apply(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    deploy(cluster, namespace, "api", 2, pool=namespace)
    _web(agent_dir, kubeconfig, namespace, replicas=2)
    app = _host(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            assert screen.table.row_keys == ["deployment/api", "workload/web"]
            columns = ("KIND", "REV", "READY", "UP-TO-DATE", "AVAILABLE", "STATE", "JOB")
            assert [_cell(app, "workload/web", c) for c in columns] == [
                "workload",
                "1",
                "2/2",
                "2",
                "2",
                "Complete",
                "-",
            ]
            assert [_cell(app, "deployment/api", c) for c in columns] == [
                "deploy",
                "1",
                "2/2",
                "2",
                "2",
                "Complete",
                "-",
            ]

            await _select(pilot, screen, "workload/web")
            assert {a: screen.check_action(a, ()) for a in ACTIONS} == {
                "pause": True, "undo": True, "restart": True, "set_image": True, "abort": None,
            }  # fmt: skip
            await _select(pilot, screen, "deployment/api")
            # The server's controller drives a Deployment: only a restart by eviction applies.
            assert {a: screen.check_action(a, ()) for a in ACTIONS} == {
                "pause": None, "undo": None, "restart": True, "set_image": None, "abort": None,
            }  # fmt: skip
            await pilot.press("p", "u", "i", "a")
            await pilot.pause(0.2)
            assert app.screen is screen
        assert app.jobs == []

    asyncio.run(scenario())


def test_p_pauses_and_resumes_the_workload_through_agent_jobs(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    _web(agent_dir, kubeconfig, namespace, replicas=1)
    app = _host(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await _loaded(pilot, app)
            await pilot.press("p")
            await until(pilot, lambda: len(app.jobs) == 1, what="the pause job")
            assert _finished(app.jobs[0]).state is JobState.SUCCEEDED
            assert read(cluster, namespace, "web").spec.paused is True
            await pilot.press("g")
            await until(pilot, lambda: _row(app, "workload/web", "STATE", "JOB") == ["Paused", "-"], what="Paused")

            await pilot.press("p")
            await until(pilot, lambda: len(app.jobs) == 2, what="the resume job")
            assert _finished(app.jobs[1]).state is JobState.SUCCEEDED
            assert read(cluster, namespace, "web").spec.paused is False
        assert [j.spec["rollout"]["kind"] for j in app.jobs] == ["pause", "resume"]

    asyncio.run(scenario())


def test_i_sets_the_image_from_a_form_and_u_undoes_to_a_chosen_revision(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    _web(agent_dir, kubeconfig, namespace, replicas=1)
    app = _host(kubeconfig, namespace)

    def image() -> str:
        return str(read(cluster, namespace, "web").manifest["spec"]["template"]["spec"]["containers"][0]["image"])

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            await pilot.press("i")
            await until(pilot, lambda: isinstance(app.screen, ImageForm), what="the form")
            form = app.screen
            assert form.query_one("#image", Input).value == manifests.IMAGE
            form.query_one("#image", Input).value = ""
            await pilot.press(*V2, "enter")
            await until(pilot, lambda: app.screen is screen, what="the form to close")
            await until(pilot, lambda: len(app.jobs) == 1, what="the set-image job")
            assert _finished(app.jobs[0]).state is JobState.SUCCEEDED
            assert image() == V2

            await pilot.press("g")
            await until(pilot, lambda: _row(app, "workload/web", "REV", "JOB") == ["2", "-"], what="revision 2")
            await pilot.press("u")
            await until(pilot, lambda: isinstance(app.screen, RevisionDialog), what="the revisions")
            dialog = app.screen
            assert isinstance(dialog, RevisionDialog)
            assert [(r.number, r.current) for r in dialog.revisions] == [(2, True), (1, False)]
            await pilot.press("enter")  # the highlighted one: revision 1, the newest that is not current
            await _confirm(pilot, app, "n")
            await until(pilot, lambda: app.screen is screen, what="the dialogs to close")
            assert len(app.jobs) == 1
            assert image() == V2

            await pilot.press("u")
            await until(pilot, lambda: isinstance(app.screen, RevisionDialog), what="the revisions")
            await pilot.press("enter")
            await _confirm(pilot, app, "y")
            await until(pilot, lambda: len(app.jobs) == 2, what="the undo job")
            assert _finished(app.jobs[1]).state is JobState.SUCCEEDED
            assert app.jobs[1].spec["rollout"]["to_revision"] == 1
            assert image() == manifests.IMAGE
            with connect(name="test") as agent:
                revisions = agent.run(cluster_calls.history(_connection(kubeconfig, namespace), "web"))
            # Undo reuses revision 1's ReplicaSet, which becomes revision 3.
            assert [(r.number, r.images, r.current) for r in revisions] == [
                (2, (f"app={V2}",), False),
                (3, (f"app={manifests.IMAGE}",), True),
            ]

    asyncio.run(scenario())


def test_r_restarts_after_confirming_a_workload_by_rollout_and_a_deployment_by_eviction(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    deploy(cluster, namespace, "api", 1, pool=namespace)
    _web(agent_dir, kubeconfig, namespace, replicas=1)
    api_pods = {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace, label_selector="app=api").items}
    app = _host(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            await _select(pilot, screen, "workload/web")
            await pilot.press("r")
            await _confirm(pilot, app, "n")
            await until(pilot, lambda: app.screen is screen, what="the dialog to close")
            assert app.jobs == []
            assert read(cluster, namespace, "web").generation == 1

            await pilot.press("r")
            await _confirm(pilot, app, "y")
            await until(pilot, lambda: len(app.jobs) == 1, what="the restart job")
            assert _finished(app.jobs[0]).state is JobState.SUCCEEDED
            assert read(cluster, namespace, "web").generation == 2

            await _select(pilot, screen, "deployment/api")
            await pilot.press("r")
            await _confirm(pilot, app, "y")
            await until(pilot, lambda: len(app.jobs) == 2, what="the restart by eviction")
            job = app.jobs[1]
            assert (job.kind, job.target) == ("restart", "deployment/api")
            assert _finished(job).state is JobState.SUCCEEDED
        now = {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace, label_selector="app=api").items}
        assert now.isdisjoint(api_pods)

    asyncio.run(scenario())


def test_a_aborts_the_rollout_a_job_drives_after_confirming(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    _web(agent_dir, kubeconfig, namespace, replicas=3, ready_after="3s")
    connection = _connection(kubeconfig, namespace)
    action = RolloutAction(
        kind=ActionKind.SET_IMAGE, name="web", namespace=namespace, images=(ContainerImage(container="app", image=V2),)
    )
    with connect(name="test") as agent:
        rollout = agent.submit(JobSpec(kind=JobKind.ROLLOUT, connection=connection, rollout=action))
    app = _host(kubeconfig, namespace)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            assert _cell(app, "workload/web", "JOB") == rollout.id
            assert {a: screen.check_action(a, ()) for a in ACTIONS} == {
                "pause": None, "undo": None, "restart": None, "set_image": None, "abort": True,
            }  # fmt: skip
            await pilot.press("a")
            await _confirm(pilot, app, "n")
            await until(pilot, lambda: app.screen is screen, what="the dialog to close")
            with connect(name="test") as agent:
                assert agent.show(rollout.id).cancel_requested is False

            await pilot.press("a")
            await _confirm(pilot, app, "y")
            await until(pilot, lambda: screen.status_text.startswith(f"job {rollout.id} cancelled"), what="abort")
            assert _finished(rollout).state is JobState.CANCELLED  # cooperatively, after its current step
            await pilot.press("g")
            await until(pilot, lambda: _cell(app, "workload/web", "JOB") == "-", what="no job drives it")
            assert screen.check_action("abort", ()) is None
        assert app.jobs == []
        assert read(cluster, namespace, "web").generation == 2  # the change stays recorded; nothing undone

    asyncio.run(scenario())


def test_readonly_hides_every_workload_action(
    agent_dir: Any, cluster: Cluster, kubeconfig: Path, namespace: str, dedicated_nodes: Any
) -> None:
    dedicated_nodes(1)
    _web(agent_dir, kubeconfig, namespace, replicas=1)
    app = _host(kubeconfig, namespace, readonly=True)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            screen = await _loaded(pilot, app)
            assert {screen.check_action(a, ()) for a in ACTIONS} == {False}
            shown = {binding.action for (_n, binding, _e, _t) in screen.active_bindings.values() if binding.show}
            assert shown.isdisjoint(ACTIONS)
            await pilot.press("p", "u", "r", "i", "a")
            await pilot.pause(0.2)
            assert app.screen is screen
        with connect(name="test") as agent:
            assert [j.kind for j in agent.jobs()] == ["rollout"]  # the apply alone
        assert read(cluster, namespace, "web").generation == 1

    asyncio.run(scenario())
