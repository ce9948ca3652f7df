"""Commands and flags run end to end as a user runs them (a separate process against the real cluster),
and the bad inputs each must refuse in one clear line, exit non-zero, the cluster unchanged."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
import yaml
from cluster_setup import deploy
from integration.test_drain import cordons_before_the_first_eviction, one_pod_on_each
from invariants import PodCensus
from plugin import events, run_plugin
from timeline import Timeline
from watching import Follower

from kubectl_rollout.kube.cluster_access import Cluster

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, name: str, *documents: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents))
    return path


def workload(name: str, replicas: int, image: str = manifests.IMAGE, **strategy: Any) -> dict[str, Any]:
    document = manifests.deployment(name, replicas=replicas, annotations={manifests.READY_AFTER: "1s"})
    document["spec"]["template"]["spec"]["containers"][0]["image"] = image
    if strategy:
        document["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": strategy}
    return document


#: published into every namespace by the root-CA controller, a moment after the namespace is made
ROOT_CA = "kube-root-ca.crt"


def namespace_state(cluster: Cluster, namespace: str) -> tuple[set[str], set[str], set[str]]:
    """What a command may create in a namespace (not what the control plane adds there on its own)."""
    return (
        {c.metadata.name for c in cluster.core.list_namespaced_config_map(namespace).items} - {ROOT_CA},
        {r.metadata.name for r in cluster.apps.list_namespaced_replica_set(namespace).items},
        {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items},
    )


def node_spec(cluster: Cluster, node: str) -> Any:
    """What a command may change on a node: cordoned or not (its status and the controllers' taints
    change on their own)."""
    return cluster.core.read_node(node).spec.unschedulable


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


# --- cordon / uncordon alone, and node-name completion -------------------------------------------------


def test_cordon_and_uncordon_alone(cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    pods = {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items}

    outputs = [run_plugin(verb, target, kubeconfig=kubeconfig) for verb in ("cordon", "cordon")]
    cordoned = cluster.core.read_node(target).spec.unschedulable
    outputs += [run_plugin(verb, target, kubeconfig=kubeconfig) for verb in ("uncordon", "uncordon")]

    assert [o.returncode for o in outputs] == [0, 0, 0, 0], [o.stderr for o in outputs]
    assert [o.stdout.strip() for o in outputs] == [
        f"node/{target} cordoned",
        f"node/{target} already cordoned",
        f"node/{target} uncordoned",
        f"node/{target} already uncordoned",
    ]
    assert cordoned is True
    assert not cluster.core.read_node(target).spec.unschedulable
    # cordoning moves no pod
    assert {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items} == pods


def test_cordon_of_a_node_that_does_not_exist_changes_nothing(kubeconfig: Path) -> None:
    result = run_plugin("cordon", "no-such-node", kubeconfig=kubeconfig)
    assert result.returncode == 1
    assert 'node "no-such-node" not found' in one_line(result.stderr)


def test_node_names_complete_from_the_cluster(namespace: str, dedicated_nodes: Any, kubeconfig: Path) -> None:
    nodes = dedicated_nodes(2)
    # kubectl finds the completer on PATH, as on a user's machine: the .venv's bin (where pip put it) and .bin
    # (the Go-built kubectl) go first, whatever PATH the suite was started with (CI runs .venv/bin/pytest).
    path = os.pathsep.join([str(Path(sys.executable).parent), str(ROOT / ".bin"), os.environ.get("PATH", "")])
    completer = shutil.which("kubectl_complete-rollout_plus", path=path)
    kubectl = shutil.which("kubectl", path=path)
    assert completer is not None, f"kubectl_complete-rollout_plus is not installed beside {sys.executable}"
    assert kubectl is not None, f"no kubectl in {ROOT / '.bin'}: run make setup"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PATH": path}

    import subprocess

    # as kubectl asks a plugin: `kubectl __complete rollout-plus drain PREFIX`
    answer = subprocess.run(
        [kubectl, "__complete", "rollout-plus", "drain", namespace[:20]],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )

    assert answer.returncode == 0, answer.stderr
    candidates = [line.split("\t")[0] for line in answer.stdout.splitlines() if not line.startswith(":")]
    assert sorted(candidates) == sorted(nodes)


# --- drain flags ---------------------------------------------------------------------------------------


class TerminatingPods(Follower):
    """The most pods of a namespace terminating at once (marked for deletion, not gone yet)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        super().__init__()
        self.cluster, self.namespace = cluster, namespace
        self._terminating: set[str] = set()
        self.most = 0

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.core.list_namespaced_pod, {"namespace": self.namespace}

    def _seed(self, items: list[Any]) -> None:
        for pod in items:
            self._apply("ADDED", pod)

    def _apply(self, kind: str, pod: Any) -> None:
        if kind == "DELETED":
            self._terminating.discard(pod.metadata.name)
        elif pod.metadata.deletion_timestamp is not None:
            self._terminating.add(pod.metadata.name)
        self.most = max(self.most, len(self._terminating))

    def start(self) -> TerminatingPods:
        self._follow()
        return self

    def stop(self) -> int:
        self._end()
        return self.most


