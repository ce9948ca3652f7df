"""A campaign's lower bound and where its time goes: the pure arithmetic of hack/bench_campaign.py.

Waves run one after another. In a wave, a PDB that allows A disruptions at a
time and has N of its pods evicted there needs ceil(N / A) rounds of
evictions, and every round after the first waits for the PDB to allow a
disruption again. That wait is the cluster's: the eviction marks the pod, the
ReplicaSet controller creates a replacement, the scheduler binds it, the
kubelet (kwok) runs it until Ready, the disruption controller counts it and
writes the PDB's status. The Eviction API refuses every eviction of that
PDB's pods until that status write, whatever the client. So the cluster's
**round** is measured, for each PDB that allows one disruption at a time, from
an accepted eviction's completion to the first later status write that allows
one again (when the API server received that write: the earliest it can
count); the quickest round of the run, R, bounds every round.

- **bound**: the earliest schedule of the run's evictions that any client could
  keep, every round taking R. A PDB's evictions wait for a free disruption
  (one of A), and a disruption is freed R after its eviction, across waves as
  within one; a wave's evictions begin once the wave before has ended; a wave
  ends when its last replacement can be Ready (R after its last eviction: a
  wave is over when its workloads are available again, as the soak requires).
  Within a wave that is at least its slowest PDB's ceil(N / A) x R (its
  readiness chain); a PDB whose last pods went late in one wave starts the
  next one late. No client of the Eviction API can drain the same pods, in
  the same waves, sooner on that cluster.
- **cluster's time** per wave: the longest sum, over one PDB's rounds begun in
  that wave, of the time it was closed (the run's own rounds, not the quickest):
  what this run's cluster imposed, so the wave's time minus it is what the
  campaign added (the waves' starts, reactions, checks, the soak's wait for
  the last replacement).

Times are epoch seconds from one clock (the bench, the campaign and the local
API server run on one machine). Nothing here reads the cluster.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def epoch(stamp: str) -> float:
    """An RFC 3339 timestamp (the events' ``at``, the audit log's) as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def allowed_at_once(spec: Mapping[str, Any], replicas: int) -> int:
    """Disruptions a PDB of ``spec`` allows at once over ``replicas`` healthy pods (the disruption controller
    rounds a percentage up: maxUnavailable's and minAvailable's alike)."""
    if "maxUnavailable" in spec:
        value = spec["maxUnavailable"]
        return math.ceil(replicas * int(value[:-1]) / 100) if isinstance(value, str) else int(value)
    value = spec["minAvailable"]
    least = math.ceil(replicas * int(value[:-1]) / 100) if isinstance(value, str) else int(value)
    return replicas - least


def app_of(pod: str) -> str:
    """The Deployment of a pod named DEPLOYMENT-HASH-SUFFIX."""
    return pod.rsplit("-", 2)[0]


@dataclass(frozen=True, kw_only=True)
class Wave:
    start: float
    end: float
    #: evictions in the wave, by Deployment (the campaign's own PodEvicted events)
    evicted: Counter[str] = field(default_factory=Counter)

    @property
    def seconds(self) -> float:
        return self.end - self.start


def waves_of(events: Iterable[Mapping[str, Any]]) -> list[Wave]:
    """The waves of a campaign's ``-o jsonl`` events: each from its WaveStarted to the next one (the last: to
    CampaignFinished), with the pods evicted meanwhile."""
    starts: list[float] = []
    evicted: list[Counter[str]] = []
    for event in events:
        if event["type"] in ("WaveStarted", "CampaignFinished"):
            starts.append(epoch(event["at"]))
        if event["type"] == "WaveStarted":
            evicted.append(Counter())
        elif event["type"] == "PodEvicted" and evicted:
            evicted[-1][app_of(event["pod"]["name"])] += 1
    return [
        Wave(start=start, end=end, evicted=counts)
        for (start, end), counts in zip(itertools.pairwise(starts), evicted, strict=False)
    ]


@dataclass(frozen=True, kw_only=True)
class Round:
    """A PDB closed by an eviction, until the disruption controller allowed a disruption again."""

    app: str
    #: the eviction's completion
    closed: float
    #: the API server received the status write that allowed one again
    opened: float

    @property
    def seconds(self) -> float:
        return self.opened - self.closed


