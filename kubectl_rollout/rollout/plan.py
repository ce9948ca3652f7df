"""The next step of a managed workload's rollout: which ReplicaSet to create, scale or delete.

One call is one sync of the Deployment controller (sync.go, rolling.go,
recreate.go): a resize first (proportional scaling), then at most one kind of
change per step: create the new ReplicaSet, grow it, or shrink the old ones;
once complete, prune history beyond revisionHistoryLimit. The driver applies
the step, waits for the ReplicaSet controller to act, and asks again.

Pure: ReplicaSet snapshots in, a list of actions out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubectl_rollout.rollout.replica_math import (
    ReplicaSetState,
    max_surge,
    new_replica_set_size,
    old_replica_set_sizes,
    replicas_annotations_need_update,
    scale_writes,
)
from kubectl_rollout.rollout.spec import WorkloadSpec
from kubectl_rollout.rollout.steps.weights import Counts, NextCounts, Side, next_counts, side


@dataclass(frozen=True, kw_only=True)
class ManagedReplicaSet:
    name: str
    #: our hash of the pod template it runs (annotation), which identifies the new ReplicaSet
    template_hash: str
    replicas: int
    current: int = 0
    available: int = 0
    created: float = 0.0
    revision: int = 0
    #: deployment.kubernetes.io/desired-replicas and max-replicas annotations
    desired_replicas: int | None = None
    max_replicas: int | None = None
    #: metadata.annotations (compared with the workload's: copyDeploymentAnnotationsToReplicaSet)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: spec.minReadySeconds (None: not known, never updated)
    min_ready_seconds: int | None = None
    #: metadata.deletionTimestamp is set: already going, never counted for history
    deleting: bool = False
    #: status.observedGeneration < metadata.generation: the ReplicaSet controller has not caught up with its spec
    unobserved: bool = False
    #: its pods that run and are not marked for deletion, as the driver's pod watch sees them (0: none seen)
    live: int = 0


@dataclass(frozen=True)
class CreateReplicaSet:
    replicas: int
    revision: int


@dataclass(frozen=True)
class ScaleReplicaSet:
    name: str
    replicas: int


@dataclass(frozen=True)
class SetRevision:
    """An old ReplicaSet becomes the new one again (undo): it takes the next revision."""

    name: str
    revision: int


@dataclass(frozen=True)
class DeleteReplicaSet:
    name: str


@dataclass(frozen=True)
class SetMinReadySeconds:
    """The workload's minReadySeconds changed: the new ReplicaSet takes it (no new ReplicaSet for that)."""

    name: str
    seconds: int


@dataclass(frozen=True)
class CopyAnnotations:
    """The workload's annotations (those a ReplicaSet takes) changed: copy them to the new ReplicaSet."""

    name: str
    annotations: Mapping[str, str]


Action = CreateReplicaSet | ScaleReplicaSet | SetRevision | DeleteReplicaSet | SetMinReadySeconds | CopyAnnotations

#: annotations a workload never hands to its ReplicaSets, nor an undo takes back from one (annotationsToSkip),
#: and our own two, which describe the ReplicaSet's template
ANNOTATIONS_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        "deployment.kubernetes.io/revision",
        "deployment.kubernetes.io/revision-history",
        "deployment.kubernetes.io/desired-replicas",
        "deployment.kubernetes.io/max-replicas",
        "deprecated.deployment.rollback.to",
        "rollout-plus.kubectl.io/template-hash",
        "rollout-plus.kubectl.io/template",
    }
)
#: the controller's limit on deployment.kubernetes.io/revision-history (maxRevHistoryLengthInChars)
MAX_REVISION_HISTORY_CHARS = 2000


def annotations_to_copy(workload: Mapping[str, str], replica_set: Mapping[str, str]) -> dict[str, str]:
    """copyDeploymentAnnotationsToReplicaSet: the workload's annotations the ReplicaSet lacks or holds otherwise.

    Annotations the ReplicaSet has and the workload does not are left alone.
    """
    return {
        key: value
        for key, value in workload.items()
        if key not in ANNOTATIONS_NOT_COPIED and replica_set.get(key) != value
    }


def annotations_after_undo(workload: Mapping[str, str], replica_set: Mapping[str, str]) -> dict[str, str]:
    """kubectl rollback.go: the workload's annotations become the target ReplicaSet's, but for the skipped ones,
    which the workload keeps."""
    kept = {key: value for key, value in workload.items() if key in ANNOTATIONS_NOT_COPIED}
    return {**kept, **{key: value for key, value in replica_set.items() if key not in ANNOTATIONS_NOT_COPIED}}


