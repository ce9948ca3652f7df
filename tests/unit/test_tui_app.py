"""The app's own behaviour that needs no cluster: a recording opened read-only, an unknown job, bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from textual.widgets import Static

from kubectl_rollout.cli.main import cli
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.tui.app import RolloutPlusApp, recording_connect
from kubectl_rollout.tui.screens.evictions import EvictionsScreen
from kubectl_rollout.tui.screens.jobs import JobsScreen
from kubectl_rollout.tui.screens.nodes import NodesScreen

DRAIN = Path(__file__).parent / "streams" / "drain_pdb_and_bare_pod.jsonl"


def test_an_unknown_job_leaves_the_job_list_and_says_which_job() -> None:
    async def scenario() -> tuple[type, list[str]]:
        app = RolloutPlusApp(recording_connect([DRAIN]), open_job="nope")
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(50):
                await pilot.pause(0.02)
                if app._notifications:
                    break
            return type(app.screen), [n.message for n in app._notifications]

    screen, said = asyncio.run(scenario())
    assert screen is JobsScreen
    assert any("no job 'nope'" in message for message in said), said


def test_a_recording_is_read_only_and_opens_on_its_job() -> None:
    job = json.loads(DRAIN.read_text().splitlines()[0])["job"]

    async def scenario() -> tuple[type, set[str]]:
        app = RolloutPlusApp(recording_connect([DRAIN]), open_job=job)
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(100):
                await pilot.pause(0.02)
                if isinstance(app.screen, EvictionsScreen):
                    break
            return type(app.screen), set(app.screen.active_bindings)

    screen, keys = asyncio.run(scenario())
    assert screen is EvictionsScreen
    assert not {"c", "p"} & keys  # a recording cannot be steered: the keys are not offered at all


def test_a_replay_file_that_is_not_a_recording_fails_before_the_tui_starts(tmp_path: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"job": "x"}\n')
    result = CliRunner().invoke(cli, ["tui", "--replay", str(bad)])
    assert result.exit_code == 2, result.output
    assert f"{bad}:1: not an event envelope" in result.output


def test_the_store_hands_each_event_emission_and_reception_time_to_the_flush_that_folds_it() -> None:
    # The latency is measured both from the job emitting the event and from the TUI's reader receiving it.
    from kubectl_rollout.jobs.events.job import JobStarted
    from kubectl_rollout.tui.job_store import Arrival, JobStore

    store = JobStore()
    for seq, at in enumerate((1795431129.5, 1795431130.25), 1):
        event = JobStarted(kind="drain", target="node/n1")
        store.add(Envelope(job="j1", seq=seq, at=at, event=event), received=at + 0.125)
    changed, arrivals = store.take_changed(now=0.0)
    assert changed == {"j1"}
    assert arrivals == [Arrival(1795431129.5, 1795431129.625), Arrival(1795431130.25, 1795431130.375)]
    assert store.take_changed(now=0.0) == (set(), [])


def test_tui_without_a_kubeconfig_opens_and_its_cluster_screens_say_how_to_set_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: dict[str, Any] = {}
    monkeypatch.setattr("kubectl_rollout.cli.tui_command.open_tui", lambda **kwargs: opened.update(kwargs))
    missing = tmp_path / "nowhere"
    result = CliRunner().invoke(cli, ["tui"], env={"KUBECONFIG": str(missing), "HOME": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert opened["cluster"] is None
    reason = opened["no_cluster"]
    assert reason.startswith("no cluster is configured: no kubeconfig found"), reason
    assert "--kubeconfig" in reason
    assert "KUBECONFIG" in reason

    async def scenario() -> tuple[type, str, str, type, str]:
        app = RolloutPlusApp(recording_connect([DRAIN]), no_cluster=reason)
        async with app.run_test(size=(80, 24)) as pilot:
            summary = app.screen.query_one("#jobs-summary", Static)
            for _ in range(100):
                await pilot.pause(0.02)
                if "1 jobs" in str(summary.render()):
                    break
            jobs_screen, jobs = type(app.screen), summary.render()
            await pilot.press("2")
            for _ in range(50):
                await pilot.pause(0.02)
                if isinstance(app.screen, NodesScreen) and app.screen.status_text:
                    break
            nodes = app.screen
            detail = nodes.query_one(".detail", Static).render()
            return jobs_screen, str(jobs), str(detail), type(nodes), nodes.status_text

    jobs_screen, jobs, detail, nodes_screen, status = asyncio.run(scenario())
    assert jobs_screen is JobsScreen
    assert "1 jobs" in jobs, jobs  # the Jobs screen works without a cluster
    assert nodes_screen is NodesScreen
    assert detail == reason
    assert "no cluster to show" in status


def test_only_the_screens_a_person_sees_are_repainted_at_a_flush() -> None:
    # The job list under a drain is hidden: repainting it made Textual repaint the whole drain screen.
    from kubectl_rollout.tui.app import shown_screens
    from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen

    job = json.loads(DRAIN.read_text().splitlines()[0])["job"]

    async def scenario() -> tuple[list[type], list[type]]:
        app = RolloutPlusApp(recording_connect([DRAIN]), open_job=job)
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(100):
                await pilot.pause(0.02)
                if isinstance(app.screen, EvictionsScreen):
                    break
            alone = [type(s) for s in shown_screens(app.screen_stack)]
            await app.push_screen(ConfirmScreen("Sure?", yes="Yes"))
            await pilot.pause()
            under_a_dialog = [type(s) for s in shown_screens(app.screen_stack)]
            return alone, under_a_dialog

    alone, under_a_dialog = asyncio.run(scenario())
    assert alone == [EvictionsScreen]
    assert under_a_dialog == [ConfirmScreen, EvictionsScreen]
