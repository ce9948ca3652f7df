from __future__ import annotations

import random

import pytest

from kubectl_rollout.eviction.refusal import EvictionRefusal, Refusal
from kubectl_rollout.eviction.retry_policy import RetryPolicy

POLICY = RetryPolicy(initial_backoff=1.0, max_backoff=30.0, jitter=0.2, default_throttle_wait=1.0)


def refusal(reason: Refusal, retry_after: float | None = None) -> EvictionRefusal:
    return EvictionRefusal(reason=reason, status=429, message="", retry_after=retry_after)


@pytest.mark.parametrize(
    ("reason", "retry_after", "attempt", "low", "high"),
    [
        # PDB with no room: a safety-net backoff, doubling, capped, jittered upwards only.
        (Refusal.PDB_BLOCKED, None, 1, 1.0, 1.2),
        (Refusal.PDB_BLOCKED, None, 2, 2.0, 2.4),
        (Refusal.PDB_BLOCKED, None, 3, 4.0, 4.8),
        (Refusal.PDB_BLOCKED, None, 5, 16.0, 19.2),
        (Refusal.PDB_BLOCKED, None, 6, 30.0, 36.0),
        (Refusal.PDB_BLOCKED, None, 40, 30.0, 36.0),
        # Retry-After is a floor, whatever the attempt.
        (Refusal.PDB_STATUS_STALE, 10.0, 1, 10.0, 12.0),
        (Refusal.PDB_STATUS_STALE, 10.0, 9, 10.0, 12.0),
        (Refusal.THROTTLED, 1.0, 1, 1.0, 1.2),
        (Refusal.THROTTLED, 4.0, 3, 4.0, 4.8),
        (Refusal.THROTTLED, None, 1, 1.0, 1.2),
        # A PDB refusal that does carry Retry-After honours it.
        (Refusal.PDB_BLOCKED, 5.0, 1, 5.0, 6.0),
        (Refusal.NAMESPACE_TERMINATING, None, 2, 2.0, 2.4),
        # A server shutting down or starting (5xx): the same backoff, capped low.
        (Refusal.SERVER_UNAVAILABLE, None, 1, 1.0, 1.2),
        (Refusal.SERVER_UNAVAILABLE, None, 3, 4.0, 4.8),
        (Refusal.SERVER_UNAVAILABLE, None, 20, 4.0, 4.8),
    ],
)
def test_delay(reason: Refusal, retry_after: float | None, attempt: int, low: float, high: float) -> None:
    for seed in range(50):
        delay = POLICY.delay(refusal(reason, retry_after), attempt, random.Random(seed))
        assert low <= delay <= high


@pytest.mark.parametrize("reason", [Refusal.MULTIPLE_PDBS, Refusal.POD_GONE, Refusal.FORBIDDEN, Refusal.OTHER])
def test_non_retryable_refusals_have_no_delay(reason: Refusal) -> None:
    with pytest.raises(ValueError, match="not retried"):
        POLICY.delay(refusal(reason), 1)


def test_never_less_than_retry_after_even_without_jitter() -> None:
    policy = RetryPolicy(jitter=0.0)
    assert policy.delay(refusal(Refusal.THROTTLED, 7.0), 1) == 7.0
