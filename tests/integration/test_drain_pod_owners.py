"""A PDB-held pod's workload, as the drain names it (``PodOwnerKnown``), for each kind of owner.

The blocker advice (the TUI's panel) builds its commands from it: ``scale
deployment/web``, ``rollout-plus scale`` for a managed workload, none for a
bare pod; a StatefulSet is named as itself (a surge cannot raise it). One node
holds one pod of each, each behind a PDB that allows no disruption, and a
short ``--timeout`` ends the drain while they are all held.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import manifests
import watching
from integration.test_drain import add_pdb, by_type, drain, only_schedulable
from integration.test_rollouts import apply as apply_workload

from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.pods import is_ready


def test_each_held_pod_is_named_with_its_workload(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, tmp_path: Path
) -> None:
    target, spare = dedicated_nodes(2)
    placed = manifests.placement(namespace)
    with only_schedulable(cluster, target, [spare]):
        cluster.apps.create_namespaced_deployment(namespace, manifests.deployment("web", replicas=1, pod_spec=placed))
        cluster.apps.create_namespaced_stateful_set(namespace, manifests.statefulset("db", replicas=1, pod_spec=placed))
        cluster.core.create_namespaced_pod(namespace, manifests.pod("bare", spec=placed, grace_period=0))
        applied = apply_workload(
            kubeconfig, namespace, manifests.deployment("shop", replicas=1, pod_spec=placed), tmp_path
        )
        assert applied.returncode == 0, applied.stderr
        # Each bound to the target, and Ready (a PDB then counts it healthy and allows no disruption).
        watching.until_collection(
            cluster.core.list_namespaced_pod,
            lambda pods: len(pods) == 4 and all(p.spec.node_name == target and is_ready(p) for p in pods),
            namespace=namespace,
            timeout=60,
            what=f"four pods Ready on {target}",
        )
        for app in ("web", "db", "bare", "shop"):
            add_pdb(cluster, namespace, app, app=app, expected=1, min_available=1)
    before = {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items}

    result = drain(kubeconfig, target, "--force", "--timeout", "5s")

    assert result.returncode == 1, result.stderr
    named = {e["pod"]["name"]: (e["owner"]["kind"], e["owner"]["name"]) for e in by_type(result, "PodOwnerKnown")}
    held = {e["pod"]["name"] for e in by_type(result, "EvictionBlocked")}
    assert held == before, (held, before)
    by_app = {name.split("-")[0]: owner for name, owner in named.items()}
    assert by_app == {
        "web": ("Deployment", "web"),
        "db": ("StatefulSet", "db"),
        "bare": ("Pod", "bare"),
        "shop": ("ManagedWorkload", "shop"),
    }, named
    # Once per pod, however often its eviction was refused.
    assert len(by_type(result, "PodOwnerKnown")) == 4
    # The drain left them all where they were: nothing of theirs evicted.
    assert {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items} == before
