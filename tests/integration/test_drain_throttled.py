"""Drain against an API server that throttles: --max-requests-inflight=1, priority and fairness off.

Such a server answers excess requests 429 with Retry-After. Another client
keeps its slots busy: reads in a loop, and creates whose bodies arrive slowly,
which hold the one mutating slot as long as they take, so the drain's
evictions meet the server's 429s however loaded the machine is. The drain must
still complete, and no request of ours may repeat a throttled one sooner than
the server asked: proved from the API server's own audit log (when it refused
each request, when the repeat arrived), not from what our code says it waited.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.engine import DrainEngine, DrainOptions
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.stream import EventStream
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect

#: pytest-xdist: its own control plane (.cluster/throttled), started once for the module: one worker owns it
pytestmark = pytest.mark.xdist_group("throttled")

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_DIR = ROOT / ".cluster" / "throttled"
AUDIT_LOG = CLUSTER_DIR / "logs" / "audit.log"
THROTTLING = [
    "--apiserver-arg=--max-requests-inflight=1",
    "--apiserver-arg=--max-mutating-requests-inflight=1",
    "--apiserver-arg=--enable-priority-and-fairness=false",
    # every request in the audit log when the drain ends (the default batch mode waits up to 30 s)
    "--apiserver-arg=--audit-log-mode=blocking",
]
HAMMER_AGENT = "throttle-hammer"


@pytest.fixture(scope="module")
def throttled() -> Iterator[tuple[Cluster, Path]]:
    up = subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack" / "cluster.py"),
            "up",
            "--dir",
            str(CLUSTER_DIR),
            "--nodes",
            "2",
            "--audit",
            *THROTTLING,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert up.returncode == 0, "the throttled control plane did not start"
    kubeconfig = up.stdout.strip().splitlines()[-1]
    # The operator is cluster-admin through RBAC; system:masters would be exempt from max-in-flight.
    connection = connect(ConnectionSettings(kubeconfig=kubeconfig, context="rollout-plus-operator"))
    yield connection, Path(kubeconfig)
    connection.close()
    subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(CLUSTER_DIR)])


def hammer(cluster: Cluster, stop: threading.Event, retry_after: list[str]) -> None:
    """Keep the single in-flight slot busy so the drain's own requests meet 429s."""
    while not stop.is_set():
        try:
            cluster.core.list_pod_for_all_namespaces(limit=500)
        except ApiException as err:
            if err.status == 429:
                retry_after.append((err.headers or {}).get("Retry-After", ""))


def hold_the_mutating_slot(cluster: Cluster, namespace: str, stop: threading.Event) -> None:
    """Creates whose body arrives over a second, a second apart: the server counts a request in flight from
    its headers on, so each one keeps the one mutating slot for its whole body, and an eviction sent meanwhile
    is refused 429 by the server's max-in-flight filter."""
    config = cluster.api_client.configuration
    url = f"{config.host}/api/v1/namespaces/{namespace}/configmaps"
    headers = {
        "Authorization": config.auth_settings()["BearerToken"]["value"],
        "Content-Type": "application/json",
        "User-Agent": HAMMER_AGENT,
    }

    def slow_body() -> Iterator[bytes]:
        yield b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "slot-"}'
        stop.wait(1.0)
        yield b"}"

    while not stop.is_set():
        cluster.api_client.rest_client.pool_manager.urlopen(
            "POST", url, body=slow_body(), chunked=True, headers=headers, preload_content=True
        )
        stop.wait(1.0)


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def audited_requests(agent_prefix: str) -> list[dict[str, Any]]:
    """Every completed request of one client, from the API server's audit log, in the order received."""
    requests = []
    for line in AUDIT_LOG.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("stage") == "ResponseComplete" and entry.get("userAgent", "").startswith(agent_prefix):
            requests.append(entry)
    return sorted(requests, key=lambda e: _at(e["requestReceivedTimestamp"]))


def refused_by_throttling(entry: dict[str, Any]) -> bool:
    """A 429 of the max-in-flight filter: it writes the answer itself, so the audit log records a bare
    code, unlike a PodDisruptionBudget's refusal (429 too, without Retry-After, with its Status)."""
    status = entry["responseStatus"]
    return bool(status["code"] == 429 and not status.get("message") and not status.get("reason"))


