"""What a person (or the agent, or the TUI) does to a managed workload's spec, and what it reads back.

Each change reads the record, edits its manifest, and stores it over the
version it read; a driver writing the record's status meanwhile makes the
store conflict, and the edit is redone on a fresh read (tenacity). A change
decides everything first (undo: which revision) and only then edits, so a
retried edit never repeats a decision or a report. Each reports what it
recorded as one ``SpecChanged`` through ``emit`` and returns it with the record.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from kubernetes.client.exceptions import ApiException
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_random

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.kube.api_bounds import INT32_MAX
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UsageError, UserFacingError
from kubectl_rollout.kube.record_names import WORKLOAD_LABEL, record_name
from kubectl_rollout.rollout import replica_sets
from kubectl_rollout.rollout.plan import annotations_after_undo
from kubectl_rollout.rollout.progress_events import condition_changes
from kubectl_rollout.rollout.record import (
    CHANGE_CAUSE,
    Record,
    StaleRecord,
    WorkloadNotFound,
    read,
    save_spec,
    save_status,
)
from kubectl_rollout.rollout.spec import parse_workload
from kubectl_rollout.rollout.state import paused_conditions, rollout_phase
from kubectl_rollout.rollout.state import status_message as phase_message

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
#: how often a change is redone on a fresh read before giving up
CONFLICT_ATTEMPTS = 5

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class SpecChangeResult:
    #: the record as stored
    record: Record
    #: what was recorded, as emitted
    change: ev.SpecChanged
    #: the resourceVersion of the record this change was written over (None: created, or nothing written)
    written_over: str | None = None


def _is_conflict(err: BaseException) -> bool:
    return isinstance(err, StaleRecord) or (isinstance(err, ApiException) and err.status == 409)


def retrying_conflicts(name: str, attempt: Callable[[], T]) -> T:
    """Run ``attempt`` (which reads what it changes) again while the store conflicts with another writer."""
    retrying = Retrying(
        retry=retry_if_exception(_is_conflict),
        stop=stop_after_attempt(CONFLICT_ATTEMPTS),
        # A little jitter: two writers that just collided should not collide again in step.
        wait=wait_random(0, 0.2),
    )
    try:
        return retrying(attempt)
    except RetryError as err:
        raise UserFacingError(f'managed workload "{name}" kept changing under us; try again') from err


def edit_spec(
    cluster: Cluster,
    namespace: str,
    name: str,
    mutate: Callable[[dict[str, Any], Record], None],
    *,
    known: Record | None = None,
) -> tuple[Record, Record]:
    """Read the record, let ``mutate`` edit a copy of its manifest, store it: (the record read, the record stored).

    ``known``: the record as read a moment ago (the driver's list of it), edited instead of reading it again;
    stored over its resourceVersion, so that a change made since conflicts, and the next attempt reads afresh.
    """
    first = [known] if known is not None else []

    def attempt() -> tuple[Record, Record]:
        before = first.pop() if first else read(cluster, namespace, name)
        manifest = copy.deepcopy(before.manifest)
        mutate(manifest, before)
        spec = parse_workload(manifest, default_namespace=before.namespace)
        return before, save_spec(cluster, manifest, spec, before)

    return retrying_conflicts(name, attempt)


def _recorded(emit: Emit, before: Record | None, after: Record, change: ev.SpecChange, **data: Any) -> SpecChangeResult:
    event = ev.SpecChanged(
        workload=after.name,
        namespace=after.namespace,
        change=change,
        generation=after.generation,
        previous_generation=before.generation if before is not None else 0,
        created=before is None,
        **data,
    )
    emit(event)
    written_over = before.resource_version if before is not None and after is not before else None
    return SpecChangeResult(record=after, change=event, written_over=written_over)


# --- changes ---------------------------------------------------------------------------


def apply_manifest(cluster: Cluster, manifest: Mapping[str, Any], emit: Emit) -> SpecChangeResult:
    """Create the workload from an apps/v1 Deployment manifest, or store it as the workload's new spec."""
    document: dict[str, Any] = copy.deepcopy(dict(manifest))
    spec = parse_workload(document, default_namespace=cluster.namespace)
    if document.get("metadata", {}).get("namespace") not in (None, spec.namespace):
        raise UsageError("the manifest's namespace and -n disagree")
    document.setdefault("metadata", {})["namespace"] = spec.namespace

    def attempt() -> tuple[Record | None, Record]:
        stored = copy.deepcopy(document)
        try:
            previous: Record | None = read(cluster, spec.namespace, spec.name)
        except WorkloadNotFound:
            previous = None
        parsed = spec
        if previous is not None and previous.spec.paused and "paused" not in stored.get("spec", {}):
            # As kubectl apply's three-way merge keeps a field the manifest never set: a paused workload stays paused.
            stored["spec"]["paused"] = True
            parsed = parse_workload(stored, default_namespace=cluster.namespace)
        return previous, save_spec(cluster, stored, parsed, previous)

    previous, stored = retrying_conflicts(spec.name, attempt)
    return _recorded(emit, previous, stored, ev.SpecChange.APPLY)


def set_image(
    cluster: Cluster,
    namespace: str,
    name: str,
    images: Sequence[ev.ContainerImage],
    emit: Emit,
    *,
    known: Record | None = None,
) -> SpecChangeResult:
    """Set the image of containers (``*``: every container) of the pod template."""
    wanted = {i.container: i.image for i in images}

    def mutate(manifest: dict[str, Any], _record: Record) -> None:
        containers = manifest["spec"]["template"]["spec"]["containers"]
        names = [c["name"] for c in containers]
        unknown = [c for c in wanted if c != "*" and c not in names]
        if unknown:
            raise UsageError(
                f'unable to find container named "{unknown[0]}" in workload {name} (containers: {", ".join(names)})'
            )
        for container in containers:
            image = wanted.get(container["name"], wanted.get("*"))
            if image:
                container["image"] = image

    before, after = edit_spec(cluster, namespace, name, mutate, known=known)
    return _recorded(emit, before, after, ev.SpecChange.IMAGE, images=tuple(images))


def scale(
    cluster: Cluster, namespace: str, name: str, replicas: int, emit: Emit, *, known: Record | None = None
) -> SpecChangeResult:
    """Set the number of replicas (mid-rollout, the driver scales proportionally, like the controller)."""
    if not 0 <= replicas <= INT32_MAX:
        # The API server takes an int32 here; a larger count written to a ReplicaSet would wrap around.
        raise UsageError(f"--replicas must be from 0 to {INT32_MAX}, not {replicas}; nothing was changed")

    def mutate(manifest: dict[str, Any], _record: Record) -> None:
        manifest["spec"]["replicas"] = replicas

    before, after = edit_spec(cluster, namespace, name, mutate, known=known)
    return _recorded(emit, before, after, ev.SpecChange.SCALE, replicas=replicas)


def restart(
    cluster: Cluster,
    namespace: str,
    name: str,
    emit: Emit,
    *,
    now: datetime | None = None,
    known: Record | None = None,
) -> SpecChangeResult:
    """A new template with a new restartedAt annotation, as kubectl rollout restart does."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def mutate(manifest: dict[str, Any], _record: Record) -> None:
        template = manifest["spec"]["template"].setdefault("metadata", {})
        template.setdefault("annotations", {})[RESTARTED_AT] = stamp

    before, after = edit_spec(cluster, namespace, name, mutate, known=known)
    return _recorded(emit, before, after, ev.SpecChange.RESTART, restarted_at=stamp)


def undo_target(cluster: Cluster, record: Record, to_revision: int) -> tuple[int, Any]:
    """The revision undo returns to (``to_revision``, or the newest before the current one) and its ReplicaSet."""
    revisions = by_revision(cluster, record)
    current = max(revisions, default=0)
    wanted = to_revision or max((r for r in revisions if r != current), default=0)
    if wanted not in revisions or not wanted:
        raise UserFacingError(
            f"unable to find the specified revision {to_revision or 'before ' + str(current)} "
            f"of workload {record.name}; revisions: {', '.join(map(str, sorted(revisions))) or 'none'}"
        )
    return wanted, revisions[wanted]


def undo(cluster: Cluster, namespace: str, name: str, to_revision: int, emit: Emit) -> SpecChangeResult:
    """Return to a previous revision's pod template and annotations (kubectl rollback.go); the driver then reuses
    its ReplicaSet. Refused while paused; a revision whose template is the current one changes nothing."""
    record = read(cluster, namespace, name)
    if record.spec.paused:
        raise UserFacingError(
            f'you cannot roll back a paused workload ("{name}"); resume it first with '
            f"{next_steps.resume_workload(name)} and try again"
        )
    revision, rs = undo_target(cluster, record, to_revision)
    if replica_sets.to_managed(rs).template_hash == replica_sets.current_identity(cluster, record):
        return _recorded(
            emit,
            record,
            record,
            ev.SpecChange.UNDO,
            to_revision=revision,
            replica_set=str(rs.metadata.name),
            skipped=True,
        )
    template = replica_sets.template_of(rs)
    target_annotations = dict(rs.metadata.annotations or {})

    def mutate(manifest: dict[str, Any], current: Record) -> None:
        manifest["spec"]["template"] = copy.deepcopy(template)
        metadata = manifest.setdefault("metadata", {})
        metadata["annotations"] = annotations_after_undo(current.spec.annotations, target_annotations)

    before, after = edit_spec(cluster, namespace, name, mutate)
    return _recorded(emit, before, after, ev.SpecChange.UNDO, to_revision=revision, replica_set=str(rs.metadata.name))


def set_paused(cluster: Cluster, namespace: str, name: str, emit: Emit, *, paused: bool) -> SpecChangeResult:
    """Pause (no rollout progress, no deadline; scaling still applies) or resume; UsageError when already so."""
    record = read(cluster, namespace, name)
    if bool(record.spec.paused) == paused:
        raise UsageError(
            f'workload "{name}" is already paused' if paused else f'workload "{name}" is not paused; nothing to resume'
        )

    def attempt() -> tuple[Record, Record, Record]:
        before = read(cluster, namespace, name)
        manifest = copy.deepcopy(before.manifest)
        manifest["spec"]["paused"] = paused
        stored = save_spec(cluster, manifest, parse_workload(manifest, default_namespace=before.namespace), before)
        conditions = paused_conditions(
            stored.status.conditions,
            paused=paused,
            has_deadline=stored.target().progress_deadline_seconds is not None,
            now=time.time(),
        )
        status = dataclasses.replace(stored.status, conditions=conditions)
        if paused and before.status.observed_generation >= before.generation:
            # A pause asks nothing of the ReplicaSets: it is observed as soon as it is stored, as the
            # controller's paused sync observes it at once (otherwise status would say "Waiting for
            # deployment spec update to be observed" until some driver ran).
            status = dataclasses.replace(status, observed_generation=stored.generation)
        return before, stored, save_status(cluster, stored, status)

    before, stored, after = retrying_conflicts(name, attempt)
    change = ev.SpecChange.PAUSE if paused else ev.SpecChange.RESUME
    result = _recorded(emit, before, after, change)
    for changed in condition_changes(name, stored.status, after.status):
        emit(changed)
    return result


# --- reading ---------------------------------------------------------------------------


def owned_replica_sets(cluster: Cluster, record: Record) -> list[Any]:
    listing = call_with_retry(
        cluster.apps.list_namespaced_replica_set, record.namespace, label_selector=f"{WORKLOAD_LABEL}={record.name}"
    )
    return replica_sets.owned(listing.items, record)


def by_revision(cluster: Cluster, record: Record) -> dict[int, Any]:
    """The workload's ReplicaSets by revision number."""
    return {replica_sets.to_managed(rs).revision: rs for rs in owned_replica_sets(cluster, record)}


@dataclass(frozen=True, kw_only=True)
class Revision:
    number: int
    replica_set: str
    #: kubernetes.kubernetes.io/change-cause, when the manifest set one
    change_cause: str | None
    #: the pod template as it was applied
    template: dict[str, Any]


def history(cluster: Cluster, namespace: str, name: str) -> list[Revision]:
    """Every revision the workload still has a ReplicaSet for, oldest first."""
    revisions = by_revision(cluster, read(cluster, namespace, name))
    return [
        Revision(
            number=number,
            replica_set=str(rs.metadata.name),
            change_cause=(rs.metadata.annotations or {}).get(CHANGE_CAUSE),
            template=replica_sets.template_of(rs),
        )
        for number, rs in sorted(revisions.items())
    ]


@dataclass(frozen=True, kw_only=True)
class StatusReport:
    record: Record
    phase: ev.RolloutPhase
    #: kubectl rollout status' line
    message: str


def rollout_status(cluster: Cluster, namespace: str, name: str) -> StatusReport:
    record = read(cluster, namespace, name)
    target = record.target()
    phase = rollout_phase(target, record.status)
    return StatusReport(record=record, phase=phase, message=phase_message(name, target, record.status, phase))


def delete(cluster: Cluster, namespace: str, name: str) -> Record:
    """Delete the record; the garbage collector removes its ReplicaSets and their pods first (Foreground)."""
    record = read(cluster, namespace, name)
    call_with_retry(
        cluster.core.delete_namespaced_config_map, record_name(name), record.namespace, propagation_policy="Foreground"
    )
    return record
