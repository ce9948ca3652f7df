"""What an unfinished eviction-based restart leaves on its workload, so that it can be resumed.

A restart by eviction replaces the pods that existed when it began. It writes
one label on the workload: the creation time of the newest of those pods, as
the API server stamped it, in seconds since the epoch. A label, not an
annotation: changing a Deployment's annotations bumps its generation, and its
controller copies them onto the current ReplicaSet, where they would outlive
the restart; a label changes neither (no new generation, no rollout).
A pod created at or before that cutoff is one the restart set out to replace;
a pod created after it is a replacement, or newer still, and is left alone by
``--resume``. The cutoff is the server's own clock, so a client whose clock is
off cannot skip a pod; a replacement created in the same second as the cutoff
counts as old (timestamps have one-second resolution) and is replaced once
more, which errs on the side of restarting.

The label is removed when the restart finishes, and when it stops before
replacing any pod (a fresh restart would do the same work).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

#: label on the workload: pods created at or before this time (Unix seconds) are still to be replaced
RESTART_CUTOFF = "rollout-plus.kubectl.io/restart-cutoff"


def cutoff_for(pods: Iterable[Any]) -> datetime | None:
    """The newest creation time among ``pods`` (None for no pods): the restart's cutoff."""
    stamps = [p.metadata.creation_timestamp for p in pods if p.metadata.creation_timestamp is not None]
    return max(stamps) if stamps else None


def predates(pod: Any, cutoff: datetime) -> bool:
    """Whether ``pod`` existed when the restart began (so it is still to be replaced)."""
    created = pod.metadata.creation_timestamp
    return created is None or created <= cutoff


def format_cutoff(cutoff: datetime) -> str:
    return str(int(cutoff.timestamp()))


def recorded_cutoff(workload: Any) -> datetime | None:
    """The cutoff an unfinished restart left on ``workload``, if any; ValueError if it is unreadable."""
    text = (workload.metadata.labels or {}).get(RESTART_CUTOFF)
    if text is None:
        return None
    if not text.isdigit():
        raise ValueError(
            f'label {RESTART_CUTOFF}="{text}" is not a time in seconds since the epoch; '
            "remove it and start the restart afresh"
        )
    return datetime.fromtimestamp(int(text), UTC)


def label_patch(cutoff: datetime | None) -> dict[str, Any]:
    """A merge patch that records ``cutoff`` on the workload, or removes the record (None)."""
    return {"metadata": {"labels": {RESTART_CUTOFF: None if cutoff is None else format_cutoff(cutoff)}}}
