"""README promises of `drain`, `cordon` and `uncordon` that had no test (issue 19): the DrainFailed node Event,
the stale-PDB Retry-After, --skip-wait-for-delete-timeout, cordon/uncordon -l.

Each test checks what the cluster did (its Events, nodes, pods, the API server's own answers), not only
what the plugin printed. Each gets its own kwok nodes (``dedicated_nodes``).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from cluster_setup import deploy
from integration.test_drain import add_pdb, by_type, node_state, pods_on
from kubernetes import client
from plugin import run_plugin

from kubectl_rollout.cli.drain_output import blocked_line
from kubectl_rollout.drain.engine import DrainEngine, DrainOptions
from kubectl_rollout.eviction.retry_policy import RetryPolicy
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.eviction import EvictionBlocked, EvictionStarted
from kubectl_rollout.jobs.events.stream import EventStream
from kubectl_rollout.kube.cluster_access import Cluster

OUR_COMPONENT = "kubectl-rollout-plus"


def node_events(cluster: Cluster, node: str) -> list[Any]:
    """The Events our drain recorded on ``node`` (node Events live in "default")."""
    listing = cluster.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.kind=Node,involvedObject.name={node}"
    )
    return [e for e in listing.items if ours(e)]


def ours(event: Any) -> bool:
    return event.source is not None and event.source.component == OUR_COMPONENT


# --- the DrainFailed node Event ------------------------------------------------------------------------


def test_a_failed_drain_records_a_drain_failed_warning_event_on_the_node(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    add_pdb(cluster, namespace, "web", app="web", expected=1, max_unavailable=0)
    (pod,) = [p.metadata.name for p in pods_on(cluster, target)]

    result = run_plugin("drain", target, "--timeout", "2s", kubeconfig=kubeconfig)

    assert result.returncode == 1, result.stderr
    recorded = watching.until_collection(
        cluster.core.list_namespaced_event,
        lambda events: {"Cordoned", "Draining", "DrainFailed"} <= {e.reason for e in events if ours(e)},
        namespace="default",
        field_selector=f"involvedObject.kind=Node,involvedObject.name={target}",
        timeout=10,
        what=f"the drain's Events on node {target}",
    )
    recorded = [e for e in recorded if ours(e)]
    reasons = sorted(e.reason for e in recorded)
    assert reasons == ["Cordoned", "DrainFailed", "Draining"], reasons  # and no Drained
    (failed,) = [e for e in recorded if e.reason == "DrainFailed"]
    assert failed.type == "Warning"
    assert failed.involved_object.kind == "Node"
    # The node's error, in kubectl's words, is what `kubectl describe node` now shows.
    assert f'error when evicting pods/"{pod}" -n "{namespace}": global timeout reached: 2s' in failed.message
    # The Event tells the truth about the node: it stays cordoned, and its pod is still there.
    assert node_state(cluster, target)[0] is True
    assert [p.metadata.name for p in pods_on(cluster, target)] == [pod]


# --- a stale PDB status: 429 with Retry-After 10 -----------------------------------------------------------


class _Background:
    """``watching.until`` (or anything) in a thread started now, so it sees what happens meanwhile."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self._work = work
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self._work()
        except BaseException as err:  # pytest.fail raises Failed, a BaseException
            self.error = err

    def join(self, timeout: float) -> Any:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the background wait did not end"
        if self.error is not None:
            raise self.error
        return self.result


