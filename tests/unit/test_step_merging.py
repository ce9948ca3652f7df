"""A small scale-down of the old ReplicaSets waits while the ReplicaSet controller is busy (step_merging.py)."""

from __future__ import annotations

import pytest

from kubectl_rollout.rollout.plan import CreateReplicaSet, ManagedReplicaSet, ScaleReplicaSet
from kubectl_rollout.rollout.step_merging import SMALL_STEP_WAIT, SmallStepWait, small_scale_down


def rs(name: str, replicas: int, live: int | None = None, *, unobserved: bool = False) -> ManagedReplicaSet:
    return ManagedReplicaSet(
        name=name, template_hash=name, replicas=replicas, live=replicas if live is None else live, unobserved=unobserved
    )


# 100 replicas, maxUnavailable 25: a quarter is 7 (rounded up), so a step of 6 pods or fewer is small.
SMALL_STEPS = [
    # (what the pass would do, the ReplicaSets as the driver sees them, held?)
    ("2 of old while new still makes pods", [ScaleReplicaSet("old", 60)], [rs("new", 65, 50), rs("old", 62)], True),
    ("6 of old while old still loses pods", [ScaleReplicaSet("old", 54)], [rs("new", 40), rs("old", 60, 63)], True),
    (
        "the last resize not yet seen",
        [ScaleReplicaSet("old", 58)],
        [rs("new", 40, unobserved=True), rs("old", 60)],
        True,
    ),
    (
        "two old ones, 3 + 3",
        [ScaleReplicaSet("a", 7), ScaleReplicaSet("b", 7)],
        [rs("new", 90, 88), rs("a", 10), rs("b", 10)],
        True,
    ),
    ("7 pods is no small step", [ScaleReplicaSet("old", 53)], [rs("new", 65, 50), rs("old", 60)], False),
    (
        "3 + 4 in two old ones is 7",
        [ScaleReplicaSet("a", 7), ScaleReplicaSet("b", 6)],
        [rs("new", 90, 80), rs("a", 10), rs("b", 10)],
        False,
    ),
    ("nothing pending: goes at once", [ScaleReplicaSet("old", 60)], [rs("new", 65), rs("old", 62)], False),
    ("the new one grows", [ScaleReplicaSet("new", 67)], [rs("new", 65, 50), rs("old", 60)], False),
    ("an old one grows (a rollback's)", [ScaleReplicaSet("old", 62)], [rs("new", 65, 50), rs("old", 60)], False),
    (
        "shrink and grow together",
        [ScaleReplicaSet("old", 58), ScaleReplicaSet("new", 67)],
        [rs("new", 65, 50), rs("old", 60)],
        False,
    ),
    ("another kind of action", [CreateReplicaSet(25, 2)], [rs("old", 100, 90)], False),
    ("no action", [], [rs("new", 65, 50), rs("old", 60)], False),
    ("an unknown ReplicaSet", [ScaleReplicaSet("gone", 1)], [rs("new", 65, 50), rs("old", 60)], False),
]


@pytest.mark.parametrize(
    ("actions", "replica_sets", "held"), [c[1:] for c in SMALL_STEPS], ids=[c[0] for c in SMALL_STEPS]
)
def test_which_scale_downs_are_small_enough_to_wait(
    actions: list[ScaleReplicaSet], replica_sets: list[ManagedReplicaSet], held: bool
) -> None:
    assert small_scale_down(actions, replica_sets, new="new", max_unavailable=25) is held


@pytest.mark.parametrize(
    ("max_unavailable", "removed", "small"),
    [
        (1, 1, False),
        (3, 1, False),
        (4, 1, False),
        (5, 1, True),
        (5, 2, False),
        (25, 6, True),
        (25, 7, False),
        (0, 1, False),
    ],
)
def test_a_quarter_of_max_unavailable_rounded_up_is_no_small_step(
    max_unavailable: int, removed: int, small: bool
) -> None:
    """maxUnavailable 1 to 4: every step is at least a quarter, so nothing ever waits (the controller's own steps)."""
    replica_sets = [rs("new", 10, 5), rs("old", 10)]
    assert (
        small_scale_down(
            [ScaleReplicaSet("old", 10 - removed)], replica_sets, new="new", max_unavailable=max_unavailable
        )
        is small
    )


def test_a_held_step_goes_after_the_wait_whatever_comes() -> None:
    wait = SmallStepWait()
    assert wait.ends_at() is None
    assert wait.holds(True, now=100.0)
    assert wait.ends_at() == 100.0 + SMALL_STEP_WAIT
    assert wait.holds(True, now=100.0 + SMALL_STEP_WAIT / 2)
    assert not wait.holds(True, now=100.0 + SMALL_STEP_WAIT)
    assert wait.ends_at() is None, "nothing held: the driver's loop must not wake at a time gone by, again and again"
    assert not wait.holds(True, now=100.0 + 2 * SMALL_STEP_WAIT), "the small steps after it go at once"


def test_a_step_that_is_not_small_ends_the_wait() -> None:
    wait = SmallStepWait()
    assert wait.holds(True, now=100.0)
    assert not wait.holds(False, now=100.5)
    assert wait.ends_at() is None
    assert wait.holds(True, now=100.6), "a later small step waits afresh"
    assert wait.ends_at() == 100.6 + SMALL_STEP_WAIT
