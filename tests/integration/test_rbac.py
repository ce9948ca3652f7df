"""The least-privilege Roles of docs/rbac/, used exactly as written, by a ServiceAccount token.

Each command works with exactly its Role; with one verb taken out it stops
before changing anything and says in one line which verb it lacks. A viewer
(ClusterRole ``view``) gets that line from every rollout command too.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
import yaml
from access_review import allowed, named_permissions
from cluster_setup import deploy
from integration.test_canary_gates import FakePrometheus, job_template, prometheus
from integration.test_drain import add_pdb, by_type, drain, only_schedulable, pods_on
from integration.test_drain_surge import (
    managed_one_replica,
    one_replica_min_available_one,
    replicas_of,
    rs_replicas,
    rs_surge_labels,
    surge_labels,
)
from kubernetes import client
from plugin import run_plugin

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect

__all__ = ["prometheus"]  # the fixture, shared with test_canary_gates.py

ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "docs" / "rbac"
#: least-privilege drains restore and inspect surge records cluster-wide: another test's record (a surging
#: drain of another worker) would need verbs these Roles do not grant. So these tests have a control plane
#: of their own, started once for the module, on one pytest-xdist worker.
CLUSTER_DIR = ROOT / ".cluster" / "rbac"
pytestmark = pytest.mark.xdist_group("rbac")


@pytest.fixture(scope="module")
def kubeconfig() -> Iterator[Path]:
    """This module's own control plane: no other test acts on it meanwhile."""
    script = [sys.executable, str(ROOT / "hack" / "cluster.py")]
    up = subprocess.run([*script, "up", "--dir", str(CLUSTER_DIR), "--nodes", "1"], stdout=subprocess.PIPE, text=True)
    assert up.returncode == 0, f"the RBAC tests' control plane did not start; see {CLUSTER_DIR / 'logs'}"
    yield Path(up.stdout.strip().splitlines()[-1])
    if os.environ.get("ROLLOUT_PLUS_KEEP_CLUSTER") != "1":
        subprocess.run([*script, "down", "--dir", str(CLUSTER_DIR)], capture_output=True)


@pytest.fixture(scope="module")
def cluster(kubeconfig: Path) -> Iterator[Cluster]:
    connection = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    yield connection
    connection.close()


#: what a kubeconfig for a set of rules is made from: (rules file, verb to take out as (resource, verb) or None)
MakeKubeconfig = Callable[..., Path]


def role_document(*names: str) -> dict[str, Any]:
    """docs/rbac/NAME.yaml; of several names, one Role with all their rules: what binding them side by side grants."""
    documents = [yaml.safe_load((RBAC / f"{name}.yaml").read_text()) for name in names]
    assert len({d["kind"] for d in documents}) == 1, f"{names}: a Role and a ClusterRole do not add up to one"
    document: dict[str, Any] = {**documents[0], "rules": [rule for d in documents for rule in d["rules"]]}
    return document


