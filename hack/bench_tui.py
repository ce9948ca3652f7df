#!/usr/bin/env python3
"""Benchmark: the TUI while a 1000-pod drain streams, and its first paint of large jobs.

Scenario (bench_agent.py's): N pods (default 1000) of 10 Deployments under PDBs
(maxUnavailable 20%), Ready 1 s after start, on 3 kwok nodes (3 more take the
replacements), drained by `drain --tui` in an 80x24 pseudo-terminal: the CLI
submits the drain to an agent of its own and opens the TUI on it. Meanwhile a
second TUI runs headless in this process on the same job. Printed:

- p50 / p95 latency from an event's emission by the job in the agent (its
  envelope's time) to the repaint that shows it, so the agent, the socket and
  the TUI's reader count too (the headless TUI's own measure; target p95 <= 250 ms);
- CPU of the TUI process in the terminal while the drain streams, in % of one
  core (target <= 25%);
- bytes per second it writes to the 80x24 terminal meanwhile (target <= 15 KiB/s);
- first paint: from starting the TUI on the finished job (its events from the
  agent's journal) to its pod table painted; and the same for a 5000-pod drain
  (a recording of that size, through the same decoding; target <= 1.5 s).

    .venv/bin/python hack/bench_tui.py [--pods N] [--kubeconfig PATH]

Without --kubeconfig it starts its own cluster in .cluster/bench-tui and stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack"))

from bench_agent import clean, node, percentile, prepare, wait_for  # noqa: E402
from bench_support import bench_cluster  # noqa: E402

from kubectl_rollout.agent.client import connect as connect_agent  # noqa: E402
from kubectl_rollout.agent.errors import AgentError  # noqa: E402
from kubectl_rollout.agent.journal import Journal  # noqa: E402
from kubectl_rollout.agent.paths import ENV_DIR, agent_paths  # noqa: E402
from kubectl_rollout.jobs.events import drain as drain_events  # noqa: E402
from kubectl_rollout.jobs.events import eviction as eviction_events  # noqa: E402
from kubectl_rollout.jobs.events.base import Envelope, PodRef  # noqa: E402
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted, JobState  # noqa: E402
from kubectl_rollout.jobs.spec import Connection, DrainJob, DrainOptions, JobKind, JobResult, JobSpec  # noqa: E402
from kubectl_rollout.kube.cluster_access import ConnectionSettings, connect  # noqa: E402
from kubectl_rollout.tui.app import RolloutPlusApp, agent_connect  # noqa: E402
from kubectl_rollout.tui.recorded_jobs import RecordedJobs  # noqa: E402
from kubectl_rollout.tui.screens.drain import DrainScreen  # noqa: E402
from kubectl_rollout.tui.widgets.live_table import LiveTable  # noqa: E402

BENCH_DIR = ROOT / ".cluster" / "bench-tui"
PLUGIN = Path(sys.executable).parent / "kubectl-rollout_plus"
COLUMNS, ROWS = 80, 24


class Terminal:
    """The plugin in an 80x24 pseudo-terminal; every byte it writes is counted with the time it came."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.process = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True
        )
        os.close(slave)
        self.master = master
        self.chunks: list[tuple[float, int]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.chunks.append((time.monotonic(), len(data)))

    def bytes_between(self, start: float, end: float) -> int:
        return sum(size for at, size in self.chunks if start <= at <= end)

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.master, b"q")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        os.close(self.master)


async def headless_follow(job_id: str) -> tuple[list[float], float]:
    """A headless TUI on the job until it finishes: its event-to-screen latencies (after its first paint)."""
    app = RolloutPlusApp(agent_connect(), open_job=job_id)
    async with app.run_test(size=(COLUMNS, ROWS)) as pilot:
        while not (isinstance(app.screen, DrainScreen) and app.screen.view.last_seq):
            await pilot.pause(0.05)
        app.latencies.clear()  # the backlog it attached to is not streaming
        started = time.monotonic()
        while not app.store.view(job_id).state.finished:
            await pilot.pause(0.1)
        await pilot.pause(0.5)
        return list(app.latencies), time.monotonic() - started


