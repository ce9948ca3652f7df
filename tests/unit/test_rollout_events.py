"""Every rollout event survives JSON exactly: ``as_dict()`` -> JSON -> ``Event.from_dict()``."""

from __future__ import annotations

import dataclasses
import inspect
import json

import pytest

from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import ENVELOPE_FIELDS, Envelope, Event, stamp_time

ROWS = (
    ev.ReplicaSetRow(name="web-7c9d", revision=2, desired=3, current=2, ready=1, available=1, updated=True),
    ev.ReplicaSetRow(name="web-5b8f", revision=1, desired=1, current=2, ready=2, available=2),
)

SAMPLES: list[Event] = [
    ev.SpecChanged(
        workload="web",
        namespace="shop",
        change=ev.SpecChange.IMAGE,
        generation=3,
        previous_generation=2,
        images=(ev.ContainerImage(container="app", image="registry.example/app:v2"),),
    ),
    ev.SpecChanged(
        workload="web",
        namespace="shop",
        change=ev.SpecChange.UNDO,
        generation=4,
        previous_generation=3,
        to_revision=1,
        replica_set="web-5b8f",
    ),
    ev.SpecChanged(workload="web", namespace="shop", change=ev.SpecChange.SCALE, generation=5, replicas=0),
    ev.SpecChanged(
        workload="web",
        namespace="shop",
        change=ev.SpecChange.RESTART,
        generation=6,
        restarted_at="2026-11-23T10:00:00Z",
    ),
    ev.SpecChanged(workload="web", namespace="shop", change=ev.SpecChange.APPLY, generation=1, created=True),
    ev.ReplicaSetCreated(workload="web", name="web-7c9d", revision=2, replicas=1, collision_count=1),
    ev.ReplicaSetScaled(workload="web", name="web-5b8f", from_replicas=3, to_replicas=2),
    ev.ReplicaSetScaled(workload="web", name="web-7c9d", from_replicas=1, to_replicas=2, updated=True),
    ev.RevisionAssigned(workload="web", name="web-5b8f", revision=3, previous_revision=1),
    ev.ReplicaSetDeleted(workload="web", name="web-1a2b", revision=1),
    ev.ScaleDownHeldByPdb(
        workload="web",
        pdbs=(
            ev.PdbRoom(
                namespace="shop", name="web", disruptions_allowed=0, healthy=4, needed=4, expected_pods=5, spent=1
            ),
        ),
        held=(ev.HeldScaleDown(name="web-5b8f", replicas=4, wanted=3, allowed=4),),
    ),
    ev.ConditionChanged(
        workload="web",
        condition=ev.ConditionType.PROGRESSING,
        status=ev.ConditionStatus.FALSE,
        reason="ProgressDeadlineExceeded",
        message='ReplicaSet "web-7c9d" has timed out progressing.',
        since=1795000000.0,
    ),
    ev.ConditionChanged(
        workload="web",
        condition=ev.ConditionType.REPLICA_FAILURE,
        status=ev.ConditionStatus.TRUE,
        reason="FailedCreate",
        removed=True,
    ),
    ev.DeadlineExceeded(workload="web", progress_deadline_seconds=600, replica_set="web-7c9d"),
    ev.NewPodsFailing(
        workload="web",
        pod="web-7c9d-x1",
        container="app",
        reason="CrashLoopBackOff",
        restart_count=3,
        image="registry.example/app:broken",
    ),
    ev.RollingBack(workload="web", from_revision=2, to_revision=1, replica_set="web-5b8f", generation=3),
    ev.RolledBack(workload="web", to_revision=1, replica_set="web-5b8f", complete=True),
    ev.RolloutProgressed(
        workload="web",
        namespace="shop",
        message='Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...',
        phase=ev.RolloutPhase.UPDATING,
        generation=2,
        desired=3,
        updated=1,
        total=4,
        available=3,
        paused=True,
        rows=ROWS,
    ),
    ev.FollowingDriver(
        workload="web", lease="shop/rollout-plus.web", holder="host/42/ab12", expires_at=1795000012.5, seconds_left=12
    ),
    ev.TookOver(
        workload="web",
        lease="shop/rollout-plus.web",
        previous_holder="host/42/ab12/proc,uid=1000,start=9,boot=1a2b3c4d5e6f,machine=9f8e7d6c5b4a,pidns=4026531836",
        holder_ended="process 42 of host has ended",
    ),
    ev.RolloutFinished(
        workload="web",
        namespace="shop",
        succeeded=False,
        outcome=ev.RolloutOutcome.ROLLED_BACK,
        message="rolled back to revision 1",
        rolled_back_to=1,
    ),
    ev.RolloutFinished(workload="web", namespace="shop", succeeded=True, outcome=ev.RolloutOutcome.PAUSED, paused=True),
]


def _event_classes() -> set[type[Event]]:
    return {
        cls
        for _, cls in inspect.getmembers(ev, inspect.isclass)
        if issubclass(cls, Event) and cls.__module__ == ev.__name__ and cls.TYPE
    }


def test_every_rollout_event_type_has_a_sample() -> None:
    assert {type(e) for e in SAMPLES} == _event_classes()


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.TYPE)
def test_round_trip_through_json_is_exact(event: Event) -> None:
    decoded = Event.from_dict(json.loads(json.dumps(event.as_dict())))
    assert decoded == event
    assert type(decoded) is type(event)


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.TYPE)
def test_round_trip_in_an_envelope(event: Event) -> None:
    envelope = Envelope(job="0123abcd4567", seq=9, at=stamp_time(1795000000.123456), event=event)
    assert Envelope.from_dict(json.loads(json.dumps(envelope.as_dict()))) == envelope


@pytest.mark.parametrize("cls", sorted(_event_classes(), key=lambda c: c.TYPE), ids=lambda c: c.TYPE)
def test_no_field_shadows_the_envelope(cls: type[Event]) -> None:
    assert not {f.name for f in dataclasses.fields(cls)} & ENVELOPE_FIELDS


def test_enums_are_written_as_their_values() -> None:
    progressed = SAMPLES[-5]
    assert isinstance(progressed, ev.RolloutProgressed)
    written = progressed.as_dict()
    assert written["phase"] == "Updating"
    assert written["rows"][0] == {
        "name": "web-7c9d",
        "revision": 2,
        "desired": 3,
        "current": 2,
        "ready": 1,
        "available": 1,
        "updated": True,
    }


def test_progress_of_one_workload_coalesces_and_actions_do_not() -> None:
    progressed = next(e for e in SAMPLES if isinstance(e, ev.RolloutProgressed))
    assert progressed.coalesce_key() == "rollout/shop/web"
    assert ev.ReplicaSetScaled(workload="web", name="a", from_replicas=1, to_replicas=2).coalesce_key() is None
