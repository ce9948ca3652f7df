"""What the campaign's screen shows, from its view: node phases by attention, waves, zones, the window."""

from __future__ import annotations

import pytest
from campaign_stream import CLOSES_AT, START, campaign_events, envelopes, planned

from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.views import job as job_views
from kubectl_rollout.jobs.views.blockers import pdb_blocks
from kubectl_rollout.jobs.views.campaign import CampaignView
from kubectl_rollout.jobs.views.campaign_board import (
    NodePhase,
    SoakNow,
    WaveStatus,
    WindowCut,
    WindowState,
    node_rows,
    phase_counts,
    soak_now,
    wave_rows,
    window_cut,
    window_now,
    zone_rows,
)


def _view(events: list[Event]) -> CampaignView:
    body = job_views.fold_all(envelopes(events)).body
    assert isinstance(body, CampaignView)
    return body


def test_the_nodes_come_by_attention_blocked_first_with_the_pdb_that_holds_them() -> None:
    view = _view(campaign_events())
    rows = node_rows(view)
    assert [(r.name, r.phase) for r in rows] == [
        ("pool-001", NodePhase.BLOCKED),
        ("pool-004", NodePhase.DRAINING),
        ("pool-002", NodePhase.WAITING),
        ("pool-005", NodePhase.WAITING),
        ("pool-000", NodePhase.DONE),
        ("pool-003", NodePhase.DONE),
    ]
    blocked = rows[0]
    assert (blocked.wave, blocked.zone, blocked.pods, blocked.evicted, blocked.blocked) == (2, "zone-b", 3, 2, 1)
    assert blocked.why == "1 pod held by PDB shop/solo"
    assert rows[-1].evicted == 3
    assert phase_counts(rows) == {NodePhase.BLOCKED: 1, NodePhase.DRAINING: 1, NodePhase.WAITING: 2, NodePhase.DONE: 2}


@pytest.mark.parametrize(
    ("tail", "phase"),
    [
        pytest.param([], NodePhase.DRAINING, id="draining"),
        pytest.param(
            [drain_events.NodeDrained(node="pool-004", evicted=3, seconds=1.0)],
            NodePhase.DRAINED,
            id="drained, its wave still draining",
        ),
        pytest.param(
            [drain_events.NodeDrained(node="pool-004", evicted=3, seconds=1.0), ev.SoakStarted(index=2, seconds=9)],
            NodePhase.SOAKING,
            id="soaking",
        ),
        pytest.param([ev.NodeSoaked(node="pool-004", index=2, seconds=9)], NodePhase.SOAKED, id="soaked"),
        pytest.param([ev.NodeKept(node="pool-004", reason="blocked 10m")], NodePhase.KEPT, id="kept"),
        pytest.param([ev.NodeSkipped(node="pool-004", reason="x", uncordoned=True)], NodePhase.SKIPPED, id="skipped"),
        pytest.param(
            [drain_events.NodeDrainFailed(node="pool-004", reasons=("boom",), cordoned=True, pending=())],
            NodePhase.FAILED,
            id="failed",
        ),
    ],
)
def test_a_nodes_phase(tail: list[Event], phase: NodePhase) -> None:
    rows = {r.name: r for r in node_rows(_view([*campaign_events(), *tail]))}
    assert rows["pool-004"].phase is phase


def test_a_kept_or_failed_node_says_why() -> None:
    view = _view(
        [
            *campaign_events(),
            ev.NodeKept(node="pool-004", reason="not drained within 10m"),
            drain_events.NodeDrainFailed(
                node="pool-001", reasons=("cannot delete bare pods",), pending=(), cordoned=True
            ),
        ]
    )
    rows = {r.name: r for r in node_rows(view)}
    assert rows["pool-004"].why == "not drained within 10m"
    assert rows["pool-001"].why == "cannot delete bare pods"
    assert [r.phase for r in node_rows(view)][:2] == [NodePhase.FAILED, NodePhase.KEPT]


