"""A restart by eviction as a job: the body the job loop runs for a restart spec (``jobs.kinds.restart``)."""

from __future__ import annotations

from kubectl_rollout.eviction.pod_evictor import EvictionSettings
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import JobResult, JobSpec
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UsageError
from kubectl_rollout.kube.permissions import require
from kubectl_rollout.restart.engine import EvictionRestart, parse_target, restart_permissions


def run_restart_job(spec: JobSpec, cluster: Cluster, context: JobContext) -> JobResult:
    """Check the permissions it needs, then replace the workload's pods one at a time."""
    job = spec.restart
    assert job is not None
    try:
        target = parse_target(job.workload, cluster.namespace)
    except ValueError as err:
        raise UsageError(str(err)) from err
    require(cluster, restart_permissions(target, job.dry_run), action=command("restart", str(target)))
    settings = EvictionSettings(
        grace_period=job.grace_period, dry_run=job.dry_run, timeout=job.timeout, pdb_namespace=target.namespace
    )
    engine = EvictionRestart(cluster, target, context, settings=settings, resume=job.resume)
    finished = engine.run()
    summary = f"{target}: {finished.replaced} pod(s) replaced" + (f"; {finished.failure}" if finished.failure else "")
    return JobResult.ended(summary, ok=not finished.failure, cancelled=context.cancelled)
