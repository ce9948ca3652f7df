"""Which workload a pod belongs to, and waiting until such workloads are fully available.

``drain --node-batch`` waits, between batches, until every workload that lost
a pod has all its replicas available again, so the next batch never starts
from a degraded state. Availability is what the controllers report in status
(the ReplicaSet controller counts minReadySeconds); nothing is recomputed here.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.jobs.events.drain import WorkloadAvailability, WorkloadRef
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.pods import controller_of
from kubectl_rollout.kube.watched_collection import WatchedCollection


def owning_workload(cluster: Cluster, pod: Any) -> WorkloadRef | None:
    """The top-level replicated workload of a pod; None for DaemonSets, Jobs and bare pods."""
    ref = controller_of(pod)
    namespace = pod.metadata.namespace
    if ref is None:
        return None
    if ref.kind == "ReplicaSet":
        try:
            replica_set = call_with_retry(cluster.apps.read_namespaced_replica_set, ref.name, namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        parent = controller_of(replica_set)
        if parent is not None and parent.kind == "Deployment":
            return WorkloadRef(kind="Deployment", namespace=namespace, name=parent.name)
        return WorkloadRef(kind="ReplicaSet", namespace=namespace, name=ref.name)
    if ref.kind in ("StatefulSet", "ReplicationController"):
        return WorkloadRef(kind=ref.kind, namespace=namespace, name=ref.name)
    return None


def owning_workloads(cluster: Cluster, pods: Iterable[Any]) -> set[WorkloadRef]:
    """The top-level replicated workloads of ``pods`` (``owning_workload`` of each): one ReplicaSet read per
    ReplicaSet however many of its pods there are (a wave's evicted pods are hundreds of a few), the reads
    sent together (the wave's soak waits on them)."""
    one_pod_each: dict[tuple[str, str, str], Any] = {}
    for pod in pods:
        ref = controller_of(pod)
        if ref is not None:
            one_pod_each.setdefault((pod.metadata.namespace, ref.kind, ref.name), pod)
    if not one_pod_each:
        return set()
    with ThreadPoolExecutor(max_workers=min(_OWNER_READS_AT_ONCE, len(one_pod_each))) as pool:
        found = pool.map(functools.partial(owning_workload, cluster), one_pod_each.values())
        return {workload for workload in found if workload is not None}


#: ReplicaSet reads in flight at once while finding the workloads of many pods
_OWNER_READS_AT_ONCE = 8


def available_and_desired(obj: Any) -> tuple[int, int]:
    desired = obj.spec.replicas if obj.spec.replicas is not None else 1
    return (obj.status.available_replicas or 0) if obj.status else 0, desired


def is_fully_available(obj: Any) -> bool:
    available, desired = available_and_desired(obj)
    generation_seen = obj.status is not None and (obj.status.observed_generation or 0) >= (obj.metadata.generation or 0)
    return generation_seen and available >= desired


def _list_func(cluster: Cluster, kind: str) -> Callable[..., Any]:
    functions: dict[str, Callable[..., Any]] = {
        "Deployment": cluster.apps.list_namespaced_deployment,
        "ReplicaSet": cluster.apps.list_namespaced_replica_set,
        "StatefulSet": cluster.apps.list_namespaced_stateful_set,
        "ReplicationController": cluster.core.list_namespaced_replication_controller,
    }
    return functions[kind]


def describe(
    workloads: Iterable[WorkloadRef], collections: dict[tuple[str, str], WatchedCollection]
) -> list[WorkloadAvailability]:
    states = []
    for ref in sorted(workloads):
        obj = collections[(ref.kind, ref.namespace)].get((ref.namespace, ref.name))
        if obj is None:
            states.append(WorkloadAvailability(workload=ref, gone=True))
        else:
            available, desired = available_and_desired(obj)
            states.append(WorkloadAvailability(workload=ref, available=available, desired=desired))
    return states


def wait_until_available(
    cluster: Cluster,
    workloads: set[WorkloadRef],
    *,
    timeout: float | None,
    cancel: threading.Event | None,
    on_waiting: Callable[[list[WorkloadAvailability]], None],
    stay_available_for: float = 0.0,
    on_steady: Callable[[], None] | None = None,
) -> list[WorkloadAvailability]:
    """Block until every workload is fully available (or deleted), and has stayed so for
    ``stay_available_for`` seconds (a campaign's soak: a workload that drops out starts the count again).
    ``on_steady`` is called each time that count starts (so a screen can count down with it).

    Returns the descriptions of those still unavailable when the timeout or a
    cancel ended the wait; an empty list on success.
    """
    collections: dict[tuple[str, str], WatchedCollection] = {}
    # Every collection's watch sets it: one wait covers them all.
    changed = threading.Event()
    try:
        for kind, namespace in {(w.kind, w.namespace) for w in workloads}:
            collections[(kind, namespace)] = WatchedCollection(
                _list_func(cluster, kind),
                namespace=namespace,
                description=f"{kind}s in {namespace}",
                on_change=changed.set,
            ).start()

        def pending() -> set[WorkloadRef]:
            result = set()
            for ref in workloads:
                obj = collections[(ref.kind, ref.namespace)].get((ref.namespace, ref.name))
                if obj is not None and not is_fully_available(obj):
                    result.add(ref)
            return result

        waiting = pending()
        if waiting:
            on_waiting(describe(waiting, collections))
        deadline = None if timeout is None else time.monotonic() + timeout
        steady_since: float | None = None
        while True:
            now = time.monotonic()
            if not waiting:
                if steady_since is None:
                    steady_since = now
                    if on_steady is not None:
                        on_steady()
                if now - steady_since >= stay_available_for:
                    return []
            remaining = None if deadline is None else deadline - now
            if (remaining is not None and remaining <= 0) or (cancel is not None and cancel.is_set()):
                return describe(waiting, collections)
            # Woken by any watch (or the soak's end); the 1 s cap only serves the cancel flag and the deadline.
            pause = 1.0 if remaining is None else min(1.0, remaining)
            if steady_since is not None:
                pause = min(pause, steady_since + stay_available_for - now)
            changed.wait(max(pause, 0.0))
            changed.clear()
            before, waiting = waiting, pending()
            if waiting:
                steady_since = None
                if not before:  # one dropped out during the soak: say so, the count starts again
                    on_waiting(describe(waiting, collections))
    finally:
        for collection in collections.values():
            collection.stop()
