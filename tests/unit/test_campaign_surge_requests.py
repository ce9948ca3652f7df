"""A running campaign asked to surge nodes (``jobs surge``, the screen's ``s``): which nodes a request with no
node is for, which requests the agent refuses, what each request does to a node's drain, and the resume."""

from __future__ import annotations

import dataclasses

import pytest
from campaign_stream import campaign_events, envelopes

from kubectl_rollout.campaign.asked_surges import STOPPED_FOR_SURGE, AskedSurges, Move, Phase, move_for
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.kinds.campaign import CAMPAIGN, surge_request_refusal
from kubectl_rollout.jobs.spec import (
    CampaignJob,
    Connection,
    DrainJob,
    DrainOptions,
    JobKind,
    JobSpec,
)
from kubectl_rollout.jobs.views import job as job_views
from kubectl_rollout.jobs.views.campaign import CampaignView
from kubectl_rollout.jobs.views.campaign_surge import surge_targets

SOLO = drain_events.WorkloadRef(kind="Deployment", namespace="shop", name="solo")


def _view(events: list[Event]) -> CampaignView:
    body = job_views.fold_all(envelopes(events)).body
    assert isinstance(body, CampaignView)
    return body


# --- which nodes a request with no node is for -----------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "targets"),
    [
        pytest.param([], {"pool-001": (SOLO,)}, id="blocked by a PDB, its Deployment can surge"),
        pytest.param([ev.SurgeRequested(nodes=("pool-001",))], {}, id="asked for already"),
        pytest.param(
            [drain_events.NodeDrainFailed(node="pool-001", reasons=("x",), cordoned=True, pending=())],
            {},
            id="not draining",
        ),
        pytest.param(
            [ev.CampaignFinished(done=(), failed=("pool-001",), stopped="cancelled")], {}, id="the campaign is over"
        ),
    ],
)
def test_a_request_with_no_node_is_for_the_blocked_nodes_of_the_wave_whose_workload_can_surge(
    tail: list[Event], targets: dict[str, tuple[drain_events.WorkloadRef, ...]]
) -> None:
    assert surge_targets(_view([*campaign_events(), *tail])) == targets


def test_a_blocked_pod_whose_workload_cannot_surge_is_for_no_request() -> None:
    events = [
        dataclasses.replace(e, owner=dataclasses.replace(e.owner, kind="StatefulSet"))
        if isinstance(e, drain_events.PodOwnerKnown)
        else e
        for e in campaign_events()
    ]
    assert surge_targets(_view(events)) == {}


def test_a_campaign_surging_on_its_own_offers_no_request_for_the_workload_it_surges() -> None:
    view = _view(campaign_events())
    assert surge_targets(view)  # the recorded campaign does not surge
    assert surge_targets(dataclasses.replace(view, wave_nodes=("pool-004",))) == {}  # not of the wave


# --- what the agent refuses --------------------------------------------------------------------------------

CONNECTION = Connection(kubeconfig=("/k",))
CAMPAIGN_SPEC = JobSpec(
    kind=JobKind.CAMPAIGN, connection=CONNECTION, campaign=CampaignJob(nodes=("a", "b", "c"), done=("c",))
)


