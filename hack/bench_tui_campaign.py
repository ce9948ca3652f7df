#!/usr/bin/env python3
"""Benchmark: the campaign's screen in an 80x24 pseudo-terminal while a 300-node / 6000-pod campaign streams.

The campaign is synthetic (no cluster): NODES nodes in three zones, PODS pods spread over them, waves of
BUDGET nodes one zone at a time, each node cordoned, its pods evicted and gone (one pod per wave held a while
by a PDB first), drained, soaked, done. Its events are fed to the TUI as an agent streams them, at RATE events
a second, each stamped when it is handed over; the TUI runs in a real pseudo-terminal (its terminal driver,
its repaints), on the campaign's screen, and quits a second after the last event. Printed: p50 / p95 from an
event reaching the TUI (and from its stamp) to the frame that shows it written to the terminal (issue 22's
target: p95 <= 250 ms), the TUI's CPU in % of one core, and bytes per second to the terminal.

    .venv/bin/python hack/bench_tui_campaign.py [--nodes 300] [--pods 6000] [--budget 30] [--rate 500]

Run it on a quiet machine: the figures are the TUI's share of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack"))

from bench_agent import percentile, wait_for  # noqa: E402
from bench_tui import COLUMNS, ROWS, Terminal  # noqa: E402

from kubectl_rollout.agent.client import Lagged  # noqa: E402
from kubectl_rollout.agent.protocol import JobInfo  # noqa: E402
from kubectl_rollout.jobs.events import campaign as ev  # noqa: E402
from kubectl_rollout.jobs.events import drain as drain_events  # noqa: E402
from kubectl_rollout.jobs.events import eviction as eviction_events  # noqa: E402
from kubectl_rollout.jobs.events.base import Envelope, Event, PodRef  # noqa: E402
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted, JobState  # noqa: E402
from kubectl_rollout.tui.app import Latency, RolloutPlusApp  # noqa: E402
from kubectl_rollout.tui.recorded_jobs import RecordedJobs  # noqa: E402

ZONES = ("zone-a", "zone-b", "zone-c")
JOB = "benchcampaign"
#: the PDB that holds one pod of each wave for a few of the wave's events
PDB = "bench/solo"


def _pods(node: str, count: int) -> list[PodRef]:
    return [PodRef(namespace="bench", name=f"app-{node}-{i:03d}", node=node) for i in range(count)]


def _node_events(node: str, pods: list[PodRef], *, held: bool) -> list[Event]:
    """One node's drain: its pods evicted and gone, the first held by the PDB a while when ``held``."""
    events: list[Event] = [drain_events.NodeDrainStarted(node=node, pods=tuple(pods))]
    for index, pod in enumerate(pods):
        events.append(eviction_events.EvictionStarted(pod=pod, attempt=1))
        if held and index == 0:
            owner = drain_events.WorkloadRef(kind="Deployment", namespace="bench", name="solo")
            events.append(drain_events.PodOwnerKnown(pod=pod, owner=owner))
            events.append(
                eviction_events.EvictionBlocked(
                    pod=pod,
                    reason=eviction_events.BlockReason.PDB_BLOCKED,
                    message="Cannot evict pod as it would violate the pod's disruption budget.",
                    pdb=PDB,
                    healthy=1,
                    needed=1,
                    expected=2,
                    attempts=1,
                )
            )
            continue
        events += [eviction_events.PodEvicted(pod=pod), eviction_events.PodGone(pod=pod, after=1.0)]
    if held:
        events += [
            eviction_events.EvictionStarted(pod=pods[0], attempt=2),
            eviction_events.PodEvicted(pod=pods[0]),
            eviction_events.PodGone(pod=pods[0], after=5.0),
        ]
    events.append(drain_events.NodeDrained(node=node, evicted=len(pods), seconds=5.0))
    return events


def synthetic_campaign(*, nodes: int, pods: int, budget: int) -> list[Event]:
    """A whole campaign of ``nodes`` nodes and ``pods`` pods, in waves of ``budget`` nodes of one zone."""
    names = [f"pool-{i:04d}" for i in range(nodes)]
    zone_of = {name: ZONES[i % len(ZONES)] for i, name in enumerate(names)}
    per_node = pods // nodes
    waves: list[ev.WavePlan] = []
    for zone in ZONES:
        members = [n for n in names if zone_of[n] == zone]
        for start in range(0, len(members), budget):
            chunk = members[start : start + budget]
            planned = tuple(ev.PlannedNode(name=n, zone=zone, pods=per_node) for n in chunk)
            waves.append(ev.WavePlan(index=len(waves) + 1, nodes=planned, zones=(zone,), pods=per_node * len(chunk)))
    events: list[Event] = [
        JobStarted(kind="campaign", target=f"-l pool=bench ({nodes} nodes)"),
        ev.CampaignPlanned(waves=tuple(waves), budget=budget, budget_text=str(budget), per_zone=True, soak=1.0),
        ev.WindowOpened(closes_at=None),
    ]
    for wave in waves:
        members = [n.name for n in wave.nodes]
        events.append(ev.WaveStarted(index=wave.index, nodes=tuple(members), zones=wave.zones))
        events += [drain_events.NodeCordoned(node=n, changed=True) for n in members]
        for position, name in enumerate(members):
            events += _node_events(name, _pods(name, per_node), held=position == 0)
        events.append(ev.SoakStarted(index=wave.index, seconds=1.0))
        events += [ev.NodeSoaked(node=n, index=wave.index, seconds=1.0) for n in members]
        events += [ev.NodeDone(node=n, uncordoned=True) for n in members]
    events.append(ev.CampaignFinished(done=tuple(names), seconds=60.0))
    events.append(JobFinished(state=JobState.SUCCEEDED, exit_code=0))
    return events