def revision_history(history: str, old_revision: str, *, limit: int = MAX_REVISION_HISTORY_CHARS) -> str | None:
    """SetNewReplicaSetAnnotations: ``history`` with ``old_revision`` appended, oldest revisions dropped to stay
    within ``limit`` characters; None when even that cannot make it fit (the history is left as it was)."""
    held = history.split(",") if history else []
    if not held:
        return old_revision
    total = len(history) + len(old_revision) + 1
    start = 0
    while total > limit and start < len(held):
        total -= len(held[start]) + 1
        start += 1
    if total > limit:
        return None
    return ",".join([*held[start:], old_revision])


def _state(rs: ManagedReplicaSet) -> ReplicaSetState:
    return ReplicaSetState(
        name=rs.name, replicas=rs.replicas, available=rs.available, created=rs.created, max_replicas=rs.max_replicas
    )


def old_pods_running(
    *, new_uid: str | None, old_status_replicas: Sequence[int], pod_phases: Mapping[str, Sequence[str]]
) -> bool:
    """recreate.go oldPodsRunning: may an old pod still run? (Recreate creates no new pod while one might.)

    ``old_status_replicas``: status.replicas of each old ReplicaSet;
    ``pod_phases``: the phases of the pods each of the workload's ReplicaSets
    controls, by ReplicaSet uid. Pods nobody of ours controls (a bare pod that
    happens to match the selector) are not the workload's and never count.
    Terminal pods (Succeeded, Failed) do not run; any other phase, Unknown
    included, might.
    """
    if sum(old_status_replicas) > 0:
        return True
    return any(
        phase not in ("Succeeded", "Failed") for uid, phases in pod_phases.items() if uid != new_uid for phase in phases
    )


def split(
    template_hash: str, replica_sets: Sequence[ManagedReplicaSet]
) -> tuple[ManagedReplicaSet | None, list[ManagedReplicaSet]]:
    """FindNewReplicaSet / FindOldReplicaSets: the oldest ReplicaSet running the template is the new one (two can,
    after a hash collision or a hand-made copy); every other one is old."""
    oldest_first = sorted(replica_sets, key=lambda rs: (rs.created, rs.name))
    new = next((rs for rs in oldest_first if rs.template_hash == template_hash), None)
    return new, [rs for rs in replica_sets if rs is not new]


def is_scaling_event(spec: WorkloadSpec, replica_sets: Sequence[ManagedReplicaSet]) -> bool:
    """isScalingEvent: an active ReplicaSet was sized for another replica count."""
    active = [rs for rs in replica_sets if rs.replicas > 0]
    return any(rs.desired_replicas is not None and rs.desired_replicas != spec.replicas for rs in active)


#: revisionHistoryLimit of math.MaxInt32 keeps every revision (HasRevisionHistoryLimit)
UNLIMITED = 2**31 - 1


def cleanup(spec: WorkloadSpec, old: Sequence[ManagedReplicaSet]) -> list[Action]:
    """cleanupDeployment: beyond revisionHistoryLimit, delete the lowest revisions among the live old ReplicaSets.

    Every old ReplicaSet not already being deleted counts against the limit,
    scaled down or not; the lowest revisions (then the oldest) are the
    candidates, and a candidate that still has replicas, or whose status lags
    its spec, is skipped rather than replaced by the next one.
    """
    if spec.revision_history_limit == UNLIMITED:
        return []
    alive = [rs for rs in old if not rs.deleting]
    excess = len(alive) - spec.revision_history_limit
    if excess <= 0:
        return []
    by_revision = sorted(alive, key=lambda rs: (rs.revision, rs.created, rs.name))
    return [
        DeleteReplicaSet(rs.name)
        for rs in by_revision[:excess]
        if rs.replicas == 0 and rs.current == 0 and not rs.unobserved
    ]


