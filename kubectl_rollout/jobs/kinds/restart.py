"""The facts of a restart by eviction: every pod of a workload the plugin does not own, replaced one at a time."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar

from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.kinds.base import JobKindFacts, claim
from kubectl_rollout.jobs.spec import JobKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kubectl_rollout.jobs.events.base import Event
    from kubectl_rollout.jobs.spec import JobSpec, RestartJob


def _section(spec: JobSpec) -> RestartJob:
    assert spec.restart is not None, f"a {spec.kind.value} job is not a restart"
    return spec.restart


class RestartFacts(JobKindFacts):
    kind: ClassVar[JobKind] = JobKind.RESTART
    body = "kubectl_rollout.restart.job:run_restart_job"
    printer = "kubectl_rollout.cli.restart_output:restart_printer"
    live_footer = False
    screen = "kubectl_rollout.tui.screens.evictions:EvictionsScreen"
    view = "kubectl_rollout.jobs.views.restart:RestartView"
    fold = "kubectl_rollout.jobs.views.restart:fold"
    event_modules = ("restart",)
    pausable = True
    pause_means = "no new eviction starts; the pod in flight is replaced"

    def target(self, spec: JobSpec) -> str:
        return _section(spec).workload

    def timeout(self, spec: JobSpec) -> float | None:
        return _section(spec).timeout or None

    def namespace(self, spec: JobSpec) -> str | None:
        return spec.connection.namespace

    def claims(self, spec: JobSpec) -> frozenset[str]:
        restart = _section(spec)
        if restart.dry_run is not DryRun.NONE:
            return frozenset()
        return frozenset({claim(spec.connection.context, f"{self.namespace(spec) or 'default'}/{restart.workload}")})

    def to_resume(self, spec: JobSpec, recorded: set[str], events: Sequence[Event] = ()) -> JobSpec:
        # It goes on from its cutoff label (--resume): no pod is replaced twice.
        restart = _section(spec)
        if restart.resume:
            return spec
        return dataclasses.replace(spec, restart=dataclasses.replace(restart, resume=True))


RESTART = RestartFacts()
