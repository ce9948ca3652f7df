"""The screen of a job that evicts pods: every pod with its state, per node, and why blocked pods wait.

It shows a drain (its nodes, then the pods each node sheds) and a restart by
eviction (the same pod states, each pod ending replaced, without nodes). The
pods come in the order of what needs a person's eyes (``by_attention``): a
blocked pod is on screen even behind forty gone ones.

``s`` drains again with ``--surge`` when a PDB holds a pod of a workload a
surge can raise (a Deployment, a managed workload) and this drain does not
surge: a running drain cannot take up a surge (its surges are decided before
its first eviction, per node), so the drain is cancelled (its nodes stay
cordoned; what it evicted stays evicted) and, once it has ended, the same
drain (nodes, selector, every option) starts again with ``--surge`` and its
screen takes this one's place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header, Static

from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.views.blockers import PdbBlock, pdb_blocks
from kubectl_rollout.jobs.views.drain import DrainView, NodeState, NodeView
from kubectl_rollout.jobs.views.pods import PodState, PodView, by_attention
from kubectl_rollout.jobs.views.restart import RestartView
from kubectl_rollout.tui.agent_calls import CallRunner
from kubectl_rollout.tui.drain_with_surge import drain_again_with_surge
from kubectl_rollout.tui.formatting import countdown, duration
from kubectl_rollout.tui.job_source import JobSource
from kubectl_rollout.tui.screens.job_screen import JobScreen
from kubectl_rollout.tui.widgets.blocker_panel import BlockerPanel
from kubectl_rollout.tui.widgets.filter_bar import FilterBar
from kubectl_rollout.tui.widgets.live_table import Cell, LiveTable, Row
from kubectl_rollout.tui.widgets.state_style import state_text

NODE_COLUMNS = ("NODE", "STATE", "PODS", "EVICTED", "TIME", "WHY")
POD_COLUMNS = ("POD", "STATE", "TRIES", "NEXT TRY", "PDB", "NODE", "NAMESPACE")


def pod_state(pod: PodView, nodes: dict[str, NodeView]) -> str:
    """The word the table shows: a pending pod whose node is draining is queued (next in line)."""
    if pod.state is PodState.PENDING:
        node = nodes.get(pod.pod.node)
        return "queued" if node is not None and node.state is NodeState.DRAINING else "pending"
    if pod.state is PodState.REPLACED:
        return "replacement Ready"
    return str(pod.state)


def pod_row(pod: PodView, nodes: dict[str, NodeView], *, now: float) -> tuple[Cell, ...]:
    blocker = pod.blocker
    pdb: Cell = "-"
    next_try = "-"
    if blocker is not None:
        next_try = countdown(blocker.next_try_by, now)
        if blocker.pdb:
            healthy = "?" if blocker.healthy is None else blocker.healthy
            needed = "?" if blocker.needed is None else blocker.needed
            pdb = Text(f"{blocker.pdb.partition('/')[2]} {healthy}/{needed}", style="red")
        else:
            pdb = str(blocker.reason)
    state: Cell = state_text(pod_state(pod, nodes))
    if pod.state is PodState.FAILED and pod.failure:
        state = Text(f"failed: {pod.failure}", style="bold red")
    return (pod.pod.name, state, str(pod.attempts or "-"), next_try, pdb, pod.pod.node or "-", pod.pod.namespace)


def node_row(node: NodeView) -> tuple[Cell, ...]:
    state = node.state.value
    if node.state is NodeState.FAILED and not node.cordoned:
        state = "failed, uncordoned"
    return (
        node.name,
        state_text(state),
        str(len(node.pods)),
        str(node.evicted) if node.state is NodeState.DRAINED else "-",
        duration(node.seconds) if node.seconds else "-",
        "; ".join((*node.reasons, *node.warnings)) or "-",
    )


def surge_question(job_id: str, view: DrainView, workloads: Mapping[WorkloadRef, int]) -> str:
    """The confirmation of ``s``: what happens to this drain, and what the surge will do (``workloads``: those
    it would raise, with their pods PDBs hold now)."""
    nodes = ", ".join(view.nodes) or "its nodes"
    raised = "; ".join(
        f"{'managed workload ' + w.namespace + '/' + w.name if w.kind == 'ManagedWorkload' else w} gets "
        f"{n} extra replica{'s' if n != 1 else ''} on other nodes first"
        for w, n in sorted(workloads.items())
    )
    return (
        f"Drain {nodes} again with --surge?\n\n"
        f"Job {job_id} is cancelled: its nodes stay cordoned, the pods it evicted stay evicted. Once it has ended, "
        f"the same drain starts again with --surge: {raised}; each pod is evicted once its stand-in is Ready, and "
        "the count comes back to what it was, so the PDB never drops below its minimum. A workload that cannot "
        "surge (an autoscaler on it, no room, a quota) waits for its PDB as now, and the screen says why."
    )


class EvictionsScreen(JobScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("s", "surge", "Surge", tooltip="Drain again with --surge")]
    HELP_TEXT = (
        "A drain: its nodes (cordoned, draining, drained, failed) and every pod it evicts, what needs attention "
        "first: blocked (the PDB and its healthy/needed counts, the next try), failed, evicting, pending or queued "
        "(its node is draining), terminating, then gone. The blocker panel explains each PodDisruptionBudget that "
        "blocks pods now, names their workload and what would unblock it. s (when a PDB holds a Deployment's or a "
        "managed workload's pod and the drain does not surge) cancels the drain and starts it again with --surge: "
        "extra replicas elsewhere first. A restart by eviction shows here too: its pods end as 'replacement Ready'."
    )

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id)
        #: ``s`` was confirmed: the drain is being replaced by one with --surge
        self._replacing = False
        #: the blocking PDBs of a view (``_blocks``)
        self._blocks_of: tuple[object, list[PdbBlock]] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="job-header", classes="summary")
        yield LiveTable(NODE_COLUMNS, id="nodes")
        # The cursor keeps its place while pods change groups (a pod under it going gone would drag it down).
        yield LiveTable(POD_COLUMNS, id="pods", cursor_follows_key=False)
        yield BlockerPanel()
        yield FilterBar()
        yield Footer()

    def on_mount(self) -> None:
        #: while a flush shows events, the blocker panel is left to the next show_all (see ``show_changes``)
        self._events_only = False
        #: the PDBs the blocker panel shows
        self._panel_pdbs: tuple[str, ...] = ()
        #: each shown pod's row, by the identity of the pod's view (see ``_pod_rows``)
        self._rows: dict[int, tuple[PodView, NodeState | None, Row]] = {}
        self.title = f"Job {self.job_id}"
        self.query_one(FilterBar).display = False
        self.show_all()

    def _pod_rows(self, pods: list[PodView], nodes: dict[str, NodeView], *, now: float) -> list[Row]:
        """The pods' rows, each built again only when the pod changed (the views keep unchanged pods' objects),
        its node's state changed (a pending pod is queued while its node drains), or it waits (its countdown
        moves). An unchanged row is the same object as before, which the table checks first: a flush of a
        5000-pod drain then costs little more than a pass over the pods."""
        cache, rows = self._rows, []
        kept: dict[int, tuple[PodView, NodeState | None, Row]] = {}
        for pod in pods:
            node_state = None
            if pod.state is PodState.PENDING:
                node = nodes.get(pod.pod.node)
                node_state = node.state if node is not None else None
            cached = cache.get(id(pod))
            if cached is None or cached[0] is not pod or cached[1] is not node_state or pod.blocker is not None:
                cached = (pod, node_state, (str(pod.pod), pod_row(pod, nodes, now=now)))
            kept[id(pod)] = cached
            rows.append(cached[2])
        self._rows = kept
        return rows

    def _pods(self) -> tuple[dict[str, NodeView], list[PodView]]:
        body = self.view.body
        if isinstance(body, DrainView):
            order = [key for node in body.nodes.values() for key in node.pods]
            listed = set(order)
            order += [key for key in body.pods if key not in listed]
            return dict(body.nodes), by_attention(body.pods[key] for key in order if key in body.pods)
        if isinstance(body, RestartView):
            order = list(body.order) + [key for key in body.pods if key not in set(body.order)]
            return {}, by_attention(body.pods[key] for key in order if key in body.pods)
        return {}, []

    def _blocks(self) -> list[PdbBlock]:
        """The blocking PDBs of the view as it is; worked out once per view (the footer's keys, the panel and
        ``s`` all ask at each flush, and each time is a pass over every pod)."""
        body = self.view.body
        if self._blocks_of is not None and self._blocks_of[0] is body:
            return self._blocks_of[1]
        blocks: list[PdbBlock] = []
        if isinstance(body, DrainView | RestartView):
            blocks = pdb_blocks(body.pods, body.pdb_pods, surge=body.owner_facts)
        self._blocks_of = (body, blocks)
        return blocks

    def _surgeable(self) -> dict[WorkloadRef, int]:
        """The workloads a drain with --surge would raise, with their pods PDBs hold now (none: no ``s``)."""
        body = self.view.body
        if not isinstance(body, DrainView) or (body.plan is not None and body.plan.dry_run is not DryRun.NONE):
            return {}  # a dry run surges nothing
        wanted = {w for block in self._blocks() for w in block.surgeable}
        held = [body.owners.get(str(p.pod)) for block in self._blocks() for p in block.pods]
        return {w: held.count(w) for w in sorted(wanted)}

    def show_changes(self, jobs: frozenset[str]) -> None:
        # Events show at once in the pod table and the header. The blocker panel explains (its counts and
        # durations move by the second) and is some ten lines: repainted at every flush it was a third of the
        # bytes sent to the terminal. A flush shows it only when other PDBs block (one more, one fewer, none);
        # its counts follow the app's one-second tick (show_all).
        self._events_only = True
        try:
            super().show_changes(jobs)
        finally:
            self._events_only = False

    def show_all(self) -> None:
        if not self.is_mounted:
            return
        now = self.rollout_app.clock()
        needle = self.query_one(FilterBar).value
        self.show_text("#job-header", self.header_line())
        nodes, pods = self._pods()
        node_table = self.query_one("#nodes", LiveTable)
        node_table.display = bool(nodes)
        node_table.sync([(name, node_row(node)) for name, node in nodes.items()])
        self.query_one("#pods", LiveTable).sync(self._pod_rows(pods, nodes, now=now), needle=needle)
        blocks = self._blocks()
        names = tuple(block.pdb for block in blocks)
        if self._events_only and names == self._panel_pdbs:
            return  # the same PDBs block: their counts follow the tick
        self._panel_pdbs = names
        self.query_one(BlockerPanel).show_blocks(blocks, now=now, surge_key=self.check_action("surge", ()) is True)

    # --- s: drain again with --surge ---------------------------------------------------------

    def _key_facts(self) -> tuple[object, ...]:
        return (*super()._key_facts(), self._replacing, tuple(self._surgeable()))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "surge":
            # Shown only where it applies; --readonly and a recording never show it.
            return self._may_steer() and not self._replacing and self._job_running() and bool(self._surgeable())
        return super().check_action(action, parameters)

    @work(group="surge")
    async def action_surge(self) -> None:
        workloads = self._surgeable()
        body = self.view.body
        if self.check_action("surge", ()) is not True or not isinstance(body, DrainView):
            return
        from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen

        question = surge_question(self.job_id, body, workloads)
        if not await self.app.push_screen_wait(ConfirmScreen(question, yes="Drain with --surge")):
            return
        link: CallRunner | None = getattr(self.app, "cluster_link", None)
        source = self.rollout_app.source
        if link is None or source is None or self.check_action("surge", ()) is not True:
            self.notify(f"job {self.job_id} ended or changed meanwhile: nothing was done", severity="warning")
            return
        self._replacing = True  # a second s meanwhile would cancel a drain that is already going
        self.refresh_bindings()
        from_seq = self.view.last_seq + 1  # the stream from here ends with the cancelled drain's last event
        self.app.run_worker(self._replace(link, source, from_seq=from_seq), group="surge", exit_on_error=False)

    async def _replace(self, link: CallRunner, source: JobSource, *, from_seq: int) -> None:
        """Run by the app, so that leaving this screen meanwhile does not stop it half-way (``drain_with_surge``)."""
        app, context = self.app, self.rollout_app
        try:
            cancelled, job = await drain_again_with_surge(
                link=link, source=source, job_id=self.job_id, from_seq=from_seq
            )
        except AgentError as err:
            self._replacing = False
            app.notify(err.message, severity="error", timeout=20)
            return
        context.store.update_job(cancelled)
        context.store.update_job(job)
        context.follow(job.id)
        app.notify(f"job {job.id} drains {job.target} with --surge (job {self.job_id} was cancelled)")
        if app.screen is self:
            from kubectl_rollout.tui.screens import job_screen_class

            await app.switch_screen(job_screen_class(job.kind)(job.id))
