"""The TUI: a client of the agent that shows its jobs live and steers them.

The app owns the connection (a ``JobSource``), the ``JobStore`` every screen
reads, and the workers that fill it: one polls the agent's job list, one per
followed job reads its events, all on Textual's own loop. A timer flushes the
store's changes to the screens soon after events arrive, at most ten times a
second, inside one batch update, so a burst of events costs one repaint (see
``flush_pacing``); a job's backlog is painted once, when it is all in.
Quitting detaches: jobs go on in the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from textual.app import App
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.screen import Screen

from kubectl_rollout.agent.client import Lagged
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.events.job import JobFinished, JobState
from kubectl_rollout.tui.agent_calls import SourceCalls
from kubectl_rollout.tui.cluster_messages import JobSubmitted
from kubectl_rollout.tui.cluster_scope import ClusterScope
from kubectl_rollout.tui.commands import ActionsProvider
from kubectl_rollout.tui.flush_pacing import FlushPacer
from kubectl_rollout.tui.job_source import JobSource
from kubectl_rollout.tui.job_store import Arrival, JobStore
from kubectl_rollout.tui.screens import TOP_SCREENS, job_screen_class
from kubectl_rollout.tui.screens.live_screen import LiveScreen

#: seconds between two flushes at least: at most 10 repaints a second keeps a 5000-row table cheap
FLUSH_INTERVAL = 0.1
#: seconds a flush waits after the event that asked for it, for the rest of the burst it came in
FLUSH_GATHER = 0.01
#: seconds a job's first paint waits at most for the rest of its backlog
BACKLOG_HOLD = 3.0
#: how often the agent's job list is asked for (it sends no notification for new jobs)
LIST_INTERVAL = 1.0
#: the newest jobs are followed even when finished (their bars then show how far they got)
FOLLOW_FINISHED = 10
#: a followed job's backlog gives the loop back every so many events
YIELD_EVERY = 200
#: how often countdowns (next try, ETA, deadline) move without an event, and changes without events show
TICK_INTERVAL = 1.0
#: how many event-to-screen latencies are kept for the benchmark
LATENCY_SAMPLES = 20_000

Connect = Callable[[], Awaitable[JobSource]]
Clock = Callable[[], float]


class Latency(NamedTuple):
    """One event's way to the screen: the frame that showed it was written at ``painted`` (epoch seconds),
    so many seconds after the TUI's reader received it, and after the job in the agent emitted it."""

    painted: float
    from_reader: float
    from_emission: float


