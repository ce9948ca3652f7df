"""Retrying any API call the server throttled, waiting what it asks.

With API Priority and Fairness or ``--max-requests-inflight``, any request
(a list, a get, a patch) may be answered 429 or 503 with Retry-After. The
kubernetes client does not retry those; this does, with tenacity, never
waiting less than the server asked.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import tenacity
from kubernetes.client.exceptions import ApiException

T = TypeVar("T")
log = logging.getLogger(__name__)

#: Throttling is transient by nature; a call still throttled after this many
#: attempts has a bigger problem than load.
MAX_THROTTLED_ATTEMPTS = 20
#: a 429 or 503 without Retry-After: assume the API server's own default
DEFAULT_THROTTLE_WAIT = 1.0
#: fraction added at random (0..JITTER) to every wait, so that a herd of clients spreads out
JITTER = 0.2


def retry_after_seconds(headers: Mapping[str, str] | None, details: Mapping[str, Any] | None = None) -> float | None:
    """Seconds the server asked us to wait: the Retry-After header, else ``details.retryAfterSeconds``."""
    for key, value in (headers or {}).items():
        if key.lower() == "retry-after":
            try:
                return float(value)
            except ValueError:
                # An HTTP date is legal too; the API server never sends one.
                return None
    seconds = (details or {}).get("retryAfterSeconds")
    return float(seconds) if seconds else None


def _details(body: str | bytes | None) -> Mapping[str, Any]:
    try:
        document = json.loads(body or "{}")
    except (TypeError, ValueError):
        return {}
    details = document.get("details") if isinstance(document, dict) else None
    return details if isinstance(details, dict) else {}


def is_throttled(err: BaseException) -> bool:
    """429 (max-inflight, priority and fairness) or 503: come back later.

    Only the Eviction API answers 429 for a PodDisruptionBudget, and evictions
    have their own engine (``kubectl_rollout.eviction``); no call made through
    here can mean a budget.
    """
    return isinstance(err, ApiException) and err.status in (429, 503)


def throttle_wait(err: ApiException, rng: random.Random | None = None) -> float:
    """Never less than the server asked; jitter only adds."""
    floor = retry_after_seconds(err.headers, _details(err.body))
    return (floor if floor is not None else DEFAULT_THROTTLE_WAIT) * (1.0 + (rng or random).uniform(0.0, JITTER))


def _wait(state: tenacity.RetryCallState) -> float:
    assert state.outcome is not None
    err = state.outcome.exception()
    assert isinstance(err, ApiException)
    return throttle_wait(err)


def _log_wait(state: tenacity.RetryCallState) -> None:
    assert state.outcome is not None
    assert state.next_action is not None
    err = state.outcome.exception()
    assert isinstance(err, ApiException)
    retry_after = retry_after_seconds(err.headers, _details(err.body))
    log.info(
        "throttled (%s), Retry-After %s: waiting %.3fs before attempt %d",
        err.status,
        retry_after,
        state.next_action.sleep,
        state.attempt_number + 1,
        extra={"retry_after": retry_after, "wait": state.next_action.sleep},
    )


def call_with_retry(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call ``func``; on a throttling answer wait (Retry-After at least) and call again."""
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_throttled),
        wait=_wait,
        stop=tenacity.stop_after_attempt(MAX_THROTTLED_ATTEMPTS),
        before_sleep=_log_wait,
        reraise=True,
    )
    return retrying(func, *args, **kwargs)
