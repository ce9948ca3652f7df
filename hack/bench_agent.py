#!/usr/bin/env python3
"""Benchmark: the agent. Its memory idle and during a drain, the journal's size, how fast events reach
attached clients, and what running a drain in the agent costs against running it in-process.

Scenario: N pods (default 1000) of 10 Deployments under PDBs (maxUnavailable 20%),
Ready 1 s after start, on kwok nodes made for the benchmark (3 up to 1000 pods,
then one per 750 pods, as bench_tui.py: 7 for 5000; as many more take the
replacements). The same drain runs on fresh, identical copies of the scenario
(same nodes, a new namespace each time), ``--rounds`` times each way,
alternating which goes first (in-process, attached, attached, in-process, ...):
in-process (`drain --in-process -o jsonl`), and attached to the agent (`drain
--agent -o jsonl`) with 2 more clients attached (``--extra-clients``) and one
that attaches and never reads a byte (the agent drops it; it must not slow the
job). Printed:

- agent RSS idle (just started, no job), its peak (VmHWM) and what it holds after the drains;
- the in-process CLI's peak RSS (median of its runs), beside `kubectl drain`'s on
  the same scenario (``--kubectl``: one run, before the others);
- the journal's size after it (database + WAL), and per 1000 events;
- the agent's RSS with ``--finished-jobs`` (default 10) finished drains of N pods
  in its journal: the attached runs' jobs, and copies of the last one's rows
  under new ids up to that count; a new agent started on that journal, idle,
  then after `jobs list` and reading every one of those jobs' events (as
  `jobs attach` and the TUI's first paint do);
- latency from an event's timestamp (stamped by the job's stream when the
  engine emits it) to its line arriving at each of the 3 clients: the CLI's
  stdout, read line by line, and 2 clients of the agent's own; p50 / p95;
- wall time attached / in-process (both include starting the CLI): every run,
  the median of each side, and the ratio of the medians;
- CPU seconds per drain: the in-process CLI's, against the agent's plus the
  attached CLI's (the extra clients run in this script, on the same cores).

    .venv/bin/python hack/bench_agent.py [--pods N] [--rounds N] [--extra-clients N] [--kubeconfig PATH]
        [--kubectl] [--finished-jobs N]

Without --kubeconfig it starts its own cluster in .cluster/bench-agent and stops it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_support import bench_cluster, timed  # noqa: E402

from kubectl_rollout.agent.client import agent_running  # noqa: E402
from kubectl_rollout.agent.client import connect as connect_agent  # noqa: E402
from kubectl_rollout.agent.paths import ENV_DIR, agent_paths  # noqa: E402
from kubectl_rollout.agent.settings import ENV_IDLE  # noqa: E402
from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect  # noqa: E402

BENCH_DIR = ROOT / ".cluster" / "bench-agent"
PLUGIN = Path(sys.executable).parent / "kubectl-rollout_plus"
KUBECTL = ROOT / ".bin" / "kubectl"
POOL = "rollout-plus.bench/pool"
APPS = [f"app{i}" for i in range(10)]
#: pods a drained node holds beyond 1000 pods (a kwok node here takes 1000 at most)
PODS_PER_NODE = 750


def nodes_for(pods: int) -> int:
    """Drained nodes for ``pods`` pods: 3 up to 1000 pods, then one per ``PODS_PER_NODE``."""
    return max(3, math.ceil(pods / PODS_PER_NODE))


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok", POOL: "agent"},
        },
        "spec": {"taints": [{"key": POOL, "value": "agent", "effect": "NoSchedule"}]},
    }


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {"rollout-plus.test/ready-after": "1s"}},
                "spec": {
                    "nodeSelector": {POOL: "agent"},
                    "tolerations": [{"key": POOL, "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "app", "image": "registry.example/app:v1"}],
                },
            },
        },
    }


def pdb(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "maxUnavailable": "20%"},
    }


def wait_for(what: str, check: Any, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(1)


def set_cordoned(cluster: Cluster, nodes: list[str], *, cordoned: bool) -> None:
    for name in nodes:
        cluster.core.patch_node(name, {"spec": {"unschedulable": True if cordoned else None}})


def prepare(cluster: Cluster, namespace: str, targets: list[str], spares: list[str], pods: int) -> None:
    """``pods`` pods on ``targets`` (the spares cordoned while they are created), then their PDBs."""
    cluster.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    wait_for(
        "the default service account",
        lambda: any(
            sa.metadata.name == "default" for sa in cluster.core.list_namespaced_service_account(namespace).items
        ),
    )
    set_cordoned(cluster, spares, cordoned=True)
    try:
        for app in APPS:
            cluster.apps.create_namespaced_deployment(namespace, deployment(app, pods // len(APPS)))
        wait_for(
            f"{pods} pods available",
            lambda: (
                sum(
                    (d.status.available_replicas or 0) for d in cluster.apps.list_namespaced_deployment(namespace).items
                )
                == pods
            ),
        )
    finally:
        set_cordoned(cluster, spares, cordoned=False)
    for app in APPS:
        cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb(app))
    wait_for(
        "the PDBs processed",
        lambda: (
            all(
                p.status is not None and p.status.expected_pods == pods // len(APPS)
                for p in cluster.policy.list_namespaced_pod_disruption_budget(namespace).items
            )
            and len(cluster.policy.list_namespaced_pod_disruption_budget(namespace).items) == len(APPS)
        ),
    )


def clean(cluster: Cluster, namespace: str, targets: list[str]) -> None:
    """Delete the namespace and wait until it is gone (while kwok still plays its pods' kubelet)."""
    cluster.core.delete_namespace(namespace)
    set_cordoned(cluster, targets, cordoned=False)
    wait_for(
        f"namespace {namespace} gone",
        lambda: namespace not in {n.metadata.name for n in cluster.core.list_namespace().items},
        timeout=300,
    )


def rss_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"no {field} for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a live process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """User + system CPU time of this process's children that ended (and were waited for) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def drain_command(kubeconfig: Path, namespace: str, targets: list[str], mode: str) -> list[str]:
    return [str(PLUGIN), "drain", *targets, mode, "-o", "jsonl", "--kubeconfig", str(kubeconfig), "-n", namespace]


def in_process_run(kubeconfig: Path, namespace: str, targets: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of the in-process CLI (``-o jsonl``, its output to a pipe)."""
    elapsed, peak, _ = timed(drain_command(kubeconfig, namespace, targets, "--in-process"), env)
    return elapsed, peak


def kubectl_run(kubeconfig: Path, namespace: str, targets: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """Wall time, peak RSS (KiB) and exit code of `kubectl drain` of the same nodes (one process for them all).

    Its exit code is printed, not fatal: at 5000 pods some of its evictions meet a 409 (the PDB changed under
    them), which kubectl reports as errors after draining every node.
    """
    command = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "drain", *targets, "--ignore-daemonsets"]
    elapsed, peak, result = timed(command, env, check=False)
    return elapsed, peak, result.returncode


def copy_finished_jobs(journal: Path, count: int) -> int:
    """Copies of the newest finished job (its row and events, under new ids) until the journal holds ``count``
    finished jobs; how many finished jobs it holds then."""
    db = sqlite3.connect(journal)
    try:
        finished = [row[0] for row in db.execute("SELECT id FROM jobs WHERE finished_at IS NOT NULL")]
        if not finished:
            raise SystemExit("no finished job in the journal to copy")
        (newest,) = db.execute(
            "SELECT id FROM jobs WHERE finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 1"
        ).fetchone()
        columns = [row[1] for row in db.execute("PRAGMA table_info(jobs)") if row[1] != "id"]
        listed = ", ".join(columns)
        for number in range(count - len(finished)):
            copy = f"copy{number:02d}{newest[6:]}"
            with db:
                db.execute(f"INSERT INTO jobs (id, {listed}) SELECT ?, {listed} FROM jobs WHERE id = ?", (copy, newest))
                db.execute(
                    "INSERT INTO events (job, seq, type, body, coalesce_key) "
                    "SELECT ?, seq, type, replace(body, ?, ?), coalesce_key FROM events WHERE job = ?",
                    (copy, f'"job": "{newest}"', f'"job": "{copy}"', newest),
                )
        return max(count, len(finished))
    finally:
        db.close()


def read_every_finished_job() -> int:
    """`jobs list`, then every finished job's events, as `jobs attach` reads them; how many events in all."""
    events = 0
    with connect_agent(name="bench") as agent:
        jobs = [job.id for job in agent.jobs() if job.state not in ("pending", "running")]
    for job_id in jobs:
        with connect_agent(name="bench") as agent:
            events += sum(1 for _ in agent.attach(job_id))
    return events


def attached_run(
    kubeconfig: Path, namespace: str, targets: list[str], env: dict[str, str], *, extra_clients: int
) -> tuple[float, list[float], int]:
    """Wall time of the attached CLI, every client's event latencies, the number of events."""
    latencies: list[float] = []
    lock = threading.Lock()
    started = time.monotonic()
    cli = subprocess.Popen(
        drain_command(kubeconfig, namespace, targets, "--agent"), env=env, stdout=subprocess.PIPE, text=True
    )
    assert cli.stdout is not None
    job_id = ""
    count = 0
    others: list[threading.Thread] = []
    stalled: socket.socket | None = None

    def follow(job: str) -> None:
        with connect_agent(name="bench") as agent:
            for envelope in agent.attach(job):
                late = time.time() - envelope.at
                with lock:
                    latencies.append(late)

    for line in cli.stdout:
        received = time.time()
        event = json.loads(line)
        count += 1
        if not job_id:
            job_id = event["job"]
            others = [threading.Thread(target=follow, args=(job_id,)) for _ in range(extra_clients)]
            for thread in others:
                thread.start()
            stalled = never_reading_client(agent_paths().socket, job_id)
        stamp = time.mktime(time.strptime(event["at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        stamp += float("0." + event["at"][20:-1])
        with lock:
            latencies.append(received - stamp)
    code = cli.wait()
    elapsed = time.monotonic() - started
    for thread in others:
        thread.join()
    if stalled is not None:
        stalled.close()
    if code != 0:
        raise SystemExit(f"the attached drain failed with {code}")
    return elapsed, latencies, count


def never_reading_client(socket_path: Path, job_id: str) -> socket.socket:
    """A client that greets the agent, attaches to the job, and never reads again (its receive buffer is small)."""
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(str(socket_path))
    hello = {"protocol": 1, "oldest": 1, "client": "never-reads"}
    for number, (method, params) in enumerate((("hello", hello), ("attach", {"job": job_id})), start=1):
        request = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
        stalled.sendall(json.dumps(request).encode() + b"\n")
    return stalled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000, help="pods on the drained nodes (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="drains each way, alternating (default 3)")
    parser.add_argument(
        "--extra-clients",
        type=int,
        default=2,
        help="agent clients attached besides the CLI and the never-reading one (default 2); they run on the same "
        "cores, so 0 measures the agent's own cost best",
    )
    parser.add_argument("--kubeconfig", type=Path, help="use this running cluster instead of starting one")
    parser.add_argument("--kubectl", action="store_true", help="drain the same scenario with `kubectl drain` once")
    parser.add_argument(
        "--finished-jobs",
        type=int,
        default=10,
        help="finished drains in the journal when the agent's RSS is measured with them (default 10; 0: skip)",
    )
    args = parser.parse_args()

    kubeconfig, own_cluster = bench_cluster(args.kubeconfig, BENCH_DIR)
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    stem = f"bench-agent-{os.getpid()}"
    count = nodes_for(args.pods)
    names = [f"{stem}-n{i}" for i in range(2 * count)]
    targets, spares = names[:count], names[count:]
    agent_dir = Path(tempfile.mkdtemp(prefix="rpa-bench-", dir="/tmp"))
    # One agent for the whole benchmark: in-process runs in a row leave it idle longer than its default 10 min.
    os.environ.update({ENV_DIR: str(agent_dir), ENV_IDLE: str(24 * 3600)})
    env = dict(os.environ)
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
        with connect_agent(name="bench") as agent:
            pid = agent.agent["pid"]
        time.sleep(3)
        idle = rss_kib(pid, "VmRSS")
        # In-process and attached alternate (A B B A ...), so that a cluster busier at one moment weighs on both.
        walls: dict[str, list[float]] = {"in-process": [], "attached": []}
        #: CPU seconds per drain: the in-process CLI; the agent plus the attached CLI
        cpus: dict[str, list[float]] = {"in-process": [], "attached": []}
        #: peak RSS (KiB) of each in-process CLI, and of `kubectl drain`
        peaks: dict[str, list[int]] = {"in-process": [], "kubectl": []}
        latencies: list[float] = []
        events = 0
        journaled = 0
        kubectl_exit = 0
        order = ["in-process", "attached", "attached", "in-process"] * ((args.rounds + 1) // 2)
        if args.kubectl:
            walls["kubectl"], cpus["kubectl"] = [], []
            order = ["kubectl", *order[: 2 * args.rounds]]
        for index, mode in enumerate(order[: 2 * args.rounds + int(args.kubectl)]):
            started = time.monotonic()
            namespace = f"{stem}-{index}"
            prepare(cluster, namespace, targets, spares, args.pods)
            cpu_before = children_cpu_seconds() + cpu_seconds(pid)
            if mode == "in-process":
                elapsed, peak_kib = in_process_run(kubeconfig, namespace, targets, env)
                walls[mode].append(elapsed)
                peaks[mode].append(peak_kib)
            elif mode == "kubectl":
                elapsed, peak_kib, kubectl_exit = kubectl_run(kubeconfig, namespace, targets, env)
                walls[mode].append(elapsed)
                peaks[mode].append(peak_kib)
            else:
                elapsed, seen, events = attached_run(
                    kubeconfig, namespace, targets, env, extra_clients=args.extra_clients
                )
                walls[mode].append(elapsed)
                latencies.extend(seen)
                journaled += events
            cpus[mode].append(children_cpu_seconds() + cpu_seconds(pid) - cpu_before)
            clean(cluster, namespace, targets)
            print(
                f"run {index + 1}: {mode:10s} {walls[mode][-1]:7.2f} s, CPU {cpus[mode][-1]:6.1f} s   "
                f"(with setup and clean-up {time.monotonic() - started:.0f} s)",
                flush=True,
            )
        with connect_agent(name="bench") as agent:
            if agent.agent["pid"] != pid:
                raise SystemExit(f"the agent (pid {pid}) was replaced by pid {agent.agent['pid']}: figures lost")
        peak = rss_kib(pid, "VmHWM")
        after = rss_kib(pid, "VmRSS")
        paths = agent_paths()
        with connect_agent(name="bench") as agent:
            agent.shutdown()
        wait_for("the agent to stop", lambda: not agent_running(paths), timeout=30)
        journal = paths.journal.stat().st_size
        dropped = paths.log.read_text().count("(never-reads): it read nothing for")
        finished: tuple[int, int, int, int, int] | None = None
        if args.finished_jobs:
            # A new agent on a journal of finished drains: what it holds for them, idle and once read.
            held = copy_finished_jobs(paths.journal, args.finished_jobs)
            with connect_agent(name="bench") as agent:
                pid = agent.agent["pid"]
            time.sleep(3)
            started_rss = rss_kib(pid, "VmRSS")
            read = read_every_finished_job()
            time.sleep(1)
            finished = (held, started_rss, rss_kib(pid, "VmRSS"), rss_kib(pid, "VmHWM"), read)
            with connect_agent(name="bench") as agent:
                agent.shutdown()
            wait_for("the agent to stop", lambda: not agent_running(paths), timeout=30)
        in_process = statistics.median(walls["in-process"])
        attached = statistics.median(walls["attached"])

        print(
            f"\n== the agent: a drain of {args.pods} pods on {count} nodes, 10 Deployments under PDBs "
            "(maxUnavailable 20%) =="
        )
        print(f"agent RSS idle                      {idle / 1024:7.1f} MiB")
        print(f"agent RSS peak (VmHWM)              {peak / 1024:7.1f} MiB")
        print(f"agent RSS after the drains, idle    {after / 1024:7.1f} MiB")
        runs = ", ".join(f"{p / 1024:.0f}" for p in peaks["in-process"])
        print(
            f"in-process CLI peak RSS (median)    {statistics.median(peaks['in-process']) / 1024:7.1f} MiB   ({runs})"
        )
        if args.kubectl:
            print(
                f"kubectl drain peak RSS              {peaks['kubectl'][0] / 1024:7.1f} MiB   "
                f"(one run, {walls['kubectl'][0]:.1f} s, exit code {kubectl_exit})"
            )
        print(
            f"journal after {args.rounds} attached drains      {journal / 1024:7.1f} KiB   "
            f"({events} events each; in-process drains are not journaled): "
            f"{journal / 1024 / max(journaled, 1) * 1000:.1f} KiB per 1000 events"
        )
        if finished is not None:
            held, started_rss, read_rss, read_peak, read = finished
            print(
                f"agent RSS, {held} finished {args.pods}-pod drains in its journal: {started_rss / 1024:.1f} MiB "
                f"started; {read_rss / 1024:.1f} MiB (peak {read_peak / 1024:.1f}) after `jobs list` and reading "
                f"every job's {read // held} events (target <= 150 MiB)"
            )
        readers = 1 + args.extra_clients
        print(
            f"event -> client latency, {readers} client(s)  p50 {1000 * statistics.median(latencies):6.1f} ms   "
            f"p95 {1000 * percentile(latencies, 0.95):6.1f} ms   (target p95 <= 50 ms; {len(latencies)} deliveries)"
        )
        runs = ", ".join(f"{w:.2f}" for w in walls["in-process"])
        print(f"wall time in-process                {in_process:7.2f} s   (median of {runs})")
        runs = ", ".join(f"{w:.2f}" for w in walls["attached"])
        print(
            f"wall time attached                  {attached:7.2f} s   (median of {runs}; {readers} client(s) reading, "
            "1 never reading)"
        )
        print(
            f"CPU per drain (median)              in-process CLI {statistics.median(cpus['in-process']):.1f} s, "
            f"agent + attached CLI {statistics.median(cpus['attached']):.1f} s"
        )
        print(f"never-reading clients dropped       {dropped} of {len(walls['attached'])}")
        print(f"ratio of the medians                {attached / in_process:7.2f}   (target <= 1.05)")
    finally:
        for name in names:
            with contextlib.suppress(Exception):  # gone already
                cluster.core.delete_node(name)
        cluster.close()
        if agent_running(agent_paths()):
            # A run failed: stop the agent before its directory goes (it was told to stay up for a day).
            with contextlib.suppress(Exception), connect_agent(name="bench") as agent:
                agent.shutdown(force=True)
            wait_for("the agent to stop", lambda: not agent_running(agent_paths()), timeout=30)
        shutil.rmtree(agent_dir, ignore_errors=True)
        if own_cluster:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
