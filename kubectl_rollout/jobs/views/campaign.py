"""A campaign's current state, folded from its events: a drain's view (nodes, pods, blockers, surges) and the
campaign's own: the plan, the waves, each node's outcome, the window, the rate, the hooks.

``CampaignView`` is a ``DrainView``, so that what shows a drain's nodes and pods shows a campaign's too; what
is the campaign's own is here, enough to draw its screen: waves, zones, nodes by state, the blockers of the
current wave, the time to the window's end.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.views import drain
from kubectl_rollout.jobs.views.blockers import OwnerFacts


class CampaignNodeState(enum.StrEnum):
    PENDING = "pending"
    CORDONED = "cordoned"
    DRAINING = "draining"
    DRAINED = "drained"
    SOAKED = "soaked"
    DONE = "done"
    SKIPPED = "skipped"
    KEPT = "kept"
    FAILED = "failed"

    @property
    def out(self) -> bool:
        """Cordoned by the campaign and not finished: what the budget counts."""
        return self in (self.CORDONED, self.DRAINING, self.DRAINED, self.SOAKED, self.FAILED)


#: the states of a node the campaign is through with
FINISHED = frozenset({CampaignNodeState.DONE, CampaignNodeState.SKIPPED, CampaignNodeState.KEPT})

_NO_STATES: Mapping[str, CampaignNodeState] = MappingProxyType({})
_NO_ZONES: Mapping[str, str] = MappingProxyType({})
_NO_HELD: Mapping[str, tuple[ev.RuledPod, ...]] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class CampaignView(drain.DrainView):
    campaign_plan: ev.CampaignPlanned | None = None
    #: the wave in progress (1, 2, ...); 0 before the first
    wave: int = 0
    wave_nodes: tuple[str, ...] = ()
    #: every node of the campaign and its state
    states: Mapping[str, CampaignNodeState] = field(default_factory=lambda: _NO_STATES)
    #: each node's zone, from the plan
    zones: Mapping[str, str] = field(default_factory=lambda: _NO_ZONES)
    #: why a node was skipped or kept, or what its failed hook said
    why: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: pods per-pod rules keep from eviction, per node
    held: Mapping[str, tuple[ev.RuledPod, ...]] = field(default_factory=lambda: _NO_HELD)
    #: the window is closed: no node starts before this time (epoch seconds); None: open (or no window)
    closed_until: float | None = None
    window_closed: bool = False
    #: the window closed while a wave was in progress (its ``in_progress`` nodes finish or stop); None once it
    #: opens again
    window_cut: ev.WindowClosed | None = None
    #: when the open window closes (epoch seconds); None: no window, or closed
    window_closes_at: float | None = None
    #: the next wave waits for --rate until then
    rate_until: float | None = None
    #: the wave being soaked, and for how long
    soaking: ev.SoakStarted | None = None
    #: when the soak ends if its workloads stay available (epoch seconds); None: not counting (it waits for a
    #: workload to be available again, or no soak)
    soak_until: float | None = None
    #: times a workload became unavailable during this soak's count, which started it again
    soak_restarts: int = 0
    hooks: tuple[ev.HookRan, ...] = ()
    campaign_finished: ev.CampaignFinished | None = None
    #: nodes a person asked to drain through a surge (``jobs surge``, ``s``), in the order asked
    surge_requested: tuple[str, ...] = ()

    def nodes_in(self, state: CampaignNodeState) -> list[str]:
        return sorted(n for n, s in self.states.items() if s is state)

    @property
    def out(self) -> list[str]:
        return sorted(n for n, s in self.states.items() if s.out)

    @property
    def owner_facts(self) -> OwnerFacts:
        """The drain's, with the campaign's way to a surge: ``--on-blocked surge`` (its drains take no --surge)."""
        plan = self.campaign_plan
        way = "--on-blocked surge would"
        if plan is not None and plan.on_blocked == "surge":
            way = "this campaign (--on-blocked surge) will, once the node's --timeout is out,"
        return dataclasses.replace(super().owner_facts, surge_way=way)

    @property
    def wave_blockers(self) -> tuple[ev.WaveBlocker, ...]:
        """What the plan said would hold the current wave (the live ones are ``blocking_pdbs``)."""
        if self.campaign_plan is None:
            return ()
        for wave in self.campaign_plan.waves:
            if wave.index == self.wave:
                return wave.blockers
        return ()


def fold(view: CampaignView, envelope: Envelope) -> CampaignView:
    """``view`` after ``envelope``: the drain's part first, then the campaign's."""
    if envelope.seq <= view.last_seq:
        return view
    folded = drain.fold(view, envelope)
    assert isinstance(folded, CampaignView)  # dataclasses.replace keeps the class
    return _fold_campaign(folded, envelope.event)


def _with_state(view: CampaignView, node: str, state: CampaignNodeState, why: str = "") -> CampaignView:
    states = dict(view.states)
    states[node] = state
    if not why:
        return dataclasses.replace(view, states=states)
    reasons = dict(view.why)
    reasons[node] = why
    return dataclasses.replace(view, states=states, why=reasons)


def _without_why(view: CampaignView, node: str) -> CampaignView:
    drained = view.nodes.get(node)
    if node not in view.why and (drained is None or not drained.reasons):
        return view
    reasons = {name: why for name, why in view.why.items() if name != node}
    nodes = dict(view.nodes)
    if drained is not None:
        nodes[node] = dataclasses.replace(drained, reasons=())
    return dataclasses.replace(view, why=reasons, nodes=nodes)


def _fold_campaign(view: CampaignView, event: Event) -> CampaignView:
    if isinstance(event, ev.CampaignPlanned):
        states = dict(view.states)
        zones = dict(view.zones)
        for wave in event.waves:
            for node in wave.nodes:
                states.setdefault(node.name, CampaignNodeState.PENDING)
                zones[node.name] = node.zone
        for name in event.done:
            states[name] = CampaignNodeState.DONE
        return dataclasses.replace(view, campaign_plan=event, states=states, zones=zones)
    if isinstance(event, ev.WaveStarted):
        return dataclasses.replace(view, wave=event.index, wave_nodes=event.nodes, rate_until=None)
    if isinstance(event, ev.SurgeRequested):
        asked = tuple(dict.fromkeys((*view.surge_requested, *event.nodes)))
        return dataclasses.replace(view, surge_requested=asked)
    if isinstance(event, drain_events.NodeCordoned) and event.node in view.states:
        return _with_state(view, event.node, CampaignNodeState.CORDONED)
    if isinstance(event, drain_events.NodeDrainStarted) and event.node in view.states:
        # drained again (a wave the window's end stopped goes on): why its last drain ended is past
        view = _without_why(view, event.node)
        return _with_state(view, event.node, CampaignNodeState.DRAINING)
    if isinstance(event, drain_events.NodeDrained) and event.node in view.states:
        return _with_state(view, event.node, CampaignNodeState.DRAINED)
    if isinstance(event, drain_events.NodeDrainFailed) and event.node in view.states:
        return _with_state(view, event.node, CampaignNodeState.FAILED, event.reason)
    if isinstance(event, ev.PodsHeld):
        held = dict(view.held)
        held[event.node] = event.pods
        return dataclasses.replace(view, held=held)
    if isinstance(event, ev.SoakStarted):
        return dataclasses.replace(view, soaking=event, soak_until=None, soak_restarts=0, waiting_for=())
    if isinstance(event, ev.SoakCounting):
        # every workload is available again: what was waited for is not any more
        return dataclasses.replace(view, soak_until=event.until, waiting_for=())
    if isinstance(event, drain_events.WaitingForWorkloads) and view.soaking is not None:
        # a workload dropped out while the soak counted: the count waits for it, then starts again
        restarts = view.soak_restarts + (1 if view.soak_until is not None else 0)
        return dataclasses.replace(view, soak_until=None, soak_restarts=restarts)
    if isinstance(event, ev.NodeSoaked):
        soaked = _with_state(view, event.node, CampaignNodeState.SOAKED)
        return dataclasses.replace(soaked, soaking=None, soak_until=None, soak_restarts=0)
    if isinstance(event, ev.HookRan):
        view = dataclasses.replace(view, hooks=(*view.hooks, event))
        if not event.ok:
            reasons = dict(view.why)
            reasons[event.node] = f"{event.hook}-hook exited {event.exit_code}" + (
                " (timed out)" if event.timed_out else ""
            )
            view = dataclasses.replace(view, why=reasons)
        return view
    if isinstance(event, ev.NodeDone):
        return _with_state(view, event.node, CampaignNodeState.DONE)
    if isinstance(event, ev.NodeSkipped):
        return _with_state(view, event.node, CampaignNodeState.SKIPPED, event.reason)
    if isinstance(event, ev.NodeKept):
        return _with_state(view, event.node, CampaignNodeState.KEPT, event.reason)
    if isinstance(event, ev.WindowClosed):
        # Closed mid-wave, then said again once the wave is through: the first names what was in progress.
        cut = event if event.in_progress else view.window_cut
        return dataclasses.replace(
            view, window_closed=True, closed_until=event.next_opening, window_closes_at=None, window_cut=cut
        )
    if isinstance(event, ev.WindowOpened):
        return dataclasses.replace(
            view, window_closed=False, closed_until=None, window_closes_at=event.closes_at, window_cut=None
        )
    if isinstance(event, ev.WaitingForRate):
        return dataclasses.replace(view, rate_until=event.until)
    if isinstance(event, ev.CampaignFinished):
        return dataclasses.replace(view, campaign_finished=event, soaking=None, soak_until=None, rate_until=None)
    return view
