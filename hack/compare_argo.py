#!/usr/bin/env python3
"""Argo Rollouts' controller beside our canary, step by step, on one cluster (issue 23).

The same replica-weighted canary (no traffic router) both ways, each in a
namespace of its own, pods Ready 1 s after they start, one image change, each
untimed pause promoted in turn. The scenarios (SCENARIOS): the issue's example
(10 replicas, maxSurge and maxUnavailable 25 %, setWeight 10, pause,
setWeight 50, pause 5s, setWeight 100), and those where docs/canary.md says
we part from Argo (14 % of 10; 3 replicas with maxSurge 1; argo-rollouts#3284's
maxSurge 10 %, maxUnavailable 0, setWeight 50).

- Argo: its CRDs installed from the module's manifests/crds/, its
  rollouts-controller (built by hack/build-argo-rollouts.sh) run out of cluster
  with --kubeconfig, namespaced to its namespace, on free metrics/healthz
  ports, logging to a file; a Rollout with `canary.steps`; the image changed
  in its spec, and promoted as `kubectl argo rollouts promote` does (the
  status subresource patched: pauseConditions null).
- Ours: a managed workload (`apply`), `set image` (it ends at the first
  pause), then `promote` at each pause.

Where each stands comes from a watch: Argo's `status.currentStepIndex`, our
record's `canary.step` (both count steps from 0). When the index leaves a
step, that step's counts are taken from watched ReplicaSets and pods (the
canary's and the stable ReplicaSet's spec.replicas and Ready pods); a pod
watch keeps the peak of live pods (not being deleted, as tests/invariants.py
counts them) while each step is current, and the peak with pods being deleted.
A table per step prints Argo's counts, ours and the difference, the peaks
against replicas + maxSurge, and each side's scales in the order they came.

Differences are facts to report; the exit code is non-zero only when OURS
broke an invariant: more pods than replicas + maxSurge, fewer Ready than
replicas - maxUnavailable, or a step's counts other than `apply --plan`
printed.

    .venv/bin/python hack/compare_argo.py [--kubeconfig PATH] [--scenario NAME ...] [--version v1.10.2]

Without --kubeconfig it starts a cluster of its own (.cluster/compare-argo)
and stops it at the end; the controller is always stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hack"))
sys.path.insert(0, str(ROOT))

from bench_support import bench_cluster  # noqa: E402
from kubernetes import client  # noqa: E402

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect  # noqa: E402
from kubectl_rollout.kube.watched_collection import WatchedCollection  # noqa: E402
from kubectl_rollout.rollout.replica_math import max_surge, max_unavailable  # noqa: E402

COMPARE_DIR = ROOT / ".cluster" / "compare-argo"
KUBECTL = ROOT / ".bin" / "kubectl"
DEFAULT_VERSION = "v1.10.2"

OLD = "registry.example/app:v1"
NEW = "registry.example/app:v2"


@dataclass(frozen=True)
class Scenario:
    """One canary both ways: the workload's size and fenceposts, and the steps (in our annotation's syntax)."""

    name: str
    replicas: int
    surge: int | str
    unavailable: int | str
    steps: tuple[str, ...]
    why: str

    @property
    def most_pods(self) -> int:
        return self.replicas + max_surge(self.replicas, self.surge, self.unavailable)

    @property
    def fewest_ready(self) -> int:
        return self.replicas - max_unavailable(self.replicas, self.surge, self.unavailable)

    def argo_steps(self) -> list[dict[str, Any]]:
        """``canary.steps`` of Argo's Rollout: ``setWeight N``, ``pause`` and ``pause DURATION`` as Argo says them."""
        steps: list[dict[str, Any]] = []
        for step in self.steps:
            verb, _, value = step.partition(" ")
            if verb == "setWeight":
                steps.append({"setWeight": int(value)})
            elif verb == "pause":
                steps.append({"pause": {"duration": value} if value else {}})
            else:
                raise ValueError(f"scenario {self.name}: step {step!r} has no Argo equivalent here")
        return steps

    def text(self) -> str:
        return (
            f"{self.replicas} replicas, maxSurge {self.surge}, maxUnavailable {self.unavailable}, "
            f"steps: {'; '.join(self.steps)}"
        )


