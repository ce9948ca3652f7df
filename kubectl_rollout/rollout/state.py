"""A managed workload's status and conditions, computed as the Deployment controller computes them.

Ported from the behaviour of pkg/controller/deployment (sync.go calculateStatus,
progress.go syncRolloutStatus, util: SetDeploymentCondition, DeploymentComplete,
DeploymentProgressing, DeploymentTimedOut), and kubectl's rollout status
wording (pkg/polymorphichelpers/rollout_status.go). Pure: ReplicaSet views and
times in, a status out. Its JSON form is a Deployment's status.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubectl_rollout.jobs.events.rollout import RolloutPhase
from kubectl_rollout.rollout.replica_math import max_unavailable

PROGRESSING = "Progressing"
AVAILABLE = "Available"
REPLICA_FAILURE = "ReplicaFailure"

# Reasons, as deployment_util.go names them.
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_UNAVAILABLE = "MinimumReplicasUnavailable"
FAILED_RS_CREATE = "ReplicaSetCreateError"
# Beyond the controller: new pods that cannot start fail the rollout fast.
PODS_FAILING = "NewPodsFailing"


@dataclass(frozen=True, kw_only=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    last_update_time: float
    last_transition_time: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastUpdateTime": _iso(self.last_update_time),
            "lastTransitionTime": _iso(self.last_transition_time),
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Condition:
        return cls(
            type=raw["type"],
            status=raw["status"],
            reason=raw.get("reason", ""),
            message=raw.get("message", ""),
            last_update_time=_epoch(raw.get("lastUpdateTime")),
            last_transition_time=_epoch(raw.get("lastTransitionTime")),
        )


@dataclass(frozen=True, kw_only=True)
class RolloutStatus:
    observed_generation: int = 0
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0
    collision_count: int = 0
    conditions: tuple[Condition, ...] = field(default_factory=tuple)

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "observedGeneration": self.observed_generation,
            "replicas": self.replicas,
            "updatedReplicas": self.updated_replicas,
            "readyReplicas": self.ready_replicas,
            "availableReplicas": self.available_replicas,
            "unavailableReplicas": self.unavailable_replicas,
            "conditions": [c.as_dict() for c in self.conditions],
        }
        if self.collision_count:
            body["collisionCount"] = self.collision_count
        return body

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> RolloutStatus:
        raw = raw or {}
        return cls(
            observed_generation=raw.get("observedGeneration", 0),
            replicas=raw.get("replicas", 0),
            updated_replicas=raw.get("updatedReplicas", 0),
            ready_replicas=raw.get("readyReplicas", 0),
            available_replicas=raw.get("availableReplicas", 0),
            unavailable_replicas=raw.get("unavailableReplicas", 0),
            collision_count=raw.get("collisionCount", 0),
            conditions=tuple(Condition.from_dict(c) for c in raw.get("conditions", [])),
        )


@dataclass(frozen=True, kw_only=True)
class ReplicaSetView:
    """A ReplicaSet as the status computation sees it."""

    name: str
    #: spec.replicas
    replicas: int
    #: status.replicas / readyReplicas / availableReplicas
    current: int = 0
    ready: int = 0
    available: int = 0
    #: the ReplicaSet's ReplicaFailure condition as the workload's (ReplicaSetToDeploymentCondition), if any
    failure: Condition | None = None


@dataclass(frozen=True, kw_only=True)
class Target:
    """What the status is measured against: the workload's spec."""

    name: str
    generation: int
    replicas: int
    max_surge: int | str
    max_unavailable: int | str
    progress_deadline_seconds: int | None
    paused: bool = False
    #: RollingUpdate; Recreate counts no replica as allowed to be unavailable (MaxUnavailable returns 0)
    rolling: bool = True


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(text: str | None) -> float:
    if not text:
        return 0.0
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def set_condition(conditions: Sequence[Condition], new: Condition) -> tuple[Condition, ...]:
    """SetDeploymentCondition: same status and reason changes nothing; same status keeps the transition time."""
    current = next((c for c in conditions if c.type == new.type), None)
    if current is not None and current.status == new.status and current.reason == new.reason:
        return tuple(conditions)
    if current is not None and current.status == new.status:
        new = dataclasses.replace(new, last_transition_time=current.last_transition_time)
    return (*(c for c in conditions if c.type != new.type), new)