def granted(name: str) -> list[Any]:
    """Every verb docs/rbac/NAME.yaml grants, as test parameters: (resource, verb, the resource as a refusal names
    it, e.g. ``deployments.apps``)."""
    return [
        pytest.param(resource, verb, f"{resource}.{group}" if group else resource, id=f"{verb}-{resource}")
        for rule in role_document(name)["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    ]


def without(document: dict[str, Any], resource: str, verb: str) -> dict[str, Any]:
    """The Role with ``verb`` taken off ``resource`` (and off that resource alone)."""
    trimmed = copy.deepcopy(document)
    rules = []
    for rule in trimmed["rules"]:
        if resource in rule["resources"] and verb in rule["verbs"]:
            others = [r for r in rule["resources"] if r != resource]
            if others:
                rules.append({**rule, "resources": others})
            verbs = [v for v in rule["verbs"] if v != verb]
            if verbs:
                rules.append({**rule, "resources": [resource], "verbs": verbs})
            continue
        rules.append(rule)
    assert rules != trimmed["rules"], f"{verb} {resource} is not in the Role"
    trimmed["rules"] = rules
    return trimmed


@pytest.fixture
def kubeconfig_for(cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path) -> Iterator[MakeKubeconfig]:
    """A kubeconfig whose only user is a fresh ServiceAccount bound to ``document`` (a Role in the test's
    namespace, or a ClusterRole bound cluster-wide) and nothing else."""
    rbac = client.RbacAuthorizationV1Api(cluster.api_client)
    cluster_wide: list[tuple[str, str]] = []
    admin = json.loads(kubeconfig.read_text()) if kubeconfig.read_text().lstrip().startswith("{") else None
    if admin is None:
        admin = yaml.safe_load(kubeconfig.read_text())
    server = admin["clusters"][0]["cluster"]

    def make(document: dict[str, Any]) -> Path:
        name = f"rp-{uuid.uuid4().hex[:8]}"
        cluster.core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
        subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
        body = {**document, "metadata": {"name": name}}
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": document["kind"], "name": name}
        if document["kind"] == "ClusterRole":
            rbac.create_cluster_role(body)
            rbac.create_cluster_role_binding({"metadata": {"name": name}, "roleRef": ref, "subjects": [subject]})
            cluster_wide.append(("role", name))
        else:
            rbac.create_namespaced_role(namespace, body)
            rbac.create_namespaced_role_binding(
                namespace, {"metadata": {"name": name}, "roleRef": ref, "subjects": [subject]}
            )
        token = cluster.core.create_namespaced_service_account_token(
            name, namespace, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
        ).status.token
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": server}],
            "users": [{"name": name, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": "c", "user": name, "namespace": namespace}}],
            "current-context": name,
        }
        path = tmp_path / f"{name}.kubeconfig"
        path.write_text(json.dumps(config))
        return path

    yield make
    for _, name in cluster_wide:
        rbac.delete_cluster_role_binding(name)
        rbac.delete_cluster_role(name)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def records(cluster: Cluster, namespace: str) -> dict[str, str]:
    return {
        c.metadata.name: c.metadata.resource_version
        for c in cluster.core.list_namespaced_config_map(namespace).items
        if c.metadata.name.startswith("rollout-plus.")
    }


def state(cluster: Cluster, namespace: str) -> tuple[dict[str, str], set[str], set[str]]:
    """The records, ReplicaSets and pods of the namespace: what a refused command must leave alone."""
    return (
        records(cluster, namespace),
        {r.metadata.name for r in cluster.apps.list_namespaced_replica_set(namespace).items},
        {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items},
    )


def write_manifest(tmp_path: Path, name: str, image: str = manifests.IMAGE) -> Path:
    document = manifests.deployment(name, replicas=2, annotations={manifests.READY_AFTER: "1s"})
    document["spec"]["template"]["spec"]["containers"][0]["image"] = image
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


# --- rollouts ---------------------------------------------------------------------------------------


def test_rollouts_work_with_exactly_the_documented_role(
    cluster: Cluster, namespace: str, kubeconfig_for: MakeKubeconfig, tmp_path: Path
) -> None:
    config = kubeconfig_for(role_document("rollout"))
    steps = [
        ("apply", "-f", str(write_manifest(tmp_path, "web")), "--timeout", "90s"),
        ("set", "image", "web", "app=registry.example/app:v2", "--timeout", "90s"),
        ("scale", "web", "--replicas", "3", "--timeout", "90s"),
        ("pause", "web"),
        ("resume", "web", "--timeout", "90s"),
        ("restart", "web", "--timeout", "90s"),
        ("undo", "web", "--timeout", "90s"),
        ("status", "web", "-w", "--timeout", "90s"),
    ]
    for step in steps:
        result = run_plugin(*step, kubeconfig=config)
        assert result.returncode == 0, f"{' '.join(step)}: {result.stderr}"
    deployed = cluster.apps.list_namespaced_replica_set(namespace).items
    assert sum(r.status.available_replicas or 0 for r in deployed) == 3


def _blue_green_manifest(tmp_path: Path) -> Path:
    document = manifests.deployment("web", replicas=2, annotations={manifests.READY_AFTER: "1s"})
    document["metadata"]["annotations"] = {
        "rollout-plus.io/strategy": "blueGreen",
        "rollout-plus.io/active-service": "web",
        "rollout-plus.io/scale-down-delay": "1s",
    }
    path = tmp_path / "web-blue-green.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _service(cluster: Cluster, namespace: str) -> None:
    cluster.core.create_namespaced_service(
        namespace, {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    )


def test_a_blue_green_rollout_works_with_exactly_the_documented_role(
    cluster: Cluster, namespace: str, kubeconfig_for: MakeKubeconfig, tmp_path: Path
) -> None:
    _service(cluster, namespace)
    config = kubeconfig_for(role_document("rollout"))
    steps = [
        ("apply", "-f", str(_blue_green_manifest(tmp_path)), "--timeout", "90s"),
        ("set", "image", "web", "app=registry.example/app:v2", "--timeout", "90s"),
        ("promote", "web", "--timeout", "90s"),
    ]
    for step in steps:
        result = run_plugin(*step, kubeconfig=config)
        assert result.returncode == 0, f"{' '.join(step)}: {result.stderr}"
    (new,) = [r for r in cluster.apps.list_namespaced_replica_set(namespace).items if r.spec.replicas]
    assert new.spec.template.spec.containers[0].image == "registry.example/app:v2"
    selector = cluster.core.read_namespaced_service("web", namespace).spec.selector
    assert selector == {"app": "web", "pod-template-hash": new.metadata.labels["pod-template-hash"]}


@pytest.mark.parametrize("verb", ["get", "patch"])
def test_a_blue_green_apply_without_one_services_verb_says_which_and_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig_for: MakeKubeconfig, tmp_path: Path, verb: str
) -> None:
    _service(cluster, namespace)
    config = kubeconfig_for(without(role_document("rollout"), "services", verb))
    before = state(cluster, namespace)

    result = run_plugin("apply", "-f", str(_blue_green_manifest(tmp_path)), "--timeout", "30s", kubeconfig=config)

    assert result.returncode == 1
    line = one_line(result.stderr)
    assert f"may not {verb} services" in line
    assert "kubectl rollout-plus apply web needs; nothing was changed" in line
    assert state(cluster, namespace) == before
    assert cluster.core.read_namespaced_service("web", namespace).spec.selector == {"app": "web"}


@pytest.mark.parametrize(
    ("resource", "verb"),
    [
        ("configmaps", "create"),
        ("configmaps", "patch"),
        ("replicasets", "create"),
        ("replicasets", "delete"),
        ("pods", "watch"),
        ("poddisruptionbudgets", "list"),
        ("leases", "create"),
    ],
)
def test_apply_without_one_verb_of_the_role_says_which_and_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig_for: MakeKubeconfig, tmp_path: Path, resource: str, verb: str
) -> None:
    config = kubeconfig_for(without(role_document("rollout"), resource, verb))
    before = state(cluster, namespace)

    result = run_plugin("apply", "-f", str(write_manifest(tmp_path, "web")), "--timeout", "30s", kubeconfig=config)

    assert result.returncode == 1
    line = one_line(result.stderr)
    assert f"may not {verb} {resource}" in line
    assert "kubectl rollout-plus apply web needs; nothing was changed" in line
    assert state(cluster, namespace) == before


def gated_manifest(tmp_path: Path, steps: str) -> Path:
    document = manifests.deployment("web", replicas=2, annotations={manifests.READY_AFTER: "1s"})
    document["metadata"]["annotations"] = {"rollout-plus.io/steps": steps}
    path = tmp_path / "gated.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_canary_gates_work_with_exactly_the_documented_role(
    cluster: Cluster, namespace: str, kubeconfig_for: MakeKubeconfig, tmp_path: Path, prometheus: FakePrometheus
) -> None:
    config = kubeconfig_for(role_document("rollout"))
    job_template(cluster, namespace, behaviour="succeed")
    steps = "setWeight 50\ngate prometheus service=prometheus:9090 threshold='< 0.05' count=1: up\ngate job: smoke"
    for step in (
        ("apply", "-f", str(gated_manifest(tmp_path, steps)), "--timeout", "90s"),
        ("set", "image", "web", "app=registry.example/app:v2", "--timeout", "90s"),
    ):
        result = run_plugin(*step, kubeconfig=config)
        assert result.returncode == 0, f"{' '.join(step)}: {result.stderr}"
    assert prometheus.queries == ["up"]
    (job,) = client.BatchV1Api(cluster.api_client).list_namespaced_job(namespace).items
    assert any(c.type == "Complete" and c.status == "True" for c in job.status.conditions)
    reasons = {e.reason for e in cluster.core.list_namespaced_event(namespace).items}
    assert {"GateMeasured", "GateRan", "StepsDone"} <= reasons  # the Events, created under the Role
    deployed = cluster.apps.list_namespaced_replica_set(namespace).items
    assert {(r.spec.template.spec.containers[0].image, r.status.available_replicas or 0) for r in deployed} == {
        ("registry.example/app:v2", 2),
        (manifests.IMAGE, 0),
    }


def test_a_prometheus_gate_without_the_service_proxy_grant_pauses_saying_so(
    cluster: Cluster, namespace: str, kubeconfig_for: MakeKubeconfig, tmp_path: Path, prometheus: FakePrometheus
) -> None:
    config = kubeconfig_for(without(role_document("rollout"), "services/proxy", "get"))
    steps = "setWeight 50\ngate prometheus service=prometheus:9090 threshold='< 0.05' count=1: up"
    for step in (
        ("apply", "-f", str(gated_manifest(tmp_path, steps)), "--timeout", "90s"),
        ("set", "image", "web", "app=registry.example/app:v2", "--timeout", "90s"),
    ):
        result = run_plugin(*step, kubeconfig=config)
        assert result.returncode == 0, f"{' '.join(step)}: {result.stderr}"
    assert "gate inconclusive; paused until promoted" in result.stdout
    assert prometheus.queries == []
    record = cluster.core.read_namespaced_config_map("rollout-plus.web", namespace)
    (measured,) = json.loads(record.data["canary"])["measurements"]
    assert measured["phase"] == "inconclusive"
    assert measured["detail"].startswith("HTTP 403: ")
    assert 'cannot get resource "services/proxy"' in measured["detail"]


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (("scale", "web", "--replicas", "3"), "update configmaps"),
        (("set", "image", "web", "app=registry.example/app:v2"), "update configmaps"),
        (("pause", "web"), "update configmaps"),
        (("resume", "web"), "update configmaps"),
        (("restart", "web"), "update configmaps"),
        (("undo", "web"), "update configmaps"),
        (("status", "web", "-w"), "patch configmaps"),
        (("delete", "web"), "delete configmaps"),
        (("release", "web"), "delete configmaps"),
        (("apply", "-f", "MANIFEST"), "create configmaps"),
    ],
)
def test_a_viewer_gets_one_line_naming_the_verbs_it_lacks(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, args: tuple[str, ...], missing: str
) -> None:
    manifest = write_manifest(tmp_path, "web")
    created = run_plugin("apply", "-f", str(manifest), "-n", namespace, "--no-wait", kubeconfig=kubeconfig)
    assert created.returncode == 0, created.stderr
    before = state(cluster, namespace)
    args = tuple(str(manifest) if a == "MANIFEST" else a for a in args)

    result = run_plugin(*args, "-n", namespace, "--context", "rollout-plus-viewer", kubeconfig=kubeconfig)

    assert result.returncode == 1
    line = one_line(result.stderr)
    # The permission check's refusal, not some later error that happens to name the context ...
    assert line.startswith('error: context "rollout-plus-viewer" may not '), line
    assert line.endswith(
        "needs; nothing was changed. Use a context with these permissions (docs/rbac.md has a Role for each command)"
    ), line
    # ... naming the verb the viewer lacks, and only verbs the cluster's authorizer does refuse the viewer.
    named = named_permissions(line)
    assert any(permission.startswith(missing) for permission in named), (missing, named)
    granted_anyway = [p for p in named if allowed(cluster, p, user="viewer", groups=("rollout-plus:viewers",))]
    assert granted_anyway == [], f"the viewer may {granted_anyway}, which the line says it may not"
    assert state(cluster, namespace) == before


