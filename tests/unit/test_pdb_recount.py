"""What of a PDB's expected pods a surge's lowering must take, as the disruption controller counts it."""

from __future__ import annotations

import pytest
from kubernetes import client

from kubectl_rollout.drain.surge.pdb_recount import others_expected


def budget(*, expected: int | None, counted: bool = True, **spec: int | str) -> client.V1PodDisruptionBudget:
    status = (
        client.V1PodDisruptionBudgetStatus(
            expected_pods=expected, current_healthy=0, desired_healthy=0, disruptions_allowed=0
        )
        if counted
        else None
    )
    return client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="web", namespace="shop"),
        spec=client.V1PodDisruptionBudgetSpec(**spec),
        status=status,
    )


@pytest.mark.parametrize(
    ("pdb", "replicas", "others"),
    [
        # maxUnavailable: the controller sums its workloads' counts (getExpectedScale)
        (budget(expected=10, max_unavailable=1), 10, 0),
        (budget(expected=10, max_unavailable="10%"), 10, 0),
        # the PDB also selects another workload's 15 pods
        (budget(expected=25, max_unavailable=1), 10, 15),
        # minAvailable as a percentage: counts too
        (budget(expected=10, min_available="90%"), 10, 0),
        # minAvailable as a number: the expected count is the pods it finds, not a count a lowering moves
        (budget(expected=10, min_available=9), 10, None),
        # never counted by the controller yet
        (budget(expected=None, max_unavailable=1), 10, None),
        (budget(expected=None, counted=False, max_unavailable=1), 10, None),
        # a status behind a count raised meanwhile is never taken for less than nothing
        (budget(expected=8, max_unavailable=1), 10, 0),
    ],
    ids=[
        "max-unavailable",
        "max-unavailable-percent",
        "two-workloads",
        "min-available-percent",
        "min-available-number",
        "expected-unset",
        "no-status",
        "status-behind-a-raise",
    ],
)
def test_others_expected(pdb: client.V1PodDisruptionBudget, replicas: int, others: int | None) -> None:
    assert others_expected(pdb, replicas) == others
