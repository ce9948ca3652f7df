"""Events that describe a managed workload as its record and ReplicaSets stand: the same for a driver
and for a job that follows another driver. Pure: records and statuses in, events out."""

from __future__ import annotations

from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.rollout import RolloutOutcome, RolloutPhase
from kubectl_rollout.rollout.record import Record
from kubectl_rollout.rollout.state import NEW_RS_AVAILABLE, PAUSED, PROGRESSING, TIMED_OUT, Condition, RolloutStatus

#: the Progressing reasons under which no deadline runs (done, paused, or already exceeded)
_NO_DEADLINE = frozenset({NEW_RS_AVAILABLE, PAUSED, TIMED_OUT})


def deadline_at(record: Record, status: RolloutStatus) -> float | None:
    """When the rollout would exceed its progress deadline without further progress (as has_timed_out counts)."""
    seconds = record.spec.progress_deadline_seconds
    cond = status.condition(PROGRESSING)
    if not seconds or cond is None or record.spec.paused or cond.reason in _NO_DEADLINE:
        return None
    return cond.last_update_time + seconds


def progress_event(
    record: Record, status: RolloutStatus, phase: RolloutPhase, message: str, rows: tuple[ev.ReplicaSetRow, ...]
) -> ev.RolloutProgressed:
    return ev.RolloutProgressed(
        workload=record.name,
        namespace=record.namespace,
        message=message,
        phase=phase,
        generation=record.generation,
        desired=record.spec.replicas,
        updated=status.updated_replicas,
        total=status.replicas,
        available=status.available_replicas,
        paused=record.spec.paused,
        rows=rows,
        progress_deadline_seconds=record.spec.progress_deadline_seconds,
        deadline_at=deadline_at(record, status),
    )


def condition_changes(workload: str, before: RolloutStatus, after: RolloutStatus) -> list[ev.ConditionChanged]:
    """The conditions ``after`` holds with another status, reason or message than ``before``, and those it lost.

    A refreshed lastUpdateTime alone is no change. Condition types other than
    the workload's three (written by hand into the record) are left out.
    """
    changes = []
    for cond in after.conditions:
        old = before.condition(cond.type)
        if old is not None and (old.status, old.reason, old.message) == (cond.status, cond.reason, cond.message):
            continue
        changes += _changed(workload, cond, removed=False)
    for old in before.conditions:
        if after.condition(old.type) is None:
            changes += _changed(workload, old, removed=True)
    return changes


def _changed(workload: str, cond: Condition, *, removed: bool) -> list[ev.ConditionChanged]:
    if cond.type not in set(ev.ConditionType) or cond.status not in set(ev.ConditionStatus):
        return []
    return [
        ev.ConditionChanged(
            workload=workload,
            condition=ev.ConditionType(cond.type),
            status=ev.ConditionStatus(cond.status),
            reason=cond.reason,
            message=cond.message,
            since=cond.last_transition_time,
            removed=removed,
        )
    ]


def outcome_of(phase: RolloutPhase) -> RolloutOutcome:
    if phase is RolloutPhase.DEADLINE_EXCEEDED:
        return RolloutOutcome.DEADLINE_EXCEEDED
    if phase is RolloutPhase.PODS_FAILING:
        return RolloutOutcome.PODS_FAILING
    return RolloutOutcome.COMPLETE
