"""A surge in progress, for one node (or one ``--node-batch``): look, raise, wait, lower, restore.

The decision is ``decision.decide`` over what ``facts`` reads; the record that
makes it crash-safe is ``record``. Here is the I/O between them:

1. look at each owner of the pods to remove (its kind, count, PDB room,
   HorizontalPodAutoscaler, GitOps marks, a leftover record; ``facts``);
2. for each one ``decide`` lets surge: take its Lease (``leases``), record the
   original count and raise it (one request), then follow until the extra pods
   are Ready, for a bounded time (``readiness``);
   pods that stay Pending (no room) or a ReplicaSet that cannot create them
   (ResourceQuota: its ReplicaFailure condition) make the surge give up, put
   the count back, and the drain waits for the PDB as it would without --surge.
   Each workload's pods wait for its own surge only (``wait_until_settled``):
   the drain starts at once, every other pod goes meanwhile, and a workload
   whose surge is Ready does not wait for a slower one;
3. as each drained pod is evicted, lower the count by one (never below the
   original), so the ReplicaSet creates no replacement and the PDB's room
   comes back without waiting for one (``pdb_recount``); the drained pods were
   marked before the raise as the first a scale-down removes, so a lowering
   never takes an extra pod instead (``first_to_go``);
4. at the end (whatever happened), give the pods not evicted their deletion
   cost back, restore the original count and remove the record, and release
   the Lease. What a killed drain leaves is ``leftovers``'.

A Deployment's count is its own ``spec.replicas``. A managed workload's is its
one ReplicaSet's (``managed``): the drain raises that ReplicaSet only
when no rollout is under way, and holds the workload's rollout-driver Lease
from before the raise until after the restore, so no driver, ``apply`` or
``scale`` sets the count meanwhile. Its Kubernetes Events go on that
ReplicaSet: the object whose count changed, as a Deployment's go on the Deployment.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.surge.decision import SurgeDecision, SurgeMax, decide, lowered_replicas
from kubectl_rollout.drain.surge.facts import FactReader, Owner
from kubectl_rollout.drain.surge.first_to_go import DELETION_COST, mark, unmark
from kubectl_rollout.drain.surge.leases import surging_lease
from kubectl_rollout.drain.surge.managed import still_steady
from kubectl_rollout.drain.surge.pdb_recount import (
    BudgetKey,
    RecountFollower,
    clear_count,
    note_count,
    others_expected,
)
from kubectl_rollout.drain.surge.readiness import readiness
from kubectl_rollout.drain.surge.record import (
    REPLICA_SET,
    CountChanged,
    RecordedKind,
    begin_unless_moved,
    restore,
    set_count,
)
from kubectl_rollout.drain.surge.workload_events import record_workload_event
from kubectl_rollout.eviction.pdb_watch import PdbWatch
from kubectl_rollout.jobs.events import surge as surge_events
from kubectl_rollout.jobs.events.base import Emit, PodRef
from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.watched_collection import WatchedCollection
from kubectl_rollout.kube.workload_lease import LeaseHeld, LeaseKeeper

log = logging.getLogger(__name__)


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
    #: of those that count by the workloads' counts: what each expects of pods not this workload's
    others: dict[BudgetKey, int] = field(default_factory=dict)
    #: its drained pods given the lowest deletion cost before the raise, and those of them evicted since
    marked: tuple[PodRef, ...] = ()
    gone: set[tuple[str, str]] = field(default_factory=set)


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
        self.emit = emit
        self.cancel = cancel
        self._facts = FactReader(cluster, pdbs)
        #: makes sure each PDB told a lowered count counted it
        self._recounts = RecountFollower(cluster, pdbs)
        self._surged: dict[WorkloadRef, _Surged] = {}
        self._by_pod: dict[tuple[str, str], _Surged] = {}
        #: follows the surges until each is Ready or given up
        self._follower: threading.Thread | None = None
        self._stop = threading.Event()
        #: each drained pod's own deletion cost (None: it had none), given back to those not evicted
        self._costs_before: dict[tuple[str, str], str | None] = {}

    # --- looking (``facts``) -----------------------------------------------------------------

    def plan(self, pods: Iterable[tuple[Any, str]]) -> list[tuple[Owner, SurgeDecision]]:
        """Each owner of these pods (pod, its node) with its decision; changes nothing."""
        return [(owner, decide(self._facts.facts(owner), self.surge_max)) for owner in self._facts.owners(pods)]

    @staticmethod
    def as_plans(decisions: list[tuple[Owner, SurgeDecision]]) -> tuple[surge_events.SurgePlan, ...]:
        return tuple(
            surge_events.SurgePlan(
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
        pods = list(pods)
        self._costs_before = {
            (pod.metadata.namespace, pod.metadata.name): (pod.metadata.annotations or {}).get(DELETION_COST)
            for pod, _ in pods
        }
        to_raise = []
        for owner, decision in self.plan(pods):
            if owner.disruptions_allowed is None and not decision.warning:
                continue  # no PDB: nothing to wait for, nothing to say
            if decision.surge <= 0 or owner.surged_object() is None:
                self.emit(
                    surge_events.SurgeSkipped(
                        workload=owner.ref, reason=decision.reason, pods=tuple(owner.pods), warning=decision.warning
                    )
                )
                continue
            to_raise.append((owner, decision))
        # Before any raise, so that the controller's cache has the marks by the time it acts on a lowering; the
        # pods of every workload at once (a round trip each, side by side).
        marked = set(mark(self.cluster, [pod for owner, _ in to_raise for pod in owner.pods], self._costs_before))
        for owner, decision in to_raise:
            self._raise(owner, decision, nodes, tuple(pod for pod in owner.pods if pod in marked))
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

    def _raise(self, owner: Owner, decision: SurgeDecision, nodes: tuple[str, ...], marked: tuple[PodRef, ...]) -> None:
        surged_object = owner.surged_object()
        assert surged_object is not None
        kind, obj = surged_object
        lease = surging_lease(
            self.cluster,
            owner.ref,
            drain=self.drain,
            replica_set=owner.replica_set.metadata.name if owner.replica_set is not None else "?",
            surge=decision.surge,
            nodes=nodes,
        )
        keeper = LeaseKeeper(lease, self.cancel)
        try:
            keeper.start()
        except LeaseHeld as held:
            unmark(self.cluster, marked, self._costs_before)
            self.emit(surge_events.SurgeSkipped(workload=owner.ref, reason=held.message, pods=tuple(owner.pods)))
            return
        why = "it changed while the drain looked at it; the drain waits for its PDB"
        if kind is REPLICA_SET:
            obj, why = still_steady(
                self.cluster,
                owner.ref.namespace,
                owner.ref.name,
                planned=owner.replica_set,
                pod_replica_sets=owner.pod_replica_sets,
            )
        original = obj.spec.replicas if obj is not None and obj.spec.replicas is not None else 1
        raised = (
            begin_unless_moved(self.cluster, obj, original=original, added=decision.surge, drain=self.drain, kind=kind)
            if obj is not None
            else None
        )
        if raised is None:
            unmark(self.cluster, marked, self._costs_before)
            keeper.stop()
            self.emit(surge_events.SurgeSkipped(workload=owner.ref, reason=why, pods=tuple(owner.pods)))
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
            others={
                (b.metadata.namespace, b.metadata.name): others
                for b in owner.budgets
                if (others := others_expected(b, original)) is not None
            },
            marked=marked,
        )
        self._surged[owner.ref] = surged
        for key in surged.pods:
            self._by_pod[key] = surged
        self.emit(
            surge_events.SurgeStarted(
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

    # --- following readiness (``readiness``) ---------------------------------------------

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
                    verdict = readiness(
                        self.cluster,
                        raised,
                        kind=surged.kind.kind,
                        namespace=ref.namespace,
                        selector=surged.selector,
                        target=surged.target,
                        waited=time.monotonic() - started,
                        ready_timeout=self.ready_timeout,
                    )
                    if verdict is None:
                        continue
                    del waiting[ref]
                    if verdict == "":
                        self.emit(
                            surge_events.SurgeReady(
                                workload=ref, replicas=surged.current, seconds=time.monotonic() - started
                            )
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

    def _give_up(self, surged: _Surged, why: str) -> None:
        """Put the count back at once; the drain then waits for the PDB as it would without --surge."""
        self._restore(surged)
        self.emit(
            surge_events.SurgeSkipped(
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
        """A drained pod was evicted (or is gone without one): lower its workload's count by one (never below
        the original), once per pod."""
        surged = self._by_pod.get((pod.namespace, pod.name))
        if surged is None:
            return
        with surged.lock:
            if (pod.namespace, pod.name) in surged.gone:
                return  # its eviction lowered the count already; this is the same pod gone
            surged.gone.add((pod.namespace, pod.name))
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
            workload = f"{surged.kind.kind}/{surged.object_name}"
            note_count(self.cluster, surged.budgets, workload=workload, replicas=target, drain=self.drain)
            for budget, others in surged.others.items():
                self._recounts.expect(budget, at_most=others + target, workload=workload)

    def _restore(self, surged: _Surged) -> None:
        with surged.lock:
            if self._surged.pop(surged.ref, None) is None:
                return
            for key in surged.pods:
                self._by_pod.pop(key, None)
            try:
                # First: a restore that meets a marked pod still on its node would remove it instead of an extra.
                kept = [p for p in surged.marked if (p.namespace, p.name) not in surged.gone]
                unmark(self.cluster, kept, self._costs_before)
                outcome = restore(
                    self.cluster,
                    surged.ref.namespace,
                    surged.object_name,
                    expected=-1 if surged.let_go else surged.current,  # -1: only remove the record
                    kind=surged.kind,
                )
                self._recounts.forget(surged.budgets)
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
            surge_events.SurgeRestored(
                workload=surged.ref, replicas=replicas, drain=self.drain, count_restored=count_restored
            )
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
        try:
            for surged in list(self._surged.values()):
                try:
                    self._restore(surged)
                except (ApiException, CountChanged, OSError) as err:
                    # The record stays on the object: the next drain, uncordon or resume restores it.
                    log.warning("could not restore %s now (%s); its record stays for the next drain", surged.ref, err)
        finally:
            self._recounts.stop()
