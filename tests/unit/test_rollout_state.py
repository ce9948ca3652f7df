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
    Condition,
    ReplicaSetView,
    RolloutStatus,
    Target,
    condition,
    has_timed_out,
    is_complete,
    is_progressing,
    paused_conditions,
    remove_condition,
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


# --- upstream tables (util/deployment_util_test.go, progress_test.go) ------------------------------------


def target(replicas: int, unavailable: int = 0, surge: int = 0, deadline: int | None = 600) -> Target:
    return Target(
        name="web",
        generation=0,
        replicas=replicas,
        max_surge=surge,
        max_unavailable=unavailable,
        progress_deadline_seconds=deadline,
    )


@pytest.mark.parametrize(
    ("desired", "current", "updated", "available", "unavailable", "surge", "expected"),
    [
        # TestDeploymentComplete
        pytest.param(5, 5, 5, 4, 1, 0, False, id="min-but-not-all-available"),
        pytest.param(5, 5, 5, 3, 1, 0, False, id="min-availability-not-honored"),
        pytest.param(5, 5, 5, 5, 0, 0, True, id="complete"),
        pytest.param(5, 5, 4, 5, 0, 0, False, id="all-available-not-all-updated"),
        pytest.param(5, 6, 5, 5, 0, 0, False, id="still-running-old-pods"),
        pytest.param(1, 1, 1, 0, 1, 1, False, id="one-replica-never-comes-up"),
    ],
)
def test_deployment_complete(
    desired: int, current: int, updated: int, available: int, unavailable: int, surge: int, expected: bool
) -> None:
    status = RolloutStatus(replicas=current, updated_replicas=updated, available_replicas=available)
    assert is_complete(target(desired, unavailable, surge), status) is expected


def counts(current: int, updated: int, ready: int, available: int) -> RolloutStatus:
    return RolloutStatus(replicas=current, updated_replicas=updated, ready_replicas=ready, available_replicas=available)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        # TestDeploymentProgressing: (replicas, updated, ready, available)
        pytest.param((10, 4, 4, 4), (10, 6, 4, 4), True, id="updated-pods"),
        pytest.param((10, 4, 4, 4), (10, 4, 4, 4), False, id="nothing-changed"),
        pytest.param((10, 4, 6, 6), (8, 4, 6, 6), True, id="old-pods-removed"),
        pytest.param((10, 7, 3, 3), (10, 6, 3, 3), False, id="less-new-pods"),
        pytest.param((10, 4, 7, 7), (8, 8, 5, 5), True, id="less-overall-more-new"),
        pytest.param((10, 10, 9, 8), (10, 10, 10, 8), True, id="more-ready-pods"),
        pytest.param((10, 10, 10, 9), (10, 10, 10, 10), True, id="more-available-pods"),
    ],
)
def test_deployment_progressing(
    before: tuple[int, int, int, int], after: tuple[int, int, int, int], expected: bool
) -> None:
    assert is_progressing(counts(*after), counts(*before)) is expected


MINUTE_1 = 1_451_606_400.0 + 60  # 2016-01-01 00:01:00 UTC


@pytest.mark.parametrize(
    ("deadline", "reason", "updated_at", "now", "expected"),
    [
        # TestDeploymentTimedOut (times are seconds after 00:01:00)
        pytest.param(None, "", 9, 20, False, id="no-deadline"),
        pytest.param(NO_DEADLINE, "", 9, 20, False, id="infinite-deadline"),
        pytest.param(10, "", 9, 20, True, id="11s-past-10s"),
        pytest.param(10, "", 11, 20, False, id="9s-within-10s"),
        pytest.param(None, NEW_RS_AVAILABLE, -60, 20, False, id="previously-complete"),
    ],
)
def test_deployment_timed_out(deadline: int | None, reason: str, updated_at: float, now: float, expected: bool) -> None:
    cond = condition(PROGRESSING, True, reason, "", MINUTE_1 + updated_at)
    status = RolloutStatus(conditions=(cond,))
    assert has_timed_out(target(3, deadline=deadline), status, MINUTE_1 + now) is expected


@pytest.mark.parametrize(
    ("before", "kind", "after"),
    [
        # TestRemoveCondition
        pytest.param((), PROGRESSING, (), id="remove-from-empty"),
        pytest.param((PROGRESSING,), PROGRESSING, (), id="simple-remove"),
        pytest.param((PROGRESSING, AVAILABLE), "ReplicaFailure", (PROGRESSING, AVAILABLE), id="removes-nothing"),
    ],
)
def test_remove_condition(before: tuple[str, ...], kind: str, after: tuple[str, ...]) -> None:
    conditions = tuple(condition(k, True, "r", "m", T0) for k in before)
    assert tuple(c.type for c in remove_condition(conditions, kind)) == after


TEST_TIME = 1_487_184_540.0  # progress_test.go testTime, 2017-02-15 18:49:00 UTC
NOW = TEST_TIME + 3600


def rs_view(name: str, replicas: int, current: int, available: int) -> ReplicaSetView:
    """progress_test.go newRSWithAvailable(name, specReplicas, statusReplicas, availableReplicas): no ready count."""
    return ReplicaSetView(name=name, replicas=replicas, current=current, available=available)


PC = condition(PROGRESSING, True, RS_UPDATED, "", TEST_TIME)
CMP = condition(PROGRESSING, True, NEW_RS_AVAILABLE, "", TEST_TIME)
FAILED_TIMED_OUT = condition(PROGRESSING, False, TIMED_OUT, "", TEST_TIME)


