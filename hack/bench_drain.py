#!/usr/bin/env python3
"""Benchmark: `kubectl drain` against `kubectl rollout-plus drain`, side by side on one cluster.

Scenario 1 (the issue's): a node holding 30 pods of 3 Deployments x 10
replicas, each under a PDB with maxUnavailable 1, pods Ready 1 s after they
start. Both tools drain an identical node in turn. Printed: wall times, their
ratio, the API requests each made (from the API server's audit log, by user
agent), and the lower bound: PDB-serialised waves x a replacement's time to
Ready (measured by a watch during the run).

Scenario 2: 500 pods on 5 nodes, drained by rollout-plus; time and peak RSS.

    .venv/bin/python hack/bench_drain.py [--skip-large]

It starts its own cluster in .cluster/bench (with an audit log) and stops it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import watch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack"))

from bench_support import audit_requests, timed  # noqa: E402

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect  # noqa: E402
from kubectl_rollout.kube.pods import is_ready  # noqa: E402

BENCH_DIR = ROOT / ".cluster" / "bench"
KUBECTL = ROOT / ".bin" / "kubectl"
PLUGIN = Path(sys.executable).parent / "kubectl-rollout_plus"


def deployment(name: str, replicas: int, ready_after: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {"rollout-plus.test/ready-after": ready_after}},
                "spec": {"containers": [{"name": "app", "image": f"registry.example/{name}:v1"}]},
            },
        },
    }


def pdb(name: str, max_unavailable: int | str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": name}}},
    }


def set_cordoned(cluster: Cluster, nodes: list[str], *, cordoned: bool) -> None:
    for node in nodes:
        cluster.core.patch_node(node, {"spec": {"unschedulable": True if cordoned else None}})


def wait_available(cluster: Cluster, namespace: str, names: list[str], replicas: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = cluster.apps.list_namespaced_deployment(namespace).items
        if sum(1 for d in items if d.metadata.name in names and (d.status.available_replicas or 0) == replicas) == len(
            names
        ):
            return
        time.sleep(0.5)
    raise SystemExit(f"deployments in {namespace} did not become available")


def prepare(
    cluster: Cluster,
    namespace: str,
    targets: list[str],
    all_nodes: list[str],
    apps: list[str],
    replicas: int,
    max_unavailable: int | str,
    ready_after: str,
) -> None:
    """Create the workloads with every pod on ``targets``, then let the other nodes take pods again."""
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    for _ in range(100):
        if any(sa.metadata.name == "default" for sa in cluster.core.list_namespaced_service_account(namespace).items):
            break
        time.sleep(0.1)
    others = [n for n in all_nodes if n not in targets]
    set_cordoned(cluster, others, cordoned=True)
    try:
        for app in apps:
            cluster.apps.create_namespaced_deployment(namespace, deployment(app, replicas, ready_after))
        wait_available(cluster, namespace, apps, replicas)
    finally:
        set_cordoned(cluster, others, cordoned=False)
    for app in apps:
        cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb(app, max_unavailable))
    time.sleep(2)  # let the disruption controller fill the budgets' status


class ReadyLatency(threading.Thread):
    """Watches a namespace: for each pod created after start, seconds from ADDED to Ready."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        super().__init__(daemon=True)
        self.cluster, self.namespace = cluster, namespace
        self.first_seen: dict[str, float] = {}
        self.latencies: list[float] = []
        self._watch = watch.Watch()
        listing = cluster.core.list_namespaced_pod(namespace)
        self.known = {p.metadata.name for p in listing.items}
        self.rv = listing.metadata.resource_version

    def run(self) -> None:
        try:
            for event in self._watch.stream(
                self.cluster.core.list_namespaced_pod, self.namespace, resource_version=self.rv, timeout_seconds=900
            ):
                pod = event["object"]
                name = pod.metadata.name
                if name in self.known:
                    continue
                now = time.monotonic()
                self.first_seen.setdefault(name, now)
                ready = is_ready(pod)
                if ready and name not in self.known:
                    self.known.add(name)
                    self.latencies.append(now - self.first_seen[name])
        except Exception:  # stopped
            pass

    def stop(self) -> None:
        self._watch.stop()


