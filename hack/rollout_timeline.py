#!/usr/bin/env python3
"""Where an image change's time goes: the stages of one run of each way, side by side (issue 21).

The workload of `hack/bench_rollout.py --only-user` (100 replicas, maxSurge 25%,
maxUnavailable 25%, pods Ready 1 s after they start): `kubectl set image` +
`kubectl rollout status` (the Deployment controller) against `kubectl
rollout-plus set image --agent` (the warm command server, the job in the
agent). Each run watches the namespace's pods and ReplicaSets from just before
the first command starts and reads the audit log's requests of the run; every
stage is printed in seconds from the first command's start, ours beside the
controller's, per run and as medians. The machine is shared: read the shape
over several runs, not one figure.

The ReplicaSet controller makes every pod of both ways, at kube-controller-
manager's client limit (20 requests a second after a burst of 30): the rows
"RS controller" show its requests in the run and the floor that pace sets
for them, a bound on both ways' end that neither driver can move.

    .venv/bin/python hack/rollout_timeline.py [--runs 3] [--kubeconfig PATH --audit-log PATH] [--requests]

Without --kubeconfig it starts a cluster of its own (8 kwok nodes, an audit log
written synchronously) and takes it down at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hack"))
sys.path.insert(0, str(ROOT))

import bench_rollout as bench  # noqa: E402
from bench_support import RS_CONTROLLER, audit_time, bench_cluster, pace_floor, user_environment  # noqa: E402
from kubernetes import client, config  # noqa: E402
from kubernetes.watch.watch import iter_resp_lines  # noqa: E402

TIMELINE_DIR = ROOT / ".cluster" / "rollout-timeline"
WAYS = ("kubectl", "warm")
OURS = "kubectl-rollout-plus/"


@dataclass
class Seen:
    """What the watches saw, each with the time (epoch seconds) it was seen."""

    pod_added: dict[str, tuple[float, str]] = field(default_factory=dict)  # name -> (when, template hash)
    pod_ready: dict[str, float] = field(default_factory=dict)
    pod_terminating: dict[str, float] = field(default_factory=dict)
    pod_gone: dict[str, float] = field(default_factory=dict)
    pod_hash: dict[str, str] = field(default_factory=dict)
    rs_scaled: list[tuple[float, str, int]] = field(default_factory=list)  # (when, hash, spec.replicas)
    rs_status: list[tuple[float, str, str]] = field(default_factory=list)  # (when, hash, "replicas/ready/available")
    old_hashes: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


class RawWatch:
    """A watch of one collection as JSON lines, from a list's resourceVersion; ``on_event`` sees each."""

    def __init__(self, api: client.ApiClient, path: str, on_event: Any) -> None:
        self.api = api
        self.path = path
        self.on_event = on_event
        listed = self._get(path, {})
        self.items: list[dict[str, Any]] = json.loads(listed.data)["items"]
        self.version = json.loads(listed.data)["metadata"]["resourceVersion"]
        self.response = self._get(
            path, {"watch": "1", "resourceVersion": self.version, "timeoutSeconds": "900"}, stream=True
        )
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _get(self, path: str, query: dict[str, str], *, stream: bool = False) -> Any:
        return self.api.call_api(
            path,
            "GET",
            query_params=list(query.items()),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=None if stream else 30,
        )

    def _run(self) -> None:
        try:
            for line in iter_resp_lines(self.response):
                self.on_event(time.time(), json.loads(line))
        except Exception:  # closed by stop()
            return

    def stop(self) -> None:
        """Shut the socket down first: closing a response another thread reads from blocks on its lock."""
        sock = getattr(getattr(self.response, "connection", None), "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(5)
        with contextlib.suppress(Exception):
            self.response.release_conn()


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def watch_namespace(api: client.ApiClient, ns: str, seen: Seen) -> list[RawWatch]:
    def on_pod(when: float, event: dict[str, Any]) -> None:
        pod = event["object"]
        name = pod["metadata"]["name"]
        template_hash = (pod["metadata"].get("labels") or {}).get("pod-template-hash", "")
        with seen.lock:
            seen.pod_hash[name] = template_hash
            seen.pod_added.setdefault(name, (when, template_hash))
            if ready(pod):
                seen.pod_ready.setdefault(name, when)
            if pod["metadata"].get("deletionTimestamp"):
                seen.pod_terminating.setdefault(name, when)
            if event["type"] == "DELETED":
                seen.pod_gone.setdefault(name, when)

    def on_rs(when: float, event: dict[str, Any]) -> None:
        rs = event["object"]
        template_hash = (rs["metadata"].get("labels") or {}).get("pod-template-hash", "")
        with seen.lock:
            seen.rs_scaled.append((when, template_hash, int((rs.get("spec") or {}).get("replicas") or 0)))
            status = rs.get("status") or {}
            counts = "/".join(str(status.get(k, 0)) for k in ("replicas", "readyReplicas", "availableReplicas"))
            seen.rs_status.append((when, template_hash, counts))

    replica_sets = RawWatch(api, f"/apis/apps/v1/namespaces/{ns}/replicasets", on_rs)
    seen.old_hashes = {(rs["metadata"].get("labels") or {}).get("pod-template-hash", "") for rs in replica_sets.items}
    pods = RawWatch(api, f"/api/v1/namespaces/{ns}/pods", on_pod)
    return [replica_sets, pods]


def audit_entries(path: Path, offset: int, ns: str, since: float, until: float) -> list[dict[str, Any]]:
    """The run's requests: the namespace's, and the drivers' own anywhere (permission reviews are cluster-wide)."""
    entries = []
    with path.open() as lines:
        lines.seek(offset)
        for line in lines:
            entry = json.loads(line)
            if entry.get("stage") != "ResponseComplete":
                continue
            received = audit_time(entry["requestReceivedTimestamp"])
            if not since - 0.05 <= received <= until + 1:
                continue
            agent = entry.get("userAgent", "")
            in_ns = (entry.get("objectRef") or {}).get("namespace") == ns
            if in_ns or agent.startswith(OURS) or agent.startswith("kubectl/"):
                entries.append(entry)
    return entries


def driver_of(way: str) -> Any:
    if way == "kubectl":
        return lambda e: e.get("user", {}).get("username") == bench.CONTROLLER
    return lambda e: e.get("userAgent", "").startswith(OURS)


def stages(way: str, started: float, ended: float, seen: Seen, entries: list[dict[str, Any]]) -> dict[str, float]:
    """Each stage's time from the first command's start (seconds); counts as plain numbers."""
    out: dict[str, float] = {}
    command = (lambda e: e.get("userAgent", "").startswith("kubectl/")) if way == "kubectl" else driver_of(way)
    driver = driver_of(way)

    def first(pred: Any) -> float | None:
        times = [audit_time(e["requestReceivedTimestamp"]) for e in entries if pred(e)]
        return min(times) - started if times else None

    def resource(e: dict[str, Any]) -> str:
        ref = e.get("objectRef") or {}
        return str(ref.get("resource", "")) + ("/" + ref["subresource"] if ref.get("subresource") else "")

    def done(e: dict[str, Any]) -> float:
        return audit_time(e["stageTimestamp"]) - started

    put = out.__setitem__
    if (value := first(command)) is not None:
        put("first request of the command", value)
    writes = [e for e in entries if e.get("verb") in ("create", "update", "patch", "delete")]

    def workload_writes(by: Any, kubectl_resource: str, our_verb: str) -> list[dict[str, Any]]:
        """``by``'s writes of the workload: the Deployment's ``kubectl_resource``, or our record's ``our_verb``."""
        if way == "kubectl":
            return [e for e in writes if by(e) and resource(e) == kubectl_resource]
        return [e for e in writes if by(e) and resource(e) == "configmaps" and e.get("verb") == our_verb]

    spec_change = workload_writes(command, "deployments", "update")
    if spec_change:
        put("spec change written", done(spec_change[0]))
    creates = [
        e
        for e in writes
        if driver(e) and resource(e) == "replicasets" and e.get("verb") == "create" and "dryRun" not in e["requestURI"]
    ]
    made = [e for e in creates if (e.get("responseStatus") or {}).get("code") == 201]
    if made:
        put("new RS created", done(made[0]))
    with seen.lock:
        new_pods = {n: t for n, (t, h) in seen.pod_added.items() if h not in seen.old_hashes}
        old_pods = {n for n, h in seen.pod_hash.items() if h in seen.old_hashes}
        new_ready = [seen.pod_ready[n] for n in new_pods if n in seen.pod_ready]
        old_terminating = [seen.pod_terminating[n] for n in old_pods if n in seen.pod_terminating]
        old_gone = [seen.pod_gone[n] for n in old_pods if n in seen.pod_gone]
        old_zero = [t for t, h, r in seen.rs_scaled if h in seen.old_hashes and r == 0]
    if new_pods:
        put("first new pod (watch)", min(new_pods.values()) - started)
    if new_ready:
        put("first new pod Ready", min(new_ready) - started)
        put("last new pod Ready", max(new_ready) - started)
    scale_writes = [
        e for e in writes if driver(e) and resource(e) in ("replicasets", "replicasets/scale") and e["verb"] != "create"
    ]
    if old_zero:
        put("old RS at 0 (watch)", min(old_zero) - started)
    if scale_writes:
        put("last RS write by the driver", max(done(e) for e in scale_writes))
    if old_terminating:
        put("last old pod terminating", max(old_terminating) - started)
    if old_gone:
        put("last old pod gone", max(old_gone) - started)
    status_writes = workload_writes(driver, "deployments/status", "patch")
    if status_writes:
        put("last status write", max(done(e) for e in status_writes))
    rs_status = [
        e for e in writes if e.get("user", {}).get("username") == RS_CONTROLLER and resource(e) == "replicasets/status"
    ]
    if rs_status:
        put("last RS status write (RS controller)", max(done(e) for e in rs_status))
    # The ReplicaSet controller makes every pod of both ways and is the cluster's pace: kube-controller-manager's
    # client sends a burst, then 20 requests a second. Its requests of the run until the command's exit, from
    # its first, cannot end sooner than this floor (bench_support.pace_floor).
    rs_controller = sorted(
        audit_time(e["requestReceivedTimestamp"])
        for e in entries
        if e.get("user", {}).get("username") == RS_CONTROLLER
        and (e.get("objectRef") or {}).get("namespace")
        and started <= audit_time(e["requestReceivedTimestamp"]) <= ended
    )
    floor = pace_floor(rs_controller)
    if floor is not None:
        put("RS controller: first request", rs_controller[0] - started)
        put("RS controller: its pace's floor for them", floor - started)
        put("RS controller: last request", rs_controller[-1] - started)
        put("#RS controller requests", float(len(rs_controller)))
        put("#RS status writes (RS controller)", float(len(rs_status)))
    lease = [e for e in writes if driver(e) and resource(e) == "leases"]
    if lease:
        put("last Lease write", max(done(e) for e in lease))
    last = [audit_time(e["stageTimestamp"]) for e in entries if driver(e) or command(e)]
    if last:
        put("last request of the driver/command", max(last) - started)
    put("exit", ended - started)
    if new_ready:
        put("exit - last new pod Ready", ended - max(new_ready))
    put("#status writes", float(len(status_writes)))
    put("#RS creates (409s)", float(len(creates) - len(made)))
    put("#RS writes", float(len(scale_writes)))
    put("#driver requests", float(len({e["auditID"] for e in entries if driver(e)})))
    put("#command requests", float(len({e["auditID"] for e in entries if command(e)})))
    return out


def journal_stages(agent_env: dict[str, str], started: float) -> dict[str, float]:
    """The agent's side of a warm run, from its journal: the job's creation, start, events and end."""
    path = Path(agent_env["ROLLOUT_PLUS_AGENT_DIR"]) / "state" / "journal.sqlite3"
    out: dict[str, float] = {}
    with contextlib.closing(sqlite3.connect(path)) as db:
        row = db.execute("SELECT id, created_at, finished_at FROM jobs ORDER BY created_at DESC LIMIT 1").fetchone()
        if row is None:
            return out
        job, created, finished = row
        out["agent: job created"] = created - started
        wanted = {"JobStarted", "SpecChanged", "ReplicaSetCreated", "RolloutFinished", "JobFinished"}
        for kind, body in db.execute("SELECT type, body FROM events WHERE job = ? ORDER BY seq", (job,)):
            if kind in wanted and f"agent: {kind}" not in out:
                out[f"agent: {kind}"] = audit_time(json.loads(body)["at"]) - started
        if finished is not None:
            out["agent: job finished (journal)"] = finished - started
    return out


def requests_listing(way: str, started: float, entries: list[dict[str, Any]]) -> None:
    driver, kubectl = driver_of(way), (lambda e: e.get("userAgent", "").startswith("kubectl/"))
    for e in sorted(entries, key=lambda e: e["requestReceivedTimestamp"]):
        if not (driver(e) or (way == "kubectl" and kubectl(e))):
            continue
        ref = e.get("objectRef") or {}
        what = ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else "")
        code = (e.get("responseStatus") or {}).get("code")
        received = audit_time(e["requestReceivedTimestamp"]) - started
        completed = audit_time(e["stageTimestamp"]) - started
        print(f"    {received:7.3f} {completed:7.3f} {e['verb']:7s} {what:24s} {ref.get('name', ''):28s} {code}")


