"""Drain against an API server that throttles: --max-requests-inflight=1, priority and fairness off.

Such a server answers excess requests 429 with Retry-After. The drain must
still complete, and no wait it makes may be shorter than the server asked.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import manifests
import pytest
import watching
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.engine import DrainEngine, DrainOptions
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.eviction import EvictionBlocked
from kubectl_rollout.jobs.events.stream import EventStream
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_DIR = ROOT / ".cluster" / "throttled"
THROTTLING = [
    "--apiserver-arg=--max-requests-inflight=1",
    "--apiserver-arg=--max-mutating-requests-inflight=1",
    "--apiserver-arg=--enable-priority-and-fairness=false",
]


@pytest.fixture(scope="module")
def throttled() -> Iterator[Cluster]:
    up = subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack" / "cluster.py"),
            "up",
            "--dir",
            str(CLUSTER_DIR),
            "--nodes",
            "2",
            *THROTTLING,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert up.returncode == 0, "the throttled control plane did not start"
    # The operator is cluster-admin through RBAC; system:masters would be exempt from max-in-flight.
    connection = connect(
        ConnectionSettings(kubeconfig=up.stdout.strip().splitlines()[-1], context="rollout-plus-operator")
    )
    yield connection
    connection.close()
    subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(CLUSTER_DIR)])


def hammer(cluster: Cluster, stop: threading.Event, refused: list[int]) -> None:
    """Keep the single in-flight slot busy so the drain's own requests meet 429s."""
    while not stop.is_set():
        try:
            cluster.core.list_pod_for_all_namespaces(limit=500)
        except ApiException as err:
            refused.append(err.status)


def test_throttled_drain_completes_and_waits_at_least_retry_after(
    throttled: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    namespace = "throttled-drain"
    call_with_retry(throttled.core.create_namespace, {"metadata": {"name": namespace}})
    watching.until(
        throttled.core.list_namespaced_service_account,
        lambda sa: sa.metadata.name == "default",
        namespace=namespace,
        timeout=60,
        what="default service account",
    )
    call_with_retry(throttled.core.patch_node, "kwok-node-1", {"spec": {"unschedulable": True}})
    call_with_retry(throttled.apps.create_namespaced_deployment, namespace, manifests.deployment("web", replicas=12))
    watching.until(
        throttled.apps.list_namespaced_deployment,
        lambda d: (d.status.available_replicas or 0) == 12,
        namespace=namespace,
        timeout=120,
        what="web available",
    )
    call_with_retry(throttled.core.patch_node, "kwok-node-1", {"spec": {"unschedulable": None}})
    call_with_retry(
        throttled.policy.create_namespaced_pod_disruption_budget,
        namespace,
        manifests.pdb("web", app="web", max_unavailable=2),
    )
    seen: list[Envelope] = []
    stop = threading.Event()
    refused_load: list[int] = []
    load = [threading.Thread(target=hammer, args=(throttled, stop, refused_load)) for _ in range(6)]
    engine = DrainEngine(throttled, DrainOptions(timeout=300), EventStream("throttled", seen.append).emit)
    caplog.set_level(logging.INFO, logger="kubectl_rollout.kube.api_retry")
    for thread in load:
        thread.start()
    try:
        nodes = engine.resolve_nodes(["kwok-node-0"], "")
        finished = engine.run(nodes)
    finally:
        stop.set()
        for thread in load:
            thread.join()

    assert finished.failed == ()
    assert finished.drained == ("kwok-node-0",)
    assert 429 in refused_load, "the server never throttled: the scenario proves nothing"
    waits: list[tuple[float, float]] = [
        (record.retry_after, record.wait)  # type: ignore[attr-defined]
        for record in caplog.records
        if getattr(record, "retry_after", None) is not None
    ]
    waits += [
        (e.event.retry_after, e.event.next_try_by - e.at)
        for e in seen
        if isinstance(e.event, EvictionBlocked) and e.event.reason == "throttled" and e.event.retry_after is not None
    ]
    assert waits, "the drain itself was never throttled; raise the load"
    assert all(wait >= retry_after for retry_after, wait in waits), waits
    pods = call_with_retry(throttled.core.list_namespaced_pod, namespace).items
    remaining = [p for p in pods if p.spec.node_name == "kwok-node-0"]
    assert remaining == []
