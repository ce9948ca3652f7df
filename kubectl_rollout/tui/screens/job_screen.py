"""What every job screen shares: the job's header line, and the keys that steer it.

``c`` cancels (after a confirmation), ``p`` pauses or resumes the job where
its kind can pause (``JobKindFacts.pausable``); keys that do not apply now are
greyed out, and ``--readonly`` hides them.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.events.job import JobState
from kubectl_rollout.jobs.kinds import facts_of
from kubectl_rollout.jobs.views.job import JobView
from kubectl_rollout.jobs.views.progress import eta_seconds, progress_of
from kubectl_rollout.tui.formatting import clock_time, duration
from kubectl_rollout.tui.screens.live_screen import LiveScreen
from kubectl_rollout.tui.widgets.bars import count_bar
from kubectl_rollout.tui.widgets.state_style import state_text

#: actions that change a job; --readonly hides them
STEERING = frozenset({"cancel", "pause"})
#: a longer target is cut in the header line (a campaign of 300 nodes by name): the Jobs screen has it whole
HEADER_TARGET = 60


class JobScreen(LiveScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Jobs"),
        Binding("c", "cancel", "Cancel job"),
        Binding("p", "pause", "Pause/resume"),
    ]

    def __init__(self, job_id: str) -> None:
        super().__init__()
        self.job_id = job_id
        self._keys_shown_for: tuple[object, ...] | None = None

    @property
    def view(self) -> JobView:
        return self.rollout_app.store.view(self.job_id)

    def _job_running(self) -> bool:
        info = self.rollout_app.store.infos.get(self.job_id)
        view = self.view
        if view.state.finished:
            return False
        return view.state is JobState.RUNNING or (info is not None and info.state in ("running", "pending"))

    def _may_steer(self) -> bool:
        """The job may be steered from here: its source can act (a recording cannot), and not ``--readonly``."""
        source = self.rollout_app.source
        return source is not None and source.can_act and not self.rollout_app.readonly

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in STEERING:
            source = self.rollout_app.source
            if self.rollout_app.readonly or (source is not None and not source.can_act):
                return False
            if not self._job_running():
                return None
            facts = facts_of(self.view.kind)
            if action == "pause" and (facts is None or not facts.pausable):
                return None
        return True

    def header_line(self) -> Text:
        view = self.view
        now = self.rollout_app.clock()
        progress = progress_of(view)
        state = "paused" if view.paused and not view.state.finished else str(view.state)
        eta = eta_seconds(progress, started_at=view.started_at, now=now) if state == "running" else None
        target = view.target or self.job_id
        if len(target) > HEADER_TARGET:
            target = target[: HEADER_TARGET - 1] + "…"
        line = Text.assemble(
            (f"{view.kind or 'job'} {target}", "bold"),
            "  ",
            state_text(state),
            "  ",
            count_bar(progress.done, progress.total, 12) if progress.total else "",
            f"  ETA {duration(eta)}" if eta is not None else "",
            f"  started {clock_time(view.started_at)}",
        )
        if view.finished is not None and (view.finished.error or view.finished.summary):
            line.append(f"\n{view.finished.error or view.finished.summary}", style="red" if view.finished.error else "")
        return line

    def _key_facts(self) -> tuple[object, ...]:
        """What ``check_action`` decides from: the footer's keys change only when one of these does."""
        return (self._may_steer(), self._job_running(), self.view.kind, self.view.paused)

    def show_changes(self, jobs: frozenset[str]) -> None:
        if self.job_id in jobs:
            # Each refresh_bindings makes Textual's Footer build its keys again (a layout and a repaint of the
            # footer): measured during a 1000-pod drain, that was the largest part of the TUI's CPU at 4 Hz.
            facts = self._key_facts()
            if facts != self._keys_shown_for:
                self._keys_shown_for = facts
                self.refresh_bindings()
            self.show_all()

    def action_back(self) -> None:
        self.dismiss(None)

    async def action_cancel(self) -> None:
        from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen

        view = self.view
        question = (
            f"Cancel job {self.job_id} ({view.kind} {view.target})?\n\nIt stops cooperatively: no new eviction or "
            "step starts; a drain leaves its nodes cordoned."
        )

        async def answered(yes: bool | None) -> None:
            if yes:
                await self._steer("cancel")

        await self.app.push_screen(ConfirmScreen(question, yes="Cancel job"), answered)

    async def action_pause(self) -> None:
        await self._steer("resume" if self.view.paused else "pause")

    async def _steer(self, what: str) -> None:
        source = self.rollout_app.source
        if source is None:
            return
        try:
            info = await getattr(source, what)(self.job_id)
        except AgentError as err:
            self.notify(err.message, severity="error", timeout=10)
            return
        self.rollout_app.store.update_job(info)
        self.notify(f"job {self.job_id}: {what} requested")
