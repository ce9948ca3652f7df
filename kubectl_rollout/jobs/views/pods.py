"""The state of each pod a job evicts, folded from the eviction events that drain and restart share."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubectl_rollout.jobs.events import eviction as eviction_events
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

#: how much a pod in each state needs a person's eyes, most first: what holds the job up, then what moves, then
#: what waits its turn, then what is nearly done, then what is done
ATTENTION: Mapping[PodState, int] = {
    PodState.BLOCKED: 0,
    PodState.FAILED: 1,
    PodState.EVICTING: 2,
    PodState.PENDING: 3,
    PodState.TERMINATING: 4,
    PodState.GONE: 5,
    PodState.REPLACED: 5,
}


def by_attention(pods: Iterable[PodView]) -> list[PodView]:
    """``pods`` grouped by ``ATTENTION``, each group in the order given (a pod moves only when its state
    changes group, so rows do not jump about at every event). One pass: a 5000-pod drain is ordered at
    every flush."""
    groups: list[list[PodView]] = [[] for _ in range(max(ATTENTION.values()) + 1)]
    for pod in pods:
        groups[ATTENTION[pod.state]].append(pod)
    return [pod for group in groups for pod in group]


@dataclass(frozen=True, kw_only=True)
class Blocker:
    """Why a pod's eviction waits, as the last refusal said."""

    reason: eviction_events.BlockReason
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


POD_EVENTS = (
    eviction_events.EvictionStarted,
    eviction_events.EvictionBlocked,
    eviction_events.PodEvicted,
    eviction_events.PodGone,
    eviction_events.PodSkippedWaiting,
    eviction_events.PodFailed,
)


def fold_pod_into(pods: dict[str, PodView], event: Event) -> bool:
    """Apply an eviction event to ``pods`` in place (a caller's private copy); False when it is not one.

    For folding many events at once: one copy of the pods for the whole batch instead of one per event.
    """
    if not isinstance(event, POD_EVENTS):
        return False
    key = str(event.pod)
    pods[key] = _next(pods.get(key) or PodView(pod=event.pod), event)
    return True


def fold_pod(pods: Mapping[str, PodView], event: Event) -> Mapping[str, PodView] | None:
    """The pods after an eviction event; None when ``event`` is not one (the caller folds it)."""
    if not isinstance(event, POD_EVENTS):
        return None
    key = str(event.pod)
    before = pods.get(key) or PodView(pod=event.pod)
    after = _next(before, event)
    if after == before and key in pods:
        return pods
    changed = dict(pods)
    changed[key] = after
    return changed


def _with(
    view: PodView,
    state: PodState,
    *,
    attempts: int | None = None,
    blocker: Blocker | None = None,
    failure: str | None = None,
    gone_after: float | None = None,
) -> PodView:
    """``view`` with a new state (built directly: dataclasses.replace costs three times as much, per event)."""
    return PodView(
        pod=view.pod,
        state=state,
        attempts=view.attempts if attempts is None else attempts,
        blocker=blocker,
        failure=view.failure if failure is None else failure,
        gone_after=view.gone_after if gone_after is None else gone_after,
    )


def _next(view: PodView, event: Event) -> PodView:
    if isinstance(event, eviction_events.EvictionStarted):
        return _with(view, PodState.EVICTING, attempts=max(view.attempts, event.attempt), blocker=view.blocker)
    if isinstance(event, eviction_events.EvictionBlocked):
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
        return _with(view, PodState.BLOCKED, attempts=max(view.attempts, event.attempts), blocker=blocker)
    if isinstance(event, eviction_events.PodEvicted):
        return _with(view, PodState.TERMINATING)
    if isinstance(event, eviction_events.PodGone):
        return _with(view, PodState.GONE, gone_after=event.after)
    if isinstance(event, eviction_events.PodSkippedWaiting):
        return _with(view, PodState.GONE)
    if isinstance(event, eviction_events.PodFailed):
        return _with(view, PodState.FAILED, failure=event.reason)
    return view


def with_pdb_pods(
    known: Mapping[str, eviction_events.PdbPodsUnhealthy], event: eviction_events.PdbPodsUnhealthy
) -> Mapping[str, eviction_events.PdbPodsUnhealthy]:
    """The unhealthy pods per PDB after ``event`` (the newest report of a PDB replaces the one before)."""
    changed = dict(known)
    changed[event.pdb] = event
    return changed
