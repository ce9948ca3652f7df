"""What the campaign's screen shows, worked out from its view: the waves (done, current, to come), the zones
(nodes out against the budget), each node's phase in the words a person reads (waiting, cordoned, draining,
blocked, soaking, ...), ordered by what needs attention, and the window now.

Pure: a ``CampaignView`` (and the clock, for the window) in, plain rows out. The screen only formats them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.drain import WorkloadAvailability
from kubectl_rollout.jobs.views.campaign import FINISHED, CampaignNodeState, CampaignView
from kubectl_rollout.jobs.views.pods import PodState


class NodePhase(enum.StrEnum):
    """A node's state as the screen says it: the view's state, with what its pods and its wave add."""

    #: draining, and a PodDisruptionBudget holds one of its pods now
    BLOCKED = "blocked"
    FAILED = "failed"
    #: --on-blocked keep: left cordoned and labelled for a person
    KEPT = "kept"
    #: --at-window-end stop: its drain stopped when the window closed; cordoned still, drained first when it opens
    STOPPED = "stopped"
    DRAINING = "draining"
    CORDONED = "cordoned"
    #: drained; its wave's workloads are being soaked
    SOAKING = "soaking"
    #: drained; the rest of its wave drains still
    DRAINED = "drained"
    #: soaked; its after-hook and uncordon come next
    SOAKED = "soaked"
    WAITING = "waiting"
    SKIPPED = "skipped"
    DONE = "done"


#: the phases in the order a person looks at them: what holds the campaign up first, what is over last
BY_ATTENTION: tuple[NodePhase, ...] = tuple(NodePhase)

_PLAIN = {
    CampaignNodeState.PENDING: NodePhase.WAITING,
    CampaignNodeState.CORDONED: NodePhase.CORDONED,
    CampaignNodeState.DRAINING: NodePhase.DRAINING,
    CampaignNodeState.DRAINED: NodePhase.DRAINED,
    CampaignNodeState.SOAKED: NodePhase.SOAKED,
    CampaignNodeState.DONE: NodePhase.DONE,
    CampaignNodeState.SKIPPED: NodePhase.SKIPPED,
    CampaignNodeState.KEPT: NodePhase.KEPT,
    CampaignNodeState.FAILED: NodePhase.FAILED,
}


@dataclass(frozen=True, kw_only=True)
class NodeRow:
    name: str
    phase: NodePhase
    #: its wave in the plan (0: not in the plan, a node finished before a resume)
    wave: int
    zone: str
    #: pods its drain removes (the plan's count, or the drain's once it started)
    pods: int
    #: of those, gone
    evicted: int
    #: of those, held by a PDB now, and which PDBs ("namespace/name")
    blocked: int
    pdbs: tuple[str, ...]
    #: why it was skipped, kept or failed, or what its failed hook said
    why: str


@dataclass(frozen=True, kw_only=True)
class _PodCounts:
    gone: int = 0
    blocked: int = 0
    pdbs: tuple[str, ...] = ()


def _pod_counts(view: CampaignView) -> dict[str, _PodCounts]:
    """Per node, its pods gone and held by a PDB now: one pass over the pods (6000 of them at every flush)."""
    gone: dict[str, int] = {}
    blocked: dict[str, int] = {}
    pdbs: dict[str, dict[str, None]] = {}
    for pod in view.pods.values():
        node = pod.pod.node
        if pod.state is PodState.GONE:
            gone[node] = gone.get(node, 0) + 1
        elif pod.state is PodState.BLOCKED:
            blocked[node] = blocked.get(node, 0) + 1
            if pod.blocker is not None and pod.blocker.pdb:
                pdbs.setdefault(node, {})[pod.blocker.pdb] = None
    return {
        node: _PodCounts(gone=gone.get(node, 0), blocked=blocked.get(node, 0), pdbs=tuple(pdbs.get(node, {})))
        for node in gone.keys() | blocked.keys()
    }


def _planned(view: CampaignView) -> dict[str, tuple[int, ev.PlannedNode]]:
    plan = view.campaign_plan
    if plan is None:
        return {}
    return {node.name: (wave.index, node) for wave in plan.waves for node in wave.nodes}


#: the states of a node whose drain the window's end stops (--at-window-end stop); one drained already soaks and
#: is handed to its after-hook still
_STOPPABLE = frozenset({CampaignNodeState.CORDONED, CampaignNodeState.DRAINING, CampaignNodeState.FAILED})


def _stopped_at_window_end(view: CampaignView, node: str) -> bool:
    cut = view.window_cut
    return (
        cut is not None
        and cut.at_window_end == "stop"
        and node in cut.in_progress
        and view.states.get(node, CampaignNodeState.PENDING) in _STOPPABLE
    )


def phase_of(view: CampaignView, node: str, *, blocked: int) -> NodePhase:
    """``node``'s phase: ``blocked`` of its pods a PDB holds now."""
    if _stopped_at_window_end(view, node):
        return NodePhase.STOPPED
    state = view.states.get(node, CampaignNodeState.PENDING)
    if state is CampaignNodeState.DRAINING and blocked:
        return NodePhase.BLOCKED
    if state is CampaignNodeState.DRAINED and view.soaking is not None and node in view.wave_nodes:
        return NodePhase.SOAKING
    return _PLAIN[state]


