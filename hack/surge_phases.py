#!/usr/bin/env python3
"""Where a surge drain's time goes: one `drain --surge` (or plain `drain`), timed phase by phase.

Packs 3 Deployments x 10 pods (Ready 1 s after start) onto one node under a
PDB (``--pdb maxUnavailable=1`` or ``--pdb minAvailable=9``), drains it with
``-o jsonl`` and reads two clocks that agree (same machine): the drain's own
events (cordon, surge raised, surge Ready, each eviction accepted, each pod
gone, restore) and the API server's audit log (each eviction request with its
answer and server-side duration, each replica count change, each PDB status
write of the disruption controller with its disruptionsAllowed, pods created
by the ReplicaSet controller: churn). Prints a timeline per Deployment and a
phase breakdown.

    .venv/bin/python hack/surge_phases.py --kubeconfig DIR/kubeconfig --audit DIR/logs/audit.log [--plain]

The cluster must write an audit log at RequestResponse level for
poddisruptionbudgets/status and Request level for Deployment patches (bench
policy below); ``--up DIR`` starts such a private cluster and stops it after.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack"))

from bench_drain import prepare  # noqa: E402
from bench_support import audit_time, completed_requests  # noqa: E402

from kubectl_rollout.kube.cluster_access import ConnectionSettings, connect  # noqa: E402

PLUGIN = Path(sys.executable).parent / "kubectl-rollout_plus"
APPS = ["web", "api", "db"]

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "RequestResponse", "resources": [{"group": "policy", "resources": ["poddisruptionbudgets/status"]}]},
        {
            "level": "Request",
            "verbs": ["patch", "update"],
            "resources": [{"group": "apps", "resources": ["deployments"]}],
        },
        {"level": "Metadata"},
    ],
}


def _app(name: str) -> str | None:
    return next((a for a in APPS if name == a or name.startswith(f"{a}-")), None)


def audit_timeline(audit_log: Path, namespace: str) -> list[tuple[float, str, str]]:
    """(time, app, what) from the audit log, for the namespace."""
    rows: list[tuple[float, str, str]] = []
    for entry in completed_requests(audit_log, namespace):
        ref = entry.get("objectRef") or {}
        app = _app(ref.get("name", ""))
        received, done = audit_time(entry["requestReceivedTimestamp"]), audit_time(entry["stageTimestamp"])
        code = (entry.get("responseStatus") or {}).get("code")
        agent = entry.get("userAgent", "").split("/")[0]
        resource, sub, verb = ref.get("resource"), ref.get("subresource"), entry.get("verb")
        if resource == "pods" and sub == "eviction":
            rows.append((done, app or "?", f"eviction {ref['name'][-5:]} -> {code} (server {done - received:.3f}s)"))
        elif resource == "poddisruptionbudgets" and sub == "status" and verb in ("update", "patch"):
            status = (entry.get("responseObject") or {}).get("status") or {}
            if (entry.get("responseObject") or {}).get("kind") != "PodDisruptionBudget":
                continue
            rows.append(
                (
                    done,
                    app or "?",
                    f"pdb status by {agent}: allowed {status.get('disruptionsAllowed')} healthy "
                    f"{status.get('currentHealthy')} desired {status.get('desiredHealthy')} expected "
                    f"{status.get('expectedPods')} disrupted {len(status.get('disruptedPods') or {})}",
                )
            )
        elif resource == "deployments" and verb == "patch" and not sub:
            operations = entry.get("requestObject")
            replicas = [
                op.get("value")
                for op in (operations if isinstance(operations, list) else [])
                if op.get("path") == "/spec/replicas" and op.get("op") == "replace"
            ]
            what = f"replicas -> {replicas[0]}" if replicas else "labels only (the record)"
            rows.append((done, app or "?", f"deployment patch by {agent} -> {code}: {what}"))
        elif resource == "pods" and verb == "create" and not sub and agent == "kube-controller-manager":
            rows.append((done, app or "?", "pod created by the ReplicaSet controller"))
    return sorted(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("--audit", type=Path)
    parser.add_argument("--up", type=Path, help="start a private cluster in this folder (and stop it after)")
    parser.add_argument(
        "--pdb", default="maxUnavailable=1", help="maxUnavailable=1 or minAvailable=9 (default the first)"
    )
    parser.add_argument("--plain", action="store_true", help="drain without --surge, for comparison")
    parser.add_argument("--timeline", action="store_true", help="print every row, not only the phases")
    parser.add_argument("--extra", default="", help="more drain flags, space separated")
    args = parser.parse_args()
    if args.up:
        policy = args.up.parent / f"{args.up.name}-audit-policy.json"
        policy.write_text(json.dumps(AUDIT_POLICY))
        up = subprocess.run(
            [
                sys.executable,
                str(ROOT / "hack" / "cluster.py"),
                "up",
                "--dir",
                str(args.up),
                "--nodes",
                "4",
                "--audit",
                f"--apiserver-arg=--audit-policy-file={policy}",
                "--apiserver-arg=--audit-log-mode=blocking",
            ],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        args.kubeconfig = Path(up.stdout.strip().splitlines()[-1])
        args.audit = args.up / "logs" / "audit.log"
    try:
        return run(args)
    finally:
        if args.up:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(args.up)])


def run(args: argparse.Namespace) -> int:
    key, value = args.pdb.split("=")
    spec = {key: int(value) if value.isdigit() else value}
    cluster = connect(ConnectionSettings(kubeconfig=str(args.kubeconfig)))
    nodes = sorted(n.metadata.name for n in cluster.core.list_node().items)
    target = nodes[0]
    namespace = f"phases-{int(time.time())}"
    prepare(cluster, namespace, [target], nodes, APPS, replicas=10, max_unavailable=1, ready_after="1s")
    for app in APPS:
        cluster.policy.patch_namespaced_pod_disruption_budget(
            app,
            namespace,
            [{"op": "replace", "path": "/spec", "value": {**spec, "selector": {"matchLabels": {"app": app}}}}],
        )
    time.sleep(2)
    command = [str(PLUGIN), "drain", target, "--ignore-daemonsets", "--in-process", "-o", "jsonl", "--timeout=300s"]
    command += [] if args.plain else ["--surge"]
    command += args.extra.split()
    env = {**os.environ, "KUBECONFIG": str(args.kubeconfig)}
    t0 = time.time()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    t_end = time.time()
    time.sleep(2)  # the audit log is written
    events: list[tuple[float, str, str]] = []
    for line in result.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        at = audit_time(event["at"])
        kind = event["type"]
        pod = (event.get("pod") or {}).get("name", "")
        workload = (event.get("workload") or {}).get("name", "")
        app = _app(pod or workload) or "-"
        detail = {
            k: v for k, v in event.items() if k not in ("schema", "job", "seq", "at", "type", "pod", "workload", "pods")
        }
        events.append((at, app, f"[ours] {kind} {pod[-5:]} {json.dumps(detail)[:110]}"))
    rows = sorted(events + audit_timeline(args.audit, namespace))
    if args.timeline:
        for at, app, what in rows:
            print(f"{at - t0:7.3f} {app:4s} {what}")
    kind = "plain" if args.plain else "surge"
    print(f"\n== {kind} drain, PDB {args.pdb}: {t_end - t0:.2f} s wall (exit {result.returncode}) ==")
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    per_app: dict[str, list[float]] = defaultdict(list)
    for at, app, what in rows:
        tag = what.split(" (")[0]
        for name in (
            "NodeCordoned",
            "SurgeStarted",
            "SurgeReady",
            "NodeDrainStarted",
            "PodEvicted",
            "PodGone",
            "SurgeRestored",
            "DrainFinished",
            "-> 429",
            "-> 201",
            "pod created by",
        ):
            if name in tag:
                first.setdefault(name, at)
                last[name] = at
        if "-> 201" in what:
            per_app[app].append(at)
    for name in sorted(first, key=lambda n: first[n]):
        print(f"  {name:18s} first {first[name] - t0:7.3f}  last {last[name] - t0:7.3f}")
    for app, times in sorted(per_app.items()):
        gaps = [b - a for a, b in itertools.pairwise(times)]
        print(
            f"  {app}: {len(times)} evictions accepted from {times[0] - t0:.3f} to {times[-1] - t0:.3f}; "
            f"gaps {', '.join(f'{g:.2f}' for g in gaps)}"
        )
    churn = sum(1 for _, _, w in rows if "pod created by" in w)
    print(f"  pods created by the ReplicaSet controller during the drain: {churn}")
    print(f"  429s: {sum(1 for _, _, w in rows if '-> 429' in w)}")
    cluster.core.delete_namespace(namespace)
    cluster.core.patch_node(target, {"spec": {"unschedulable": None}})
    if result.returncode:
        print(result.stderr[-2000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
