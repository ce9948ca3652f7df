"""Carrying out ``drain --surge`` for one node (or one ``--node-batch``): look, raise, wait, lower, restore.

The decision is ``decision.decide``; the record that makes it crash-safe is
``record``. Here is the I/O between them:

1. look at each owner of the pods to remove (its kind, count, PDB room,
   HorizontalPodAutoscaler, GitOps marks, a leftover record);
2. for each one ``decide`` lets surge: record the original count and raise it
   (one request), then follow until the extra pods are Ready, for a bounded time;
   pods that stay Pending (no room) or a ReplicaSet that cannot create them
   (ResourceQuota: its ReplicaFailure condition) make the surge give up, put
   the count back, and the drain waits for the PDB as it would without --surge.
   Each workload's pods wait for its own surge only (``wait_until_settled``):
   the drain starts at once, every other pod goes meanwhile, and a workload
   whose surge is Ready does not wait for a slower one;
3. as each drained pod is evicted, lower the count by one (never below the
   original), so the ReplicaSet creates no replacement and the PDB's room
   comes back without waiting for one;
4. at the end (whatever happened), restore the original count and remove the record.

A Deployment's count is its own ``spec.replicas``. A managed workload's is its
one ReplicaSet's (``managed``): the drain raises that ReplicaSet only
when no rollout is under way, and holds the workload's rollout-driver Lease
from before the raise until after the restore, so no driver, ``apply`` or
``scale`` sets the count meanwhile. Its Kubernetes Events go on that
ReplicaSet: the object whose count changed, as a Deployment's go on the Deployment.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.surge.decision import (
    SurgeDecision,
    SurgeMax,
    WorkloadFacts,
    budget_room,
    decide,
    gitops_marker,
    lowered_replicas,
)
from kubectl_rollout.drain.surge.managed import (
    ManagedWorkload,
    driver_lease,
    read_managed,
    steady_replica_set,
    workload_of,
)
from kubectl_rollout.drain.surge.pdb_recount import BudgetKey, clear_count, clear_left_by, note_count
from kubectl_rollout.drain.surge.record import (
    DEPLOYMENT,
    KINDS,
    REPLICA_SET,
    CountChanged,
    RecordedKind,
    SurgeRecord,
    begin,
    kind_named,
    record_of,
    restore,
    set_count,
)
from kubectl_rollout.drain.surge.record import leftovers as recorded_leftovers
from kubectl_rollout.drain.surge.workload_events import record_workload_event
from kubectl_rollout.eviction.pdb_watch import PdbWatch
from kubectl_rollout.jobs.events import surge as ev
from kubectl_rollout.jobs.events.base import Emit, PodRef
from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.pods import controller_of
from kubectl_rollout.kube.watched_collection import WatchedCollection
from kubectl_rollout.kube.workload_lease import LEASE_SECONDS, LeaseHeld, LeaseKeeper, WorkloadLease

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class _Owner:
    ref: WorkloadRef
    pods: list[PodRef] = field(default_factory=list)
    #: the ReplicaSets of those pods
    pod_replica_sets: set[str] = field(default_factory=set)
    deployment: Any | None = None
    #: a managed workload: as read, and its one ReplicaSet with pods when no rollout is under way
    managed: ManagedWorkload | None = None
    replica_set: Any | None = None
    disruptions_allowed: int | None = None
    budgets: list[Any] = field(default_factory=list)

    def surged_object(self) -> tuple[RecordedKind, Any] | None:
        """What a surge raises: the Deployment, or the managed workload's ReplicaSet; None when neither."""
        if self.deployment is not None:
            return DEPLOYMENT, self.deployment
        if self.replica_set is not None:
            return REPLICA_SET, self.replica_set
        return None