def node_rows(view: CampaignView) -> list[NodeRow]:
    """Every node of the campaign, what needs attention first (``BY_ATTENTION``), then in the plan's order
    (wave by wave), so that a row moves only when its node changes phase."""
    planned = _planned(view)
    counts = _pod_counts(view)
    order = {name: i for i, name in enumerate(planned)}
    rows: list[NodeRow] = []
    for name in view.states:
        pods = counts.get(name, _PodCounts())
        wave, plan = planned.get(name, (0, None))
        drain_node = view.nodes.get(name)
        why = view.why.get(name, "")
        if _stopped_at_window_end(view, name):
            # not the drain's "cancelled": the node is not failed, it goes on first at the next window
            why = "stopped at the window's end: cordoned, drained first when it opens"
        if not why and drain_node is not None and drain_node.reasons:
            why = "; ".join(drain_node.reasons)
        if not why and pods.blocked:
            why = f"{pods.blocked} pod{'s' if pods.blocked != 1 else ''} held by PDB {', '.join(pods.pdbs)}"
        ruled = view.held.get(name, ())
        if not why and ruled and view.states.get(name) is CampaignNodeState.DRAINING:
            rules = ", ".join(dict.fromkeys(r.source for r in ruled))
            why = f"{len(ruled)} pod{'s' if len(ruled) != 1 else ''} kept by {rules}"
        rows.append(
            NodeRow(
                name=name,
                phase=phase_of(view, name, blocked=pods.blocked),
                wave=wave,
                zone=view.zones.get(name, ""),
                pods=len(drain_node.pods) if drain_node is not None and drain_node.pods else (plan.pods if plan else 0),
                evicted=drain_node.evicted if drain_node is not None and drain_node.evicted else pods.gone,
                blocked=pods.blocked,
                pdbs=pods.pdbs,
                why=why,
            )
        )
    rank = {phase: i for i, phase in enumerate(BY_ATTENTION)}
    rows.sort(key=lambda r: (rank[r.phase], order.get(r.name, len(order)), r.name))
    return rows


def phase_counts(rows: list[NodeRow]) -> dict[NodePhase, int]:
    """How many nodes are in each phase, in ``BY_ATTENTION`` order, phases with none left out."""
    counts = dict.fromkeys(BY_ATTENTION, 0)
    for row in rows:
        counts[row.phase] += 1
    return {phase: n for phase, n in counts.items() if n}


class WaveStatus(enum.StrEnum):
    CURRENT = "current"
    NEXT = "next"
    #: after the next one
    TO_COME = "to come"
    DONE = "done"
    #: the campaign ended before it (stopped, cancelled)
    NOT_STARTED = "not started"


@dataclass(frozen=True, kw_only=True)
class WaveRow:
    index: int
    status: WaveStatus
    nodes: tuple[str, ...]
    zones: tuple[str, ...]
    #: its nodes the campaign is through with (done, skipped, kept)
    finished: int
    #: pods the plan said it removes
    pods: int
    #: the PDBs the plan said would hold it
    blockers: tuple[ev.WaveBlocker, ...]


def wave_rows(view: CampaignView) -> list[WaveRow]:
    """The plan's waves: the current one first, then those to come in order, then those done, latest first
    (at 80x24 the wave in progress and the next one are what fits)."""
    plan = view.campaign_plan
    if plan is None:
        return []
    ended = view.campaign_finished is not None
    current: list[WaveRow] = []
    coming: list[WaveRow] = []
    done: list[WaveRow] = []
    for wave in plan.waves:
        names = tuple(node.name for node in wave.nodes)
        finished = sum(1 for n in names if view.states.get(n) in FINISHED)
        if finished == len(names) or wave.index < view.wave:
            status = WaveStatus.DONE
        elif wave.index == view.wave and not ended:
            status = WaveStatus.CURRENT
        elif ended:
            status = WaveStatus.NOT_STARTED
        else:
            status = WaveStatus.NEXT if wave.index == view.wave + 1 else WaveStatus.TO_COME
        row = WaveRow(
            index=wave.index,
            status=status,
            nodes=names,
            zones=wave.zones,
            finished=finished,
            pods=wave.pods,
            blockers=wave.blockers,
        )
        {WaveStatus.CURRENT: current, WaveStatus.DONE: done}.get(status, coming).append(row)
    return [*current, *coming, *reversed(done)]


@dataclass(frozen=True, kw_only=True)
class ZoneRow:
    zone: str
    nodes: int
    out: int
    finished: int
    #: nodes of this zone allowed out at once (--zone-budget, else the campaign's budget); None: not known
    cap: int | None


