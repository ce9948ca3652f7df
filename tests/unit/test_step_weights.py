"""The canary's replica arithmetic: the counts a weight gives, and the moves that reach them inside maxSurge /
maxUnavailable.

Cases marked "Argo" are from argo-rollouts utils/replicaset/canary_test.go
(TestApproximateWeightedNewStableReplicaCounts, basic canary without a traffic
router) where we agree; those marked "differs" are where we deliberately do
not: Argo may hold replicas + 1 pods through a step to approximate the weight,
and rounds to the nearest count; we round up and never hold surge pods once a
step is reached.
"""

from __future__ import annotations

import pytest

from kubectl_rollout.rollout.steps.format import parse_steps
from kubectl_rollout.rollout.steps.weights import Counts, NextCounts, next_counts, plan_steps, side, step_goal


@pytest.mark.parametrize(
    ("replicas", "weight", "canary", "stable"),
    [
        # Argo, maxSurge 0: the same counts
        (0, 50, 0, 0),
        (2, 0, 0, 2),
        (2, 1, 1, 1),
        (2, 50, 1, 1),
        (2, 99, 1, 1),
        (2, 100, 2, 0),
        (3, 10, 1, 2),
        (3, 33, 1, 2),
        (3, 50, 2, 1),
        (10, 1, 1, 9),
        (10, 15, 2, 8),
        (10, 50, 5, 5),
        # differs: Argo rounds 14 % of 10 to the nearest (1); we round up, as documented
        (10, 14, 2, 8),
        # differs: Argo rounds 49 % of 3 to 1 canary; we round up to 2
        (3, 49, 2, 1),
        # differs (maxSurge 1): Argo keeps 3 stable beside 1 canary at 25 % of 3 (4 pods through the pause), and
        # 2 and 2 at 50 %; we keep 1 and 2, and 2 and 1 (the cases above: the counts do not depend on maxSurge)
        # never both at full size, never no stable below 100 %
        (10, 95, 9, 1),
        (10, 100, 10, 0),
        (1, 1, 1, 0),
    ],
)
def test_step_goal(replicas: int, weight: int, canary: int, stable: int) -> None:
    assert step_goal(replicas=replicas, weight=weight) == Counts(canary=canary, stable=stable)


def _next(
    goal: tuple[int, int],
    canary: tuple[int, int, int],
    stable: tuple[int, int, int],
    *,
    replicas: int = 10,
    surge: int | str = "25%",
    unavailable: int | str = "25%",
) -> tuple[int, int]:
    result = next_counts(
        replicas=replicas,
        surge=surge,
        unavailable=unavailable,
        goal=Counts(canary=goal[0], stable=goal[1]),
        canary=side(canary[0], current=canary[1], available=canary[2]),
        stable=side(stable[0], current=stable[1], available=stable[2]),
    )
    return result.canary, result.stable


@pytest.mark.parametrize(
    ("case", "goal", "canary", "stable", "surge", "unavailable", "expected"),
    [
        # 10 replicas, maxSurge 25 % (3), maxUnavailable 25 % (2): 13 pods at most, 8 available at least
        ("first step, one canary pod", (1, 9), (0, 0, 0), (10, 10, 10), "25%", "25%", (1, 9)),
        (
            "to 50 %: grow by the surge, shrink by what may be unavailable",
            (5, 5),
            (1, 1, 1),
            (9, 9, 9),
            "25%",
            "25%",
            (4, 7),
        ),
        ("the shrunk pods still count until deleted", (5, 5), (4, 4, 1), (7, 9, 7), "25%", "25%", (4, 7)),
        ("reached: nothing moves", (5, 5), (5, 5, 5), (5, 5, 5), "25%", "25%", (5, 5)),
        # argo-rollouts#3284: maxSurge 10 %, maxUnavailable 0, setWeight 50 started 5 canary pods beside 10 stable
        # (15 pods); here one pod at a time, never above 11
        ("#3284: one surge pod at a time", (5, 5), (0, 0, 0), (10, 10, 10), "10%", 0, (1, 10)),
        (
            "#3284: the stable shrinks once the canary pod is available",
            (5, 5),
            (1, 1, 1),
            (10, 10, 10),
            "10%",
            0,
            (1, 9),
        ),
        ("#3284: not before", (5, 5), (1, 1, 0), (10, 10, 10), "10%", 0, (1, 10)),
        # maxSurge 0: the stable shrinks first, then the canary takes the room
        ("no surge: shrink first", (5, 5), (0, 0, 0), (10, 10, 10), 0, 1, (0, 9)),
        ("no surge: then grow, shrinking no more", (5, 5), (0, 0, 0), (9, 9, 9), 0, 1, (1, 9)),
        # abort: the stable grows back within the surge, the canary's unavailable pods go at once
        ("abort grows the stable", (0, 10), (5, 5, 5), (5, 5, 5), "25%", "25%", (3, 8)),
        ("abort drops unready canary pods freely", (0, 10), (5, 5, 0), (5, 5, 5), "25%", 0, (0, 8)),
    ],
)
def test_next_counts(
    case: str,
    goal: tuple[int, int],
    canary: tuple[int, int, int],
    stable: tuple[int, int, int],
    surge: int | str,
    unavailable: int | str,
    expected: tuple[int, int],
) -> None:
    assert _next(goal, canary, stable, surge=surge, unavailable=unavailable) == expected, case


