#!/usr/bin/env python3
"""Benchmark: a 10-step canary of 100 replicas, and where its time and requests go (issue 23's figures).

A managed workload of 100 replicas (maxSurge 25%, maxUnavailable 25%, pods
Ready 1 s after they start, by kwok's stages) with the steps

    setWeight 10; pause 2s; setWeight 20; pause 2s; ... ; pause 2s; setWeight 100

rolls an image change out as a user does it: `kubectl rollout-plus set image
web app=...` with the user's agent running (the job runs in the agent, the
command follows it to the end; timed pauses need no promote). Beside it, in
the same invocation and alternating which goes first, the same 100 replicas
as a plain Deployment: `kubectl set image` then `kubectl rollout status`
(the server's Deployment controller, no steps), for scale. Each run in a fresh
namespace of one cluster, --rounds times each (default 3).

For the canary, cut at the moments its record says each step began (a watch
of the record ConfigMap; hack/canary_figures.py does the arithmetic):

- the wall time, from the command's start to its exit;
- the timed pauses (what the steps ask for);
- the readiness waits: for each step, from its first scale-up (a ReplicaSet
  seen growing, or a pod seen created) to the last pod created in it seen
  Ready, by a watch of the workload's pods and ReplicaSets: the cluster's
  clock of the critical path, not our logs;
- our overhead = wall - pauses - readiness waits, per step and in total;
- our user agent's requests per step (the audit log, by when the API server
  received each one), by verb and resource.

For the Deployment controller: the wall time (first command's start to last
one's exit) and the deployment-controller's requests (the ReplicaSet
controller's work is alike on both sides and not counted).

Every run is watched from before the change until after it (tests/invariants.py):
never more than replicas + maxSurge replicas asked (and, ours, live pods),
never fewer than replicas - maxUnavailable Ready or available. A breach, a
failed command or a step the record never showed exits non-zero.

    .venv/bin/python hack/bench_canary.py [--rounds N] [--keep]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hack"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bench_rollout import CONTROLLER, KUBECTL, PLUGIN, managed, manifest, namespace, start_agent, wait_controller  # noqa: E402
from bench_support import audit_requests, bench_cluster, user_environment  # noqa: E402
from canary_figures import PodLife, SegmentFigures, figures, medians, segments, total  # noqa: E402
from canary_figures import audit_requests as our_requests  # noqa: E402
from invariants import RolloutInvariants  # noqa: E402
from watching import Follower  # noqa: E402

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect  # noqa: E402
from kubectl_rollout.kube.pods import is_ready  # noqa: E402
from kubectl_rollout.kube.record_names import record_name  # noqa: E402

BENCH_DIR = ROOT / ".cluster" / "bench-canary"
REPLICAS = 100
SURGE = UNAVAILABLE = "25%"
PAUSE = "pause 2s"
STEPS = f"; {PAUSE}; ".join(f"setWeight {weight}" for weight in range(10, 101, 10))
OUR_AGENT = "kubectl-rollout-plus/"
V1, V2 = "registry.example/web:v1", "registry.example/web:v2"


class Watched(Follower):
    """A follower of the bench: started before the change, stopped once the watch has caught up with the
    cluster as it is after it (nothing that happened is left out)."""

    def start(self) -> Self:
        self._follow()
        return self

    def stop(self) -> Self:
        self._end()
        return self


class PodTimes(Watched):
    """The workload's pods created after the watch began: when the watch first saw each, and first saw it
    Ready (epoch seconds, the clock the record and the audit log use)."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        super().__init__()
        self.cluster, self.ns = cluster, ns
        self._before: set[str] = set()
        self._lock = threading.Lock()
        self.created: dict[str, float] = {}
        self.ready: dict[str, float] = {}

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.core.list_namespaced_pod, {"namespace": self.ns, "label_selector": "app=web"}

    def _seed(self, items: list[Any]) -> None:
        self._before = {pod.metadata.name for pod in items}

    def _apply(self, kind: str, pod: Any) -> None:
        name, now = pod.metadata.name, time.time()
        if name in self._before:
            return
        with self._lock:
            self.created.setdefault(name, now)
            if kind != "DELETED" and is_ready(pod):
                self.ready.setdefault(name, now)

    def lives(self) -> list[PodLife]:
        with self._lock:
            return [PodLife(created=at, ready=self.ready.get(name)) for name, at in self.created.items()]


