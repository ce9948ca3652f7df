"""SVG snapshots of every TUI screen at 80x24 and 200x50, fed from recorded event streams.

A recording (``RecordedJobs``) instead of a live cluster, a frozen clock, local
time in UTC and no cursor blink: the same input gives the same picture, so a
change in a snapshot is a change in the TUI. Update them with
``pytest tests/unit/test_tui_snapshots.py --snapshot-update`` and look at each.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from campaign_stream import START as CAMPAIGN_START
from campaign_stream import campaign_events
from campaign_stream import envelopes as campaign_envelopes
from canary_stream import START as CANARY_START
from canary_stream import canary_events
from canary_stream import envelopes as canary_envelopes
from textual.pilot import Pilot

from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.cluster_rows import PodRow, ReplicaSetPods
from kubectl_rollout.jobs.events import campaign as campaign_ev
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events import surge as surge_events
from kubectl_rollout.jobs.events.base import Envelope, PodRef
from kubectl_rollout.jobs.events.eviction import PdbPodsUnhealthy, UnhealthyPod
from kubectl_rollout.jobs.views.campaign_board import SoakNow
from kubectl_rollout.tui.app import RolloutPlusApp
from kubectl_rollout.tui.job_source import JobSource
from kubectl_rollout.tui.recorded_jobs import RecordedJobs
from kubectl_rollout.tui.screens.evictions import EvictionsScreen
from kubectl_rollout.tui.widgets.blocker_panel import BlockerPanel
from kubectl_rollout.tui.widgets.filter_bar import FilterBar

STREAMS = Path(__file__).parent / "streams"
DRAIN = "drain_pdb_and_bare_pod.jsonl"
ROLLOUT = "rollout_pdb_held.jsonl"
#: 2026-11-23 10:52:09.5 UTC: half a second after the drain's first PDB refusal
FROZEN = 1795431129.5
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((200, 50), id="200x50")]


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def recorded(name: str, *, until: int | None = None) -> list[Envelope]:
    lines = (STREAMS / name).read_text().splitlines()
    found = [Envelope.from_dict(json.loads(line)) for line in lines]
    return [e for e in found if until is None or e.seq <= until]


def app_over(*streams: list[Envelope], readonly: bool = False, clock: float = FROZEN) -> RolloutPlusApp:
    envelopes = [e for stream in streams for e in stream]

    async def connect() -> JobSource:
        return RecordedJobs(envelopes, description="recorded")

    return RolloutPlusApp(connect, readonly=readonly, clock=lambda: clock)


def settled(*then: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Wait until every recorded job is folded and shown, then press ``then``, and show the result."""

    async def run(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, RolloutPlusApp)
        for _ in range(100):
            await pilot.pause(0.02)
            if app.store.order and all(app.store.view(j).last_seq for j in app.store.order):
                break
        app.flush()
        await pilot.pause()
        for key in then:
            await pilot.press(key)
            await pilot.pause(0.05)
            app.flush()
            # The filter's cursor stays shown: its blink paused as soon as the bar is there, before its first toggle
            for bar in app.query(FilterBar):
                bar.cursor_blink = False
        await pilot.pause()
        # A toggle already under way when the blink paused (a loaded machine runs the timer late) hid it once:
        # shown again (with the blink off, this only shows it)
        for bar in app.query(FilterBar):
            bar._restart_blink()
        await pilot.pause()

    return run


@pytest.mark.parametrize("size", SIZES)
def test_jobs_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    app = app_over(recorded(DRAIN), recorded(ROLLOUT))
    assert snap_compare(app, terminal_size=size, run_before=settled())


@pytest.mark.parametrize("size", SIZES)
def test_drain_screen_blocked_by_a_pdb(snap_compare: Any, size: tuple[int, int]) -> None:
    app = app_over(recorded(DRAIN, until=11))
    assert snap_compare(app, terminal_size=size, run_before=settled("enter"))


def with_unhealthy_report(envelopes: list[Envelope]) -> list[Envelope]:
    """The recorded drain blocked by its PDB, then the engine's report of the PDB's pods (its pods were all
    Ready when it was recorded, so the report is written here: one never-Ready pod on another node)."""
    last = envelopes[-1]
    sick = UnhealthyPod(
        pod=PodRef(namespace="streams-90e9ef", name="web-57cb769559-x2k9d", node="streams-90e9ef-b"),
        reason="not Ready",
        since=FROZEN - 95,
    )
    report = PdbPodsUnhealthy(pdb="streams-90e9ef/web", pods=(sick,), unhealthy=1, selected=3)
    return [*envelopes, Envelope(job=last.job, seq=last.seq + 1, at=last.at + 0.01, event=report)]


