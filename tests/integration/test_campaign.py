"""`kubectl rollout-plus campaign` against the real control plane.

Each test gets kwok nodes of its own (``dedicated_nodes``), labelled with zones where it matters, and
watchers that follow the cluster throughout: the nodes out at once and their zones (``NodesOut``), the
healthy pods of each workload (``HealthyPods``: no PDB ever below its minimum).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from cluster_setup import deploy
from integration.test_agent import _follow, _wait_gone, agent_dir  # noqa: F401  (agent_dir: a fixture)
from integration.test_drain import add_pdb, only_schedulable, pods_on
from integration.test_drain_surge import one_replica_min_available_one
from invariants import HealthyPods
from plugin import RunningPlugin, events, run_plugin
from watching import Follower

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.campaign.engine import KEPT_LABEL
from kubectl_rollout.campaign.order import ZONE_LABEL
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.drain import NodeCordoned
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted
from kubectl_rollout.jobs.spec import CampaignJob, Connection, DrainOptions, JobKind, JobSpec, NodeOrder
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import CAMPAIGN_TAINT, CAMPAIGN_TAINT_EFFECT

ZONES = ("zone-a", "zone-b", "zone-c")

#: an after-hook that replaces its node as a cloud would: the node deleted, a fresh one of the same name and
#: labels created (kwok plays its kubelet), schedulable. The old node's Lease goes with it, as the garbage
#: collector would take it: kwok (v0.8.0) finding a Lease of the fresh node's name already there retried its
#: update on a stale copy every 10 s and renewed no other node's Lease meanwhile, and 2.5 minutes later every
#: node of the test cluster was NotReady, its pods not Ready (a rehearsal: three canary tests and two TUI
#: campaign tests failed on that).
REPLACE_NODE = """
import os
from kubernetes import client, config
config.load_kube_config()
core = client.CoreV1Api()
coordination = client.CoordinationV1Api()
name = os.environ["ROLLOUT_PLUS_NODE"]
old = core.read_node(name)
pool = "rollout-plus.test/pool"
fresh = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": name,
        "labels": old.metadata.labels,
        "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
    },
    "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in old.spec.taints or []
                        if t.key == pool]},
}
core.delete_node(name)
try:
    coordination.delete_namespaced_lease(name, "kube-node-lease")
except client.ApiException as err:
    if err.status != 404:
        raise
core.create_node(fresh)
print("replaced", name)
"""


class NodesOut(Follower):
    """Every change of the pool's nodes: which are out (cordoned, and not kept), at most how many at once and
    in how many zones, and when each was first cordoned (wall clock)."""

    def __init__(self, cluster: Cluster, pool: str) -> None:
        super().__init__()
        self.cluster, self.pool = cluster, pool
        self.nodes: dict[str, Any] = {}
        self.most_out = 0
        self.most_zones = 0
        self.cordoned_at: dict[str, list[float]] = {}
        self.out_sets: list[frozenset[str]] = []

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.core.list_node, {"label_selector": f"{manifests.POOL_LABEL}={self.pool}"}

    def _seed(self, items: list[Any]) -> None:
        for node in items:
            self._apply("ADDED", node)

    def _apply(self, kind: str, node: Any) -> None:
        name = node.metadata.name
        was = self.nodes.get(name)
        if kind == "DELETED":
            self.nodes.pop(name, None)
        else:
            self.nodes[name] = node
            if node.spec.unschedulable and not (was is not None and was.spec.unschedulable):
                self.cordoned_at.setdefault(name, []).append(time.time())
        out = frozenset(
            n
            for n, obj in self.nodes.items()
            if obj.spec.unschedulable and KEPT_LABEL not in (obj.metadata.labels or {})
        )
        if not self.out_sets or self.out_sets[-1] != out:
            self.out_sets.append(out)
        zones = {(self.nodes[n].metadata.labels or {}).get(ZONE_LABEL, "") for n in out}
        self.most_out = max(self.most_out, len(out))
        self.most_zones = max(self.most_zones, len(zones))

    def start(self) -> NodesOut:
        self._follow()
        return self

    def stop(self) -> NodesOut:
        self._end()
        return self


#: one node as the watcher saw it: cordoned, the value of the campaign taint (None: none), the other taints
NodeState = tuple[bool, str | None, tuple[str, ...]]


def state_of(node: Any) -> NodeState:
    ours = None
    others = []
    for taint in node.spec.taints or []:
        if taint.key == CAMPAIGN_TAINT and taint.effect == CAMPAIGN_TAINT_EFFECT:
            ours = taint.value
        else:
            others.append(f"{taint.key}:{taint.effect}")
    return bool(node.spec.unschedulable), ours, tuple(sorted(others))


class NodeTaints(NodesOut):
    """``NodesOut``, and every state the pool's nodes went through (``history``: one snapshot of all of them
    per change: cordoned, the campaign's taint, the other taints; ``seen_at``: when each was seen)."""

    def __init__(self, cluster: Cluster, pool: str) -> None:
        super().__init__(cluster, pool)
        self.now: dict[str, NodeState] = {}
        self.history: list[dict[str, NodeState]] = []
        #: when the watcher saw each snapshot of ``history`` (wall clock)
        self.seen_at: list[float] = []

    def _seed(self, items: list[Any]) -> None:
        super()._seed(items)
        self.now = {node.metadata.name: state_of(node) for node in items}
        self.history.append(dict(self.now))
        self.seen_at.append(time.time())

    def _apply(self, kind: str, node: Any) -> None:
        super()._apply(kind, node)
        if not self.history:
            return  # seeding: one snapshot once all are in
        if kind == "DELETED":
            self.now.pop(node.metadata.name, None)
        else:
            self.now[node.metadata.name] = state_of(node)
        if self.history[-1] != self.now:
            self.history.append(dict(self.now))
            self.seen_at.append(time.time())

    def tainted_between(self, since: float, until: float) -> set[str]:
        """The nodes any snapshot seen from ``since`` to ``until`` shows with a campaign's taint."""
        return {
            name
            for at, snapshot in zip(self.seen_at, self.history, strict=True)
            if since <= at <= until
            for name, (_, ours, _) in snapshot.items()
            if ours is not None
        }

    def ever_tainted(self) -> set[str]:
        return {name for snapshot in self.history for name, (_, ours, _) in snapshot.items() if ours is not None}


