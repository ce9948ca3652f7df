"""Status, conditions and `kubectl rollout status` wording, as the controller and kubectl produce them."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

from kubectl_rollout.rollout.record import NO_DEADLINE, from_config_map
from kubectl_rollout.rollout.state import (
    AVAILABLE,
    NEW_RS_AVAILABLE,
    PROGRESSING,
    RS_UPDATED,
    TIMED_OUT,
    ReplicaSetView,
    RolloutStatus,
    Target,
    condition,
    paused_conditions,
    rollout_status_message,
    set_condition,
    sync_rollout_status,
)

T0 = 1_800_000_000.0
TARGET = Target(name="web", generation=2, replicas=4, max_surge=1, max_unavailable=1, progress_deadline_seconds=600)


def views(new: tuple[int, int, int], old: tuple[int, int, int]) -> tuple[ReplicaSetView, list[ReplicaSetView]]:
    """(spec replicas, current, available) of the new and the old ReplicaSet."""
    n = ReplicaSetView(name="web-new", replicas=new[0], current=new[1], ready=new[2], available=new[2])
    o = ReplicaSetView(name="web-old", replicas=old[0], current=old[1], ready=old[2], available=old[2])
    return n, [n, o]


def test_counts_and_minimum_availability() -> None:
    new, all_rs = views((2, 2, 0), (3, 3, 3))
    status = sync_rollout_status(TARGET, all_rs, new, RolloutStatus(), T0)
    assert (status.replicas, status.updated_replicas, status.available_replicas, status.unavailable_replicas) == (
        5,
        2,
        3,
        2,
    )
    available = status.condition(AVAILABLE)
    assert available is not None
    assert (available.status, available.reason) == ("True", "MinimumReplicasAvailable")  # 3 >= 4 - 1


def test_progress_then_completion_then_quiet() -> None:
    new, all_rs = views((2, 2, 0), (3, 3, 3))
    first = sync_rollout_status(TARGET, all_rs, new, RolloutStatus(), T0)
    progressing = first.condition(PROGRESSING)
    assert progressing is not None
    assert (progressing.reason, progressing.message) == (RS_UPDATED, 'ReplicaSet "web-new" is progressing.')

    new, all_rs = views((4, 4, 4), (0, 0, 0))
    done = sync_rollout_status(TARGET, all_rs, new, first, T0 + 30)
    complete = done.condition(PROGRESSING)
    assert complete is not None
    assert (complete.status, complete.reason, complete.message) == (
        "True",
        NEW_RS_AVAILABLE,
        'ReplicaSet "web-new" has successfully progressed.',
    )
    # Same status: the transition time stays the first one.
    assert complete.last_transition_time == T0
    assert rollout_status_message("web", TARGET, done) == ('deployment "web" successfully rolled out', True, False)


def test_no_progress_past_the_deadline_times_out() -> None:
    new, all_rs = views((2, 2, 0), (3, 3, 3))
    first = sync_rollout_status(TARGET, all_rs, new, RolloutStatus(), T0)
    still = sync_rollout_status(TARGET, all_rs, new, first, T0 + 599)
    assert still.condition(PROGRESSING).reason == RS_UPDATED  # type: ignore[union-attr]
    late = sync_rollout_status(TARGET, all_rs, new, still, T0 + 601)
    timed_out = late.condition(PROGRESSING)
    assert timed_out is not None
    assert (timed_out.status, timed_out.reason, timed_out.message) == (
        "False",
        TIMED_OUT,
        'ReplicaSet "web-new" has timed out progressing.',
    )
    assert rollout_status_message("web", TARGET, late) == (
        'deployment "web" exceeded its progress deadline',
        True,
        True,
    )


def test_set_condition_keeps_an_unchanged_condition() -> None:
    first = condition(AVAILABLE, True, "MinimumReplicasAvailable", "m", T0)
    again = condition(AVAILABLE, True, "MinimumReplicasAvailable", "m", T0 + 5)
    assert set_condition((first,), again) == (first,)


@pytest.mark.parametrize(
    ("generation", "status", "expected"),
    [
        (3, RolloutStatus(observed_generation=2), "Waiting for deployment spec update to be observed..."),
        (
            2,
            RolloutStatus(observed_generation=2, replicas=5, updated_replicas=2),
            'Waiting for deployment "web" rollout to finish: 2 out of 4 new replicas have been updated...',
        ),
        (
            2,
            RolloutStatus(observed_generation=2, replicas=5, updated_replicas=4),
            'Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...',
        ),
        (
            2,
            RolloutStatus(observed_generation=2, replicas=4, updated_replicas=4, available_replicas=3),
            'Waiting for deployment "web" rollout to finish: 3 of 4 updated replicas are available...',
        ),
    ],
)
def test_kubectl_rollout_status_wording(generation: int, status: RolloutStatus, expected: str) -> None:
    target = Target(
        name="web", generation=generation, replicas=4, max_surge=1, max_unavailable=1, progress_deadline_seconds=600
    )
    message, done, failed = rollout_status_message("web", target, status)
    assert (message, done, failed) == (expected, False, False)


def test_status_round_trips_through_json() -> None:
    new, all_rs = views((4, 4, 4), (0, 0, 0))
    status = sync_rollout_status(TARGET, all_rs, new, RolloutStatus(), T0)
    assert RolloutStatus.from_dict(status.as_dict()) == status


def test_a_recreate_workload_is_available_only_with_every_replica() -> None:
    # Issue 12 item 5: MaxUnavailable is 0 for Recreate (deployment_util.go), so 3 of 4 available is not
    # minimum availability; the spec's own surge 0 / unavailable 0 would resolve to unavailable 1.
    recreate = Target(
        name="web",
        generation=2,
        replicas=4,
        max_surge=0,
        max_unavailable=0,
        progress_deadline_seconds=600,
        rolling=False,
    )
    new, all_rs = views((4, 4, 3), (0, 0, 0))
    status = sync_rollout_status(recreate, all_rs, new, RolloutStatus(), T0)
    available = status.condition(AVAILABLE)
    assert available is not None
    assert (available.status, available.reason) == ("False", "MinimumReplicasUnavailable")
    new, all_rs = views((4, 4, 4), (0, 0, 0))
    status = sync_rollout_status(recreate, all_rs, new, status, T0 + 1)
    assert status.condition(AVAILABLE).status == "True"  # type: ignore[union-attr]


def test_no_deadline_means_no_progressing_condition() -> None:
    # progress.go syncRolloutStatus: without a deadline (nil, or math.MaxInt32) the condition is removed.
    endless = Target(
        name="web", generation=2, replicas=4, max_surge=1, max_unavailable=1, progress_deadline_seconds=None
    )
    new, all_rs = views((2, 2, 0), (3, 3, 3))
    with_one = sync_rollout_status(TARGET, all_rs, new, RolloutStatus(), T0)
    assert with_one.condition(PROGRESSING) is not None
    assert sync_rollout_status(endless, all_rs, new, with_one, T0 + 1).condition(PROGRESSING) is None


def test_a_progress_deadline_of_max_int32_is_no_deadline() -> None:
    # deployment_util.go HasProgressDeadline: math.MaxInt32 is how apps/v1 spells "no deadline".
    document = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "progressDeadlineSeconds": NO_DEADLINE,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "v"}]}},
        },
    }
    config_map = SimpleNamespace(metadata=SimpleNamespace(namespace="default"), data={"manifest": json.dumps(document)})
    assert from_config_map(config_map).target().progress_deadline_seconds is None


@pytest.mark.parametrize(
    ("reason", "paused", "has_deadline", "expected"),
    [
        # sync.go checkPausedConditions
        pytest.param(RS_UPDATED, True, True, ("Unknown", "DeploymentPaused"), id="pause"),
        pytest.param("DeploymentPaused", False, True, ("Unknown", "DeploymentResumed"), id="resume"),
        pytest.param("DeploymentPaused", True, True, ("Unknown", "DeploymentPaused"), id="already-paused"),
        pytest.param(RS_UPDATED, False, True, ("True", RS_UPDATED), id="resume-not-paused"),
        pytest.param(TIMED_OUT, True, True, ("False", TIMED_OUT), id="timed-out-stays"),
        pytest.param(RS_UPDATED, True, False, ("True", RS_UPDATED), id="no-deadline"),
    ],
)
def test_paused_conditions(reason: str, paused: bool, has_deadline: bool, expected: tuple[str, str]) -> None:
    before = condition(PROGRESSING, reason != TIMED_OUT, reason, "m", T0)
    if reason == "DeploymentPaused":
        before = dataclasses.replace(before, status="Unknown")
    after = paused_conditions((before,), paused=paused, has_deadline=has_deadline, now=T0 + 1)
    got = next(c for c in after if c.type == PROGRESSING)
    assert (got.status, got.reason) == expected
