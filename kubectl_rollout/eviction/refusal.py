"""What an answer of the Eviction API means, so the engine can pick one behaviour per case.

The API server (pkg/registry/core/pod/storage/eviction.go) answers a refused
eviction in ways that look alike but call for different handling:

* 429 with a ``DisruptionBudget`` cause and no Retry-After: a PDB allows no
  disruption right now; the cause's message reads "The disruption budget NAME
  needs N healthy pods and has M currently". Waiting a fixed time is pointless;
  watch the PDB until ``status.disruptionsAllowed > 0``.
* 429 with a ``DisruptionBudget`` cause and ``Retry-After: 10``: the PDB's
  status is older than its spec (the disruption controller has not caught up).
* 429 without that cause, with Retry-After: API throttling (max-inflight or
  priority and fairness). Wait what the server asks.
* 500 "more than one PodDisruptionBudget": a misconfiguration; retrying cannot
  help. The answer does not name the PDBs, the caller has to look them up.
* 404, or 409 on the UID precondition: the pod we meant is gone: done.
* 403 with a ``NamespaceTerminating`` cause: the namespace is being deleted.

This module only reads answers; it makes no requests.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kubectl_rollout.kube.api_retry import retry_after_seconds

DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"

_NEEDS_HEALTHY = re.compile(
    r"The disruption budget (?P<name>\S+) needs (?P<needed>\d+) healthy pods and has (?P<healthy>\d+) currently"
)
_BUDGET_NAME = re.compile(r"The disruption budget (?P<name>\S+) ")
_STILL_PROCESSING = "is still being processed by the server"
_SEVERAL_PDBS = "more than one PodDisruptionBudget"


class Refusal(enum.Enum):
    """Why the API server did not evict the pod."""

    PDB_BLOCKED = "pdb-blocked"
    PDB_STATUS_STALE = "pdb-status-stale"
    THROTTLED = "throttled"
    MULTIPLE_PDBS = "multiple-pdbs"
    POD_GONE = "pod-gone"
    NAMESPACE_TERMINATING = "namespace-terminating"
    #: 500, 502, 503 or 504: an API server shutting down or starting (it answers
    #: "connection refused" from its own loopback client), or a proxy before it
    SERVER_UNAVAILABLE = "server-unavailable"
    FORBIDDEN = "forbidden"
    OTHER = "other"


@dataclass(frozen=True, kw_only=True)
class EvictionRefusal:
    reason: Refusal
    status: int
    message: str
    #: the PDB named by a DisruptionBudget cause
    pdb_name: str | None = None
    #: "has M currently" / "needs N healthy pods", when the cause says so
    healthy: int | None = None
    needed: int | None = None
    #: seconds, from the Retry-After header or the status details
    retry_after: float | None = None
    cause_message: str | None = None

    @property
    def retryable(self) -> bool:
        return self.reason in (
            Refusal.PDB_BLOCKED,
            Refusal.PDB_STATUS_STALE,
            Refusal.THROTTLED,
            Refusal.NAMESPACE_TERMINATING,
            Refusal.SERVER_UNAVAILABLE,
        )


def classify_refusal(status: int, body: str | bytes | None, headers: Mapping[str, str] | None) -> EvictionRefusal:
    """Read an error answer of ``POST pods/NAME/eviction``."""
    try:
        document = json.loads(body or "{}")
    except (TypeError, ValueError):
        document = {}
    if not isinstance(document, dict):
        document = {}
    message = str(document.get("message") or body or "")
    details = document.get("details") or {}
    causes = details.get("causes") or []
    retry_after = retry_after_seconds(headers, details)

    # metav1.StatusCause serialises its Type field under the JSON key "reason".
    budget_causes = [c for c in causes if c.get("reason") == DISRUPTION_BUDGET_CAUSE]
    if status == 429 and budget_causes:
        cause = str(budget_causes[0].get("message", ""))
        found = _NEEDS_HEALTHY.search(cause)
        named = found or _BUDGET_NAME.search(cause)
        return EvictionRefusal(
            reason=Refusal.PDB_STATUS_STALE if _STILL_PROCESSING in cause else Refusal.PDB_BLOCKED,
            status=status,
            message=message,
            pdb_name=named.group("name") if named else None,
            healthy=int(found.group("healthy")) if found else None,
            needed=int(found.group("needed")) if found else None,
            retry_after=retry_after,
            cause_message=cause,
        )
    if status == 429:
        return EvictionRefusal(reason=Refusal.THROTTLED, status=status, message=message, retry_after=retry_after)
    if status == 500 and _SEVERAL_PDBS in message:
        return EvictionRefusal(reason=Refusal.MULTIPLE_PDBS, status=status, message=message)
    if status in (500, 502, 503, 504):
        return EvictionRefusal(
            reason=Refusal.SERVER_UNAVAILABLE, status=status, message=message, retry_after=retry_after
        )
    if status == 404 or (status == 409 and "UID" in message):
        return EvictionRefusal(reason=Refusal.POD_GONE, status=status, message=message)
    if status == 403 and any(c.get("reason") == NAMESPACE_TERMINATING_CAUSE for c in causes):
        return EvictionRefusal(
            reason=Refusal.NAMESPACE_TERMINATING, status=status, message=message, retry_after=retry_after
        )
    if status == 403:
        return EvictionRefusal(reason=Refusal.FORBIDDEN, status=status, message=message)
    return EvictionRefusal(reason=Refusal.OTHER, status=status, message=message, retry_after=retry_after)