def zoned_nodes(cluster: Cluster, dedicated_nodes: Any, count: int) -> dict[str, str]:
    """``count`` dedicated nodes spread over three zones: name -> zone."""
    names = dedicated_nodes(count)
    zones = {}
    for index, name in enumerate(names):
        zones[name] = ZONES[index % len(ZONES)]
        cluster.core.patch_node(name, {"metadata": {"labels": {ZONE_LABEL: zones[name]}}})
    return zones


def stamp(event: dict[str, Any]) -> float:
    """When a ``-o jsonl`` event happened, in epoch seconds."""
    return dt.datetime.fromisoformat(event["at"].replace("Z", "+00:00")).timestamp()


def campaign(kubeconfig: Path, *args: str, timeout: float = 240) -> Any:
    return run_plugin("campaign", *args, "-o", "jsonl", kubeconfig=kubeconfig, timeout=timeout)


def by_type(result: Any, kind: str) -> list[dict[str, Any]]:
    return [e for e in events(result) if e["type"] == kind]


def agent_on_every_node(cluster: Cluster, namespace: str, nodes: int, *, timeout: float = 60) -> None:
    """DaemonSet ``agent`` on the test's nodes, Ready on all ``nodes`` of them."""
    cluster.apps.create_namespaced_daemon_set(
        namespace, manifests.daemonset("agent", pod_spec=manifests.placement(namespace))
    )
    watching.until(
        cluster.apps.list_namespaced_daemon_set,
        lambda d: (d.status.number_ready or 0) == nodes,
        namespace=namespace,
        timeout=timeout,
        what=f"agent on {nodes} nodes",
    )


def node_snapshot(cluster: Cluster, node: str) -> tuple[Any, ...]:
    """What a campaign could change on a node: its cordon, its labels (kwok's heartbeats change its status and
    resourceVersion, the node controllers add beta labels and lift start-up taints on their own)."""
    fresh = cluster.core.read_node(node)
    labels = {k: v for k, v in (fresh.metadata.labels or {}).items() if not k.startswith("beta.kubernetes.io/")}
    return bool(fresh.spec.unschedulable), labels


def draining_events(cluster: Cluster, node: str) -> int:
    """How many times a drain started on ``node``, as its Kubernetes Events say (``Draining``)."""
    listing = cluster.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.kind=Node,involvedObject.name={node},reason=Draining"
    )
    return sum(e.count or 1 for e in listing.items)


def node_event_reasons(cluster: Cluster, node: str) -> list[str]:
    """The reasons of the Kubernetes Events on ``node``."""
    listing = cluster.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.kind=Node,involvedObject.name={node}"
    )
    return [e.reason for e in listing.items]


def all_available(cluster: Cluster, namespace: str) -> dict[str, tuple[int, int]]:
    """Each Deployment and StatefulSet of ``namespace``: (available, desired)."""
    found = {}
    for d in cluster.apps.list_namespaced_deployment(namespace).items:
        found[d.metadata.name] = ((d.status.available_replicas or 0), d.spec.replicas)
    for s in cluster.apps.list_namespaced_stateful_set(namespace).items:
        found[s.metadata.name] = ((s.status.available_replicas or 0), s.spec.replicas)
    return found


