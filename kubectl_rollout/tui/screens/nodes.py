"""The Nodes screen: the cluster's nodes with their pods, cordoned state and drain verdict; cordon, drain.

The verdict is the drain engine's dry-run plan, computed by the agent with the
drain options this TUI starts drains with: evict N pods, blocked by PDB X
(healthy/needed), or the error that would stop the drain. `c` / `u` cordon /
uncordon (after a confirmation), `d` shows the node's plan pod by pod and,
once confirmed, submits the drain to the agent as a job and asks the app to
open it (``JobSubmitted``). A drain runs in the agent: leaving the TUI never
stops it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType

from kubectl_rollout.agent.client import cluster_calls
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.cluster_rows import NodeRow, NodeVerdict
from kubectl_rollout.jobs.spec import DrainJob, JobKind, JobSpec
from kubectl_rollout.tui.cluster_messages import JobSubmitted
from kubectl_rollout.tui.screens.cluster_table import ClusterTableScreen
from kubectl_rollout.tui.screens.dialogs.drain_plan import DrainPlanDialog
from kubectl_rollout.tui.widgets.live_table import Cell

VERDICT_STYLE = {
    NodeVerdict.UNKNOWN: "dim",
    NodeVerdict.EVICT: "green",
    NodeVerdict.BLOCKED: "yellow",
    NodeVerdict.ERROR: "red",
}


def node_status(row: NodeRow) -> Text:
    """kubectl get nodes' STATUS: Ready / NotReady, and SchedulingDisabled when cordoned."""
    text = Text("Ready" if row.ready else "NotReady", style="" if row.ready else "red")
    if row.cordoned:
        text.append(",SchedulingDisabled", style="yellow")
    return text


class NodesScreen(ClusterTableScreen[NodeRow]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "cordon", "Cordon"),
        Binding("u", "uncordon", "Uncordon"),
        Binding("d", "drain", "Drain"),
        *ClusterTableScreen.TABLE_BINDINGS,
    ]
    TITLE = "Nodes"
    COLUMNS = ("NODE", "STATUS", "PODS", "DRAIN", "JOB")
    HELP_TEXT = (
        "The cluster's nodes with their pods and the drain engine's verdict now: evict N pods, blocked by a "
        "PodDisruptionBudget (healthy/needed), or the error that would stop the drain. d shows the plan pod by "
        "pod and, once confirmed, drains the node as an agent job; leaving the TUI never stops it."
    )
    CHANGES = frozenset({"cordon", "uncordon", "drain"})

    def heading(self) -> str:
        nodes = f"nodes -l {self.scope.node_selector}" if self.scope.node_selector else "nodes"
        context = self.scope.connection.context or "current context"
        return f"Nodes · {context} · {nodes}" + (" · read-only" if self.scope.readonly else "")

    async def load(self) -> list[NodeRow]:
        call = cluster_calls.nodes(
            self.scope.connection, selector=self.scope.node_selector, plan=True, options=self.scope.drain_options
        )
        return await self.link.run(call)

    def key_of(self, row: NodeRow) -> str:
        return row.name

    def cells_of(self, row: NodeRow) -> tuple[Cell, ...]:
        verdict = Text(row.detail or "-", style=VERDICT_STYLE[row.verdict])
        return (row.name, node_status(row), str(row.pods), verdict, row.drained_by or "-")

    def detail_of(self, row: NodeRow) -> str:
        lines = [f"{row.name}: {row.pods} pod{'s' if row.pods != 1 else ''}; drain: {row.detail or 'not planned'}"]
        if row.blocking:
            lines.append(f"blocking PodDisruptionBudgets: {', '.join(row.blocking)}")
        if row.drained_by:
            lines.append(f"job {row.drained_by} drains it")
        return "\n".join(lines)

    def applies(self, action: str, row: NodeRow) -> bool | None:
        if row.drained_by:
            return None  # its drain job owns it now
        if action == "cordon":
            return None if row.cordoned else True
        if action == "uncordon":
            return True if row.cordoned else None
        return True

    # --- actions -------------------------------------------------------------------------

    @work(exclusive=True, group="action")
    async def action_cordon(self) -> None:
        await self._set_cordoned(cordoned=True)

    @work(exclusive=True, group="action")
    async def action_uncordon(self) -> None:
        await self._set_cordoned(cordoned=False)

    async def _set_cordoned(self, *, cordoned: bool) -> None:
        verb = "cordon" if cordoned else "uncordon"
        row = self.selected
        if not self.allowed(verb) or row is None:
            return
        question = (
            f"Cordon node {row.name}? New pods will not be placed there; its {row.pods} pods stay."
            if cordoned
            else f"Uncordon node {row.name}? New pods may be placed there again."
        )
        if not await self.confirmed(question, yes=verb.capitalize()):
            return
        try:
            changed = await self.link.run(cluster_calls.cordon(self.scope.connection, row.name, cordoned=cordoned))
        except AgentError as err:
            self.say(err.message, error=True)
            return
        self.say(f"node/{changed.name} {'cordoned' if changed.cordoned else 'uncordoned'}")
        self.action_refresh()

    @work(exclusive=True, group="action")
    async def action_drain(self) -> None:
        row = self.selected
        if not self.allowed("drain") or row is None:
            return
        self.say(f"planning the drain of {row.name}...")
        try:
            planned = await self.link.run(
                cluster_calls.plan(self.scope.connection, [row.name], options=self.scope.drain_options)
            )
        except AgentError as err:
            self.say(err.message, error=True)
            return
        (node_plan,) = planned.nodes
        if not await self.app.push_screen_wait(DrainPlanDialog(node_plan)):
            self.say(f"drain of {row.name} cancelled; nothing was changed")
            return
        spec = JobSpec(
            kind=JobKind.DRAIN,
            connection=self.scope.connection,
            drain=DrainJob(nodes=(row.name,), options=self.scope.drain_options),
        )
        try:
            job = await self.link.run(cluster_calls.submit(spec))
        except AgentError as err:
            self.say(err.message, error=True)
            return
        self.say(f"job {job.id} drains node/{row.name}")
        self.post_message(JobSubmitted(job, open_it=True))
        self.action_refresh()