def steps_listing(way: str, started: float, seen: Seen, entries: list[dict[str, Any]]) -> None:
    """The rhythm of the rollout: each ReplicaSet size and status (replicas/ready/available) the watch saw change,
    old or new, and when the ReplicaSet controller's status writes were received, in time order."""
    rows: list[tuple[float, str]] = []
    with seen.lock:
        sizes: dict[str, int] = {}
        for when, template_hash, replicas in seen.rs_scaled:
            if sizes.get(template_hash) != replicas:
                rows.append((when - started, f"spec    {_side(seen, template_hash)} -> {replicas}"))
            sizes[template_hash] = replicas
        statuses: dict[str, str] = {}
        for when, template_hash, counts in seen.rs_status:
            if statuses.get(template_hash) != counts:
                rows.append((when - started, f"status  {_side(seen, template_hash)} {counts}"))
            statuses[template_hash] = counts
    writes = [
        audit_time(e["requestReceivedTimestamp"]) - started
        for e in entries
        if e.get("user", {}).get("username") == RS_CONTROLLER
        and (e.get("objectRef") or {}).get("subresource") == "status"
    ]
    rows += [(when, "  (RS controller status write received)") for when in writes]
    print(f"  -- {way}: steps ({len(writes)} RS status writes)")
    for when, what in sorted(rows):
        print(f"    {when:7.3f} {what}")


