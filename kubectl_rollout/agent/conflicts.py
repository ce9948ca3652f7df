"""Which objects a job drives, so that the agent refuses a second job on them while the first runs.

A claim is a string naming one object of one cluster (the kubeconfig context
qualifies it): ``CONTEXT node/NAME`` for a drain, ``CONTEXT NAMESPACE/kind/NAME``
for a restart, ``CONTEXT NAMESPACE/workload/NAME`` for a managed workload's
rollout. A drain by label selector claims its nodes once it has resolved them
(the agent adds them from the job's own ``NodeCordoned`` events).
"""

from __future__ import annotations

from collections.abc import Mapping

from kubectl_rollout.jobs.spec import JobSpec


def node_claim(context: str | None, node: str) -> str:
    return f"{context or ''} node/{node}"


def claims(spec: JobSpec) -> frozenset[str]:
    context = spec.connection.context
    if spec.drain is not None:
        # --plan and dry runs change nothing: they may look at a node another job drains.
        if spec.drain.plan_only or spec.drain.options.dry_run.value != "none":
            return frozenset()
        return frozenset(node_claim(context, node) for node in spec.drain.nodes)
    if spec.rollout is not None:
        namespace = spec.rollout.named_namespace or spec.connection.namespace or "default"
        return frozenset({f"{context or ''} {namespace}/workload/{spec.rollout.workload}"})
    if spec.restart is not None:
        if spec.restart.dry_run.value != "none":
            return frozenset()
        return frozenset({f"{context or ''} {spec.connection.namespace or 'default'}/{spec.restart.workload}"})
    return frozenset()


def conflict(spec: JobSpec, running: Mapping[str, frozenset[str]]) -> tuple[str, str] | None:
    """``(job id, object)`` of a running job that already drives an object ``spec`` would, or None."""
    wanted = claims(spec)
    for job_id, held in running.items():
        shared = sorted(wanted & held)
        if shared:
            return job_id, shared[0].partition(" ")[2]
    return None