@pytest.mark.parametrize("size", SIZES)
def test_drain_screen_blocker_panel_names_the_unhealthy_pod(snap_compare: Any, size: tuple[int, int]) -> None:
    app = app_over(with_unhealthy_report(recorded(DRAIN, until=11)))
    assert snap_compare(app, terminal_size=size, run_before=settled("enter"))


@pytest.mark.parametrize("size", SIZES)
def test_drain_screen_finished(snap_compare: Any, size: tuple[int, int]) -> None:
    app = app_over(recorded(DRAIN), clock=FROZEN + 60)
    assert snap_compare(app, terminal_size=size, run_before=settled("enter"))


@pytest.mark.parametrize("size", SIZES)
def test_rollout_screen_held_by_a_pdb(snap_compare: Any, size: tuple[int, int]) -> None:
    app = app_over(recorded(ROLLOUT, until=30), clock=FROZEN + 311)  # 10:57:20.5, three seconds in
    assert snap_compare(app, terminal_size=size, run_before=settled("enter"))


class RecordingWithPods(RecordedJobs):
    """The recorded rollout, and an agent that answers ``pods`` with fixed rows (on a real cluster the pods' names
    are random; the TUI asking the real agent is tested in tests/integration/test_tui.py)."""

    PODS = (
        ReplicaSetPods(
            replica_set="web-7f8466b88b",
            revision=2,
            pods=(
                PodRow(name="web-7f8466b88b-h7v4c", node="streams-4a5f74-b", restarts=3, reason="CrashLoopBackOff"),
                PodRow(name="web-7f8466b88b-2xq9k", node="streams-4a5f74-a", ready=True),
            ),
            total=2,
            ready=1,
        ),
        ReplicaSetPods(
            replica_set="web-6ccdb8d8f9",
            revision=1,
            pods=(
                PodRow(name="web-6ccdb8d8f9-4kq2m", node="streams-4a5f74-a", ready=True),
                PodRow(name="web-6ccdb8d8f9-9xw7t", node="streams-4a5f74-b", ready=True, restarts=1),
            ),
            total=3,
            ready=3,
        ),
    )

    async def jobs(self) -> list[JobInfo]:
        spec = {"connection": {"kubeconfig": ["/nowhere"], "namespace": "streams-4a5f74"}}
        return [dataclasses.replace(info, spec=spec) for info in await super().jobs()]

    async def call(self, method: str, **params: Any) -> Any:
        assert (method, params["workload"], params["namespace"]) == ("pods", "web", "streams-4a5f74")
        return {"replica_sets": [row.as_dict() for row in self.PODS]}


@pytest.mark.parametrize("size", SIZES)
def test_rollout_screen_with_its_pods(snap_compare: Any, size: tuple[int, int]) -> None:
    envelopes = recorded(ROLLOUT, until=30)

    async def connect() -> JobSource:
        return RecordingWithPods(envelopes, description="recorded")

    app = RolloutPlusApp(connect, clock=lambda: FROZEN + 311)
    assert snap_compare(app, terminal_size=size, run_before=settled("enter"))


@pytest.mark.parametrize("size", SIZES)
def test_help_on_the_drain_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    app = app_over(recorded(DRAIN, until=11))
    assert snap_compare(app, terminal_size=size, run_before=settled("enter", "question_mark"))


@pytest.mark.parametrize("size", SIZES)
def test_drain_screen_filtered(snap_compare: Any, size: tuple[int, int]) -> None:
    app = app_over(recorded(DRAIN, until=11))
    assert snap_compare(app, terminal_size=size, run_before=settled("enter", "slash", "j", "8", "5"))


def test_drain_screen_after_a_resize_from_200x50_to_80x24(snap_compare: Any) -> None:
    app = app_over(recorded(DRAIN, until=11))
    settle = settled("enter")

    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(200, 50), run_before=run)


#: 40 pods of Deployment many evicted, the one pod of Deployment solo held by PDB tui-look/solo (minAvailable 1),
#: recorded with ``drain -o jsonl`` until it timed out; up to ``FORTY_HELD``, the last of the 40 pods is gone
FORTY = "drain_forty_gone_one_held.jsonl"
FORTY_HELD = 126
#: a second after that
FORTY_FROZEN = 1795685402.4