def test_max_concurrent_evictions_bounds_the_pods_terminating_at_once(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    # Pods that linger 2 s after deletion, so that the evictions in flight overlap and can be counted.
    deploy(
        cluster,
        namespace,
        "slow",
        6,
        pool=namespace,
        annotations={manifests.ON_SIGTERM: "ignore"},
        pod_spec={"terminationGracePeriodSeconds": 2},
    )
    # Watched until after the drain, every pod's end included (stop catches up with the cluster).
    terminating = TerminatingPods(cluster, namespace).start()
    result = run_plugin(
        "drain", target, "--max-concurrent-evictions", "2", "--timeout", "90s", "-o", "jsonl", kubeconfig=kubeconfig
    )
    most = terminating.stop()

    assert result.returncode == 0, result.stderr
    assert sum(e["type"] == "PodEvicted" for e in events(result)) == 6
    assert most == 2
    # The events agree with the cluster: a pod is "evicting" only once it holds one of the 2 slots.
    evicting: set[str] = set()
    most_said = 0
    for event in events(result):
        if event["type"] == "EvictionStarted":
            evicting.add(event["pod"]["name"])
        elif event["type"] == "PodGone":
            evicting.discard(event["pod"]["name"])
        most_said = max(most_said, len(evicting))
    assert most_said == 2


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--max-concurrent-evictions", "-1", "Invalid value for '--max-concurrent-evictions': -1 is not in the range"),
        ("--node-batch", "-1", "Invalid value for '--node-batch': -1 is not in the range"),
        ("--node-batch", "0", "Invalid value for '--node-batch': 0 is not in the range"),
        ("--chunk-size", "-5", "Invalid value for '--chunk-size': -5 is not in the range"),
        ("--chunk-size", "lots", "Invalid value for '--chunk-size': 'lots' is not a valid integer"),
        ("--timeout", "soon", "invalid duration 'soon'"),
    ],
)
def test_bad_drain_flags_are_refused_before_anything_changes(
    cluster: Cluster, dedicated_nodes: Any, kubeconfig: Path, flag: str, value: str, message: str
) -> None:
    (target,) = dedicated_nodes(1)
    before = node_spec(cluster, target)

    result = run_plugin("drain", target, flag, value, kubeconfig=kubeconfig)

    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert node_spec(cluster, target) == before