SCENARIOS = {
    scenario.name: scenario
    for scenario in (
        Scenario(
            "issue",
            10,
            "25%",
            "25%",
            ("setWeight 10", "pause", "setWeight 50", "pause 5s", "setWeight 100"),
            "issue 23's example",
        ),
        Scenario(
            "rounding",
            10,
            "25%",
            "25%",
            ("setWeight 14", "pause", "setWeight 100"),
            "14 % of 10: Argo's nearest ratio against our rounding up",
        ),
        Scenario(
            "small",
            3,
            1,
            0,
            ("setWeight 25", "pause", "setWeight 50", "pause", "setWeight 100"),
            "3 replicas, maxSurge 1: Argo may hold replicas + 1 pods through a pause",
        ),
        Scenario(
            "surge-3284",
            10,
            "10%",
            0,
            ("setWeight 50", "pause", "setWeight 100"),
            "argo-rollouts#3284: maxSurge 10 %, maxUnavailable 0, setWeight 50",
        ),
    )
}
TIMEOUT = 180.0


def pod_template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}, "annotations": {"rollout-plus.test/ready-after": "1s"}},
        "spec": {"containers": [{"name": "app", "image": OLD}]},
    }


def manifest(
    scenario: Scenario, *, api_version: str, kind: str, strategy: dict[str, Any], annotations: dict[str, str]
) -> dict[str, Any]:
    """Argo's Rollout and our Deployment manifest share all but their kind and how they say the strategy."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "web", "annotations": annotations},
        "spec": {
            "replicas": scenario.replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": strategy,
            "template": pod_template(),
        },
    }


def argo_rollout(scenario: Scenario) -> dict[str, Any]:
    canary = {"maxSurge": scenario.surge, "maxUnavailable": scenario.unavailable, "steps": scenario.argo_steps()}
    return manifest(
        scenario, api_version="argoproj.io/v1alpha1", kind="Rollout", strategy={"canary": canary}, annotations={}
    )


def our_workload(scenario: Scenario) -> dict[str, Any]:
    rolling = {"maxSurge": scenario.surge, "maxUnavailable": scenario.unavailable}
    return manifest(
        scenario,
        api_version="apps/v1",
        kind="Deployment",
        strategy={"type": "RollingUpdate", "rollingUpdate": rolling},
        annotations={"rollout-plus.io/steps": "\n".join(scenario.steps)},
    )


# --- what is seen ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    """One moment's ReplicaSets: the canary's (new image) and the stable's (old image) spec and Ready pods."""

    canary: int
    canary_ready: int
    stable: int
    stable_ready: int

    def text(self) -> str:
        return f"{self.canary}/{self.canary_ready} {self.stable}/{self.stable_ready}"


@dataclass
class Run:
    """What one side did: each step's counts when it was left, the peak pods while it was current."""

    side: str
    left: dict[int, Counts] = field(default_factory=dict)
    #: live pods (not being deleted), as tests/invariants.py counts them against maxSurge
    peak: dict[int, int] = field(default_factory=dict)
    #: over the whole rollout, from the image change until it settled
    most_pods: int = 0
    #: pods being deleted too, until they are gone
    most_pods_with_deleted: int = 0
    fewest_ready: int | None = None
    settled: Counts | None = None
    #: (canary, stable) spec.replicas after each scale, in the order the ReplicaSet watch delivered them
    moves: list[tuple[int, int]] = field(default_factory=list)


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_running(pod: dict[str, Any]) -> bool:
    """Not Succeeded or Failed (a pod being deleted still runs until it is gone)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def is_live(pod: dict[str, Any]) -> bool:
    """Running and not being deleted: the pods tests/invariants.py counts against replicas + maxSurge."""
    return is_running(pod) and not pod["metadata"].get("deletionTimestamp")


def image_of(obj: dict[str, Any]) -> str:
    """The first container's image of a ReplicaSet (its template) or a pod."""
    spec = obj["spec"]["template"]["spec"] if "template" in obj["spec"] else obj["spec"]
    return str(spec["containers"][0]["image"])


