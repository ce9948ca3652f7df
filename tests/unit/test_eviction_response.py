"""Cases built the way the API server builds its answers (pkg/registry/core/pod/storage/eviction.go).

Note that a StatusCause's type travels under the JSON key "reason".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_rollout.eviction.refusal import Refusal, classify_refusal


def status_body(
    code: int,
    message: str,
    *,
    reason: str = "",
    causes: list[dict[str, str]] | None = None,
    retry_after: int | None = None,
) -> str:
    details: dict[str, Any] = {}
    if causes:
        details["causes"] = causes
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": details,
            "code": code,
        }
    )


VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."

CASES = [
    pytest.param(
        429,
        status_body(
            429,
            VIOLATES,
            reason="TooManyRequests",
            causes=[
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget web-pdb needs 3 healthy pods and has 3 currently",
                }
            ],
        ),
        {},
        dict(reason=Refusal.PDB_BLOCKED, pdb_name="web-pdb", healthy=3, needed=3, retry_after=None),
        id="budget-exhausted",
    ),
    pytest.param(
        429,
        status_body(
            429,
            VIOLATES,
            reason="TooManyRequests",
            causes=[
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget db does not allow evicting pods currently "
                    'because it failed sync: found no controllers for pod "db-0"',
                }
            ],
        ),
        {},
        dict(reason=Refusal.PDB_BLOCKED, pdb_name="db", healthy=None, needed=None),
        id="budget-sync-failed",
    ),
    pytest.param(
        429,
        status_body(
            429,
            VIOLATES,
            reason="TooManyRequests",
            retry_after=10,
            causes=[
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget web is still being processed by the server.",
                }
            ],
        ),
        {"Retry-After": "10"},
        dict(reason=Refusal.PDB_STATUS_STALE, pdb_name="web", retry_after=10.0),
        id="budget-status-stale",
    ),
    pytest.param(
        429,
        status_body(429, "Too many requests, please try again later.", reason="TooManyRequests", retry_after=1),
        {"retry-after": "1"},
        dict(reason=Refusal.THROTTLED, retry_after=1.0, pdb_name=None),
        id="api-throttled",
    ),
    pytest.param(
        429,
        status_body(429, "Too many requests, please try again later.", reason="TooManyRequests", retry_after=4),
        {},
        dict(reason=Refusal.THROTTLED, retry_after=4.0),
        id="throttled-retry-after-only-in-details",
    ),
    pytest.param(
        500,
        status_body(
            500, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        ),
        {},
        dict(reason=Refusal.MULTIPLE_PDBS),
        id="several-pdbs",
    ),
    pytest.param(
        404,
        status_body(404, 'pods "web-1" not found', reason="NotFound"),
        {},
        dict(reason=Refusal.POD_GONE),
        id="pod-gone",
    ),
    pytest.param(
        409,
        status_body(409, "Precondition failed: UID in precondition: 1234, UID in object meta: 5678", reason="Conflict"),
        {},
        dict(reason=Refusal.POD_GONE),
        id="pod-replaced-same-name",
    ),
    pytest.param(
        403,
        status_body(
            403,
            'pods "web-1" is forbidden: unable to create new content in namespace shop because it is being terminated',
            reason="Forbidden",
            causes=[{"reason": "NamespaceTerminating", "message": "namespace shop is being terminated"}],
        ),
        {},
        dict(reason=Refusal.NAMESPACE_TERMINATING),
        id="namespace-terminating",
    ),
    pytest.param(
        403,
        status_body(
            403, 'pods "web-1" is forbidden: User "viewer" cannot create resource "pods/eviction"', reason="Forbidden"
        ),
        {},
        dict(reason=Refusal.FORBIDDEN),
        id="rbac",
    ),
    pytest.param(
        403,
        status_body(
            403,
            'poddisruptionbudgets.policy "web" is forbidden: pdb disruptions allowed is negative',
            reason="Forbidden",
        ),
        {},
        dict(reason=Refusal.FORBIDDEN),
        id="negative-disruptions-allowed",
    ),
    pytest.param(
        503,
        "upstream connect error",
        {},
        dict(reason=Refusal.SERVER_UNAVAILABLE, message="upstream connect error"),
        id="not-json",
    ),
    pytest.param(
        # What a kube-apiserver answers while it shuts down: its loopback client is already refused.
        500,
        status_body(
            500,
            'Get "https://127.0.0.1:42113/apis/policy/v1/namespaces/shop/poddisruptionbudgets/web": '
            "dial tcp 127.0.0.1:42113: connect: connection refused",
            reason="InternalError",
        ),
        {},
        dict(reason=Refusal.SERVER_UNAVAILABLE),
        id="server-shutting-down",
    ),
]


@pytest.mark.parametrize(("status", "body", "headers", "expected"), CASES)
def test_classifies_each_answer(status: int, body: str, headers: dict[str, str], expected: dict[str, Any]) -> None:
    refusal = classify_refusal(status, body, headers)
    for field, value in expected.items():
        assert getattr(refusal, field) == value, field


@pytest.mark.parametrize(
    ("reason", "retryable"),
    [
        (Refusal.PDB_BLOCKED, True),
        (Refusal.PDB_STATUS_STALE, True),
        (Refusal.THROTTLED, True),
        (Refusal.NAMESPACE_TERMINATING, True),
        (Refusal.SERVER_UNAVAILABLE, True),
        (Refusal.MULTIPLE_PDBS, False),
        (Refusal.POD_GONE, False),
        (Refusal.FORBIDDEN, False),
        (Refusal.OTHER, False),
    ],
)
def test_only_transient_refusals_are_retryable(reason: Refusal, retryable: bool) -> None:
    from kubectl_rollout.eviction.refusal import EvictionRefusal

    assert EvictionRefusal(reason=reason, status=0, message="").retryable is retryable
