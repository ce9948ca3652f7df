"""The one way any job runs: a spec, an ``emit`` for its events and a cancel signal in; a result out.

The CLI runs jobs in-process through ``run_job``; the agent runs the very same
specs. Whatever happens, the stream opens with ``JobStarted`` and closes with
``JobFinished``, and no exception escapes: an error the engine raises (a
missing permission, a node that does not exist) ends the job as failed with
that error's one line and exit code.

Cancellation is cooperative: the engines check the signal between steps (a
drain starts no new eviction once it is set and leaves its nodes cordoned; a
restart stops after the pod in flight; a rollout leaves its record as it was
after its last complete step).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from typing import Protocol

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.engine import DrainEngine, drain_permissions
from kubectl_rollout.eviction.pod_evictor import EvictionSettings
from kubectl_rollout.jobs.events.api import ApiReachable, ApiUnreachable
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted, JobState
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import ActionKind, Connection, JobKind, JobResult, JobSpec
from kubectl_rollout.kube.api_outage import ApiOutage, OutageReport, is_connection_error
from kubectl_rollout.kube.cluster_access import (
    Cluster,
    ConnectionSettings,
    connect,
    describe_api_error,
    describe_transport_failure,
)
from kubectl_rollout.kube.errors import UsageError, UserFacingError
from kubectl_rollout.kube.permissions import require
from kubectl_rollout.restart.engine import EvictionRestart, parse_target, restart_permissions
from kubectl_rollout.rollout.actions import run_rollout_action
from kubectl_rollout.rollout.permissions import rollout_permissions

#: exit codes of the CLI contract
EXIT_OK, EXIT_FAILED = 0, 1

log = logging.getLogger(__name__)


class JobBody(Protocol):
    def __call__(
        self,
        spec: JobSpec,
        cluster: Cluster,
        emit: Emit,
        cancel: threading.Event,
        *,
        lease_holder: str | None,
        paused: threading.Event | None,
    ) -> JobResult: ...


def connect_to(connection: Connection) -> Cluster:
    """Open the job's cluster, reading the credentials from its kubeconfig files now."""
    settings = ConnectionSettings(
        context=connection.context, namespace=connection.namespace, request_timeout=connection.request_timeout
    )
    environ = {"KUBECONFIG": os.pathsep.join(connection.kubeconfig)} if connection.kubeconfig else None
    return connect(settings, environ)


def run_job(
    spec: JobSpec,
    emit: Emit,
    cancel: threading.Event,
    *,
    cluster: Cluster | None = None,
    resumed: bool = False,
    lease_holder: str | None = None,
    paused: threading.Event | None = None,
) -> JobResult:
    """Run ``spec`` to its end. ``cluster``: an already open connection to use (the CLI's), else one is opened.

    ``lease_holder``: the identity the job's Leases are held under. A runner that resumes its own jobs after a
    crash (the agent) passes one that stays the same across its restarts, so that a resumed job recognises the
    Lease it held and goes on at once instead of waiting for it to lapse. None: a new identity per job.

    ``paused``: while it is set, a drain or a restart starts no new eviction (those in flight go on), and a
    rollout job pauses the workload it drives (no rollout progress) until it is cleared, then resumes it.
    """
    emit(
        JobStarted(
            kind=spec.kind.value,
            target=spec.target,
            context=spec.connection.context,
            namespace=spec.connection.namespace,
            resumed=resumed,
        )
    )
    own = cluster is None
    try:
        cluster = cluster if cluster is not None else connect_to(spec.connection)
        if resumed:
            cluster.known_to_answer()  # it did, before the restart: ride out an outage, do not fail fast
        outage = outage_of(spec, cluster, emit, cancel)
        cluster.ride_out_outages(outage)
        try:
            result = _BODIES[spec.kind](spec, cluster, emit, cancel, lease_holder=lease_holder, paused=paused)
            down = outage.still_down()
            if down is not None and result.state is JobState.FAILED:
                # Its own --timeout ran out while the server was gone: that is what the user must hear.
                result = dataclasses.replace(result, error=down)
        finally:
            cluster.ride_out_outages(None)
            if own:
                cluster.close()
    except UserFacingError as err:
        result = JobResult(state=JobState.FAILED, exit_code=err.exit_code, error=err.message)
    except ApiException as err:
        # A 401 names the server and the context whose credentials it refused.
        error = describe_transport_failure(err, cluster).message if err.status == 401 and cluster else None
        result = JobResult(state=JobState.FAILED, exit_code=EXIT_FAILED, error=error or describe_api_error(err))
    except Exception as err:
        # No traceback ever reaches the user: a connection that failed is worded as
        # such (cancelled mid-outage, say), anything else in one line, the trace in the log.
        if cluster is not None and is_connection_error(err):
            message = describe_transport_failure(err, cluster).message
        else:
            log.debug("job %s failed", spec.target, exc_info=True)
            message = f"unexpected error: {type(err).__name__}: {err}".strip()
        result = JobResult(state=JobState.FAILED, exit_code=EXIT_FAILED, error=message)
    emit(JobFinished(state=result.state, exit_code=result.exit_code, summary=result.summary, error=result.error))
    return result


