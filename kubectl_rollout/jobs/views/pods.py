"""The state of each pod a job evicts, folded from the eviction events that drain and restart share."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass

from kubectl_rollout.jobs.events import eviction as ev
from kubectl_rollout.jobs.events.base import Event, PodRef


class PodState(enum.StrEnum):
    PENDING = "pending"
    EVICTING = "evicting"
    BLOCKED = "blocked"
    #: the eviction was accepted; the pod is shutting down
    TERMINATING = "terminating"
    GONE = "gone"
    #: a restart saw the workload whole again after this pod went
    REPLACED = "replaced"
    FAILED = "failed"


#: states a pod never leaves
FINAL_STATES = frozenset({PodState.GONE, PodState.REPLACED, PodState.FAILED})


@dataclass(frozen=True, kw_only=True)
class Blocker:
    """Why a pod's eviction waits, as the last refusal said."""

    reason: ev.BlockReason
    message: str
    pdb: str | None = None
    healthy: int | None = None
    needed: int | None = None
    #: the pods the PDB selects, when known
    expected: int | None = None
    since: float = 0.0
    #: the latest time of the next attempt (epoch seconds)
    next_try_by: float = 0.0
    retry_after: float | None = None


@dataclass(frozen=True, kw_only=True)
class PodView:
    pod: PodRef
    state: PodState = PodState.PENDING
    attempts: int = 0
    blocker: Blocker | None = None
    failure: str = ""
    #: seconds from the first eviction attempt until the pod was gone
    gone_after: float | None = None


def fold_pod(pods: Mapping[str, PodView], event: Event) -> Mapping[str, PodView] | None:
    """The pods after an eviction event; None when ``event`` is not one (the caller folds it)."""
    if not isinstance(
        event,
        ev.EvictionStarted | ev.EvictionBlocked | ev.PodEvicted | ev.PodGone | ev.PodSkippedWaiting | ev.PodFailed,
    ):
        return None
    key = str(event.pod)
    before = pods.get(key) or PodView(pod=event.pod)
    after = _next(before, event)
    if after == before and key in pods:
        return pods
    changed = dict(pods)
    changed[key] = after
    return changed


def _next(view: PodView, event: Event) -> PodView:
    if isinstance(event, ev.EvictionStarted):
        return dataclasses.replace(view, state=PodState.EVICTING, attempts=max(view.attempts, event.attempt))
    if isinstance(event, ev.EvictionBlocked):
        blocker = Blocker(
            reason=event.reason,
            message=event.message,
            pdb=event.pdb,
            healthy=event.healthy,
            needed=event.needed,
            expected=event.expected,
            since=event.since,
            next_try_by=event.next_try_by,
            retry_after=event.retry_after,
        )
        return dataclasses.replace(
            view, state=PodState.BLOCKED, attempts=max(view.attempts, event.attempts), blocker=blocker
        )
    if isinstance(event, ev.PodEvicted):
        return dataclasses.replace(view, state=PodState.TERMINATING, blocker=None)
    if isinstance(event, ev.PodGone):
        return dataclasses.replace(view, state=PodState.GONE, blocker=None, gone_after=event.after)
    if isinstance(event, ev.PodSkippedWaiting):
        return dataclasses.replace(view, state=PodState.GONE, blocker=None)
    if isinstance(event, ev.PodFailed):
        return dataclasses.replace(view, state=PodState.FAILED, blocker=None, failure=event.reason)
    return view


def count_states(pods: Mapping[str, PodView]) -> dict[PodState, int]:
    counts = dict.fromkeys(PodState, 0)
    for pod in pods.values():
        counts[pod.state] += 1
    return counts
