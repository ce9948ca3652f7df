"""The facts of a rollout job: one action on a managed workload (a spec change and driving it, or following it)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar

from kubectl_rollout.jobs.events import bluegreen as bev
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.kinds.base import JobKindFacts, claim
from kubectl_rollout.jobs.spec import ActionKind, JobKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kubectl_rollout.jobs.events.base import Event
    from kubectl_rollout.jobs.spec import JobSpec, RolloutAction

#: the command that runs each rollout action, as a person types it, where it is not the action's own name
COMMAND_WORDS: dict[ActionKind, tuple[str, ...]] = {
    ActionKind.SET_IMAGE: ("set", "image"),
    ActionKind.WATCH: ("status", "-w"),
}


def command_words(action: RolloutAction) -> tuple[str, ...]:
    """``("set", "image")`` for a set image, ``("undo",)`` for an undo: the words before the workload's name."""
    return COMMAND_WORDS.get(action.kind, (str(action.kind),))


def _section(spec: JobSpec) -> RolloutAction:
    assert spec.rollout is not None, f"a {spec.kind.value} job is not a rollout"
    return spec.rollout


class RolloutFacts(JobKindFacts):
    kind: ClassVar[JobKind] = JobKind.ROLLOUT
    body = "kubectl_rollout.rollout.actions:run_rollout_job"
    printer = "kubectl_rollout.cli.rollout_output:rollout_printer"
    live_footer = False
    screen = "kubectl_rollout.tui.screens.rollout:RolloutScreen"
    view = "kubectl_rollout.jobs.views.rollout:RolloutView"
    fold = "kubectl_rollout.jobs.views.rollout:fold"
    event_modules = ("rollout", "canary", "bluegreen")
    pausable = True
    pause_means = "the workload is paused (no rollout progress) until the job is resumed"

    def target(self, spec: JobSpec) -> str:
        return f"workload/{_section(spec).workload}"

    def timeout(self, spec: JobSpec) -> float | None:
        return _section(spec).drive.timeout or None

    def namespace(self, spec: JobSpec) -> str | None:
        return _section(spec).named_namespace or spec.connection.namespace

    def claims(self, spec: JobSpec) -> frozenset[str]:
        name = _section(spec).workload
        return frozenset({claim(spec.connection.context, f"{self.namespace(spec) or 'default'}/workload/{name}")})

    def to_resume(self, spec: JobSpec, recorded: set[str], events: Sequence[Event] = ()) -> JobSpec:
        # A change recorded on the workload is followed to its end (status -w) rather than made again: a second
        # restart would restart it twice, a second promote would skip a step more. A change never recorded is
        # made as it was asked.
        action = _section(spec)
        done = {
            ev.SpecChanged.TYPE,
            cev.Promoted.TYPE,
            cev.Aborted.TYPE,
            cev.Retried.TYPE,
            bev.BlueGreenPromoted.TYPE,
            bev.BlueGreenAborted.TYPE,
            bev.BlueGreenRetried.TYPE,
        }
        if action.kind is ActionKind.WATCH or not done & recorded:
            return spec
        watch = dataclasses.replace(
            action, kind=ActionKind.WATCH, name=action.workload, namespace=action.named_namespace, manifest=None
        )
        return dataclasses.replace(spec, rollout=watch)


ROLLOUT = RolloutFacts()