@pytest.mark.parametrize(
    ("spec", "finished", "nodes", "refusal"),
    [
        pytest.param(CAMPAIGN_SPEC, set(), ["a"], None, id="a node of the campaign"),
        pytest.param(CAMPAIGN_SPEC, set(), ["a", "b"], None, id="two"),
        pytest.param(CAMPAIGN_SPEC, set(), ["x"], "node/x is not in this campaign", id="a stranger"),
        pytest.param(CAMPAIGN_SPEC, {"a"}, ["a", "b"], "node/a is finished in this campaign", id="done in this run"),
        pytest.param(CAMPAIGN_SPEC, set(), ["c"], "node/c is finished in this campaign", id="done before a resume"),
        pytest.param(CAMPAIGN_SPEC, set(), [], "name the nodes to surge", id="none"),
        pytest.param(
            JobSpec(kind=JobKind.DRAIN, connection=CONNECTION, drain=DrainJob(nodes=("a",))),
            set(),
            ["a"],
            "a drain job is no campaign",
            id="a drain",
        ),
        pytest.param(
            dataclasses.replace(
                CAMPAIGN_SPEC,
                campaign=CampaignJob(nodes=("a",), drain=DrainOptions(dry_run=DryRun.CLIENT)),
            ),
            set(),
            ["a"],
            "a plan or a dry run drains nothing",
            id="a dry run",
        ),
    ],
)
def test_a_request_the_agent_refuses_says_why(
    spec: JobSpec, finished: set[str], nodes: list[str], refusal: str | None
) -> None:
    said = surge_request_refusal(spec, finished=finished, nodes=nodes)
    assert (said or "")[: len(refusal or "")] == (refusal or ""), said
    assert (said is None) == (refusal is None), said


# --- what a request does to a node's drain -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phase", "move"),
    [(Phase.IDLE, Move.AT_START), (Phase.DRAINING, Move.STOP_AND_SURGE), (Phase.SURGING, Move.NOTHING)],
)
def test_the_move_for_each_phase(phase: Phase, move: Move) -> None:
    assert move_for(phase) is move


def test_a_request_stops_the_drain_of_its_node_only_and_that_node_surges_next() -> None:
    asked = AskedSurges()
    a, b = asked.start_drain("a"), asked.start_drain("b")
    assert a is not None
    assert b is not None
    assert asked.ask(["a", "later"]) == {"a": Move.STOP_AND_SURGE, "later": Move.AT_START}
    assert a.is_set()
    assert (a.why, a.handed_over) == (STOPPED_FOR_SURGE, True)  # no failure: the pods go to the surge's drain
    assert not b.is_set()  # the wave's other node drains on
    assert asked.end_drain("a") is True  # drained again, through a surge
    assert asked.end_drain("b") is False
    assert asked.start_drain("later") is None  # surges from its start
    with asked.surging("later"):
        assert asked.ask(["later"]) == {"later": Move.NOTHING}
    assert asked.phase("later") is Phase.IDLE


def test_a_cancel_or_a_windows_end_stops_every_drain_and_no_surge_follows() -> None:
    asked = AskedSurges(["a"])
    b = asked.start_drain("b")
    assert b is not None
    asked.ask(["b"])
    asked.stop_all()
    assert (b.why, b.handed_over) == ("cancelled", False)  # the cancel beats the hand-over
    assert asked.end_drain("b") is False  # stopped for all: it is not surged now, but asked still
    c = asked.start_drain("c")
    assert c is not None
    assert c.is_set()
    asked.go_on()
    d = asked.start_drain("d")
    assert d is not None
    assert not d.is_set()
    assert asked.asked("b")
    assert asked.start_drain("b") is None  # the next window drains it through a surge


# --- the resume --------------------------------------------------------------------------------------------------


def test_a_resumed_campaign_surges_the_nodes_asked_for_that_it_had_not_finished() -> None:
    spec = dataclasses.replace(CAMPAIGN_SPEC, campaign=CampaignJob(nodes=("a", "b", "c")))
    events: list[Event] = [
        ev.WaveStarted(index=1, nodes=("a",)),
        ev.SurgeRequested(nodes=("a", "b")),
        ev.NodeDone(node="a", uncordoned=True),
        ev.SurgeRequested(nodes=("b", "c")),
    ]
    resumed = CAMPAIGN.to_resume(spec, {e.TYPE for e in events}, events)
    assert resumed.campaign is not None
    assert resumed.campaign.done == ("a",)
    assert resumed.campaign.surge_nodes == ("b", "c")
    again = CAMPAIGN.to_resume(resumed, set(), [])
    assert again.campaign is not None
    assert again.campaign.surge_nodes == ("b", "c")