def test_a_viewer_cannot_adopt_and_the_deployment_stays(cluster: Cluster, namespace: str, kubeconfig: Path) -> None:
    deploy(cluster, namespace, "api", 1)
    before = state(cluster, namespace)

    result = run_plugin(
        "adopt", "deployment/api", "-n", namespace, "--context", "rollout-plus-viewer", kubeconfig=kubeconfig
    )

    assert result.returncode == 1
    line = one_line(result.stderr)
    assert "delete deployments.apps" in line
    assert "create configmaps" in line
    assert cluster.apps.read_namespaced_deployment("api", namespace).metadata.deletion_timestamp is None
    assert state(cluster, namespace) == before


# --- restarts by eviction ----------------------------------------------------------------------------


def test_a_restart_by_eviction_works_with_exactly_the_documented_role(
    cluster: Cluster, namespace: str, kubeconfig_for: MakeKubeconfig
) -> None:
    deploy(cluster, namespace, "api", 2)
    before = {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items}
    config = kubeconfig_for(role_document("restart"))

    result = run_plugin("restart", "deployment/api", "--timeout", "90s", kubeconfig=config)

    assert result.returncode == 0, result.stderr
    after = {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items}
    assert not before & after


@pytest.mark.parametrize(
    ("resource", "verb"), [("pods/eviction", "create"), ("deployments", "patch"), ("leases", "update")]
)
def test_a_restart_without_one_verb_of_the_role_says_which_and_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig_for: MakeKubeconfig, resource: str, verb: str
) -> None:
    deploy(cluster, namespace, "api", 2)
    config = kubeconfig_for(without(role_document("restart"), resource, verb))
    before = state(cluster, namespace)

    result = run_plugin("restart", "deployment/api", "--timeout", "30s", kubeconfig=config)

    assert result.returncode == 1
    line = one_line(result.stderr)
    assert f"may not {verb} {resource}" in line
    assert state(cluster, namespace) == before


