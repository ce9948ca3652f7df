"""A campaign's events fold into the view its screen and printer draw from: waves, zones, nodes by state."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import datetime
from pathlib import Path

from kubectl_rollout.cli.campaign_output import campaign_printer, plan_lines
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events.base import Envelope, Event, PodRef
from kubectl_rollout.jobs.events.job import JobStarted
from kubectl_rollout.jobs.views import job as job_views
from kubectl_rollout.jobs.views.campaign import CampaignNodeState, CampaignView, fold

PLAN = ev.CampaignPlanned(
    waves=(
        ev.WavePlan(
            index=1,
            nodes=(ev.PlannedNode(name="a", zone="z1", pods=3), ev.PlannedNode(name="b", zone="z1", pods=1)),
            zones=("z1",),
            blockers=(ev.WaveBlocker(pdb="shop/web", pods=3, allowed=1, rounds=3, at_least_seconds=6.0),),
            pods=4,
        ),
        ev.WavePlan(index=2, nodes=(ev.PlannedNode(name="c", zone="z2", pods=2),), zones=("z2",), pods=2),
    ),
    budget=2,
    budget_text="50%",
    per_zone=True,
    soak=30.0,
    windows=("Mon-Fri 22:00-04:00 Europe/Berlin",),
    ruled_pods=(
        ev.RuledPod(
            pod=PodRef(namespace="shop", name="batch-1", node="a"),
            rule=ev.PodRule.WAIT_COMPLETED,
            source="cluster.x-k8s.io/drain=wait-completed",
            effect="not evicted; its node waits until it completes",
        ),
    ),
    estimated_seconds=66.0,
    next_opening=1795460400.0,
)


def _envelopes(events: list[Event]) -> list[Envelope]:
    return [Envelope(job="j1", seq=i, at=1000.0 + i, event=e) for i, e in enumerate(events, start=1)]


def _fold(events: list[Event]) -> CampaignView:
    view = CampaignView()
    for envelope in _envelopes(events):
        view = fold(view, envelope)
    return view


def test_nodes_go_from_pending_to_done_skipped_or_kept_and_the_budget_counts_those_out() -> None:
    view = _fold(
        [
            PLAN,
            ev.WindowOpened(closes_at=5000.0),
            ev.WaveStarted(index=1, nodes=("a", "b"), zones=("z1",)),
            drain_events.NodeCordoned(node="a", changed=True),
            drain_events.NodeCordoned(node="b", changed=True),
            drain_events.NodeDrainStarted(node="a", pods=()),
        ]
    )
    assert view.zones == {"a": "z1", "b": "z1", "c": "z2"}
    assert view.states == {
        "a": CampaignNodeState.DRAINING,
        "b": CampaignNodeState.CORDONED,
        "c": CampaignNodeState.PENDING,
    }
    assert view.out == ["a", "b"]
    assert view.wave == 1
    assert view.wave_blockers == PLAN.waves[0].blockers
    assert view.window_closes_at == 5000.0
    view = _fold(
        [
            PLAN,
            ev.WaveStarted(index=1, nodes=("a", "b")),
            drain_events.NodeCordoned(node="a", changed=True),
            drain_events.NodeCordoned(node="b", changed=True),
            drain_events.NodeDrained(node="a", evicted=3, seconds=1.0),
            ev.NodeKept(node="b", reason="blocked", label="rollout-plus.io/campaign-kept=j1"),
            ev.NodeSoaked(node="a", index=1, seconds=30.0),
            ev.HookRan(node="a", hook="post", command="true", exit_code=0, seconds=0.1),
            ev.NodeDone(node="a", uncordoned=True),
            ev.WindowClosed(next_opening=9000.0),
        ]
    )
    assert view.nodes_in(CampaignNodeState.DONE) == ["a"]
    assert view.nodes_in(CampaignNodeState.KEPT) == ["b"]
    assert view.why == {"b": "blocked"}
    assert view.out == []
    assert view.window_closed
    assert view.closed_until == 9000.0


def test_a_resumed_campaign_shows_its_finished_nodes_done() -> None:
    resumed = ev.CampaignPlanned(waves=PLAN.waves[1:], budget=2, done=("a", "b"))
    view = _fold([resumed])
    assert view.states == {"a": CampaignNodeState.DONE, "b": CampaignNodeState.DONE, "c": CampaignNodeState.PENDING}


def test_the_job_view_folds_a_campaign_with_its_own_reducer() -> None:
    events: list[Event] = [
        JobStarted(kind="campaign", target="-l pool=blue"),
        PLAN,
        ev.NodeDone(node="c", uncordoned=True),
    ]
    view = job_views.fold_all(_envelopes(events))
    assert isinstance(view.body, CampaignView)
    assert view.body.states["c"] is CampaignNodeState.DONE


def test_the_plan_names_the_waves_their_blockers_the_rules_and_the_time() -> None:
    lines = list(plan_lines(PLAN))
    assert lines[0] == "campaign: 3 node(s) in 2 wave(s), at most 2 out at once (50%), one zone at a time, soak 30s"
    assert "wave 1 [z1]: a (3 pods), b (1 pods)" in lines
    assert lines[1].startswith("windows: Mon-Fri 22:00-04:00 Europe/Berlin (closed now, next opens ")
    assert (
        "  held by PodDisruptionBudget shop/web: 3 of the wave's pods, 1 disruption(s) allowed now: 3 rounds, "
        "at least 6s" in lines
    )
    assert any("shop/batch-1 (node a): cluster.x-k8s.io/drain=wait-completed" in line for line in lines)
    assert lines[-1] == "estimated time: at least 1m6s (windows not counted)"


def test_the_printer_says_how_each_node_ended() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = campaign_printer(out, err)
    for envelope in _envelopes(
        [
            PLAN,
            ev.SoakStarted(index=1, seconds=30.0),
            ev.SoakCounting(index=1, until=datetime(2026, 11, 26, 19, 0, 30).timestamp()),
            ev.HookRan(node="b", hook="pre", command="exit 3", exit_code=3, seconds=0.0, output="no"),
            ev.NodeSkipped(node="b", reason="pre-hook exited 3", uncordoned=False),
            ev.NodeDone(node="a", uncordoned=True),
            ev.CampaignFinished(done=("a",), skipped=("b",), seconds=12.0),
        ]
    ):
        printer(envelope)
    printer.close()
    assert "node/a done (uncordoned)" in out.getvalue()
    assert "wave 1: soaking 30s (no workload lost a pod)" in out.getvalue()
    assert "wave 1: every workload available; the soak ends at Thu 2026-11-26 19:00:30" in out.getvalue()
    assert "node/b: pre-hook exited 3 after 0s" in err.getvalue()
    assert "node/b skipped (not uncordoned): pre-hook exited 3" in err.getvalue()
    assert "campaign: 1 done, 1 skipped (b) in 12s" in err.getvalue()


def test_a_campaigns_progress_is_its_nodes() -> None:
    from kubectl_rollout.jobs.views.progress import progress_of

    events: list[Event] = [
        JobStarted(kind="campaign", target="-l pool=blue"),
        PLAN,
        ev.NodeDone(node="a", uncordoned=True),
        ev.NodeKept(node="b", reason="blocked"),
    ]
    view = job_views.fold_all(_envelopes(events))
    progress = progress_of(view)
    assert (progress.done, progress.total) == (2, 3)


CAMPAIGN = Path(__file__).parent / "streams" / "campaign_two_waves.jsonl"


def test_a_recorded_campaign_folds_to_every_node_done_and_opens_on_its_own_screen() -> None:
    from kubectl_rollout.tui.app import RolloutPlusApp, recording_connect
    from kubectl_rollout.tui.screens.campaign import CampaignScreen
    from kubectl_rollout.tui.widgets.live_table import LiveTable

    envelopes = [Envelope.from_dict(json.loads(line)) for line in CAMPAIGN.read_text().splitlines()]
    view = job_views.fold_all(envelopes)
    assert isinstance(view.body, CampaignView)
    assert view.body.nodes_in(CampaignNodeState.DONE) == sorted(view.body.states)
    assert len(view.body.states) == 4
    job = envelopes[0].job

    async def scenario() -> tuple[type, dict[str, str]]:
        app = RolloutPlusApp(recording_connect([CAMPAIGN]), open_job=job)
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(100):
                await pilot.pause(0.02)
                if isinstance(app.screen, CampaignScreen) and app.store.view(job).finished is not None:
                    break
            app.flush()
            await pilot.pause(0.2)
            table = app.screen.query_one("#campaign-nodes", LiveTable)
            return type(app.screen), {key: table.get_row(key)[1].plain for key in table.row_keys}  # type: ignore[union-attr]

    screen, states = asyncio.run(scenario())
    assert screen is CampaignScreen
    assert states == dict.fromkeys(sorted(view.body.states), "done")
