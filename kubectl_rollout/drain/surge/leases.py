"""The Leases a surge holds, from before the raise until after the restore, renewed every 5 s.

A Deployment's surge holds ``rollout-plus.surge.NAME``, its own: another drain
finds it held and leaves that Deployment to it. A managed workload's surge
holds the workload's rollout-driver Lease (``kube.record_names``), so no
driver, ``apply`` or ``scale`` sets the count meanwhile; the drain writes on it
why it holds it, which is what they are told. A record under a Lease still
renewed is a live surge's (``leftovers``).
"""

from __future__ import annotations

from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import driver_lease_name
from kubectl_rollout.kube.workload_lease import WorkloadLease


def surge_lease(cluster: Cluster, namespace: str, name: str) -> WorkloadLease:
    """``rollout-plus.surge.NAME``: held (renewed every 5 s) by the drain that surges Deployment NAME."""
    return WorkloadLease(
        cluster,
        namespace,
        name,
        lease_name=f"rollout-plus.surge.{name}",
        subject=f"Deployment {namespace}/{name} is being surged",
        advice="another drain is surging it; its pods wait for their PDB",
    )


def driver_lease(cluster: Cluster, namespace: str, name: str, *, purpose: str = "") -> WorkloadLease:
    """The rollout driver's Lease ``rollout-plus.NAME``, as a surging drain takes it (``purpose``: why)."""
    return WorkloadLease(
        cluster,
        namespace,
        name,
        lease_name=driver_lease_name(name),
        subject=f"managed workload {namespace}/{name} is being driven",
        advice="the drain waits for its PDB",
        purpose=purpose,
    )


def surging_lease(
    cluster: Cluster, ref: WorkloadRef, *, drain: str, replica_set: str, surge: int, nodes: tuple[str, ...]
) -> WorkloadLease:
    """The Lease a surge of ``ref`` holds: a Deployment's surge Lease, or a managed workload's driver Lease, with
    why (what `apply`, `scale` or a driver that finds it held is told); ``replica_set``: the one it raises."""
    if ref.kind == "Deployment":
        return surge_lease(cluster, ref.namespace, ref.name)
    return driver_lease(
        cluster,
        ref.namespace,
        ref.name,
        purpose=(
            f"managed workload {ref.namespace}/{ref.name} is held by kubectl rollout-plus drain {drain}, "
            f"which surges its ReplicaSet {replica_set} by {surge} while it evicts its pods from "
            f"{', '.join(nodes)}; the drain restores the count and releases the Lease when it ends: "
            "try again then"
        ),
    )