class RolloutPlusApp(App[None]):
    CSS_PATH = "styles.tcss"
    TITLE = "kubectl rollout-plus"
    COMMANDS: ClassVar[set[Any]] = {ActionsProvider}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", tooltip="Leave the TUI; every job goes on in the agent"),
        Binding("question_mark", "help", "Help"),
        *[Binding(top.key, f"switch_mode('{top.mode}')", top.title, show=False) for top in TOP_SCREENS],
    ]

    def __init__(
        self,
        connect: Connect,
        *,
        readonly: bool = False,
        open_job: str | None = None,
        clock: Clock = time.time,
        flush_interval: float = FLUSH_INTERVAL,
        list_interval: float = LIST_INTERVAL,
        cluster: ClusterScope | None = None,
        no_cluster: str = "",
    ) -> None:
        """``cluster``: what the Nodes and Workloads screens show (None: they say there is no cluster, and
        ``no_cluster`` why and how to configure one)."""
        super().__init__()
        for top in TOP_SCREENS:
            self.add_mode(top.mode, top.load())
        self.readonly = readonly
        self.clock = clock
        self.store = JobStore()
        self.source: JobSource | None = None
        #: each event's way to the frame that showed it (the benchmark reads them)
        self.latencies: deque[Latency] = deque(maxlen=LATENCY_SAMPLES)
        self._connect = connect
        self._open_job = open_job
        self._pacer = FlushPacer(gather=FLUSH_GATHER, min_interval=flush_interval)
        self._list_interval = list_interval
        self._followed: set[str] = set()
        self._listed_once = False
        self.sub_title = "read-only" if readonly else ""
        #: the Nodes and Workloads screens' cluster, and their way to the agent's cluster methods
        self.cluster_scope = cluster
        #: why there is no cluster (no usable kubeconfig, with how to set one), for the cluster screens to say
        self.no_cluster_reason = no_cluster
        self.cluster_link = SourceCalls(lambda: self.source)

    # --- life cycle ------------------------------------------------------------------------

    async def on_mount(self) -> None:
        await self.switch_mode(TOP_SCREENS[0].mode)
        self.set_interval(TICK_INTERVAL, self.tick)
        self.run_worker(self._run(), name="agent", group="agent", exit_on_error=False)

    async def _run(self) -> None:
        try:
            self.source = await self._connect()
        except (AgentError, OSError, ValueError) as err:
            self._say_lost(str(getattr(err, "message", err)))
            return
        self.sub_title = " · ".join(s for s in (self.source.description, "read-only" if self.readonly else "") if s)
        while True:
            try:
                infos = await self.source.jobs()
            except AgentError as err:
                self._say_lost(err.message)
                return
            self.store.set_jobs(infos)
            self._changes_came()
            for index, info in enumerate(infos):
                if index < FOLLOW_FINISHED or info.state in (JobState.RUNNING, JobState.PENDING):
                    self.follow(info.id)
            if not self._listed_once:
                self._listed_once = True
                self._open_first(self._open_job, known={info.id for info in infos})
            await asyncio.sleep(self._list_interval)

    def _open_first(self, job_id: str | None, *, known: set[str]) -> None:
        """``--job ID``: its screen, or, for an ID the agent does not know, the job list and why."""
        if job_id is None:
            return
        if job_id in known:
            self.open_job(job_id)
            return
        self.notify(
            f"no job {job_id!r} in the agent's journal (finished jobs are kept 30 days); here are the ones it has",
            title="Unknown job",
            severity="error",
            timeout=30,
        )

    def _say_lost(self, reason: str) -> None:
        self.sub_title = "no agent"
        self.notify(reason, title="Agent", severity="error", timeout=30)

    async def action_quit(self) -> None:
        # Detach: the agent keeps running every job; only our connections close.
        if self.source is not None:
            await self.source.close()
        self.exit()

    # --- following jobs --------------------------------------------------------------------

    def follow(self, job_id: str) -> None:
        """Read the job's events into the store (once: a job already followed is left alone)."""
        if job_id in self._followed or self.source is None:
            return
        self._followed.add(job_id)
        self.run_worker(self._follow(self.source, job_id), group="follow", exit_on_error=False)

    async def _follow(self, source: JobSource, job_id: str) -> None:
        finished = False
        received = 0
        from_seq = self.store.last_seq(job_id) + 1
        info = self.store.infos.get(job_id)
        # The events the agent listed are the backlog (a running job's few newer ones come as it streams): held
        # until they are in, then folded and painted once.
        backlog_end = info.last_seq if info is not None and info.last_seq >= from_seq else 0
        if backlog_end:
            self.store.hold(job_id, until_seq=backlog_end, deadline=time.monotonic() + BACKLOG_HOLD)
        try:
            # The backlog coalesced: the first paint of a long drain needs each pod's last state, not its history.
            async for item in source.follow(job_id, from_seq=from_seq, coalesce=True):
                if isinstance(item, Lagged):
                    continue  # what still arrives folds to the same view
                self.store.add(item, received=time.time())
                if backlog_end and item.seq >= backlog_end:
                    backlog_end = 0
                    self.flush()  # the backlog is in: its first paint now
                else:
                    self._changes_came()
                finished = isinstance(item.event, JobFinished)
                received += 1
                if received % YIELD_EVERY == 0:
                    # Lines already buffered are read without suspending: let the flush and the keys run.
                    await asyncio.sleep(0)
        except AgentError as err:
            self.notify(f"job {job_id}: {err.message}", severity="warning")
        finally:
            if not finished:
                self._followed.discard(job_id)  # the next list follows it again from where it stopped

    def open_job(self, job_id: str) -> None:
        """Push the screen of the job's kind, following its events."""
        self.follow(job_id)
        info = self.store.infos.get(job_id)
        kind = info.kind if info is not None else self.store.view(job_id).kind
        self.push_screen(job_screen_class(kind)(job_id))

    def on_job_submitted(self, message: JobSubmitted) -> None:
        """A cluster screen started a job: follow it, and open it when the person wants to watch it (a drain).
        The agent's answer is the job's entry: known at once (its screen's target, the Jobs list), not at the
        next list, which a short job can outlive."""
        self.store.update_job(message.job)
        if message.open_it:
            self.open_job(message.job.id)
        else:
            self.follow(message.job.id)

    # --- flushing --------------------------------------------------------------------------

    def _changes_came(self) -> None:
        """The store has something new: a flush soon (see ``FlushPacer``)."""
        delay = self._pacer.arrived(time.monotonic())
        if delay is not None:
            self.set_timer(delay, self.flush, name="flush")

    def flush(self) -> None:
        """Hand the changes since the last flush to the live screens, in one repaint."""
        now = time.monotonic()
        self._pacer.flushed(now)
        changed, arrivals = self.store.take_changed(now=now)
        if not changed:
            return
        jobs = frozenset(changed)
        with self.batch_update():
            for screen in shown_screens(self.screen_stack):
                if isinstance(screen, LiveScreen):
                    with contextlib.suppress(NoMatches):  # mounting or leaving: its resume shows all
                        screen.show_changes(jobs)
        if arrivals:
            self.call_after_refresh(self._painted, arrivals)

    def tick(self) -> None:
        """Countdowns move with the clock: the visible screen repaints its changed cells once a second (and
        what changed without an event, e.g. a job's entry after a cancel, shows)."""
        self.flush()
        if isinstance(self.screen, LiveScreen):
            with self.batch_update(), contextlib.suppress(NoMatches):  # mounting or leaving
                self.screen.show_all()

    def _painted(self, arrivals: list[Arrival]) -> None:
        # Called once the frame with the flush's changes went to the terminal's writer. Wall clock on all
        # sides: the agent runs on this machine, so its clock is ours.
        now = time.time()
        self.latencies.extend(Latency(now, now - a.received, now - a.emitted) for a in arrivals)

    # --- keys ------------------------------------------------------------------------------

    def action_help(self) -> None:
        from kubectl_rollout.tui.screens.dialogs.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))


def shown_screens(stack: Sequence[Screen[Any]]) -> list[Screen[Any]]:
    """The screens a person sees: the top one, and below it each one the screen above lets through (a dialog
    over a job). The others show everything when they are on top again (``LiveScreen.on_screen_resume``):
    repainting a screen that is hidden costs nothing on screen, but Textual then repaints the whole
    screen on top (measured: the job list under a drain made every flush a full-screen repaint)."""
    shown: list[Screen[Any]] = []
    for screen in reversed(stack):
        shown.append(screen)
        if screen.styles.background.a >= 1:
            break
    return shown


def agent_connect() -> Connect:
    async def connect() -> JobSource:
        from kubectl_rollout.tui.agent_jobs import AgentJobs

        return await AgentJobs.connect()

    return connect


def recording_connect(paths: list[Path]) -> Connect:
    """The jobs recorded in ``paths``, read now: a file that is not a recording fails before the TUI starts
    (ValueError naming the file and line)."""
    from kubectl_rollout.tui.recorded_jobs import RecordedJobs

    source = RecordedJobs.from_files(paths)

    async def connect() -> JobSource:
        return source

    return connect
