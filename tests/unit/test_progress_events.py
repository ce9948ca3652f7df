"""Which condition changes a status write reports (ConditionChanged)."""

from __future__ import annotations

import dataclasses

import pytest

from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.rollout.progress_events import condition_changes
from kubectl_rollout.rollout.state import Condition, RolloutStatus, condition

PROGRESSING = condition("Progressing", True, "ReplicaSetUpdated", 'ReplicaSet "web-1" is progressing.', 100.0)
AVAILABLE = condition("Available", True, "MinimumReplicasAvailable", "Deployment has minimum availability.", 50.0)
FAILING = condition("ReplicaFailure", True, "NewPodsFailing", "pod web-1-x: container app ...", 120.0)


def status(*conditions: Condition) -> RolloutStatus:
    return RolloutStatus(conditions=conditions)


def summary(changes: list[ev.ConditionChanged]) -> list[tuple[str, str, str, bool]]:
    return [(c.condition.value, c.status.value, c.reason, c.removed) for c in changes]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (status(), status(AVAILABLE), [("Available", "True", "MinimumReplicasAvailable", False)]),
        (status(AVAILABLE), status(AVAILABLE), []),
        # progress refreshes lastUpdateTime with the same reason and message: nothing to report
        (status(PROGRESSING), status(dataclasses.replace(PROGRESSING, last_update_time=130.0)), []),
        (
            status(PROGRESSING),
            status(condition("Progressing", False, "ProgressDeadlineExceeded", "timed out", 700.0)),
            [("Progressing", "False", "ProgressDeadlineExceeded", False)],
        ),
        (status(AVAILABLE, FAILING), status(AVAILABLE), [("ReplicaFailure", "True", "NewPodsFailing", True)]),
        (status(), status(condition("SomethingElse", True, "X", "", 1.0)), []),
    ],
    ids=["new", "same", "refreshed", "deadline", "removed", "foreign-type"],
)
def test_condition_changes(
    before: RolloutStatus, after: RolloutStatus, expected: list[tuple[str, str, str, bool]]
) -> None:
    assert summary(condition_changes("web", before, after)) == expected


def test_a_change_carries_its_transition_time() -> None:
    (change,) = condition_changes("web", status(), status(FAILING))
    assert (change.since, change.message) == (120.0, FAILING.message)
