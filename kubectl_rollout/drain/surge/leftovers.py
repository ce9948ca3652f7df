"""A killed or failed drain's surges, found by their records and restored.

A drain that dies mid-surge leaves its record on the object it raised (a
Deployment, or a managed workload's ReplicaSet; ``record``). The next drain,
``uncordon`` and the agent's resume list such records across all namespaces and
put each count back (the drain's deletion-cost marks off its pods first,
``first_to_go``), unless the Lease of the surge is still renewed: then a live
drain owns it (``leases``). Each restore is reported (``SurgeRestored``,
``leftover=True``) and recorded as a Kubernetes Event on the object.
"""

from __future__ import annotations

import logging
import threading
import time

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.surge.first_to_go import unmark_left
from kubectl_rollout.drain.surge.leases import driver_lease, surge_lease
from kubectl_rollout.drain.surge.pdb_recount import clear_left_by
from kubectl_rollout.drain.surge.record import DEPLOYMENT, KINDS, SurgeRecord, kind_named, list_records, restore
from kubectl_rollout.drain.surge.workload_events import record_workload_event
from kubectl_rollout.jobs.events import surge as surge_events
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import workload_of
from kubectl_rollout.kube.workload_lease import LEASE_SECONDS, WorkloadLease

log = logging.getLogger(__name__)


def _leftover_workload(record: SurgeRecord) -> WorkloadRef | None:
    """The workload a leftover record belongs to; None for a ReplicaSet no managed workload controls (released
    to a Deployment since, say): its count is that owner's, so only the record is removed."""
    if record.kind == DEPLOYMENT.kind:
        return WorkloadRef(kind="Deployment", namespace=record.namespace, name=record.name)
    managed = workload_of(record.owner_kind, record.owner_name)
    return WorkloadRef(kind="ManagedWorkload", namespace=record.namespace, name=managed) if managed else None


def _leftover_lease(cluster: Cluster, workload: WorkloadRef | None) -> WorkloadLease | None:
    """The Lease a live surge of this workload would hold: a Deployment's surge Lease, a managed workload's
    driver Lease (held by its driver too: a record under a live driver is the driver's to settle)."""
    if workload is None:
        return None
    if workload.kind == "Deployment":
        return surge_lease(cluster, workload.namespace, workload.name)
    return driver_lease(cluster, workload.namespace, workload.name)


def restore_leftovers(
    cluster: Cluster, emit: Emit, cancel: threading.Event | None = None
) -> list[surge_events.SurgeRestored]:
    """Restore every surge record a killed or failed drain left in the cluster, reporting each one.

    A record whose drain still renews its Lease belongs to a drain that is alive and is left alone; a drain
    killed a moment ago looks alive until its Lease lapses, so a valid Lease is watched until it is renewed
    (alive: about 5 s) or lapses (dead: at most its 15 s), whichever comes first (``_wait_for_leases``).
    Records sit on Deployments and on managed workloads' ReplicaSets (one list each); a kind this user may not
    list is raised after the other kind's records were restored (the caller decides whether that matters).
    """
    records: list[SurgeRecord] = []
    forbidden: ApiException | None = None
    for kind in KINDS:
        try:
            records += list_records(cluster, kind)
        except ApiException as err:
            if err.status != 403:
                raise
            forbidden = forbidden or err
    workloads = {record: _leftover_workload(record) for record in records}
    leases = {record: _leftover_lease(cluster, workloads[record]) for record in records}
    _wait_for_leases([lease for lease in leases.values() if lease is not None], cancel or threading.Event())
    restored = [event for record in records if (event := _restore_leftover(cluster, record, workloads, leases, emit))]
    if forbidden is not None:
        raise forbidden
    return restored


def _wait_for_leases(leases: list[WorkloadLease], cancel: threading.Event) -> None:
    """Until every valid Lease of a record was renewed since the first look (its holder is alive) or lapsed (it
    is not): what tells a live surge from a killed one. A live holder renews every 5 s, so another drain's
    start waits about that long for it, not the Lease's whole 15 s."""
    first = {lease: lease.expiry() for lease in leases}
    undecided = [lease for lease, expiry in first.items() if expiry > time.time()]
    deadline = time.monotonic() + LEASE_SECONDS + 0.5
    while undecided and time.monotonic() < deadline and not cancel.wait(0.5):
        now = time.time()
        # still undecided: not renewed since the first look (its expiry has not moved) and not lapsed yet
        undecided = [lease for lease in undecided if first[lease] >= lease.expiry() > now]


def _restore_leftover(
    cluster: Cluster,
    record: SurgeRecord,
    workloads: dict[SurgeRecord, WorkloadRef | None],
    leases: dict[SurgeRecord, WorkloadLease | None],
    emit: Emit,
) -> surge_events.SurgeRestored | None:
    lease = leases[record]
    if lease is not None and lease.seconds_left() > 0:
        log.info("surge of %s %s/%s: its Lease is renewed; left alone", record.kind, record.namespace, record.name)
        return None
    ref = workloads[record]
    # The killed drain's marks first, so that the count coming down removes extra pods rather than drained ones.
    unmark_left(cluster, record.namespace, record.selector)
    outcome = restore(
        cluster, record.namespace, record.name, kind=kind_named(record.kind), expected=None if ref else -1
    )
    if outcome is None:
        return None
    clear_left_by(cluster, record.namespace, record.drain)
    if ref is None:
        ref = WorkloadRef(kind=record.kind, namespace=record.namespace, name=record.name)
    event = surge_events.SurgeRestored(
        workload=ref,
        replicas=outcome.replicas,
        leftover=True,
        drain=record.drain,
        count_restored=outcome.count_restored,
    )
    emit(event)
    record_workload_event(
        cluster,
        kind=record.kind,
        namespace=record.namespace,
        name=record.name,
        reason="SurgeRestored",
        message=(
            f"Replica count restored to {outcome.replicas} after a surge left by drain {record.drain}"
            if outcome.count_restored
            else f"Surge record of drain {record.drain} removed; the count had been changed to {outcome.replicas}"
        ),
    )
    return event