def counts_of(replica_sets: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Counts:
    spec = {OLD: 0, NEW: 0}
    for rs in replica_sets:
        spec[image_of(rs)] = spec.get(image_of(rs), 0) + int(rs["spec"].get("replicas") or 0)
    ready = {OLD: 0, NEW: 0}
    for pod in pods:
        if is_live(pod) and is_ready(pod):
            ready[image_of(pod)] = ready.get(image_of(pod), 0) + 1
    return Counts(canary=spec[NEW], canary_ready=ready[NEW], stable=spec[OLD], stable_ready=ready[OLD])


class StepWatch:
    """Watches one namespace's ReplicaSets, pods and the object that says which step is current.

    ``step_of`` reads the current step index from that object (None: not known). Tracking begins with ``arm``
    (right before the image change) at the first index below the last, the new revision's first step.
    """

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        side: str,
        scenario: Scenario,
        state_list: Callable[..., Any],
        step_of: Callable[[dict[str, Any]], int | None],
        state_query: dict[str, Any],
    ) -> None:
        self.run = Run(side)
        self.scenario = scenario
        #: the step indexes promoted so far (each pause is promoted once)
        self.promoted: set[int] = set()
        self._step_of = step_of
        self._lock = threading.Lock()
        self._armed = False
        self._step: int | None = None
        self.state: dict[str, Any] = {}
        self.changed = threading.Condition(self._lock)
        raw = dict(transform=lambda obj: obj)
        self.replica_sets = WatchedCollection(
            cluster.apps.list_namespaced_replica_set,
            namespace=namespace,
            description=f"{side} replicasets",
            on_change=self._replica_sets_changed,
            **raw,
        )
        self.pods = WatchedCollection(
            cluster.core.list_namespaced_pod,
            namespace=namespace,
            description=f"{side} pods",
            on_change=self._pods_changed,
            **raw,
        )
        self.states = WatchedCollection(
            state_list, description=f"{side} state", on_change=self._state_changed, **raw, **state_query
        )

    def start(self) -> StepWatch:
        for collection in (self.replica_sets, self.pods, self.states):
            collection.start()
        return self

    def stop(self) -> None:
        for collection in (self.replica_sets, self.pods, self.states):
            collection.stop()

    def arm(self) -> None:
        with self._lock:
            self._armed = True

    def counts(self) -> Counts:
        return counts_of(self.replica_sets.snapshot(), self.pods.snapshot())

    def _replica_sets_changed(self) -> None:
        counts = counts_of(self.replica_sets.snapshot(), [])
        move = (counts.canary, counts.stable)
        with self._lock:
            if self._armed and (not self.run.moves or self.run.moves[-1] != move):
                self.run.moves.append(move)

    def _pods_changed(self) -> None:
        pods = self.pods.snapshot()
        running = sum(1 for p in pods if is_running(p))
        live = sum(1 for p in pods if is_live(p))
        ready = sum(1 for p in pods if is_live(p) and is_ready(p))
        with self._lock:
            if self._step is None:
                return
            run = self.run
            run.peak[self._step] = max(run.peak.get(self._step, 0), live)
            run.most_pods = max(run.most_pods, live)
            run.most_pods_with_deleted = max(run.most_pods_with_deleted, running)
            run.fewest_ready = ready if run.fewest_ready is None else min(run.fewest_ready, ready)
            self.changed.notify_all()

    def _state_changed(self) -> None:
        objects = self.states.snapshot()
        state = objects[0] if objects else {}
        step = self._step_of(state) if state else None
        counts = self.counts()
        with self._lock:
            self.state = state
            if self._armed and step is not None:
                if self._step is None and step < len(self.scenario.steps):
                    self._step = step
                elif self._step is not None and step > self._step:
                    # Every step from the one current until now was left just now (a promote --full leaves several).
                    for left in range(self._step, step):
                        self.run.left[left] = counts
                    self._step = step
            self.changed.notify_all()
        self._pods_changed()

    @property
    def step(self) -> int | None:
        with self._lock:
            return self._step

    def wait(self, what: str, predicate: Callable[[StepWatch], bool], timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SystemExit(f"{self.run.side}: no {what} within {timeout:.0f} s; state: {self.state}")
                self.changed.wait(min(remaining, 1.0))

    def settled(self) -> bool:
        """Called under the lock: every replica on the new image and Ready, none left on the old one."""
        counts = self.counts()
        replicas = self.scenario.replicas
        return self._step == len(self.scenario.steps) and counts == Counts(replicas, replicas, 0, 0)

    def waiting_for_promote(self, paused: bool) -> int | None:
        """Called under the lock: the untimed pause the rollout waits at (``paused``: the side says it waits), if it
        has not been promoted yet."""
        step = self._step
        if step is None or step >= len(self.scenario.steps) or step in self.promoted or not paused:
            return None
        return step if self.scenario.steps[step] == "pause" else None

    def next_pause(self, paused: Callable[[dict[str, Any]], bool]) -> int | None:
        """Wait for the next untimed pause not promoted yet (its index), or for the end of the steps (None)."""
        found: list[int | None] = []

        def there(watch: StepWatch) -> bool:
            if watch.settled():
                found.append(None)
                return True
            step = watch.waiting_for_promote(paused(watch.state))
            if step is not None:
                found.append(step)
            return step is not None

        self.wait("a pause or the end of the steps", there)
        return found[-1]


# --- Argo Rollouts --------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def build_controller(version: str) -> Path:
    built = subprocess.run(
        [str(ROOT / "hack" / "build-argo-rollouts.sh"), version], stdout=subprocess.PIPE, text=True, check=False
    )
    if built.returncode != 0:
        raise SystemExit(f"Argo Rollouts {version} did not build (hack/build-argo-rollouts.sh {version})")
    return Path(built.stdout.strip().splitlines()[-1])


def start_controller(binary: Path, kubeconfig: Path, namespace: str, log: Path) -> subprocess.Popen[bytes]:
    command = [
        str(binary),
        "--kubeconfig",
        str(kubeconfig),
        "--namespaced",
        "--namespace",
        namespace,
        "--leader-elect=false",
        f"--metricsPort={free_port()}",
        f"--healthzPort={free_port()}",
        "--loglevel=info",
    ]
    with log.open("wb") as out:
        # POD_NAMESPACE: where it looks for its notification ConfigMap (none: it notifies nobody).
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "POD_NAMESPACE": namespace}
        )