def test_a_node_waiting_for_a_pod_a_rule_keeps_says_which_rule() -> None:
    from kubectl_rollout.jobs.events.base import PodRef

    kept = ev.RuledPod(
        pod=PodRef(namespace="shop", name="batch-1", node="pool-004"),
        rule=ev.PodRule.DO_NOT_DISRUPT,
        source="karpenter.sh/do-not-disrupt=true",
        effect="never evicted; its node waits until the pod is gone or the rule lifted",
    )
    rows = {r.name: r for r in node_rows(_view([*campaign_events(), ev.PodsHeld(node="pool-004", pods=(kept,))]))}
    assert rows["pool-004"].why == "1 pod kept by karpenter.sh/do-not-disrupt=true"
    assert rows["pool-004"].phase is NodePhase.DRAINING


def test_the_waves_current_first_then_those_to_come_then_those_done() -> None:
    view = _view(campaign_events(nodes=12))
    rows = wave_rows(view)
    assert [(w.index, w.status) for w in rows] == [
        (2, WaveStatus.CURRENT),
        (3, WaveStatus.NEXT),
        (4, WaveStatus.TO_COME),
        (5, WaveStatus.TO_COME),
        (6, WaveStatus.TO_COME),
        (1, WaveStatus.DONE),
    ]
    assert rows[0].blockers[0].pdb == "shop/solo"
    assert (rows[0].finished, rows[-1].finished, rows[0].pods) == (0, 2, 6)


def test_waves_a_stopped_campaign_never_started_say_so() -> None:
    view = _view([*campaign_events(), ev.CampaignFinished(done=("pool-000", "pool-003"), stopped="cancelled")])
    assert [(w.index, w.status) for w in wave_rows(view)] == [
        (2, WaveStatus.NOT_STARTED),
        (3, WaveStatus.NOT_STARTED),
        (1, WaveStatus.DONE),
    ]


def test_zones_count_the_nodes_out_against_the_budget_or_the_zone_budget() -> None:
    view = _view(campaign_events())
    assert [(z.zone, z.nodes, z.out, z.finished, z.cap) for z in zone_rows(view)] == [
        ("zone-a", 2, 0, 2, 2),
        ("zone-b", 2, 2, 0, 2),
        ("zone-c", 2, 0, 0, 2),
    ]
    plan = planned(nodes=6, pods_per_node=1, budget=2)
    capped = ev.CampaignPlanned(
        waves=plan.waves, budget=2, zone_budget="50%", zone_caps=(ev.ZoneCap(zone="zone-b", nodes=2, cap=1),)
    )
    assert [z.cap for z in zone_rows(_view([capped]))] == [2, 1, 2]


@pytest.mark.parametrize(
    ("events", "state", "until"),
    [
        pytest.param([ev.CampaignPlanned(waves=(), budget=1)], WindowState.ALWAYS, None, id="no window"),
        pytest.param(
            [ev.CampaignPlanned(waves=(), budget=1, windows=("09:00-11:00",), window_closes_at=CLOSES_AT)],
            WindowState.OPEN,
            CLOSES_AT,
            id="open, as planned",
        ),
        pytest.param(
            [ev.CampaignPlanned(waves=(), budget=1, windows=("09:00-11:00",), next_opening=START + 86400)],
            WindowState.CLOSED,
            START + 86400,
            id="planned while closed",
        ),
        pytest.param(
            [
                ev.CampaignPlanned(waves=(), budget=1, windows=("09:00-11:00",), window_closes_at=CLOSES_AT),
                ev.WindowClosed(next_opening=START + 7200),
            ],
            WindowState.CLOSED,
            START + 7200,
            id="closed since",
        ),
        pytest.param(
            [
                ev.CampaignPlanned(waves=(), budget=1, windows=("09:00-11:00",), next_opening=START + 60),
                ev.WindowClosed(next_opening=START + 60),
                ev.WindowOpened(closes_at=START + 999),
            ],
            WindowState.OPEN,
            START + 999,
            id="opened since",
        ),
    ],
)
def test_the_window_now(events: list[Event], state: WindowState, until: float | None) -> None:
    window = window_now(_view(events))
    assert (window.state, window.until) == (state, until)
    assert window.seconds_left(START) == (None if until is None else until - START)


