"""A rollout job's current state, folded from its events: ``fold(view, envelope) -> view``.

Pure and total: any envelope folds (events of other jobs' kinds only advance
``last_seq``), an envelope at or below ``last_seq`` changes nothing (replaying
a journal twice is harmless), and the view is frozen, so a consumer can keep
the previous one and compare.

ReplicaSet rows come whole with each ``RolloutProgressed``; between two of
them, the driver's actions (created, scaled, revision assigned, deleted) are
applied to the rows as they arrive (``rows_after``), so the view never lags
what the driver already did. The actions since the last report form the pass
under way (``pass_actions``); the report closes it (``closed_pass``), so a
printer can say what led to the state it prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.views.canary import CANARY_EVENTS, CanaryView, fold_canary

#: how many of the latest actions a view keeps
MAX_ACTIONS = 50

#: the events a view lists as actions: what was done, or what happened to the rollout
ACTION_TYPES: tuple[type[Event], ...] = (
    ev.SpecChanged,
    ev.ReplicaSetCreated,
    ev.ReplicaSetScaled,
    ev.RevisionAssigned,
    ev.ReplicaSetDeleted,
    ev.ScaleDownHeldByPdb,
    ev.DeadlineExceeded,
    ev.NewPodsFailing,
    ev.RollingBack,
    ev.RolledBack,
    ev.FollowingDriver,
    ev.TookOver,
)


@dataclass(frozen=True, kw_only=True)
class ConditionView:
    status: ev.ConditionStatus
    reason: str
    message: str = ""
    #: lastTransitionTime (epoch seconds)
    since: float = 0.0


@dataclass(frozen=True, kw_only=True)
class RolloutView:
    job: str = ""
    workload: str = ""
    namespace: str = ""
    #: the workload's ReplicaSets, newest revision first
    rows: tuple[ev.ReplicaSetRow, ...] = ()
    conditions: Mapping[ev.ConditionType, ConditionView] = field(default_factory=dict)
    #: kubectl rollout status' line, and the phase it stands for (None until the first progress)
    message: str = ""
    phase: ev.RolloutPhase | None = None
    generation: int = 0
    #: the workload's desired replicas, as the latest progress report gave them
    desired: int = 0
    #: spec.progressDeadlineSeconds, and when it runs out without progress (None: no deadline runs)
    progress_deadline_seconds: int | None = None
    deadline_at: float | None = None
    paused: bool = False
    #: the latest spec change the job recorded
    spec_change: ev.SpecChanged | None = None
    #: the PDB hold on the old ReplicaSets' scale-down, while it lasts
    held_by_pdb: ev.ScaleDownHeldByPdb | None = None
    #: the new pod that fails the rollout, if one does
    failing: ev.NewPodsFailing | None = None
    #: --auto-rollback under way
    rolling_back: ev.RollingBack | None = None
    #: the driver this job follows (its holder; "" when unknown), None while this job drives or before
    following: str | None = None
    #: the latest MAX_ACTIONS action events, oldest first
    actions: tuple[Envelope, ...] = ()
    #: the driver's ReplicaSet actions since the latest RolloutProgressed: the pass under way
    pass_actions: tuple[ev.ReplicaSetAction, ...] = ()
    #: the actions of the pass the latest RolloutProgressed (or RolloutFinished) closed: what led to that state
    closed_pass: tuple[ev.ReplicaSetAction, ...] = ()
    #: the latest state line while this job drove ("" again once it takes over from another driver)
    own_message: str = ""
    #: the latest state line while this job followed another driver
    followed_message: str = ""
    finished: ev.RolloutFinished | None = None
    #: the canary's steps, where this job's events left them (None: no canary event in this job)
    canary: CanaryView | None = None
    last_seq: int = 0

    def condition(self, kind: ev.ConditionType) -> ConditionView | None:
        return self.conditions.get(kind)

    @property
    def done(self) -> bool:
        return self.finished is not None

    @property
    def succeeded(self) -> bool | None:
        """None while the job runs."""
        return None if self.finished is None else self.finished.succeeded

    def row(self, name: str) -> ev.ReplicaSetRow | None:
        return next((r for r in self.rows if r.name == name), None)


def _sorted(rows: list[ev.ReplicaSetRow]) -> tuple[ev.ReplicaSetRow, ...]:
    return tuple(sorted(rows, key=lambda r: (-r.revision, r.name)))


def rows_after(rows: tuple[ev.ReplicaSetRow, ...], action: ev.ReplicaSetAction) -> tuple[ev.ReplicaSetRow, ...]:
    """The ReplicaSet rows once ``action`` is done (ahead of the ReplicaSet controller: counts stay)."""
    if isinstance(action, ev.ReplicaSetCreated):
        if any(r.name == action.name for r in rows):
            return rows
        others = [dataclasses.replace(r, updated=False) for r in rows]
        created = ev.ReplicaSetRow(name=action.name, revision=action.revision, desired=action.replicas, updated=True)
        return _sorted([*others, created])
    if isinstance(action, ev.ReplicaSetScaled):
        return tuple(dataclasses.replace(r, desired=action.to_replicas) if r.name == action.name else r for r in rows)
    if isinstance(action, ev.RevisionAssigned):
        return _sorted(
            [
                dataclasses.replace(r, revision=action.revision, updated=True)
                if r.name == action.name
                else dataclasses.replace(r, updated=False)
                for r in rows
            ]
        )
    return tuple(r for r in rows if r.name != action.name)


def _hold_over(view: RolloutView, hold: ev.ScaleDownHeldByPdb) -> bool:
    """Every ReplicaSet the PDBs held back has since shrunk as far as the plan wanted then."""
    return all((row := view.row(h.name)) is None or row.desired <= h.wanted for h in hold.held)


def fold(view: RolloutView, envelope: Envelope) -> RolloutView:
    """``view`` with ``envelope`` applied."""
    if envelope.seq <= view.last_seq:
        return view
    view = dataclasses.replace(view, job=envelope.job, last_seq=envelope.seq)
    event = envelope.event
    if isinstance(event, ACTION_TYPES):
        actions = view.actions
        key = event.coalesce_key()
        if key is not None:
            # A PDB still holding the scale-down supersedes its earlier hold here as on the wire: a client
            # sent the backlog coalesced (attach ``coalesce``, or ``lagged``) must end at this same view.
            actions = tuple(a for a in actions if a.event.coalesce_key() != key)
        view = dataclasses.replace(view, actions=(*actions, envelope)[-MAX_ACTIONS:])
    if isinstance(event, CANARY_EVENTS):
        return dataclasses.replace(view, canary=fold_canary(view.canary, event, at=envelope.at))
    return _apply(view, event)


def fold_all(envelopes: Iterable[Envelope], view: RolloutView | None = None) -> RolloutView:
    result = view if view is not None else RolloutView()
    for envelope in envelopes:
        result = fold(result, envelope)
    return result


def _apply(view: RolloutView, event: Event) -> RolloutView:
    replace = dataclasses.replace
    if isinstance(event, ev.SpecChanged):
        return replace(
            view, workload=event.workload, namespace=event.namespace, spec_change=event, generation=event.generation
        )
    if isinstance(event, ev.ReplicaSetCreated | ev.RevisionAssigned | ev.ReplicaSetDeleted):
        return replace(view, rows=rows_after(view.rows, event), pass_actions=(*view.pass_actions, event))
    if isinstance(event, ev.ReplicaSetScaled):
        view = replace(view, rows=rows_after(view.rows, event), pass_actions=(*view.pass_actions, event))
        if view.held_by_pdb is not None and _hold_over(view, view.held_by_pdb):
            view = replace(view, held_by_pdb=None)
        return view
    if isinstance(event, ev.ScaleDownHeldByPdb):
        return replace(view, held_by_pdb=event)
    if isinstance(event, ev.ConditionChanged):
        conditions = {k: v for k, v in view.conditions.items() if k is not event.condition}
        if not event.removed:
            conditions[event.condition] = ConditionView(
                status=event.status, reason=event.reason, message=event.message, since=event.since
            )
        return replace(view, conditions=conditions)
    if isinstance(event, ev.NewPodsFailing):
        return replace(view, failing=event)
    if isinstance(event, ev.RollingBack):
        return replace(view, rolling_back=event, failing=None, generation=event.generation)
    if isinstance(event, ev.RolledBack):
        return replace(view, rolling_back=None)
    if isinstance(event, ev.RolloutProgressed):
        done = event.phase is ev.RolloutPhase.COMPLETE
        following = view.following is not None
        return replace(
            view,
            workload=event.workload,
            namespace=event.namespace,
            message=event.message,
            own_message=view.own_message if following else event.message,
            followed_message=event.message if following else view.followed_message,
            pass_actions=(),
            closed_pass=view.pass_actions,
            phase=event.phase,
            generation=event.generation,
            desired=event.desired,
            progress_deadline_seconds=event.progress_deadline_seconds,
            deadline_at=event.deadline_at,
            paused=event.paused,
            rows=event.rows,
            held_by_pdb=None if done else view.held_by_pdb,
        )
    if isinstance(event, ev.FollowingDriver):
        return replace(view, workload=event.workload, following=event.holder)
    if isinstance(event, ev.TookOver):
        return replace(view, following=None, own_message="")
    if isinstance(event, ev.RolloutFinished):
        return replace(
            view,
            workload=event.workload or view.workload,
            namespace=event.namespace or view.namespace,
            finished=event,
            following=None,
            pass_actions=(),
            closed_pass=view.pass_actions,
            held_by_pdb=None,
            paused=event.paused,
        )
    return view
