"""Any job's current state, whatever its kind: the job's own facts (state, paused) and its kind's view.

One fold for every consumer that follows jobs of several kinds (the TUI's Jobs
screen): ``JobStarted`` says the kind, and the body is the drain, rollout or
restart view folded from the same envelopes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.events.job import JobFinished, JobPaused, JobResumed, JobStarted, JobState
from kubectl_rollout.jobs.views import drain, restart, rollout

KindView = drain.DrainView | rollout.RolloutView | restart.RestartView


def empty_body(kind: str) -> KindView | None:
    """The empty view of a job of ``kind`` (drain, rollout, restart); None for a kind this version does not know."""
    if kind == "drain":
        return drain.DrainView()
    if kind == "rollout":
        return rollout.RolloutView()
    if kind == "restart":
        return restart.RestartView()
    return None


def kind_of(event: Event) -> str:
    """The kind of job an event belongs to, for a stream without its JobStarted (a recording of an engine alone)."""
    module = type(event).__module__.rpartition(".")[2]
    return {"rollout": "rollout", "restart": "restart", "drain": "drain", "eviction": "drain"}.get(module, "")


def _fold_body(body: KindView, envelope: Envelope) -> KindView:
    if isinstance(body, drain.DrainView):
        return drain.fold(body, envelope)
    if isinstance(body, rollout.RolloutView):
        return rollout.fold(body, envelope)
    return restart.fold(body, envelope)


@dataclass(frozen=True, kw_only=True)
class JobView:
    job: str = ""
    kind: str = ""
    target: str = ""
    context: str | None = None
    namespace: str | None = None
    state: JobState = JobState.PENDING
    paused: bool = False
    resumed: bool = False
    #: the time of its first event (epoch seconds)
    started_at: float | None = None
    #: the time of its latest event
    updated_at: float | None = None
    finished: JobFinished | None = None
    last_seq: int = 0
    body: KindView | None = None


def new_view(*, job: str = "", kind: str = "") -> JobView:
    """The view before any event, when the job's kind is known already (from the agent's job list)."""
    return JobView(job=job, kind=kind, body=empty_body(kind))


def fold(view: JobView, envelope: Envelope) -> JobView:
    if envelope.seq <= view.last_seq:
        return view
    event = envelope.event
    replace = dataclasses.replace
    view = replace(
        view,
        job=envelope.job,
        last_seq=envelope.seq,
        started_at=view.started_at if view.started_at is not None else envelope.at,
        updated_at=envelope.at,
    )
    if view.state is JobState.PENDING:
        view = replace(view, state=JobState.RUNNING)  # any event means it runs
    if isinstance(event, JobStarted):
        body = view.body if view.kind == event.kind and view.body is not None else empty_body(event.kind)
        view = replace(
            view,
            kind=event.kind,
            target=event.target,
            context=event.context,
            namespace=event.namespace,
            state=JobState.RUNNING,
            resumed=view.resumed or event.resumed,
            body=body,
        )
    elif isinstance(event, JobPaused):
        view = replace(view, paused=True)
    elif isinstance(event, JobResumed):
        view = replace(view, paused=False)
    elif isinstance(event, JobFinished):
        view = replace(view, state=event.state, finished=event, paused=False)
    elif view.body is None and (kind := kind_of(event)):
        view = replace(view, kind=view.kind or kind, body=empty_body(kind), state=JobState.RUNNING)
    if view.body is not None:
        view = replace(view, body=_fold_body(view.body, envelope))
    return view


def fold_all(envelopes: Iterable[Envelope], view: JobView | None = None) -> JobView:
    result = view if view is not None else JobView()
    for envelope in envelopes:
        result = fold(result, envelope)
    return result
