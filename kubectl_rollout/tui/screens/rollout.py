"""The Rollout screen: revision → ReplicaSet → pod tree with desired/current/ready/available bars, the conditions
with their reasons and messages, progress against the deadline, and the log of what the driver did.

The events say what the driver did to the ReplicaSets, not how each pod is doing: the pods (ready, restarts, why
not Ready) come from the agent's ``pods`` method, asked every ``PODS_EVERY`` seconds while the screen is shown,
for the workload and cluster the job names.
"""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.widgets import Footer, Header, RichLog, Static, Tree

from kubectl_rollout.agent.client import cluster_calls
from kubectl_rollout.agent.client.cluster_calls import Call
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.cluster_rows import PodRow, ReplicaSetPods
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Envelope, decode_dataclass
from kubectl_rollout.jobs.spec import Connection
from kubectl_rollout.jobs.views.rollout import RolloutView
from kubectl_rollout.tui.agent_calls import CallRunner, MethodCaller
from kubectl_rollout.tui.formatting import clock_time, duration
from kubectl_rollout.tui.screens.job_screen import JobScreen
from kubectl_rollout.tui.widgets.bars import count_bar
from kubectl_rollout.tui.widgets.filter_bar import FilterBar, matches

BAR = 5
#: seconds between two asks for the workload's pods while the screen is shown
PODS_EVERY = 2.0
#: pods named per ReplicaSet (those not Ready first); the rest are counted
PODS_PER_REPLICA_SET = 10


def replica_set_label(row: ev.ReplicaSetRow) -> Text:
    label = Text()
    label.append(f"rev {row.revision} ", style="bold")
    label.append(row.name, style="bold cyan" if row.updated else "")
    label.append(" new" if row.updated else " old", style="green" if row.updated else "dim")
    return label


def replica_set_counts(row: ev.ReplicaSetRow) -> Text:
    total = max(row.desired, row.current, 1)
    return Text(
        f"want {row.desired}  cur {count_bar(row.current, total, BAR)}  rdy {count_bar(row.ready, total, BAR)}"
        f"  avl {count_bar(row.available, total, BAR)}"
    )


def pod_label(pod: PodRow) -> Text:
    """``● web-7d9-x2k node-a  3 restarts  CrashLoopBackOff``: green when Ready, red with the reason when not."""
    label = Text()
    label.append("● " if pod.ready else "○ ", style="green" if pod.ready else "red")
    label.append(pod.name)
    label.append(f" {pod.node or 'no node'}", style="dim")
    if pod.restarts:
        label.append(f"  {pod.restarts} restart{'s' if pod.restarts != 1 else ''}", style="yellow")
    if pod.reason:
        label.append(f"  {pod.reason}", style="red")
    return label


def more_pods_label(pods: ReplicaSetPods) -> Text | None:
    more = pods.total - len(pods.pods)
    if more <= 0:
        return None
    return Text(
        f"… and {more} more pod{'s' if more != 1 else ''} ({pods.ready}/{pods.total} Ready in all)", style="dim"
    )


def condition_lines(view: RolloutView) -> Text:
    text = Text()
    for kind in ev.ConditionType:
        cond = view.condition(kind)
        if cond is None:
            continue
        style = "green" if cond.status is ev.ConditionStatus.TRUE else "red"
        if kind is ev.ConditionType.REPLICA_FAILURE:
            style = "red" if cond.status is ev.ConditionStatus.TRUE else "green"
        if text:
            text.append("\n")
        text.append(f"{kind.value} ", style="bold")
        text.append(cond.status.value, style=style)
        text.append(f" {cond.reason}")
        if cond.since:
            text.append(f" since {clock_time(cond.since)}", style="dim")
        if cond.message:
            text.append(f": {cond.message}", style="dim")
    return text or Text("no conditions reported yet", style="dim")


def deadline_line(view: RolloutView, *, now: float) -> Text:
    if view.finished is not None or (view.phase is not None and view.phase.done):
        return Text(view.message or "", style="green" if view.succeeded else "")
    if view.paused:
        return Text("paused: the progress deadline does not run", style="yellow")
    if view.deadline_at is None or not view.progress_deadline_seconds:
        return Text(view.message or "waiting for the first progress report", style="dim")
    left = view.deadline_at - now
    used = 1 - max(0.0, left) / view.progress_deadline_seconds
    style = "red" if left < view.progress_deadline_seconds / 4 else ""
    return Text.assemble(
        view.message + "\n" if view.message else "",
        ("deadline ", "bold"),
        (f"{duration(max(0.0, left))} left of {view.progress_deadline_seconds}s without progress ", style),
        f"({used:.0%} used)",
    )


def log_line(envelope: Envelope) -> str:
    event = envelope.event
    at = datetime.fromtimestamp(envelope.at).strftime("%H:%M:%S")
    if isinstance(event, ev.ReplicaSetScaled):
        what = f"scaled {event.name} {event.from_replicas} → {event.to_replicas}"
    elif isinstance(event, ev.ReplicaSetCreated):
        what = f"created {event.name} (revision {event.revision}, {event.replicas} replicas)"
    elif isinstance(event, ev.RevisionAssigned):
        what = f"{event.name} is revision {event.revision} now (was {event.previous_revision})"
    elif isinstance(event, ev.ReplicaSetDeleted):
        what = f"deleted {event.name} (revision {event.revision}, {event.reason})"
    elif isinstance(event, ev.SpecChanged):
        what = f"spec changed: {event.change.value}, generation {event.generation}"
    elif isinstance(event, ev.ScaleDownHeldByPdb):
        pdbs = ", ".join(f"{p.namespace}/{p.name} {p.healthy}/{p.needed}" for p in event.pdbs)
        what = f"scale-down held by PDB {pdbs}"
    elif isinstance(event, ev.NewPodsFailing):
        what = f"pod {event.pod} failing: {event.reason} ({event.restart_count} restarts)"
    elif isinstance(event, ev.DeadlineExceeded):
        what = f"progress deadline exceeded ({event.progress_deadline_seconds}s)"
    else:
        what = getattr(event, "message", "") or event.TYPE
    return f"{at} {what}"