async def first_paint(app: RolloutPlusApp, pods: int) -> float:
    """Seconds from starting ``app`` to its drain screen showing ``pods`` rows, painted."""
    started = time.monotonic()
    async with app.run_test(size=(COLUMNS, ROWS)) as pilot:
        while True:
            screen = app.screen
            if isinstance(screen, DrainScreen) and len(screen.query_one("#pods", LiveTable).row_keys) >= pods:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000, help="pods on the drained nodes (default 1000)")
    parser.add_argument("--kubeconfig", type=Path, help="use this running cluster instead of starting one")
    parser.add_argument("--first-paint-only", action="store_true", help="only the first paints (no cluster needed)")
    args = parser.parse_args()

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
    stem = f"bench-tui-{os.getpid()}"
    names = [f"{stem}-n{i}" for i in range(6)]
    targets, spares = names[:3], names[3:]
    namespace = f"{stem}-0"
    agent_dir = Path(tempfile.mkdtemp(prefix="rpa-bench-", dir="/tmp"))
    os.environ[ENV_DIR] = str(agent_dir)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
    terminal: Terminal | None = None
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
        prepare(cluster, namespace, targets, spares, args.pods)
        command = [str(PLUGIN), "--kubeconfig", str(kubeconfig), "-n", namespace, "drain", *targets, "--tui"]
        terminal = Terminal(command, env)
        job_id = ""

        def submitted() -> bool:
            nonlocal job_id
            try:
                with connect_agent(name="bench", start=False) as agent:
                    jobs = agent.jobs()
            except AgentError:
                return False  # the CLI is still starting the agent
            job_id = jobs[0].id if jobs else ""
            return bool(job_id)

        wait_for("the drain submitted by --tui", submitted, 120)
        cpu_before, wall_before = terminal.cpu_seconds(), time.monotonic()
        latencies, streamed = asyncio.run(headless_follow(job_id))
        cpu = terminal.cpu_seconds() - cpu_before
        wall = time.monotonic() - wall_before
        written = terminal.bytes_between(wall_before, wall_before + wall)
        terminal.close()
        terminal = None
        with connect_agent(name="bench", start=False) as agent:
            info = agent.show(job_id)
        paint_job = asyncio.run(first_paint(RolloutPlusApp(agent_connect(), open_job=job_id), args.pods))

        print(f"\n== the TUI: `drain --tui` of {args.pods} pods on 3 nodes, 10 Deployments under PDBs ==")
        print(f"drain                                 {info.state}, {info.last_seq} events in {streamed:.1f} s")
        print(
            f"event -> screen latency               p50 {1000 * statistics.median(latencies):6.1f} ms   "
            f"p95 {1000 * percentile(latencies, 0.95):6.1f} ms   (target p95 <= 250 ms; {len(latencies)} events)"
        )
        print(f"TUI CPU while streaming (terminal)    {100 * cpu / wall:6.1f} % of a core   (target <= 25%)")
        print(f"bytes to the 80x24 terminal           {written / wall / 1024:6.2f} KiB/s   (target <= 15 KiB/s)")
        print(f"first paint, {args.pods}-pod job (agent)     {paint_job:6.2f} s")
        print(f"first paint, {big}-pod drain (recording)  {paint_big:6.2f} s   (target <= 1.5 s)")
        print(f"first paint, {big}-pod drain (agent)      {paint_big_agent:6.2f} s   (target <= 1.5 s)")
    finally:
        if terminal is not None:
            terminal.close()
        with contextlib.suppress(Exception):  # never created, or gone already
            clean(cluster, namespace, targets)
        for name in names:
            with contextlib.suppress(Exception):  # gone already
                cluster.core.delete_node(name)
        with contextlib.suppress(Exception), connect_agent(name="bench", start=False) as agent:
            agent.shutdown(force=True)
        cluster.close()
        shutil.rmtree(agent_dir, ignore_errors=True)
        if own_cluster:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
