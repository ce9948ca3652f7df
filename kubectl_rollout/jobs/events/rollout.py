"""The events of a managed workload's rollout (see ``base`` for the envelope and the rules for changing them).

A rollout job emits, in order: what the command recorded (``SpecChanged``),
then, pass by pass, what the driver did to the ReplicaSets (created, scaled,
revision assigned, deleted), what held it back (``ScaleDownHeldByPdb``), the
conditions it wrote (``ConditionChanged``) and where the rollout stands
(``RolloutProgressed``, worded as ``kubectl rollout status`` words it), and
always last ``RolloutFinished``. Every fact a program needs is a field of its
own; a ``message`` is for people and is never the only place a fact lives.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event


class ConditionType(enum.StrEnum):
    PROGRESSING = "Progressing"
    AVAILABLE = "Available"
    REPLICA_FAILURE = "ReplicaFailure"


class ConditionStatus(enum.StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class RolloutPhase(enum.StrEnum):
    """Where a rollout stands, one value per ``kubectl rollout status`` message."""

    #: the spec changed and no driver has written a status for it yet
    WAITING_FOR_SPEC = "WaitingForSpec"
    #: fewer updated replicas than desired
    UPDATING = "Updating"
    #: old replicas still pending termination
    TERMINATING_OLD = "TerminatingOld"
    #: every replica updated, not all of them available yet
    WAITING_FOR_AVAILABLE = "WaitingForAvailable"
    COMPLETE = "Complete"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    #: new pods crash-loop or cannot pull their image
    PODS_FAILING = "PodsFailing"

    @property
    def done(self) -> bool:
        return self in (RolloutPhase.COMPLETE, RolloutPhase.DEADLINE_EXCEEDED, RolloutPhase.PODS_FAILING)

    @property
    def failed(self) -> bool:
        return self in (RolloutPhase.DEADLINE_EXCEEDED, RolloutPhase.PODS_FAILING)


class SpecChange(enum.StrEnum):
    """What a command changed in the workload's spec."""

    APPLY = "apply"
    IMAGE = "image"
    SCALE = "scale"
    RESTART = "restart"
    UNDO = "undo"
    PAUSE = "pause"
    RESUME = "resume"


class RolloutOutcome(enum.StrEnum):
    """How a rollout job ended."""

    #: the rollout is complete
    COMPLETE = "Complete"
    #: the change was recorded and not driven (``--no-wait``, ``pause``)
    RECORDED = "Recorded"
    #: the workload is paused; the rollout goes on once it is resumed
    PAUSED = "Paused"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    PODS_FAILING = "PodsFailing"
    #: the rollout failed and ``--auto-rollback`` returned to an earlier revision
    ROLLED_BACK = "RolledBack"
    #: the job's own ``--timeout`` ran out; the rollout goes on with the next driver
    TIMED_OUT = "TimedOut"
    #: cancelled; the rollout goes on with the next driver
    INTERRUPTED = "Interrupted"
    #: the workload was deleted meanwhile
    DELETED = "Deleted"
    #: the job could not run (not found, invalid, forbidden, ...): ``message`` says why
    ERROR = "Error"
    #: the canary was aborted: the stable ReplicaSet is back at full size, until ``retry`` or a change
    ABORTED = "Aborted"


class DeleteReason(enum.StrEnum):
    #: an empty old ReplicaSet beyond ``revisionHistoryLimit``
    REVISION_HISTORY_LIMIT = "RevisionHistoryLimit"


@dataclass(frozen=True, kw_only=True)
class ReplicaSetRow:
    """One ReplicaSet of the workload as it stands."""

    name: str
    revision: int
    #: spec.replicas
    desired: int
    #: status.replicas, readyReplicas, availableReplicas
    current: int = 0
    ready: int = 0
    available: int = 0
    #: the ReplicaSet of the workload's current template (the new one)
    updated: bool = False


@dataclass(frozen=True, kw_only=True)
class ContainerImage:
    container: str
    image: str