class RolloutScreen(JobScreen):
    HELP_TEXT = (
        "A rollout of a managed workload: each revision's ReplicaSet with its desired, current, ready and "
        "available pods as bars (new: the current template), its pods under it (Ready or not, on which node, "
        "restarts, why not Ready; refreshed every 2 s), the conditions "
        "(Progressing, Available, ReplicaFailure) with their reasons, how much of the progress deadline is "
        "left, and the log of what the driver did. `p` pauses the job: the workload is paused (no rollout "
        "progress) until the job is resumed."
    )

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="job-header", classes="summary")
        tree: Tree[str] = Tree("workload", id="replica-sets")
        tree.show_root = False
        yield tree
        yield Static(id="conditions")
        yield Static(id="deadline")
        yield RichLog(id="actions", max_lines=500, wrap=False)
        yield FilterBar()
        yield Footer()

    def on_mount(self) -> None:
        self.title = f"Job {self.job_id}"
        self.query_one(FilterBar).display = False
        self._logged_seq = 0
        self._last_line = ""
        self._tree_shown: tuple[object, ...] = ()
        #: the workload's pods per ReplicaSet, as the agent last answered (empty until it did)
        self.pods: dict[str, ReplicaSetPods] = {}
        #: how many times the agent answered (tests wait on it), and why it did not the last time ("": it did)
        self.pods_loads = 0
        self.pods_error = ""
        self.show_all()
        self.refresh_pods()
        self.set_interval(PODS_EVERY, self.refresh_pods)

    def _pods_call(self) -> Call[list[ReplicaSetPods]] | None:
        """The ask for the workload's pods, on the cluster the job runs against; None until the job names both."""
        body = self.view.body
        info = self.rollout_app.store.infos.get(self.job_id)
        raw = info.spec.get("connection") if info is not None else None
        if not isinstance(body, RolloutView) or not body.workload or not isinstance(raw, dict):
            return None
        connection: Connection = decode_dataclass(Connection, raw)
        namespace = body.namespace or None
        return cluster_calls.pods(connection, body.workload, namespace=namespace, limit=PODS_PER_REPLICA_SET)

    @work(exclusive=True, group="pods")
    async def refresh_pods(self) -> None:
        # Only an agent has a cluster to ask (a recording has none), and only the screen shown needs it.
        if not isinstance(self.rollout_app.source, MethodCaller) or not self.is_current:
            return
        link: CallRunner | None = getattr(self.app, "cluster_link", None)
        call = self._pods_call()
        if link is None or call is None:
            return
        try:
            found = await link.run(call)
        except AgentError as err:
            self.pods_error = err.message
        else:
            self.pods = {row.replica_set: row for row in found}
            self.pods_error = ""
            self.pods_loads += 1
        if self.is_mounted:
            self.show_all()

    def show_all(self) -> None:
        if not self.is_mounted:
            return
        view = self.view
        body = view.body
        now = self.rollout_app.clock()
        self.show_text("#job-header", self.header_line())
        if not isinstance(body, RolloutView):
            return
        self._show_tree(body)
        self.show_text("#conditions", condition_lines(body))
        self.show_text("#deadline", deadline_line(body, now=now))
        log = self.query_one("#actions", RichLog)
        for envelope in body.actions:
            if envelope.seq > self._logged_seq:
                self._logged_seq = envelope.seq
                line = log_line(envelope)
                if line[9:] != self._last_line[9:]:  # the same thing again (a PDB still holding): said once
                    log.write(line)
                    self._last_line = line

    def _show_tree(self, body: RolloutView) -> None:
        needle = self.query_one(FilterBar).value
        rows = [r for r in body.rows if not needle or matches(f"rev {r.revision} {r.name}", needle)]
        failing = body.failing
        pods = tuple(self.pods.get(row.name) for row in rows)
        shown = (tuple(rows), failing, needle, pods, self.pods_error)
        if shown == self._tree_shown:
            return
        self._tree_shown = shown
        tree: Tree[str] = self.query_one("#replica-sets", Tree)
        tree.clear()
        tree.root.label = f"{body.namespace}/{body.workload}"
        if self.pods_error:
            tree.root.add_leaf(Text(f"pods: {self.pods_error}", style="red"))
        for row, its_pods in zip(rows, pods, strict=True):
            node = tree.root.add(replica_set_label(row), data=row.name, expand=True)
            node.add_leaf(replica_set_counts(row))
            if its_pods is not None:
                for pod in its_pods.pods:
                    node.add_leaf(pod_label(pod))
                more = more_pods_label(its_pods)
                if more is not None:
                    node.add_leaf(more)
            listed = failing is not None and its_pods is not None and any(p.name == failing.pod for p in its_pods.pods)
            if failing is not None and not listed and failing.pod.startswith(row.name + "-"):
                node.add_leaf(
                    Text(
                        f"pod {failing.pod}: {failing.reason} ({failing.restart_count} restarts) {failing.image}",
                        style="red",
                    )
                )
