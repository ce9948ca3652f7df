"""The screen of a job that evicts pods: every pod with its state, per node, and why blocked pods wait.

It shows a drain (its nodes, then the pods each node sheds) and a restart by
eviction (the same pod states, each pod ending replaced, without nodes).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Footer, Header, Static

from kubectl_rollout.jobs.views.blockers import pdb_blocks
from kubectl_rollout.jobs.views.drain import DrainView, NodeState, NodeView
from kubectl_rollout.jobs.views.pods import PodState, PodView
from kubectl_rollout.jobs.views.restart import RestartView
from kubectl_rollout.tui.formatting import countdown, duration
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


class EvictionsScreen(JobScreen):
    HELP_TEXT = (
        "A drain: its nodes (cordoned, draining, drained, failed) and every pod it evicts: pending, queued (its "
        "node is draining), evicting, blocked (the PDB and its healthy/needed counts, the next try), terminating, "
        "gone, failed. The blocker panel explains each PodDisruptionBudget that blocks pods now and what would "
        "unblock it. A restart by eviction shows here too: its pods end as 'replacement Ready'."
    )

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="job-header", classes="summary")
        yield LiveTable(NODE_COLUMNS, id="nodes")
        yield LiveTable(POD_COLUMNS, id="pods")
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
            return dict(body.nodes), [body.pods[key] for key in order if key in body.pods]
        if isinstance(body, RestartView):
            order = list(body.order) + [key for key in body.pods if key not in set(body.order)]
            return {}, [body.pods[key] for key in order if key in body.pods]
        return {}, []

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
        body = self.view.body
        blocks = pdb_blocks(body.pods, body.pdb_pods) if isinstance(body, DrainView | RestartView) else []
        names = tuple(block.pdb for block in blocks)
        if self._events_only and names == self._panel_pdbs:
            return  # the same PDBs block: their counts follow the tick
        self._panel_pdbs = names
        self.query_one(BlockerPanel).show_blocks(blocks, now=now)
