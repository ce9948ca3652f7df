"""A campaign's own events (see ``base`` for the envelope and the rules for changing them).

A campaign drains its nodes with the drain engine, so its stream also carries the drain's events
(``NodeCordoned``, ``NodeDrainStarted``, ``NodeDrained``, ``NodeDrainFailed``, the evictions and the surges);
these say what the campaign decided around them: the plan, the waves, the windows, the rate, the soak, the
hooks, and each node's outcome. A screen draws from them: waves, zones, nodes by state, the blockers of the
current wave, the time to the window's end.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.drain import WorkloadRef


class PodRule(enum.StrEnum):
    """A per-pod rule that changes how a campaign's drain treats a pod."""

    #: karpenter.sh/do-not-disrupt=true: never evicted; its node waits until the pod is gone or the rule lifted
    DO_NOT_DISRUPT = "do-not-disrupt"
    #: Cluster API's cluster.x-k8s.io/drain=skip: never evicted; its node counts as drained with it still there
    SKIP = "skip"
    #: Cluster API's cluster.x-k8s.io/drain=wait-completed: never evicted; its node waits until it completes
    WAIT_COMPLETED = "wait-completed"


@dataclass(frozen=True, kw_only=True)
class RuledPod:
    pod: PodRef
    rule: PodRule
    #: the label or annotation that set the rule, as "key=value"
    source: str
    #: what the rule does to the pod's node, for a person
    effect: str


@dataclass(frozen=True, kw_only=True)
class PlannedNode:
    name: str
    zone: str = ""
    #: pods the drain would remove
    pods: int = 0
    cordoned: bool = False
    #: finished before (a resumed campaign): not drained again
    done: bool = False


@dataclass(frozen=True, kw_only=True)
class WaveBlocker:
    """A PodDisruptionBudget that will hold a wave's evictions: it cannot let all of the wave's pods go at once."""

    #: "namespace/name"
    pdb: str
    #: the wave's pods it selects
    pods: int
    #: disruptions it allows now
    allowed: int
    #: the least number of eviction rounds it forces (each waits for a replacement to be Ready)
    rounds: int
    #: a lower bound of the time it adds: rounds beyond the first, times the slowest readiness seen (minReadySeconds)
    at_least_seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class WavePlan:
    index: int
    nodes: tuple[PlannedNode, ...]
    zones: tuple[str, ...] = ()
    blockers: tuple[WaveBlocker, ...] = ()
    #: pods the wave would remove
    pods: int = 0


@dataclass(frozen=True, kw_only=True)
class ZoneCap:
    """``--zone-budget``: at most ``cap`` of a zone's ``nodes`` (those left to do) out at once."""

    zone: str
    nodes: int
    cap: int


@dataclass(frozen=True, kw_only=True)
class CampaignPlanned(Event):
    TYPE = "CampaignPlanned"

    waves: tuple[WavePlan, ...]
    #: nodes out at once, as a number (the budget over the campaign's nodes)
    budget: int
    #: the budget as given ("20%")
    budget_text: str = ""
    per_zone: bool = False
    rate: str = ""
    soak: float = 0.0
    windows: tuple[str, ...] = ()
    #: pods that per-pod rules keep from eviction, with what each rule does
    ruled_pods: tuple[RuledPod, ...] = ()
    #: nodes finished before this run (a resumed campaign), not drained again
    done: tuple[str, ...] = ()
    #: a lower bound of the campaign's time, seconds (waves, blockers, soak, rate; windows not counted)
    estimated_seconds: float = 0.0
    plan_only: bool = False
    #: with windows: when the one open now closes (epoch seconds), or when the next opens
    window_closes_at: float | None = None
    next_opening: float | None = None
    #: --zone-budget as given ("1", "50%"), and what it allows in each zone; "" and () without one
    zone_budget: str = ""
    zone_caps: tuple[ZoneCap, ...] = ()
    #: --on-blocked: what a node that cannot drain within --timeout gets ("wait", "skip", "keep", "surge")
    on_blocked: str = ""
    #: the soft taint put on every node still to drain as the campaign starts ("key=value:effect"); "" with
    #: --no-taint-pending
    pending_taint: str = ""


@dataclass(frozen=True, kw_only=True)
class PendingTainted(Event):
    """The nodes still to drain got the campaign's soft taint (at its start, its resume, or a window's
    opening): the scheduler places pods there only when no other node fits."""

    TYPE = "PendingTainted"

    nodes: tuple[str, ...]
    #: "key=value:effect"
    taint: str


@dataclass(frozen=True, kw_only=True)
class PendingUntainted(Event):
    """The campaign took its soft taint off nodes it has not finished: at its end (cancelled, stopped, or a
    node it never reached), or while it waits for its next window. A node it finishes loses its taint with
    its ``NodeDone``, ``NodeSkipped`` or ``NodeKept``."""

    TYPE = "PendingUntainted"

    nodes: tuple[str, ...]
    #: "finished" or "window"
    reason: str