@dataclass(frozen=True, kw_only=True)
class PdbRoom:
    """A PodDisruptionBudget over the workload's pods, as the driver saw it."""

    namespace: str
    name: str
    disruptions_allowed: int
    #: status.currentHealthy / desiredHealthy / expectedPods
    healthy: int
    needed: int
    expected_pods: int
    #: disruptions this driver already spent against this version of the PDB's status
    spent: int = 0

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, kw_only=True)
class HeldScaleDown:
    """One old ReplicaSet's shrink, cut short by the PDBs."""

    name: str
    #: its size before, the size the plan wanted, and the size it was given
    replicas: int
    wanted: int
    allowed: int


# --- what the command recorded -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SpecChanged(Event):
    """The command stored a new spec in the workload's record (``generation`` grows only if it differs)."""

    TYPE = "SpecChanged"

    workload: str
    namespace: str
    change: SpecChange
    generation: int
    previous_generation: int = 0
    #: apply: the record did not exist before
    created: bool = False
    #: image: the containers changed (``*`` for every container)
    images: tuple[ContainerImage, ...] = ()
    #: scale: the new replica count
    replicas: int | None = None
    #: undo: the revision returned to, and its ReplicaSet (reused)
    to_revision: int | None = None
    replica_set: str = ""
    #: undo: nothing was changed, the revision's template is the current one ("skipped rollback")
    skipped: bool = False
    #: restart: the kubectl.kubernetes.io/restartedAt stamp of the template
    restarted_at: str = ""


# --- what the driver did --------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ReplicaSetCreated(Event):
    TYPE = "ReplicaSetCreated"

    workload: str
    name: str
    revision: int
    replicas: int
    #: the collision count the name was made with (above 0: a name was taken by another template)
    collision_count: int = 0


@dataclass(frozen=True, kw_only=True)
class ReplicaSetScaled(Event):
    TYPE = "ReplicaSetScaled"

    workload: str
    name: str
    from_replicas: int
    to_replicas: int
    #: the new ReplicaSet (the current template's), not an old one
    updated: bool = False


@dataclass(frozen=True, kw_only=True)
class RevisionAssigned(Event):
    """An old ReplicaSet runs the current template again (undo): it takes the next revision."""

    TYPE = "RevisionAssigned"

    workload: str
    name: str
    revision: int
    previous_revision: int


@dataclass(frozen=True, kw_only=True)
class ReplicaSetDeleted(Event):
    TYPE = "ReplicaSetDeleted"

    workload: str
    name: str
    revision: int
    reason: DeleteReason = DeleteReason.REVISION_HISTORY_LIMIT


@dataclass(frozen=True, kw_only=True)
class ScaleDownHeldByPdb(Event):
    """Old ReplicaSets shrink less than the plan wanted: the PDBs have no more room now."""

    TYPE = "ScaleDownHeldByPdb"

    workload: str
    pdbs: tuple[PdbRoom, ...]
    held: tuple[HeldScaleDown, ...]

    def coalesce_key(self) -> str | None:
        return f"pdb-hold/{self.workload}"


@dataclass(frozen=True, kw_only=True)
class ConditionChanged(Event):
    """The driver wrote a condition with another status, reason or message (or removed it)."""

    TYPE = "ConditionChanged"

    workload: str
    condition: ConditionType
    status: ConditionStatus
    reason: str
    message: str = ""
    #: lastTransitionTime (epoch seconds)
    since: float = 0.0
    #: the condition is gone from the status (ReplicaFailure once the failure clears)
    removed: bool = False

    def coalesce_key(self) -> str | None:
        return f"condition/{self.workload}/{self.condition.value}"


@dataclass(frozen=True, kw_only=True)
class DeadlineExceeded(Event):
    """No progress for progressDeadlineSeconds: Progressing turned False (ProgressDeadlineExceeded)."""

    TYPE = "DeadlineExceeded"

    workload: str
    progress_deadline_seconds: int
    #: the new ReplicaSet that did not progress ("" when there was none)
    replica_set: str = ""