# --- drains -----------------------------------------------------------------------------------------


def test_a_drain_works_with_exactly_the_documented_cluster_role(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig_for: MakeKubeconfig
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 2, pool=namespace)
    config = kubeconfig_for(role_document("drain"))

    drained = run_plugin("drain", target, "--timeout", "60s", kubeconfig=config)
    uncordoned = run_plugin("uncordon", target, kubeconfig=config)

    assert drained.returncode == 0, drained.stderr
    assert f"node/{target} drained" in drained.stdout
    assert uncordoned.returncode == 0, uncordoned.stderr
    assert cluster.core.read_node(target).spec.unschedulable in (None, False)


def test_a_held_pod_under_the_drain_role_alone_is_explained_without_its_workload(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig_for: MakeKubeconfig
) -> None:
    """The drain's Role may not read ReplicaSets: the held pod's owner is left unnamed (no PodOwnerKnown), and
    the drain goes on as before, saying nothing of the refused read."""
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    add_pdb(cluster, namespace, "web", app="web", expected=1, min_available=1)
    config = kubeconfig_for(role_document("drain"))

    result = drain(config, target, "--timeout", "4s")

    assert result.returncode == 1
    assert by_type(result, "EvictionBlocked")
    assert by_type(result, "PodOwnerKnown") == []
    assert "replicasets" not in result.stderr
    assert by_type(result, "NodeDrainFailed")[0]["node"] == target


