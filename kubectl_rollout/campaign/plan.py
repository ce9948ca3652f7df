"""A campaign's plan, before anything changes: the waves, their nodes, the PDBs that will hold each wave
and for how long at least, the pods per-pod rules keep, and a lower bound of the whole campaign's time.

The drain engine judges every pod (kubectl's filters and the rules), so the plan says what the run will do.
A PDB holds a wave when the wave's pods it selects are more than the disruptions it allows now: the wave is
cordoned at once, so those pods leave in rounds of what it allows, each round waiting for the replacements
of the previous one to be Ready. The lower bound of that wait is the rounds after the first times the
quickest readiness seen among the PDB's pods now (creation to Ready); the waves' bounds, the soak and the
rate's waits add up to the campaign's. Windows are not counted: they depend on when it starts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.campaign.budget import Budget
from kubectl_rollout.campaign.order import ZONE_LABEL, CandidateNode, ordered
from kubectl_rollout.campaign.pod_rules import ruled
from kubectl_rollout.campaign.rate import Rate
from kubectl_rollout.campaign.settings import CampaignSettings
from kubectl_rollout.campaign.waves import PlannedWave, plan_waves
from kubectl_rollout.drain.cordon import is_cordoned
from kubectl_rollout.drain.engine import DrainEngine
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.drain import DrainPlanned, Verdict
from kubectl_rollout.jobs.spec import CampaignJob
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.json_pages import json_pages
from kubectl_rollout.kube.pods import qualified, ready_since
from kubectl_rollout.kube.slim_pods import SlimPod, slim_pod

#: the verdicts of pods a drain removes
_LEAVING = (Verdict.EVICT, Verdict.DELETE, Verdict.BLOCKED)


@dataclass(frozen=True, kw_only=True)
class CampaignPlan:
    event: ev.CampaignPlanned
    #: the node objects of each wave, in order
    waves: tuple[tuple[Any, ...], ...]


def zone_of(node: Any) -> str:
    return str((node.metadata.labels or {}).get(ZONE_LABEL, ""))


def plan_campaign(
    *,
    cluster: Cluster,
    engine: DrainEngine,
    nodes: Sequence[Any],
    job: CampaignJob,
    settings: CampaignSettings,
    pending_taint: str,
) -> CampaignPlan:
    """The plan of ``nodes``; ``pending_taint`` is the taint the nodes still to come will carry ("" for none)."""
    todo = [n for n in nodes if n.metadata.name not in job.done]
    drain_plan = engine.plan(todo) if todo else DrainPlanned(nodes=())
    by_name = {n.metadata.name: n for n in todo}
    leaving = {plan.node: [p for p in plan.pods if p.verdict in _LEAVING] for plan in drain_plan.nodes}
    candidates = [
        CandidateNode(name=n.metadata.name, zone=zone_of(n), load=len(leaving.get(n.metadata.name, ()))) for n in todo
    ]
    # Nodes already cordoned (a wave an interrupted run left out) go first: they are out already, so
    # starting with others would put more nodes out than the budget.
    chosen = sorted(ordered(candidates, job.order), key=lambda c: not is_cordoned(by_name[c.name]))
    size = settings.budget.allowed(len(nodes))
    waves = plan_waves(
        chosen,
        budget=Budget(count=size),
        per_zone=job.per_zone,
        zone_budget=settings.zone_budget,
        rate_nodes=settings.rate.nodes if settings.rate else None,
    )
    ruled_pods: list[ev.RuledPod] = []
    readiness: dict[str, float] = {}
    for name in by_name:
        # Node by node: a pool of thousands of pods is never held in memory at once.
        pods = _pods_on(cluster, name)
        ruled_pods += [r for r in (ruled(p) for p in pods) if r is not None]
        _quickest_readiness(engine, pods, readiness)
    wave_plans = tuple(_wave_plan(w, by_name, leaving, engine, readiness) for w in waves)
    estimate = _estimate(wave_plans, soak=job.soak, rate=settings.rate)
    now = time.time()
    schedule = settings.schedule
    closes_at = schedule.closes_at(now) if schedule is not None else None
    opening = schedule.next_opening(now) if schedule is not None and closes_at is None else None
    event = ev.CampaignPlanned(
        waves=wave_plans,
        budget=size,
        budget_text=str(settings.budget),
        per_zone=job.per_zone,
        rate=job.rate,
        soak=job.soak,
        windows=job.windows,
        ruled_pods=tuple(ruled_pods),
        done=tuple(n for n in job.done if any(m.metadata.name == n for m in nodes)),
        estimated_seconds=round(estimate, 1),
        plan_only=job.plan_only,
        window_closes_at=closes_at,
        next_opening=opening,
        zone_budget=job.zone_budget,
        zone_caps=_zone_caps(candidates, settings.zone_budget),
        on_blocked=job.on_blocked.value,
        pending_taint=pending_taint,
    )
    return CampaignPlan(event=event, waves=tuple(tuple(by_name[n.name] for n in w.nodes) for w in waves))


def _zone_caps(nodes: Sequence[CandidateNode], budget: Budget | None) -> tuple[ev.ZoneCap, ...]:
    """What ``--zone-budget`` allows out at once in each zone of ``nodes`` (a percentage is of the zone's)."""
    if budget is None:
        return ()
    totals: dict[str, int] = {}
    for node in nodes:
        totals[node.zone] = totals.get(node.zone, 0) + 1
    return tuple(ev.ZoneCap(zone=z, nodes=n, cap=budget.allowed(n)) for z, n in sorted(totals.items()))


def _pods_on(cluster: Cluster, node: str) -> list[SlimPod]:
    """The node's pods, read as JSON and kept slim: what the rules and the readiness read (``slim_pods``)."""
    pages = json_pages(cluster.core.list_pod_for_all_namespaces, limit=None, field_selector=f"spec.nodeName={node}")
    return [slim_pod(item) for page in pages for item in page.get("items") or []]


def _quickest_readiness(engine: DrainEngine, pods: Iterable[Any], quickest: dict[str, float]) -> None:
    """Per PDB ("namespace/name"), the shortest time from creation to Ready among its pods seen, into
    ``quickest``."""
    watch = engine.evictor.pdbs()
    for pod in pods:
        since = ready_since(pod)
        created = pod.metadata.creation_timestamp
        if since is None or created is None:
            continue
        seconds = max(0.0, (since - created).total_seconds())
        for pdb in watch.selecting(pod):
            name = qualified(pdb)
            quickest[name] = min(quickest.get(name, seconds), seconds)


def _wave_plan(
    wave: PlannedWave,
    by_name: dict[str, Any],
    leaving: dict[str, list[Any]],
    engine: DrainEngine,
    readiness: dict[str, float],
) -> ev.WavePlan:
    per_pdb: dict[str, int] = {}
    total = 0
    for node in wave.nodes:
        for pod in leaving.get(node.name, ()):
            total += 1
            if pod.pdbs:
                per_pdb[pod.pdbs[0]] = per_pdb.get(pod.pdbs[0], 0) + 1
    blockers = []
    watch = engine.evictor.pdbs()
    for name, count in sorted(per_pdb.items()):
        namespace, _, short = name.partition("/")
        pdb = watch.get(namespace, short)
        allowed = (pdb.status.disruptions_allowed or 0) if pdb is not None and pdb.status else 0
        if count <= allowed:
            continue
        rounds = math.ceil(count / max(allowed, 1))
        blockers.append(
            ev.WaveBlocker(
                pdb=name,
                pods=count,
                allowed=allowed,
                rounds=rounds,
                at_least_seconds=round((rounds - 1) * readiness.get(name, 0.0), 1),
            )
        )
    nodes = tuple(
        ev.PlannedNode(name=n.name, zone=n.zone, pods=n.load, cordoned=is_cordoned(by_name[n.name])) for n in wave.nodes
    )
    return ev.WavePlan(index=wave.index, nodes=nodes, zones=wave.zones, blockers=tuple(blockers), pods=total)


def _estimate(waves: Sequence[ev.WavePlan], *, soak: float, rate: Rate | None) -> float:
    """Waves one after another: each its slowest blocker, then the soak; the rate may hold a wave's start."""
    now = 0.0
    starts: list[float] = []
    for wave in waves:
        if rate is not None:
            now = rate.earliest_start(starts=starts, count=len(wave.nodes), now=now)
        starts += [now] * len(wave.nodes)
        now += max((b.at_least_seconds for b in wave.blockers), default=0.0) + soak
    return now
