#!/usr/bin/env python3
"""Benchmark: the TUI while a drain of 1000 pods (then 5000) streams, and its first paint of large jobs.

Scenario (bench_agent.py's): N pods (default 1000, then 5000) of 10 Deployments under PDBs
(maxUnavailable 20%), Ready 1 s after start, on kwok nodes (3 for 1000 pods, one per 750 pods
beyond; as many more take the replacements). The drain is submitted to an agent (`drain
--detach`), and the TUI opened on it runs in an 80x24 pseudo-terminal (as `drain --tui` opens
it: the agent's events, its real terminal driver). Printed, for each N, from the TUI's first
paint of the job to the job's end:

- p50 / p95 latency from an event reaching the TUI (its socket reader handing it over) to the
  frame that shows it written to the terminal (target p95 <= 250 ms); and the same from the
  event's emission by the job in the agent (its envelope's time), which adds the agent, the
  socket and lines waiting while the TUI's loop was busy. The TUI process measures both itself
  and hands them over when it quits;
- CPU of that TUI process, in % of one core (target <= 25%);
- bytes per second the pseudo-terminal receives from it (target <= 15 KiB/s);
- first paint of the finished job through the agent (its journal), and of a 5000-pod drain
  (a recording of that size, and the same through a real agent's journal; target <= 1.5 s).

    .venv/bin/python hack/bench_tui.py [--pods N ...] [--kubeconfig PATH] [--first-paint-only]

Without --kubeconfig it starts its own cluster in .cluster/bench-tui and stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import math
import os
import pty
import shutil
import signal
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack"))

from bench_agent import clean, node, percentile, prepare, wait_for  # noqa: E402
from bench_support import bench_cluster  # noqa: E402

from kubectl_rollout.agent.client import connect as connect_agent  # noqa: E402
from kubectl_rollout.agent.errors import AgentError  # noqa: E402
from kubectl_rollout.agent.host.journal import Journal  # noqa: E402
from kubectl_rollout.agent.paths import ENV_DIR, agent_paths  # noqa: E402
from kubectl_rollout.jobs.events import drain as drain_events  # noqa: E402
from kubectl_rollout.jobs.events import eviction as eviction_events  # noqa: E402
from kubectl_rollout.jobs.events.base import Envelope, PodRef  # noqa: E402
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted, JobState  # noqa: E402
from kubectl_rollout.jobs.spec import Connection, DrainJob, DrainOptions, JobKind, JobResult, JobSpec  # noqa: E402
from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect  # noqa: E402
from kubectl_rollout.tui.app import Latency, RolloutPlusApp, agent_connect  # noqa: E402
from kubectl_rollout.tui.recorded_jobs import RecordedJobs  # noqa: E402
from kubectl_rollout.tui.screens.evictions import EvictionsScreen  # noqa: E402
from kubectl_rollout.tui.widgets.live_table import LiveTable  # noqa: E402

BENCH_DIR = ROOT / ".cluster" / "bench-tui"
PLUGIN = Path(sys.executable).parent / "kubectl-rollout_plus"
COLUMNS, ROWS = 80, 24
#: pods per drained node beyond 1000 pods
PODS_PER_NODE = 750
#: how often the TUI's CPU time is read (seconds)
CPU_SAMPLE = 0.25


class Terminal:
    """A process in an 80x24 pseudo-terminal: every byte it writes is counted with the time it came, and its
    CPU time is sampled as it runs (epoch seconds on both)."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.process = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True
        )
        os.close(slave)
        self.master = master
        self.chunks: list[tuple[float, int]] = []
        self.cpu: list[tuple[float, float]] = []
        self._stop = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._sample_cpu, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.chunks.append((time.time(), len(data)))

    def _sample_cpu(self) -> None:
        while not self._stop.wait(CPU_SAMPLE):
            try:
                fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                return
            self.cpu.append((time.time(), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")))

    def bytes_between(self, start: float, end: float) -> int:
        return sum(size for at, size in self.chunks if start <= at <= end)

    def cpu_share(self, start: float, end: float) -> float:
        """Its CPU time over wall time between ``start`` and ``end`` (from the samples inside), 1.0 = one core."""
        inside = [(at, cpu) for at, cpu in self.cpu if start <= at <= end]
        if len(inside) < 2:
            return float("nan")
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.master, b"q")
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._stop.set()
        os.close(self.master)


def run_terminal_tui(job_id: str, latencies: Path) -> None:
    """In the pseudo-terminal: the TUI on the job, as `drain --tui` opens it; at quit, its latencies to a file."""
    app = RolloutPlusApp(agent_connect(), open_job=job_id)
    app.run()
    latencies.write_text(json.dumps([list(latency) for latency in app.latencies]))


async def first_paint(app: RolloutPlusApp, pods: int) -> float:
    """Seconds from starting ``app`` to its drain screen showing ``pods`` rows, painted."""
    started = time.monotonic()
    async with app.run_test(size=(COLUMNS, ROWS)) as pilot:
        while True:
            screen = app.screen
            if isinstance(screen, EvictionsScreen) and len(screen.query_one("#pods", LiveTable).row_keys) >= pods:
                break
            await pilot.pause(0.01)
        painted = asyncio.Event()
        app.call_after_refresh(painted.set)
        await painted.wait()
        return time.monotonic() - started


def recorded_drain(pods: int, *, nodes: int = 5) -> list[Envelope]:
    """A drain of ``pods`` pods over ``nodes`` nodes as the engine reports one, through JSON (as from the wire)."""
    events: list[Any] = [JobStarted(kind="drain", target="node/bench")]
    names = [f"bench-n{i}" for i in range(nodes)]
    events += [drain_events.NodeCordoned(node=n, changed=True) for n in names]
    for index, name in enumerate(names):
        refs = [PodRef(namespace="bench", name=f"app-{index}-{i:05d}", node=name) for i in range(pods // nodes)]
        events.append(drain_events.NodeDrainStarted(node=name, pods=tuple(refs)))
        for ref in refs:
            events += [
                eviction_events.EvictionStarted(pod=ref, attempt=1),
                eviction_events.PodEvicted(pod=ref),
                eviction_events.PodGone(pod=ref, after=1.5),
            ]
        events.append(drain_events.NodeDrained(node=name, evicted=len(refs), seconds=30.0))
    events.append(JobFinished(state=JobState.SUCCEEDED, exit_code=0))
    lines = [
        json.dumps(Envelope(job="bench5000", seq=i, at=1795431129.0 + i / 100, event=e).as_dict())
        for i, e in enumerate(events, 1)
    ]
    return [Envelope.from_dict(json.loads(line)) for line in lines]


def journal_job(envelopes: list[Envelope]) -> None:
    """Put a finished drain with these events into the journal of the agent of $ROLLOUT_PLUS_AGENT_DIR (not
    running), as if that agent had run it: the TUI then gets it the way it gets any finished job."""
    paths = agent_paths().ensure()
    journal = Journal(paths.journal)
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=("/dev/null",)),
        drain=DrainJob(nodes=("bench",), options=DrainOptions()),
    )
    job = envelopes[0].job
    journal.create_job(job, spec)
    journal.mark_running(job)
    journal.close()
    # One transaction for all the events (Journal.append commits each, as a running job must).
    with sqlite3.connect(paths.journal) as db:
        db.executemany(
            "INSERT INTO events (job, seq, type, body, coalesce_key) VALUES (?, ?, ?, ?, ?)",
            [(e.job, e.seq, e.type, json.dumps(e.as_dict()), e.event.coalesce_key()) for e in envelopes],
        )
    journal = Journal(paths.journal)
    journal.finish(job, JobResult(state=JobState.SUCCEEDED, exit_code=0))
    journal.close()


async def first_paint_of_recording(envelopes: list[Envelope], pods: int) -> float:
    async def source() -> RecordedJobs:
        return RecordedJobs(envelopes)

    return await first_paint(RolloutPlusApp(source, open_job=envelopes[0].job), pods)


def first_paint_through_an_agent(envelopes: list[Envelope], pods: int) -> float:
    """The TUI's first paint of a finished job of ``pods`` pods, served by a real agent from its journal."""
    directory = Path(tempfile.mkdtemp(prefix="rpa-bench-", dir="/tmp"))
    before = os.environ.get(ENV_DIR)
    os.environ[ENV_DIR] = str(directory)
    try:
        journal_job(envelopes)
        connect_agent(name="bench").close()  # started (and its journal opened) before the clock starts
        return asyncio.run(first_paint(RolloutPlusApp(agent_connect(), open_job=envelopes[0].job), pods))
    finally:
        with contextlib.suppress(AgentError), connect_agent(name="bench", start=False) as agent:
            agent.shutdown(force=True)
        if before is None:
            del os.environ[ENV_DIR]
        else:
            os.environ[ENV_DIR] = before
        shutil.rmtree(directory, ignore_errors=True)


@dataclass
class Streamed:
    """What one drain under the TUI in the terminal gave."""

    pods: int
    nodes: int
    state: str
    events: int
    seconds: float
    from_reader: list[float]
    from_emission: list[float]
    cpu: float
    bytes_per_second: float
    first_paint: float


def nodes_for(pods: int) -> int:
    """Drained nodes for ``pods`` pods: 3 up to 1000 pods (the issue's "several nodes"), then one per 750 pods
    (a kwok node here takes 1000 pods at most, and as many spare nodes take the replacements)."""
    return max(3, math.ceil(pods / PODS_PER_NODE))


def stream_drain(cluster: Cluster, kubeconfig: Path, pods: int, env: dict[str, str]) -> Streamed:
    """Drain ``pods`` pods with the TUI on the job in an 80x24 terminal; its figures from its first paint of the
    job to the job's end."""
    stem = f"bench-tui-{os.getpid()}-{pods}"
    count = nodes_for(pods)
    names = [f"{stem}-n{i}" for i in range(2 * count)]
    targets, spares = names[:count], names[count:]
    namespace = f"{stem}-0"
    terminal: Terminal | None = None
    latencies_file = Path(tempfile.mkdtemp(prefix="rpa-bench-lat-", dir="/tmp")) / "latencies.json"
    try:
        for name in names:
            cluster.core.create_node(node(name))
        wait_for(
            "the bench nodes Ready",
            lambda: (
                sum(
                    1
                    for n in cluster.core.list_node().items
                    if n.metadata.name in names
                    and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
                )
                == len(names)
            ),
        )
        prepare(cluster, namespace, targets, spares, pods)
        submit = [str(PLUGIN), "--kubeconfig", str(kubeconfig), "-n", namespace, "drain", *targets, "--detach"]
        job_id = subprocess.run(submit, env=env, check=True, capture_output=True, text=True).stdout.strip()
        terminal = Terminal(
            [sys.executable, __file__, "--terminal-tui", job_id, "--latencies", str(latencies_file)], env
        )

        def finished() -> bool:
            with connect_agent(name="bench", start=False) as agent:
                return agent.show(job_id).state not in ("pending", "running")

        wait_for(f"the drain of {pods} pods", finished, 3600)
        with connect_agent(name="bench", start=False) as agent:
            info = agent.show(job_id)
        time.sleep(1.0)  # its last events painted
        terminal.close()
        latencies = [Latency(*row) for row in json.loads(latencies_file.read_text())]
        if not latencies:
            raise SystemExit("the TUI in the terminal painted no event")
        # From the first paint (the backlog it attached to, and its start, are not streaming) to the job's end.
        start = min(latency.painted for latency in latencies) + 0.5
        end = (info.finished_at or time.time()) + 0.5
        streaming = [latency for latency in latencies if latency.painted > start]
        cpu = terminal.cpu_share(start, end)
        written = terminal.bytes_between(start, end)
        terminal = None
        paint = asyncio.run(first_paint(RolloutPlusApp(agent_connect(), open_job=job_id), pods))
        return Streamed(
            pods=pods,
            nodes=count,
            state=f"{info.state}: {info.error}" if info.error else info.state,
            events=info.last_seq,
            seconds=end - start,
            from_reader=[latency.from_reader for latency in streaming],
            from_emission=[latency.from_emission for latency in streaming],
            cpu=cpu,
            bytes_per_second=written / (end - start),
            first_paint=paint,
        )
    finally:
        if terminal is not None:
            terminal.close()
        shutil.rmtree(latencies_file.parent, ignore_errors=True)
        with contextlib.suppress(Exception):  # never created, or gone already
            clean(cluster, namespace, targets)
        for name in names:
            with contextlib.suppress(Exception):  # gone already
                cluster.core.delete_node(name)


def print_streamed(run: Streamed) -> None:
    print(f"\n== the TUI in an 80x24 terminal: drain of {run.pods} pods on {run.nodes} nodes, 10 Deployments, PDBs ==")
    print(f"drain                                 {run.state}, {run.events} events; streaming {run.seconds:.1f} s")
    for name, values in (("reader", run.from_reader), ("emission", run.from_emission)):
        print(
            f"latency {name + ' -> frame written':26}  p50 {1000 * statistics.median(values):6.1f} ms   "
            f"p95 {1000 * percentile(values, 0.95):6.1f} ms   "
            f"({'target p95 <= 250 ms; ' if name == 'reader' else ''}{len(values)} events)"
        )
    print(f"TUI CPU while streaming               {100 * run.cpu:6.1f} % of a core   (target <= 25%)")
    print(f"bytes to the 80x24 terminal           {run.bytes_per_second / 1024:6.2f} KiB/s   (target <= 15 KiB/s)")
    print(f"first paint, the {run.pods}-pod job (agent)  {run.first_paint:6.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--pods", type=int, nargs="+", default=[1000, 5000], help="pods of each drain, one run each (default 1000 5000)"
    )
    parser.add_argument("--kubeconfig", type=Path, help="use this running cluster instead of starting one")
    parser.add_argument("--first-paint-only", action="store_true", help="only the first paints (no cluster needed)")
    parser.add_argument("--terminal-tui", metavar="JOB", help=argparse.SUPPRESS)  # the TUI in the pty
    parser.add_argument("--latencies", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.terminal_tui:
        run_terminal_tui(args.terminal_tui, args.latencies)
        return 0

    big = 5000
    started = time.monotonic()
    recording = recorded_drain(big)
    decode = time.monotonic() - started
    paint_big = asyncio.run(first_paint_of_recording(recording, big))
    print(f"first paint, {big}-pod drain (recording)  {paint_big:6.2f} s   (+{decode:.2f} s to build and decode it)")
    paint_big_agent = first_paint_through_an_agent(recording, big)
    print(f"first paint, {big}-pod drain (agent)      {paint_big_agent:6.2f} s")
    if args.first_paint_only:
        return 0

    kubeconfig, own_cluster = bench_cluster(args.kubeconfig, BENCH_DIR)
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    agent_dir = Path(tempfile.mkdtemp(prefix="rpa-bench-", dir="/tmp"))
    os.environ[ENV_DIR] = str(agent_dir)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
    runs: list[Streamed] = []
    try:
        for pods in args.pods:
            runs.append(stream_drain(cluster, kubeconfig, pods, env))
            print_streamed(runs[-1])
    finally:
        with contextlib.suppress(Exception), connect_agent(name="bench", start=False) as agent:
            agent.shutdown(force=True)
        cluster.close()
        shutil.rmtree(agent_dir, ignore_errors=True)
        if own_cluster:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    print(f"\n== summary (load average now {os.getloadavg()[0]:.1f}) ==")
    for run in runs:
        print_streamed(run)
    print(f"first paint, {big}-pod drain (recording)  {paint_big:6.2f} s   (target <= 1.5 s)")
    print(f"first paint, {big}-pod drain (agent)      {paint_big_agent:6.2f} s   (target <= 1.5 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