def cluster_rounds(entries: Iterable[Mapping[str, Any]], one_at_a_time: set[str]) -> list[Round]:
    """The rounds of the PDBs named in ``one_at_a_time`` (each allows one disruption at a time and is named
    after its Deployment), from the audit log's completed entries of one namespace: evictions (any client's;
    only the one measured works in that namespace) and the PDBs' status writes with their bodies."""
    closed_at: dict[str, float] = {}
    rounds: list[Round] = []
    ordered = sorted(entries, key=lambda e: epoch(e["stageTimestamp"]))
    for entry in ordered:
        ref = entry.get("objectRef") or {}
        if ref.get("subresource") == "eviction" and (entry.get("responseStatus") or {}).get("code") == 201:
            app = app_of(ref.get("name", ""))
            if app in one_at_a_time:
                closed_at.setdefault(app, epoch(entry["stageTimestamp"]))
        elif ref.get("resource") == "poddisruptionbudgets" and ref.get("subresource") == "status":
            answer = entry.get("responseObject") or {}
            if answer.get("kind") != "PodDisruptionBudget":
                continue  # a refused write (a conflict's Status): nothing changed
            app = ref.get("name", "")
            allows = int((answer.get("status") or {}).get("disruptionsAllowed", 0)) > 0
            if allows and app in closed_at:
                # A write that succeeded after the eviction was made on the object the eviction left (the
                # resourceVersion says so); it cannot have been received before that eviction completed.
                closed = closed_at.pop(app)
                rounds.append(
                    Round(app=app, closed=closed, opened=max(closed, epoch(entry["requestReceivedTimestamp"])))
                )
    return rounds


def quickest(rounds: Iterable[Round]) -> float:
    return min((r.seconds for r in rounds), default=math.nan)


def earliest_ends(
    waves: Iterable[Wave], specs: Mapping[str, Mapping[str, Any]], replicas: int, round_seconds: float
) -> list[float]:
    """When each wave can end at the earliest, in seconds from the campaign's first eviction, if every round
    took ``round_seconds`` (the module's docstring: the bound). Each eviction goes at the first moment its PDB
    has a free disruption and its wave has begun; that schedule is the earliest for every eviction at once."""
    #: per PDB, when each of its disruptions is free again (a heap of A times)
    free_at: dict[str, list[float]] = {}
    ends: list[float] = []
    begins = 0.0
    for wave in waves:
        last = begins
        for app, count in wave.evicted.items():
            free = free_at.setdefault(app, [0.0] * max(1, allowed_at_once(specs[app], replicas)))
            for _ in range(count):
                at = max(begins, heapq.heappop(free))
                heapq.heappush(free, at + round_seconds)
                last = max(last, at)
        begins = last + round_seconds if wave.evicted else last
        ends.append(begins)
    return ends


def cluster_time(wave: Wave, rounds: Iterable[Round]) -> float:
    """The longest time one PDB (of those measured) was closed by rounds begun in the wave."""
    closed: dict[str, float] = {}
    for r in rounds:
        if wave.start <= r.closed < wave.end:
            closed[r.app] = closed.get(r.app, 0.0) + r.seconds
    return max(closed.values(), default=0.0)


def reactions(rounds: Iterable[Round], waves: Iterable[Wave]) -> list[float]:
    """The campaign's reaction to each allowance it used within a wave: from the status write that allowed a
    PDB's next eviction (received) to that eviction's completion, for the PDBs measured. An allowance whose
    next eviction came in a later wave (the soak and the next wave's start lie between) is no reaction."""
    spans = [(w.start, w.end) for w in waves]

    def wave_of(t: float) -> int | None:
        return next((i for i, (start, end) in enumerate(spans) if start <= t < end), None)

    by_app: dict[str, list[Round]] = {}
    for r in rounds:
        by_app.setdefault(r.app, []).append(r)
    found = []
    for chain in by_app.values():
        chain.sort(key=lambda r: r.closed)
        for before, after in itertools.pairwise(chain):
            if wave_of(before.opened) is not None and wave_of(before.opened) == wave_of(after.closed):
                found.append(max(0.0, after.closed - before.opened))
    return found