class ScaleUps(Watched):
    """When the watch saw one of the workload's ReplicaSets asked for more replicas than before."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        super().__init__()
        self.cluster, self.ns = cluster, ns
        self._replicas: dict[str, int] = {}
        self.at: list[float] = []

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.apps.list_namespaced_replica_set, {"namespace": self.ns, "label_selector": "app=web"}

    def _seed(self, items: list[Any]) -> None:
        self._replicas = {rs.metadata.name: rs.spec.replicas or 0 for rs in items}

    def _apply(self, kind: str, rs: Any) -> None:
        after = 0 if kind == "DELETED" else rs.spec.replicas or 0
        if after > self._replicas.get(rs.metadata.name, 0):
            self.at.append(time.time())
        self._replicas[rs.metadata.name] = after


class StepStarts(Watched):
    """Each step's start as the record says it (``canary.step_started_at``), for the canary begun after the
    watch began (another template hash than the record held then)."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        super().__init__()
        self.cluster, self.ns = cluster, ns
        self._hash_before = ""
        self.starts: dict[int, float] = {}

    @staticmethod
    def _canary(config_map: Any) -> dict[str, Any]:
        return dict(json.loads((config_map.data or {}).get("canary") or "{}"))

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.core.list_namespaced_config_map, {
            "namespace": self.ns,
            "field_selector": f"metadata.name={record_name('web')}",
        }

    def _seed(self, items: list[Any]) -> None:
        self._hash_before = next((self._canary(cm).get("canary_hash", "") for cm in items), "")

    def _apply(self, kind: str, config_map: Any) -> None:
        canary = self._canary(config_map)
        if kind != "DELETED" and canary.get("canary_hash") not in (None, "", self._hash_before):
            self.starts.setdefault(int(canary["step"]), float(canary["step_started_at"]))


def watched_breaches(watch: RolloutInvariants, *, count_pods: bool) -> list[str]:
    watch.stop()
    return watch.breaches_of(REPLICAS, SURGE, UNAVAILABLE, count_pods=count_pods)


def canary_run(
    cluster: Cluster, kubeconfig: Path, audit: Path, ns: str, tmp: Path, agent_env: dict[str, str]
) -> list[SegmentFigures]:
    """One canary through `set image` in the agent: its figures segment by segment."""
    namespace(cluster, ns)
    document = manifest("web", REPLICAS, V1)
    document["metadata"]["annotations"] = {"rollout-plus.io/steps": STEPS}
    managed(kubeconfig, ns, document, tmp)  # the first rollout: no stable ReplicaSet yet, so no steps
    fenceposts = RolloutInvariants(cluster, ns).start()
    pods, scale_ups, steps = (
        PodTimes(cluster, ns).start(),
        ScaleUps(cluster, ns).start(),
        StepStarts(cluster, ns).start(),
    )
    env = user_environment(KUBECONFIG=str(kubeconfig), **agent_env)
    command = [str(PLUGIN), "set", "image", "web", f"app={V2}", "-n", ns, "--agent"]
    began = time.time()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    ended = time.time()
    for follower in (pods, scale_ups, steps):
        follower.stop()
    breaches = watched_breaches(fenceposts, count_pods=True)
    if result.returncode != 0:
        print(result.stdout[-2000:], result.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"{ns}: `set image` failed with {result.returncode}")
    if breaches:
        raise SystemExit(f"{ns}: invariants broken: {breaches}")
    try:
        found = segments(steps=STEPS, step_starts=steps.starts, began=began, ended=ended)
    except ValueError as err:
        raise SystemExit(f"{ns}: {err}") from None
    with audit.open() as lines:
        requests = our_requests(lines, agent=OUR_AGENT, since=began, until=ended)
    run, outside = figures(found, scale_ups=scale_ups.at, pods=pods.lives(), requests=requests)
    if outside:
        raise SystemExit(f"{ns}: requests outside every step: {dict(outside)}")
    cluster.core.delete_namespace(ns)
    return run


def controller_run(cluster: Cluster, kubeconfig: Path, audit: Path, ns: str) -> tuple[float, int]:
    """The same change of a plain Deployment, as a user does it with kubectl: wall time, the controller's
    requests."""
    namespace(cluster, ns)
    cluster.apps.create_namespaced_deployment(ns, manifest("web", REPLICAS, V1))
    wait_controller(cluster, ns, "web", REPLICAS)
    fenceposts = RolloutInvariants(cluster, ns).start()
    env = user_environment(KUBECONFIG=str(kubeconfig))
    commands = [
        [str(KUBECTL), "set", "image", "deployment/web", f"app={V2}", "-n", ns],
        [str(KUBECTL), "rollout", "status", "deployment/web", "-n", ns, "--timeout", "10m"],
    ]
    since = time.time()
    for command in commands:
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"{ns}: {' '.join(command[1:3])} failed: {result.stderr[-2000:]}")
    until = time.time()
    # the controller bounds ReplicaSet sizes, and lets pods being deleted overlap new ones (as the tests count)
    breaches = watched_breaches(fenceposts, count_pods=False)
    if breaches:
        raise SystemExit(f"{ns}: invariants broken: {breaches}")
    requests = audit_requests(audit, since, until, user=CONTROLLER)
    cluster.core.delete_namespace(ns)
    return until - since, requests


