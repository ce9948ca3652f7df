"""The screen of a campaign: its waves, its zones, its nodes by phase, and why the current wave waits.

Drawn from the campaign's view through ``jobs.views.campaign_board`` (waves,
zones, node phases, the window), so the screen only formats. What needs a
person's eyes comes first at 80x24: the summary (wave, nodes out against the
budget, the rate, the soak, the window and its time left, nodes per phase),
the wave in progress and the next ones, the nodes blocked, failed, kept or
stopped by the window's end before those draining, waiting and done, and the blocker panel of the drain's
screen for the PDBs that hold the current wave's pods now (their workload by
name, what ``--on-blocked surge`` would do). ``p`` pauses (no new wave, no new
eviction) and ``c`` cancels, as on the drain's screen. ``s`` (confirmed) asks the
running campaign to drain the current wave's blocked nodes through a surge, where
the workload a PDB holds can surge (``jobs.views.campaign_surge``): the campaign
keeps its id, its window and its rate; only those nodes' drains start again.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header, Static

from kubectl_rollout.agent.client import cluster_calls
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.jobs.views.blockers import PdbBlock, pdb_blocks
from kubectl_rollout.jobs.views.campaign import CampaignView
from kubectl_rollout.jobs.views.campaign_board import (
    NodeRow,
    SoakNow,
    WaveRow,
    WindowCut,
    WindowState,
    ZoneRow,
    node_rows,
    phase_counts,
    soak_now,
    wave_rows,
    window_cut,
    window_now,
    zone_rows,
)
from kubectl_rollout.jobs.views.campaign_surge import surge_targets
from kubectl_rollout.tui.agent_calls import CallRunner
from kubectl_rollout.tui.formatting import countdown, duration
from kubectl_rollout.tui.screens.job_screen import JobScreen
from kubectl_rollout.tui.widgets.blocker_panel import BlockerPanel
from kubectl_rollout.tui.widgets.filter_bar import FilterBar
from kubectl_rollout.tui.widgets.live_table import Cell, LiveTable
from kubectl_rollout.tui.widgets.state_style import state_text

WAVE_COLUMNS = ("WAVE", "STATE", "NODES", "DONE", "PODS", "ZONES", "HELD BY (PLAN)")
#: why a node waits comes right after its state: at 80 columns long node names leave little room after them
NODE_COLUMNS = ("NODE", "STATE", "WHY", "WAVE", "ZONE", "PODS", "EVICTED")


def wave_row(wave: WaveRow) -> tuple[Cell, ...]:
    held = ", ".join(f"{b.pdb} ({b.rounds} rounds)" for b in wave.blockers) or "-"
    return (
        str(wave.index),
        state_text(str(wave.status)),
        str(len(wave.nodes)),
        f"{wave.finished}/{len(wave.nodes)}",
        str(wave.pods),
        ", ".join(z for z in wave.zones if z) or "-",
        held,
    )


def node_row(row: NodeRow) -> tuple[Cell, ...]:
    return (
        row.name,
        state_text(str(row.phase)),
        row.why or "-",
        str(row.wave) if row.wave else "-",
        row.zone or "-",
        str(row.pods) if row.pods else "-",
        str(row.evicted) if row.evicted else "-",
    )


def zones_line(zones: list[ZoneRow], *, per_zone: bool) -> Text:
    """``zones: zone-a 1/2 out, 0/3 done · zone-b ...``; nothing for a campaign whose nodes have no zone."""
    named = [z for z in zones if z.zone]
    if not named:
        return Text()
    text = Text("zones", style="bold")
    text.append(" (one at a time)" if per_zone else "")
    text.append(": ")
    for i, zone in enumerate(named):
        if i:
            text.append(" · ", style="dim")
        text.append(f"{zone.zone} ")
        cap = f"/{zone.cap}" if zone.cap is not None else ""
        text.append(f"{zone.out}{cap} out", style="cyan" if zone.out else "")
        text.append(f", {zone.finished}/{zone.nodes} done", style="dim")
    return text


def soak_text(soak: SoakNow, *, now: float) -> Text:
    """`` · soaking wave 2: 12s left of 30s``, or what it waits to be available before it counts (again)."""
    text = Text()
    left = soak.seconds_left(now)
    if left is not None:
        text.append(f" · soaking wave {soak.index}: {duration(left)} left of {duration(soak.seconds)}", style="cyan")
    else:
        text.append(f" · soaking wave {soak.index}: waits for", style="cyan")
        for i, wait in enumerate(soak.waiting):
            text.append("," if i else "")
            text.append(f" {wait.workload} {wait.available}/{wait.desired}", style="yellow")
        text.append(" available" if soak.waiting else " its workloads", style="cyan")
        if soak.seconds:  # without --soak the wave only waits for its workloads to be available again
            text.append(f", then {duration(soak.seconds)}", style="cyan")
    if soak.restarts:
        text.append(f" (started over {soak.restarts}x)", style="yellow")
    return text


def _names(nodes: tuple[str, ...], *, most: int = 3) -> str:
    shown = ", ".join(nodes[:most])
    return shown + (f" and {len(nodes) - most} more" if len(nodes) > most else "")


def cut_text(cut: WindowCut) -> Text:
    """``closed mid-wave: no new node starts · finishing pool-001 · stopped (drained first when it opens)
    pool-004``: what the window's end did to the wave in progress."""
    text = Text("closed mid-wave", style="bold yellow")
    text.append(": no new node starts")
    if cut.finishing:
        text.append(" · finishing ")
        text.append(_names(cut.finishing), style="cyan")
    if cut.stopped:
        text.append(" · stopped ")
        text.append(_names(cut.stopped), style="yellow")
        text.append(" (cordoned, drained first when it opens)", style="dim")
    if not cut.finishing and not cut.stopped:
        text.append(" · the wave it cut is through", style="dim")
    return text


