"""The rollout view folded from event streams of real runs (tests/unit/streams/rollout_*.jsonl).

Each stream is what ``-o jsonl`` printed for one job against the local control
plane: a new image rolled out, undone, held back by a PDB, failed and rolled
back, followed while another driver held the lease.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.views.rollout import MAX_ACTIONS, RolloutView, fold, fold_all, rows_after

STREAMS = Path(__file__).parent / "streams"
T = ev.ConditionType


def load(name: str) -> list[Envelope]:
    return [Envelope.from_dict(json.loads(line)) for line in path(name).read_text().splitlines()]


def path(name: str) -> Path:
    return STREAMS / f"rollout_{name}.jsonl"


def shape(view: RolloutView) -> list[tuple[int, int, bool]]:
    """(revision, desired, updated) per ReplicaSet, newest first: names are hashes and differ between runs."""
    return [(r.revision, r.desired, r.updated) for r in view.rows]


def reasons(view: RolloutView) -> dict[str, tuple[str, str]]:
    return {k.value: (c.status.value, c.reason) for k, c in view.conditions.items()}


def actions(view: RolloutView) -> list[str]:
    return [e.type for e in view.actions]


def up_to(stream: list[Envelope], matches: Callable[[ev.Event], bool]) -> RolloutView:
    """The view as it stood right after the first event that ``matches``."""
    index = next(i for i, e in enumerate(stream) if matches(e.event))
    return fold_all(stream[: index + 1])


ALL = ["apply_created", "set_image", "undo", "pdb_held", "auto_rollback", "follow"]


# --- every stream ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_each_line_round_trips_exactly(name: str) -> None:
    for line in path(name).read_text().splitlines():
        recorded = json.loads(line)
        encoded = Envelope.from_dict(recorded).as_dict()
        assert {key: encoded[key] for key in recorded} == recorded
        # Fields added to the schema since the recording decode to their defaults (a new field needs one).
        added = {f.name: f.default for f in dataclasses.fields(Envelope.from_dict(recorded).event)}
        assert {key: encoded[key] for key in encoded.keys() - recorded.keys()} == {
            key: added[key] for key in encoded.keys() - recorded.keys()
        }


@pytest.mark.parametrize("name", ALL)
def test_a_job_is_numbered_from_one_and_ends_with_rollout_finished(name: str) -> None:
    stream = load(name)
    assert [e.seq for e in stream] == list(range(1, len(stream) + 1))
    assert len({e.job for e in stream}) == 1
    assert [e.type for e in stream].count("RolloutFinished") == 1
    assert stream[-1].type == "RolloutFinished"


@pytest.mark.parametrize("name", ALL)
def test_replaying_changes_nothing(name: str) -> None:
    stream = load(name)
    view = fold_all(stream)
    assert fold_all(stream, view) == view
    assert view.last_seq == len(stream)
    assert view.job == stream[0].job


@pytest.mark.parametrize("name", ALL)
def test_rows_match_each_progress_report(name: str) -> None:
    """Between reports the view applies the driver's actions; at each report it holds the report's rows."""
    view = RolloutView()
    for envelope in load(name):
        view = fold(view, envelope)
        if isinstance(envelope.event, ev.RolloutProgressed):
            assert view.rows == envelope.event.rows
            assert view.message == envelope.event.message


# --- each scenario ---------------------------------------------------------------------

COMPLETE = {"Progressing": ("True", "NewReplicaSetAvailable"), "Available": ("True", "MinimumReplicasAvailable")}

CASES: list[tuple[str, dict[str, Any]]] = [
    (
        "apply_created",
        dict(
            succeeded=True,
            outcome=ev.RolloutOutcome.COMPLETE,
            phase=ev.RolloutPhase.COMPLETE,
            rows=[(1, 3, True)],
            conditions=COMPLETE,
            change=ev.SpecChange.APPLY,
            first_actions=["SpecChanged", "ReplicaSetCreated"],
        ),
    ),
    (
        "set_image",
        dict(
            succeeded=True,
            outcome=ev.RolloutOutcome.COMPLETE,
            phase=ev.RolloutPhase.COMPLETE,
            rows=[(2, 3, True), (1, 0, False)],
            conditions=COMPLETE,
            change=ev.SpecChange.IMAGE,
            first_actions=["SpecChanged", "ReplicaSetCreated", "ReplicaSetScaled"],
        ),
    ),
    (
        "undo",
        dict(
            succeeded=True,
            outcome=ev.RolloutOutcome.COMPLETE,
            phase=ev.RolloutPhase.COMPLETE,
            # revision 1's ReplicaSet is reused as revision 3
            rows=[(3, 3, True), (2, 0, False)],
            conditions=COMPLETE,
            change=ev.SpecChange.UNDO,
            first_actions=["SpecChanged", "RevisionAssigned"],
        ),
    ),
    (
        "pdb_held",
        dict(
            succeeded=True,
            outcome=ev.RolloutOutcome.COMPLETE,
            phase=ev.RolloutPhase.COMPLETE,
            rows=[(2, 4, True), (1, 0, False)],
            conditions=COMPLETE,
            change=ev.SpecChange.IMAGE,
            first_actions=["SpecChanged", "ReplicaSetCreated"],
        ),
    ),
    (
        "auto_rollback",
        dict(
            succeeded=False,
            outcome=ev.RolloutOutcome.ROLLED_BACK,
            phase=ev.RolloutPhase.COMPLETE,
            rows=[(3, 3, True), (2, 0, False)],
            # ReplicaFailure (NewPodsFailing) went with the failing pods
            conditions=COMPLETE,
            change=ev.SpecChange.APPLY,
            first_actions=["SpecChanged", "ReplicaSetCreated"],
        ),
    ),
    (
        "follow",
        dict(
            succeeded=True,
            outcome=ev.RolloutOutcome.COMPLETE,
            phase=ev.RolloutPhase.COMPLETE,
            rows=[(2, 4, True), (1, 0, False)],
            conditions=COMPLETE,
            change=None,
            first_actions=["FollowingDriver"],
        ),
    ),
]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_view_at_the_end(name: str, expected: dict[str, Any]) -> None:
    view = fold_all(load(name))
    assert view.finished is not None
    assert view.succeeded is expected["succeeded"]
    assert view.finished.outcome is expected["outcome"]
    assert view.phase is expected["phase"]
    assert shape(view) == expected["rows"]
    assert reasons(view) == expected["conditions"]
    assert (view.spec_change.change if view.spec_change else None) is expected["change"]
    assert actions(view)[: len(expected["first_actions"])] == expected["first_actions"]
    assert (view.workload, view.held_by_pdb, view.following, view.rolling_back) == ("web", None, None, None)


def test_a_pdb_hold_shows_while_it_lasts() -> None:
    stream = load("pdb_held")
    held = up_to(stream, lambda e: isinstance(e, ev.ScaleDownHeldByPdb))
    assert held.held_by_pdb is not None
    (pdb,) = held.held_by_pdb.pdbs
    assert (pdb.name, pdb.needed) == ("web", 4)
    (cut,) = held.held_by_pdb.held
    assert cut.allowed > cut.wanted  # the plan wanted fewer old pods than the PDB allowed
    # maxUnavailable 1 would allow 3 available; the PDB's 4 keep every report at 4 or more
    reports = [e.event for e in stream if isinstance(e.event, ev.RolloutProgressed) and e.event.rows]
    assert min(r.available for r in reports) >= 4
    assert fold_all(stream).held_by_pdb is None


def test_a_pdb_hold_lasts_until_the_held_replica_sets_shrink_as_far_as_planned() -> None:
    view = RolloutView()
    cleared_midway = 0
    for envelope in load("pdb_held"):
        hold = view.held_by_pdb
        view = fold(view, envelope)
        event = envelope.event
        if isinstance(event, ev.ScaleDownHeldByPdb):
            assert view.held_by_pdb == event
        elif isinstance(event, ev.ReplicaSetScaled) and hold is not None:
            (held,) = hold.held
            over = event.name == held.name and event.to_replicas <= held.wanted
            assert (view.held_by_pdb is None) == over, envelope.seq
            cleared_midway += over and view.finished is None
    assert cleared_midway >= 1


def test_a_failing_rollout_names_its_pod_then_rolls_back() -> None:
    stream = load("auto_rollback")
    failing = up_to(stream, lambda e: isinstance(e, ev.NewPodsFailing))
    assert failing.failing is not None
    assert (failing.failing.reason, failing.failing.container) == ("CrashLoopBackOff", "app")
    assert failing.failing.restart_count >= 2
    assert reasons(failing)["ReplicaFailure"] == ("True", "NewPodsFailing")

    rolling = up_to(stream, lambda e: isinstance(e, ev.RollingBack))
    assert rolling.rolling_back is not None
    assert (rolling.rolling_back.from_revision, rolling.rolling_back.to_revision) == (2, 1)
    assert rolling.failing is None

    end = fold_all(stream)
    assert end.finished is not None
    assert end.finished.rolled_back_to == 1
    rolled = [e.event for e in stream if isinstance(e.event, ev.RolledBack)]
    assert [(r.to_revision, r.complete) for r in rolled] == [(1, True)]


def test_following_another_driver_until_it_finishes() -> None:
    stream = load("follow")
    following = up_to(stream, lambda e: isinstance(e, ev.FollowingDriver))
    assert following.following  # the holder's identity
    first = up_to(stream, lambda e: isinstance(e, ev.RolloutProgressed))
    assert first.rows  # a follower reports the ReplicaSets too
    assert not any(isinstance(e.event, ev.ReplicaSetAction) for e in stream)  # it never acted


@pytest.mark.parametrize("name", ALL)
def test_each_report_closes_the_pass_of_actions_before_it(name: str) -> None:
    """What the printer writes with a state line: the driver's actions since the report before."""
    view, since = RolloutView(), []
    for envelope in load(name):
        view = fold(view, envelope)
        event = envelope.event
        if isinstance(event, ev.ReplicaSetAction):
            since.append(event)
        elif isinstance(event, ev.RolloutProgressed | ev.RolloutFinished):
            assert (view.closed_pass, view.pass_actions) == (tuple(since), ()), envelope.seq
            since = []
        assert view.pass_actions == tuple(since)