class RecordingThatCanAct(RecordedJobs):
    """A recording whose jobs may be steered, to show the keys a live agent's job has (a recording's never
    does; steering a real agent's job is tested in tests/integration/test_tui_drain_blocked.py)."""

    can_act = True


def app_acting_on(
    envelopes: list[Envelope],
    *,
    clock: float,
    can_act: bool,
    readonly: bool = False,
    acting: type[RecordedJobs] = RecordingThatCanAct,
) -> RolloutPlusApp:
    """The recorded jobs, steerable (``acting``, a recording that can act) or not (a plain recording)."""

    async def connect() -> JobSource:
        source = acting if can_act else RecordedJobs
        return source(envelopes, description="recorded")

    return RolloutPlusApp(connect, readonly=readonly, clock=lambda: clock)


def forty_held(*, can_act: bool, readonly: bool = False) -> RolloutPlusApp:
    envelopes = recorded(FORTY, until=FORTY_HELD)
    return app_acting_on(envelopes, clock=FORTY_FROZEN, can_act=can_act, readonly=readonly)


def test_drain_screen_shows_the_held_pod_first_and_names_its_deployment(snap_compare: Any) -> None:
    """The held pod above the forty gone ones; the panel names Deployment solo and what --surge would do, and
    the footer offers s."""
    assert snap_compare(forty_held(can_act=True), terminal_size=(80, 24), run_before=settled("enter"))


def test_s_asks_before_it_drains_again_with_surge(snap_compare: Any) -> None:
    assert snap_compare(forty_held(can_act=True), terminal_size=(80, 24), run_before=settled("enter", "s"))


@pytest.mark.parametrize(
    ("can_act", "readonly"), [pytest.param(False, False, id="recording"), pytest.param(True, True, id="readonly")]
)
def test_no_s_where_nothing_may_be_steered(can_act: bool, readonly: bool) -> None:
    app = forty_held(can_act=can_act, readonly=readonly)

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await settled("enter")(pilot)
            screen = app.screen
            assert isinstance(screen, EvictionsScreen)
            assert "Deployment tui-look/solo" in screen.query_one(BlockerPanel).plain
            assert screen.check_action("surge", ()) is False
            assert "(press s)" not in screen.query_one(BlockerPanel).plain
            await pilot.press("s")
            await pilot.pause(0.1)
            assert app.screen is screen

    asyncio.run(run())


def test_a_drain_that_surges_says_why_it_left_the_workload_alone_and_offers_no_s() -> None:
    """The same held pod in a drain with --surge that did not surge solo (an autoscaler on it, say): the panel
    says so, and s is not offered (a drain with --surge again would decide the same)."""
    envelopes = recorded(FORTY, until=FORTY_HELD)
    last = envelopes[-1]
    (held,) = [e.event.pod for e in envelopes if isinstance(e.event, drain_events.PodOwnerKnown)]
    skipped = surge_events.SurgeSkipped(
        workload=drain_events.WorkloadRef(kind="Deployment", namespace="tui-look", name="solo"),
        reason="HorizontalPodAutoscaler tui-look/solo sets its replica count and would undo a surge",
        pods=(held,),
    )
    envelopes.append(Envelope(job=last.job, seq=last.seq + 1, at=last.at, event=skipped))

    async def connect() -> JobSource:
        return RecordingThatCanAct(envelopes, description="recorded")

    app = RolloutPlusApp(connect, clock=lambda: FORTY_FROZEN)

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await settled("enter")(pilot)
            screen = app.screen
            assert isinstance(screen, EvictionsScreen)
            assert screen.check_action("cancel", ()) is True  # it can be steered: s is absent for its own reason
            assert screen.check_action("surge", ()) is False
            panel = " ".join(screen.query_one(BlockerPanel).plain.split())
            assert "--surge left Deployment tui-look/solo alone: HorizontalPodAutoscaler tui-look/solo" in panel
            assert "(press s)" not in panel

    asyncio.run(run())


def campaign_app(*, can_act: bool, readonly: bool = False) -> RolloutPlusApp:
    """The second wave of a campaign over six nodes in three zones, its first node held by PDB shop/solo."""
    envelopes = campaign_envelopes(campaign_events())
    return app_acting_on(envelopes, clock=CAMPAIGN_START + 70, can_act=can_act, readonly=readonly)