def established(cluster: Cluster, crd: str) -> None:
    """Wait (by watch) until the API server serves ``crd``: `kubectl wait` fails while it has no conditions yet."""

    def is_established(c: WatchedCollection) -> bool:
        return any(
            condition.get("type") == "Established" and condition.get("status") == "True"
            for item in c.objects_locked().values()
            for condition in (item.get("status") or {}).get("conditions") or []
        )

    crds = WatchedCollection(
        client.ApiextensionsV1Api(cluster.api_client).list_custom_resource_definition,
        description=f"crd {crd}",
        transform=lambda obj: obj,
        field_selector=f"metadata.name={crd}",
    ).start()
    try:
        if not crds.wait_until(is_established, 60, None):
            raise SystemExit(f"CRD {crd} was not Established within 60 s")
    finally:
        crds.stop()


def argo_step(rollout: dict[str, Any]) -> int | None:
    index = (rollout.get("status") or {}).get("currentStepIndex")
    return None if index is None else int(index)


def argo_paused(rollout: dict[str, Any]) -> bool:
    return bool((rollout.get("status") or {}).get("pauseConditions"))


def run_argo(cluster: Cluster, kubeconfig: Path, binary: Path, namespace: str, scenario: Scenario, log: Path) -> Run:
    crds = binary.parent / "crds"
    for crd in sorted(crds.glob("*.yaml")):
        kubectl(kubeconfig, "apply", "--server-side", "-f", str(crd))
    established(cluster, "rollouts.argoproj.io")
    kubectl(kubeconfig, "create", "namespace", namespace)
    custom = client.CustomObjectsApi(cluster.api_client)
    where = dict(group="argoproj.io", version="v1alpha1", namespace=namespace, plural="rollouts")
    controller = start_controller(binary, kubeconfig, namespace, log)
    watch = StepWatch(
        cluster, namespace, "Argo", scenario, custom.list_namespaced_custom_object, argo_step, where
    ).start()
    replicas = scenario.replicas
    try:
        custom.create_namespaced_custom_object(body=argo_rollout(scenario), **where)
        watch.wait(
            "first revision available",
            lambda w: (
                (w.state.get("status") or {}).get("availableReplicas") == replicas
                and w.counts() == Counts(0, 0, replicas, replicas)
            ),
        )
        watch.arm()
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": NEW}]}}}}
        custom.patch_namespaced_custom_object(name="web", body=patch, **where)
        while (pause := watch.next_pause(argo_paused)) is not None:
            # `kubectl argo rollouts promote web`: with pause conditions, it clears them through the status
            # subresource (pkg/kubectl-argo-rollouts/cmd/promote); the controller then goes past the pause.
            custom.patch_namespaced_custom_object_status(
                name="web", body={"status": {"pauseConditions": None}}, **where
            )
            watch.promoted.add(pause)
        watch.run.settled = watch.counts()
    finally:
        watch.stop()
        controller.terminate()
        try:
            controller.wait(timeout=10)
        except subprocess.TimeoutExpired:
            controller.kill()
            controller.wait()
    return watch.run