def test_older_replica_sets_go_first() -> None:
    result = next_counts(
        replicas=10,
        surge=0,
        unavailable=2,
        goal=Counts(canary=1, stable=9),
        canary=side(0),
        stable=side(6, current=6, available=6),
        others=[side(4, current=4, available=4)],
    )
    assert result == NextCounts(canary=0, stable=6, others=(2,))


def _walk(replicas: int, surge: int | str, unavailable: int | str, goal: Counts) -> list[tuple[int, int, int, int]]:
    """Move by move, pods becoming available at once: (canary, stable, pods held, available) after each."""
    canary, stable = 0, replicas
    seen: list[tuple[int, int, int, int]] = []
    for _ in range(1000):
        after = next_counts(
            replicas=replicas,
            surge=surge,
            unavailable=unavailable,
            goal=goal,
            canary=side(canary, available=canary),
            stable=side(stable, available=stable),
        )
        if (after.canary, after.stable) == (canary, stable):
            return seen
        held = max(after.canary, canary) + max(after.stable, stable)
        available = min(after.canary, canary) + min(after.stable, stable)
        canary, stable = after.canary, after.stable
        seen.append((canary, stable, held, available))
    raise AssertionError("no end")


@pytest.mark.parametrize("replicas", [1, 2, 3, 5, 10, 37, 100])
@pytest.mark.parametrize(("surge", "unavailable"), [("25%", "25%"), (0, 1), (1, 0), ("10%", 0), ("50%", "50%")])
@pytest.mark.parametrize("weight", [1, 10, 33, 50, 99, 100])
def test_moves_stay_inside_the_workloads_own_bounds(
    replicas: int, surge: int | str, unavailable: int | str, weight: int
) -> None:
    from kubectl_rollout.rollout.replica_math import max_surge, max_unavailable

    most = replicas + max_surge(replicas, surge, unavailable)
    least = replicas - max_unavailable(replicas, surge, unavailable)
    goal = step_goal(replicas=replicas, weight=weight)
    seen = _walk(replicas, surge, unavailable, goal)
    assert seen[-1][:2] == (goal.canary, goal.stable)
    for _canary, _stable, held, available in seen:
        assert held <= most
        assert available >= least


def test_the_plan_of_the_issues_example() -> None:
    steps = parse_steps("setWeight 10; pause; setWeight 50; pause 5s; setWeight 100", workload="web")
    plan = plan_steps(replicas=10, surge="25%", unavailable="25%", steps=steps)
    assert [(s.counts.canary, s.counts.stable) for s in plan.steps] == [(1, 9), (1, 9), (5, 5), (5, 5), (10, 0)]
    assert [s.peak_pods for s in plan.steps] == [11, 10, 13, 10, 13]
    assert (plan.peak_pods, plan.most_pods, plan.least_available) == (13, 13, 8)


def test_a_plan_ends_with_every_replica_on_the_canary() -> None:
    plan = plan_steps(replicas=4, surge=1, unavailable=0, steps=parse_steps("setWeight 50; pause", workload="w"))
    assert [str(s.step) for s in plan.steps] == ["setWeight 50%", "pause", "setWeight 100%"]
    assert plan.steps[-1].counts == Counts(canary=4, stable=0)
    assert plan.peak_pods == 5
