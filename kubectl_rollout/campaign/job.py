"""A campaign as a job: the body the job loop runs for a campaign spec (``jobs.kinds.campaign``)."""

from __future__ import annotations

from kubectl_rollout.campaign.engine import CampaignEngine
from kubectl_rollout.drain.engine import drain_permissions, node_batch_permissions, surge_permissions
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import JobResult, JobSpec, OnBlocked
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.permissions import Permission, require


def campaign_permissions(spec: JobSpec) -> list[Permission]:
    """A drain's, the soak's (a node batch's wait), a surge's under ``--on-blocked surge``, and the node
    labels; checked before the first cordon."""
    job = spec.campaign
    assert job is not None
    read_only = job.plan_only
    needed = drain_permissions(job.drain, by_selector=bool(job.selector), read_only=read_only)
    needed.append(Permission("list", "pods"))
    if not read_only:
        needed += node_batch_permissions()
        if job.on_blocked is OnBlocked.SURGE:
            needed += surge_permissions(plan_only=False)
    return list(dict.fromkeys(needed))


def run_campaign_job(spec: JobSpec, cluster: Cluster, context: JobContext) -> JobResult:
    """Check the settings and permissions, resolve the nodes, plan; then (unless ``--plan``) run the waves."""
    job = spec.campaign
    assert job is not None
    engine = CampaignEngine(cluster, job, context, connection=spec.connection)  # settings checked here
    try:
        require(cluster, campaign_permissions(spec), action=command("campaign"))
        nodes = engine.resolve_nodes()
        plan = engine.plan(nodes)
        context.emit(plan.event)
        if job.plan_only or job.drain.dry_run is not DryRun.NONE:
            waves = len(plan.event.waves)
            return JobResult.ended(
                f"planned {len(nodes)} node(s) in {waves} wave(s)", ok=True, cancelled=context.cancelled
            )
        finished = engine.run(plan)
    finally:
        engine.close()
    parts = [f"{len(finished.done)} node(s) done"]
    for count, what in (
        (len(finished.skipped), "skipped"),
        (len(finished.kept), "kept"),
        (len(finished.failed), "failed"),
        (len(finished.not_started), "not started"),
    ):
        if count:
            parts.append(f"{count} {what}")
    summary = ", ".join(parts) + (f" ({finished.stopped})" if finished.stopped else "")
    return JobResult.ended(summary, ok=finished.succeeded, cancelled=context.cancelled)