def remove_condition(conditions: Sequence[Condition], kind: str) -> tuple[Condition, ...]:
    return tuple(c for c in conditions if c.type != kind)


def condition(kind: str, status: bool, reason: str, message: str, now: float) -> Condition:
    return Condition(
        type=kind,
        status="True" if status else "False",
        reason=reason,
        message=message,
        last_update_time=now,
        last_transition_time=now,
    )


def paused_conditions(
    conditions: Sequence[Condition], *, paused: bool, has_deadline: bool, now: float
) -> tuple[Condition, ...]:
    """checkPausedConditions: Progressing Unknown DeploymentPaused on pause, DeploymentResumed on resume.

    Nothing without a progress deadline, and a ProgressDeadlineExceeded is
    never overwritten: a rollout that timed out stays failed while paused.
    """
    current = next((c for c in conditions if c.type == PROGRESSING), None)
    if not has_deadline or (current is not None and current.reason == TIMED_OUT):
        return tuple(conditions)
    paused_now = current is not None and current.reason == PAUSED
    if paused and not paused_now:
        reason, message = PAUSED, "Deployment is paused"
    elif not paused and paused_now:
        reason, message = RESUMED, "Deployment is resumed"
    else:
        return tuple(conditions)
    cond = dataclasses.replace(condition(PROGRESSING, True, reason, message, now), status="Unknown")
    return set_condition(conditions, cond)


def calculate_status(
    target: Target,
    replica_sets: Sequence[ReplicaSetView],
    new: ReplicaSetView | None,
    previous: RolloutStatus,
    now: float,
) -> RolloutStatus:
    """calculateStatus: counts over every ReplicaSet, and the Available condition."""
    available = sum(rs.available for rs in replica_sets)
    total = sum(rs.replicas for rs in replica_sets)
    status = dataclasses.replace(
        previous,
        observed_generation=target.generation,
        replicas=sum(rs.current for rs in replica_sets),
        updated_replicas=new.current if new is not None else 0,
        ready_replicas=sum(rs.ready for rs in replica_sets),
        available_replicas=available,
        unavailable_replicas=max(0, total - available),
    )
    least = target.replicas - max_unavailable(
        target.replicas, target.max_surge, target.max_unavailable, rolling=target.rolling
    )
    if available >= least:
        cond = condition(AVAILABLE, True, MINIMUM_AVAILABLE, "Deployment has minimum availability.", now)
    else:
        cond = condition(AVAILABLE, False, MINIMUM_UNAVAILABLE, "Deployment does not have minimum availability.", now)
    return dataclasses.replace(status, conditions=set_condition(status.conditions, cond))


def is_complete(target: Target, status: RolloutStatus) -> bool:
    """DeploymentComplete."""
    return (
        status.updated_replicas == target.replicas
        and status.replicas == target.replicas
        and status.available_replicas == target.replicas
        and status.observed_generation >= target.generation
    )


def is_progressing(status: RolloutStatus, previous: RolloutStatus) -> bool:
    """DeploymentProgressing: more updated, ready or available pods, or fewer old ones."""
    old_now = status.replicas - status.updated_replicas
    old_before = previous.replicas - previous.updated_replicas
    return (
        status.updated_replicas > previous.updated_replicas
        or old_now < old_before
        or status.ready_replicas > previous.ready_replicas
        or status.available_replicas > previous.available_replicas
    )


def has_timed_out(target: Target, status: RolloutStatus, now: float) -> bool:
    """DeploymentTimedOut: no progress for progressDeadlineSeconds since the condition was last updated."""
    if target.progress_deadline_seconds is None:
        return False
    cond = status.condition(PROGRESSING)
    if cond is None or cond.reason == NEW_RS_AVAILABLE:
        return False
    if cond.reason == TIMED_OUT:
        return True
    return cond.last_update_time + target.progress_deadline_seconds < now