def scale(
    spec: WorkloadSpec, template_hash: str, replica_sets: Sequence[ManagedReplicaSet], *, status_replicas: int
) -> list[Action]:
    """The controller's ``scale``, with every write it makes: a new size, or fresh desired-/max-replicas annotations.

    The driver's ScaleReplicaSet rewrites both annotations; an active
    ReplicaSet left with stale ones would make the next pass see a scaling
    event again and resize the workload back and forth.
    """
    new, old = split(template_hash, replica_sets)
    sizes = scale_writes(
        replicas=spec.replicas,
        surge=spec.max_surge,
        unavailable=spec.max_unavailable,
        new=_state(new) if new else None,
        new_desired=new.desired_replicas if new else None,
        old=[_state(rs) for rs in old],
        status_replicas=status_replicas,
        rolling=spec.rolling,
    )
    by_name = {rs.name: rs for rs in replica_sets}
    most = surge_annotation(spec)
    return [
        ScaleReplicaSet(name, size)
        for name, size in sorted(sizes.items())
        if size != by_name[name].replicas
        or replicas_annotations_need_update(
            desired=by_name[name].desired_replicas,
            most=by_name[name].max_replicas,
            replicas=spec.replicas,
            max_replicas=most,
        )
    ]


def plan(
    spec: WorkloadSpec,
    template_hash: str,
    replica_sets: Sequence[ManagedReplicaSet],
    *,
    status_replicas: int,
    old_pods_running: bool,
    complete: bool,
    canary: CanaryGoal | None = None,
) -> list[Action]:
    """The actions of one sync. An empty list means: nothing to do until something changes.

    ``canary``: a canary step is under way: the new ReplicaSet aims at its count, the stable one at the rest
    (``_canary``), instead of the new one taking every replica."""
    new, old = split(template_hash, replica_sets)
    if new is not None and new.min_ready_seconds is not None and new.min_ready_seconds != spec.min_ready_seconds:
        # getNewReplicaSet, first thing in every sync (paused too): the existing new ReplicaSet is brought up
        # to date with the workload's minReadySeconds.
        return [SetMinReadySeconds(new.name, spec.min_ready_seconds)]
    copied = annotations_to_copy(spec.annotations, new.annotations) if new is not None else {}
    if new is not None and copied:
        # getNewReplicaSet: the workload's annotations (a new change-cause, say) go to the new ReplicaSet.
        return [CopyAnnotations(new.name, copied)]
    if (spec.paused and canary is None) or is_scaling_event(spec, replica_sets):
        # syncDeployment: a paused workload always goes through sync (scale, then history cleanup), so that
        # one paused at 0 replicas still scales up; a scaling event does the same before any rollout step.
        # A paused canary is not filled up to replicas + maxSurge: its step's counts stay as they are.
        writes = scale(spec, template_hash, replica_sets, status_replicas=status_replicas)
        if writes:
            return writes
    if spec.paused:
        return cleanup(spec, old)
    next_revision = max((rs.revision for rs in replica_sets), default=0) + 1
    if new is not None and new.revision != max((rs.revision for rs in replica_sets), default=0):
        # An old template came back (undo): its ReplicaSet becomes the newest revision.
        return [SetRevision(new.name, next_revision)]
    if not spec.rolling:
        return _recreate(spec, new, old, next_revision, old_pods_running, complete)
    if canary is not None:
        return _canary(spec, new, old, next_revision, canary)
    return _rolling(spec, new, old, next_revision, complete)


@dataclass(frozen=True, kw_only=True)
class CanaryGoal:
    """What a canary step aims at: ``counts`` of the new ReplicaSet and of ``stable`` (an old one, by name)."""

    counts: Counts
    stable: str
    #: blue-green: the counts at once, beyond maxSurge (the new ReplicaSet at full size beside the old one, which
    #: keeps serving until the switch), and every other old ReplicaSet at 0
    at_once: bool = False


def _side(rs: ManagedReplicaSet | None) -> Side:
    return side(rs.replicas, current=pods_held(rs), available=rs.available) if rs is not None else side(0)