def _side(seen: Seen, template_hash: str) -> str:
    return "old" if template_hash in seen.old_hashes else "new"


def run_once(
    api: client.ApiClient,
    cluster: Any,
    kubeconfig: Path,
    audit: Path,
    tmp: Path,
    ns: str,
    way: str,
    agent_env: dict[str, str],
    listing: bool,
    steps: bool,
) -> dict[str, float]:
    bench.namespace(cluster, ns)
    if way == "kubectl":
        cluster.apps.create_namespaced_deployment(ns, bench.manifest("web", 100, "registry.example/web:v1"))
        bench.wait_controller(cluster, ns, "web", 100)
    else:
        bench.managed(kubeconfig, ns, bench.manifest("web", 100, "registry.example/web:v1"), tmp)
    time.sleep(2)
    env = user_environment(KUBECONFIG=str(kubeconfig))
    new = "app=registry.example/web:v2"
    if way == "kubectl":
        commands = [
            [str(bench.KUBECTL), "set", "image", "deployment/web", new, "-n", ns],
            [str(bench.KUBECTL), "rollout", "status", "deployment/web", "-n", ns, "--timeout", "10m"],
        ]
    else:
        env = {**env, **agent_env}
        commands = [[str(bench.PLUGIN), "set", "image", "web", new, "-n", ns, "--agent"]]
    seen = Seen()
    watches = watch_namespace(api, ns, seen)
    offset = audit.stat().st_size
    time.sleep(0.5)
    started = time.time()
    for command in commands:
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ended = time.time()
    time.sleep(1.5)  # the watches and the audit log catch up
    for w in watches:
        w.stop()
    entries = audit_entries(audit, offset, ns, started, ended)
    if listing:
        print(f"  -- {way} {ns}: requests (received, completed, verb, resource, name, code)")
        requests_listing(way, started, entries)
    if steps:
        steps_listing(way, started, seen, entries)
    cluster.core.delete_namespace(ns)
    found = stages(way, started, ended, seen, entries)
    if way == "warm":
        found.update(journal_stages(agent_env, started))
    return found