@pytest.mark.parametrize(
    ("resource", "verb"),
    [("nodes", "patch"), ("pods/eviction", "create"), ("pods", "watch"), ("poddisruptionbudgets", "watch")],
)
def test_a_drain_without_one_verb_of_the_role_says_which_and_changes_nothing(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig_for: MakeKubeconfig, resource: str, verb: str
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    config = kubeconfig_for(without(role_document("drain"), resource, verb))
    before = (cluster.core.read_node(target).spec.unschedulable, state(cluster, namespace))

    result = run_plugin("drain", target, kubeconfig=config)

    assert result.returncode == 1
    line = one_line(result.stderr)
    suffix = ".policy" if resource == "poddisruptionbudgets" else ""
    assert f"may not {verb} {resource}{suffix}" in line
    assert (cluster.core.read_node(target).spec.unschedulable, state(cluster, namespace)) == before


def one_workload_on_each_of_two_nodes(cluster: Cluster, namespace: str, dedicated_nodes: Any) -> tuple[str, str]:
    """Two nodes to drain one batch at a time, each with a Deployment of 2, and a spare node to take them."""
    first, second, spare = dedicated_nodes(3)
    with only_schedulable(cluster, first, [second, spare]):
        deploy(cluster, namespace, "web", 2, pool=namespace, annotations={manifests.READY_AFTER: "1s"})
    with only_schedulable(cluster, second, [first, spare]):
        deploy(cluster, namespace, "api", 2, pool=namespace, annotations={manifests.READY_AFTER: "1s"})
    return first, second


def test_a_node_batch_drain_works_with_exactly_the_two_documented_cluster_roles(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig_for: MakeKubeconfig
) -> None:
    first, second = one_workload_on_each_of_two_nodes(cluster, namespace, dedicated_nodes)
    config = kubeconfig_for(role_document("drain", "drain-node-batch"))

    result = drain(config, first, second, "--node-batch", "1", "--timeout", "90s", timeout=120)

    assert result.returncode == 0, result.stderr
    assert [e["node"] for e in by_type(result, "NodeDrained")] == [first, second]
    # the wait between the batches, which is what this role is for, happened and saw both replicas back
    (available,) = by_type(result, "WorkloadsAvailable")
    assert [w["name"] for w in available["workloads"]] == ["web"]
    assert [p for p in pods_on(cluster, first) + pods_on(cluster, second) if p.metadata.namespace == namespace] == []


#: the commands the two ClusterRoles side by side are for, as the tests run them on two nodes
NODE_BATCH_COMMANDS = {
    "drain": ("drain", "--node-batch", "1"),
    "campaign": ("campaign", "--budget", "1"),
}


@pytest.mark.parametrize(
    ("command", "resource", "verb", "named"),
    [pytest.param("drain", *p.values, id=f"drain-{p.id}") for p in granted("drain-node-batch")]
    + [
        pytest.param("campaign", resource, verb, named, id=f"campaign-{verb}-{resource}")
        for resource, verb, named in (
            ("nodes", "patch", "nodes"),
            ("pods/eviction", "create", "pods/eviction"),
            ("replicasets", "get", "replicasets.apps"),
            ("deployments", "watch", "deployments.apps"),
        )
    ],
)
def test_a_node_batch_drain_or_campaign_without_one_verb_of_its_roles_says_which_and_changes_nothing(
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig_for: MakeKubeconfig,
    command: str,
    resource: str,
    verb: str,
    named: str,
) -> None:
    first, second = one_workload_on_each_of_two_nodes(cluster, namespace, dedicated_nodes)
    config = kubeconfig_for(without(role_document("drain", "drain-node-batch"), resource, verb))
    before = [cluster.core.read_node(n).spec.unschedulable for n in (first, second)], state(cluster, namespace)
    name, *flags = NODE_BATCH_COMMANDS[command]

    result = run_plugin(name, first, second, *flags, "--timeout", "60s", kubeconfig=config)

    assert result.returncode == 1
    line = one_line(result.stderr)
    assert f"may not {verb} {named}, which kubectl rollout-plus {name} needs; nothing was changed" in line
    after = [cluster.core.read_node(n).spec.unschedulable for n in (first, second)], state(cluster, namespace)
    assert after == before


def test_a_campaign_works_with_exactly_the_drain_and_node_batch_cluster_roles(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig_for: MakeKubeconfig
) -> None:
    first, second = one_workload_on_each_of_two_nodes(cluster, namespace, dedicated_nodes)
    config = kubeconfig_for(role_document("drain", "drain-node-batch"))
    label = "rollout-plus.test/rotated"
    before = {p.metadata.name for p in pods_on(cluster, first) + pods_on(cluster, second)}

    result = run_plugin(
        *("campaign", first, second, "--order", "given", "--budget", "1", "--soak", "1s"),
        *("--post-label", f"{label}=yes", "--timeout", "90s", "-o", "jsonl"),
        kubeconfig=config,
        timeout=180,
    )

    assert result.returncode == 0, result.stderr
    assert [e["node"] for e in by_type(result, "NodeDone")] == [first, second]
    # the soak, which the node-batch role is for, waited for each wave's workloads to be back (web's pods may
    # have moved to the second node in the first wave)
    first_soak, second_soak = [[w["name"] for w in e["workloads"]] for e in by_type(result, "SoakStarted")]
    assert first_soak == ["web"]
    assert "api" in second_soak
    for node in (first, second):
        fresh = cluster.core.read_node(node)
        assert (fresh.metadata.labels or {}).get(label) == "yes"
        assert not fresh.spec.unschedulable
    # every pod the two nodes had was evicted (each node takes pods again once its wave is done)
    assert {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items} & before == set()


def test_a_daemonset_lookup_the_role_forbids_shows_the_whole_error(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig_for: MakeKubeconfig
) -> None:
    (target,) = dedicated_nodes(1)
    cluster.apps.create_namespaced_daemon_set(
        namespace, manifests.daemonset("agent", pod_spec=manifests.placement(namespace))
    )
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.spec.node_name == target and p.status.phase == "Running",
        namespace=namespace,
        timeout=30,
        what="the DaemonSet's pod running",
    )
    config = kubeconfig_for(without(role_document("drain"), "daemonsets", "get"))

    result = run_plugin("drain", target, "--ignore-daemonsets", kubeconfig=config)

    assert result.returncode == 1
    # kubectl shows err.Error() of the GET: the server's whole message, naming the user and the verb.
    assert (
        f'cannot delete daemonsets.apps "agent" is forbidden: User "system:serviceaccount:{namespace}:' in result.stderr
    )
    assert f'cannot get resource "daemonsets" in API group "apps" in the namespace "{namespace}"' in result.stderr


