"""How long to wait before the next eviction attempt, case by case.

Pure arithmetic, shared by the drain engine (through tenacity) and tested with
plain tables:

* a PDB with no room (429, DisruptionBudget cause, no Retry-After): the engine
  retries as soon as the PDB's watch shows ``disruptionsAllowed > 0``; the delay
  computed here is only the safety net, a capped exponential backoff with
  jitter, in case a watch event is missed;
* Retry-After present (stale PDB status, API throttling): wait what the server
  asks, never less; jitter only adds, so a herd of clients spreads out;
* a terminating namespace: back off like kubectl's fixed retries, but growing;
* a 5xx answer (an API server shutting down or starting): back off, capped
  low (``max_server_backoff``) so that the drain goes on soon after the server
  is back;
* anything else is not retried.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from kubectl_rollout.eviction.refusal import EvictionRefusal, Refusal


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    #: first safety-net wait, doubled per attempt up to ``max_backoff``
    initial_backoff: float = 1.0
    max_backoff: float = 30.0
    #: fraction added at random (0..jitter) to every wait
    jitter: float = 0.2
    #: a 429 without Retry-After that is not a PDB: assume the API server's own default
    default_throttle_wait: float = 1.0
    #: the cap of the backoff after a 5xx answer
    max_server_backoff: float = 4.0
    #: 5xx answers in a row for one pod before it fails (about two minutes at the cap)
    max_server_errors: int = 30

    def backoff(self, attempt: int) -> float:
        """Attempt 1 is the first retry."""
        return float(min(self.max_backoff, self.initial_backoff * 2.0 ** max(0, attempt - 1)))

    def delay(self, refusal: EvictionRefusal, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1``; raises ValueError for non-retryable refusals."""
        spread = 1.0 + (rng or random).uniform(0.0, self.jitter)
        if refusal.reason in (Refusal.PDB_STATUS_STALE, Refusal.THROTTLED) or refusal.retry_after:
            floor = refusal.retry_after if refusal.retry_after is not None else self.default_throttle_wait
            return floor * spread
        if refusal.reason in (Refusal.PDB_BLOCKED, Refusal.NAMESPACE_TERMINATING):
            return self.backoff(attempt) * spread
        if refusal.reason is Refusal.SERVER_UNAVAILABLE:
            return min(self.max_server_backoff, self.backoff(attempt)) * spread
        raise ValueError(f"{refusal.reason.value} is not retried")
