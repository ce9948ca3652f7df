"""The Deployment controller's arithmetic, with cases from upstream's own tests.

Sources: pkg/controller/deployment/rolling_test.go (reconcileNewReplicaSet,
reconcileOldReplicaSets, cleanupUnhealthyReplicas,
scaleDownOldReplicaSetsForRollingUpdate), sync_test.go (TestScale) and
util/deployment_util_test.go (ResolveFenceposts, NewRSNewReplicas, MaxUnavailable).
Upstream's test deployments default to maxSurge 0 and maxUnavailable 0.
"""

from __future__ import annotations

import pytest

from kubectl_rollout.rollout.replica_math import (
    ReplicaSetState,
    StaleReplicaSetStatus,
    cleanup_unhealthy_replicas,
    is_saturated,
    max_unavailable,
    new_replica_set_size,
    old_replica_set_sizes,
    replicas_annotations_need_update,
    resolve_fenceposts,
    round_half_away_from_zero,
    scale_down_old_for_rolling_update,
    scale_sizes,
    scaled_value,
)

OLDER, OLD, NEW = 1.0, 2.0, 3.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [(2.5, 3), (3.5, 4), (-2.5, -3), (2.4999, 2), (0.5, 1), (-0.5, -1), (0.0, 0), (1.5, 2)],
)
def test_rounding_is_half_away_from_zero_unlike_pythons_round(value: float, expected: int) -> None:
    assert round_half_away_from_zero(value) == expected


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        (5, 10, True, 5),
        ("25%", 10, True, 3),
        ("25%", 10, False, 2),
        ("0%", 10, True, 0),
        ("100%", 7, False, 7),
        ("33%", 3, True, 1),
        ("33%", 3, False, 0),
        ("50%", 0, True, 0),
    ],
)
def test_scaled_value(value: int | str, total: int, round_up: bool, expected: int) -> None:
    assert scaled_value(value, total, round_up=round_up) == expected


@pytest.mark.parametrize("value", ["25", "abc%", "x", "1.5%"])
def test_scaled_value_refuses_non_percent_strings(value: str) -> None:
    with pytest.raises(ValueError, match="invalid value"):
        scaled_value(value, 10, round_up=True)


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        ("0%", "0%", 0, (0, 1)),
        ("39%", "39%", 10, (4, 3)),
        ("oops", "39%", 10, None),
        ("55%", "urg", 10, None),
        (None, "39%", 10, (0, 3)),
        ("39%", None, 10, (4, 0)),
        (None, None, 10, (0, 1)),
        ("50%", "50%", 3, (2, 1)),
        ("1%", "1%", 10, (1, 0)),
        (0, "1%", 10, (0, 1)),  # unavailable rounds down to 0, surge is 0: unavailable becomes 1
    ],
)
def test_resolve_fenceposts(
    surge: int | str | None, unavailable: int | str | None, desired: int, expected: tuple[int, int] | None
) -> None:
    if expected is None:
        with pytest.raises(ValueError, match="invalid value"):
            resolve_fenceposts(surge, unavailable, desired)
    else:
        assert resolve_fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [(10, 0, 0, 1), (10, 1, 0, 0), (10, 2, 1, 1), (0, 2, 1, 0), (10, 0, "20%", 2), (5, 0, 10, 5)],
)
def test_max_unavailable(replicas: int, surge: int, unavailable: int | str, expected: int) -> None:
    assert max_unavailable(replicas, surge, unavailable) == expected


def test_max_unavailable_of_recreate_is_zero() -> None:
    # deployment_util_test.go TestMaxUnavailable "maxUnavailable with Recreate deployment strategy": 0, so a
    # Recreate workload is Available only with every replica available.
    assert max_unavailable(10, 0, 0, rolling=False) == 0


@pytest.mark.parametrize(
    ("replicas", "surge", "old", "new", "expected"),
    [
        # rolling_test.go TestDeploymentController_reconcileNewReplicaSet
        (10, 0, 10, 0, 0),
        (10, 2, 10, 0, 2),
        (10, 2, 5, 0, 7),
        (10, 2, 10, 2, 2),
        (10, 2, 2, 11, 10),  # larger than the Deployment: shrinks at once
        # deployment_util_test.go TestNewRSNewReplicas
        (1, 1, 0, 0, 1),
        (1, 1, 1, 0, 1),  # 1 old + up to 1 surge
        (3, "25%", 3, 0, 1),
        (10, "25%", 10, 5, 5),  # already at 15 >= 10 + 3
    ],
)
def test_new_replica_set_size(replicas: int, surge: int | str, old: int, new: int, expected: int) -> None:
    assert new_replica_set_size(replicas=replicas, surge=surge, total_replicas=old + new, new_replicas=new) == expected