def kinds_text(requests: dict[str, float] | Any, most: int = 3) -> str:
    ranked = sorted(requests.items(), key=lambda item: (-item[1], item[0]))
    shown = [f"{kind} {count:g}" for kind, count in ranked[:most] if count]
    rest = sum(count for _, count in ranked[most:])
    return ", ".join(shown) + (f", others {rest:g}" if rest else "")


def report(canary: Sequence[list[SegmentFigures]], controller: Sequence[tuple[float, int]]) -> None:
    rounds = len(canary)
    steps = medians(canary)
    totals = medians([[total(run)] for run in canary])[0]
    print(f"\nmedians of {rounds} run(s) each, alternating which goes first; seconds, and our requests per step")
    print(f"{'STEP':22s} {'TIME':>7s} {'PAUSE':>6s} {'READY':>6s} {'OVERHEAD':>8s} {'REQ':>6s}  BY VERB/RESOURCE")
    for figure in [*steps, totals]:
        print(
            f"{figure.label:22s} {figure.seconds:7.2f} {figure.pause:6.2f} {figure.readiness:6.2f} "
            f"{figure.overhead:8.2f} {sum(figure.requests.values()):6g}  {kinds_text(dict(figure.requests))}"
        )
    print("\nour requests in all, by verb/resource (median of the runs' totals):")
    for kind, count in sorted(totals.requests.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {count:6g}  {kind}")
    seconds = statistics.median(run[0] for run in controller)
    requests = statistics.median(run[1] for run in controller)
    print(
        f"\nfor scale: the Deployment controller's plain rolling update of the same 100 replicas "
        f"(kubectl set image + rollout status): {seconds:.2f} s, {requests:g} requests"
    )
    print(
        f"canary: {totals.seconds:.2f} s = pauses {totals.pause:.2f} s + readiness waits {totals.readiness:.2f} s "
        f"+ our overhead {totals.overhead:.2f} s ({totals.overhead / totals.seconds:.0%}); "
        f"{sum(totals.requests.values()):g} requests"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, alternating which goes first")
    parser.add_argument("--keep", action="store_true", help="leave the benchmark's cluster running")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    kubeconfig, _ = bench_cluster(
        None,
        BENCH_DIR,
        # every request is in the log when the call returns, for both sides alike
        ["--nodes", "8", "--audit", "--apiserver-arg=--audit-log-mode=blocking"],
    )
    audit = BENCH_DIR / "logs" / "audit.log"
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    tmp = BENCH_DIR / "manifests"
    tmp.mkdir(exist_ok=True)
    agent_env = start_agent()
    canary: list[list[SegmentFigures]] = []
    controller: list[tuple[float, int]] = []
    print(f"== a canary of {REPLICAS} replicas, maxSurge {SURGE}, maxUnavailable {UNAVAILABLE}, Ready 1 s after start;")
    print(f"   steps: {STEPS} ==")
    try:
        for run in range(args.rounds):
            for side in ("canary", "controller") if run % 2 == 0 else ("controller", "canary"):
                ns = f"bench-{side}-{run}"
                if side == "canary":
                    canary.append(canary_run(cluster, kubeconfig, audit, ns, tmp, agent_env))
                    summed = total(canary[-1])
                    print(
                        f"  run {run + 1} canary      {summed.seconds:7.2f} s  pauses {summed.pause:5.2f} s  "
                        f"readiness {summed.readiness:6.2f} s  overhead {summed.overhead:6.2f} s  "
                        f"{sum(summed.requests.values()):5g} requests",
                        flush=True,
                    )
                else:
                    controller.append(controller_run(cluster, kubeconfig, audit, ns))
                    seconds, requests = controller[-1]
                    print(f"  run {run + 1} controller  {seconds:7.2f} s  {requests:5d} requests", flush=True)
        report(canary, controller)
    finally:
        subprocess.run([str(PLUGIN), "agent", "stop"], env=user_environment(**agent_env), stdout=subprocess.DEVNULL)
        cluster.close()
        if not args.keep:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
