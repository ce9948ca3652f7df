"""The Jobs screen (the default): every job of the agent, live; Enter opens one."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header, Static

from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.events.job import JobState
from kubectl_rollout.jobs.views.job import JobView
from kubectl_rollout.jobs.views.progress import Progress, eta_seconds, progress_of
from kubectl_rollout.tui.formatting import clock_time, duration
from kubectl_rollout.tui.screens.live_screen import LiveScreen
from kubectl_rollout.tui.widgets.bars import count_bar
from kubectl_rollout.tui.widgets.filter_bar import FilterBar
from kubectl_rollout.tui.widgets.live_table import Cell, LiveTable, Row
from kubectl_rollout.tui.widgets.state_style import state_text

COLUMNS = ("ID", "KIND", "STATE", "PROGRESS", "ETA", "TARGET", "STARTED", "BY", "CONTEXT", "CLIENTS")
BAR_WIDTH = 10


def job_state(info: JobInfo | None, view: JobView) -> str:
    """The state to show: the events' when they say more (paused, finished) than the list's last poll."""
    if view.state.finished:
        return str(view.state)
    state = info.state if info is not None else str(view.state)
    paused = view.paused if view.last_seq else (info.paused if info is not None else False)
    if paused and state == JobState.RUNNING:
        return "paused"
    return state


def job_progress(info: JobInfo | None, view: JobView) -> Progress:
    if view.last_seq == 0 and info is not None and info.state == JobState.SUCCEEDED:
        return Progress(1, 1)  # a finished job not followed: done is done
    return progress_of(view)


def job_row(info: JobInfo | None, view: JobView, *, now: float) -> tuple[Cell, ...]:
    progress = job_progress(info, view)
    started = info.started_at if info is not None and info.started_at else view.started_at
    state = job_state(info, view)
    eta = eta_seconds(progress, started_at=started, now=now) if state == JobState.RUNNING else None
    return (
        view.job or (info.id if info else ""),
        (info.kind if info else "") or view.kind,
        state_text(state),
        count_bar(progress.done, progress.total, BAR_WIDTH) if progress.total else "-",
        duration(eta) if eta is not None else "-",
        (info.target if info else "") or view.target,
        clock_time(started),
        (info.submitted_by if info else "") or "-",
        (info.context if info else None) or view.context or "-",
        str(info.attached) if info is not None else "-",
    )


class JobsScreen(LiveScreen):
    HELP_TEXT = (
        "Every job of the agent, newest first: drains, rollouts and restarts, running or finished. The bar counts "
        "pods gone (a drain), pods replaced (a restart) or new replicas available (a rollout); ETA is at the pace "
        "so far. BY is the client that submitted the job, CLIENTS how many follow it now."
    )
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "open", "Open job")]

    def __init__(self) -> None:
        super().__init__()
        self.title = "Jobs"

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("connecting to the agent...", id="jobs-summary", classes="summary")
        yield LiveTable(COLUMNS, id="jobs")
        yield FilterBar()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FilterBar).display = False
        self.show_all()

    def rows(self) -> list[Row]:
        store = self.rollout_app.store
        now = self.rollout_app.clock()
        order = store.order or list(store.views)
        return [(job_id, job_row(store.infos.get(job_id), store.view(job_id), now=now)) for job_id in order]

    def show_changes(self, jobs: frozenset[str]) -> None:
        self.show_all()

    def show_all(self) -> None:
        if not self.is_mounted:
            return
        store = self.rollout_app.store
        table = self.query_one(LiveTable)
        table.sync(self.rows(), needle=self.query_one(FilterBar).value)
        running = sum(1 for i in store.infos.values() if i.state == JobState.RUNNING)
        summary = Text(f"{len(store.order)} jobs, {running} running")
        if not store.order:
            summary = Text("no jobs yet: start one with --tui (drain, apply, set image, ...) or from the CLI")
        self.show_text("#jobs-summary", summary)

    def action_open(self) -> None:
        key = self.query_one(LiveTable).selected_key
        if key is not None:
            self.rollout_app.open_job(key)

    def on_live_table_row_chosen(self, event: LiveTable.RowChosen) -> None:
        # Enter on the table (the table binds it first)
        event.stop()
        self.rollout_app.open_job(event.key)
