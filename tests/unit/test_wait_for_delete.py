"""When a removed pod counts as gone: the cases of kubectl's TestDeletePods (pkg/drain/drain_test.go).

kubectl polls GET for each pod; we follow the node's pods on a watch. Either
way the decision per observation is the same, and it is this pure function.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from podmodels import pod

from kubectl_rollout.kube.pods import Deletion, deletion_progress

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
REMOVED_UID = "00"


def seen(uid: str = REMOVED_UID, *, deleted_ago: float | None = None) -> Any:
    current = pod("pod0", namespace="default")
    current.metadata.uid = uid
    if deleted_ago is not None:
        current.metadata.deletion_timestamp = NOW - timedelta(seconds=deleted_ago)
    return current


@pytest.mark.parametrize(
    ("current", "skip_after", "expected"),
    [
        # "Wait for deleting to complete": the GET answers NotFound at last.
        pytest.param(None, 10, Deletion.GONE, id="wait for deleting to complete (not found)"),
        # "Pod found with same name but different UID": a namesake replaced ours.
        pytest.param(seen("SOME_OTHER_UID"), 10, Deletion.GONE, id="same name, different UID"),
        # "Deleting could timeout": the same pod keeps answering; it stays pending until the deadline.
        pytest.param(seen(), 10, Deletion.PENDING, id="deleting could time out (same pod)"),
        pytest.param(seen(deleted_ago=5), 10, Deletion.PENDING, id="terminating, within the skip timeout"),
        # "Skip Deleted Pod": deleted 100 s ago with --skip-wait-for-delete-timeout=10.
        pytest.param(seen(deleted_ago=100), 10, Deletion.SKIPPED, id="skip deleted pod"),
        pytest.param(seen(deleted_ago=100), 0, Deletion.PENDING, id="no skip timeout: always wait"),
    ],
)
def test_deletion_progress(current: Any, skip_after: int, expected: Deletion) -> None:
    assert deletion_progress(REMOVED_UID, current, skip_after, NOW) is expected


# TestDeletePods' "Context Canceled" and "Client error could be passed out" concern kubectl's polling
# loop; ours ends on the job's cancel signal (tests/integration/test_job_runner.py) and a watch
# that re-lists on errors (tests/integration/test_watched_collection.py).