@pytest.mark.parametrize(
    ("on_blocked", "said"),
    [
        pytest.param("wait", "--on-blocked surge would start 1 extra replica of Deployment shop/solo", id="wait"),
        pytest.param(
            "surge",
            "this campaign (--on-blocked surge) will, once the node's --timeout is out, start 1 extra",
            id="surge",
        ),
    ],
)
def test_the_blocker_advice_names_the_campaigns_way_to_a_surge(on_blocked: str, said: str) -> None:
    events = campaign_events()
    plan = next(e for e in events if isinstance(e, ev.CampaignPlanned))
    import dataclasses

    events[events.index(plan)] = dataclasses.replace(plan, on_blocked=on_blocked)
    view = _view(events)
    (block,) = pdb_blocks(view.pods, view.pdb_pods, surge=view.owner_facts)
    assert block.surge.startswith(said), block.surge
    assert "kubectl -n shop scale deployment/solo --replicas=2" in block.unblock


WEB = drain_events.WorkloadRef(kind="Deployment", namespace="shop", name="web")
WEB_DOWN = drain_events.WorkloadAvailability(workload=WEB, available=1, desired=2)
#: wave 2 of the recorded campaign drained, its soak of 30 s asked for
SOAK_STARTED: list[Event] = [
    drain_events.NodeDrained(node="pool-001", evicted=3, seconds=1.0),
    drain_events.NodeDrained(node="pool-004", evicted=3, seconds=1.0),
    ev.SoakStarted(index=2, seconds=30.0, workloads=(WEB,)),
]
#: counting since START + 50, then web dropped out
COUNTED_THEN_DROPPED: list[Event] = [
    *SOAK_STARTED,
    ev.SoakCounting(index=2, until=START + 80),
    drain_events.WaitingForWorkloads(workloads=(WEB_DOWN,)),
]


@pytest.mark.parametrize(
    ("tail", "soak"),
    [
        pytest.param([], None, id="no wave soaking"),
        pytest.param(
            SOAK_STARTED, SoakNow(index=2, seconds=30.0, until=None, waiting=(), restarts=0), id="started, not counting"
        ),
        pytest.param(
            [*SOAK_STARTED, drain_events.WaitingForWorkloads(workloads=(WEB_DOWN,))],
            SoakNow(index=2, seconds=30.0, until=None, waiting=(WEB_DOWN,), restarts=0),
            id="waits for a workload before it counts",
        ),
        pytest.param(
            [
                *SOAK_STARTED,
                drain_events.WaitingForWorkloads(workloads=(WEB_DOWN,)),
                ev.SoakCounting(index=2, until=START + 88),
            ],
            SoakNow(index=2, seconds=30.0, until=START + 88, waiting=(), restarts=0),
            id="counting once it is available",
        ),
        pytest.param(
            COUNTED_THEN_DROPPED,
            SoakNow(index=2, seconds=30.0, until=None, waiting=(WEB_DOWN,), restarts=1),
            id="a workload dropped out: the count waits for it",
        ),
        pytest.param(
            [*COUNTED_THEN_DROPPED, ev.SoakCounting(index=2, until=START + 99)],
            SoakNow(index=2, seconds=30.0, until=START + 99, waiting=(), restarts=1),
            id="back: the count starts over",
        ),
        pytest.param(
            [
                *SOAK_STARTED,
                ev.SoakCounting(index=2, until=START + 80),
                ev.NodeSoaked(node="pool-001", index=2, seconds=31.0),
            ],
            None,
            id="soaked",
        ),
        pytest.param(
            [*SOAK_STARTED, ev.SoakCounting(index=2, until=START + 80), ev.CampaignFinished(done=(), stopped="x")],
            None,
            id="the campaign ended",
        ),
    ],
)
def test_the_soak_now(tail: list[Event], soak: SoakNow | None) -> None:
    assert soak_now(_view([*campaign_events(), *tail])) == soak


@pytest.mark.parametrize(
    ("now", "left"),
    [
        pytest.param(START + 70, 18.0, id="18 s left"),
        pytest.param(START + 88, 0.0, id="due"),
        pytest.param(START + 95, 0.0, id="past: never below zero"),
    ],
)
def test_the_soaks_time_left_follows_the_clock(now: float, left: float) -> None:
    soak = soak_now(_view([*campaign_events(), *SOAK_STARTED, ev.SoakCounting(index=2, until=START + 88)]))
    assert soak is not None
    assert soak.seconds_left(now) == left