def outage_of(spec: JobSpec, cluster: Cluster, emit: Emit, cancel: threading.Event) -> ApiOutage:
    """How the job rides out its API server going away: events for the user, and its own --timeout as the limit."""

    def down(report: OutageReport) -> None:
        emit(ApiUnreachable(server=report.server, since=report.since, error=report.error))

    def up(report: OutageReport, seconds: float) -> None:
        emit(ApiReachable(server=report.server, down_seconds=round(seconds, 3)))

    return ApiOutage(cluster.server, on_down=down, on_up=up, give_up_after=_timeout_of(spec), cancel=cancel)


def _timeout_of(spec: JobSpec) -> float | None:
    """The job's own --timeout (None: it waits for as long as it takes, and so does its outage)."""
    if spec.drain is not None:
        return spec.drain.options.timeout or None
    if spec.restart is not None:
        return spec.restart.timeout or None
    if spec.rollout is not None:
        return spec.rollout.drive.timeout or None
    return None


def _ended(cancel: threading.Event, summary: str, *, ok: bool) -> JobResult:
    if ok:
        return JobResult(state=JobState.SUCCEEDED, exit_code=EXIT_OK, summary=summary)
    state = JobState.CANCELLED if cancel.is_set() else JobState.FAILED
    return JobResult(state=state, exit_code=EXIT_FAILED, summary=summary)


def _drain(
    spec: JobSpec,
    cluster: Cluster,
    emit: Emit,
    cancel: threading.Event,
    *,
    lease_holder: str | None,
    paused: threading.Event | None,
) -> JobResult:
    job = spec.drain
    assert job is not None
    engine = DrainEngine(cluster, job.options, emit, cancel=cancel, paused=paused)
    try:
        # Permissions first: a restricted user learns what is missing, not just "forbidden".
        needed = drain_permissions(job.options, by_selector=bool(job.selector), read_only=job.plan_only)
        require(cluster, needed, action=command("drain"))
        targets = engine.resolve_nodes(list(job.nodes), job.selector)
        if job.plan_only or job.options.dry_run is not DryRun.NONE:
            emit(engine.plan(targets))
            surges = engine.plan_surges(targets)
            if surges is not None:
                emit(surges)
            if job.plan_only:
                return _ended(cancel, f"planned {len(targets)} node(s)", ok=True)
        finished = engine.run(targets)
    finally:
        engine.close()
    drained = f"{len(finished.drained)} node(s) drained"
    return _ended(
        cancel, drained + (f", {len(finished.failed)} failed" if finished.failed else ""), ok=finished.succeeded
    )


def _restart(
    spec: JobSpec,
    cluster: Cluster,
    emit: Emit,
    cancel: threading.Event,
    *,
    lease_holder: str | None,
    paused: threading.Event | None,
) -> JobResult:
    job = spec.restart
    assert job is not None
    try:
        target = parse_target(job.workload, cluster.namespace)
    except ValueError as err:
        raise UsageError(str(err)) from err
    require(cluster, restart_permissions(target, job.dry_run), action=command("restart", str(target)))
    engine = EvictionRestart(
        cluster,
        target,
        emit,
        settings=_restart_settings(job.grace_period, job.dry_run, job.timeout, target.namespace),
        resume=job.resume,
        cancel=cancel,
        lease_holder=lease_holder,
        paused=paused,
    )
    finished = engine.run()
    summary = f"{target}: {finished.replaced} pod(s) replaced" + (f"; {finished.failure}" if finished.failure else "")
    return _ended(cancel, summary, ok=not finished.failure)


def _restart_settings(grace_period: int, dry_run: DryRun, timeout: float, namespace: str) -> EvictionSettings:
    return EvictionSettings(grace_period=grace_period, dry_run=dry_run, timeout=timeout, pdb_namespace=namespace)


def _rollout(
    spec: JobSpec,
    cluster: Cluster,
    emit: Emit,
    cancel: threading.Event,
    *,
    lease_holder: str | None,
    paused: threading.Event | None,
) -> JobResult:
    # Paused, a rollout job pauses the workload it drives (as `pause NAME` does) and waits for `jobs resume`.
    action = spec.rollout
    assert action is not None
    # Permissions first, as a drain does: a viewer learns which verbs it lacks, and nothing changes.
    namespace = action.named_namespace or cluster.namespace
    require(
        cluster,
        rollout_permissions(action, namespace),
        action=command(*_COMMAND_WORDS.get(action.kind, (str(action.kind),)), action.workload),
    )
    finished = run_rollout_action(cluster, action, emit, cancel, lease_holder=lease_holder, paused=paused)
    summary = f"workload/{finished.workload}: {finished.message}"
    return _ended(ok=finished.succeeded, cancel=cancel, summary=summary)


#: the command that runs each rollout action, as a person types it
_COMMAND_WORDS = {ActionKind.SET_IMAGE: ("set", "image"), ActionKind.WATCH: ("status", "-w")}

_BODIES: dict[JobKind, JobBody] = {
    JobKind.DRAIN: _drain,
    JobKind.RESTART: _restart,
    JobKind.ROLLOUT: _rollout,
}