def _stale_pdb(cluster: Cluster, namespace: str, node: str) -> str:
    """A Ready pod on ``node`` under PDB ``stale`` whose status the disruption controller cannot bring up to date;
    the pod's name.

    The pod's controller is a ConfigMap (an object with no scale subresource), and the PDB's maxUnavailable needs
    the scale of each pod's controller, so the controller's sync fails and its fail-safe write (DisruptionAllowed
    False, SyncFailed) keeps the old observedGeneration: the status lags the spec for as long as that lasts, as it
    does on a busy control plane whose disruption controller has not caught up
    (pkg/controller/disruption: failSafe). Deterministic, and the controller stays up for everybody else."""
    owner = cluster.core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    pod = manifests.pod("stale", grace_period=1, spec=manifests.placement(namespace, node))
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid, "controller": True}
    ]
    cluster.core.create_namespaced_pod(namespace, pod)
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.name == "stale" and p.status.conditions is not None and _ready(p),
        namespace=namespace,
        timeout=30,
        what="pod stale Ready",
    )
    cluster.policy.create_namespaced_pod_disruption_budget(
        namespace, manifests.pdb("stale", app="stale", max_unavailable=1)
    )
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: any(c.reason == "SyncFailed" for c in (p.status.conditions if p.status else None) or []),
        namespace=namespace,
        timeout=30,
        what="the disruption controller's fail-safe status on PDB stale",
    )
    return "stale"


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def test_a_stale_pdb_status_is_waited_out_for_the_servers_whole_retry_after(
    cluster: Cluster, namespace: str, dedicated_nodes: Any
) -> None:
    """The API server answers an eviction under a PDB whose status lags its spec with 429, a DisruptionBudget
    cause "... is still being processed by the server" and Retry-After: 10. The drain waits those 10 s in full,
    even though the PDB has room again a moment after the refusal, and says so.

    Why in-process: the drain reads PDBs on a watch and does not send an eviction while the PDB it sees is stale
    (it queues for the PDB instead); it asks the server anyway only after its safety net (30 s), or when the
    spec changes between its look and its request. The test shortens that safety net to 1 s (a client-side
    setting) so the request reaches the server while the status is stale; everything else, the 429 and its
    Retry-After above all, is the real API server's."""
    (target,) = dedicated_nodes(1)
    pod = _stale_pdb(cluster, namespace, target)
    budget = cluster.policy.read_namespaced_pod_disruption_budget("stale", namespace)
    assert (budget.status.observed_generation or 0) < budget.metadata.generation

    # What the API server answers now, asked without evicting anything (a server-side dry run).
    with pytest.raises(client.ApiException) as refused:
        cluster.core.create_namespaced_pod_eviction(
            pod,
            namespace,
            client.V1Eviction(
                metadata=client.V1ObjectMeta(name=pod, namespace=namespace),
                delete_options=client.V1DeleteOptions(dry_run=["All"]),
            ),
        )
    assert refused.value.status == 429
    assert (refused.value.headers or {}).get("Retry-After") == "10"
    assert "The disruption budget stale is still being processed by the server" in str(refused.value.body)

    seen: list[Envelope] = []
    changed = threading.Condition()

    def keep(envelope: Envelope) -> None:
        with changed:
            seen.append(envelope)
            changed.notify_all()

    engine = DrainEngine(cluster, DrainOptions(timeout=60), JobContext(emit=EventStream("stale", keep).emit))
    engine.evictor.options = dataclasses.replace(engine.evictor.options, retry=RetryPolicy(max_backoff=1.0))
    evicted = _Background(
        lambda: watching.until(
            cluster.core.list_namespaced_pod,
            lambda p: p.metadata.name == pod and p.metadata.deletion_timestamp is not None,
            namespace=namespace,
            timeout=60,
            what="the pod evicted",
        )
    )
    drained = _Background(lambda: engine.run(engine.resolve_nodes([target], "")))

    def stale_refusal() -> Envelope | None:
        return next(
            (e for e in seen if isinstance(e.event, EvictionBlocked) and e.event.reason.value == "pdb-status-stale"),
            None,
        )

    with changed:
        assert changed.wait_for(lambda: stale_refusal() is not None, timeout=30), [e.type for e in seen]
    stale = stale_refusal()
    assert stale is not None
    # Put the PDB right at once (an integer minAvailable needs no controller's scale): it has room in moments,
    # and the drain must still not ask before the 10 s the server asked for.
    cluster.policy.patch_namespaced_pod_disruption_budget(
        "stale", namespace, {"spec": {"maxUnavailable": None, "minAvailable": 0}}
    )
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status.observed_generation == p.metadata.generation and (p.status.disruptions_allowed or 0) > 0,
        namespace=namespace,
        timeout=30,
        what="PDB stale up to date, with room",
    )
    finished = drained.join(60)
    gone = evicted.join(60)

    assert finished.drained == (target,), [e.as_dict() for e in seen]
    # Before the request, the drain saw the stale status on its watch and queued: it says why, without the
    # stale counts (which would read as a budget that needs no more than it has).
    queued = next(e.event for e in seen if isinstance(e.event, EvictionBlocked))
    assert queued.reason.value == "pdb-blocked"
    assert (queued.healthy, queued.needed) == (None, None)
    assert "The disruption budget stale is still being processed by the server" in queued.message
    assert f"PodDisruptionBudget {namespace}/stale allows no disruption now" in blocked_line(queued)
    event = stale.event
    assert isinstance(event, EvictionBlocked)
    assert (event.pdb, event.retry_after) == (f"{namespace}/stale", 10.0)
    # (its envelope is stamped a moment after the next try was set: hence the 0.1 s)
    assert event.next_try_by - stale.at >= 10.0 - 0.1
    # Said so, in the drain's words.
    line = blocked_line(event)
    assert f"PodDisruptionBudget {namespace}/stale is still being processed by the server" in line
    assert "(Retry-After 10s)" in line
    # Its next request came no sooner than the server asked ...
    retries = [e for e in seen if isinstance(e.event, EvictionStarted) and e.seq > stale.seq]
    assert retries, [e.type for e in seen]
    assert retries[0].at - stale.at >= 10.0, retries[0].at - stale.at
    # ... and so did the eviction the API server accepted: deletionTimestamp is its time of acceptance plus the
    # grace period, truncated to whole seconds (hence the 1 s).
    accepted = gone.metadata.deletion_timestamp.timestamp() - gone.metadata.deletion_grace_period_seconds
    assert accepted >= stale.at + 10.0 - 1.0, (datetime.fromtimestamp(accepted), datetime.fromtimestamp(stale.at))


