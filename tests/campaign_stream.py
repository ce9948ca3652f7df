"""A campaign's events written by hand, for the screen's snapshots, the board's tests and the TUI benchmark:
nodes in three zones, wave by wave, the current wave held by a PDB (``solo``, minAvailable 1), a window open.

``campaign_events(nodes=6, pods_per_node=3)`` is the small one the snapshots draw; 300 nodes of 20 pods is the
issue's large campaign. Times are fixed (``START``), so a frozen clock gives the same picture every time.
"""

from __future__ import annotations

from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events.base import Envelope, Event, PodRef
from kubectl_rollout.jobs.events.eviction import BlockReason, EvictionBlocked, EvictionStarted, PodEvicted, PodGone
from kubectl_rollout.jobs.events.job import JobStarted

#: 2026-11-26 10:00:00 UTC
START = 1795687200.0
ZONES = ("zone-a", "zone-b", "zone-c")
NAMESPACE = "shop"
JOB = "c0ffee000001"
#: the window closes an hour after START
CLOSES_AT = START + 3600


def node_names(count: int) -> list[str]:
    return [f"pool-{i:03d}" for i in range(count)]


def _pods(node: str, count: int) -> list[PodRef]:
    return [PodRef(namespace=NAMESPACE, name=f"web-{node}-{j}", node=node) for j in range(count)]


def planned(*, nodes: int, pods_per_node: int, budget: int) -> ev.CampaignPlanned:
    """Waves of ``budget`` nodes, one zone at a time; the last node's wave is held by PDB shop/solo."""
    names = node_names(nodes)
    by_zone: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        by_zone.setdefault(ZONES[i % len(ZONES)], []).append(name)
    waves: list[ev.WavePlan] = []
    for zone, members in by_zone.items():
        for start in range(0, len(members), budget):
            chunk = members[start : start + budget]
            blockers: tuple[ev.WaveBlocker, ...] = ()
            if len(waves) == 1:
                blockers = (ev.WaveBlocker(pdb=f"{NAMESPACE}/solo", pods=1, allowed=0, rounds=1),)
            waves.append(
                ev.WavePlan(
                    index=len(waves) + 1,
                    nodes=tuple(ev.PlannedNode(name=n, zone=zone, pods=pods_per_node) for n in chunk),
                    zones=(zone,),
                    blockers=blockers,
                    pods=pods_per_node * len(chunk),
                )
            )
    return ev.CampaignPlanned(
        waves=tuple(waves),
        budget=budget,
        budget_text=f"{budget}",
        per_zone=True,
        rate="4/10m",
        soak=30.0,
        windows=("Mon-Fri 09:00-11:00 UTC",),
        window_closes_at=CLOSES_AT,
        on_blocked="wait",
    )


def campaign_events(*, nodes: int = 6, pods_per_node: int = 3, budget: int = 2) -> list[Event]:
    """The first wave done, the second draining: its first node's pods gone but one, held by PDB shop/solo."""
    plan = planned(nodes=nodes, pods_per_node=pods_per_node, budget=budget)
    events: list[Event] = [JobStarted(kind="campaign", target=f"-l pool=blue ({nodes} nodes)"), plan]
    events.append(ev.WindowOpened(closes_at=CLOSES_AT))
    first, second = plan.waves[0], plan.waves[1]
    for wave in (first, second):
        names = tuple(n.name for n in wave.nodes)
        events.append(ev.WaveStarted(index=wave.index, nodes=names, zones=wave.zones))
        events += [drain_events.NodeCordoned(node=n, changed=True) for n in names]
        for n in names:
            pods = _pods(n, pods_per_node)
            events.append(drain_events.NodeDrainStarted(node=n, pods=tuple(pods)))
            held = pods[-1] if wave is second and n == names[0] else None
            for pod in pods:
                events.append(EvictionStarted(pod=pod, attempt=1))
                if pod is held:
                    owner = drain_events.WorkloadRef(kind="Deployment", namespace=NAMESPACE, name="solo")
                    events.append(drain_events.PodOwnerKnown(pod=pod, owner=owner))
                    events.append(
                        EvictionBlocked(
                            pod=pod,
                            reason=BlockReason.PDB_BLOCKED,
                            message="Cannot evict pod as it would violate the pod's disruption budget.",
                            pdb=f"{NAMESPACE}/solo",
                            healthy=1,
                            needed=1,
                            expected=1,
                            since=START + 60,
                            attempts=3,
                            next_try_by=START + 75,
                        )
                    )
                    continue
                events += [PodEvicted(pod=pod), PodGone(pod=pod, after=1.5)]
            if wave is first:
                events.append(drain_events.NodeDrained(node=n, evicted=len(pods), seconds=4.0))
        if wave is first:
            events.append(ev.SoakStarted(index=1, seconds=30.0))
            events += [ev.NodeSoaked(node=n, index=1, seconds=31.0) for n in names]
            events += [ev.NodeDone(node=n, uncordoned=True) for n in names]
    return events


def envelopes(events: list[Event], *, job: str = JOB, start: float = START) -> list[Envelope]:
    """``events`` stamped a tenth of a second apart from ``start``, the last ending a second before START + 70."""
    first = start + 70 - 1 - 0.1 * len(events)
    return [Envelope(job=job, seq=i, at=first + 0.1 * i, event=e) for i, e in enumerate(events, start=1)]
