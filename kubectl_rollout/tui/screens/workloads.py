"""The Workloads screen: the managed workloads and Deployments of a namespace with their rollout state.

Every change is a job of the agent, the same jobs the CLI runs: `p` pause or
resume, `u` undo to a revision chosen from the workload's history, `r`
restart, `i` set image (a small form); `a` aborts the rollout a job of the
agent drives (the job is cancelled after its current step; the record stays
whole). A Deployment the server's controller drives can only be restarted (by
eviction, as `restart deployment/NAME` does); its other keys are greyed out,
and so is every key but `a` while a job drives the workload. Restart, undo and
abort ask first; `--readonly` hides them all.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType

from kubectl_rollout.agent.client import cluster_calls
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.cluster_rows import WorkloadKind, WorkloadRow
from kubectl_rollout.jobs.events.rollout import ContainerImage
from kubectl_rollout.jobs.spec import ActionKind, JobKind, JobSpec, RestartJob, RolloutAction
from kubectl_rollout.tui.cluster_messages import JobSubmitted
from kubectl_rollout.tui.screens.cluster_table import ClusterTableScreen
from kubectl_rollout.tui.screens.dialogs.image_form import ImageForm
from kubectl_rollout.tui.screens.dialogs.revision import RevisionDialog, revision_label
from kubectl_rollout.tui.widgets.live_table import Cell

PHASE_STYLE = {
    "Complete": "green",
    "DeadlineExceeded": "red",
    "PodsFailing": "red",
}
#: what applies to a Deployment the server's controller drives
DEPLOYMENT_ACTIONS = frozenset({"restart"})


def rollout_state(row: WorkloadRow) -> Text:
    if row.paused:
        return Text("Paused", style="yellow")
    return Text(row.phase or "-", style=PHASE_STYLE.get(row.phase, "cyan"))


class WorkloadsScreen(ClusterTableScreen[WorkloadRow]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "pause", "Pause/resume"),
        Binding("u", "undo", "Undo"),
        Binding("r", "restart", "Restart"),
        Binding("i", "set_image", "Image"),
        Binding("a", "abort", "Abort"),
        *ClusterTableScreen.TABLE_BINDINGS,
    ]
    TITLE = "Workloads"
    COLUMNS = ("KIND", "NAME", "REV", "READY", "UP-TO-DATE", "AVAILABLE", "STATE", "JOB")
    HELP_TEXT = (
        "The managed workloads and Deployments of the namespace with their rollout state. Every change is an "
        "agent job: pause/resume, undo to a revision, restart, set image; abort cancels the job that drives a "
        "rollout (it stops after its current step). A Deployment can only be restarted, by eviction."
    )
    CHANGES = frozenset({"pause", "undo", "restart", "set_image", "abort"})

    def heading(self) -> str:
        context = self.scope.connection.context or "current context"
        ro = " · read-only" if self.scope.readonly else ""
        return f"Workloads · {context} · namespace {self.scope.workload_namespace}{ro}"

    async def load(self) -> list[WorkloadRow]:
        return await self.link.run(
            cluster_calls.workloads(self.scope.connection, namespace=self.scope.workload_namespace)
        )

    def key_of(self, row: WorkloadRow) -> str:
        return row.target

    def cells_of(self, row: WorkloadRow) -> tuple[Cell, ...]:
        kind = "workload" if row.kind is WorkloadKind.MANAGED else "deploy"
        return (
            kind,
            row.name,
            str(row.revision or "-"),
            f"{row.ready}/{row.replicas}",
            str(row.updated),
            str(row.available),
            rollout_state(row),
            row.driven_by or "-",
        )

    def detail_of(self, row: WorkloadRow) -> str:
        lines = [row.message or row.phase, "images: " + ", ".join(row.images)]
        for condition in row.conditions:
            lines.append(f"{condition.type}={condition.status} {condition.reason}: {condition.message}".rstrip(": "))
        return "\n".join(lines)

    def applies(self, action: str, row: WorkloadRow) -> bool | None:
        if row.kind is WorkloadKind.DEPLOYMENT and action not in DEPLOYMENT_ACTIONS:
            return None
        if action == "abort":
            return True if row.driven_by else None
        return None if row.driven_by else True

    # --- actions -------------------------------------------------------------------------

    async def _submit(self, spec: JobSpec, done: str) -> None:
        try:
            job = await self.link.run(cluster_calls.submit(spec))
        except AgentError as err:
            self.say(err.message, error=True)
            return
        self.say(f"job {job.id}: {done}")
        self.post_message(JobSubmitted(job, open_it=False))
        self.action_refresh()

    def _rollout(
        self, row: WorkloadRow, kind: ActionKind, *, to_revision: int = 0, images: tuple[ContainerImage, ...] = ()
    ) -> JobSpec:
        action = RolloutAction(
            kind=kind, name=row.name, namespace=row.namespace, to_revision=to_revision, images=images
        )
        return JobSpec(kind=JobKind.ROLLOUT, connection=self.scope.connection, rollout=action)

    @work(exclusive=True, group="action")
    async def action_pause(self) -> None:
        row = self.selected
        if not self.allowed("pause") or row is None:
            return
        kind = ActionKind.RESUME if row.paused else ActionKind.PAUSE
        await self._submit(self._rollout(row, kind), f"{kind.value} {row.target}")

    @work(exclusive=True, group="action")
    async def action_restart(self) -> None:
        row = self.selected
        if not self.allowed("restart") or row is None:
            return
        if row.kind is WorkloadKind.MANAGED:
            detail = "A rolling update to a new template (restartedAt), as kubectl rollout restart does."
            spec = self._rollout(row, ActionKind.RESTART)
        else:
            detail = "Its pods are evicted one at a time; PodDisruptionBudgets decide. No new revision."
            connection = self.scope.connection
            if connection.namespace != row.namespace:
                connection = dataclasses.replace(connection, namespace=row.namespace)
            spec = JobSpec(kind=JobKind.RESTART, connection=connection, restart=RestartJob(workload=row.target))
        if await self.confirmed(f"Restart {row.target}? Every pod is replaced.", yes="Restart", detail=detail):
            await self._submit(spec, f"restart {row.target}")

    @work(exclusive=True, group="action")
    async def action_undo(self) -> None:
        row = self.selected
        if not self.allowed("undo") or row is None:
            return
        try:
            revisions = await self.link.run(
                cluster_calls.history(self.scope.connection, row.name, namespace=row.namespace)
            )
        except AgentError as err:
            self.say(err.message, error=True)
            return
        if not any(not r.current for r in revisions):
            self.say(f"{row.target} has no earlier revision to return to")
            return
        chosen = await self.app.push_screen_wait(RevisionDialog(row.target, revisions))
        if chosen is None:
            self.say("undo cancelled; nothing was changed")
            return
        (revision,) = [r for r in revisions if r.number == chosen]
        question = f"Undo {row.target} to revision {chosen}?"
        if await self.confirmed(question, yes="Undo", detail=revision_label(revision)):
            await self._submit(
                self._rollout(row, ActionKind.UNDO, to_revision=chosen), f"undo {row.target} to {chosen}"
            )

    @work(exclusive=True, group="action")
    async def action_set_image(self) -> None:
        row = self.selected
        if not self.allowed("set_image") or row is None:
            return
        image: ContainerImage | None = await self.app.push_screen_wait(ImageForm(row.target, row.images))
        if image is None:
            self.say("set image cancelled; nothing was changed")
            return
        spec = self._rollout(row, ActionKind.SET_IMAGE, images=(image,))
        await self._submit(spec, f"set image {image.container}={image.image} on {row.target}")

    @work(exclusive=True, group="action")
    async def action_abort(self) -> None:
        row = self.selected
        if not self.allowed("abort") or row is None:
            return
        question = f"Abort the rollout of {row.target}? Job {row.driven_by} stops after its current step."
        detail = "The rollout stays where it is; undo (u) or resume it later."
        if not await self.confirmed(question, yes="Abort", detail=detail):
            return
        try:
            job = await self.link.run(cluster_calls.abort(self.scope.connection, row.name, namespace=row.namespace))
        except AgentError as err:
            self.say(err.message, error=True)
            return
        self.say(f"job {job.id} cancelled: the rollout of {row.target} stops after its current step")
        self.action_refresh()
