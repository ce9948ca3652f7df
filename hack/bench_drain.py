#!/usr/bin/env python3
"""Benchmark: `kubectl drain` against `kubectl rollout-plus drain`, side by side on one cluster.

Scenario 1 (the issue's): a node holding 30 pods of 3 Deployments x 10
replicas, each under a PDB with maxUnavailable 1, pods Ready 1 s after they
start. Both tools drain identical nodes, --rounds times each (default 3),
alternating which goes first. Printed per run and as medians: wall times,
their ratio, the API requests each made (from the API server's audit log, by
user agent), each tool's reaction (from the PDB status write that allowed a
disruption, as the audit log recorded it, to the tool's next accepted
eviction of that PDB's pods: p50, p95, and its share of the drain), and the
lower bound: R - 1 replacement waits x a replacement's time to Ready.

Scenario 2: 500 pods on 5 nodes, drained by rollout-plus; time and peak RSS.

    .venv/bin/python hack/bench_drain.py [--skip-large]

It starts its own cluster in .cluster/bench (with an audit log) and stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import watch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack"))

from bench_support import audit_requests, audit_time, completed_requests, timed  # noqa: E402

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


AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        # the PDBs' status as the disruption controller wrote it: when each one allowed a disruption again
        {"level": "RequestResponse", "resources": [{"group": "policy", "resources": ["poddisruptionbudgets/status"]}]},
        {"level": "Metadata"},
    ],
}


def reactions(audit_log: Path, namespace: str, apps: list[str], agent: str, since: float, until: float) -> list[float]:
    """For each time a PDB of ``namespace`` went from allowing no disruption to allowing one (the API
    server's record of the disruption controller's status write), seconds until the tool's next accepted
    eviction of that PDB's pods: the tool's reaction. Allowances no eviction followed (the drain's end)
    are left out."""
    allowed: dict[str, list[tuple[float, float]]] = {app: [] for app in apps}
    before: dict[str, int] = {}
    evictions: dict[str, list[float]] = {app: [] for app in apps}
    for entry in completed_requests(audit_log, namespace):
        ref = entry.get("objectRef") or {}
        if ref.get("resource") == "poddisruptionbudgets" and ref.get("subresource") == "status":
            answer = entry.get("responseObject") or {}
            if answer.get("kind") != "PodDisruptionBudget":
                continue  # a refused write (a conflict's Status): nothing changed
            now = int((answer.get("status") or {}).get("disruptionsAllowed", 0))
            if now > 0 and before.get(ref["name"], 0) == 0:
                # received and completed: the write is visible (to watches) somewhere in between
                allowed[ref["name"]].append(
                    (audit_time(entry["requestReceivedTimestamp"]), audit_time(entry["stageTimestamp"]))
                )
            before[ref["name"]] = now
        elif (
            ref.get("subresource") == "eviction"
            and entry.get("userAgent", "").startswith(agent)
            and (entry.get("responseStatus") or {}).get("code") == 201
        ):
            app = next((a for a in apps if ref.get("name", "").startswith(f"{a}-")), None)
            if app is not None:
                evictions[app].append(audit_time(entry["requestReceivedTimestamp"]))
    found = []
    for app in apps:
        for received, completed in allowed[app]:
            if not since <= completed <= until:
                continue
            # A watch may deliver the new status before the write's own answer is complete, so the
            # eviction it let through can arrive before `completed`: that counts as no delay at all.
            after = [t for t in evictions[app] if t >= received]
            if after:
                found.append(max(0.0, min(after) - completed))
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))] if ordered else float("nan")


def drain_once(
    cluster: Cluster, kubeconfig: Path, tool: str, target: str, nodes: list[str], audit_log: Path, run: int
) -> dict[str, Any]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    apps = ["web", "api", "db"]
    namespace = f"bench-{tool}-{run}"
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
    time.sleep(3)  # the last replacements become Ready
    latency.stop()
    reacted = reactions(audit_log, namespace, apps, agent, since, until)
    result = {
        "seconds": elapsed,
        "requests": audit_requests(audit_log, since, until, agent=agent),
        "ready_latency": statistics.median(latency.latencies) if latency.latencies else float("nan"),
        "reactions": reacted,
        # the PDBs' chains run side by side: our part of the wall time is one chain's sum of reactions
        "our_share": (sum(reacted) / len(apps)) / elapsed if reacted else float("nan"),
    }
    cluster.core.delete_namespace(namespace)
    cluster.core.patch_node(target, {"spec": {"unschedulable": None}})
    return result


def pdb_scenario(
    cluster: Cluster, kubeconfig: Path, nodes: list[str], audit_log: Path, rounds: int
) -> dict[str, list[dict[str, Any]]]:
    """``rounds`` drains by each tool on identical nodes (a fresh namespace each), alternating which goes first."""
    results: dict[str, list[dict[str, Any]]] = {"kubectl": [], "rollout-plus": []}
    for run in range(rounds):
        order = ["kubectl", "rollout-plus"] if run % 2 == 0 else ["rollout-plus", "kubectl"]
        for tool in order:
            target = nodes[0] if tool == "kubectl" else nodes[1]
            results[tool].append(drain_once(cluster, kubeconfig, tool, target, nodes, audit_log, run))
            last = results[tool][-1]
            print(
                f"  run {run + 1} {tool:12s} {last['seconds']:6.2f} s  {last['requests']:4d} requests  "
                f"reaction p50 {percentile(last['reactions'], 0.5) * 1000:6.1f} ms "
                f"p95 {percentile(last['reactions'], 0.95) * 1000:7.1f} ms  share {last['our_share'] * 100:4.1f} %",
                flush=True,
            )
    return results


def _drain_once(
    cluster: Cluster,
    kubeconfig: Path,
    nodes: list[str],
    audit_log: Path,
    *,
    tool: str,
    namespace: str,
    replicas: int,
    apps: list[str],
    pdb_spec: dict[str, Any],
    timeout: str,
) -> dict[str, Any]:
    """Pack the apps onto one node, drain it with ``tool``; seconds, whether it finished, API requests."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    target = nodes[0]
    prepare(cluster, namespace, [target], nodes, apps, replicas=replicas, max_unavailable=1, ready_after="1s")
    for app in apps:
        cluster.policy.patch_namespaced_pod_disruption_budget(
            app,
            namespace,
            [{"op": "replace", "path": "/spec", "value": {**pdb_spec, "selector": {"matchLabels": {"app": app}}}}],
        )
    time.sleep(2)
    if tool == "kubectl":
        command = [str(KUBECTL), "drain", target, "--ignore-daemonsets", f"--timeout={timeout}"]
        agent = "kubectl/"
    else:
        command = [str(PLUGIN), "drain", target, "--ignore-daemonsets", f"--timeout={timeout}", "--in-process"]
        command += ["--surge"] if tool == "surge" else []
        agent = "kubectl-rollout-plus/"
    since = time.time()
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.monotonic() - started
    until = time.time()
    time.sleep(2)  # the audit log's batch is flushed
    requests = audit_requests(audit_log, since, until, agent=agent)
    cluster.core.delete_namespace(namespace)
    cluster.core.patch_node(target, {"spec": {"unschedulable": None}})
    return {"seconds": elapsed, "finished": result.returncode == 0, "requests": requests}


def surge_scenario(
    cluster: Cluster, kubeconfig: Path, nodes: list[str], audit_log: Path, runs: int, *, with_kubectl: bool = True
) -> None:
    """--surge vs plain vs kubectl drain, alternating in each round; medians over the rounds."""
    tools = ["surge", "plain", "kubectl"] if with_kubectl else ["surge", "plain"]
    wide: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
    # the same budget as maxUnavailable 1 of 10, written as minAvailable 9: extra replicas are room at once
    wide_min: dict[str, list[dict[str, Any]]] = {t: [] for t in ("surge", "plain")}
    single: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
    for round_ in range(runs):
        # which tool goes first turns with each round, so none always meets the freshest (or the busiest) cluster
        turn = round_ % len(tools)
        order = tools[turn:] + tools[:turn]
        for tool in [t for t in order if t != "kubectl"]:
            wide_min[tool].append(
                _drain_once(
                    cluster,
                    kubeconfig,
                    nodes,
                    audit_log,
                    tool=tool,
                    namespace=f"min-{tool}-{round_}",
                    replicas=10,
                    apps=["web", "api", "db"],
                    pdb_spec={"minAvailable": 9},
                    timeout="300s",
                )
            )
        for tool in order:
            wide[tool].append(
                _drain_once(
                    cluster,
                    kubeconfig,
                    nodes,
                    audit_log,
                    tool=tool,
                    namespace=f"surge-{tool}-{round_}",
                    replicas=10,
                    apps=["web", "api", "db"],
                    pdb_spec={"maxUnavailable": 1},
                    timeout="300s",
                )
            )
        for tool in order:
            single[tool].append(
                _drain_once(
                    cluster,
                    kubeconfig,
                    nodes,
                    audit_log,
                    tool=tool,
                    namespace=f"one-{tool}-{round_}",
                    replicas=1,
                    apps=["solo"],
                    pdb_spec={"minAvailable": 1},
                    timeout="30s",
                )
            )

    def median(rows: list[dict[str, Any]], key: str) -> float:
        return statistics.median(float(r[key]) for r in rows)

    names = {"surge": "rollout-plus drain --surge", "plain": "rollout-plus drain", "kubectl": "kubectl drain"}
    print(
        f"\n== drain --surge: 30 pods, 3 Deployments x 10, PDB maxUnavailable 1, Ready after 1 s; medians of {runs} =="
    )
    for tool in tools:
        rows = wide[tool]
        print(
            f"{names[tool]:28s}{median(rows, 'seconds'):7.2f} s   {median(rows, 'requests') / 30:6.1f} API requests/pod"
            f"   runs: {', '.join(format(r['seconds'], '.1f') for r in rows)}"
        )
    ratio = median(wide["surge"], "seconds") / median(wide["plain"], "seconds")
    print(f"ratio --surge/plain         {ratio:7.2f}   (target <= 0.4)")
    print(f"\n== the same, PDB minAvailable 9 (the same budget); medians of {runs} ==")
    for tool in ("surge", "plain"):
        rows = wide_min[tool]
        print(
            f"{names[tool]:28s}{median(rows, 'seconds'):7.2f} s   {median(rows, 'requests') / 30:6.1f} API requests/pod"
            f"   runs: {', '.join(format(r['seconds'], '.1f') for r in rows)}"
        )
    ratio = median(wide_min["surge"], "seconds") / median(wide_min["plain"], "seconds")
    print(f"ratio --surge/plain         {ratio:7.2f}   (target <= 0.4)")
    print(f"\n== drain: one replica, PDB minAvailable 1 (--timeout 30s); medians of {runs} ==")
    for tool in tools:
        rows = single[tool]
        done = sum(1 for r in rows if r["finished"])
        state = "drained" if done == len(rows) else f"did not finish in {done}/{len(rows)} runs (timeout 30 s)"
        print(
            f"{names[tool]:28s}{median(rows, 'seconds'):7.2f} s   {state}"
            f"   {median(rows, 'requests'):5.0f} API requests"
        )


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


@dataclass(frozen=True)
class Bench:
    """The bench cluster the scenarios share, with its audit log."""

    cluster: Cluster
    kubeconfig: Path
    nodes: list[str]
    audit_log: Path


def run_pdb(bench: Bench, args: argparse.Namespace) -> None:
    print("\n== drain: 30 pods, 3 Deployments x 10, PDB maxUnavailable 1, Ready 1 s after start ==")
    small = pdb_scenario(bench.cluster, bench.kubeconfig, bench.nodes, bench.audit_log, args.rounds)
    kubectl, plus = small["kubectl"], small["rollout-plus"]

    def median(runs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    # 10 pods per PDB, maxUnavailable 1, the 3 PDBs side by side: the first eviction needs no wait and
    # the last replacement is not waited for, so a drain waits R - 1 = 9 times for a replacement to be
    # Ready. Left out: the disruption controller's recomputation of the PDB status after each Ready
    # (measured below as part of the cluster's share), scheduling, and the last pod's termination.
    waits = 10 - 1
    ready = median(plus, "ready_latency")
    bound = waits * ready
    print(f"\nmedians of {args.rounds} runs each, alternating which tool goes first:")
    for name, runs in (("kubectl drain", kubectl), ("kubectl rollout-plus drain", plus)):
        reacted = [r for run in runs for r in run["reactions"]]
        print(
            f"{name:27s} {median(runs, 'seconds'):7.2f} s   {median(runs, 'requests'):5.0f} API requests   "
            f"reaction to a PDB allowing: p50 {percentile(reacted, 0.5) * 1000:.1f} ms, "
            f"p95 {percentile(reacted, 0.95) * 1000:.1f} ms; share of the drain "
            f"{median(runs, 'our_share') * 100:.1f} %"
        )
    ratio = median(plus, "seconds") / median(kubectl, "seconds")
    print(f"ratio rollout-plus/kubectl  {ratio:7.2f}   (target <= 0.35)")
    print(f"lower bound                 {bound:7.2f} s   ({waits} waits x {ready:.2f} s replacement time to Ready)")
    print(f"ratio rollout-plus/bound    {median(plus, 'seconds') / bound:7.2f}   (target <= 1.25)")
    print("rollout-plus reaction target: p95 <= 25 ms, share <= 3 %")


def run_surge(bench: Bench, args: argparse.Namespace) -> None:
    surge_scenario(
        bench.cluster, bench.kubeconfig, bench.nodes, bench.audit_log, args.rounds, with_kubectl=not args.no_kubectl
    )


def run_large(bench: Bench, args: argparse.Namespace) -> None:
    large = large_scenario(bench.cluster, bench.kubeconfig, bench.nodes)
    print("\n== drain: 500 pods on 5 nodes, 10 Deployments x 50, PDB maxUnavailable 20% ==")
    print(
        f"kubectl rollout-plus drain  {large['seconds']:7.2f} s   peak RSS {large['peak_rss_mib']:.0f} MiB"
        f"   {large['evicted']} pods evicted"
    )


@dataclass(frozen=True)
class Scenario:
    name: str
    #: runs it on the bench cluster and prints its figures
    run: Callable[[Bench, argparse.Namespace], None]
    #: the options (argparse dests) any of which leaves it out
    skipped_by: tuple[str, ...] = ()
    #: the option it needs, if it runs only when asked for
    only_with: str | None = None

    def wanted(self, args: argparse.Namespace) -> bool:
        if self.only_with is not None and not getattr(args, self.only_with):
            return False
        return not any(getattr(args, option) for option in self.skipped_by)


#: in the order they run; --surge-only runs the surge comparison alone
SCENARIOS = (
    Scenario("pdb", run_pdb, skipped_by=("surge_only",)),
    Scenario("surge", run_surge, only_with="surge_only"),
    Scenario("large", run_large, skipped_by=("surge_only", "skip_large")),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-large", action="store_true", help="skip the 500-pod scenario")
    parser.add_argument("--keep", action="store_true", help="leave the bench cluster running")
    parser.add_argument("--rounds", type=int, default=3, help="drains by each tool, alternating (>= 3)")
    parser.add_argument(
        "--surge-only", action="store_true", help="only --surge vs plain vs kubectl drain (3x10 pods; one replica)"
    )
    parser.add_argument("--no-kubectl", action="store_true", help="leave kubectl drain out of the --surge comparison")
    args = parser.parse_args()

    # beside the cluster's directory, which `up` starts afresh
    policy = BENCH_DIR.parent / "bench-drain-audit-policy.json"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text(json.dumps(AUDIT_POLICY))
    up = subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack" / "cluster.py"),
            "up",
            "--dir",
            str(BENCH_DIR),
            "--nodes",
            "8",
            "--audit",
            # our policy (PDB status bodies) over the default one; every request written at once, for both tools
            f"--apiserver-arg=--audit-policy-file={policy}",
            "--apiserver-arg=--audit-log-mode=blocking",
        ],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    nodes = sorted(n.metadata.name for n in cluster.core.list_node().items)
    bench = Bench(cluster, kubeconfig, nodes, BENCH_DIR / "logs" / "audit.log")
    try:
        for scenario in SCENARIOS:
            if scenario.wanted(args):
                scenario.run(bench, args)
    finally:
        cluster.close()
        if not args.keep:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
