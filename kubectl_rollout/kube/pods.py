"""Facts about one pod, read from its object: who controls it, whether it is Ready or available,
whether it was deleted long ago. Shared by the drain, the eviction engine, restarts and rollouts."""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any


def qualified(obj: Any) -> str:
    """``namespace/name`` of any namespaced object."""
    return f"{obj.metadata.namespace}/{obj.metadata.name}"


def controller_of(pod: Any) -> Any | None:
    """The owner reference marked ``controller``, or None for a bare pod."""
    for ref in pod.metadata.owner_references or []:
        if ref.controller:
            return ref
    return None


def is_finished(pod: Any) -> bool:
    return pod.status is not None and pod.status.phase in ("Succeeded", "Failed")


def is_daemonset_pod(pod: Any) -> bool:
    ref = controller_of(pod)
    return ref is not None and ref.kind == "DaemonSet" and ref.api_version == "apps/v1"


def deleted_long_ago(pod: Any, timeout_seconds: int, now: datetime) -> bool:
    """kubectl's ``--skip-wait-for-delete-timeout``: deleted more than ``timeout_seconds`` ago."""
    deleted_at = pod.metadata.deletion_timestamp
    return timeout_seconds > 0 and deleted_at is not None and int((now - deleted_at).total_seconds()) > timeout_seconds


class Deletion(enum.Enum):
    """Where a pod that was evicted or deleted stands, as kubectl's waitForDelete sees it."""

    PENDING = "pending"
    GONE = "gone"
    #: --skip-wait-for-delete-timeout: deleted long enough ago that the drain stops waiting for it
    SKIPPED = "skipped"


def deletion_progress(removed_uid: str, current: Any | None, skip_after: int, now: datetime) -> Deletion:
    """Is the pod we removed gone? ``current`` is the pod of that name now (None: not found).

    A namesake with another UID (a StatefulSet's replacement) means ours is gone.
    """
    if current is None or current.metadata.uid != removed_uid:
        return Deletion.GONE
    if deleted_long_ago(current, skip_after, now):
        return Deletion.SKIPPED
    return Deletion.PENDING


def is_ready(pod: Any) -> bool:
    conditions = pod.status.conditions if pod.status else None
    return any(c.type == "Ready" and c.status == "True" for c in conditions or [])


def ready_since(pod: Any) -> datetime | None:
    """When the pod last became Ready, or None when it is not Ready."""
    for condition in (pod.status.conditions if pod.status else None) or []:
        if condition.type == "Ready":
            if condition.status != "True":
                return None
            return condition.last_transition_time or datetime.now(UTC)
    return None


def is_available(pod: Any, min_ready_seconds: int, now: datetime) -> bool:
    """podutil.IsPodAvailable: Ready, not being deleted, and Ready for minReadySeconds."""
    if pod.metadata.deletion_timestamp is not None:
        return False
    since = ready_since(pod)
    return since is not None and (min_ready_seconds == 0 or (now - since).total_seconds() >= min_ready_seconds)
