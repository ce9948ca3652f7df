"""A rollout job: one action on a managed workload (a spec change, then driving it; or following it), as
one call a job runner, the CLI, the agent or the TUI makes the same way.

``run_rollout_action`` emits the job's events (``jobs.events.rollout``), ends
every job with ``RolloutFinished`` (an error included: its ``message`` says
what failed, and the error is raised on) and returns that event. Cancellation
is cooperative: ``cancel`` is looked at before the spec changes and between the
driver's passes, never in the middle of a write, so the record is always whole
and the next driver (``status -w``) carries on from it.
"""

from __future__ import annotations

import dataclasses

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.jobs.kinds.rollout import command_words
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import ActionKind, DriveOptions, JobResult, JobSpec, RolloutAction
from kubectl_rollout.kube.cluster_access import Cluster, describe_api_error
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.holder_identity import display
from kubectl_rollout.kube.permissions import require
from kubectl_rollout.kube.record_names import driver_lease_name
from kubectl_rollout.kube.workload_lease import LeaseHeld, refuse_while_held_for_a_purpose
from kubectl_rollout.rollout import operations
from kubectl_rollout.rollout.bluegreen import commands as bluegreen_commands
from kubectl_rollout.rollout.bluegreen.services import check_manifest
from kubectl_rollout.rollout.canary import commands as canary_commands
from kubectl_rollout.rollout.canary.job_template import check_job_templates
from kubectl_rollout.rollout.driver import RolloutDriver, RolloutResult
from kubectl_rollout.rollout.follow import drive, follow_or_drive
from kubectl_rollout.rollout.permissions import rollout_permissions
from kubectl_rollout.rollout.record import Record, read
from kubectl_rollout.rollout.spec import parse_workload

__all__ = ["ActionKind", "DriveOptions", "RolloutAction", "run_rollout_action", "run_rollout_job"]


def run_rollout_job(spec: JobSpec, cluster: Cluster, context: JobContext) -> JobResult:
    """The body the job loop runs for a rollout spec (``jobs.kinds.rollout``): permissions, then the action.

    Paused, a rollout job pauses the workload it drives (as ``pause NAME`` does) and waits for ``jobs resume``.
    """
    action = spec.rollout
    assert action is not None
    # Permissions first, as a drain does: a viewer learns which verbs it lacks, and nothing changes.
    namespace = action.named_namespace or cluster.namespace
    require(cluster, rollout_permissions(action, namespace), action=command(*command_words(action), action.workload))
    finished = run_rollout_action(cluster, action, context)
    summary = f"workload/{finished.workload}: {finished.message}"
    return JobResult.ended(summary, ok=finished.succeeded, cancelled=context.cancelled)


def run_rollout_action(cluster: Cluster, action: RolloutAction, context: JobContext) -> ev.RolloutFinished:
    """Run one rollout job to its end; its last event (RolloutFinished) is also its result.

    ``context.lease_holder``: the identity the workload's Lease is held under (see ``RolloutDriver``).
    ``context.paused``: the job's pause switch: while it is set, the driven workload is paused and the job waits
    for it to be cleared, then resumes the workload and drives on (see ``RolloutDriver``).
    """
    emit = context.emit
    namespace = action.named_namespace or cluster.namespace
    name = action.workload
    try:
        if context.cancelled:
            finished = ev.RolloutFinished(
                workload=name,
                namespace=namespace,
                succeeded=False,
                outcome=ev.RolloutOutcome.INTERRUPTED,
                message="interrupted before anything was changed",
            )
        else:
            finished = _run(cluster, action, namespace, context)
    except Exception as err:
        emit(
            ev.RolloutFinished(
                workload=name, namespace=namespace, succeeded=False, outcome=ev.RolloutOutcome.ERROR, message=_why(err)
            )
        )
        raise
    emit(finished)
    return finished


def _run(
    cluster: Cluster,
    action: RolloutAction,
    namespace: str,
    context: JobContext,
) -> ev.RolloutFinished:
    emit = context.emit
    name = action.name
    kind = action.kind
    if kind is ActionKind.WATCH:
        read(cluster, namespace, name)  # not found: say so now, not after following nothing
        return _finished(
            name,
            namespace,
            follow_or_drive(cluster, namespace, name, action.drive, context),
        )
    if kind in (ActionKind.PROMOTE, ActionKind.ABORT, ActionKind.RETRY):
        refuse_while_held_for_a_purpose(cluster, namespace, driver_lease_name(action.workload))
        return _canary_command(cluster, action, namespace, context)
    if kind is ActionKind.APPLY:
        if action.manifest is None:
            raise UserFacingError("apply needs a manifest")
        namespace = parse_workload(action.manifest, default_namespace=cluster.namespace).namespace
    driver: RolloutDriver | None = None
    if kind is not ActionKind.PAUSE and action.drive.wait:
        # The driver lists and watches while the change is checked and written (see RolloutDriver.prefetch).
        driver = RolloutDriver(cluster, namespace, action.workload, context, action.drive)
        driver.prefetch()
    try:
        # A free Lease is the driver's before the change is written (one request, where checking who holds it
        # and taking it after the write were two); one already there is judged as before, after the write.
        lease_taken = driver is not None and driver.take_lease_if_free()
        # With the Lease free, no driver writes the record meanwhile: the one the driver just listed is current
        # (and if not, the write conflicts and reads it afresh).
        known = driver.listed_record() if driver is not None and lease_taken else None
        recorded = _change(cluster, action, namespace, emit, lease_taken=lease_taken, known=known)
    except BaseException:
        if driver is not None:
            driver.stop()
        raise
    record = recorded.record
    if driver is None:
        return ev.RolloutFinished(
            workload=record.name,
            namespace=record.namespace,
            succeeded=True,
            outcome=ev.RolloutOutcome.RECORDED,
            message=f"generation {record.generation} recorded; not driven",
            paused=record.spec.paused,
        )
    written = (recorded.written_over, record) if recorded.written_over is not None else None
    return _finished(record.name, record.namespace, driver.run(after_generation=record.generation, written=written))