def sync_rollout_status(
    target: Target,
    replica_sets: Sequence[ReplicaSetView],
    new: ReplicaSetView | None,
    previous: RolloutStatus,
    now: float,
) -> RolloutStatus:
    """syncRolloutStatus: the status to write after a sync step."""
    status = calculate_status(target, replica_sets, new, previous, now)
    if target.progress_deadline_seconds is None:
        status = dataclasses.replace(status, conditions=remove_condition(status.conditions, PROGRESSING))
    current = previous.condition(PROGRESSING)
    already_complete = (
        status.replicas == status.updated_replicas and current is not None and current.reason == NEW_RS_AVAILABLE
    )
    if target.progress_deadline_seconds is not None and not already_complete and not target.paused:
        subject = f'ReplicaSet "{new.name}"' if new is not None else f'Deployment "{target.name}"'
        if is_complete(target, status):
            cond = condition(PROGRESSING, True, NEW_RS_AVAILABLE, f"{subject} has successfully progressed.", now)
            status = dataclasses.replace(status, conditions=set_condition(status.conditions, cond))
        elif is_progressing(status, previous):
            cond = condition(PROGRESSING, True, RS_UPDATED, f"{subject} is progressing.", now)
            if current is not None and current.status == "True":
                cond = dataclasses.replace(cond, last_transition_time=current.last_transition_time)
            # Progress refreshes lastUpdateTime even when the reason is unchanged.
            conditions = (*remove_condition(status.conditions, PROGRESSING), cond)
            status = dataclasses.replace(status, conditions=conditions)
        elif has_timed_out(target, status, now):
            cond = condition(PROGRESSING, False, TIMED_OUT, f"{subject} has timed out progressing.", now)
            status = dataclasses.replace(status, conditions=set_condition(status.conditions, cond))
    # getReplicaFailures: the new ReplicaSet's condition first, else any other's, copied as they are.
    failures = [rs.failure for rs in ([new] if new else []) + [r for r in replica_sets if r is not new] if rs.failure]
    if failures:
        status = dataclasses.replace(status, conditions=set_condition(status.conditions, failures[0]))
    else:
        status = dataclasses.replace(status, conditions=remove_condition(status.conditions, REPLICA_FAILURE))
    return status


def rollout_phase(target: Target, status: RolloutStatus) -> RolloutPhase:
    """Where the rollout stands, by kubectl rollout status' rules (pkg/polymorphichelpers/rollout_status.go)."""
    if target.generation > status.observed_generation:
        return RolloutPhase.WAITING_FOR_SPEC
    cond = status.condition(PROGRESSING)
    if cond is not None and cond.reason == TIMED_OUT:
        return RolloutPhase.DEADLINE_EXCEEDED
    failing = status.condition(REPLICA_FAILURE)
    if failing is not None and failing.reason == PODS_FAILING:
        return RolloutPhase.PODS_FAILING
    if status.updated_replicas < target.replicas:
        return RolloutPhase.UPDATING
    if status.replicas > status.updated_replicas:
        return RolloutPhase.TERMINATING_OLD
    if status.available_replicas < status.updated_replicas:
        return RolloutPhase.WAITING_FOR_AVAILABLE
    return RolloutPhase.COMPLETE


def status_message(name: str, target: Target, status: RolloutStatus, phase: RolloutPhase) -> str:
    """kubectl rollout status' line for ``phase``."""
    waiting = f'Waiting for deployment "{name}" rollout to finish: '
    if phase is RolloutPhase.WAITING_FOR_SPEC:
        return "Waiting for deployment spec update to be observed..."
    if phase is RolloutPhase.DEADLINE_EXCEEDED:
        return f'deployment "{name}" exceeded its progress deadline'
    if phase is RolloutPhase.PODS_FAILING:
        failing = status.condition(REPLICA_FAILURE)
        return f'deployment "{name}" failed: {failing.message if failing else ""}'
    if phase is RolloutPhase.UPDATING:
        return f"{waiting}{status.updated_replicas} out of {target.replicas} new replicas have been updated..."
    if phase is RolloutPhase.TERMINATING_OLD:
        return f"{waiting}{status.replicas - status.updated_replicas} old replicas are pending termination..."
    if phase is RolloutPhase.WAITING_FOR_AVAILABLE:
        return f"{waiting}{status.available_replicas} of {status.updated_replicas} updated replicas are available..."
    return f'deployment "{name}" successfully rolled out'


def rollout_status_message(name: str, target: Target, status: RolloutStatus) -> tuple[str, bool, bool]:
    """kubectl rollout status: (message, done, failed), worded as kubectl words it."""
    phase = rollout_phase(target, status)
    return status_message(name, target, status, phase), phase.done, phase.failed
