#!/usr/bin/env python3
"""Benchmark: a node-pool campaign against draining the same pool node by node, side by side on one cluster.

The pool: 30 kwok nodes in 3 zones; 15 Deployments x 40 = 600 pods, Ready 1 s after they start, ten behind
a PDB of maxUnavailable 1 and five behind minAvailable 90 % (4 of 40 at a time). The singleton behind
minAvailable 1 of the issue's scenario is left out here: `kubectl drain` can never move it (the test suite
covers it, through --on-blocked surge). Each round, every tool gets the same workloads in a fresh namespace
on the whole pool, alternating which tool goes first:

- campaign:          `campaign -l POOL --budget 20% --per-zone --ignore-daemonsets` (uncordons each node)
- drain per node:    `drain NODE --ignore-daemonsets` then `uncordon NODE`, node after node
- kubectl per node:  `kubectl drain NODE --ignore-daemonsets` then `kubectl uncordon NODE`, node after node

Printed per run and as medians: wall time, API requests per node (the audit log, by user agent), and the
campaign's lower bound (hack/campaign_figures.py says how it is computed): the earliest schedule of the run's
evictions in its waves if every round took R, the cluster's quickest round in that run (an accepted eviction
to the disruption controller's status write that allows the next one, from the audit log); each wave takes
at least its slowest PDB's readiness chain, ceil(N / A) x R; beside it the cluster's own time in
each wave (how long its slowest PDB was closed) and the campaign's reaction to each allowance.

Every pod evicted costs the ReplicaSet controller a create, and its status writes and events follow; that
controller sends under kube-controller-manager's client limit (--kube-api-qps 20 after a burst of 30 by
default), so each run also prints the ReplicaSet and disruption controllers' requests in the run's namespace
and the earliest their last one could have been sent at that pace (bench_support.pace_floor): the controllers'
pace, which every tool meets alike. --controller-qps N starts the cluster with kube-controller-manager's
limit at N (burst 1.5 N), to see the tools with that pace lifted.

--large: 300 nodes / 6000 pods (30 Deployments x 200, maxUnavailable 20 %), one campaign in-process and one
in the agent: wall time and peak RSS of each.

    .venv/bin/python hack/bench_campaign.py [--rounds 3] [--large-only | --skip-large] [--large-where agent]

It starts its own cluster in .cluster/bench-campaign (with an audit log) and stops it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack"))

import campaign_figures  # noqa: E402
from bench_drain import AUDIT_POLICY, KUBECTL, PLUGIN, ReadyLatency, deployment, percentile  # noqa: E402
from bench_support import (  # noqa: E402
    DISRUPTION_CONTROLLER,
    RS_CONTROLLER,
    RS_CONTROLLER_BURST,
    RS_CONTROLLER_QPS,
    audit_requests,
    completed_requests,
    controller_requests,
    pace_floor,
    timed,
)

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect  # noqa: E402

BENCH_DIR = ROOT / ".cluster" / "bench-campaign"
ZONE_LABEL = "topology.kubernetes.io/zone"
POOL = "bench-pool"
POOL_LABEL = f"rollout-plus.bench/pool={POOL}"
ZONES = ("zone-a", "zone-b", "zone-c")
#: the tools compared, and the user agent each one's requests carry in the audit log
AGENTS = {
    "campaign": "kubectl-rollout-plus/",
    "drain per node": "kubectl-rollout-plus/",
    "kubectl per node": "kubectl/",
}


def pdb(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {**spec, "selector": {"matchLabels": {"app": name}}},
    }


def workloads(replicas: int, kinds: dict[str, tuple[int, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Deployment name -> its PDB spec, for ``kinds``: prefix -> (how many, PDB spec)."""
    return {f"{prefix}{i}": spec for prefix, (count, spec) in kinds.items() for i in range(count)}


POOL_WORKLOADS = workloads(40, {"web": (10, {"maxUnavailable": 1}), "api": (5, {"minAvailable": "90%"})})


def label_pool(cluster: Cluster, nodes: list[str]) -> None:
    for index, node in enumerate(nodes):
        labels = {"rollout-plus.bench/pool": POOL, ZONE_LABEL: ZONES[index % len(ZONES)]}
        cluster.core.patch_node(node, {"metadata": {"labels": labels}})


