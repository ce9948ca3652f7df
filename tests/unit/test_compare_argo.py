"""hack/compare_argo.py's pure parts: the counts read from ReplicaSets and pods, the plan it checks ours against,
and what it calls a broken invariant of ours (a difference from Argo never is one)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))

import compare_argo as compare
from compare_argo import NEW, OLD, SCENARIOS, Counts, Run, Scenario


def replica_set(image: str, replicas: int) -> dict[str, Any]:
    return {"spec": {"replicas": replicas, "template": {"spec": {"containers": [{"image": image}]}}}}


def pod(image: str, *, ready: bool, deleting: bool = False, phase: str = "Running") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-26T15:00:00Z"
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"metadata": metadata, "spec": {"containers": [{"image": image}]}, "status": status}


@pytest.mark.parametrize(
    ("replica_sets", "pods", "expected"),
    [
        ([], [], Counts(0, 0, 0, 0)),
        (
            [replica_set(NEW, 1), replica_set(OLD, 9)],
            [pod(NEW, ready=True)] + [pod(OLD, ready=True)] * 9,
            Counts(1, 1, 9, 9),
        ),
        # Not Ready, being deleted, or ended: not Ready pods of their ReplicaSet.
        (
            [replica_set(NEW, 2), replica_set(OLD, 8)],
            [pod(NEW, ready=False), pod(NEW, ready=True), pod(OLD, ready=True, deleting=True)]
            + [pod(OLD, ready=True)] * 7,
            Counts(2, 1, 8, 7),
        ),
        # Two ReplicaSets of one image (Argo's and ours never make two, but a count must not drop one).
        ([replica_set(OLD, 3), replica_set(OLD, 2)], [], Counts(0, 0, 5, 0)),
    ],
)
def test_counts_of(replica_sets: list[dict[str, Any]], pods: list[dict[str, Any]], expected: Counts) -> None:
    assert compare.counts_of(replica_sets, pods) == expected


@pytest.mark.parametrize(
    ("pod_", "live"),
    [
        (pod(OLD, ready=True), True),
        (pod(OLD, ready=False, phase="Pending"), True),
        (pod(OLD, ready=True, deleting=True), False),
        (pod(OLD, ready=False, phase="Succeeded"), False),
        (pod(OLD, ready=False, phase="Failed"), False),
    ],
)
def test_a_live_pod_runs_and_is_not_being_deleted(pod_: dict[str, Any], live: bool) -> None:
    assert compare.is_live(pod_) is live


PLAN = """workload/web: 10 replicas, at most 13 pods (maxSurge), at least 8 available (maxUnavailable)
STEP                               CANARY STABLE PEAK PODS
1     setWeight 10%                     1      9        11
2     pause                             1      9        10
3     setWeight 50%                     5      5        13
4     pause 5s                          5      5        10
5     setWeight 100%                   10      0        13
peak: 13 pods
"""


def test_plan_counts_reads_apply_plan() -> None:
    assert compare.plan_counts(PLAN) == {0: (1, 9), 1: (1, 9), 2: (5, 5), 3: (5, 5), 4: (10, 0)}


def as_planned() -> Run:
    run = Run("ours", most_pods=13, fewest_ready=8)
    for step, (canary, stable) in compare.plan_counts(PLAN).items():
        run.left[step] = Counts(canary, canary, stable, stable)
    return run


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({}, None),
        ({"most_pods": 14}, "ours had 14 live pods, above replicas + maxSurge (13)"),
        ({"fewest_ready": 7}, "ours had 7 Ready pods, below replicas - maxUnavailable (8)"),
        ({"left": {2: Counts(6, 6, 4, 4)}}, "ours left step 3 at"),
        ({"left": {2: Counts(5, 4, 5, 5)}}, "ours left step 3 at"),
        ({"left": {4: None}}, "ours left step 5 at None"),
    ],
)
def test_only_a_broken_invariant_of_ours_is_a_breach(change: dict[str, Any], words: str | None) -> None:
    run = as_planned()
    for name, value in change.items():
        if name == "left":
            for step, counts in value.items():
                if counts is None:
                    del run.left[step]
                else:
                    run.left[step] = counts
        else:
            setattr(run, name, value)
    breaches = compare.our_breaches(SCENARIOS["issue"], run, compare.plan_counts(PLAN))
    if words is None:
        assert breaches == []
    else:
        assert len(breaches) == 1
        assert words in breaches[0]


@pytest.mark.parametrize(
    ("argo", "ours", "text"),
    [
        (Counts(1, 1, 9, 9), Counts(1, 1, 9, 9), "same"),
        (Counts(1, 1, 10, 10), Counts(1, 1, 9, 9), "canary +0, stable -1"),
        (Counts(1, 1, 9, 9), Counts(2, 2, 8, 8), "canary +1, stable -1"),
        (None, Counts(1, 1, 9, 9), "?"),
    ],
)
def test_difference_is_ours_minus_argos(argo: Counts | None, ours: Counts | None, text: str) -> None:
    assert compare.difference(argo, ours) == text


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "most", "fewest"),
    [
        (10, "25%", "25%", 13, 8),
        (3, 1, 0, 4, 3),
        (10, "10%", 0, 11, 10),
        # both 0: maxUnavailable 1, as the Deployment controller resolves it
        (10, 0, 0, 10, 9),
    ],
)
def test_a_scenarios_bounds_are_the_deployment_controllers(
    replicas: int, surge: int | str, unavailable: int | str, most: int, fewest: int
) -> None:
    scenario = Scenario("s", replicas, surge, unavailable, ("setWeight 50",), "why")
    assert (scenario.most_pods, scenario.fewest_ready) == (most, fewest)


def test_argo_says_the_steps_its_way() -> None:
    assert SCENARIOS["issue"].argo_steps() == [
        {"setWeight": 10},
        {"pause": {}},
        {"setWeight": 50},
        {"pause": {"duration": "5s"}},
        {"setWeight": 100},
    ]
    with pytest.raises(ValueError, match="has no Argo equivalent"):
        Scenario("s", 3, 1, 0, ("gate manual",), "why").argo_steps()
