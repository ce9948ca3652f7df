"""The agent refuses a second job on an object a running job drives.

What a job claims is its kind's fact (``JobKindFacts.claims``): ``CONTEXT
node/NAME`` for a drain, ``CONTEXT NAMESPACE/kind/NAME`` for a restart,
``CONTEXT NAMESPACE/workload/NAME`` for a managed workload's rollout. A drain
by label selector claims its nodes once it has resolved them (the agent adds
them from the job's own ``NodeCordoned`` events).
"""

from __future__ import annotations

from collections.abc import Mapping

from kubectl_rollout.jobs.kinds import facts_for
from kubectl_rollout.jobs.spec import JobSpec


def conflict(spec: JobSpec, running: Mapping[str, frozenset[str]]) -> tuple[str, str] | None:
    """``(job id, object)`` of a running job that already drives an object ``spec`` would, or None."""
    wanted = facts_for(spec).claims(spec)
    for job_id, held in running.items():
        shared = sorted(wanted & held)
        if shared:
            return job_id, shared[0].partition(" ")[2]
    return None