def print_table(title: str, results: dict[str, list[dict[str, float]]]) -> None:
    names: list[str] = []
    for runs in results.values():
        for run in runs:
            names += [n for n in run if n not in names]

    def when(name: str) -> tuple[bool, float]:
        values = [run[name] for runs in reversed(results.values()) for run in runs if name in run]
        return (name.startswith("#") or name.startswith("exit -"), values[0] if values else 0.0)

    names.sort(key=when)
    print(f"\n{title}")
    print(f"{'stage (s from the first command start)':40s} " + " ".join(f"{w:>24s}" for w in results))
    for name in names:
        cells = []
        for runs in results.values():
            values = [run[name] for run in runs if name in run]
            if not values:
                cells.append(f"{'-':>24s}")
                continue
            digits = 0 if name.startswith("#") else 3
            each = "/".join(f"{v:.{digits}f}" for v in values)
            cells.append(f"{each:>24s}" if len(values) == 1 else f"{statistics.median(values):7.{digits}f} [{each}]")
        print(f"{name:40s} " + " ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kubeconfig", type=Path, help="a running cluster started with --audit")
    parser.add_argument("--audit-log", type=Path, help="its audit log (with --kubeconfig)")
    parser.add_argument("--requests", action="store_true", help="also list each run's driver requests")
    parser.add_argument("--steps", action="store_true", help="also list each run's ReplicaSet sizes and status writes")
    args = parser.parse_args()
    if args.kubeconfig is not None and args.audit_log is None:
        parser.error("--kubeconfig needs --audit-log")
    kubeconfig, started_cluster = bench_cluster(
        args.kubeconfig, TIMELINE_DIR, ("--nodes", "8", "--audit", "--apiserver-arg=--audit-log-mode=blocking")
    )
    audit = TIMELINE_DIR / "logs" / "audit.log" if started_cluster else args.audit_log
    cluster = bench.connect(bench.ConnectionSettings(kubeconfig=str(kubeconfig)))
    api = config.new_client_from_config(str(kubeconfig))
    api.user_agent = "rollout-timeline"
    tmp = Path(kubeconfig).parent / "timeline-manifests"
    tmp.mkdir(exist_ok=True)
    agent_env = bench.start_agent()
    results: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    stamp = int(time.time()) % 100000
    try:
        with open("/proc/loadavg") as load:
            print(f"load average at the start: {load.read().split()[0]}")
        for run in range(args.runs):
            order = WAYS if run % 2 == 0 else WAYS[::-1]
            for way in order:
                ns = f"tl-{stamp}-{way}-{run}"
                results[way].append(
                    run_once(api, cluster, kubeconfig, audit, tmp, ns, way, agent_env, args.requests, args.steps)
                )
                print(f"  run {run + 1} {way:8s} exit at {results[way][-1]['exit']:6.2f} s", flush=True)
        with open("/proc/loadavg") as load:
            print(f"load average at the end: {load.read().split()[0]}")
        print_table("medians [each run]", results)
    finally:
        subprocess.run(
            [str(bench.PLUGIN), "agent", "stop"], env=user_environment(**agent_env), stdout=subprocess.DEVNULL
        )
        cluster.close()
        if started_cluster:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(TIMELINE_DIR)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