def _canary(
    spec: WorkloadSpec,
    new: ManagedReplicaSet | None,
    old: list[ManagedReplicaSet],
    next_revision: int,
    goal: CanaryGoal,
) -> list[Action]:
    """One move towards a canary step's counts, inside maxSurge / maxUnavailable (``canary.weights``); the
    other old ReplicaSets go to 0 first."""
    stable = next((rs for rs in old if rs.name == goal.stable), None)
    others = [rs for rs in old if rs is not stable and pods_held(rs) > 0]
    counts = (
        NextCounts(canary=goal.counts.canary, stable=goal.counts.stable, others=tuple(0 for _ in others))
        if goal.at_once
        else next_counts(
            replicas=spec.replicas,
            surge=spec.max_surge,
            unavailable=spec.max_unavailable,
            goal=goal.counts,
            canary=_side(new),
            stable=_side(stable),
            others=[_side(rs) for rs in others],
        )
    )
    if new is None:
        return [CreateReplicaSet(counts.canary, next_revision)]
    # As in a rolling update: a side grows only once the ReplicaSet controller has seen every other one's last
    # resize (one still making pods for a larger size has them in neither its status nor the pod watch).
    unobserved = {rs.name for rs in (new, *old) if rs.unobserved}
    canary_size, stable_size = counts.canary, counts.stable
    if canary_size > new.replicas and unobserved - {new.name}:
        canary_size = new.replicas
    if stable is not None and stable_size > stable.replicas and unobserved - {stable.name}:
        stable_size = stable.replicas
    actions: list[Action] = []
    if canary_size != new.replicas:
        actions.append(ScaleReplicaSet(new.name, canary_size))
    if stable is not None and stable_size != stable.replicas:
        actions.append(ScaleReplicaSet(stable.name, stable_size))
    actions += [
        ScaleReplicaSet(rs.name, size) for rs, size in zip(others, counts.others, strict=True) if size != rs.replicas
    ]
    return actions


def pods_held(rs: ManagedReplicaSet) -> int:
    """The pods a ReplicaSet may still have: its spec, or more while the ReplicaSet controller catches up.

    The controller counts spec.replicas only, so right after it shrinks an old
    ReplicaSet it grows the new one while the old pods are not yet deleted, and
    the namespace briefly holds more than replicas + maxSurge pods. Counting
    status.replicas too (pods not yet marked for deletion) keeps maxSurge a
    bound on pods, at the price of one ReplicaSet status round trip per step.
    The status lags the other way too: the ReplicaSet controller writes it from
    the pods it saw before its own creates, so a ReplicaSet grown and then
    shrunk before its next status write has pods its status does not count;
    the driver's pod watch does (``live``).
    """
    return max(rs.replicas, rs.current, rs.live)


def _rolling(
    spec: WorkloadSpec, new: ManagedReplicaSet | None, old: list[ManagedReplicaSet], next_revision: int, complete: bool
) -> list[Action]:
    old_total = sum(pods_held(rs) for rs in old)
    if new is None:
        size = new_replica_set_size(
            replicas=spec.replicas, surge=spec.max_surge, total_replicas=old_total, new_replicas=0
        )
        return [CreateReplicaSet(size, next_revision)]
    size = new_replica_set_size(
        replicas=spec.replicas,
        surge=spec.max_surge,
        total_replicas=old_total + pods_held(new),
        new_replicas=new.replicas,
    )
    # An old ReplicaSet whose last resize the ReplicaSet controller has not yet seen may still be making pods for
    # a larger size it had: neither its status nor the pod watch counts those yet. The new one grows once it has.
    if size < new.replicas or (size > new.replicas and not any(rs.unobserved for rs in old)):
        return [ScaleReplicaSet(new.name, size)]
    shrink = old_replica_set_sizes(
        replicas=spec.replicas,
        surge=spec.max_surge,
        unavailable=spec.max_unavailable,
        new=_state(new),
        old=[_state(rs) for rs in old if rs.replicas > 0],
    )
    if shrink:
        return [ScaleReplicaSet(name, size) for name, size in sorted(shrink.items())]
    return cleanup(spec, old) if complete else []


def _recreate(
    spec: WorkloadSpec,
    new: ManagedReplicaSet | None,
    old: list[ManagedReplicaSet],
    next_revision: int,
    old_pods_running: bool,
    complete: bool,
) -> list[Action]:
    active = [rs for rs in old if rs.replicas > 0]
    if active:
        return [ScaleReplicaSet(rs.name, 0) for rs in active]
    if old_pods_running:
        return []  # Recreate: not one new pod while an old one still runs
    if new is None:
        return [CreateReplicaSet(spec.replicas, next_revision)]
    if new.replicas != spec.replicas:
        return [ScaleReplicaSet(new.name, spec.replicas)]
    return cleanup(spec, old) if complete else []


def surge_annotation(spec: WorkloadSpec) -> int:
    """deployment.kubernetes.io/max-replicas for a ReplicaSet sized now."""
    return spec.replicas + (max_surge(spec.replicas, spec.max_surge, spec.max_unavailable) if spec.rolling else 0)