def test_state_lines_of_the_job_driving_and_of_the_driver_followed() -> None:
    def last_message(stream: list[Envelope]) -> str:
        return [e.event.message for e in stream if isinstance(e.event, ev.RolloutProgressed)][-1]

    driven, followed = load("set_image"), load("follow")
    assert (fold_all(driven).own_message, fold_all(driven).followed_message) == (last_message(driven), "")
    assert (fold_all(followed).own_message, fold_all(followed).followed_message) == ("", last_message(followed))


def test_a_job_that_takes_over_has_no_state_line_of_its_own_yet() -> None:
    progressed = ev.RolloutProgressed(
        workload="web", namespace="shop", message="waiting", phase=ev.RolloutPhase.UPDATING
    )
    events: list[Event] = [
        progressed,
        ev.FollowingDriver(workload="web", lease="shop/rollout-plus.web"),
        dataclasses.replace(progressed, message="followed"),
        ev.TookOver(workload="web", lease="shop/rollout-plus.web"),
    ]
    view = fold_all(Envelope(job="j", seq=n, at=0.0, event=e) for n, e in enumerate(events, 1))
    assert (view.own_message, view.followed_message, view.following) == ("", "followed", None)


# --- pure parts ------------------------------------------------------------------------

ROW1 = ev.ReplicaSetRow(name="web-a", revision=1, desired=3, current=3, ready=3, available=3, updated=True)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (
            ev.ReplicaSetCreated(workload="web", name="web-b", revision=2, replicas=1),
            [("web-b", 2, 1, True), ("web-a", 1, 3, False)],
        ),
        (ev.ReplicaSetScaled(workload="web", name="web-a", from_replicas=3, to_replicas=2), [("web-a", 1, 2, True)]),
        (
            ev.RevisionAssigned(workload="web", name="web-a", revision=4, previous_revision=1),
            [("web-a", 4, 3, True)],
        ),
        (ev.ReplicaSetDeleted(workload="web", name="web-a", revision=1), []),
        (ev.ReplicaSetScaled(workload="web", name="web-x", from_replicas=1, to_replicas=0), [("web-a", 1, 3, True)]),
    ],
    ids=["created", "scaled", "revision", "deleted", "unknown-name"],
)
def test_rows_after_an_action(action: ev.ReplicaSetAction, expected: list[tuple[str, int, int, bool]]) -> None:
    assert [(r.name, r.revision, r.desired, r.updated) for r in rows_after((ROW1,), action)] == expected


def test_actions_are_bounded() -> None:
    scaled = ev.ReplicaSetScaled(workload="web", name="web-a", from_replicas=1, to_replicas=2)
    stream = [Envelope(job="j", seq=n, at=float(n), event=scaled) for n in range(1, MAX_ACTIONS + 21)]
    view = fold_all(stream)
    assert len(view.actions) == MAX_ACTIONS
    assert view.actions[0].seq == 21


def test_an_old_envelope_changes_nothing() -> None:
    event = ev.ReplicaSetDeleted(workload="web", name="web-a", revision=1)
    view = dataclasses.replace(RolloutView(rows=(ROW1,)), last_seq=5)
    assert fold(view, Envelope(job="j", seq=5, at=0.0, event=event)) is view