def summary(view: CampaignView, rows: list[NodeRow], *, now: float) -> Text:
    """The campaign in five lines at most: the wave and the budget in use, the window (and, closed mid-wave,
    what finishes and what stopped), the nodes by phase, the zones."""
    plan = view.campaign_plan
    text = Text()
    waves = len(plan.waves) if plan is not None else 0
    text.append(f"wave {view.wave}/{waves}" if view.wave else f"{waves} waves, none started", style="bold")
    if plan is not None:
        budget = f" ({plan.budget_text})" if plan.budget_text and plan.budget_text != str(plan.budget) else ""
        text.append(f" · out {len(view.out)}/{plan.budget}{budget}")
        if plan.zone_budget:
            text.append(f" · zone budget {plan.zone_budget}")
        if plan.rate:
            text.append(f" · rate {plan.rate}")
        if plan.soak:
            text.append(f" · soak {duration(plan.soak)}")
    if view.rate_until is not None and view.campaign_finished is None:
        text.append(f" · next wave {countdown(view.rate_until, now)} (rate)", style="yellow")
    soak = soak_now(view)
    if soak is not None:
        text.append_text(soak_text(soak, now=now))
    window = window_now(view)
    text.append("\nwindow: ", style="bold")
    if window.state is WindowState.ALWAYS:
        text.append("none (always open)", style="dim")
    else:
        left = window.seconds_left(now)
        if window.state is WindowState.OPEN:
            text.append("open", style="green")
            text.append(f", closes in {duration(left)}" if left is not None else "")
        else:
            text.append("closed", style="bold yellow")
            text.append(f", opens in {duration(left)}" if left is not None else ", no opening within a week")
        text.append(f" ({'; '.join(window.windows)})", style="dim")
    cut = window_cut(view)
    if cut is not None:
        text.append("\n")
        text.append_text(cut_text(cut))
    counts = phase_counts(rows)
    text.append("\nnodes: ", style="bold")
    for i, (phase, n) in enumerate(counts.items()):
        if i:
            text.append(" · ", style="dim")
        text.append(f"{n} ")
        text.append_text(state_text(str(phase)))
    zones = zones_line(zone_rows(view), per_zone=plan.per_zone if plan is not None else False)
    if zones.plain:
        text.append("\n")
        text.append_text(zones)
    return text


def surge_question(job_id: str, targets: dict[str, tuple[WorkloadRef, ...]]) -> str:
    """The confirmation of ``s``: the nodes, their workloads, and what happens to them and to the others."""
    nodes = ", ".join(f"node/{n}" for n in targets)
    workloads = ", ".join(str(w) for w in dict.fromkeys(w for ws in targets.values() for w in ws))
    return (
        f"Drain {nodes} through a surge?\n\n"
        f"Campaign {job_id} stops waiting for the PDB there and drains {'it' if len(targets) == 1 else 'them'} "
        f"again with --surge: {workloads} first get extra replicas on other nodes, each pod is evicted once its "
        "stand-in is Ready, then the count comes back to what it was, so the PDB never drops below its minimum. "
        "What was evicted stays evicted; the other nodes of the wave drain on, and the campaign keeps its window "
        "and its rate. The request is journaled: a campaign resumed after a restart surges them still."
    )


