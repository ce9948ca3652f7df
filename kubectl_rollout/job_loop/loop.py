"""The one way any job runs: a spec and a ``JobContext`` in, a result out.

Whatever the kind, the loop is the same: ``JobStarted``, connect to the job's
cluster, ride out the API server going away (up to the job's own --timeout),
run the kind's body (``JobKindFacts.body``, beside its engine), ``JobFinished``.
No exception escapes: an error the engine raises (a missing permission, a node
that does not exist) ends the job as failed with that error's one line and exit
code.

Cancellation is cooperative: the engines check the signal between steps (a
drain starts no new eviction once it is set and leaves its nodes cordoned; a
restart stops after the pod in flight; a rollout leaves its record as it was
after its last complete step).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Protocol

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.api import ApiReachable, ApiUnreachable
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted, JobState
from kubectl_rollout.jobs.kinds import facts_for, target_of
from kubectl_rollout.jobs.kinds.base import load
from kubectl_rollout.jobs.spec import EXIT_FAILED, Connection, JobResult, JobSpec
from kubectl_rollout.kube.api_outage import ApiOutage, OutageReport, is_connection_error
from kubectl_rollout.kube.cluster_access import (
    Cluster,
    ConnectionSettings,
    connect,
    describe_api_error,
    describe_transport_failure,
)
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.shared_pools import SharedPools

log = logging.getLogger(__name__)


class JobBody(Protocol):
    """A kind's body: run one job of the kind on an open connection, return how it ended."""

    def __call__(self, spec: JobSpec, cluster: Cluster, context: JobContext) -> JobResult: ...


#: the connections one job leaves open for the next to the same server as the same identity (the agent's jobs)
_POOLS = SharedPools()


def connect_to(connection: Connection) -> Cluster:
    """Open the job's cluster, reading the credentials from its kubeconfig files now (a connection an earlier job
    made with the very same TLS identity is reused: ``shared_pools``)."""
    settings = ConnectionSettings(
        context=connection.context, namespace=connection.namespace, request_timeout=connection.request_timeout
    )
    environ = {"KUBECONFIG": os.pathsep.join(connection.kubeconfig)} if connection.kubeconfig else None
    return connect(settings, environ, pools=_POOLS)


def run_job(spec: JobSpec, context: JobContext, *, cluster: Cluster | None = None, resumed: bool = False) -> JobResult:
    """Run ``spec`` to its end. ``cluster``: an already open connection to use (the CLI's), else one is opened.

    ``resumed``: the job ran before (the agent resumes it after a restart), so its server answered once.
    """
    emit = context.emit
    facts = facts_for(spec)
    emit(
        JobStarted(
            kind=spec.kind.value,
            target=facts.target(spec),
            context=spec.connection.context,
            namespace=spec.connection.namespace,
            resumed=resumed,
        )
    )
    own = cluster is None
    try:
        body: JobBody = load(facts.body)
        cluster = cluster if cluster is not None else connect_to(spec.connection)
        if resumed:
            cluster.known_to_answer()  # it did, before the restart: ride out an outage, do not fail fast
        outage = outage_of(spec, cluster, context)
        cluster.ride_out_outages(outage)
        try:
            result = body(spec, cluster, context)
            down = outage.still_down()
            if down is not None and result.state is JobState.FAILED:
                # Its own --timeout ran out while the server was gone: that is what the user must hear.
                result = dataclasses.replace(result, error=down)
        finally:
            cluster.ride_out_outages(None)
            if own:
                cluster.close()
                _POOLS.keep_warm(cluster.api_client)  # the next job's first requests find open connections
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
            log.debug("job %s failed", target_of(spec), exc_info=True)
            message = f"unexpected error: {type(err).__name__}: {err}".strip()
        result = JobResult(state=JobState.FAILED, exit_code=EXIT_FAILED, error=message)
    emit(JobFinished(state=result.state, exit_code=result.exit_code, summary=result.summary, error=result.error))
    return result


def outage_of(spec: JobSpec, cluster: Cluster, context: JobContext) -> ApiOutage:
    """How the job rides out its API server going away: events for the user, and its own --timeout as the limit."""

    def down(report: OutageReport) -> None:
        context.emit(ApiUnreachable(server=report.server, since=report.since, error=report.error))

    def up(report: OutageReport, seconds: float) -> None:
        context.emit(ApiReachable(server=report.server, down_seconds=round(seconds, 3)))

    timeout = facts_for(spec).timeout(spec)
    return ApiOutage(cluster.server, on_down=down, on_up=up, give_up_after=timeout, cancel=context.cancel)
