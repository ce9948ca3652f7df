"""Retrying any API call the server throttled, waiting what it asks.

With API Priority and Fairness or ``--max-requests-inflight``, any request
(a list, a get, a patch) may be answered 429 or 503 with Retry-After. The
kubernetes client does not retry those; this does, with tenacity, never
waiting less than the server asked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import tenacity
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.eviction_response import Refusal, classify_refusal
from kubectl_rollout.retry_policy import RetryPolicy

T = TypeVar("T")
log = logging.getLogger(__name__)

DEFAULT_POLICY = RetryPolicy()
#: Throttling is transient by nature; a call still throttled after this many
#: attempts has a bigger problem than load.
MAX_THROTTLED_ATTEMPTS = 20


def is_throttled(err: BaseException) -> bool:
    return isinstance(err, ApiException) and (
        err.status == 503
        or (err.status == 429 and classify_refusal(err.status, err.body, err.headers).reason is Refusal.THROTTLED)
    )


def throttle_wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    def wait(state: tenacity.RetryCallState) -> float:
        assert state.outcome is not None
        err = state.outcome.exception()
        assert isinstance(err, ApiException)
        # A 503 reads as "other"; both mean "come back later" here.
        refusal = replace(classify_refusal(err.status, err.body, err.headers), reason=Refusal.THROTTLED)
        return policy.delay(refusal, state.attempt_number)

    return wait


def _log_wait(state: tenacity.RetryCallState) -> None:
    assert state.outcome is not None
    assert state.next_action is not None
    err = state.outcome.exception()
    assert isinstance(err, ApiException)
    refusal = classify_refusal(err.status, err.body, err.headers)
    log.info(
        "throttled (%s), Retry-After %s: waiting %.3fs before attempt %d",
        err.status,
        refusal.retry_after,
        state.next_action.sleep,
        state.attempt_number + 1,
        extra={"retry_after": refusal.retry_after, "wait": state.next_action.sleep},
    )


def call_with_retry(func: Callable[..., T], *args: Any, policy: RetryPolicy = DEFAULT_POLICY, **kwargs: Any) -> T:
    """Call ``func``; on a throttling answer wait (Retry-After at least) and call again."""
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_throttled),
        wait=throttle_wait(policy),
        stop=tenacity.stop_after_attempt(MAX_THROTTLED_ATTEMPTS),
        before_sleep=_log_wait,
        reraise=True,
    )
    return retrying(func, *args, **kwargs)