class CampaignScreen(JobScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "surge", "Surge", tooltip="Drain the blocked nodes through a surge")
    ]
    HELP_TEXT = (
        "A campaign: a pool of nodes drained in waves. At the top the wave in progress, the nodes out against "
        "the budget (and the zone budget), the rate and the soak (its time left, or the workloads it waits "
        "for), the window (open until, or closed until; closed mid-wave: the nodes still finishing and those "
        "whose drain it stopped) and the nodes per phase and per zone. The waves: the current one, those to "
        "come, those done, each with the PDBs the plan said would hold it. The nodes, what needs attention "
        "first: blocked (a PDB holds one of its pods now), failed, kept, stopped (by the window's end), "
        "draining, cordoned, soaking, waiting, skipped, done. Below, the blocker panel explains each "
        "PodDisruptionBudget holding the current wave's pods, names their workload and what would unblock it. "
        "p pauses the campaign (no new wave, no new eviction), c cancels it. s (when a PDB holds a pod of the "
        "current wave whose Deployment or managed workload can surge) asks the campaign to drain those nodes "
        "through a surge: extra replicas elsewhere first; the other nodes drain on."
    )

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id)
        #: the node rows and blocking PDBs of a view (worked out once per view: a pass over every pod)
        self._rows_of: tuple[object, list[NodeRow], list[PdbBlock]] | None = None
        #: the nodes ``s`` is for in a view (worked out once per view)
        self._targets_of: tuple[object, dict[str, tuple[WorkloadRef, ...]]] | None = None
        #: ``s`` was confirmed and the request is on its way
        self._asking = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="job-header", classes="summary")
        yield Static(id="campaign-summary", classes="summary")
        yield LiveTable(WAVE_COLUMNS, id="waves")
        # The nodes change phase by themselves: the cursor keeps its line (see EvictionsScreen's pods).
        yield LiveTable(NODE_COLUMNS, id="campaign-nodes", cursor_follows_key=False)
        yield BlockerPanel()
        yield FilterBar()
        yield Footer()

    def on_mount(self) -> None:
        self.title = f"Job {self.job_id}"
        self.query_one(FilterBar).display = False
        self.show_all()

    def _facts(self, view: CampaignView) -> tuple[list[NodeRow], list[PdbBlock]]:
        if self._rows_of is not None and self._rows_of[0] is view:
            return self._rows_of[1], self._rows_of[2]
        rows = node_rows(view)
        blocks = pdb_blocks(view.pods, view.pdb_pods, surge=view.owner_facts)
        self._rows_of = (view, rows, blocks)
        return rows, blocks

    def show_all(self) -> None:
        if not self.is_mounted:
            return
        now = self.rollout_app.clock()
        self.show_text("#job-header", self.header_line())
        body = self.view.body
        if not isinstance(body, CampaignView):
            return  # the job's first events are not in yet
        rows, blocks = self._facts(body)
        self.show_text("#campaign-summary", summary(body, rows, now=now))
        waves = wave_rows(body)
        self.query_one("#waves", LiveTable).sync([(str(w.index), wave_row(w)) for w in waves])
        needle = self.query_one(FilterBar).value
        self.query_one("#campaign-nodes", LiveTable).sync([(r.name, node_row(r)) for r in rows], needle=needle)
        self.query_one(BlockerPanel).show_blocks(blocks, now=now, surge_key=self.check_action("surge", ()) is True)

    # --- s: the blocked nodes through a surge --------------------------------------------------

    def _targets(self) -> dict[str, tuple[WorkloadRef, ...]]:
        body = self.view.body
        if self._targets_of is not None and self._targets_of[0] is body:
            return self._targets_of[1]
        targets = surge_targets(body) if isinstance(body, CampaignView) else {}
        self._targets_of = (body, targets)
        return targets

    def _key_facts(self) -> tuple[object, ...]:
        return (*super()._key_facts(), self._asking, tuple(self._targets()))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "surge":
            # Shown only where it applies; --readonly and a recording never show it.
            return self._may_steer() and not self._asking and self._job_running() and bool(self._targets())
        return super().check_action(action, parameters)

    @work(group="surge")
    async def action_surge(self) -> None:
        targets = self._targets()
        if self.check_action("surge", ()) is not True:
            return
        from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen

        question = surge_question(self.job_id, targets)
        if not await self.app.push_screen_wait(ConfirmScreen(question, yes="Surge")):
            return
        link: CallRunner | None = getattr(self.app, "cluster_link", None)
        # Not the whole test again: a blocked pod is "evicting" for the moment of each retry, which would refuse a
        # question just answered. The agent refuses a node finished meanwhile; one drained meanwhile is left be.
        if link is None or self._asking or not (self._may_steer() and self._job_running()):
            self.notify(f"job {self.job_id} ended or changed meanwhile: nothing was done", severity="warning")
            return
        self._asking = True
        self.refresh_bindings()
        try:
            await link.run(cluster_calls.surge(self.job_id, list(targets)))
        except AgentError as err:
            self.notify(err.message, severity="error", timeout=20)
            return
        finally:
            self._asking = False
            self.refresh_bindings()
        self.notify(f"job {self.job_id} drains {', '.join(f'node/{n}' for n in targets)} through a surge")