@dataclass(kw_only=True)
class _Surged:
    """A workload this drain raised: what it set last, so that it only ever moves its own count."""

    ref: WorkloadRef
    #: the object whose count was raised (a Deployment, or a managed workload's ReplicaSet), and its name
    kind: RecordedKind
    object_name: str
    original: int
    added: int
    #: the count this drain set last
    current: int
    #: available replicas that mean every extra pod is Ready
    target: int
    selector: dict[str, str]
    pods: frozenset[tuple[str, str]]
    evicted: int = 0
    #: somebody else changed the count: leave it alone
    let_go: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the Lease that tells other drains this surge is alive (a managed workload's: its driver's Lease)
    keeper: LeaseKeeper | None = None
    #: set once the extra pods are Ready or the surge was given up: its pods may go
    settled: threading.Event = field(default_factory=threading.Event)
    #: the PDBs over its drained pods: told each lowered count, so that they are counted again at once
    budgets: tuple[BudgetKey, ...] = ()


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


def restore_leftovers(cluster: Cluster, emit: Emit, cancel: threading.Event | None = None) -> list[ev.SurgeRestored]:
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
            records += recorded_leftovers(cluster, kind)
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
) -> ev.SurgeRestored | None:
    lease = leases[record]
    if lease is not None and lease.seconds_left() > 0:
        log.info("surge of %s %s/%s: its Lease is renewed; left alone", record.kind, record.namespace, record.name)
        return None
    ref = workloads[record]
    outcome = restore(
        cluster, record.namespace, record.name, kind=kind_named(record.kind), expected=None if ref else -1
    )
    if outcome is None:
        return None
    clear_left_by(cluster, record.namespace, record.drain)
    if ref is None:
        ref = WorkloadRef(kind=record.kind, namespace=record.namespace, name=record.name)
    event = ev.SurgeRestored(
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


class SurgeSession:
    """The surges of one node (or one node batch), from the first look to the restore."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        drain: str,
        surge_max: SurgeMax,
        ready_timeout: float,
        pdbs: PdbWatch,
        emit: Emit,
        cancel: threading.Event,
    ) -> None:
        self.cluster = cluster
        self.drain = drain
        self.surge_max = surge_max
        self.ready_timeout = ready_timeout
        self.pdbs = pdbs
        self.emit = emit
        self.cancel = cancel
        self._surged: dict[WorkloadRef, _Surged] = {}
        self._by_pod: dict[tuple[str, str], _Surged] = {}
        self._replica_sets: dict[tuple[str, str], Any] = {}
        self._autoscalers: dict[str, dict[str, str]] = {}
        #: follows the surges until each is Ready or given up
        self._follower: threading.Thread | None = None
        self._stop = threading.Event()

    # --- looking --------------------------------------------------------------------------

    def _replica_set(self, namespace: str, name: str) -> Any | None:
        key = (namespace, name)
        if key not in self._replica_sets:
            try:
                self._replica_sets[key] = call_with_retry(
                    self.cluster.apps.read_namespaced_replica_set, name, namespace
                )
            except ApiException as err:
                if err.status != 404:
                    raise
                self._replica_sets[key] = None
        return self._replica_sets[key]

    def _owner_ref(self, pod: Any) -> WorkloadRef:
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

    def _autoscaler_of(self, ref: WorkloadRef) -> str | None:
        if ref.namespace not in self._autoscalers:
            api = client.AutoscalingV2Api(self.cluster.api_client)
            listing = call_with_retry(api.list_namespaced_horizontal_pod_autoscaler, ref.namespace)
            self._autoscalers[ref.namespace] = {
                h.spec.scale_target_ref.name: h.metadata.name
                for h in listing.items
                if h.spec.scale_target_ref.kind == ref.kind
            }
        name = self._autoscalers[ref.namespace].get(ref.name)
        return f"{ref.namespace}/{name}" if name else None

    def _owners(self, pods: Iterable[tuple[Any, str]]) -> list[_Owner]:
        owners: dict[WorkloadRef, _Owner] = {}
        for pod, node in pods:
            ref = self._owner_ref(pod)
            owner = owners.setdefault(ref, _Owner(ref=ref))
            owner.pods.append(PodRef(namespace=pod.metadata.namespace, name=pod.metadata.name, node=node))
            controller = controller_of(pod)
            if controller is not None and controller.kind == "ReplicaSet":
                owner.pod_replica_sets.add(controller.name)
            for budget in self.pdbs.selecting(pod):
                if all(b.metadata.uid != budget.metadata.uid for b in owner.budgets):
                    owner.budgets.append(budget)
                allowed = (budget.status.disruptions_allowed or 0) if budget.status else 0
                owner.disruptions_allowed = (
                    allowed if owner.disruptions_allowed is None else min(owner.disruptions_allowed, allowed)
                )
        return sorted(owners.values(), key=lambda o: o.ref)

    def _facts(self, owner: _Owner) -> WorkloadFacts:
        ref = owner.ref
        facts = WorkloadFacts(
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            pods_on_nodes=len(owner.pods),
            disruptions_allowed=owner.disruptions_allowed,
        )
        if owner.disruptions_allowed is None:
            return facts
        if ref.kind == "ManagedWorkload":
            return self._managed_facts(owner, facts)
        if ref.kind != "Deployment":
            return facts
        try:
            deployment = call_with_retry(self.cluster.apps.read_namespaced_deployment, ref.name, ref.namespace)
        except ApiException as err:
            if err.status == 404:
                return facts
            raise
        owner.deployment = deployment
        desired = deployment.spec.replicas if deployment.spec.replicas is not None else 1
        status = deployment.status
        # Pods of an older template still running: a rollout is under way. (A scale in progress, such as a
        # leftover surge just restored, is not one: every pod is of the current template.)
        rolling_out = status is not None and (status.updated_replicas or 0) < (status.replicas or 0)
        # A record here now is another drain's live surge (the leftovers of dead ones were restored before the
        # plan): said in that drain's words, from its Lease, rather than as a leftover.
        recorded = record_of(deployment) is not None
        held = surge_lease(self.cluster, ref.namespace, ref.name).held() if recorded else None
        return WorkloadFacts(
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            replicas=desired,
            pods_on_nodes=len(owner.pods),
            disruptions_allowed=owner.disruptions_allowed,
            room_by_spec=self._room_by_spec(owner, desired),
            autoscaler=self._autoscaler_of(ref),
            gitops=gitops_marker(deployment.metadata.labels or {}, deployment.metadata.annotations or {}),
            leftover_record=recorded and held is None,
            rolling_out=rolling_out,
            lease_held=held.message if held is not None else "",
        )

    @staticmethod
    def _room_by_spec(owner: _Owner, replicas: int) -> int | None:
        rooms = [
            budget_room(min_available=b.spec.min_available, max_unavailable=b.spec.max_unavailable, replicas=replicas)
            for b in owner.budgets
        ]
        known = [r for r in rooms if r is not None]
        return min(known) if known else None

    def _managed_facts(self, owner: _Owner, facts: WorkloadFacts) -> WorkloadFacts:
        """A managed workload: its record, its ReplicaSets (one with pods, the template's, or a rollout is under
        way) and its driver's Lease (held: a driver is at work, or another drain surges it)."""
        ref = owner.ref
        workload = read_managed(self.cluster, ref.namespace, ref.name)
        if workload is None:
            return facts
        owner.managed = workload
        owner.replica_set, why = steady_replica_set(workload, owner.pod_replica_sets)
        held = driver_lease(self.cluster, ref.namespace, ref.name).held()
        return dataclasses.replace(
            facts,
            replicas=workload.replicas,
            room_by_spec=self._room_by_spec(owner, workload.replicas),
            gitops=gitops_marker(workload.labels, workload.annotations),
            # under a held driver Lease, a record is that holder's live surge: the Lease says whose
            leftover_record=held is None
            and any(record_of(rs, REPLICA_SET) is not None for rs in workload.replica_sets),
            rolling_out=bool(why),
            rollout_detail=why,
            lease_held=held.message if held is not None else "",
        )

    def plan(self, pods: Iterable[tuple[Any, str]]) -> list[tuple[_Owner, SurgeDecision]]:
        """Each owner of these pods (pod, its node) with its decision; changes nothing."""
        return [(owner, decide(self._facts(owner), self.surge_max)) for owner in self._owners(pods)]

    @staticmethod
    def as_plans(decisions: list[tuple[_Owner, SurgeDecision]]) -> tuple[ev.SurgePlan, ...]:
        return tuple(
            ev.SurgePlan(
                workload=owner.ref,
                surge=decision.surge,
                reason=decision.reason,
                warning=decision.warning,
                pods=tuple(map(str, owner.pods)),
            )
            for owner, decision in decisions
            if owner.disruptions_allowed is not None or decision.warning
        )

    # --- raising --------------------------------------------------------------------------

    def start(self, pods: Iterable[tuple[Any, str]], *, nodes: tuple[str, ...]) -> None:
        """Raise every workload that may surge; a thread follows each until its extra pods are Ready (or gives
        it up). Returns once all are raised: ``wait_until_settled`` holds back each surged workload's pods."""
        for owner, decision in self.plan(pods):
            if owner.disruptions_allowed is None and not decision.warning:
                continue  # no PDB: nothing to wait for, nothing to say
            if decision.surge <= 0 or owner.surged_object() is None:
                self.emit(
                    ev.SurgeSkipped(
                        workload=owner.ref, reason=decision.reason, pods=tuple(owner.pods), warning=decision.warning
                    )
                )
                continue
            self._raise(owner, decision, nodes)
        if self._surged:
            self._follower = threading.Thread(target=self._follow_readiness, name="surge-ready", daemon=True)
            self._follower.start()

    def wait_until_settled(self, pod: PodRef, deadline: float | None) -> None:
        """Hold a drained pod until its workload's surge is Ready or given up (at once when not surged)."""
        surged = self._by_pod.get((pod.namespace, pod.name))
        if surged is None:
            return
        while not surged.settled.wait(0.5):
            if self.cancel.is_set() or self._stop.is_set():
                return
            if deadline is not None and time.monotonic() >= deadline:
                return  # the eviction then fails on the drain's timeout, in its usual words

    def _follow_readiness(self) -> None:
        try:
            self._wait_ready()
        except Exception as err:  # whatever went wrong, no pod may wait for ever
            log.warning("could not follow the surges' readiness: %s", err)
            for surged in list(self._surged.values()):
                try:
                    self._give_up(surged, f"its readiness could not be followed ({err})")
                except (ApiException, CountChanged, OSError) as failure:
                    log.warning("could not give %s up now (%s); its record stays", surged.ref, failure)
                finally:
                    surged.settled.set()
        finally:
            for surged in list(self._by_pod.values()):
                surged.settled.set()

    def _lease(self, owner: _Owner, decision: SurgeDecision, nodes: tuple[str, ...]) -> WorkloadLease:
        """The Lease the surge holds: a Deployment's surge Lease, or a managed workload's driver Lease, with why
        (what `apply`, `scale` or a driver that finds it held is told)."""
        ref = owner.ref
        if ref.kind == "Deployment":
            return surge_lease(self.cluster, ref.namespace, ref.name)
        replica_set = owner.replica_set.metadata.name if owner.replica_set is not None else "?"
        return driver_lease(
            self.cluster,
            ref.namespace,
            ref.name,
            purpose=(
                f"managed workload {ref.namespace}/{ref.name} is held by kubectl rollout-plus drain {self.drain}, "
                f"which surges its ReplicaSet {replica_set} by {decision.surge} while it evicts its pods from "
                f"{', '.join(nodes)}; the drain restores the count and releases the Lease when it ends: "
                "try again then"
            ),
        )

    def _still_steady(self, owner: _Owner) -> tuple[Any | None, str]:
        """A managed workload's ReplicaSet read again once the drain holds the driver's Lease (a driver may
        have acted between the look and the Lease): (the same ReplicaSet, "") or (None, why not)."""
        planned = owner.replica_set
        workload = read_managed(self.cluster, owner.ref.namespace, owner.ref.name)
        if workload is None or planned is None:
            return None, "its record was deleted; the drain waits for its PDB"
        replica_set, why = steady_replica_set(workload, owner.pod_replica_sets)
        if replica_set is None:
            return None, f"it is in the middle of a rollout ({why}); the drain waits for its PDB"
        if replica_set.metadata.name != planned.metadata.name or replica_set.spec.replicas != planned.spec.replicas:
            return None, "it changed while the drain looked at it; the drain waits for its PDB"
        return replica_set, ""

    def _raise(self, owner: _Owner, decision: SurgeDecision, nodes: tuple[str, ...]) -> None:
        surged_object = owner.surged_object()
        assert surged_object is not None
        kind, obj = surged_object
        keeper = LeaseKeeper(self._lease(owner, decision, nodes), self.cancel)
        try:
            keeper.start()
        except LeaseHeld as held:
            self.emit(ev.SurgeSkipped(workload=owner.ref, reason=held.message, pods=tuple(owner.pods)))
            return
        why = "it changed while the drain looked at it; the drain waits for its PDB"
        if kind is REPLICA_SET:
            obj, why = self._still_steady(owner)
        original = obj.spec.replicas if obj is not None and obj.spec.replicas is not None else 1
        raised = self._begin(kind, obj, original=original, added=decision.surge) if obj is not None else None
        if raised is None:
            keeper.stop()
            self.emit(ev.SurgeSkipped(workload=owner.ref, reason=why, pods=tuple(owner.pods)))
            return
        surged = _Surged(
            ref=owner.ref,
            kind=kind,
            object_name=raised.metadata.name,
            original=original,
            added=decision.surge,
            current=original + decision.surge,
            # Ready means this many available: the surge on top of what was available (at most the count;
            # a scale-down still under way must not raise the bar).
            target=min(original, (raised.status.available_replicas or 0) if raised.status else 0) + decision.surge,
            selector=dict(raised.spec.selector.match_labels or {}),
            pods=frozenset((p.namespace, p.name) for p in owner.pods),
            keeper=keeper,
            budgets=tuple((b.metadata.namespace, b.metadata.name) for b in owner.budgets),
        )
        self._surged[owner.ref] = surged
        for key in surged.pods:
            self._by_pod[key] = surged
        self.emit(
            ev.SurgeStarted(
                workload=owner.ref,
                original=original,
                replicas=surged.current,
                pods=tuple(owner.pods),
                warning=decision.warning,
            )
        )
        record_workload_event(
            self.cluster,
            kind=kind.kind,
            namespace=owner.ref.namespace,
            name=surged.object_name,
            reason="SurgeStarted",
            message=(
                f"Replicas raised from {original} to {surged.current} by kubectl rollout-plus drain {self.drain} "
                f"before evicting {len(owner.pods)} pod(s) from {', '.join(nodes)}"
            ),
        )

    def _begin(self, kind: RecordedKind, obj: Any, *, original: int, added: int) -> Any | None:
        """Record and raise (``record.begin``); the object as it was raised, or None if its count or
        record changed since the drain looked. Its controller writing its status meanwhile (a scale just
        restored is still settling) changes only the resourceVersion: read again and retry."""
        for _ in range(5):
            try:
                begin(self.cluster, obj, added=added, drain=self.drain, kind=kind)
                return obj
            except CountChanged:
                try:
                    obj = kind.read(self.cluster, obj.metadata.namespace, obj.metadata.name)
                except ApiException as err:
                    if err.status == 404:
                        return None
                    raise
                replicas = obj.spec.replicas if obj.spec.replicas is not None else 1
                if replicas != original or record_of(obj, kind) is not None:
                    return None
        return None

    def _wait_ready(self) -> None:
        waiting = dict(self._surged)
        if not waiting:
            return
        started = time.monotonic()
        changed = threading.Event()
        collections = {
            (kind, namespace): WatchedCollection(
                kind.lister(self.cluster),
                namespace=namespace,
                description=f"{kind.kind}s in {namespace}",
                on_change=changed.set,
            ).start()
            for kind, namespace in {(surged.kind, ref.namespace) for ref, surged in waiting.items()}
        }
        try:
            while waiting and not self.cancel.is_set() and not self._stop.is_set():
                for ref, surged in list(waiting.items()):
                    raised = collections[(surged.kind, ref.namespace)].get((ref.namespace, surged.object_name))
                    verdict = self._readiness(surged, raised, time.monotonic() - started)
                    if verdict is None:
                        continue
                    del waiting[ref]
                    if verdict == "":
                        self.emit(
                            ev.SurgeReady(workload=ref, replicas=surged.current, seconds=time.monotonic() - started)
                        )
                    else:
                        self._give_up(surged, verdict)
                    surged.settled.set()
                if waiting:
                    # Woken by the watch; the 1 s cap serves the bounded wait and the cancel flag.
                    changed.wait(1.0)
                    changed.clear()
        finally:
            for collection in collections.values():
                collection.stop()
        if self._stop.is_set():
            return  # finish() restores them
        for surged in waiting.values():
            self._give_up(surged, "the drain was cancelled")
            surged.settled.set()

    def _readiness(self, surged: _Surged, raised: Any, waited: float) -> str | None:
        """None: still waiting; "": Ready; otherwise why the surge is given up.

        Readiness is the raised object's status.availableReplicas: for a ReplicaSet the ReplicaSet controller's
        own count (minReadySeconds included), for a Deployment the Deployment controller's sum of it."""
        if raised is None:
            return f"the {surged.kind.kind} was deleted"
        status = raised.status
        available = (status.available_replicas or 0) if status else 0
        if available >= surged.target:
            return ""
        failure = next((c for c in (status.conditions or []) if c.type == "ReplicaFailure"), None) if status else None
        if failure is not None and failure.status == "True":
            return f"its ReplicaSet cannot create the extra pods: {self._replica_failure(surged, failure)}"
        if waited < self.ready_timeout:
            return None
        return self._why_not_ready(surged, waited)

    def _replica_failure(self, surged: _Surged, fallback: Any) -> str:
        """The ReplicaSet's own ReplicaFailure message (quota refusals are worded there), else the Deployment's copy."""
        selector = ",".join(f"{k}={v}" for k, v in sorted(surged.selector.items()))
        listing = call_with_retry(
            self.cluster.apps.list_namespaced_replica_set, surged.ref.namespace, label_selector=selector or None
        )
        for replica_set in listing.items:
            for condition in (replica_set.status.conditions if replica_set.status else None) or []:
                if condition.type == "ReplicaFailure" and condition.status == "True":
                    return f"{condition.reason}: {condition.message}"
        return f"{fallback.reason}: {fallback.message}"

    def _why_not_ready(self, surged: _Surged, waited: float) -> str:
        selector = ",".join(f"{k}={v}" for k, v in sorted(surged.selector.items()))
        pods = call_with_retry(
            self.cluster.core.list_namespaced_pod, surged.ref.namespace, label_selector=selector or None
        ).items
        pending = [p for p in pods if p.status is not None and p.status.phase == "Pending"]
        unscheduled = [
            c.message
            for p in pending
            for c in (p.status.conditions or [])
            if c.type == "PodScheduled" and c.status == "False" and c.message
        ]
        if unscheduled:
            return (
                f"{len(unscheduled)} extra pod(s) stayed Pending for {waited:.0f}s, no room on other nodes "
                f"({unscheduled[0]})"
            )
        return f"the extra pods were not Ready after {waited:.0f}s ({len(pending)} Pending)"

    def _give_up(self, surged: _Surged, why: str) -> None:
        """Put the count back at once; the drain then waits for the PDB as it would without --surge."""
        self._restore(surged)
        self.emit(
            ev.SurgeSkipped(
                workload=surged.ref,
                reason=f"surge given up: {why}; the drain waits for its PDB",
                pods=tuple(PodRef(namespace=ns, name=name) for ns, name in sorted(surged.pods)),
            )
        )

    def surged(self) -> list[str]:
        """The workloads raised and Ready now, with their counts, for a person."""
        return [f"{s.ref} {s.original}->{s.original + s.added}" for s in self._surged.values()]

    # --- lowering and restoring -----------------------------------------------------------

    def evicted(self, pod: PodRef) -> None:
        """A drained pod was evicted: lower its workload's count by one (never below the original)."""
        surged = self._by_pod.get((pod.namespace, pod.name))
        if surged is None:
            return
        with surged.lock:
            if surged.let_go:
                return
            surged.evicted += 1
            target = lowered_replicas(original=surged.original, surge=surged.added, evicted=surged.evicted)
            if target == surged.current:
                return
            try:
                set_count(
                    self.cluster,
                    surged.ref.namespace,
                    surged.object_name,
                    expected=surged.current,
                    replicas=target,
                    kind=surged.kind,
                )
            except CountChanged:
                log.info("%s: its count was changed by someone else; the drain leaves it alone", surged.ref)
                surged.let_go = True
                return
            surged.current = target
            note_count(
                self.cluster,
                surged.budgets,
                workload=f"{surged.kind.kind}/{surged.object_name}",
                replicas=target,
                drain=self.drain,
            )

    def _restore(self, surged: _Surged) -> None:
        with surged.lock:
            if self._surged.pop(surged.ref, None) is None:
                return
            for key in surged.pods:
                self._by_pod.pop(key, None)
            try:
                outcome = restore(
                    self.cluster,
                    surged.ref.namespace,
                    surged.object_name,
                    expected=-1 if surged.let_go else surged.current,  # -1: only remove the record
                    kind=surged.kind,
                )
                if surged.evicted:
                    clear_count(self.cluster, surged.budgets)
            finally:
                # Released even when the restore failed: the record stays for the next drain, uncordon or resume,
                # which restore it once the Lease is free; a Lease renewed on (in a long-lived agent) would keep
                # them, and a managed workload's apply and scale, out for as long as the process lives.
                if surged.keeper is not None:
                    surged.keeper.stop()
        replicas = outcome.replicas if outcome is not None else surged.original
        count_restored = outcome.count_restored if outcome is not None else False
        self.emit(
            ev.SurgeRestored(workload=surged.ref, replicas=replicas, drain=self.drain, count_restored=count_restored)
        )
        record_workload_event(
            self.cluster,
            kind=surged.kind.kind,
            namespace=surged.ref.namespace,
            name=surged.object_name,
            reason="SurgeRestored",
            message=(
                f"Replicas restored to {replicas} by kubectl rollout-plus drain {self.drain}"
                if count_restored
                else f"Surge of drain {self.drain} ended; the count had been changed to {replicas} and was left so"
            ),
        )

    def finish(self) -> None:
        """Restore every count this session raised (called whatever happened)."""
        self._stop.set()
        if self._follower is not None:
            self._follower.join()
        for surged in list(self._surged.values()):
            try:
                self._restore(surged)
            except (ApiException, CountChanged, OSError) as err:
                # The record stays on the object: the next drain, uncordon or resume restores it.
                log.warning("could not restore %s now (%s); its record stays for the next drain", surged.ref, err)