def repeats_after_throttling(requests: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """For each request the server throttled, the same request (verb and URI) sent next: how long after the
    server answered 429 it arrived."""
    gaps = []
    for index, refused in enumerate(requests):
        if not refused_by_throttling(refused):
            continue
        same = (refused["verb"], refused["requestURI"])
        repeat = next((r for r in requests[index + 1 :] if (r["verb"], r["requestURI"]) == same), None)
        if repeat is not None:
            gap = _at(repeat["requestReceivedTimestamp"]) - _at(refused["stageTimestamp"])
            gaps.append((f"{refused['verb']} {refused['requestURI']}", gap))
    return gaps


def test_throttled_drain_completes_and_waits_at_least_retry_after(throttled: tuple[Cluster, Path]) -> None:
    cluster, kubeconfig = throttled
    namespace = "throttled-drain"
    call_with_retry(cluster.core.create_namespace, {"metadata": {"name": namespace}})
    watching.until(
        cluster.core.list_namespaced_service_account,
        lambda sa: sa.metadata.name == "default",
        namespace=namespace,
        timeout=60,
        what="default service account",
    )
    call_with_retry(cluster.core.patch_node, "kwok-node-1", {"spec": {"unschedulable": True}})
    call_with_retry(cluster.apps.create_namespaced_deployment, namespace, manifests.deployment("web", replicas=12))
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (d.status.available_replicas or 0) == 12,
        namespace=namespace,
        timeout=120,
        what="web available",
    )
    call_with_retry(cluster.core.patch_node, "kwok-node-1", {"spec": {"unschedulable": None}})
    call_with_retry(
        cluster.policy.create_namespaced_pod_disruption_budget,
        namespace,
        manifests.pdb("web", app="web", max_unavailable=2),
    )
    seen: list[Envelope] = []
    stop = threading.Event()
    asked: list[str] = []
    # The load is another client (its own user agent), so that the audit log tells its requests from ours.
    loader = connect(ConnectionSettings(kubeconfig=str(kubeconfig), context="rollout-plus-operator"))
    loader.api_client.user_agent = HAMMER_AGENT
    died: list[BaseException] = []

    def load_thread(target: Callable[..., None], *args: Any) -> threading.Thread:
        """A thread of the load that, should it stop early, fails the test: the load proves nothing then."""

        def run() -> None:
            try:
                target(*args)
            except BaseException as err:
                died.append(err)
                raise

        return threading.Thread(target=run)

    load = [load_thread(hammer, loader, stop, asked) for _ in range(6)]
    load.append(load_thread(hold_the_mutating_slot, loader, namespace, stop))
    engine = DrainEngine(
        cluster, DrainOptions(timeout=300), JobContext(emit=EventStream("throttled", seen.append).emit)
    )
    for thread in load:
        thread.start()
    try:
        nodes = engine.resolve_nodes(["kwok-node-0"], "")
        finished = engine.run(nodes)
    finally:
        stop.set()
        for thread in load:
            thread.join()
        loader.close()

    assert died == [], f"the load stopped before the drain ended: {died!r}"
    assert finished.failed == ()
    assert finished.drained == ("kwok-node-0",)
    assert asked, "the server never throttled: the scenario proves nothing"
    # What the server asks for, as its answers to the load said (max-in-flight asks for 1 s).
    assert set(asked) == {"1"}, set(asked)
    retry_after = 1.0
    ours = audited_requests("kubectl-rollout-plus/")
    assert any(refused_by_throttling(r) for r in ours), "the drain itself was never throttled; raise the load"
    gaps = repeats_after_throttling(ours)
    assert gaps, "no throttled request of ours was repeated: the audit log proves nothing"
    too_soon = [(what, round(gap, 4)) for what, gap in gaps if gap < retry_after]
    assert too_soon == [], too_soon
    # One answered read per ReplicaSet, however many of its pods the PDB held at the same moment: the eviction
    # threads asking at once wait for one read (each used to send its own, which the gaps above took for a
    # retry sent too soon); a read sent again is a retry after a 429.
    answered = Counter(
        r["requestURI"]
        for r in ours
        if r["verb"] == "get" and "/replicasets/" in r["requestURI"] and not refused_by_throttling(r)
    )
    assert answered, "the drain never read a ReplicaSet: no pod's owner was named"
    assert set(answered.values()) == {1}, answered
    pods = call_with_retry(cluster.core.list_namespaced_pod, namespace).items
    remaining = [p for p in pods if p.spec.node_name == "kwok-node-0"]
    assert remaining == []