def test_a_waiting_soak_has_no_time_left() -> None:
    soak = soak_now(_view([*campaign_events(), *SOAK_STARTED]))
    assert soak is not None
    assert soak.seconds_left(START + 70) is None


#: wave 2 of the recorded campaign (pool-001 held by solo, pool-004 draining) when the window closes
CUT_FINISH = ev.WindowClosed(next_opening=START + 7200, in_progress=("pool-001", "pool-004"), at_window_end="finish")
CUT_STOP = ev.WindowClosed(next_opening=START + 7200, in_progress=("pool-001", "pool-004"), at_window_end="stop")
#: said again once the wave is through, as the job starts to sleep until the next opening
SLEEPS = ev.WindowClosed(next_opening=START + 7200, at_window_end="stop")
CANCELLED = drain_events.NodeDrainFailed(node="pool-001", reasons=("cancelled",), cordoned=True, pending=())


@pytest.mark.parametrize(
    ("tail", "cut"),
    [
        pytest.param([], None, id="open"),
        pytest.param([SLEEPS], None, id="closed between waves"),
        pytest.param(
            [CUT_FINISH],
            WindowCut(
                at_window_end="finish",
                next_opening=START + 7200,
                finishing=("pool-001", "pool-004"),
                stopped=(),
                through=(),
            ),
            id="finish: both finish",
        ),
        pytest.param(
            [CUT_FINISH, ev.NodeSkipped(node="pool-001", reason="x", uncordoned=True)],
            WindowCut(
                at_window_end="finish",
                next_opening=START + 7200,
                finishing=("pool-004",),
                stopped=(),
                through=("pool-001",),
            ),
            id="finish: one through",
        ),
        pytest.param(
            [drain_events.NodeDrained(node="pool-004", evicted=3, seconds=1.0), CUT_STOP],
            WindowCut(
                at_window_end="stop",
                next_opening=START + 7200,
                finishing=("pool-004",),
                stopped=("pool-001",),
                through=(),
            ),
            id="stop: the drained one soaks on, the draining one stops",
        ),
        pytest.param(
            [CUT_STOP, CANCELLED, SLEEPS],
            WindowCut(
                at_window_end="stop",
                next_opening=START + 7200,
                finishing=(),
                stopped=("pool-001", "pool-004"),
                through=(),
            ),
            id="stop: its drain ended, the job sleeps",
        ),
        pytest.param([CUT_STOP, CANCELLED, SLEEPS, ev.WindowOpened(closes_at=START + 9000)], None, id="opened"),
    ],
)
def test_what_the_windows_end_did_to_the_wave_in_progress(tail: list[Event], cut: WindowCut | None) -> None:
    assert window_cut(_view([*campaign_events(), *tail])) == cut


def test_a_node_the_windows_end_stopped_says_so_not_failed_and_drains_again_when_it_opens() -> None:
    stopped = _view([*campaign_events(), CUT_STOP, CANCELLED, SLEEPS])
    rows = {r.name: r for r in node_rows(stopped)}
    assert rows["pool-001"].phase is NodePhase.STOPPED
    assert rows["pool-001"].why == "stopped at the window's end: cordoned, drained first when it opens"
    assert node_rows(stopped)[0].name == "pool-001"  # stopped before draining and waiting
    assert window_now(stopped).state is WindowState.CLOSED
    reopened = _view(
        [
            *campaign_events(),
            CUT_STOP,
            CANCELLED,
            SLEEPS,
            ev.WindowOpened(closes_at=START + 9000),
            ev.WaveStarted(index=2, nodes=("pool-001", "pool-004")),
            drain_events.NodeDrainStarted(node="pool-001", pods=()),
        ]
    )
    again = {r.name: r for r in node_rows(reopened)}["pool-001"]
    # draining again, its held pod asked again: not the last drain's "cancelled"
    assert (again.phase, again.why) == (NodePhase.BLOCKED, "1 pod held by PDB shop/solo")