def test_without_node_batch_is_kubectls_order_all_cordoned_first(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    nodes = dedicated_nodes(2)
    one_pod_on_each(cluster, namespace, nodes)
    timeline = (
        Timeline()
        .watch("pod", cluster.core.list_namespaced_pod, namespace=namespace)
        .watch("node", cluster.core.list_node, label_selector=f"{manifests.POOL_LABEL}={namespace}")
    )

    result = run_plugin("drain", "-l", f"{manifests.POOL_LABEL}={namespace}", "-o", "jsonl", kubeconfig=kubeconfig)
    timeline.stop()

    assert result.returncode == 0, result.stderr
    # kubectl's order, in the cluster: every node cordoned before the first pod of any is evicted.
    late = cordons_before_the_first_eviction(timeline, nodes)
    assert late == [], f"not yet cordoned when the cluster took the first pod: {late}"
    kinds = [json.loads(line)["type"] for line in result.stdout.splitlines() if line.startswith("{")]
    assert "BatchStarted" not in kinds
    first_drained = kinds.index("NodeDrained")
    assert kinds[:first_drained].count("NodeCordoned") == len(nodes)


# --- rollout commands ----------------------------------------------------------------------------------


def test_set_image_scale_and_history_end_to_end(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    manifest = write(tmp_path, "web.yaml", workload("web", 2))
    steps = [
        ("apply", "-f", str(manifest)),
        ("set", "image", "web", "app=registry.example/app:v2"),
        ("scale", "web", "--replicas", "3"),
    ]
    for step in steps:
        result = run_plugin(*step, "-n", namespace, "--timeout", "90s", kubeconfig=kubeconfig)
        assert result.returncode == 0, f"{step}: {result.stderr}"

    history = run_plugin("history", "web", "-n", namespace, kubeconfig=kubeconfig)
    first = run_plugin("history", "web", "--revision", "1", "-n", namespace, kubeconfig=kubeconfig)
    missing = run_plugin("history", "web", "--revision", "9", "-n", namespace, kubeconfig=kubeconfig)

    assert history.returncode == 0, history.stderr
    lines = history.stdout.splitlines()
    assert lines[:2] == ["workload/web", "REVISION  CHANGE-CAUSE"]
    assert [line.split()[0] for line in lines[2:]] == ["1", "2"]
    assert first.returncode == 0, first.stderr
    assert "workload/web with revision #1" in first.stdout
    assert f"image: {manifests.IMAGE}" in first.stdout
    assert missing.returncode == 1
    assert "unable to find the specified revision 9 of workload web; revisions: 1, 2" in one_line(missing.stderr)
    running = [p for p in cluster.core.list_namespaced_pod(namespace).items if p.metadata.deletion_timestamp is None]
    assert len(running) == 3
    assert {p.spec.containers[0].image for p in running} == {"registry.example/app:v2"}


def test_ignore_pdb_shrinks_old_replica_sets_as_the_controller_would(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    applied = run_plugin(
        "apply", "-f", str(write(tmp_path, "v1.yaml", workload("web", 4, maxSurge=1, maxUnavailable=1))),
        "-n", namespace, "--timeout", "90s", kubeconfig=kubeconfig,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, manifests.pdb("web", app="web", min_available=4))
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status is not None and p.status.expected_pods == 4,
        namespace=namespace,
        timeout=30,
        what="PDB processed",
    )
    census = PodCensus(cluster, namespace, "web").start()

    v2 = workload("web", 4, image="registry.example/app:v2", maxSurge=1, maxUnavailable=1)
    result = run_plugin(
        "apply", "-f", str(write(tmp_path, "v2.yaml", v2)), "-n", namespace, "--ignore-pdb", "--timeout", "90s",
        kubeconfig=kubeconfig,
    )  # fmt: skip
    census.stop()

    assert result.returncode == 0, result.stderr
    # Without --ignore-pdb the PDB keeps 4 Ready (test_rollouts); with it, maxUnavailable 1 rules, as upstream.
    assert census.fewest_ready == 3
    assert census.most <= 5
    assert "held back by PodDisruptionBudget" not in result.stderr


# --- bad input -----------------------------------------------------------------------------------------


def test_a_multi_document_manifest_is_refused(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    path = write(tmp_path, "two.yaml", workload("web", 1), workload("api", 1))
    before = namespace_state(cluster, namespace)

    result = run_plugin("apply", "-f", str(path), "-n", namespace, kubeconfig=kubeconfig)

    assert result.returncode != 0
    line = one_line(result.stderr)
    assert f"{path} must hold exactly one apps/v1 Deployment manifest (found 2 documents)" in line
    assert namespace_state(cluster, namespace) == before


def test_a_manifest_namespace_that_disagrees_with_n_is_refused(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 1)
    document["metadata"]["namespace"] = "elsewhere"
    path = write(tmp_path, "web.yaml", document)
    before = namespace_state(cluster, namespace)

    result = run_plugin("apply", "-f", str(path), "-n", namespace, kubeconfig=kubeconfig)

    assert result.returncode == 2
    line = one_line(result.stderr)
    # kubectl's words for the same mistake
    assert f'the namespace from the provided object "elsewhere" does not match the namespace "{namespace}"' in line
    assert "You must pass '--namespace=elsewhere' to perform this operation." in line
    assert namespace_state(cluster, namespace) == before


@pytest.mark.parametrize(
    "args",
    [("drain", "NODE"), ("cordon", "NODE"), ("scale", "web", "--replicas", "2"), ("status", "web"), ("version",)],
)
def test_a_wrong_token_is_one_line_about_the_credentials(
    cluster: Cluster, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    (target,) = dedicated_nodes(1)
    config = yaml.safe_load(kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": "not-a-valid-token"}
    wrong = tmp_path / "wrong-token.kubeconfig"
    wrong.write_text(json.dumps(config))
    before = node_spec(cluster, target)

    result = run_plugin(*(target if a == "NODE" else a for a in args), kubeconfig=wrong)

    assert result.returncode == 1
    line = one_line(result.stderr)
    assert "rejected the credentials (401 Unauthorized); refresh them in your kubeconfig and retry" in line
    assert node_spec(cluster, target) == before