# --- surge drains: drain.yaml and drain-surge.yaml bound side by side ------------------------------


@dataclass(frozen=True)
class SurgeTarget:
    """What a surge drain raises (a Deployment, or a managed workload's ReplicaSet) and the Lease it holds."""

    #: the raised object's count and surge labels, as they are now
    count_and_labels: Callable[[], tuple[int, dict[str, str]]]
    lease: str


def one_replica_to_surge(
    workload: str, cluster: Cluster, namespace: str, nodes: list[str], kubeconfig: Path, tmp_path: Path
) -> SurgeTarget:
    """``web``, one replica on the first node behind minAvailable 1: a Deployment, or a managed workload (made by
    the plugin's ``apply`` as the admin), whose one pod only a surge onto the second node lets go."""
    target, spare = nodes
    if workload == "deployment":
        one_replica_min_available_one(cluster, namespace, target, spare)
        return SurgeTarget(
            lambda: (replicas_of(cluster, namespace, "web"), surge_labels(cluster, namespace, "web")),
            lease="rollout-plus.surge.web",
        )
    replica_set = managed_one_replica(cluster, namespace, target, spare, kubeconfig, tmp_path)
    return SurgeTarget(
        lambda: (rs_replicas(cluster, namespace, replica_set), rs_surge_labels(cluster, namespace, replica_set)),
        lease="rollout-plus.web",  # the workload's driver Lease, which the drain holds meanwhile
    )