def _change(
    cluster: Cluster,
    action: RolloutAction,
    namespace: str,
    emit: Emit,
    *,
    lease_taken: bool = False,
    known: Record | None = None,
) -> operations.SpecChangeResult:
    """Check and record the spec change ``action`` asks for (``lease_taken``: this job's driver holds the Lease;
    ``known``: the record as it was just listed, see ``operations.edit_spec``)."""
    kind, name = action.kind, action.name
    # A spec change is carried out by a driver; while a drain holds the driver's Lease to surge the workload,
    # none can run, so the change is refused before it is recorded (LeaseHeld in the drain's words).
    if not lease_taken:
        refuse_while_held_for_a_purpose(cluster, namespace, driver_lease_name(action.workload))
    if kind is ActionKind.APPLY:
        assert action.manifest is not None
        # A Job gate's template is checked before anything is written: the manifest's own checks are pure.
        spec = parse_workload(action.manifest, default_namespace=cluster.namespace)
        check_job_templates(cluster, namespace=spec.namespace, workload=spec.name, annotations=spec.annotations)
        check_manifest(cluster, action.manifest)  # blue-green: its Services exist and select its pods
        recorded = operations.apply_manifest(cluster, action.manifest, emit)
    elif kind is ActionKind.SET_IMAGE:
        recorded = operations.set_image(cluster, namespace, name, action.images, emit, known=known)
    elif kind is ActionKind.SCALE:
        recorded = operations.scale(cluster, namespace, name, action.replicas, emit, known=known)
    elif kind is ActionKind.RESTART:
        recorded = operations.restart(cluster, namespace, name, emit, known=known)
    elif kind is ActionKind.UNDO:
        recorded = operations.undo(cluster, namespace, name, action.to_revision, emit)
    else:
        recorded = operations.set_paused(cluster, namespace, name, emit, paused=kind is ActionKind.PAUSE)
    return recorded


def _canary_command(cluster: Cluster, action: RolloutAction, namespace: str, context: JobContext) -> ev.RolloutFinished:
    """promote, abort, retry: record it, then drive the workload, unless another driver holds it (that one
    carries it out within a second: it watches the record)."""
    name, emit = action.name, context.emit
    if bluegreen_commands.is_blue_green(cluster, namespace, name):
        # The same three commands switch a blue-green workload's Services (promote --full is promote there).
        verbs = {
            ActionKind.PROMOTE: bluegreen_commands.promote,
            ActionKind.ABORT: bluegreen_commands.abort,
            ActionKind.RETRY: bluegreen_commands.retry,
        }
        record = verbs[action.kind](cluster, namespace, name, emit)
    elif action.kind is ActionKind.PROMOTE:
        record = canary_commands.promote(cluster, namespace, name, emit, full=action.full)
    elif action.kind is ActionKind.ABORT:
        record = canary_commands.abort(cluster, namespace, name, emit)
    else:
        record = canary_commands.retry(cluster, namespace, name, emit)
    if not action.drive.wait:
        return ev.RolloutFinished(
            workload=name, namespace=namespace, succeeded=True, outcome=ev.RolloutOutcome.RECORDED, message="recorded"
        )
    try:
        result = drive(cluster, record.namespace, name, action.drive, context)
    except LeaseHeld as held:
        driver = display(held.holder) if held.holder else "another process"
        return ev.RolloutFinished(
            workload=name,
            namespace=namespace,
            succeeded=True,
            outcome=ev.RolloutOutcome.RECORDED,
            message=f"recorded; the driver that holds the workload ({driver}) carries it out; follow it with "
            f"{command('status', name, '-w')}",
            driven_by=driver,
        )
    if action.kind is ActionKind.ABORT and result.outcome is ev.RolloutOutcome.ABORTED:
        # What abort asked for: the stable ReplicaSet back at full size.
        result = dataclasses.replace(result, succeeded=True)
    return _finished(name, record.namespace, result)


def _finished(name: str, namespace: str, result: RolloutResult) -> ev.RolloutFinished:
    return ev.RolloutFinished(
        workload=name,
        namespace=namespace,
        succeeded=result.succeeded,
        outcome=result.outcome,
        message=result.message,
        paused=result.paused,
        rolled_back_to=result.rolled_back_to,
    )


def _why(err: Exception) -> str:
    if isinstance(err, UserFacingError):
        return err.message
    if isinstance(err, ApiException):
        return describe_api_error(err)
    return f"{type(err).__name__}: {err}"
