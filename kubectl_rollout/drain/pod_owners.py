"""The workload a pod belongs to, as a person names it: the Deployment above its ReplicaSet, the managed
workload whose record controls that ReplicaSet, its StatefulSet, ..., or the pod itself when bare.

The surge decides by it (``surge.facts``), and a PDB's blocker line names it so
that its advice is a command that can be run as it stands (``PodOwnerKnown``).
One ReplicaSet read per ReplicaSet, kept for the lookup's life: pods of one ReplicaSet refused by their PDB at
the same moment, each on its own eviction thread, wait for one read instead of each sending its own (twelve
reads of one ReplicaSet at once, on a throttled server, were twelve requests where one does).
"""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.pods import controller_of
from kubectl_rollout.kube.record_names import workload_of


class OwnerLookup:
    """Names pods' workloads; what it read of each ReplicaSet it keeps (a drain's pods share a few). Safe to
    ask from several threads: one read per ReplicaSet, the others asking for it wait for that one."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._replica_sets: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        #: one lock per ReplicaSet being read, so that reads of different ReplicaSets do not wait for each other
        self._reading: dict[tuple[str, str], threading.Lock] = {}

    def _replica_set(self, namespace: str, name: str) -> Any | None:
        key = (namespace, name)
        with self._lock:
            reading = self._reading.setdefault(key, threading.Lock())
        with reading:
            if key not in self._replica_sets:  # a read that failed (not 404) is tried again by the next asker
                try:
                    self._replica_sets[key] = call_with_retry(
                        self.cluster.apps.read_namespaced_replica_set, name, namespace
                    )
                except ApiException as err:
                    if err.status != 404:
                        raise
                    self._replica_sets[key] = None
            return self._replica_sets[key]

    def owner_of(self, pod: Any) -> WorkloadRef:
        """The pod's workload: a ReplicaSet's Deployment or managed workload when it has one (a ReplicaSet
        gone meanwhile names itself), any other controller as it is, ``Pod`` for a bare pod."""
        namespace = pod.metadata.namespace
        ref = controller_of(pod)
        if ref is None:
            return WorkloadRef(kind="Pod", namespace=namespace, name=pod.metadata.name)
        if ref.kind == "ReplicaSet":
            replica_set = self._replica_set(namespace, ref.name)
            parent = controller_of(replica_set) if replica_set is not None else None
            if parent is not None and parent.kind == "Deployment":
                return WorkloadRef(kind="Deployment", namespace=namespace, name=parent.name)
            managed = workload_of(parent.kind, parent.name) if parent is not None else None
            if managed is not None:
                return WorkloadRef(kind="ManagedWorkload", namespace=namespace, name=managed)
        return WorkloadRef(kind=ref.kind, namespace=namespace, name=ref.name)