@pytest.mark.parametrize("size", SIZES)
def test_campaign_screen_a_wave_held_by_a_pdb(snap_compare: Any, size: tuple[int, int]) -> None:
    """The summary (wave, budget, rate, soak, window, nodes by phase, zones), the waves current first, the
    blocked node first, and the panel naming Deployment solo and s; the footer offers p, c and s."""
    assert snap_compare(campaign_app(can_act=True), terminal_size=size, run_before=settled("enter"))


def test_s_on_the_campaign_screen_asks_first_naming_the_node_and_its_workload(snap_compare: Any) -> None:
    assert snap_compare(campaign_app(can_act=True), terminal_size=(80, 24), run_before=settled("enter", "s"))


def test_campaign_screen_readonly_offers_no_steering() -> None:
    app = campaign_app(can_act=True, readonly=True)

    async def run() -> None:
        from kubectl_rollout.tui.screens.campaign import CampaignScreen

        async with app.run_test(size=(80, 24)) as pilot:
            await settled("enter")(pilot)
            screen = app.screen
            assert isinstance(screen, CampaignScreen)
            assert screen.check_action("pause", ()) is False
            assert screen.check_action("cancel", ()) is False
            assert screen.check_action("surge", ()) is False
            assert "(press s)" not in screen.query_one(BlockerPanel).plain
            await pilot.press("c", "s")
            await pilot.pause(0.1)
            assert app.screen is screen  # no question asked

    asyncio.run(run())


def canary_app(*, can_act: bool, readonly: bool = False) -> RolloutPlusApp:
    """Managed workload web at the pause of its third step, its gate passed before it."""
    envelopes = canary_envelopes(canary_events())
    clock = CANARY_START + 70
    return app_acting_on(envelopes, clock=clock, can_act=can_act, readonly=readonly, acting=WithItsCluster)


class WithItsCluster(RecordingThatCanAct):
    """The job names its cluster, as an agent's job does: what a promote job is submitted for."""

    async def jobs(self) -> list[JobInfo]:
        spec = {"connection": {"kubeconfig": ["/nowhere"], "namespace": "shop"}}
        return [dataclasses.replace(info, spec=spec) for info in await super().jobs()]


@pytest.mark.parametrize("size", SIZES)
def test_rollout_screen_a_canary_at_a_pause(snap_compare: Any, size: tuple[int, int]) -> None:
    """The steps (two done, the pause current, two to come), step 3/5 with its counts, paused by the step, the
    gate's last result with its output; the footer offers P, F and A (not R: nothing is aborted)."""
    assert snap_compare(canary_app(can_act=True), terminal_size=size, run_before=settled("enter"))


def test_p_on_a_canary_asks_before_it_promotes(snap_compare: Any) -> None:
    assert snap_compare(canary_app(can_act=True), terminal_size=(80, 24), run_before=settled("enter", "P"))


@pytest.mark.parametrize(
    ("can_act", "readonly"), [pytest.param(False, False, id="recording"), pytest.param(True, True, id="readonly")]
)
def test_no_canary_keys_where_nothing_may_be_steered(can_act: bool, readonly: bool) -> None:
    from kubectl_rollout.tui.screens.rollout import RolloutScreen

    app = canary_app(can_act=can_act, readonly=readonly)

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await settled("enter")(pilot)
            screen = app.screen
            assert isinstance(screen, RolloutScreen)
            found = screen.canary()
            assert found is not None
            assert found[0].step == 3
            for action in ("promote", "promote_full", "abort", "retry"):
                assert screen.check_action("canary", (action,)) is False, action
            await pilot.press("P")
            await pilot.pause(0.1)
            assert app.screen is screen  # no question

    asyncio.run(run())


def test_the_canary_keys_that_apply() -> None:
    from kubectl_rollout.tui.screens.rollout import RolloutScreen

    app = canary_app(can_act=True)

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await settled("enter")(pilot)
            screen = app.screen
            assert isinstance(screen, RolloutScreen)
            allowed = {a: screen.check_action("canary", (a,)) for a in ("promote", "promote_full", "abort", "retry")}
            assert allowed == {"promote": True, "promote_full": True, "abort": True, "retry": False}

    asyncio.run(run())