class PacedCampaign(RecordedJobs):
    """The synthetic campaign as a running agent job: its events come ``rate`` a second, each stamped as it is
    handed over (its emission), and ``ended`` is called a second after the last."""

    def __init__(self, events: list[Event], *, rate: float, ended: Callable[[], None]) -> None:
        super().__init__([Envelope(job=JOB, seq=i, at=0.0, event=e) for i, e in enumerate(events, start=1)])
        self._rate = rate
        self._ended = ended

    async def jobs(self) -> list[JobInfo]:
        # Running, nothing journaled yet: the TUI follows it live (no backlog to hold).
        return [dataclasses.replace(i, state="running", last_seq=0, finished_at=None) for i in await super().jobs()]

    async def follow(
        self, job_id: str, *, from_seq: int = 1, coalesce: bool = False
    ) -> AsyncIterator[Envelope | Lagged]:
        started = time.monotonic()
        sent = 0
        async for envelope in super().follow(job_id, from_seq=from_seq, coalesce=coalesce):
            assert isinstance(envelope, Envelope)
            due = started + sent / self._rate
            if due > time.monotonic():
                await asyncio.sleep(due - time.monotonic())
            sent += 1
            yield dataclasses.replace(envelope, at=time.time())
        asyncio.get_running_loop().call_later(1.0, self._ended)


def run_terminal_tui(args: argparse.Namespace) -> None:
    """In the pseudo-terminal: the TUI on the paced campaign; at its end, its latencies to a file."""
    events = synthetic_campaign(nodes=args.nodes, pods=args.pods, budget=args.budget)
    app: RolloutPlusApp

    async def connect() -> PacedCampaign:
        return PacedCampaign(events, rate=args.rate, ended=app.exit)

    app = RolloutPlusApp(connect, open_job=JOB)
    app.run()
    args.latencies.write_text(json.dumps([list(latency) for latency in app.latencies]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--pods", type=int, default=6000)
    parser.add_argument("--budget", type=int, default=30, help="nodes per wave (default 30: 10%% of 300)")
    parser.add_argument("--rate", type=float, default=500.0, help="events a second (default 500)")
    parser.add_argument("--terminal-tui", action="store_true", help=argparse.SUPPRESS)  # the TUI in the pty
    parser.add_argument("--latencies", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.terminal_tui:
        run_terminal_tui(args)
        return 0

    events = len(synthetic_campaign(nodes=args.nodes, pods=args.pods, budget=args.budget))
    directory = Path(tempfile.mkdtemp(prefix="rpa-bench-campaign-", dir="/tmp"))
    latencies_file = directory / "latencies.json"
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
    command = [sys.executable, __file__, "--terminal-tui", "--latencies", str(latencies_file)]
    command += ["--nodes", str(args.nodes), "--pods", str(args.pods), "--budget", str(args.budget)]
    command += ["--rate", str(args.rate)]
    started = time.time()
    terminal = Terminal(command, env)
    try:
        wait_for(
            "the campaign streamed to its end", lambda: terminal.process.poll() is not None, events / args.rate * 4 + 60
        )
        ended = time.time()
        latencies = [Latency(*row) for row in json.loads(latencies_file.read_text())]
    finally:
        terminal.close()
        shutil.rmtree(directory, ignore_errors=True)
    if not latencies:
        raise SystemExit("the TUI in the terminal painted no event")
    start = min(latency.painted for latency in latencies) + 0.5
    streaming = [latency for latency in latencies if latency.painted > start]
    reader = [latency.from_reader for latency in streaming]
    emission = [latency.from_emission for latency in streaming]
    cpu = terminal.cpu_share(start, ended)
    written = terminal.bytes_between(start, ended)
    print(
        f"== the campaign screen in an 80x24 terminal: {args.nodes} nodes, {args.pods} pods, waves of {args.budget}, "
        f"{events} events at {args.rate:.0f}/s =="
    )
    for name, values in (("reader", reader), ("emission", emission)):
        print(
            f"latency {name + ' -> frame written':26}  p50 {1000 * statistics.median(values):6.1f} ms   "
            f"p95 {1000 * percentile(values, 0.95):6.1f} ms   "
            f"({'target p95 <= 250 ms; ' if name == 'reader' else ''}{len(values)} events)"
        )
    print(f"TUI CPU while streaming               {100 * cpu:6.1f} % of a core")
    print(f"bytes to the 80x24 terminal           {written / (ended - start) / 1024:6.2f} KiB/s")
    print(
        f"wall time                             {ended - started:6.1f} s   (load average now {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
