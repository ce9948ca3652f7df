"""The app's own behaviour that needs no cluster: a recording opened read-only, an unknown job, bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_rollout.cli.main import cli
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.tui.app import RolloutPlusApp, recording_connect
from kubectl_rollout.tui.screens.drain import DrainScreen
from kubectl_rollout.tui.screens.jobs import JobsScreen

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
                if isinstance(app.screen, DrainScreen):
                    break
            return type(app.screen), set(app.screen.active_bindings)

    screen, keys = asyncio.run(scenario())
    assert screen is DrainScreen
    assert not {"c", "p"} & keys  # a recording cannot be steered: the keys are not offered at all


def test_a_replay_file_that_is_not_a_recording_fails_before_the_tui_starts(tmp_path: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"job": "x"}\n')
    result = CliRunner().invoke(cli, ["tui", "--replay", str(bad)])
    assert result.exit_code == 2, result.output
    assert f"{bad}:1: not an event envelope" in result.output


def test_the_store_hands_each_event_emission_time_to_the_flush_that_folds_it() -> None:
    # The latency is measured from the job emitting the event, not from the TUI reading it.
    from kubectl_rollout.jobs.events.job import JobStarted
    from kubectl_rollout.tui.job_store import JobStore

    store = JobStore()
    for seq, at in enumerate((1795431129.5, 1795431130.25), 1):
        store.add(Envelope(job="j1", seq=seq, at=at, event=JobStarted(kind="drain", target="node/n1")))
    changed, emitted = store.take_changed()
    assert changed == {"j1"}
    assert emitted == [1795431129.5, 1795431130.25]
    assert store.take_changed() == (set(), [])