class Clock:
    """A clock a test moves by hand: what the screen shows between two events follows it alone."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def summary_shows(pilot: Pilot[Any], said: str, *, within: float = 3.0) -> str:
    """The campaign's summary once it says ``said`` (the app's one-second tick repaints it), or fail."""
    from textual.widgets import Static

    text = ""
    for _ in range(round(within / 0.05)):
        text = str(pilot.app.screen.query_one("#campaign-summary", Static).content)
        if said in text:
            return text
        await pilot.pause(0.05)
    raise AssertionError(f"the summary never said {said!r}; it says {text!r}")


def test_campaign_screen_counts_the_soak_down_without_a_new_event() -> None:
    """Wave 2 soaks (30 s, counting since START + 58): the time left moves with the clock, no event needed; a
    workload that drops out shows what the soak waits for, and that it starts over."""
    from campaign_stream import START as AT

    web = drain_events.WorkloadRef(kind="Deployment", namespace="shop", name="web")
    events = [
        *campaign_events(),
        drain_events.NodeDrained(node="pool-001", evicted=3, seconds=1.0),
        drain_events.NodeDrained(node="pool-004", evicted=3, seconds=1.0),
        campaign_ev.SoakStarted(index=2, seconds=30.0, workloads=(web,)),
        campaign_ev.SoakCounting(index=2, until=AT + 88),
    ]
    clock = Clock(AT + 70)

    async def connect() -> JobSource:
        return RecordedJobs(campaign_envelopes(events), description="recorded")

    app = RolloutPlusApp(connect, clock=clock)

    async def run() -> None:
        async with app.run_test(size=(120, 30)) as pilot:
            await settled("enter")(pilot)
            await summary_shows(pilot, "soaking wave 2: 18s left of 30s")
            clock.now = AT + 82
            await summary_shows(pilot, "soaking wave 2: 6s left of 30s")

    asyncio.run(run())

    down = drain_events.WorkloadAvailability(workload=web, available=1, desired=2)
    events.append(drain_events.WaitingForWorkloads(workloads=(down,)))
    app = RolloutPlusApp(connect, clock=clock)

    async def dropped() -> None:
        async with app.run_test(size=(120, 30)) as pilot:
            await settled("enter")(pilot)
            await summary_shows(
                pilot, "soaking wave 2: waits for Deployment shop/web 1/2 available, then 30s (started over 1x)"
            )

    asyncio.run(dropped())


def test_campaign_screen_a_window_that_closed_mid_wave(snap_compare: Any) -> None:
    """--at-window-end stop: the window closed during wave 2, pool-004 (drained) soaks on, pool-001's drain was
    stopped: the summary says no node starts, which finishes, which stopped, and when the window opens; pool-001
    is `stopped` (not failed) on top of the nodes."""
    events = [
        *campaign_events(),
        drain_events.NodeDrained(node="pool-004", evicted=3, seconds=1.0),
        campaign_ev.WindowClosed(
            next_opening=CAMPAIGN_START + 7200, in_progress=("pool-001", "pool-004"), at_window_end="stop"
        ),
        drain_events.NodeDrainFailed(node="pool-001", reasons=("cancelled",), cordoned=True, pending=()),
    ]
    app = app_acting_on(campaign_envelopes(events), clock=CAMPAIGN_START + 70, can_act=True)
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled("enter"))


@pytest.mark.parametrize(
    ("soak", "said"),
    [
        pytest.param(
            SoakNow(index=2, seconds=30.0, until=CAMPAIGN_START + 88, waiting=(), restarts=0),
            " · soaking wave 2: 18s left of 30s",
            id="counting",
        ),
        pytest.param(
            SoakNow(index=2, seconds=30.0, until=None, waiting=(), restarts=0),
            " · soaking wave 2: waits for its workloads, then 30s",
            id="not counting yet",
        ),
        pytest.param(
            SoakNow(index=2, seconds=0.0, until=None, waiting=(), restarts=0),
            " · soaking wave 2: waits for its workloads",
            id="no --soak: only the wait for availability",
        ),
        pytest.param(
            SoakNow(
                index=3,
                seconds=120.0,
                until=CAMPAIGN_START + 100,
                waiting=(),
                restarts=2,
            ),
            " · soaking wave 3: 30s left of 2m00s (started over 2x)",
            id="counting again after two drop-outs",
        ),
    ],
)
def test_the_soak_as_the_summary_says_it(soak: SoakNow, said: str) -> None:
    from kubectl_rollout.tui.screens.campaign import soak_text

    assert soak_text(soak, now=CAMPAIGN_START + 70).plain == said