@pytest.mark.parametrize("workload", ["deployment", "managed-workload"])
def test_a_surge_drain_works_with_exactly_the_two_documented_cluster_roles(
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
    kubeconfig_for: MakeKubeconfig,
    tmp_path: Path,
    workload: str,
) -> None:
    nodes = dedicated_nodes(2)
    surged = one_replica_to_surge(workload, cluster, namespace, nodes, kubeconfig, tmp_path)
    config = kubeconfig_for(role_document("drain", "drain-surge"))

    drained = drain(config, nodes[0], "--surge", "--timeout", "90s", timeout=120)
    # uncordon first restores leftover surges: it lists Deployments and ReplicaSets of every namespace
    uncordoned = run_plugin("uncordon", nodes[0], kubeconfig=config)

    assert drained.returncode == 0, drained.stderr
    assert "forbidden" not in drained.stderr.lower()
    assert [e["node"] for e in by_type(drained, "NodeDrained")] == [nodes[0]]
    # one replica behind minAvailable 1 goes no other way than by a surge
    assert [e["count_restored"] for e in by_type(drained, "SurgeRestored")] == [True]
    assert [p for p in pods_on(cluster, nodes[0]) if p.metadata.namespace == namespace] == []
    assert surged.count_and_labels() == (1, {})
    # the Lease was deleted with the restore, not left to lapse
    with pytest.raises(client.ApiException) as lease:
        cluster.coordination.read_namespaced_lease(surged.lease, namespace)
    assert lease.value.status == 404
    assert uncordoned.returncode == 0, uncordoned.stderr
    assert cluster.core.read_node(nodes[0]).spec.unschedulable in (None, False)


@pytest.mark.parametrize(("resource", "verb", "named"), granted("drain-surge"))
def test_a_surge_drain_without_one_verb_of_its_role_says_which_and_changes_nothing(
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig_for: MakeKubeconfig,
    resource: str,
    verb: str,
    named: str,
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    add_pdb(cluster, namespace, "web", app="web", expected=1, min_available=1)
    config = kubeconfig_for(without(role_document("drain", "drain-surge"), resource, verb))

    def unchanged() -> tuple[Any, ...]:
        deployment = cluster.apps.read_namespaced_deployment("web", namespace)
        node = cluster.core.read_node(target)
        return node.spec.unschedulable, deployment.spec.replicas, deployment.metadata.labels, state(cluster, namespace)

    before = unchanged()

    # one node, so no room for a surge: a verb not checked up front fails this on the timeout, not by hanging
    result = run_plugin("drain", target, "--surge", "--timeout", "20s", kubeconfig=config)

    assert result.returncode == 1
    line = one_line(result.stderr)
    assert f"may not {verb} {named}, which kubectl rollout-plus drain needs; nothing was changed" in line
    assert unchanged() == before