# --- the main scenario ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """A pool of dedicated nodes in three zones and its workloads: Deployments under PDBs of each kind (their
    names: replicas, PDB spec), the singleton ``solo`` behind minAvailable 1, the StatefulSet ``db`` of three
    behind maxUnavailable 1 and the DaemonSet ``agent`` on every node."""

    nodes: int
    deployments: dict[str, tuple[int, dict[str, Any]]]
    #: each node's bound (``--timeout``) before ``--on-blocked surge``: past what a wave's PDB chains take on a
    #: busy machine (a StatefulSet's pod cannot be surged), and what the singleton waits before its surge
    timeout: str = "60s"

    @staticmethod
    def lowest(replicas: int, spec: dict[str, Any]) -> int:
        """The fewest healthy pods a PDB of ``spec`` over ``replicas`` pods allows."""
        if "max_unavailable" in spec:
            return replicas - spec["max_unavailable"]
        percent = int(str(spec["min_available"]).rstrip("%"))
        return -(-replicas * percent // 100)


def rotate_pool(
    pool: Pool, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path
) -> None:
    """Drain ``pool`` with a budget of 20 % one zone at a time, each node replaced by its after-hook, and check
    by watching that the budget, the zones and every PDB held throughout, and that every node was replaced."""
    zones = zoned_nodes(cluster, dedicated_nodes, pool.nodes)
    # the DaemonSet first, as on a real node, and before the Deployments' pods queue up at the scheduler and kwok
    agent_on_every_node(cluster, namespace, pool.nodes, timeout=240)
    ready = {manifests.READY_AFTER: "1s"}
    for name, (replicas, _spec) in pool.deployments.items():
        deploy(cluster, namespace, name, replicas, pool=namespace, annotations=ready, wait=False)
    deploy(cluster, namespace, "solo", 1, pool=namespace, annotations=ready, wait=False)
    cluster.apps.create_namespaced_stateful_set(
        namespace, manifests.statefulset("db", replicas=3, pod_spec=manifests.placement(namespace))
    )
    wanted = {name: replicas for name, (replicas, _) in pool.deployments.items()} | {"solo": 1}
    watching.until_collection(
        cluster.apps.list_namespaced_deployment,
        lambda items: sum((d.status.available_replicas or 0) == wanted[d.metadata.name] for d in items) == len(wanted),
        namespace=namespace,
        timeout=240,
        what="every Deployment available",
    )
    watching.until(
        cluster.apps.list_namespaced_stateful_set,
        lambda s: (s.status.available_replicas or 0) == 3,
        namespace=namespace,
        timeout=60,
        what="db available",
    )
    wanted["db"] = 3
    for name, (replicas, spec) in pool.deployments.items():
        add_pdb(cluster, namespace, name, app=name, expected=replicas, **spec)
    add_pdb(cluster, namespace, "solo", app="solo", expected=1, min_available=1)
    add_pdb(cluster, namespace, "db", app="db", expected=3, max_unavailable=1)
    hook = tmp_path / "replace.py"
    hook.write_text(REPLACE_NODE)
    uids = {n: cluster.core.read_node(n).metadata.uid for n in zones}
    out = NodesOut(cluster, namespace).start()
    healthy = HealthyPods(cluster, namespace).start()
    try:
        result = campaign(
            kubeconfig,
            "-l",
            f"{manifests.POOL_LABEL}={namespace}",
            "--budget",
            "20%",
            "--per-zone",
            "--soak",
            "1s",
            "--ignore-daemonsets",
            # solo (one replica behind minAvailable 1) can leave only through a surge
            "--on-blocked",
            "surge",
            "--timeout",
            pool.timeout,
            "--post-hook",
            f"{sys.executable} {hook}",
            timeout=900,
        )
        healthy.settle(wanted | {"agent": pool.nodes}, timeout=120)
    except BaseException:
        # A campaign cut short (the test's time limit kills it) may leave a surge record on one of these
        # Deployments, which the next drain on this cluster would restore as a leftover of its own.
        cluster.apps.delete_collection_namespaced_deployment(namespace)
        raise
    finally:
        minimum = healthy.stop()
        out.stop()
    # a failure names the nodes kept or skipped and why (the JobFinished line says only how many)
    assert result.returncode == 0, (result.stderr, by_type(result, "NodeKept"), by_type(result, "NodeSkipped"))
    planned = by_type(result, "CampaignPlanned")[0]
    # 20 % of the pool, rounded up; one zone at a time: each zone's third of the pool in waves of the budget
    budget = -(-pool.nodes * 20 // 100)
    assert planned["budget"] == budget
    per_zone = pool.nodes // len(ZONES)
    zone_waves = [budget] * (per_zone // budget) + ([per_zone % budget] if per_zone % budget else [])
    assert [len(w["nodes"]) for w in planned["waves"]] == zone_waves * len(ZONES)
    assert all(len(w["zones"]) == 1 for w in planned["waves"])
    # what the cluster went through, as the watchers saw it
    assert out.most_out <= budget, out.out_sets
    assert out.most_zones == 1, out.out_sets
    for name, (replicas, spec) in pool.deployments.items():
        assert minimum[name] >= pool.lowest(replicas, spec), (name, minimum)
    assert minimum["solo"] >= 1, minimum
    assert minimum["db"] >= 2, minimum
    # every node drained, then replaced by its after-hook: a fresh node of the same name, schedulable
    done = {e["node"]: e for e in by_type(result, "NodeDone")}
    assert set(done) == set(zones)
    assert all(e["replaced"] for e in done.values())
    for name in zones:
        fresh = cluster.core.read_node(name)
        assert fresh.metadata.uid != uids[name]
        assert not fresh.spec.unschedulable
        assert out.cordoned_at[name], f"{name} was never cordoned"
    assert all_available(cluster, namespace) == {name: (r, r) for name, r in wanted.items()}
    # the soak's count the screen draws: each wave's starts (again) once its workloads are available, it lasts
    # the soak, and its nodes are soaked no earlier than its last count said
    counting: dict[int, dict[str, Any]] = {e["index"]: e for e in by_type(result, "SoakCounting")}
    assert set(counting) == {w["index"] for w in planned["waves"]}
    for count in counting.values():
        assert count["until"] - stamp(count) == pytest.approx(1.0, abs=0.05), count
    for soaked in by_type(result, "NodeSoaked"):
        assert stamp(soaked) >= counting[soaked["index"]]["until"] - 0.01, soaked
    hooks = by_type(result, "HookRan")
    assert len(hooks) == pool.nodes
    assert all(h["exit_code"] == 0 and h["hook"] == "post" for h in hooks)
    # `kubectl describe node` tells the campaign's steps on each node, each once (Events keep whole seconds: the
    # order of two in one second is not kept)
    campaign_steps = ["CampaignDone", "CampaignHookRan", "CampaignSoaked", "CampaignWaveStarted"]
    for name in zones:
        reasons = sorted(r for r in node_event_reasons(cluster, name) if r.startswith("Campaign"))
        assert reasons == campaign_steps, (name, reasons)


@pytest.mark.timeout(600)  # 280 s under a loaded CI, the singleton's 60 s before its surge included
def test_a_pool_in_waves_keeps_the_budget_one_zone_at_a_time_and_every_pdb_and_replaces_each_node(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path
) -> None:
    pool = Pool(nodes=9, deployments={"web": (9, {"max_unavailable": 1}), "api": (10, {"min_available": "90%"})})
    rotate_pool(pool, cluster, namespace, dedicated_nodes, kubeconfig, tmp_path)


#: the issue's pool: 30 nodes, 15 Deployments of 600 pods between them (ten behind maxUnavailable 1, four behind
#: minAvailable 90 %, the singleton), a StatefulSet, a DaemonSet
THIRTY_NODES = Pool(
    nodes=30,
    deployments={f"web{i}": (43, {"max_unavailable": 1}) for i in range(10)}
    | {f"api{i}": (42, {"min_available": "90%"}) for i in range(4)},
    # a wave of six nodes holds about nine pods of each Deployment behind maxUnavailable 1: eight replacements
    # in a row, each Ready a second after it starts; 20 s was too short on a loaded CI machine (nodes kept), and
    # so was 90 s once (4 of 30 nodes kept, the test 558 s with the suite's two other runs beside it)
    timeout="150s",
)


@pytest.mark.serial
# Last and alone (conftest.py ALONE): beside the suite's other runs on a 2-core machine under coverage, the
# campaign alone outran 600 s (CI, stop 33), its nodes outran 90 s (stop 30).
@pytest.mark.serial_stream("alone")
@pytest.mark.timeout(1200)  # 335 s alone on a quiet machine, 475 s beside the unit suite under coverage
def test_thirty_nodes_and_six_hundred_pods_in_waves_keep_the_budget_the_zones_and_every_pdb(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path
) -> None:
    rotate_pool(THIRTY_NODES, cluster, namespace, dedicated_nodes, kubeconfig, tmp_path)


# --- the plan and bad input -----------------------------------------------------------------------------


def test_the_plan_shows_the_waves_their_blockers_and_the_ruled_pods_and_changes_nothing(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    zones = zoned_nodes(cluster, dedicated_nodes, 3)
    first, *others = sorted(zones)
    with only_schedulable(cluster, first, others):
        deploy(cluster, namespace, "web", 3, pool=namespace)
        add_pdb(cluster, namespace, "web", app="web", expected=3, max_unavailable=1)
        deploy(cluster, namespace, "batch", 1, pool=namespace, labels={"cluster.x-k8s.io/drain": "wait-completed"})
        deploy(cluster, namespace, "cache", 1, pool=namespace, annotations={"karpenter.sh/do-not-disrupt": "true"})
    before = {n: node_snapshot(cluster, n) for n in zones}

    result = run_plugin("campaign", *sorted(zones), "--order", "given", "--plan", "-o", "json", kubeconfig=kubeconfig)

    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["type"] == "CampaignPlanned"
    assert [[n["name"] for n in w["nodes"]] for w in plan["waves"]] == [[first], [others[0]], [others[1]]]
    wave = plan["waves"][0]
    assert wave["pods"] == 3  # web's three; the ruled pods stay
    assert [(b["pdb"], b["pods"], b["allowed"], b["rounds"]) for b in wave["blockers"]] == [
        (f"{namespace}/web", 3, 1, 3)
    ]
    ruled = {p["pod"]["name"].split("-")[0]: (p["rule"], p["source"]) for p in plan["ruled_pods"]}
    assert ruled == {
        "batch": ("wait-completed", "cluster.x-k8s.io/drain=wait-completed"),
        "cache": ("do-not-disrupt", "karpenter.sh/do-not-disrupt=true"),
    }
    assert {n: node_snapshot(cluster, n) for n in zones} == before


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--budget", "0"], 2, "--budget '0' lets no node out at a time"),
        (["--budget", "101%"], 2, "--budget '101%' is more than 100%"),
        (["--window", "Mon-Fri 22:00"], 2, "is not START-END"),
        (["--window", "Mon-Fri 22:00-04:00 Mars/Olympus"], 2, "unknown time zone 'Mars/Olympus'"),
        (["--rate", "3"], 2, "--rate '3' is not N/PERIOD"),
        (["--on-blocked", "skip"], 2, "--on-blocked skip acts on a node not drained within --timeout"),
        (["-l", "rollout-plus.test/pool=nothing-here"], 1, 'no node matches the selector "rollout-plus.test/pool='),
        (["no-such-node"], 1, 'node "no-such-node" not found'),
    ],
)
def test_bad_input_is_one_clear_line_and_nothing_is_cordoned(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, args: list[str], code: int, message: str
) -> None:
    (node,) = dedicated_nodes(1)
    before = node_snapshot(cluster, node)
    target = [] if any(a.startswith("-l") or a == "no-such-node" for a in args) else [node]
    result = run_plugin("campaign", *target, *args, kubeconfig=kubeconfig)
    assert result.returncode == code, result.stdout + result.stderr
    # one line says what is wrong (click's usage lines may come before it, as for every command)
    errors = [line for line in result.stderr.splitlines() if line.lower().startswith("error")]
    assert len(errors) == 1, result.stderr
    assert message in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert node_snapshot(cluster, node) == before


# --- per-pod rules and blocked nodes --------------------------------------------------------------------


def test_per_pod_rules_skip_a_pod_and_hold_the_node_for_another_until_its_rule_is_lifted(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    target, spare = dedicated_nodes(2)
    with only_schedulable(cluster, target, [spare]):
        deploy(cluster, namespace, "web", 2, pool=namespace)
        deploy(cluster, namespace, "stay", 1, pool=namespace, labels={"cluster.x-k8s.io/drain": "skip"})
        deploy(cluster, namespace, "hold", 1, pool=namespace, annotations={"karpenter.sh/do-not-disrupt": "true"})
    (held,) = [p for p in pods_on(cluster, target) if p.metadata.name.startswith("hold-")]
    (stay,) = [p for p in pods_on(cluster, target) if p.metadata.name.startswith("stay-")]
    running = RunningPlugin(
        "campaign", target, "--timeout", "120s", "--on-blocked", "keep", "-o", "jsonl", kubeconfig=kubeconfig
    )
    line = running.wait_for(lambda text: '"type": "PodsHeld"' in text, timeout=60, what="the held pod")
    assert json.loads(line)["pods"][0]["pod"]["name"] == held.metadata.name
    # Held: the web pods are gone, the held pod is still there, not terminating.
    still = cluster.core.read_namespaced_pod(held.metadata.name, namespace)
    assert still.metadata.deletion_timestamp is None
    assert [p.metadata.name for p in pods_on(cluster, target) if p.metadata.name.startswith("web-")] == []
    lifted_at = time.time()
    cluster.core.patch_namespaced_pod(
        held.metadata.name, namespace, {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": None}}}
    )
    result = running.finish(timeout=120)
    assert result.returncode == 0, result.stderr
    names = {p.metadata.name for p in pods_on(cluster, target)}
    assert held.metadata.name not in names  # evicted once its rule was lifted
    assert stay.metadata.name in names  # cluster.x-k8s.io/drain=skip: left on the drained node
    gone = [e for e in events(result) if e["type"] == "PodEvicted" and e["pod"]["name"] == held.metadata.name]
    assert len(gone) == 1
    assert stamp(gone[0]) >= lifted_at
    assert [e["node"] for e in events(result) if e["type"] == "NodeDone"] == [target]


@pytest.mark.parametrize("choice", ["skip", "keep", "surge"])
def test_a_node_that_cannot_drain_is_skipped_kept_or_surged_as_chosen(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, choice: str
) -> None:
    target, spare = dedicated_nodes(2)
    one_replica_min_available_one(cluster, namespace, target, spare)  # web: one pod, behind minAvailable 1
    (pod,) = pods_on(cluster, target)
    healthy = HealthyPods(cluster, namespace).start()
    try:
        result = campaign(kubeconfig, target, "--timeout", "3s", "--on-blocked", choice)
        healthy.settle({"web": 1})
    finally:
        minimum = healthy.stop()
    assert minimum == {"web": 1}
    node = cluster.core.read_node(target)
    left = {p.metadata.name for p in pods_on(cluster, target)}
    job = events(result)[0]["job"]
    if choice == "skip":
        assert result.returncode == 1
        assert [e["node"] for e in by_type(result, "NodeSkipped")] == [target]
        assert not node.spec.unschedulable  # uncordoned, and left
        assert pod.metadata.name in left
    elif choice == "keep":
        assert result.returncode == 1
        assert [e["node"] for e in by_type(result, "NodeKept")] == [target]
        assert node.spec.unschedulable
        assert node.metadata.labels[KEPT_LABEL] == job
        assert pod.metadata.name in left
    else:
        assert result.returncode == 0, result.stderr
        assert [e["node"] for e in by_type(result, "NodeDone")] == [target]
        assert by_type(result, "SurgeStarted")
        assert left == set()
        assert cluster.apps.read_namespaced_deployment("web", namespace).spec.replicas == 1  # restored


# --- hooks ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("on_failure", ["skip", "stop"])
def test_a_failing_pre_hook_skips_its_node_or_stops_the_campaign(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path, on_failure: str
) -> None:
    first, second, third = dedicated_nodes(3)
    seen = tmp_path / "seen"
    out = NodesOut(cluster, namespace).start()
    try:
        result = campaign(
            kubeconfig,
            first,
            second,
            third,
            "--order",
            "given",
            "--pre-hook",
            f'echo "$ROLLOUT_PLUS_NODE $ROLLOUT_PLUS_JOB $ROLLOUT_PLUS_HOOK" >> {seen}; '
            f'test "$ROLLOUT_PLUS_NODE" != {second}',
            "--on-hook-failure",
            on_failure,
            "--pre-label",
            "maintenance=running",
            "--post-label",
            "maintenance-",
            "--post-label",
            "patched=yes",
        )
    finally:
        out.stop()
    assert result.returncode == 1
    job = events(result)[0]["job"]
    labels = {n: cluster.core.read_node(n).metadata.labels for n in (first, second, third)}
    # kured's pre/post labels: set before the cordon, swapped after the drain; a node turned away keeps its own
    assert labels[first].get("patched") == "yes"
    assert "maintenance" not in labels[first]
    assert "patched" not in labels[second]
    assert "maintenance" not in labels[second]
    finished = by_type(result, "CampaignFinished")[0]
    assert second not in out.cordoned_at  # its pre-hook failed before its cordon
    assert not cluster.core.read_node(second).spec.unschedulable
    if on_failure == "skip":
        assert seen.read_text().splitlines() == [f"{n} {job} pre" for n in (first, second, third)]
        assert finished["done"] == [first, third]
        assert finished["skipped"] == [second]
        assert labels[third].get("patched") == "yes"
    else:
        assert seen.read_text().splitlines() == [f"{n} {job} pre" for n in (first, second)]
        assert finished["done"] == [first]
        assert finished["not_started"] == [second, third]
        assert third not in out.cordoned_at
        assert "patched" not in labels[third]
        assert "pre-hook exited 1" in finished["stopped"]


# --- windows and a resume across them ---------------------------------------------------------------------


def _clock(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%H:%M:%S")


def two_windows(*, first_close: float, second_open: float) -> tuple[str, str]:
    """Two daily windows (``--window``): one open now until ``first_close``, one from ``second_open`` on."""
    return (
        f"daily {_clock(time.time() - 1)}-{_clock(first_close)} UTC",
        f"daily {_clock(second_open)}-{_clock(second_open + 600)} UTC",
    )


def test_a_window_that_closes_mid_campaign_is_waited_for_across_an_agent_sigkill_and_no_node_is_drained_twice(
    agent_dir: AgentPaths,  # noqa: F811  (the fixture imported above)
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    nodes = dedicated_nodes(5)
    deploy(cluster, namespace, "web", 8, pool=namespace, annotations={manifests.READY_AFTER: "1s"})
    add_pdb(cluster, namespace, "web", app="web", expected=8, max_unavailable=1)
    out = NodeTaints(cluster, namespace).start()
    healthy = HealthyPods(cluster, namespace).start()
    try:
        with connect(name="test") as agent:  # the agent is up before the clock of the windows starts
            pid = agent.agent["pid"]
            # A wave takes its drain and a 3 s soak: at most three start in the first window (8 s), the
            # second opens 20 s later (time to finish the wave in progress, kill and restart the agent), so
            # at least two of the five nodes wait for it.
            start = time.time()
            first_close = start + 8
            second_open = first_close + 20
            windows = two_windows(first_close=first_close, second_open=second_open)
            spec = JobSpec(
                kind=JobKind.CAMPAIGN,
                connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
                campaign=CampaignJob(
                    nodes=tuple(nodes), budget="1", soak=3.0, windows=windows, drain=DrainOptions(timeout=0)
                ),
            )
            job = agent.submit(spec)
        # the wait between the windows: nothing in progress any more, the soft taint taken off the nodes still
        # to come (which come after the WindowClosed that starts the wait)
        before = _follow(job.id, until=lambda e: isinstance(e, ev.PendingUntainted) and e.reason == "window")
        lifted_at = time.time()
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        killed_at = time.time()
        assert killed_at < second_open, "the agent was killed after the second window opened: too slow a machine"
        # The next client starts a new agent, which resumes the campaign from the journal.
        with connect(name="test") as agent:
            assert agent.agent["pid"] != pid
        after = _follow(job.id, from_seq=before[-1].seq + 1)
        healthy.settle({"web": 8}, timeout=60)
    finally:
        minimum = healthy.stop()
        out.stop()
    finished = after[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, [type(e.event).__name__ for e in after]
    done_before = [e.event.node for e in before if isinstance(e.event, ev.NodeDone)]
    done_after = [e.event.node for e in after if isinstance(e.event, ev.NodeDone)]
    assert 1 <= len(done_before) <= 3, done_before
    assert sorted(done_before + done_after) == sorted(nodes)  # each node done once, across both runs
    starts = [e.event for e in before + after if isinstance(e.event, JobStarted)]
    assert [s.resumed for s in starts] == [False, True]
    resumed_plan = next(e.event for e in after if isinstance(e.event, ev.CampaignPlanned))
    assert sorted(resumed_plan.done) == sorted(done_before)
    # No node started between the windows: every cordon is inside one (a second's slack for the clock).
    for name, stamps in out.cordoned_at.items():
        for stamp in stamps:
            assert stamp <= first_close + 1 or stamp >= second_open - 1, (name, _clock(stamp))
    # Each node was drained once: one cordon by the campaign, one Draining Event on the node.
    cordons = [e.event for e in before + after if isinstance(e.event, NodeCordoned) and e.event.changed]
    assert sorted(c.node for c in cordons) == sorted(nodes)
    assert {n: draining_events(cluster, n) for n in nodes} == dict.fromkeys(nodes, 1)
    assert minimum["web"] >= 7, minimum
    assert all(not cluster.core.read_node(n).spec.unschedulable for n in nodes)
    # The soft taint: off the nodes still to come while the job waits for the second window (the resumed
    # agent, which takes the killed one's taints over, does not put it back while the window is closed), back
    # on each of them once it opens, and off every node at the end.
    lifted = next(e.event for e in before if isinstance(e.event, ev.PendingUntainted))
    assert sorted(lifted.nodes) == sorted(done_after), (lifted, done_after)
    assert out.tainted_between(lifted_at + 1, second_open - 1) == set()
    assert out.tainted_between(second_open - 1, time.time()) == set(done_after)
    retainted = [e.event for e in after if isinstance(e.event, ev.PendingTainted)]
    assert retainted, [type(e.event).__name__ for e in after]
    assert sorted(retainted[0].nodes) == sorted(done_after), retainted
    assert all(ours is None for _, ours, _ in out.now.values()), out.now


def test_at_the_windows_end_stop_stops_the_drain_in_progress_and_the_next_window_finishes_it(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path
) -> None:
    target, spare = dedicated_nodes(2)
    # Six pods behind maxUnavailable 1, each replacement Ready 8 s after it starts: 40 s and more to drain the
    # node, so the first window ends mid-drain; it is 25 s long, as the command may take 15 s to start its wave
    # on a loaded machine (under load 15, 10 s were not enough: the window closed before the wave started).
    with only_schedulable(cluster, target, [spare]):
        deploy(cluster, namespace, "web", 6, pool=namespace, annotations={manifests.READY_AFTER: "8s"})
        add_pdb(cluster, namespace, "web", app="web", expected=6, max_unavailable=1)
    start = time.time()
    first_close = start + 25
    second_open = first_close + 8
    out = NodesOut(cluster, namespace).start()
    try:
        result = campaign(
            kubeconfig,
            target,
            *(
                arg
                for window in two_windows(first_close=first_close, second_open=second_open)
                for arg in ("--window", window)
            ),
            "--at-window-end",
            "stop",
            "--pre-hook",
            f"echo $ROLLOUT_PLUS_NODE >> {tmp_path / 'asked'}",
        )
    finally:
        out.stop()
    assert result.returncode == 0, result.stderr
    seen = events(result)
    closed = [e for e in seen if e["type"] == "WindowClosed"]
    assert closed[0]["in_progress"] == [target]
    assert closed[0]["at_window_end"] == "stop"
    evictions = [stamp(e) for e in seen if e["type"] == "PodEvicted"]
    assert len(evictions) == 6
    # Stopped at the first window's end, the rest evicted in the second: none in between.
    assert any(t < first_close + 1 for t in evictions)
    assert any(t >= second_open - 1 for t in evictions)
    assert all(t < first_close + 1 or t >= second_open - 1 for t in evictions), evictions
    # The node stayed cordoned across the gap: cordoned once, by the first window's wave; its pre-hook, asked
    # once, is not asked again when its wave goes on.
    assert len(out.cordoned_at[target]) == 1
    assert (tmp_path / "asked").read_text().splitlines() == [target]
    assert [e["node"] for e in seen if e["type"] == "NodeDone"] == [target]
    assert [p for p in pods_on(cluster, target) if p.metadata.namespace == namespace] == []


def test_a_rate_spaces_the_starts_of_the_waves(cluster: Cluster, dedicated_nodes: Any, kubeconfig: Path) -> None:
    nodes = dedicated_nodes(3)
    result = campaign(kubeconfig, *nodes, "--budget", "100%", "--rate", "1/2s", "--order", "given")
    assert result.returncode == 0, result.stderr
    seen = events(result)
    waves = [e for e in seen if e["type"] == "WaveStarted"]
    # 100 % of three nodes, but one node per 2 s: three waves of one, each at least 2 s after the last
    assert [w["nodes"] for w in waves] == [[n] for n in nodes]
    starts = [stamp(w) for w in waves]
    assert all(later - earlier >= 1.9 for earlier, later in itertools.pairwise(starts)), starts
    assert len([e for e in seen if e["type"] == "WaitingForRate"]) == 2


def test_a_node_that_fails_stops_the_campaign_so_the_budget_holds(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    first, second = dedicated_nodes(2)
    # A DaemonSet pod without --ignore-daemonsets: kubectl's "cannot delete", the node fails and stays cordoned.
    agent_on_every_node(cluster, namespace, 2)
    out = NodesOut(cluster, namespace).start()
    try:
        result = campaign(kubeconfig, first, second, "--order", "given")
    finally:
        out.stop()
    assert result.returncode == 1
    finished = by_type(result, "CampaignFinished")[0]
    assert finished["failed"] == [first]
    assert finished["not_started"] == [second]
    assert "could not be drained" in finished["stopped"]
    (failed,) = by_type(result, "NodeDrainFailed")
    assert "cannot delete DaemonSet-managed Pods" in failed["reasons"][0]
    assert cluster.core.read_node(first).spec.unschedulable
    assert second not in out.cordoned_at
    assert out.most_out == 1


def test_a_paused_campaign_starts_no_wave_until_it_is_resumed(
    agent_dir: AgentPaths,  # noqa: F811  (the fixture imported above)
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    from kubectl_rollout.jobs.events.job import JobPaused, JobResumed

    first, second = dedicated_nodes(2)
    # A 2 s soak after the first wave: the pause, asked as the first wave starts, lands before the second.
    spec = JobSpec(
        kind=JobKind.CAMPAIGN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        campaign=CampaignJob(nodes=(first, second), budget="1", soak=2.0, order=NodeOrder.GIVEN),
    )
    out = NodesOut(cluster, namespace).start()
    try:
        with connect(name="test") as agent:
            job = agent.submit(spec)
        _follow(job.id, until=lambda e: isinstance(e, ev.WaveStarted))
        with connect(name="test") as agent:
            assert agent.pause(job.id).paused
        _follow(job.id, until=lambda e: isinstance(e, ev.NodeDone) and e.node == first)
        # Paused, it must start no wave: the node watch sees no cordon of the second node for several times a
        # wave's pace (it would fail at once, on the event, if one came).
        assert not out.wait(lambda: second in out.cordoned_at, timeout=4), "a wave started while it was paused"
        resumed_at = time.time()
        with connect(name="test") as agent:
            assert not agent.resume(job.id).paused
        seen = _follow(job.id)
    finally:
        out.stop()
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished
    assert out.cordoned_at[second][0] >= resumed_at
    kinds = [type(e.event) for e in seen]
    assert kinds.index(JobPaused) < kinds.index(JobResumed)


def test_a_node_gone_before_its_wave_is_skipped_and_the_campaign_goes_on(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path
) -> None:
    first, second, third = dedicated_nodes(3)
    # The first node's pre-hook deletes the second node, as an autoscaler might between two waves.
    hook = tmp_path / "delete.py"
    hook.write_text(
        "import os\nfrom kubernetes import client, config\nconfig.load_kube_config()\n"
        f"if os.environ['ROLLOUT_PLUS_NODE'] == {first!r}:\n    client.CoreV1Api().delete_node({second!r})\n"
    )
    result = campaign(kubeconfig, first, second, third, "--order", "given", "--pre-hook", f"{sys.executable} {hook}")
    assert result.returncode == 1
    finished = by_type(result, "CampaignFinished")[0]
    assert finished["done"] == [first, third]
    assert finished["skipped"] == [second]
    assert [e["reason"] for e in by_type(result, "NodeSkipped")] == ["the node is gone"]