def until_available(cluster: Cluster, namespace: str, wanted: int, replicas: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = cluster.apps.list_namespaced_deployment(namespace).items
        if sum((d.status.available_replicas or 0) == replicas for d in items) == wanted:
            return
        time.sleep(1)
    raise SystemExit(f"the Deployments of {namespace} did not become available in {timeout} s")


def until_budgets_counted(cluster: Cluster, namespace: str, wanted: int, replicas: int, timeout: float = 120) -> None:
    """The disruption controller has counted every PDB's pods: a drain started now sees real budgets."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = cluster.policy.list_namespaced_pod_disruption_budget(namespace).items
        if sum((p.status is not None and p.status.current_healthy == replicas) for p in items) == wanted:
            return
        time.sleep(0.5)
    raise SystemExit(f"the PDBs of {namespace} were not counted in {timeout} s")


def prepare(cluster: Cluster, namespace: str, apps: dict[str, dict[str, Any]], replicas: int) -> None:
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    while not any(s.metadata.name == "default" for s in cluster.core.list_namespaced_service_account(namespace).items):
        time.sleep(0.1)
    for name in apps:
        cluster.apps.create_namespaced_deployment(namespace, deployment(name, replicas, "1s"))
    until_available(cluster, namespace, len(apps), replicas)
    for name, spec in apps.items():
        cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb(name, spec))
    until_budgets_counted(cluster, namespace, len(apps), replicas)


def clean_up(cluster: Cluster, namespace: str, nodes: list[str]) -> None:
    cluster.core.delete_namespace(namespace, grace_period_seconds=0)
    while any(n.metadata.name == namespace for n in cluster.core.list_namespace().items):
        time.sleep(0.5)
    for node in nodes:
        cluster.core.patch_node(node, {"spec": {"unschedulable": None}})


@dataclass(frozen=True)
class ClientLimit:
    """kube-controller-manager's client limit: --kube-api-qps, --kube-api-burst."""

    qps: float = RS_CONTROLLER_QPS
    burst: int = RS_CONTROLLER_BURST

    @classmethod
    def of(cls, qps: int | None) -> ClientLimit:
        return cls() if qps is None else cls(qps=qps, burst=qps * RS_CONTROLLER_BURST // RS_CONTROLLER_QPS)

    def controller_manager_args(self) -> list[str]:
        if self == ClientLimit():
            return []
        return [
            f"--controller-manager-arg=--kube-api-qps={self.qps:g}",
            f"--controller-manager-arg=--kube-api-burst={self.burst}",
        ]


def run_tool(
    cluster: Cluster, kubeconfig: Path, tool: str, nodes: list[str], audit_log: Path, run: int, limit: ClientLimit
) -> dict[str, Any]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    namespace = f"bench-{tool.split()[0]}-{run}"
    replicas = 40
    prepare(cluster, namespace, POOL_WORKLOADS, replicas)
    latency = ReadyLatency(cluster, namespace)
    latency.start()
    since = time.time()
    started = time.monotonic()
    output = ""
    if tool == "campaign":
        command = [str(PLUGIN), "campaign", "-l", POOL_LABEL, "--budget", "20%", "--per-zone"]
        command += ["--ignore-daemonsets", "--in-process", "-o", "jsonl"]
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise SystemExit(f"the campaign failed ({result.returncode}): {result.stderr[-2000:]}")
        output = result.stdout
    else:
        drain = [str(KUBECTL), "drain"] if tool.startswith("kubectl") else [str(PLUGIN), "drain"]
        uncordon = [str(KUBECTL), "uncordon"] if tool.startswith("kubectl") else [str(PLUGIN), "uncordon"]
        for node in nodes:
            subprocess.run([*drain, node, "--ignore-daemonsets"], capture_output=True, check=True, env=env)
            subprocess.run([*uncordon, node], capture_output=True, check=True, env=env)
    elapsed = time.monotonic() - started
    until = time.time()
    time.sleep(2)  # the last replacements become Ready; the audit log's batch is flushed
    latency.stop()
    requests = audit_requests(audit_log, since, until, agent=AGENTS[tool])
    figures: dict[str, Any] = {
        "seconds": elapsed,
        "requests_per_node": requests / len(nodes),
        "accepted": accepted_evictions(audit_log, namespace, since, until),
    }
    for key, user in (("replica_set", RS_CONTROLLER), ("disruption", DISRUPTION_CONTROLLER)):
        received = controller_requests(audit_log, namespace, since, until, user)
        floor = pace_floor(received, qps=limit.qps, burst=limit.burst)
        figures[f"{key}_requests"] = len(received)
        figures[f"{key}_pace"] = math.nan if floor is None else floor - since
    if tool == "campaign":
        figures |= campaign_breakdown(output, audit_log, namespace, replicas, since, until)
        figures["ready"] = min(latency.latencies)
    clean_up(cluster, namespace, nodes)
    return figures


def campaign_breakdown(
    jsonl: str, audit_log: Path, namespace: str, replicas: int, since: float, until: float
) -> dict[str, Any]:
    """The campaign's waves, its bound and the cluster's time in each wave (hack/campaign_figures.py)."""
    waves = campaign_figures.waves_of(json.loads(line) for line in jsonl.splitlines() if line.startswith("{"))
    entries = [
        e for e in completed_requests(audit_log, namespace) if since - 1 <= campaign_figures.epoch(e["stageTimestamp"])
    ]
    one_at_a_time = {
        app for app, spec in POOL_WORKLOADS.items() if campaign_figures.allowed_at_once(spec, replicas) == 1
    }
    rounds = campaign_figures.cluster_rounds(entries, one_at_a_time)
    quickest = campaign_figures.quickest(rounds)
    ends = campaign_figures.earliest_ends(waves, POOL_WORKLOADS, replicas, quickest)
    return {
        "waves": waves,
        "rounds": rounds,
        "round": quickest,
        "bounds": [end - begin for begin, end in itertools.pairwise([0.0, *ends])],
        "bound": ends[-1] if ends else 0.0,
        "cluster": [campaign_figures.cluster_time(w, rounds) for w in waves],
        "cluster_total": sum(campaign_figures.cluster_time(w, rounds) for w in waves),
        "reactions": campaign_figures.reactions(rounds, waves),
        "evicted": sum(sum(w.evicted.values()) for w in waves),
    }


def accepted_evictions(audit_log: Path, namespace: str, since: float, until: float) -> int:
    """Evictions of ``namespace``'s pods the API server accepted (201) in [since, until]."""
    # The time counts: a bench cluster kept from an earlier invocation has that one's namespaces of the same names.
    return sum(
        1
        for entry in completed_requests(audit_log, namespace)
        if (entry.get("objectRef") or {}).get("subresource") == "eviction"
        and (entry.get("responseStatus") or {}).get("code") == 201
        and since - 1 <= campaign_figures.epoch(entry["stageTimestamp"]) <= until + 1
    )


def run_pool(
    cluster: Cluster,
    kubeconfig: Path,
    nodes: list[str],
    audit_log: Path,
    rounds: int,
    tools: list[str],
    limit: ClientLimit,
) -> None:
    print(f"\n== {len(nodes)} nodes in 3 zones, 15 Deployments x 40 pods under PDBs, Ready 1 s after start ==")
    print(f"kube-controller-manager's client limit: {limit.qps:g} requests/s after a burst of {limit.burst}")
    results: dict[str, list[dict[str, Any]]] = {tool: [] for tool in tools}
    for run in range(rounds):
        order = tools[run % len(tools) :] + tools[: run % len(tools)]
        for tool in order:
            figures = run_tool(cluster, kubeconfig, tool, nodes, audit_log, run, limit)
            results[tool].append(figures)
            extra = ""
            if tool == "campaign":
                measured = figures["rounds"]
                median_round = statistics.median(r.seconds for r in measured)
                reacted = figures["reactions"]
                extra = (
                    f"  bound {figures['bound']:6.2f} s ({len(figures['waves'])} waves, R {figures['round']:.2f} s"
                    f" the quickest of {len(measured)} rounds, median {median_round:.2f} s;"
                    f" r {figures['ready']:.2f} s creation to Ready; {figures['evicted']} evicted; reaction p50"
                    f" {percentile(reacted, 0.5) * 1000:.0f} ms p95 {percentile(reacted, 0.95) * 1000:.0f} ms)\n"
                    + "".join(
                        f"      wave {i + 1}: {wave.seconds:6.2f} s, bound {bound:6.2f} s,"
                        f" cluster's time {closed:6.2f} s\n"
                        for i, (wave, bound, closed) in enumerate(
                            zip(figures["waves"], figures["bounds"], figures["cluster"], strict=True)
                        )
                    ).rstrip("\n")
                )
            print(
                f"  run {run + 1} {tool:17s} {figures['seconds']:7.2f} s  "
                f"{figures['requests_per_node']:6.1f} requests/node, {figures['accepted']} evictions accepted;"
                f" ReplicaSet controller {figures['replica_set_requests']} requests"
                f" ({figures['replica_set_requests'] / max(1, figures['accepted']):.2f} per eviction), its pace"
                f" {figures['replica_set_pace']:6.2f} s; disruption controller {figures['disruption_requests']},"
                f" {figures['disruption_pace']:6.2f} s{extra}",
                flush=True,
            )

    def median(tool: str, key: str) -> float:
        return float(statistics.median(r[key] for r in results[tool]))

    print(f"\nmedians of {rounds} runs each, alternating which tool goes first:")
    for tool in tools:
        print(
            f"{tool:18s} {median(tool, 'seconds'):7.2f} s   {median(tool, 'requests_per_node'):6.1f} requests/node"
            f"   ReplicaSet controller's pace {median(tool, 'replica_set_pace'):7.2f} s"
            f" ({median(tool, 'seconds') / median(tool, 'replica_set_pace'):.2f}x),"
            f" {median(tool, 'replica_set_requests') / median(tool, 'accepted'):.2f} requests per eviction"
        )
    if "campaign" not in tools:
        return
    campaign = median("campaign", "seconds")
    bound = median("campaign", "bound")
    print(f"lower bound        {bound:7.2f} s   (the run's evictions in its waves, every round R: campaign_figures)")
    print(f"campaign / bound   {campaign / bound:7.2f}   (target <= 1.2)")
    closed = median("campaign", "cluster_total")
    print(f"cluster's time     {closed:7.2f} s   (sum over waves of the longest a PDB was closed, this run's rounds)")
    print(f"campaign / cluster {campaign / closed:7.2f}")
    for tool in tools:
        if tool == "campaign":
            continue
        print(f"{tool} / campaign {median(tool, 'seconds') / campaign:7.2f}")


def run_large(cluster: Cluster, kubeconfig: Path, nodes: list[str], where_to_run: tuple[str, ...]) -> None:
    print(f"\n== {len(nodes)} nodes, 30 Deployments x 200 pods (maxUnavailable 20 %), budget 20 % per zone ==")
    # an agent of the benchmark's own, started by the campaign: its peak is this campaign's alone
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "ROLLOUT_PLUS_AGENT_DIR": tempfile.mkdtemp(prefix="rpb-")}
    apps = workloads(200, {"app": (30, {"maxUnavailable": "20%"})})
    for where in where_to_run:
        namespace = f"bench-large{where}"
        prepare(cluster, namespace, apps, 200)
        command = [str(PLUGIN), "campaign", "-l", POOL_LABEL, "--budget", "20%", "--per-zone", "--ignore-daemonsets"]
        elapsed, peak, _ = timed([*command, where], env)
        agent_peak = ""
        if where == "--agent":
            hello = subprocess.run(
                [str(PLUGIN), "agent", "start", "-o", "json"], capture_output=True, text=True, env=env, check=True
            )
            agent_peak = f", agent peak RSS {peak_rss_mib(json.loads(hello.stdout)['pid']):.0f} MiB"
            subprocess.run([str(PLUGIN), "agent", "stop"], capture_output=True, env=env)
        print(f"campaign {where:13s} {elapsed:7.1f} s   CLI peak RSS {peak / 1024:.0f} MiB{agent_peak}", flush=True)
        clean_up(cluster, namespace, nodes)


def peak_rss_mib(pid: int) -> float:
    """A live process's peak RSS (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmHWM for process {pid}")


def start_cluster(nodes: int, limit: ClientLimit) -> tuple[Cluster, Path, list[str]]:
    # beside the cluster's directory, which `up` starts afresh: the PDBs' status bodies over the default policy
    policy = BENCH_DIR.parent / "bench-campaign-audit-policy.json"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text(json.dumps(AUDIT_POLICY))
    up = subprocess.run(
        [
            *(sys.executable, str(ROOT / "hack" / "cluster.py"), "up", "--dir", str(BENCH_DIR)),
            *("--nodes", str(nodes), "--audit", f"--apiserver-arg=--audit-policy-file={policy}"),
            "--apiserver-arg=--audit-log-mode=blocking",
            *limit.controller_manager_args(),
        ],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    names = sorted(n.metadata.name for n in cluster.core.list_node().items)
    label_pool(cluster, names)
    return cluster, kubeconfig, names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tool, alternating (>= 3)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--skip-large", action="store_true", help="leave out the 300-node / 6000-pod campaign")
    which.add_argument("--large-only", action="store_true", help="only the 300-node / 6000-pod campaign")
    parser.add_argument("--keep", action="store_true", help="leave the bench cluster running")
    parser.add_argument(
        "--only", action="append", choices=list(AGENTS), help="run only this tool on the pool (repeatable)"
    )
    parser.add_argument(
        "--large-where",
        choices=("both", "in-process", "agent"),
        default="both",
        help="where the large campaign runs (both: in-process, then in the agent)",
    )
    parser.add_argument(
        "--controller-qps",
        type=int,
        help="kube-controller-manager's --kube-api-qps (burst 1.5x; default: its own, 20 after a burst of 30)",
    )
    args = parser.parse_args()
    limit = ClientLimit.of(args.controller_qps)
    runs = [] if args.large_only else [30]
    runs += [] if args.skip_large else [300]
    for size in runs:
        cluster, kubeconfig, nodes = start_cluster(size, limit)
        try:
            if size == 30:
                audit_log = BENCH_DIR / "logs" / "audit.log"
                run_pool(cluster, kubeconfig, nodes, audit_log, args.rounds, args.only or list(AGENTS), limit)
            else:
                where = ("in-process", "agent") if args.large_where == "both" else (args.large_where,)
                run_large(cluster, kubeconfig, nodes, tuple(f"--{w}" for w in where))
        finally:
            cluster.close()
            if not args.keep:
                subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
