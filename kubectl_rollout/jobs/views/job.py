"""Any job's current state, whatever its kind: the job's own facts (state, paused) and its kind's view.

One fold for every consumer that follows jobs of several kinds (the TUI's Jobs
screen): ``JobStarted`` says the kind, and the body is the drain, rollout or
restart view folded from the same envelopes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.events.job import JobFinished, JobPaused, JobResumed, JobStarted, JobState
from kubectl_rollout.jobs.kinds import KINDS
from kubectl_rollout.jobs.kinds.base import load
from kubectl_rollout.jobs.views import campaign, drain, restart, rollout

KindView = drain.DrainView | rollout.RolloutView | restart.RestartView | campaign.CampaignView


@dataclass(frozen=True)
class _KindViews:
    """Each kind's view and reducer (``JobKindFacts.view``, ``.fold``), loaded once."""

    view_of_kind: dict[str, type]
    kind_of_view: dict[type, str]
    fold_of_view: dict[type, Callable[[Any, Envelope], Any]]


@functools.cache
def _kind_views() -> _KindViews:
    views = {kind: load(facts.view) for kind, facts in KINDS.items()}
    return _KindViews(
        view_of_kind=views,
        kind_of_view={view: kind for kind, view in views.items()},
        fold_of_view={views[kind]: load(facts.fold) for kind, facts in KINDS.items()},
    )


def empty_body(kind: str) -> KindView | None:
    """The empty view of a job of ``kind`` (its facts' ``view``); None for a kind this version does not know."""
    view = _kind_views().view_of_kind.get(kind)
    body: KindView | None = view() if view is not None else None
    return body


#: the kind each event module belongs to (JobKindFacts.event_modules)
_KIND_OF_MODULE = {module: kind for kind, facts in KINDS.items() for module in facts.event_modules}


def kind_of(event: Event) -> str:
    """The kind of job an event belongs to, for a stream without its JobStarted (a recording of an engine alone)."""
    return _KIND_OF_MODULE.get(type(event).__module__.rpartition(".")[2], "")


def _kind_of_body(body: KindView) -> str:
    return _kind_views().kind_of_view.get(type(body), "")


def _fold_body(body: KindView, envelope: Envelope) -> KindView:
    folded: KindView = _kind_views().fold_of_view[type(body)](body, envelope)
    return folded


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


_JOB_EVENTS = (JobStarted, JobPaused, JobResumed, JobFinished)


def _fold_header(view: JobView, envelope: Envelope) -> JobView:
    """The job's own facts after ``envelope`` (the body is left alone)."""
    event = envelope.event
    replace = dataclasses.replace
    view = replace(
        view,
        job=envelope.job,
        last_seq=envelope.seq,
        started_at=view.started_at if view.started_at is not None else envelope.at,
        updated_at=envelope.at,
        state=JobState.RUNNING if view.state is JobState.PENDING else view.state,  # any event means it runs
    )
    if isinstance(event, JobStarted):
        return replace(
            view,
            kind=event.kind,
            target=event.target,
            context=event.context,
            namespace=event.namespace,
            state=JobState.RUNNING,
            resumed=view.resumed or event.resumed,
        )
    if isinstance(event, JobPaused):
        return replace(view, paused=True)
    if isinstance(event, JobResumed):
        return replace(view, paused=False)
    if isinstance(event, JobFinished):
        return replace(view, state=event.state, finished=event, paused=False)
    if not view.kind and (kind := kind_of(event)):
        return replace(view, kind=kind)
    return view


def _body_for(body: KindView | None, kind: str) -> KindView | None:
    """The body to fold into: the one there is, unless the job turned out to be of another kind."""
    if kind and (body is None or _kind_of_body(body) != kind):
        return empty_body(kind) or body
    return body


def fold(view: JobView, envelope: Envelope) -> JobView:
    if envelope.seq <= view.last_seq:
        return view
    header = _fold_header(view, envelope)
    body = _body_for(view.body, header.kind)
    if body is not None:
        body = _fold_body(body, envelope)
    return dataclasses.replace(header, body=body)


def fold_many(view: JobView, envelopes: Iterable[Envelope]) -> JobView:
    """``fold`` over every envelope with the same result, faster: a drain's pods fold as one batch
    (``drain.fold_many``), and the job's own facts change only on the job's own events."""
    fresh = [e for e in envelopes if e.seq > view.last_seq]
    if not fresh:
        return view
    header = view
    for envelope in fresh:
        if isinstance(envelope.event, _JOB_EVENTS) or not header.kind or header.state is JobState.PENDING:
            header = _fold_header(header, envelope)
    last = fresh[-1]
    header = dataclasses.replace(
        header,
        job=last.job,
        last_seq=last.seq,
        updated_at=last.at,
        started_at=header.started_at if header.started_at is not None else fresh[0].at,
    )
    body = _body_for(view.body, header.kind)
    if type(body) is drain.DrainView:  # a campaign's view is a drain's too, but folds its own events
        body = drain.fold_many(body, fresh)
    elif body is not None:
        for envelope in fresh:
            body = _fold_body(body, envelope)
    return dataclasses.replace(header, body=body)


def fold_all(envelopes: Iterable[Envelope], view: JobView | None = None) -> JobView:
    return fold_many(view if view is not None else JobView(), envelopes)
