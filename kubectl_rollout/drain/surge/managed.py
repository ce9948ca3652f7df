"""What ``drain --surge`` reads of a workload this plugin manages, and whether it is steady enough to surge.

A managed workload (``kubectl rollout-plus apply``) is a record ConfigMap
``rollout-plus.NAME`` that controls ReplicaSets ``NAME-HASH``; its rollout
driver sets their counts from the record while it holds the Lease
``rollout-plus.NAME``. The drain surges it by raising its one ReplicaSet
with pods (the disruption controller measures a PDB over a ReplicaSet that has
no Deployment owner against that ReplicaSet's own count), and holds the
driver's Lease meanwhile (``leases``), so no driver, ``apply`` or ``scale``
moves the count under it.

The drain may not import the rollout package (the import contracts of pyproject.toml keep
drain and rollout apart): the names of the record it reads are both packages'
own, in ``kube.record_names``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import RECORD_PREFIX, WORKLOAD_LABEL, record_name


@dataclass(frozen=True, kw_only=True)
class ManagedWorkload:
    """A managed workload as the drain sees it: its record's numbers and its ReplicaSets."""

    namespace: str
    name: str
    #: the record's spec.replicas, generation, and the status its driver last wrote
    replicas: int
    generation: int
    observed_generation: int
    status_replicas: int
    updated_replicas: int
    #: the manifest's metadata (for GitOps marks)
    labels: dict[str, str]
    annotations: dict[str, str]
    #: its ReplicaSets (controlled by the record), as read
    replica_sets: tuple[Any, ...]


def read_managed(cluster: Cluster, namespace: str, name: str) -> ManagedWorkload | None:
    """The record and the ReplicaSets it controls; None when the record is gone."""
    try:
        record = call_with_retry(cluster.core.read_namespaced_config_map, record_name(name), namespace)
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    listing = call_with_retry(
        cluster.apps.list_namespaced_replica_set, namespace, label_selector=f"{WORKLOAD_LABEL}={name}"
    )
    return managed_from(record, listing.items)


def managed_from(record: Any, replica_sets: Sequence[Any]) -> ManagedWorkload:
    """The drain's view of a record ConfigMap (as rollout.record writes it) and of the ReplicaSets it controls."""
    data = record.data or {}
    manifest = json.loads(data.get("manifest") or "{}")
    status = json.loads(data.get("status") or "{}")
    spec = manifest.get("spec") or {}
    metadata = manifest.get("metadata") or {}
    return ManagedWorkload(
        namespace=record.metadata.namespace,
        name=record.metadata.name[len(RECORD_PREFIX) :],
        replicas=spec["replicas"] if spec.get("replicas") is not None else 1,
        generation=int(data.get("generation", "1")),
        observed_generation=int(status.get("observedGeneration", 0)),
        status_replicas=int(status.get("replicas", 0)),
        updated_replicas=int(status.get("updatedReplicas", 0)),
        labels=dict(metadata.get("labels") or {}),
        annotations=dict(metadata.get("annotations") or {}),
        replica_sets=tuple(
            rs
            for rs in replica_sets
            if any(ref.controller and ref.uid == record.metadata.uid for ref in rs.metadata.owner_references or [])
        ),
    )


def why_not_steady(
    *,
    replicas: int,
    generation: int,
    observed_generation: int,
    status_replicas: int,
    updated_replicas: int,
    counts: Sequence[tuple[str, int]],
    pods_of: Collection[str],
) -> str:
    """Why a rollout (or a change not driven yet) is under way, or "" when it is steady: then exactly one
    ReplicaSet has a count, the record's, and it is the current template's and every drained pod's.

    ``counts``: each ReplicaSet's (name, spec.replicas); ``pods_of``: the ReplicaSets of the drained pods.
    Pure. The status is the driver's last word; it is trusted because the drain holds the driver's Lease
    when it acts on this (no driver writes meanwhile), and a change recorded since shows as a generation
    the status has not observed.
    """
    if observed_generation < generation:
        return f"generation {generation} of its spec is recorded but not driven yet (status at {observed_generation})"
    if updated_replicas < status_replicas:
        return f"{status_replicas - updated_replicas} of its {status_replicas} pods run an older template"
    running = sorted(name for name, count in counts if count > 0)
    if len(running) != 1:
        return f"{len(running)} of its ReplicaSets have a count ({', '.join(running) or 'none'})"
    (current,) = running
    count = next(count for name, count in counts if name == current)
    if count != replicas:
        return f"ReplicaSet {current} has {count} replicas, its spec {replicas}: a scale is under way"
    others = sorted(set(pods_of) - {current})
    if others:
        return f"pods of ReplicaSet {', '.join(others)} are still on the node"
    return ""


def steady_replica_set(workload: ManagedWorkload, pods_of: Collection[str]) -> tuple[Any | None, str]:
    """(the ReplicaSet to surge, "") when steady, else (None, why not) (``why_not_steady``)."""
    why = why_not_steady(
        replicas=workload.replicas,
        generation=workload.generation,
        observed_generation=workload.observed_generation,
        status_replicas=workload.status_replicas,
        updated_replicas=workload.updated_replicas,
        counts=[(rs.metadata.name, rs.spec.replicas or 0) for rs in workload.replica_sets],
        pods_of=pods_of,
    )
    if why:
        return None, why
    return next(rs for rs in workload.replica_sets if (rs.spec.replicas or 0) > 0), ""


def still_steady(
    cluster: Cluster, namespace: str, name: str, *, planned: Any | None, pod_replica_sets: Collection[str]
) -> tuple[Any | None, str]:
    """A managed workload's ReplicaSet read again once the drain holds the driver's Lease (a driver may
    have acted between the look and the Lease): (the same ReplicaSet, "") or (None, why not)."""
    workload = read_managed(cluster, namespace, name)
    if workload is None or planned is None:
        return None, "its record was deleted; the drain waits for its PDB"
    replica_set, why = steady_replica_set(workload, pod_replica_sets)
    if replica_set is None:
        return None, f"it is in the middle of a rollout ({why}); the drain waits for its PDB"
    if replica_set.metadata.name != planned.metadata.name or replica_set.spec.replicas != planned.spec.replicas:
        return None, "it changed while the drain looked at it; the drain waits for its PDB"
    return replica_set, ""