def test_recreate_creates_the_new_replica_set_at_full_size() -> None:
    assert new_replica_set_size(replicas=7, surge=0, total_replicas=0, new_replicas=0, recreate=True) == 7


@pytest.mark.parametrize(
    ("replicas", "unavailable", "old", "new", "old_ready", "new_ready", "expected_old"),
    [
        # rolling_test.go TestDeploymentController_reconcileOldReplicaSets (maxSurge 0)
        (10, 0, 10, 0, 10, 0, 9),
        (10, 2, 10, 0, 10, 0, 8),
        (10, 2, 10, 0, 8, 0, 8),  # the unhealthy ones go first
        (10, 2, 10, 0, 9, 0, 8),
        (10, 2, 8, 2, 8, 0, 8),  # the new pods are not available yet: nothing may go
        (10, 2, 8, 2, 8, 2, 6),
        (10, 2, 0, 10, 0, 10, 0),
    ],
)
def test_old_replica_sets_scale_down(
    replicas: int, unavailable: int, old: int, new: int, old_ready: int, new_ready: int, expected_old: int
) -> None:
    sizes = old_replica_set_sizes(
        replicas=replicas,
        surge=0,
        unavailable=unavailable,
        new=ReplicaSetState(name="new", replicas=new, available=new_ready, created=NEW),
        old=[ReplicaSetState(name="old", replicas=old, available=old_ready, created=OLD)],
    )
    assert sizes.get("old", old) == expected_old


def test_cleanup_and_scale_down_go_oldest_first() -> None:
    # 10 replicas, maxUnavailable 2: two old ReplicaSets, the older one with 2 unhealthy pods.
    sizes = old_replica_set_sizes(
        replicas=10,
        surge=0,
        unavailable=2,
        new=ReplicaSetState(name="v3", replicas=2, available=2, created=NEW),
        old=[
            ReplicaSetState(name="v2", replicas=4, available=4, created=OLD),
            ReplicaSetState(name="v1", replicas=4, available=2, created=OLDER),
        ],
    )
    # cleanup removes v1's 2 unhealthy pods; 8 available, minimum 8: nothing more.
    assert sizes == {"v1": 2}


# sync_test.go TestScale: (replicas before, after, maxSurge before, after, new, old..., expected)
# ReplicaSets carry the max-replicas annotation written when the Deployment had its old size.
SCALE_CASES = [
    ("normal scaling event: 10 -> 12", 10, 12, 0, 0, ("v1", 10, NEW), [], {"v1": 12}),
    ("normal scaling event: 10 -> 5", 10, 5, 0, 0, ("v1", 10, NEW), [], {"v1": 5}),
    ("proportional scaling: 5 -> 10", 5, 10, 0, 0, ("v2", 2, NEW), [("v1", 3, OLD)], {"v2": 4, "v1": 6}),
    ("proportional scaling: 5 -> 3", 5, 3, 0, 0, ("v2", 2, NEW), [("v1", 3, OLD)], {"v2": 1, "v1": 2}),
    ("proportional scaling: 9 -> 4", 9, 4, 0, 0, ("v2", 8, NEW), [("v1", 1, OLD)], {"v2": 4, "v1": 0}),
    (
        "proportional scaling: 7 -> 10",
        7,
        10,
        0,
        0,
        ("v3", 2, NEW),
        [("v2", 3, OLD), ("v1", 2, OLDER)],
        {"v3": 3, "v2": 4, "v1": 3},
    ),
    (
        "proportional scaling: 13 -> 8",
        13,
        8,
        0,
        0,
        ("v3", 2, NEW),
        [("v2", 8, OLD), ("v1", 3, OLDER)],
        {"v3": 1, "v2": 5, "v1": 2},
    ),
    (
        "leftover distribution: 3 -> 4",
        3,
        4,
        0,
        0,
        ("v3", 1, NEW),
        [("v2", 1, OLD), ("v1", 1, OLDER)],
        {"v3": 2, "v2": 1, "v1": 1},
    ),
    (
        "leftover distribution: 3 -> 2",
        3,
        2,
        0,
        0,
        ("v3", 1, NEW),
        [("v2", 1, OLD), ("v1", 1, OLDER)],
        {"v3": 1, "v2": 1, "v1": 0},
    ),
    (
        "proportional scaling (no new rs): 4 -> 5",
        4,
        5,
        0,
        0,
        None,
        [("v2", 2, OLD), ("v1", 2, OLDER)],
        {"v2": 3, "v1": 2},
    ),
    (
        "proportional scaling: 6 -> 0",
        6,
        0,
        0,
        0,
        ("v3", 3, NEW),
        [("v2", 2, OLD), ("v1", 1, OLDER)],
        {"v3": 0, "v2": 0, "v1": 0},
    ),
    (
        "proportional scaling: 0 -> 6",
        6,
        6,
        0,
        0,
        ("v3", 0, NEW),
        [("v2", 0, OLD), ("v1", 0, OLDER)],
        {"v3": 6, "v2": 0, "v1": 0},
    ),
    ("deployment with surge pods", 10, 20, 2, 2, ("v2", 6, NEW), [("v1", 6, OLD)], {"v2": 11, "v1": 11}),
    ("change both surge and size", 10, 50, 3, 6, ("v2", 5, NEW), [("v1", 8, OLD)], {"v2": 22, "v1": 34}),
    ("change both size and template", 10, 14, 0, 0, None, [("v2", 7, NEW), ("v1", 3, OLD)], {"v2": 10, "v1": 4}),
]


