"""A drain as a job: the body the job loop runs for a drain spec (``jobs.kinds.drain``)."""

from __future__ import annotations

from kubectl_rollout.drain.engine import DrainEngine, drain_permissions
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import JobResult, JobSpec
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.permissions import require


def run_drain_job(spec: JobSpec, cluster: Cluster, context: JobContext) -> JobResult:
    """Resolve the nodes, plan (``--plan``, dry runs), then cordon and drain them."""
    job = spec.drain
    assert job is not None
    engine = DrainEngine(cluster, job.options, context)
    try:
        # Permissions first: a restricted user learns what is missing, not just "forbidden".
        needed = drain_permissions(job.options, by_selector=bool(job.selector), read_only=job.plan_only)
        require(cluster, needed, action=command("drain"))
        targets = engine.resolve_nodes(list(job.nodes), job.selector)
        if job.plan_only or job.options.dry_run is not DryRun.NONE:
            context.emit(engine.plan(targets))
            surges = engine.plan_surges(targets)
            if surges is not None:
                context.emit(surges)
            if job.plan_only:
                return JobResult.ended(f"planned {len(targets)} node(s)", ok=True, cancelled=context.cancelled)
        finished = engine.run(targets)
    finally:
        engine.close()
    summary = f"{len(finished.drained)} node(s) drained" + (
        f", {len(finished.failed)} failed" if finished.failed else ""
    )
    return JobResult.ended(summary, ok=finished.succeeded, cancelled=context.cancelled)