def pdb_scenario(cluster: Cluster, kubeconfig: Path, nodes: list[str], audit_log: Path) -> dict[str, Any]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    apps = ["web", "api", "db"]
    results: dict[str, Any] = {}
    for tool, target in (("kubectl", nodes[0]), ("rollout-plus", nodes[1])):
        namespace = f"bench-{tool}"
        prepare(cluster, namespace, [target], nodes, apps, replicas=10, max_unavailable=1, ready_after="1s")
        latency = ReadyLatency(cluster, namespace)
        latency.start()
        if tool == "kubectl":
            command = [str(KUBECTL), "drain", target, "--ignore-daemonsets"]
            agent = "kubectl/"
        else:
            command = [str(PLUGIN), "drain", target, "--ignore-daemonsets"]
            agent = "kubectl-rollout-plus/"
        since = time.time()
        elapsed, _, _ = timed(command, env)
        until = time.time()
        time.sleep(3)  # replacements settle; the audit log's batch is flushed
        latency.stop()
        time.sleep(2)
        results[tool] = {
            "seconds": elapsed,
            "requests": audit_requests(audit_log, since, until, agent=agent),
            "ready_latency": statistics.mean(latency.latencies) if latency.latencies else float("nan"),
        }
        cluster.core.delete_namespace(namespace)
        cluster.core.patch_node(target, {"spec": {"unschedulable": None}})
    return results


def large_scenario(cluster: Cluster, kubeconfig: Path, nodes: list[str]) -> dict[str, Any]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    targets = nodes[:5]
    apps = [f"app{i}" for i in range(10)]
    prepare(cluster, "bench-large", targets, nodes, apps, replicas=50, max_unavailable="20%", ready_after="1s")
    command = [str(PLUGIN), "drain", *targets, "--ignore-daemonsets"]
    elapsed, peak, result = timed(command, env)
    evicted = result.stdout.count(" evicted")
    cluster.core.delete_namespace("bench-large")
    set_cordoned(cluster, targets, cordoned=False)
    return {"seconds": elapsed, "peak_rss_mib": peak / 1024, "evicted": evicted}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-large", action="store_true", help="skip the 500-pod scenario")
    parser.add_argument("--keep", action="store_true", help="leave the bench cluster running")
    args = parser.parse_args()

    up = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "cluster.py"), "up", "--dir", str(BENCH_DIR), "--nodes", "8", "--audit"],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    nodes = sorted(n.metadata.name for n in cluster.core.list_node().items)
    try:
        small = pdb_scenario(cluster, kubeconfig, nodes, BENCH_DIR / "logs" / "audit.log")
        kubectl, plus = small["kubectl"], small["rollout-plus"]
        waves = 10  # 10 pods per PDB, maxUnavailable 1: one pod per PDB at a time, PDBs in parallel
        bound = waves * plus["ready_latency"]
        print("\n== drain: 30 pods, 3 Deployments x 10, PDB maxUnavailable 1, Ready 1 s after start ==")
        print(f"kubectl drain               {kubectl['seconds']:7.2f} s   {kubectl['requests']:5d} API requests")
        print(f"kubectl rollout-plus drain  {plus['seconds']:7.2f} s   {plus['requests']:5d} API requests")
        print(f"ratio rollout-plus/kubectl  {plus['seconds'] / kubectl['seconds']:7.2f}   (target <= 0.35)")
        print(
            f"lower bound                 {bound:7.2f} s   ({waves} waves x {plus['ready_latency']:.2f} s "
            "replacement time to Ready)"
        )
        print(f"ratio rollout-plus/bound    {plus['seconds'] / bound:7.2f}   (target <= 1.25)")
        if not args.skip_large:
            large = large_scenario(cluster, kubeconfig, nodes)
            print("\n== drain: 500 pods on 5 nodes, 10 Deployments x 50, PDB maxUnavailable 20% ==")
            print(
                f"kubectl rollout-plus drain  {large['seconds']:7.2f} s   peak RSS {large['peak_rss_mib']:.0f} MiB"
                f"   {large['evicted']} pods evicted"
            )
    finally:
        cluster.close()
        if not args.keep:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