@pytest.mark.parametrize(
    ("before", "after", "surge_before", "surge_after", "new", "old", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in SCALE_CASES],
)
def test_scale_like_the_controller(
    before: int,
    after: int,
    surge_before: int,
    surge_after: int,
    new: tuple[str, int, float] | None,
    old: list[tuple[str, int, float]],
    expected: dict[str, int],
) -> None:
    annotated = before + surge_before
    new_state = (
        None if new is None else ReplicaSetState(name=new[0], replicas=new[1], created=new[2], max_replicas=annotated)
    )
    old_states = [ReplicaSetState(name=n, replicas=r, created=c, max_replicas=annotated) for n, r, c in old]
    changes = scale_sizes(
        replicas=after,
        surge=surge_after,
        unavailable=0,
        new=new_state,
        new_desired=before,
        old=old_states,
        status_replicas=sum(r for _, r, _ in old) + (new[1] if new else 0),
    )
    current = {rs.name: rs.replicas for rs in ([new_state] if new_state else []) + old_states}
    assert {**current, **changes} == expected


def test_a_saturated_new_replica_set_lets_the_old_ones_go() -> None:
    changes = scale_sizes(
        replicas=3,
        surge=1,
        unavailable=1,
        new=ReplicaSetState(name="v2", replicas=3, available=3, created=NEW),
        new_desired=3,
        old=[ReplicaSetState(name="v1", replicas=1, created=OLD)],
        status_replicas=4,
    )
    assert changes == {"v1": 0}


def test_recreate_is_never_scaled_proportionally() -> None:
    changes = scale_sizes(
        replicas=6,
        surge=0,
        unavailable=0,
        new=ReplicaSetState(name="v2", replicas=2, created=NEW, max_replicas=4),
        new_desired=4,
        old=[ReplicaSetState(name="v1", replicas=2, created=OLD, max_replicas=4)],
        status_replicas=4,
        rolling=False,
    )
    assert changes == {}


@pytest.mark.parametrize(
    ("desired", "most", "expected"),
    [
        # deployment_util_test.go TestReplicasAnnotationsNeedUpdate (workload: 10 replicas, 20 at most)
        pytest.param(None, None, True, id="annotations-nil"),
        pytest.param(8, 20, True, id="desired-replicas-update"),
        pytest.param(10, 16, True, id="max-replicas-update"),
        pytest.param(10, 20, False, id="needn't-update"),
    ],
)
def test_replicas_annotations_need_update(desired: int | None, most: int | None, expected: bool) -> None:
    assert replicas_annotations_need_update(desired=desired, most=most, replicas=10, max_replicas=20) is expected


def test_scale_with_one_replica_set_annotated_for_another_size() -> None:
    # sync_test.go TestScale "failed rs update": 5 replicas; foo-v2's earlier update failed, so it is still
    # annotated for 3. Only foo-v2 grows: 1 * 5 / 3 rounds to 2.
    annotated = {"foo-v3": 5, "foo-v2": 3, "foo-v1": 5}
    states = [
        ReplicaSetState(name=n, replicas=r, created=c, max_replicas=annotated[n])
        for n, r, c in (("foo-v3", 2, NEW), ("foo-v2", 1, OLD), ("foo-v1", 1, OLDER))
    ]
    changes = scale_sizes(
        replicas=5, surge=0, unavailable=1, new=states[0], new_desired=5, old=states[1:], status_replicas=4
    )
    assert changes == {"foo-v2": 2}


