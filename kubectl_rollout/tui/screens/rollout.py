"""The Rollout screen: revision → ReplicaSet → pod tree with desired/current/ready/available bars, the conditions
with their reasons and messages, progress against the deadline, and the log of what the driver did.

The events say what the driver did to the ReplicaSets, not how each pod is doing: the pods (ready, restarts, why
not Ready) come from the agent's ``pods`` method, asked every ``PODS_EVERY`` seconds while the screen is shown,
for the workload and cluster the job names.

A workload with canary steps shows them (``widgets.steps_panel``): the canary is put together from every job of
the agent on the workload (``jobs.views.canary.merged``: the job that changed the template ends at the first
pause, a promote job takes it further). ``P`` promote, ``F`` promote --full, ``A`` abort and ``R`` retry submit
the same rollout jobs as the CLI's commands, each after a confirmation; ``--readonly`` greys them.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.widgets import Footer, Header, RichLog, Static, Tree

from kubectl_rollout.agent.client import cluster_calls
from kubectl_rollout.agent.client.cluster_calls import Call
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.cluster_rows import CanaryRecord, PodRow, ReplicaSetPods, WorkloadPods
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Envelope, decode_dataclass
from kubectl_rollout.jobs.spec import ActionKind, Connection, JobKind, JobSpec, RolloutAction
from kubectl_rollout.jobs.views.canary import CanaryView, merged, with_record
from kubectl_rollout.jobs.views.rollout import RolloutView
from kubectl_rollout.tui.agent_calls import CallRunner, MethodCaller
from kubectl_rollout.tui.cluster_messages import JobSubmitted
from kubectl_rollout.tui.formatting import clock_time, duration
from kubectl_rollout.tui.screens.job_screen import JobScreen
from kubectl_rollout.tui.widgets.bars import count_bar
from kubectl_rollout.tui.widgets.filter_bar import FilterBar, matches
from kubectl_rollout.tui.widgets.steps_panel import describe_steps

#: the canary's keys: action -> (the command's kind, promote --full, the question, what the confirm button says)
CANARY_ACTIONS: dict[str, tuple[ActionKind, bool, str, str]] = {
    "promote": (ActionKind.PROMOTE, False, "Promote {target} past step {step}?", "Promote"),
    "promote_full": (ActionKind.PROMOTE, True, "Promote {target} past every remaining step (--full)?", "Promote all"),
    "abort": (ActionKind.ABORT, False, "Abort the canary of {target}?", "Abort"),
    "retry": (ActionKind.RETRY, False, "Retry the aborted canary of {target} from its first step?", "Retry"),
}
#: what each does, under the question
CANARY_DETAILS = {
    "promote": "The canary goes on to its next step (a pause or a gate is passed); the driver carries it out.",
    "promote_full": "Every remaining step is skipped: the new revision takes every replica, within maxSurge and "
    "maxUnavailable.",
    "abort": "The stable ReplicaSet goes back to full size and the canary to 0; the workload stays aborted "
    "until retry (R) or a new change.",
    "retry": "The canary starts again from its first step.",
}

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
    #: the workload's canary as its record kept it when the agent last answered (None: no canary there, or no
    #: answer yet)
    recorded_canary: CanaryRecord | None = None
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("P", "canary('promote')", "Promote", tooltip="Promote the canary past its current step"),
        Binding("F", "canary('promote_full')", "Full", tooltip="Promote the canary past every remaining step"),
        Binding("A", "canary('abort')", "Abort", tooltip="Abort the canary: the stable back at full size"),
        Binding("R", "canary('retry')", "Retry", tooltip="Start the aborted canary again from its first step"),
    ]
    HELP_TEXT = (
        "A rollout of a managed workload: each revision's ReplicaSet with its desired, current, ready and "
        "available pods as bars (new: the current template), its pods under it (Ready or not, on which node, "
        "restarts, why not Ready; refreshed every 2 s), the conditions "
        "(Progressing, Available, ReplicaFailure) with their reasons, how much of the progress deadline is "
        "left, and the log of what the driver did. `p` pauses the job: the workload is paused (no rollout "
        "progress) until the job is resumed. A workload with canary steps shows them (done, current, to come), the "
        "current one with its counts, a pause's time left, the gate's state and last result, and who paused, "
        "promoted, aborted or retried it; P promotes past the current step, F past every step (--full), A aborts "
        "(the stable back at full size), R retries an aborted canary, each after a question."
    )

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="job-header", classes="summary")
        tree: Tree[str] = Tree("workload", id="replica-sets")
        tree.show_root = False
        yield tree
        yield Static(id="steps")
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

    def _pods_call(self) -> Call[WorkloadPods] | None:
        """The ask for the workload's pods (and its canary's record), on the cluster the job runs against; None
        until the job names both."""
        body = self.view.body
        info = self.rollout_app.store.infos.get(self.job_id)
        raw = info.spec.get("connection") if info is not None else None
        if not isinstance(body, RolloutView) or not body.workload or not isinstance(raw, dict):
            return None
        connection: Connection = decode_dataclass(Connection, raw)
        namespace = body.namespace or None
        return cluster_calls.workload_pods(connection, body.workload, namespace=namespace, limit=PODS_PER_REPLICA_SET)

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
            self.pods = {row.replica_set: row for row in found.replica_sets}
            self.recorded_canary = found.canary
            self.pods_error = ""
            self.pods_loads += 1
        # The answer may come while the screen is being left (its widgets already gone): its resume shows all.
        if self.is_mounted and self.is_current:
            with contextlib.suppress(NoMatches):
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
        self._show_steps(now=now)
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

    # --- canary steps ------------------------------------------------------------------------

    def _workload_jobs(self) -> dict[str, RolloutView]:
        """The rollout views of every job the app knows on this job's workload (its own first), by job."""
        body = self.view.body
        if not isinstance(body, RolloutView) or not body.workload:
            return {}
        store = self.rollout_app.store
        views = {self.job_id: body}
        for job_id, job in store.views.items():  # followed jobs, listed by the agent or not yet
            other = job.body
            if isinstance(other, RolloutView) and (other.workload, other.namespace) == (body.workload, body.namespace):
                views.setdefault(job_id, other)
        return views

    def canary(self) -> tuple[CanaryView, RolloutView] | None:
        """The workload's canary, put together from its jobs and its record (as the agent last read it), and
        the view of the job that moved it last."""
        jobs = self._workload_jobs()
        with_canary = [v for v in jobs.values() if v.canary is not None]
        found = merged(v.canary for v in with_canary if v.canary is not None)
        if self.recorded_canary is not None:
            found = with_record(found, self.recorded_canary)
        if found is None:
            return None
        latest = max(with_canary, key=lambda v: v.canary.updated_at if v.canary is not None else 0.0, default=None)
        return found, latest or jobs[self.job_id]

    def _show_steps(self, *, now: float) -> None:
        widget = self.query_one("#steps", Static)
        found = self.canary()
        widget.display = found is not None
        # The canary's keys join the job's: at 80 columns the footer fits them only without its padding and the
        # palette's key (Ctrl+P still opens it, and ? lists it).
        footer = self.query_one(Footer)
        footer.compact = found is not None
        footer.show_command_palette = found is None
        if found is None:
            return
        canary, latest = found
        # The new revision's pods now: Ready as the agent last counted them (every PODS_EVERY s), else available
        # as the latest job's events said (a reached step's counts are all available).
        new = next((r for r in latest.rows if r.updated), None)
        pods = new.available if new is not None else 0
        if canary.reached:
            pods = max(pods, canary.canary)
        live = self.pods.get(new.name) if new is not None else None
        if live is not None:
            pods = live.ready
        self.show_text("#steps", describe_steps(canary, canary_pods=pods, replicas=latest.desired, now=now))

    def show_changes(self, jobs: frozenset[str]) -> None:
        super().show_changes(jobs)
        if self.job_id not in jobs and jobs & self._workload_jobs().keys():
            # Another job on the workload (a promote, an abort) moved its canary.
            facts = self._key_facts()
            if facts != self._keys_shown_for:
                self._keys_shown_for = facts
                self.refresh_bindings()
            self.show_all()

    def _key_facts(self) -> tuple[object, ...]:
        found = self.canary()
        canary = found[0] if found is not None else None
        state = (canary.under_way, canary.aborted is not None) if canary is not None else None
        return (*super()._key_facts(), state)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action != "canary" or not parameters or parameters[0] not in CANARY_ACTIONS:
            return super().check_action(action, parameters)
        which = parameters[0]
        source = self.rollout_app.source
        if self.rollout_app.readonly or source is None or not source.can_act:
            return False
        # Shown only where they apply (a rollout without steps has none; retry only once aborted): the footer
        # has room for the canary's keys at 80 columns only if it carries no others.
        found = self.canary()
        if found is None:
            return False
        canary = found[0]
        if which == "retry":
            return canary.aborted is not None
        return canary.under_way

    def _canary_spec(self, action: str) -> JobSpec | None:
        """The rollout job the CLI's command would submit, on this job's cluster and workload."""
        body = self.view.body
        info = self.rollout_app.store.infos.get(self.job_id)
        raw = info.spec.get("connection") if info is not None else None
        if not isinstance(body, RolloutView) or not body.workload or not isinstance(raw, dict):
            return None
        kind, full, _, _ = CANARY_ACTIONS[action]
        connection: Connection = decode_dataclass(Connection, raw)
        rollout = RolloutAction(kind=kind, name=body.workload, namespace=body.namespace or None, full=full)
        return JobSpec(kind=JobKind.ROLLOUT, connection=connection, rollout=rollout)

    @work(exclusive=True, group="canary")
    async def action_canary(self, action: str) -> None:
        """P, F, A, R: the canary command ``action`` (a key of ``CANARY_ACTIONS``), after a question."""
        from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen

        found = self.canary()
        spec = self._canary_spec(action)
        if self.check_action("canary", (action,)) is not True or found is None or spec is None or spec.rollout is None:
            return
        _, _, question, yes = CANARY_ACTIONS[action]
        target = f"{spec.rollout.namespace or 'default'}/{spec.rollout.name}"
        asked = question.format(target=target, step=f"{found[0].step}/{found[0].count}")
        if not await self.app.push_screen_wait(ConfirmScreen(f"{asked}\n\n{CANARY_DETAILS[action]}", yes=yes)):
            return
        link: CallRunner | None = getattr(self.app, "cluster_link", None)
        if link is None:
            return
        try:
            job = await link.run(cluster_calls.submit(spec))
        except AgentError as err:
            self.notify(err.message, severity="error", timeout=10)
            return
        self.post_message(JobSubmitted(job, open_it=False))
        self.notify(f"job {job.id}: {spec.rollout.kind.value}{' --full' if spec.rollout.full else ''} {target}")