# --- ours -----------------------------------------------------------------------------------------------------


def our_step(record: dict[str, Any]) -> int | None:
    canary = json.loads((record.get("data") or {}).get("canary") or "{}")
    step = canary.get("step")
    return None if step is None else int(step)


def plugin(kubeconfig: Path, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kubectl_rollout", *args, "-n", namespace, "--kubeconfig", str(kubeconfig)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    if result.returncode != 0:
        raise SystemExit(f"kubectl rollout-plus {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


def plan_counts(output: str) -> dict[int, tuple[int, int]]:
    """Step index (from 0) -> (canary, stable) as ``apply --plan`` printed them."""
    planned = {}
    for line in output.splitlines():
        parts = line.split()
        if parts and parts[0].isdigit():
            planned[int(parts[0]) - 1] = (int(parts[-3]), int(parts[-2]))
    return planned


def our_paused(record: dict[str, Any]) -> bool:
    return bool(json.loads((record.get("data") or {}).get("canary") or "{}").get("paused"))


def run_ours(
    cluster: Cluster, kubeconfig: Path, namespace: str, scenario: Scenario, manifest: Path
) -> tuple[Run, dict[int, tuple[int, int]]]:
    kubectl(kubeconfig, "create", "namespace", namespace)
    manifest.write_text(json.dumps(our_workload(scenario)))
    planned = plan_counts(plugin(kubeconfig, namespace, "apply", "-f", str(manifest), "--plan").stdout)
    plugin(kubeconfig, namespace, "apply", "-f", str(manifest))
    watch = StepWatch(
        cluster,
        namespace,
        "ours",
        scenario,
        cluster.core.list_namespaced_config_map,
        our_step,
        {"namespace": namespace, "field_selector": "metadata.name=rollout-plus.web"},
    ).start()
    try:
        watch.arm()
        # `set image` drives the steps until a pause (the job ends there); each `promote` to the next one.
        plugin(kubeconfig, namespace, "set", "image", "web", f"app={NEW}", "--in-process")
        while (pause := watch.next_pause(our_paused)) is not None:
            watch.promoted.add(pause)
            plugin(kubeconfig, namespace, "promote", "web", "--in-process")
        watch.run.settled = watch.counts()
    finally:
        watch.stop()
    return watch.run, planned


# --- the table ------------------------------------------------------------------------------------------------


def difference(argo: Counts | None, ours: Counts | None) -> str:
    if argo is None or ours is None:
        return "?"
    if argo == ours:
        return "same"
    return f"canary {ours.canary - argo.canary:+d}, stable {ours.stable - argo.stable:+d}"


def moves_text(moves: list[tuple[int, int]]) -> list[str]:
    return [f"{canary}/{stable}" for canary, stable in moves]


def table(scenario: Scenario, argo: Run, ours: Run) -> list[str]:
    lines = [
        f"{'STEP':<20} {'ARGO c/r s/r':>13} {'OURS c/r s/r':>13}  {'PEAK ARGO':>9} {'PEAK OURS':>9}  DIFFERENCE",
    ]
    end = len(scenario.steps)
    rows: list[tuple[str, Counts | None, Counts | None, int | None, int | None]] = [
        (f"{i + 1} {step}", argo.left.get(i), ours.left.get(i), argo.peak.get(i), ours.peak.get(i))
        for i, step in enumerate(scenario.steps)
    ]
    rows.append(("settled", argo.settled, ours.settled, argo.peak.get(end), ours.peak.get(end)))
    for name, a, o, peak_a, peak_o in rows:
        lines.append(
            f"{name:<20} {a.text() if a else '-':>13} {o.text() if o else '-':>13}  "
            f"{peak_a if peak_a is not None else '-':>9} {peak_o if peak_o is not None else '-':>9}  {difference(a, o)}"
        )
    lines.append(
        "c/r s/r: the canary's spec.replicas/Ready pods, the stable's; peak: live pods seen while the step was current"
    )
    for run in (argo, ours):
        lines.append(f"{run.side}: canary/stable spec.replicas, scale by scale: " + " ".join(moves_text(run.moves)))
    for run in (argo, ours):
        lines.append(
            f"{run.side}: at most {run.most_pods} live pods (replicas + maxSurge = {scenario.most_pods}), "
            f"{run.most_pods_with_deleted} with those being deleted; "
            f"at least {run.fewest_ready} Ready (replicas - maxUnavailable = {scenario.fewest_ready})"
        )
    return lines


def our_breaches(scenario: Scenario, ours: Run, planned: dict[int, tuple[int, int]]) -> list[str]:
    breaches = []
    if ours.most_pods > scenario.most_pods:
        breaches.append(f"ours had {ours.most_pods} live pods, above replicas + maxSurge ({scenario.most_pods})")
    if ours.fewest_ready is not None and ours.fewest_ready < scenario.fewest_ready:
        breaches.append(
            f"ours had {ours.fewest_ready} Ready pods, below replicas - maxUnavailable ({scenario.fewest_ready})"
        )
    for step, (canary, stable) in planned.items():
        seen = ours.left.get(step)
        if seen is None or (seen.canary, seen.stable) != (canary, stable) or seen.canary_ready != canary:
            breaches.append(f"ours left step {step + 1} at {seen} where apply --plan printed {canary}/{stable}")
    return breaches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", type=Path, help="a running cluster (default: start one of its own)")
    parser.add_argument(
        "--version", default=DEFAULT_VERSION, help=f"Argo Rollouts' version (default {DEFAULT_VERSION})"
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=sorted(SCENARIOS),
        help="run this scenario (repeat for several; default: all). "
        + "; ".join(f"{s.name}: {s.why}" for s in SCENARIOS.values()),
    )
    args = parser.parse_args()
    scenarios = [SCENARIOS[name] for name in args.scenario] if args.scenario else list(SCENARIOS.values())

    binary = build_controller(args.version)
    kubeconfig, started = bench_cluster(args.kubeconfig, COMPARE_DIR)
    suffix = str(int(time.time()))
    work = ROOT / ".cluster" / "compare-argo-runs" / suffix
    work.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
        for scenario in scenarios:
            log = work / f"rollouts-controller-{scenario.name}.log"
            print(f"{scenario.name}: Argo Rollouts {args.version} ({binary}); its log: {log}", file=sys.stderr)
            argo = run_argo(cluster, kubeconfig, binary, f"argo-{scenario.name}-{suffix}", scenario, log)
            ours = run_ours(cluster, kubeconfig, f"ours-{scenario.name}-{suffix}", scenario, work / "web.json")
            results.append((scenario, argo, *ours))
    finally:
        if started:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(COMPARE_DIR)])
    broken = False
    for scenario, argo, ours, planned in results:
        print(f"\n{scenario.name} ({scenario.why}): Argo Rollouts {args.version} and rollout-plus, {scenario.text()}")
        print("\n".join(table(scenario, argo, ours)))
        for breach in our_breaches(scenario, ours, planned):
            print(f"BROKEN: {breach}")
            broken = True
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