# --- --skip-wait-for-delete-timeout -------------------------------------------------------------------------

HOLD = "rollout-plus.test/hold"


def _release(cluster: Cluster, namespace: str, name: str) -> None:
    try:
        cluster.core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
    except client.ApiException as err:
        if err.status != 404:
            raise


def test_skip_wait_for_delete_timeout_stops_waiting_for_a_pod_deleted_longer_ago(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    """A pod a finalizer keeps terminating is not waited for once its deletionTimestamp is more than N s old
    (kubectl's rule); a pod that really goes is still waited for; and a later drain skips the held pod outright."""
    (target,) = dedicated_nodes(1)
    held = manifests.pod("held", grace_period=1, spec=manifests.placement(namespace))
    held["metadata"]["finalizers"] = [HOLD]
    cluster.core.create_namespaced_pod(namespace, held)
    deploy(cluster, namespace, "web", 1, pool=namespace)
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda p: p.metadata.name == "held" and p.status.phase == "Running",
        namespace=namespace,
        timeout=30,
        what="pod held running",
    )
    try:
        flags = ["--force", "--skip-wait-for-delete-timeout", "1", "--timeout", "60s", "-o", "jsonl"]
        result = run_plugin("drain", target, *flags, kubeconfig=kubeconfig)

        assert result.returncode == 0, result.stderr
        (skipped,) = by_type(result, "PodSkippedWaiting")
        assert (skipped["pod"]["name"], skipped["seconds"]) == ("held", 1)
        # The other pod was waited for until it was gone.
        assert [e["pod"]["name"].split("-")[0] for e in by_type(result, "PodGone")] == ["web"]
        assert [e["node"] for e in by_type(result, "NodeDrained")] == [target]
        # The cluster: the held pod is still there, terminating, and the drain stopped waiting for it only once
        # its deletionTimestamp was more than 1 s old (whole seconds, as kubectl counts).
        pod = cluster.core.read_namespaced_pod("held", namespace)
        assert pod.metadata.deletion_timestamp is not None
        assert pod.metadata.finalizers == [HOLD]
        skipped_at = datetime.fromisoformat(skipped["at"].replace("Z", "+00:00"))
        assert (skipped_at - pod.metadata.deletion_timestamp).total_seconds() >= 2.0
        assert node_state(cluster, target)[0] is True

        # Drained again: the pod deleted long ago is skipped by kubectl's first filter, never evicted again.
        again = run_plugin(
            "drain", target, "--force", "--skip-wait-for-delete-timeout", "1", "-o", "jsonl", kubeconfig=kubeconfig
        )
        assert again.returncode == 0, again.stderr
        (started,) = by_type(again, "NodeDrainStarted")
        assert started["pods"] == []
        assert by_type(again, "EvictionStarted") == []
        assert cluster.core.read_namespaced_pod("held", namespace).metadata.uid == pod.metadata.uid
    finally:
        _release(cluster, namespace, "held")


# --- cordon -l / uncordon -l ---------------------------------------------------------------------------------


def test_cordon_and_uncordon_by_selector_change_exactly_the_selected_nodes(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    first, second, other = dedicated_nodes(3)
    group = "rollout-plus.test/group"
    for node in (first, second):
        cluster.core.patch_node(node, {"metadata": {"labels": {group: "a"}}})
    selector = f"{manifests.POOL_LABEL}={namespace},{group}=a"

    cordoned = run_plugin("cordon", "-l", selector, kubeconfig=kubeconfig)

    assert cordoned.returncode == 0, cordoned.stderr
    assert node_state(cluster, first)[0] is True
    assert node_state(cluster, second)[0] is True
    assert node_state(cluster, other)[0] is False  # the node the selector leaves out
    assert sorted(cordoned.stdout.split()) == sorted([f"node/{first}", f"node/{second}", "cordoned", "cordoned"])

    cluster.core.patch_node(other, {"spec": {"unschedulable": True}})
    uncordoned = run_plugin("uncordon", "-l", selector, kubeconfig=kubeconfig)

    assert uncordoned.returncode == 0, uncordoned.stderr
    assert node_state(cluster, first)[0] is False
    assert node_state(cluster, second)[0] is False
    assert node_state(cluster, other)[0] is True
    assert sorted(e.reason for e in node_events(cluster, first)) == ["Cordoned", "Uncordoned"]
    assert node_events(cluster, other) == []