@dataclass(frozen=True, kw_only=True)
class NewPodsFailing(Event):
    """A new pod crash-loops past the threshold or cannot pull its image: the rollout fails now."""

    TYPE = "NewPodsFailing"

    workload: str
    pod: str
    container: str
    #: the container's waiting reason, as the kubelet reports it (CrashLoopBackOff, ImagePullBackOff, ...)
    reason: str
    restart_count: int = 0
    image: str = ""


@dataclass(frozen=True, kw_only=True)
class RollingBack(Event):
    """``--auto-rollback``: the failed rollout returns to the newest other revision."""

    TYPE = "RollingBack"

    workload: str
    from_revision: int
    to_revision: int
    replica_set: str
    #: the record's generation holding the rolled-back template
    generation: int


@dataclass(frozen=True, kw_only=True)
class RolledBack(Event):
    """The rollback's own rollout ended."""

    TYPE = "RolledBack"

    workload: str
    to_revision: int
    replica_set: str
    #: the rolled-back revision is fully available again
    complete: bool


@dataclass(frozen=True, kw_only=True)
class RolloutProgressed(Event):
    """Where the rollout stands; ``message`` is kubectl rollout status' line for it."""

    TYPE = "RolloutProgressed"

    workload: str
    namespace: str
    message: str
    phase: RolloutPhase
    #: the spec's generation, and replicas as kubectl rollout status counts them
    generation: int = 0
    desired: int = 0
    updated: int = 0
    total: int = 0
    available: int = 0
    paused: bool = False
    #: the workload's ReplicaSets, newest revision first
    rows: tuple[ReplicaSetRow, ...] = ()
    #: spec.progressDeadlineSeconds, and when the deadline falls without progress (the Progressing condition's
    #: lastUpdateTime plus it, epoch seconds; None when no deadline runs: complete, paused, or none set)
    progress_deadline_seconds: int | None = None
    deadline_at: float | None = None

    @property
    def done(self) -> bool:
        return self.phase.done

    @property
    def failed(self) -> bool:
        return self.phase.failed

    def coalesce_key(self) -> str | None:
        return f"rollout/{self.namespace}/{self.workload}"


# --- who drives --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class FollowingDriver(Event):
    """Another driver holds the workload's lease: this job follows the record until the lease could lapse."""

    TYPE = "FollowingDriver"

    workload: str
    #: "namespace/name" of the Lease
    lease: str
    #: the holder's identity ("" when the lease was taken between our read and write)
    holder: str = ""
    #: when the lease lapses unless renewed (epoch seconds; 0 when unknown), and how long that was from then
    expires_at: float = 0.0
    seconds_left: float = 0.0


@dataclass(frozen=True, kw_only=True)
class TookOver(Event):
    """This job took the lease after following another driver (which finished, or died and let it lapse), or
    before it lapsed, its holder being a process of this machine that has provably ended (``holder_ended``)."""

    TYPE = "TookOver"

    workload: str
    lease: str
    previous_holder: str = ""
    #: why the lease was taken before it lapsed, in words ("process 4242 of build-01 has ended"); "" when it
    #: had lapsed or been released
    holder_ended: str = ""


# --- the end ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RolloutFinished(Event):
    """Always the last event of a rollout job."""

    TYPE = "RolloutFinished"

    workload: str
    namespace: str
    succeeded: bool
    outcome: RolloutOutcome
    message: str = ""
    paused: bool = False
    rolled_back_to: int | None = None
    #: Recorded only, because another driver holds the workload: that driver (its holder identity as shown),
    #: which carries the change out
    driven_by: str = ""


#: the driver's doings on ReplicaSets, as a printer or a view lists them
ReplicaSetAction = ReplicaSetCreated | ReplicaSetScaled | RevisionAssigned | ReplicaSetDeleted