def zone_rows(view: CampaignView) -> list[ZoneRow]:
    """Each zone of the campaign's nodes (by name; "" for nodes without the zone label)."""
    plan = view.campaign_plan
    caps: Mapping[str, int] = {c.zone: c.cap for c in plan.zone_caps} if plan is not None else {}
    nodes: dict[str, int] = {}
    out: dict[str, int] = {}
    finished: dict[str, int] = {}
    for name, state in view.states.items():
        zone = view.zones.get(name, "")
        nodes[zone] = nodes.get(zone, 0) + 1
        out[zone] = out.get(zone, 0) + (1 if state.out else 0)
        finished[zone] = finished.get(zone, 0) + (1 if state in FINISHED else 0)
    return [
        ZoneRow(
            zone=zone,
            nodes=count,
            out=out[zone],
            finished=finished[zone],
            cap=caps.get(zone, plan.budget if plan is not None else None),
        )
        for zone, count in sorted(nodes.items())
    ]


class WindowState(enum.StrEnum):
    #: no window given: the campaign may start a node at any time
    ALWAYS = "always open"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True, kw_only=True)
class WindowNow:
    state: WindowState
    #: open: when it closes; closed: when the next one opens (epoch seconds); None: not known (closed: none
    #: within a week)
    until: float | None
    #: the windows as given ("Mon-Fri 22:00-04:00 Europe/Berlin")
    windows: tuple[str, ...]

    def seconds_left(self, now: float) -> float | None:
        return None if self.until is None else max(0.0, self.until - now)


def window_now(view: CampaignView) -> WindowNow:
    """The window as the campaign's last word on it said: open until when, or closed until when."""
    plan = view.campaign_plan
    windows = plan.windows if plan is not None else ()
    if not windows:
        return WindowNow(state=WindowState.ALWAYS, until=None, windows=())
    if view.window_closed:
        return WindowNow(state=WindowState.CLOSED, until=view.closed_until, windows=windows)
    closes = view.window_closes_at
    if closes is None and plan is not None and view.closed_until is None:
        closes = plan.window_closes_at
        if closes is None and plan.next_opening is not None:
            # planned while closed, and no word since: closed until the next opening
            return WindowNow(state=WindowState.CLOSED, until=plan.next_opening, windows=windows)
    return WindowNow(state=WindowState.OPEN, until=closes, windows=windows)


@dataclass(frozen=True, kw_only=True)
class SoakNow:
    """The soak of the wave in progress: counting down, or waiting for workloads to be available (again)."""

    index: int
    #: the soak as asked (--soak)
    seconds: float
    #: when it ends if nothing drops out (epoch seconds); None: not counting, it waits for ``waiting``
    until: float | None
    #: the workloads it waits to be available (again) before it counts
    waiting: tuple[WorkloadAvailability, ...]
    #: times one became unavailable while it counted, which started the count again
    restarts: int

    def seconds_left(self, now: float) -> float | None:
        return None if self.until is None else max(0.0, self.until - now)


def soak_now(view: CampaignView) -> SoakNow | None:
    """The wave's soak as its last events said it; None when no wave is soaking."""
    soaking = view.soaking
    if soaking is None or view.campaign_finished is not None:
        return None
    return SoakNow(
        index=soaking.index,
        seconds=soaking.seconds,
        until=view.soak_until,
        waiting=() if view.soak_until is not None else view.waiting_for,
        restarts=view.soak_restarts,
    )


@dataclass(frozen=True, kw_only=True)
class WindowCut:
    """The window closed while a wave was in progress: no new node starts before ``next_opening``; the nodes in
    progress finish (``--at-window-end finish``; under ``stop``, those drained already) or stop."""

    at_window_end: str
    #: epoch seconds; None: no opening within a week
    next_opening: float | None
    #: in progress at the window's end and not through yet: draining, soaking, their after-hooks
    finishing: tuple[str, ...]
    #: their drains stopped: cordoned still, drained first at the next window
    stopped: tuple[str, ...]
    #: in progress at the window's end, through since (done, skipped, kept, or failed)
    through: tuple[str, ...]

    def seconds_to_opening(self, now: float) -> float | None:
        return None if self.next_opening is None else max(0.0, self.next_opening - now)


def window_cut(view: CampaignView) -> WindowCut | None:
    """What the window's end did to the wave in progress, until the window opens again; None when it closed
    between waves (or is open)."""
    cut = view.window_cut
    if cut is None or view.campaign_finished is not None:
        return None
    finishing: list[str] = []
    stopped: list[str] = []
    through: list[str] = []
    for node in cut.in_progress:
        state = view.states.get(node, CampaignNodeState.PENDING)
        if _stopped_at_window_end(view, node):
            stopped.append(node)
        elif state in FINISHED or state is CampaignNodeState.FAILED:
            through.append(node)
        else:
            finishing.append(node)
    return WindowCut(
        at_window_end=cut.at_window_end,
        next_opening=view.closed_until,
        finishing=tuple(finishing),
        stopped=tuple(stopped),
        through=tuple(through),
    )
