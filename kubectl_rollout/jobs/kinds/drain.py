"""The facts of a drain job: nodes by name or selector, cordoned and emptied through the Eviction API."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.kinds.base import JobKindFacts, claim
from kubectl_rollout.jobs.spec import JobKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kubectl_rollout.jobs.events.base import Event
    from kubectl_rollout.jobs.spec import DrainJob, JobSpec


def node_claim(context: str | None, node: str) -> str:
    """A drain's claim on one node; a drain by selector adds these as it cordons (the agent reads NodeCordoned)."""
    return claim(context, f"node/{node}")


def _section(spec: JobSpec) -> DrainJob:
    assert spec.drain is not None, f"a {spec.kind.value} job is not a drain"
    return spec.drain


class DrainFacts(JobKindFacts):
    kind: ClassVar[JobKind] = JobKind.DRAIN
    body = "kubectl_rollout.drain.job:run_drain_job"
    printer = "kubectl_rollout.cli.drain_output:drain_printer"
    live_footer = True
    screen = "kubectl_rollout.tui.screens.evictions:EvictionsScreen"
    view = "kubectl_rollout.jobs.views.drain:DrainView"
    fold = "kubectl_rollout.jobs.views.drain:fold"
    event_modules = ("drain", "eviction")
    pausable = True
    pause_means = "no new eviction starts; those in flight go on"

    def target(self, spec: JobSpec) -> str:
        drain = _section(spec)
        return ", ".join(f"node/{n}" for n in drain.nodes) or f"-l {drain.selector}"

    def timeout(self, spec: JobSpec) -> float | None:
        return _section(spec).options.timeout or None

    def namespace(self, spec: JobSpec) -> str | None:
        return None  # nodes have none

    def claims(self, spec: JobSpec) -> frozenset[str]:
        drain = _section(spec)
        # --plan and dry runs change nothing: they may look at a node another job drains.
        if drain.plan_only or drain.options.dry_run is not DryRun.NONE:
            return frozenset()
        return frozenset(node_claim(spec.connection.context, node) for node in drain.nodes)

    def to_resume(self, spec: JobSpec, recorded: set[str], events: Sequence[Event] = ()) -> JobSpec:
        return spec  # cordoned nodes are cordoned again, evicted pods are gone: it runs as it was


DRAIN = DrainFacts()