@dataclass(frozen=True, kw_only=True)
class WaveStarted(Event):
    TYPE = "WaveStarted"

    index: int
    nodes: tuple[str, ...]
    zones: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PodsHeld(Event):
    """A node's pods that per-pod rules keep from eviction, as its drain starts."""

    TYPE = "PodsHeld"

    node: str
    pods: tuple[RuledPod, ...]


@dataclass(frozen=True, kw_only=True)
class SoakStarted(Event):
    """The wave's drains are over; its workloads must be fully available and stay so for ``seconds``."""

    TYPE = "SoakStarted"

    index: int
    seconds: float
    workloads: tuple[WorkloadRef, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SoakCounting(Event):
    """The wave's workloads are all available: the soak counts from now and ends at ``until`` (epoch seconds),
    unless one becomes unavailable first (a ``WaitingForWorkloads``; the count starts again once it is back)."""

    TYPE = "SoakCounting"

    index: int
    until: float


@dataclass(frozen=True, kw_only=True)
class NodeSoaked(Event):
    TYPE = "NodeSoaked"

    node: str
    index: int
    #: how long the soak took, waiting for availability included
    seconds: float


@dataclass(frozen=True, kw_only=True)
class HookRan(Event):
    TYPE = "HookRan"

    node: str
    #: "pre" or "post"
    hook: str
    command: str
    exit_code: int
    seconds: float
    #: the last lines of its output (stdout and stderr)
    output: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True, kw_only=True)
class NodeLabelled(Event):
    TYPE = "NodeLabelled"

    node: str
    #: "pre" or "post"
    hook: str
    #: "key=value" set, "key-" removed
    labels: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class NodeDone(Event):
    """A node finished: drained, soaked, its after-hook run, uncordoned (unless asked not to)."""

    TYPE = "NodeDone"

    node: str
    uncordoned: bool
    #: the node was gone after its after-hook (replaced): nothing left to uncordon
    replaced: bool = False


@dataclass(frozen=True, kw_only=True)
class NodeSkipped(Event):
    """A node left behind: its pre-hook failed (never cordoned), or ``--on-blocked skip`` (uncordoned)."""

    TYPE = "NodeSkipped"

    node: str
    reason: str
    uncordoned: bool


@dataclass(frozen=True, kw_only=True)
class NodeKept(Event):
    """``--on-blocked keep`` (or a surge that did not help): left cordoned and labelled for a person."""

    TYPE = "NodeKept"

    node: str
    reason: str
    #: the label set on it, "key=value"
    label: str = ""


@dataclass(frozen=True, kw_only=True)
class SurgeRequested(Event):
    """A person asked the running campaign to drain these nodes through a surge (``jobs surge``, the screen's
    ``s``): a node draining now stops waiting for its PDB and is drained again with ``--surge`` (its evicted pods
    stay evicted); a node of a later wave drains with ``--surge`` from its start. Journaled by the agent before
    the campaign hears of it: a resumed campaign surges them still."""

    TYPE = "SurgeRequested"

    nodes: tuple[str, ...]
    #: who asked, for a person ("jobs surge", "tui")
    by: str = ""


@dataclass(frozen=True, kw_only=True)
class WindowClosed(Event):
    """No window is open: no node starts until ``next_opening`` (epoch seconds; None: none within a week)."""

    TYPE = "WindowClosed"

    next_opening: float | None
    #: nodes whose drains were in progress when it closed, and what they do: "finish" or "stop"
    in_progress: tuple[str, ...] = ()
    at_window_end: str = "finish"


@dataclass(frozen=True, kw_only=True)
class WindowOpened(Event):
    TYPE = "WindowOpened"

    #: when it closes (epoch seconds); None: no window configured
    closes_at: float | None = None


@dataclass(frozen=True, kw_only=True)
class WaitingForRate(Event):
    """``--rate``: the next wave waits until ``until`` (epoch seconds)."""

    TYPE = "WaitingForRate"

    index: int
    until: float


@dataclass(frozen=True, kw_only=True)
class CampaignFinished(Event):
    TYPE = "CampaignFinished"

    done: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    #: nodes never started (the campaign stopped: a hook, a cancel)
    not_started: tuple[str, ...] = ()
    seconds: float = 0.0
    #: why it stopped before its end; "" when it went through
    stopped: str = ""

    @property
    def succeeded(self) -> bool:
        """Every node done: a node skipped or kept is reported, and the campaign did not go through."""
        return not (self.failed or self.stopped or self.not_started or self.skipped or self.kept)