def test_a_saturated_but_broken_new_replica_set_leaves_the_old_pods_alone() -> None:
    # sync_test.go TestScale "saturated but broken new replica set does not affect old pods": 2 replicas,
    # maxSurge 1, maxUnavailable 1; the new ReplicaSet has its 2 replicas but none available.
    changes = scale_sizes(
        replicas=2,
        surge=1,
        unavailable=1,
        new=ReplicaSetState(name="foo-v2", replicas=2, available=0, created=NEW, max_replicas=3),
        new_desired=2,
        old=[ReplicaSetState(name="foo-v1", replicas=1, available=1, created=OLD, max_replicas=3)],
        status_replicas=3,
    )
    assert changes == {}


@pytest.mark.parametrize(
    ("old_replicas", "ready", "max_cleanup", "cleaned"),
    [
        # rolling_test.go TestDeploymentController_cleanupUnhealthyReplicas (10 old replicas)
        (10, 8, 1, 1),
        (10, 8, 3, 2),
        (10, 8, 0, 0),
        (10, 10, 3, 0),
    ],
)
def test_cleanup_unhealthy_replicas(old_replicas: int, ready: int, max_cleanup: int, cleaned: int) -> None:
    old = [ReplicaSetState(name="foo-v2", replicas=old_replicas, available=ready, created=OLD)]
    sizes, count = cleanup_unhealthy_replicas(old, max_cleanup=max_cleanup)
    assert count == cleaned
    assert sizes.get("foo-v2", old_replicas) == old_replicas - cleaned


def test_cleanup_refuses_an_old_replica_set_whose_status_is_stale() -> None:
    # Upstream's cleanupUnhealthyReplicas errors ("invalid request to scale down 8 -> 10") and the sync stops:
    # 10 available for a size of 8 means the ReplicaSet controller has not caught up yet.
    stale = [ReplicaSetState(name="foo-v1", replicas=8, available=10, created=OLD)]
    with pytest.raises(StaleReplicaSetStatus, match="foo-v1 8 -> 10"):
        cleanup_unhealthy_replicas(stale, max_cleanup=2)
    assert (
        old_replica_set_sizes(
            replicas=10,
            surge=2,
            unavailable=2,
            new=ReplicaSetState(name="foo-v2", replicas=2, available=2, created=NEW),
            old=stale,
        )
        == {}
    )


@pytest.mark.parametrize(
    ("replicas", "unavailable", "ready", "old_replicas", "expected_old"),
    [
        # rolling_test.go TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate (maxSurge 0;
        # None: no scaling)
        (10, 0, 10, 10, 9),
        (10, 2, 10, 10, 8),
        (10, 2, 8, 10, None),
        (10, 2, 10, 0, None),
        (10, 2, 1, 10, None),
    ],
)
def test_scale_down_old_replica_sets_for_rolling_update(
    replicas: int, unavailable: int, ready: int, old_replicas: int, expected_old: int | None
) -> None:
    sizes = scale_down_old_for_rolling_update(
        replicas=replicas,
        surge=0,
        unavailable=unavailable,
        new=ReplicaSetState(name="foo-v3", replicas=0, created=NEW),
        old=[ReplicaSetState(name="foo-v2", replicas=old_replicas, available=ready, created=OLD)],
    )
    assert sizes == ({} if expected_old is None else {"foo-v2": expected_old})


@pytest.mark.parametrize(
    ("rs", "desired", "expected"),
    [
        # deployment_util_test.go TestAnnotationUtils "IsSaturated" (1 replica, annotated 1, 1 available) and
        # the ways to miss it
        pytest.param(ReplicaSetState(name="rs", replicas=1, available=1), 1, True, id="saturated"),
        pytest.param(None, 1, False, id="no-replica-set"),
        pytest.param(ReplicaSetState(name="rs", replicas=1, available=1), None, False, id="no-annotation"),
        pytest.param(ReplicaSetState(name="rs", replicas=1, available=1), 2, False, id="annotated-otherwise"),
        pytest.param(ReplicaSetState(name="rs", replicas=1, available=0), 1, False, id="not-available"),
        pytest.param(ReplicaSetState(name="rs", replicas=2, available=2), 1, False, id="other-size"),
    ],
)
def test_is_saturated(rs: ReplicaSetState | None, desired: int | None, expected: bool) -> None:
    assert is_saturated(rs, desired=desired, replicas=1) is expected
