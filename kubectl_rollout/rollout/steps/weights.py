"""How many replicas the canary and the stable ReplicaSet get at a weight, and on the way there.

A weight is a share of the workload's replicas by count (no traffic router):
the canary gets ``ceil(weight x replicas / 100)``, at least one and at most
replicas - 1 for a weight strictly between 0 and 100, and the stable
ReplicaSet the rest, so that canary + stable == replicas once a step is
reached: a pause never holds surge pods (Argo Rollouts' basic canary may keep
replicas + 1 through a pause to approximate the weight better).

The way there moves like the Deployment controller's rolling update, inside
the workload's own maxSurge and maxUnavailable: the growing side grows only
while the pods the workload may still have stay within replicas + maxSurge
(pods of a shrunk ReplicaSet count until they are deleted), and the shrinking
side loses unavailable replicas first, then available ones only while at
least replicas - maxUnavailable stay available. A jump of 40 % is many such
moves, never one (argo-rollouts#3284: with steps, maxSurge was ignored and a
setWeight 50 started half the replicas at once beside the stable ones).

Numbers in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_rollout.rollout.replica_math import IntOrPercent, max_surge, max_unavailable
from kubectl_rollout.rollout.steps.format import SetWeight, Step


@dataclass(frozen=True, kw_only=True)
class Counts:
    canary: int
    stable: int

    @property
    def total(self) -> int:
        return self.canary + self.stable


@dataclass(frozen=True, kw_only=True)
class Side:
    """One ReplicaSet as the arithmetic sees it."""

    #: spec.replicas
    replicas: int
    #: the pods it may still have: its spec, or more while deleted pods are still there (status.replicas)
    pods: int
    #: status.availableReplicas
    available: int


def side(replicas: int, *, current: int = 0, available: int = 0) -> Side:
    # Available pods beyond the spec are on their way out: they never count towards what stays available.
    return Side(replicas=replicas, pods=max(replicas, current), available=min(available, replicas))


def step_goal(*, replicas: int, weight: int) -> Counts:
    """The counts a setWeight step settles at."""
    canary = math.ceil(replicas * weight / 100)
    if 0 < weight < 100 and replicas >= 2:
        # Some canary, and some stable, at every weight strictly between: 95 % of 10 is 9 and 1, not 10 and 0.
        canary = min(max(canary, 1), replicas - 1)
    return Counts(canary=canary, stable=replicas - canary)


@dataclass(frozen=True, kw_only=True)
class NextCounts:
    canary: int
    stable: int
    #: the older ReplicaSets (neither canary nor stable), each going to 0, in the order given
    others: tuple[int, ...] = ()


def next_counts(
    *,
    replicas: int,
    surge: IntOrPercent | None,
    unavailable: IntOrPercent | None,
    goal: Counts,
    canary: Side,
    stable: Side,
    others: Sequence[Side] = (),
) -> NextCounts:
    """The next sizes on the way to ``goal``: the growing side within replicas + maxSurge pods, the shrinking
    side (older ReplicaSets first) while replicas - maxUnavailable stay available."""
    most = replicas + max_surge(replicas, surge, unavailable)
    least = replicas - max_unavailable(replicas, surge, unavailable)
    room = most - (canary.pods + stable.pods + sum(o.pods for o in others))
    sizes = [canary.replicas, stable.replicas, *(o.replicas for o in others)]
    goals = [goal.canary, goal.stable, *(0 for _ in others)]
    sides = [canary, stable, *others]
    for index in (0, 1):
        if goals[index] > sizes[index] and room > 0:
            grown = min(room, goals[index] - sizes[index])
            sizes[index] += grown
            room -= grown
    spare = canary.available + stable.available + sum(o.available for o in others) - least
    # Older ReplicaSets first, then whichever of canary and stable is above its goal.
    for index in [*range(2, len(sides)), 0, 1]:
        current = sides[index]
        excess = current.replicas - goals[index]
        if excess <= 0:
            continue
        unhealthy = min(excess, max(0, current.replicas - current.available))
        healthy = min(excess - unhealthy, max(0, spare))
        spare -= healthy
        sizes[index] = current.replicas - unhealthy - healthy
    return NextCounts(canary=sizes[0], stable=sizes[1], others=tuple(sizes[2:]))


@dataclass(frozen=True, kw_only=True)
class StepPlan:
    """What one step gives, every pod becoming available at once and every deleted pod going at once."""

    index: int
    step: Step
    counts: Counts
    #: the most pods the workload has on the way to this step's counts
    peak_pods: int
    #: how many moves (driver passes that change sizes) reach them
    moves: int


@dataclass(frozen=True, kw_only=True)
class CanaryPlan:
    replicas: int
    most_pods: int
    least_available: int
    steps: tuple[StepPlan, ...]

    @property
    def peak_pods(self) -> int:
        return max((s.peak_pods for s in self.steps), default=self.replicas)


#: a plan's moves per step are bounded: each move changes a size, so a step of R replicas needs at most 2R
_MOST_MOVES = 10_000


def plan_steps(
    *, replicas: int, surge: IntOrPercent | None, unavailable: IntOrPercent | None, steps: Sequence[Step]
) -> CanaryPlan:
    """The counts each step gives from a stable ReplicaSet at full size, and the peak pod count on the way;
    after the last step the canary takes every replica (as a promote does), which is planned as a last
    ``setWeight 100`` when the steps do not end with one."""
    counts = Counts(canary=0, stable=replicas)
    planned: list[StepPlan] = []
    every = list(steps)
    if not any(isinstance(s, SetWeight) and s.percent == 100 for s in every[-1:]):
        every.append(SetWeight(percent=100))
    for index, step in enumerate(every):
        peak, moves = counts.total, 0
        if isinstance(step, SetWeight):
            goal = step_goal(replicas=replicas, weight=step.percent)
            while counts != goal and moves < _MOST_MOVES:
                after = next_counts(
                    replicas=replicas,
                    surge=surge,
                    unavailable=unavailable,
                    goal=goal,
                    canary=side(counts.canary, available=counts.canary),
                    stable=side(counts.stable, available=counts.stable),
                )
                moved = Counts(canary=after.canary, stable=after.stable)
                if moved == counts:
                    break  # no way on (cannot happen within the API server's bounds; never loop for it)
                peak = max(peak, max(moved.canary, counts.canary) + max(moved.stable, counts.stable))
                counts, moves = moved, moves + 1
        planned.append(StepPlan(index=index, step=step, counts=counts, peak_pods=peak, moves=moves))
    return CanaryPlan(
        replicas=replicas,
        most_pods=replicas + max_surge(replicas, surge, unavailable),
        least_available=replicas - max_unavailable(replicas, surge, unavailable),
        steps=tuple(planned),
    )