@pytest.mark.parametrize(
    ("deadline", "replicas", "current", "conditions", "all_rs", "new", "expected"),
    [
        # TestSyncRolloutStatus: deployment (pds, replicas, status replicas/updated/available), allRSs, newRS;
        # expected (status, reason, lastUpdate is testTime, lastTransition is testTime), None: no condition
        pytest.param(
            None, 3, (2, 2, 2), (PC,), [rs_view("bar", 0, 1, 1)], rs_view("foo", 3, 2, 2), None, id="no-deadline"
        ),
        pytest.param(
            60,
            3,
            (3, 3, 3),
            (CMP,),
            [rs_view("bar", 3, 3, 3)],
            None,
            ("True", NEW_RS_AVAILABLE, True, True),
            id="only-one-active-replica-set",
        ),
        pytest.param(
            60,
            3,
            (2, 2, 2),
            (PC,),
            [rs_view("bar", 0, 1, 1)],
            rs_view("foo", 3, 2, 2),
            ("True", RS_UPDATED, False, True),
            id="progressing-keeps-transition",
        ),
        pytest.param(
            60,
            3,
            (2, 2, 2),
            (FAILED_TIMED_OUT,),
            [rs_view("bar", 0, 1, 1)],
            rs_view("foo", 3, 2, 2),
            ("True", RS_UPDATED, False, False),
            id="progressing-after-false",
        ),
        pytest.param(
            60,
            3,
            (2, 2, 2),
            (),
            [rs_view("bar", 0, 1, 1)],
            rs_view("foo", 3, 2, 2),
            ("True", RS_UPDATED, False, False),
            id="progressing-created",
        ),
        pytest.param(
            60, 3, (3, 3, 3), (PC,), [], rs_view("foo", 3, 3, 3), ("True", NEW_RS_AVAILABLE, False, True), id="complete"
        ),
        pytest.param(
            60,
            3,
            (3, 3, 3),
            (FAILED_TIMED_OUT,),
            [],
            rs_view("foo", 3, 3, 3),
            ("True", NEW_RS_AVAILABLE, False, False),
            id="complete-after-false",
        ),
        pytest.param(
            60,
            3,
            (3, 3, 3),
            (),
            [],
            rs_view("foo", 3, 3, 3),
            ("True", NEW_RS_AVAILABLE, False, False),
            id="complete-created",
        ),
        pytest.param(
            60,
            0,
            (3, 3, 3),
            (PC,),
            [rs_view("foo", 0, 0, 0)],
            None,
            ("True", NEW_RS_AVAILABLE, False, True),
            id="complete-without-new-replica-set",
        ),
        pytest.param(
            60, 3, (2, 2, 2), (PC,), [], rs_view("foo", 3, 2, 2), ("False", TIMED_OUT, False, False), id="times-out"
        ),
        pytest.param(
            60,
            3,
            (2, 2, 2),
            (FAILED_TIMED_OUT,),
            [],
            rs_view("foo", 3, 2, 2),
            ("False", TIMED_OUT, True, True),
            id="stays-timed-out",
        ),
    ],
)
def test_sync_rollout_status(
    deadline: int | None,
    replicas: int,
    current: tuple[int, int, int],
    conditions: tuple[Condition, ...],
    all_rs: list[ReplicaSetView],
    new: ReplicaSetView | None,
    expected: tuple[str, str, bool, bool] | None,
) -> None:
    previous = RolloutStatus(
        replicas=current[0], updated_replicas=current[1], available_replicas=current[2], conditions=conditions
    )
    # As upstream's test does, the new ReplicaSet is one of all the ReplicaSets.
    everyone = [*all_rs, new] if new is not None else all_rs
    status = sync_rollout_status(target(replicas, deadline=deadline), everyone, new, previous, NOW)
    got = status.condition(PROGRESSING)
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert (
        got.status,
        got.reason,
        got.last_update_time == TEST_TIME,
        got.last_transition_time == TEST_TIME,
    ) == expected


def test_replica_failure_is_copied_from_the_replica_sets_as_upstream_copies_it() -> None:
    # sync.go getReplicaFailures / ReplicaSetToDeploymentCondition: the new ReplicaSet's condition wins over an
    # old one's, its status is kept (False too), and both times are the ReplicaSet's transition time.
    def failing(name: str, status: str, reason: str, since: float) -> ReplicaSetView:
        cond = Condition(
            type="ReplicaFailure",
            status=status,
            reason=reason,
            message=f"{name}: {reason}",
            last_update_time=since,
            last_transition_time=since,
        )
        return ReplicaSetView(name=name, replicas=2, current=1, available=1, failure=cond)

    new = failing("web-new", "False", "FailedCreate", T0 - 30)
    old = failing("web-old", "True", "FailedDelete", T0 - 60)
    status = sync_rollout_status(TARGET, [old, new], new, RolloutStatus(), T0)
    got = status.condition("ReplicaFailure")
    assert got is not None
    assert (got.status, got.reason, got.message, got.last_update_time, got.last_transition_time) == (
        "False",
        "FailedCreate",
        "web-new: FailedCreate",
        T0 - 30,
        T0 - 30,
    )
    only_old = sync_rollout_status(TARGET, [old, dataclasses.replace(new, failure=None)], None, RolloutStatus(), T0)
    assert only_old.condition("ReplicaFailure").reason == "FailedDelete"  # type: ignore[union-attr]
    cleared = sync_rollout_status(TARGET, [dataclasses.replace(old, failure=None)], None, status, T0)
    assert cleared.condition("ReplicaFailure") is None
